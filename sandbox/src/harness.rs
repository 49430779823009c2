//! What `dot-sandbox probe --prove` needs to run the canary under the runner exactly as
//! `dot-launch` does (the contract of `proto::runner`): new process group, empty environment, a
//! scratch stage as working directory, the runner on fd 3, the plugin on fd 4, a report socket on
//! fd 5, `/proc/self/fd/3` executed with `Invocation::argv()`; the request on stdin (a pipe, or a
//! pseudo-terminal for the terminal probes); stdout, stderr, the report and the stage's descriptor
//! collected; the whole run killed after a timeout. Also the scratch directory the probes aim at,
//! the listeners of the connect probes, the canary's request and the outcome of a run.
//!
//! The test suite runs the same probes through [`Run::direct`] too (unconfined, to prove each probe
//! detects its escape); that part of the harness lives with the tests.

use proto::canary::{CanaryResult, ProbeSpec};
use proto::runner::{
    Invocation, Message, RunnerLimits, SandboxReport, GATE_MESSAGE, MAX_REPORT, PLUGIN_FD,
    REPORT_FD, RUNNER_FD, RUNNER_PATH,
};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where standard input comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Pipe,
    /// A pseudo-terminal slave (the request is typed into the master).
    Pty,
}

/// What a run produced.
#[derive(Debug)]
pub struct RunOutput {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The runner's report bytes, for a run under the runner.
    pub report: Vec<u8>,
    /// The plugin's stage (the runner's private tmpfs), for a run under the runner that got that
    /// far.
    pub stage: Option<OwnedFd>,
}

impl RunOutput {
    /// The runner's report, if it is exactly one valid line.
    pub fn sandbox_report(&self) -> Option<SandboxReport> {
        SandboxReport::parse(&self.report)
    }

    /// A file the plugin wrote in its stage, read through the descriptor the runner handed over
    /// (`NotFound` when there is none).
    pub fn read_stage_file(&self, rel: &str) -> io::Result<Vec<u8>> {
        let stage = self.stage.as_ref().ok_or(io::ErrorKind::NotFound)?;
        let (mut f, _) = sys::fs::open_regular_at(stage.as_fd(), Path::new(rel))
            .map_err(|e| io::Error::other(e.to_string()))?;
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes)?;
        Ok(bytes)
    }
}

/// One run, set up like `dot-launch` sets up a plugin's.
#[derive(Debug)]
pub struct Run<'a> {
    /// The working directory (where a launcher placed the inputs).
    pub stage: &'a Path,
    /// One line on stdin (a newline is added).
    pub request: &'a [u8],
    pub input: Input,
    /// The whole run is killed after this long.
    pub timeout: Duration,
}

impl Run<'_> {
    /// Runs the runner with `argv` (`Invocation::argv()`, `argv[0]` first): the runner on
    /// descriptor 3, `plugin` on 4, a report socket on 5, `/proc/self/fd/3` executed, in a new
    /// process group that is killed when the run ends.
    pub fn runner(&self, runner: &File, plugin: &File, argv: &[String]) -> io::Result<RunOutput> {
        let (argv0, args) = argv.split_first().ok_or(io::ErrorKind::InvalidInput)?;
        let mut cmd = Command::new(RUNNER_PATH);
        cmd.arg0(argv0).args(args).process_group(0);
        let moves = [(runner.as_fd(), RUNNER_FD), (plugin.as_fd(), PLUGIN_FD)];
        self.spawn(cmd, &moves, Some(report_socket()?), true, None)
    }

    /// [`Run::runner`] for `argv` with `--gate`: the runner gets its go (the stage's descriptor)
    /// once started, or with `go` false, the socket is shut for writing instead (no go ever comes).
    pub fn runner_at_gate(
        &self,
        runner: &File,
        plugin: &File,
        argv: &[String],
        go: bool,
    ) -> io::Result<RunOutput> {
        let (argv0, args) = argv.split_first().ok_or(io::ErrorKind::InvalidInput)?;
        let mut cmd = Command::new(RUNNER_PATH);
        cmd.arg0(argv0).args(args).process_group(0);
        let moves = [(runner.as_fd(), RUNNER_FD), (plugin.as_fd(), PLUGIN_FD)];
        self.spawn(cmd, &moves, Some(report_socket()?), true, Some(go))
    }

    /// Runs `cmd` itself, unconfined, in the caller's process group, with `fds` moved into place
    /// (they stay open in the plugin); no report socket.
    pub fn direct(&self, cmd: Command, fds: &[(BorrowedFd<'_>, i32)]) -> io::Result<RunOutput> {
        self.spawn(cmd, fds, None, false, None)
    }

    fn spawn(
        &self,
        mut cmd: Command,
        moves: &[(BorrowedFd<'_>, i32)],
        report: Option<(OwnedFd, OwnedFd)>,
        group: bool,
        go: Option<bool>,
    ) -> io::Result<RunOutput> {
        cmd.env_clear()
            .current_dir(self.stage)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut master = None;
        match self.input {
            Input::Pipe => {
                cmd.stdin(Stdio::piped());
            }
            Input::Pty => {
                let (m, slave) = open_pty()?;
                cmd.stdin(Stdio::from(slave));
                master = Some(m);
            }
        }
        let (report_rx, mut child) = match report {
            Some((rx, tx)) => {
                let mut all = moves.to_vec();
                all.push((tx.as_fd(), REPORT_FD));
                let child = sys::process::spawn_with_fds(&mut cmd, &all)?;
                // Only the runner may hold the write end now, so the read below ends at its exec.
                drop(all);
                drop(tx);
                (Some(rx), child)
            }
            None => (None, sys::process::spawn_with_fds(&mut cmd, moves)?),
        };
        drop(cmd);
        let pid = child.id();
        let done = Arc::new(AtomicBool::new(false));
        let watchdog = {
            let done = Arc::clone(&done);
            let timeout = self.timeout;
            std::thread::spawn(move || {
                let start = Instant::now();
                while !done.load(Ordering::SeqCst) {
                    if start.elapsed() > timeout {
                        kill_run(pid, group);
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        if let (Some(rx), Some(go)) = (&report_rx, go) {
            if go {
                let stage = sys::fs::open_dir(self.stage).map_err(io::Error::from)?;
                sys::process::send_with_fd(rx.as_fd(), GATE_MESSAGE, stage.as_fd())?;
            } else {
                nix::sys::socket::shutdown(rx.as_raw_fd(), nix::sys::socket::Shutdown::Write)?;
            }
        }
        let (report_bytes, stage) = match report_rx {
            Some(rx) => read_report(&rx)?,
            None => (Vec::new(), None),
        };
        let mut line = self.request.to_vec();
        line.push(b'\n');
        let mut stdin_pipe = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let out_thread = std::thread::spawn(move || read_all(stdout));
        let err_thread = std::thread::spawn(move || read_all(stderr));
        // A plugin that already exited closes its end: a failed write is not our failure.
        let _ = match (&mut stdin_pipe, &master) {
            (Some(pipe), _) => pipe.write_all(&line),
            (None, Some(m)) => File::from(m.try_clone()?).write_all(&line),
            (None, None) => Ok(()),
        };
        drop(stdin_pipe);
        let stdout = out_thread.join().unwrap_or_default();
        let stderr = err_thread.join().unwrap_or_default();
        let status = child.wait()?;
        if group {
            // Nothing of the run may outlive it.
            kill_run(pid, true);
        }
        done.store(true, Ordering::SeqCst);
        let _ = watchdog.join();
        drop(master);
        Ok(RunOutput {
            status,
            stdout,
            stderr,
            report: report_bytes,
            stage,
        })
    }
}

/// The report channel as `dot-launch` makes it: a `SOCK_SEQPACKET` pair, close-on-exec.
fn report_socket() -> io::Result<(OwnedFd, OwnedFd)> {
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
    socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(io::Error::from)
}

/// Reads the report channel to its end: the stage message's descriptor and the report bytes (up to
/// `MAX_REPORT`).
fn read_report(rx: &OwnedFd) -> io::Result<(Vec<u8>, Option<OwnedFd>)> {
    let (mut report, mut stage) = (Vec::new(), None);
    let mut buf = [0u8; 4096];
    loop {
        match sys::process::recv_with_fds(rx.as_fd(), &mut buf) {
            Ok((0, _)) => return Ok((report, stage)),
            Ok((n, fds)) => match Message::of(&buf[..n], fds.len()) {
                Message::Stage if stage.is_none() => stage = fds.into_iter().next(),
                Message::Report => {
                    let room = (MAX_REPORT + 1).saturating_sub(report.len());
                    report.extend_from_slice(&buf[..n.min(room)]);
                }
                Message::Stage | Message::Stray => {}
            },
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn read_all(r: Option<impl Read>) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Some(r) = r {
        let _ = r.take(1 << 20).read_to_end(&mut buf);
    }
    buf
}

fn kill_run(pid: u32, group: bool) {
    use nix::sys::signal::{kill, killpg, Signal};
    use nix::unistd::Pid;
    let pid = Pid::from_raw(pid as i32);
    let _ = if group {
        killpg(pid, Signal::SIGKILL)
    } else {
        kill(pid, Signal::SIGKILL)
    };
}

/// A new pseudo-terminal: (master, slave), both close-on-exec.
fn open_pty() -> io::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::OFlag;
    let master = nix::pty::posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)?;
    nix::pty::grantpt(&master)?;
    nix::pty::unlockpt(&master)?;
    let name = nix::pty::ptsname_r(&master)?;
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(name)?;
    let master: OwnedFd = File::from(OwnedFd::from(master)).into();
    Ok((master, slave.into()))
}

/// A scratch directory for one probe run: `DIR/victim` (a file outside the stage) and
/// `DIR/stage/` (the runner's working directory, where a launcher would have placed the inputs) with
/// `out/` inside. `DIR` is writable by everyone and `victim` readable and writable by everyone, so
/// whatever uid the plugin runs as, only the confinement can stop a probe: never file permissions.
/// Removed on drop.
#[derive(Debug)]
pub struct Scratch {
    pub dir: PathBuf,
    pub stage: PathBuf,
}

impl Scratch {
    pub fn new(tag: &str) -> io::Result<Scratch> {
        use std::os::unix::fs::PermissionsExt;
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("dot-prove-{}-{n}-{tag}", std::process::id()));
        let mut b = std::fs::DirBuilder::new();
        b.mode(0o700);
        b.create(&dir)?;
        let stage = dir.join("stage");
        b.create(&stage)?;
        b.create(stage.join("out"))?;
        b.create(stage.join("sub"))?;
        let victim = dir.join("victim");
        std::fs::write(&victim, b"victim\n")?;
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o666))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777))?;
        Ok(Scratch { dir, stage })
    }

    /// The file outside the stage the probes aim at.
    pub fn victim(&self) -> PathBuf {
        self.dir.join("victim")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Listeners the connect probes aim at, open for the harness's lifetime.
#[derive(Debug)]
pub struct Targets {
    tcp: std::net::TcpListener,
    _unix: std::os::unix::net::UnixListener,
    abstract_name: String,
}

impl Targets {
    pub fn new() -> io::Result<Targets> {
        use std::os::linux::net::SocketAddrExt;
        let tcp = std::net::TcpListener::bind("127.0.0.1:0")?;
        tcp.set_nonblocking(true)?;
        static N: AtomicU64 = AtomicU64::new(0);
        let abstract_name = format!(
            "dot-prove-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes())?;
        let unix = std::os::unix::net::UnixListener::bind_addr(&addr)?;
        Ok(Targets {
            tcp,
            _unix: unix,
            abstract_name,
        })
    }

    pub fn port(&self) -> u16 {
        self.tcp.local_addr().map(|a| a.port()).unwrap_or(0)
    }
}

/// The canary's registry name in `--prove` runs (its request's `plugin`, its `argv[0]`).
pub const CANARY: &str = "canary";

/// The runner's invocation for the canary under `limits`.
pub fn canary_invocation(
    limits: RunnerLimits,
    landlock_abi: Option<u32>,
) -> io::Result<Invocation> {
    let name = proto::Name::new(CANARY).map_err(|e| io::Error::other(e.to_string()))?;
    Ok(Invocation {
        landlock_abi,
        ..Invocation::new(limits, name)
    })
}

/// Runs one probe under the runner with `invocation` (its limits the request's too), as
/// `probe --prove` does: a fresh scratch stage, the victim beside it, a pty where the probe needs
/// one. Returns the observed outcome and the run.
pub fn run_probe_as(
    runner: &File,
    canary: &File,
    probe: &ProbeSpec,
    invocation: &Invocation,
) -> io::Result<(String, RunOutput)> {
    let scratch = Scratch::new(probe.name)?;
    let targets = Targets::new()?;
    let request = canary_request(
        probe.name,
        &targets,
        invocation.limits,
        Some(&scratch.victim()),
    )?;
    let run = Run {
        stage: &scratch.stage,
        request: &request,
        input: if probe.pty { Input::Pty } else { Input::Pipe },
        timeout: Duration::from_secs(30),
    }
    .runner(runner, canary, &invocation.argv())?;
    let observed = outcome(&run, run.read_stage_file("out/result.json"), probe.name);
    Ok((observed, run))
}

/// The request the canary reads for `probe`, aiming at `victim` outside the stage when given.
pub fn canary_request(
    probe: &str,
    targets: &Targets,
    limits: RunnerLimits,
    victim: Option<&Path>,
) -> io::Result<Vec<u8>> {
    let mut inputs = std::collections::BTreeMap::new();
    if let Some(v) = victim {
        inputs.insert("outside".to_owned(), v.display().to_string());
    }
    inputs.insert("probe".to_owned(), probe.to_owned());
    inputs.insert("port".to_owned(), targets.port().to_string());
    inputs.insert("abstract".to_owned(), targets.abstract_name.clone());
    inputs.insert("nofile".to_owned(), limits.descriptors.to_string());
    inputs.insert("nproc".to_owned(), limits.tasks.to_string());
    inputs.insert("fsize".to_owned(), limits.file_bytes.to_string());
    inputs.insert("as".to_owned(), limits.memory_bytes.to_string());
    inputs.insert("cpu".to_owned(), limits.cpu_seconds.to_string());
    let request = proto::protocol::Request {
        protocol: proto::protocol::PROTOCOL_VERSION.to_owned(),
        plugin: proto::Name::new(CANARY).map_err(|e| io::Error::other(e.to_string()))?,
        inputs,
    };
    serde_json::to_vec(&request).map_err(io::Error::other)
}

/// The outcome of a finished run of `probe`: `signal:NAME` if a signal ended it, else the outcome
/// in the canary's `out/result.json` (`result`, as read from its stage), else a description of what
/// went wrong.
pub fn outcome(run: &RunOutput, result: io::Result<Vec<u8>>, probe: &str) -> String {
    if let Some(sig) = run.status.signal() {
        let name = nix::sys::signal::Signal::try_from(sig)
            .map(|s| s.as_str().to_owned())
            .unwrap_or_else(|_| sig.to_string());
        return format!("signal:{name}");
    }
    let result = result
        .ok()
        .and_then(|b| serde_json::from_slice::<CanaryResult>(&b).ok());
    match result {
        Some(r) if r.probe == probe => r.outcome,
        Some(r) => format!("wrong-probe:{}", r.probe),
        None => format!(
            "no-result:exit={}:{}",
            run.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&run.stderr).trim()
        ),
    }
}
