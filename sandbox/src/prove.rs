//! The escape-probe suite: the table of probes with the outcome each must have under `process`
//! containment (and, for the test suite, unconfined, to prove the probe detects the escape), and a
//! harness that launches the runner and the canary exactly as `dot-launch` does: new process
//! group, empty environment, the stage as working directory, runner on fd 3, plugin on fd 4,
//! report pipe on fd 5, `/proc/self/fd/3` executed.
//!
//! `dot-sandbox probe --prove` runs every probe confined; the test suite runs both ways.

use proto::{ErrorObject, Kind, ToErrorObject};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The layer expected to stop a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    Landlock,
    Seccomp,
    Rlimit,
    Capability,
    /// Descriptor hygiene: the runner leaves the plugin only 0, 1 and 2.
    Descriptors,
    /// The kernel refuses it whatever the confinement.
    Kernel,
    /// The static-ELF rule, which the runner applies before anything else: no segment both
    /// writable and executable, so the kernel maps data without execute.
    Elf,
    /// What the runner's exec hands over: default signal dispositions, no blocked signal.
    Signals,
    /// A positive control: must succeed under containment.
    Control,
}

/// One escape probe: its name (the canary's `probe` input), the outcomes accepted under `process`
/// and, where running it unconfined is safe and meaningful, the outcomes accepted unconfined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeSpec {
    pub name: &'static str,
    pub layer: Layer,
    pub confined: &'static [&'static str],
    pub unconfined: Option<&'static [&'static str]>,
    /// Standard input is a terminal (the TIOCSTI probes).
    pub pty: bool,
    /// Unconfined, the canary first re-executes itself (`--reexec`), as a Rust runner that does
    /// not reset its signal dispositions would execute a plugin.
    pub reexec: bool,
}

const OK: &[&str] = &["ok"];
const EPERM: &[&str] = &["errno:EPERM"];
const EACCES: &[&str] = &["errno:EACCES"];
/// Writing the running plugin's own image: `ETXTBSY` (it is being executed), or `EACCES` first when
/// the plugin's uid has no write permission on it (a sealed copy is mode 0555; a per-run uid owns
/// nothing).
const OWN_BINARY: &[&str] = &["errno:ETXTBSY", "errno:EACCES"];

const fn p(
    name: &'static str,
    layer: Layer,
    confined: &'static [&'static str],
    unconfined: Option<&'static [&'static str]>,
) -> ProbeSpec {
    ProbeSpec {
        name,
        layer,
        confined,
        unconfined,
        pty: false,
        reexec: false,
    }
}

const fn seccomp(name: &'static str) -> ProbeSpec {
    p(name, Layer::Seccomp, EPERM, Some(OK))
}

const fn landlock(name: &'static str) -> ProbeSpec {
    p(name, Layer::Landlock, EACCES, Some(OK))
}

/// Every probe, in the order they run.
pub const PROBES: &[ProbeSpec] = &[
    // Files outside the stage, and special files inside it.
    landlock("read-etc-passwd"),
    landlock("read-proc-self-status"),
    landlock("read-parent-environ"),
    landlock("write-outside"),
    landlock("create-outside"),
    landlock("rename-outside"),
    landlock("unlink-outside"),
    landlock("link-outside"),
    landlock("truncate-outside"),
    landlock("symlink-in-stage"),
    // mknod is also refused by the filter, which answers before Landlock (no make_fifo right).
    p("mkfifo-in-stage", Layer::Seccomp, EPERM, Some(OK)),
    p(
        "rename-across-stage-dirs",
        Layer::Landlock,
        &["errno:EXDEV"],
        Some(OK),
    ),
    // The plugin's own binary: while it runs the kernel refuses writes to it (ETXTBSY) before
    // Landlock (read+execute only on that inode) is consulted, confined or not; so these show the
    // refusal, not which layer gives it, and have no unconfined counterpart.
    p("write-own-binary", Layer::Kernel, OWN_BINARY, None),
    p("truncate-own-binary", Layer::Kernel, OWN_BINARY, None),
    // Metadata.
    seccomp("chmod"),
    seccomp("chown"),
    seccomp("utimensat"),
    seccomp("setxattr"),
    seccomp("fs-ioc-setflags"),
    seccomp("fs-ioc-fssetxattr"),
    // Executing anything else.
    seccomp("exec-bin-sh"),
    seccomp("exec-stage-file"),
    seccomp("exec-proc-self-exe"),
    seccomp("execveat"),
    seccomp("memfd-exec"),
    // Network and IPC.
    seccomp("socket-inet"),
    seccomp("socket-inet6"),
    seccomp("socket-unix"),
    seccomp("socket-netlink"),
    seccomp("socket-packet"),
    seccomp("socket-mptcp"),
    seccomp("socketpair"),
    seccomp("connect-tcp-loopback"),
    seccomp("connect-abstract-unix"),
    seccomp("sysv-shm"),
    // Namespaces and new processes.
    seccomp("unshare-user"),
    seccomp("unshare-mount"),
    seccomp("unshare-net"),
    seccomp("setns"),
    seccomp("clone-newuser"),
    // The kernel refuses CLONE_NEWUSER with CLONE_THREAD itself (EINVAL); the filter answers first.
    p(
        "clone-thread-newuser",
        Layer::Seccomp,
        EPERM,
        Some(&["errno:EINVAL"]),
    ),
    seccomp("clone-process"),
    seccomp("fork"),
    seccomp("vfork"),
    p("clone3", Layer::Seccomp, &["errno:ENOSYS"], Some(OK)),
    seccomp("setsid"),
    seccomp("setpgid"),
    // Other processes.
    seccomp("kill-parent"),
    seccomp("kill-all"),
    seccomp("kill-group"),
    seccomp("kill-init"),
    seccomp("tgkill-parent"),
    seccomp("tkill-parent"),
    seccomp("sigqueue-parent"),
    // Signals sent by the kernel on the plugin's behalf, to whoever owns a descriptor: choosing
    // the owner, the signal, turning signal-driven I/O on, leases and dnotify (whose events signal
    // the owner). Landlock's ABI 6 signal scope blocks the delivery only; seccomp refuses the
    // calls on every kernel. Unconfined, each sets its target and sends nothing, except
    // sigio-sigkill, which aims SIGKILL at itself and is killed when the harness reads its output.
    seccomp("fsetown-parent"),
    seccomp("fsetown-init"),
    seccomp("fsetown-ex-parent"),
    seccomp("fsetsig"),
    seccomp("o-async"),
    seccomp("fioasync"),
    seccomp("fsetlease"),
    seccomp("fnotify"),
    seccomp("fiosetown"),
    seccomp("siocspgrp"),
    p(
        "sigio-sigkill",
        Layer::Seccomp,
        EPERM,
        Some(&["signal:SIGKILL"]),
    ),
    ProbeSpec {
        pty: true,
        ..seccomp("tiocsctty")
    },
    ProbeSpec {
        pty: true,
        ..seccomp("tiocspgrp")
    },
    seccomp("tiocsig"),
    // What the exec hands the plugin: every signal at its default, none blocked. Unconfined the
    // canary is executed by itself, a Rust program, which leaves SIGPIPE ignored.
    ProbeSpec {
        reexec: true,
        ..p(
            "signal-dispositions",
            Layer::Signals,
            &["default"],
            Some(&["ignored:SIGPIPE"]),
        )
    },
    seccomp("pidfd-open-parent"),
    seccomp("ptrace-attach-parent"),
    seccomp("ptrace-traceme"),
    seccomp("process-vm-readv-parent"),
    seccomp("prlimit-parent"),
    // Mounts and roots.
    seccomp("mount"),
    seccomp("chroot"),
    // Executable memory.
    seccomp("mmap-exec"),
    seccomp("mprotect-exec"),
    seccomp("pkey-mprotect-exec"),
    seccomp("personality-read-implies-exec"),
    // Machine code written into its own data and called: the data segment is not executable.
    // Unconfined this is the same; the test suite shows the probe detects the escape with a copy
    // of the canary whose data segment has PF_X, which the runner refuses to run.
    p("write-exec-data", Layer::Elf, &["signal:SIGSEGV"], None),
    // Kernel attack surface.
    seccomp("io-uring-setup"),
    seccomp("bpf"),
    seccomp("keyctl"),
    seccomp("perf-event-open"),
    seccomp("userfaultfd"),
    seccomp("prctl-pdeathsig"),
    // Terminal injection on standard input (a pty here).
    ProbeSpec {
        pty: true,
        ..seccomp("tiocsti")
    },
    ProbeSpec {
        pty: true,
        ..seccomp("tiocsti-high-bits")
    },
    // Privilege.
    // Raising a hard limit needs CAP_SYS_RESOURCE, which root need not hold (it does not on every
    // host); that every capability is gone is what the `capabilities` probe proves both ways.
    p("setrlimit-raise-hard", Layer::Capability, EPERM, None),
    p("capabilities", Layer::Capability, &["none"], Some(OK)),
    // Descriptors.
    p("inherited-fd", Layer::Descriptors, &["none"], Some(OK)),
    // Resource limits (the canary tries to exceed the limit it is told).
    p("nofile", Layer::Rlimit, &["errno:EMFILE"], Some(OK)),
    p("fsize", Layer::Rlimit, &["errno:EFBIG"], Some(OK)),
    p("address-space", Layer::Rlimit, &["errno:ENOMEM"], Some(OK)),
    p(
        "cpu",
        Layer::Rlimit,
        &["signal:SIGKILL", "signal:SIGXCPU"],
        Some(OK),
    ),
    // Positive controls.
    p("write-in-stage", Layer::Control, OK, Some(OK)),
    p("rename-in-stage", Layer::Control, OK, Some(OK)),
    p("threads", Layer::Control, OK, Some(OK)),
    p("kill-self", Layer::Control, OK, Some(OK)),
    p("tgkill-own-thread", Layer::Control, OK, Some(OK)),
];

/// Finds a probe by name.
pub fn spec(name: &str) -> Option<&'static ProbeSpec> {
    PROBES.iter().find(|p| p.name == name)
}

/// The limits the runner applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub as_bytes: u64,
    pub cpu_seconds: u64,
    pub fsize_bytes: u64,
    pub nofile: u64,
    pub nproc: u64,
    pub stage_bytes: u64,
    pub stage_inodes: u64,
}

/// The limits `--prove` runs the canary with.
pub const PROVE_LIMITS: Limits = Limits {
    as_bytes: 256 << 20,
    cpu_seconds: 1,
    fsize_bytes: 1 << 20,
    nofile: 64,
    nproc: 64,
    stage_bytes: 16 << 20,
    stage_inodes: 256,
};

/// One probe's verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeResult {
    pub name: String,
    /// The accepted outcomes, `|`-separated.
    pub expected: String,
    pub observed: String,
    pub ok: bool,
}

/// What `probe --prove` prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProveReport {
    pub probes: Vec<ProbeResult>,
    pub ok: bool,
}

/// Why the proof could not run.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error("cannot open {path}: {reason}")]
    Canary { path: PathBuf, reason: String },
    #[error("cannot open the running dot-sandbox: {0}")]
    Runner(io::Error),
    #[error("unknown probe {0:?}")]
    UnknownProbe(String),
    #[error("running probe {name} failed: {source}")]
    Harness { name: String, source: io::Error },
}

impl ToErrorObject for ProveError {
    fn kind(&self) -> Kind {
        match self {
            ProveError::Canary { .. } => Kind::CanaryMissing,
            ProveError::Runner(_) => Kind::RunnerMissing,
            ProveError::UnknownProbe(_) => Kind::UnknownProbe,
            ProveError::Harness { .. } => Kind::Harness,
        }
    }

    fn to_error_object(&self) -> ErrorObject {
        let obj = ErrorObject::new(self.kind(), self.to_string());
        match self {
            ProveError::Canary { path, .. } => obj.path(path).next(
                "RUSTFLAGS='-C target-feature=+crt-static' cargo build -p canary --target x86_64-unknown-linux-gnu",
            ),
            ProveError::UnknownProbe(name) => obj
                .field("only")
                .value(name.clone())
                .next("dot-sandbox probe --prove"),
            ProveError::Runner(_) => obj.path("/proc/self/exe"),
            ProveError::Harness { name, .. } => obj.field("only").value(name.clone()),
        }
    }
}

/// Where standard input comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Pipe,
    /// A pseudo-terminal slave (the request is typed into the master).
    Pty,
}

/// What a launch produced.
#[derive(Debug)]
pub struct RunOutput {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The runner's report line(s), for a confined launch.
    pub report: Vec<u8>,
    /// The plugin's stage (the runner's private tmpfs), for a confined launch that got that far.
    pub stage: Option<OwnedFd>,
}

impl RunOutput {
    /// The report decoded, if it is exactly one valid line.
    pub fn sandbox_report(&self) -> Option<proto::result::SandboxReport> {
        let text = std::str::from_utf8(&self.report).ok()?;
        let line = text.strip_suffix('\n')?;
        if line.contains('\n') {
            return None;
        }
        serde_json::from_str(line).ok()
    }
}

/// A launch of the runner (or of a plugin directly) set up like `dot-launch` does it.
#[derive(Debug)]
pub struct Launch<'a> {
    /// The stage: the working directory.
    pub stage: &'a Path,
    pub plugin: &'a File,
    pub request: &'a [u8],
    pub input: Input,
    pub limits: Limits,
    /// The plugin argument given to the runner (`/proc/self/fd/4` unless a test says otherwise).
    pub plugin_arg: &'a str,
    /// `--landlock-abi` for the runner.
    pub landlock_abi: Option<u32>,
    /// Unconfined: the canary re-executes itself first (`--reexec`).
    pub reexec: bool,
    /// The whole run is killed after this long.
    pub timeout: Duration,
}

impl Launch<'_> {
    /// Runs `runner exec … plugin_arg` with the runner on fd 3, the plugin on fd 4 and a report
    /// socket on fd 5, in a new process group, with an empty environment.
    pub fn confined(&self, runner: &File) -> io::Result<RunOutput> {
        let l = self.limits;
        let mut cmd = Command::new("/proc/self/fd/3");
        cmd.arg0("dot-sandbox")
            .args(["exec", "--report-fd", "5"])
            .args(["--as-bytes", &l.as_bytes.to_string()])
            .args(["--cpu-seconds", &l.cpu_seconds.to_string()])
            .args(["--fsize-bytes", &l.fsize_bytes.to_string()])
            .args(["--nofile", &l.nofile.to_string()])
            .args(["--nproc", &l.nproc.to_string()])
            .args(["--stage-bytes", &l.stage_bytes.to_string()])
            .args(["--stage-inodes", &l.stage_inodes.to_string()]);
        if let Some(abi) = self.landlock_abi {
            cmd.args(["--landlock-abi", &abi.to_string()]);
        }
        cmd.arg(self.plugin_arg).process_group(0);
        let moves = [(runner.as_fd(), 3), (self.plugin.as_fd(), 4)];
        self.spawn(cmd, &moves, Some(report_socket()?), true)
    }

    /// Runs the plugin directly (`/proc/self/fd/9`), unconfined, in the caller's process group.
    /// Descriptor 9 stays open in the plugin.
    pub fn unconfined(&self) -> io::Result<RunOutput> {
        let mut cmd = Command::new("/proc/self/fd/9");
        cmd.arg0("plugin");
        if self.reexec {
            cmd.arg("--reexec");
        }
        self.spawn(cmd, &[(self.plugin.as_fd(), 9)], None, false)
    }

    fn spawn(
        &self,
        mut cmd: Command,
        moves: &[(std::os::fd::BorrowedFd<'_>, i32)],
        report: Option<(OwnedFd, OwnedFd)>,
        group: bool,
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
                all.push((tx.as_fd(), 5));
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

/// Reads the report channel to its end: the stage message (one NUL byte carrying the stage's
/// descriptor) and the report bytes.
fn read_report(rx: &OwnedFd) -> io::Result<(Vec<u8>, Option<OwnedFd>)> {
    let (mut report, mut stage) = (Vec::new(), None);
    let mut buf = [0u8; 64 * 1024];
    loop {
        match sys::process::recv_with_fds(rx.as_fd(), &mut buf) {
            Ok((0, _)) => return Ok((report, stage)),
            Ok((1, fds)) if !fds.is_empty() && buf[0] == 0 && stage.is_none() => {
                stage = fds.into_iter().next();
            }
            Ok((n, _)) => report.extend_from_slice(&buf[..n]),
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

/// The request the canary reads for `probe`, aiming at `victim` outside the stage.
pub fn canary_request_at(
    probe: &str,
    targets: &Targets,
    limits: Limits,
    victim: &Path,
) -> io::Result<Vec<u8>> {
    canary_request_with(probe, targets, limits, Some(victim))
}

/// The request the canary reads for `probe`.
pub fn canary_request(probe: &str, targets: &Targets, limits: Limits) -> io::Result<Vec<u8>> {
    canary_request_with(probe, targets, limits, None)
}

fn canary_request_with(
    probe: &str,
    targets: &Targets,
    limits: Limits,
    victim: Option<&Path>,
) -> io::Result<Vec<u8>> {
    let mut inputs = std::collections::BTreeMap::new();
    if let Some(v) = victim {
        inputs.insert("outside".to_owned(), v.display().to_string());
    }
    inputs.insert("probe".to_owned(), probe.to_owned());
    inputs.insert("port".to_owned(), targets.port().to_string());
    inputs.insert("abstract".to_owned(), targets.abstract_name.clone());
    inputs.insert("nofile".to_owned(), limits.nofile.to_string());
    inputs.insert("nproc".to_owned(), limits.nproc.to_string());
    inputs.insert("fsize".to_owned(), limits.fsize_bytes.to_string());
    inputs.insert("as".to_owned(), limits.as_bytes.to_string());
    inputs.insert("cpu".to_owned(), limits.cpu_seconds.to_string());
    let request = proto::protocol::Request {
        protocol: proto::protocol::PROTOCOL_VERSION.to_owned(),
        plugin: proto::Name::new("canary").map_err(|e| io::Error::other(e.to_string()))?,
        inputs,
    };
    serde_json::to_vec(&request).map_err(io::Error::other)
}

/// The canary's `out/result.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CanaryResult {
    pub probe: String,
    pub outcome: String,
}

/// A file the plugin wrote in its stage: through the descriptor the runner handed over (confined),
/// else in the on-disk stage (unconfined).
pub fn read_stage_file(run: &RunOutput, stage: &Path, rel: &str) -> io::Result<Vec<u8>> {
    match &run.stage {
        Some(fd) => {
            let (mut f, _) = sys::fs::open_regular_at(fd.as_fd(), Path::new(rel))
                .map_err(|e| io::Error::other(e.to_string()))?;
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes)?;
            Ok(bytes)
        }
        None => std::fs::read(stage.join(rel)),
    }
}

/// The outcome of a finished run: `signal:NAME` if a signal ended it, else the canary's reported
/// outcome, else a description of what went wrong.
pub fn outcome(run: &RunOutput, stage: &Path, probe: &str) -> String {
    if let Some(sig) = run.status.signal() {
        let name = nix::sys::signal::Signal::try_from(sig)
            .map(|s| s.as_str().to_owned())
            .unwrap_or_else(|_| sig.to_string());
        return format!("signal:{name}");
    }
    let result = read_stage_file(run, stage, "out/result.json")
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

/// How a probe is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Confined,
    Unconfined,
}

/// Runs one probe and returns its observed outcome (and the run, for further checks).
/// `landlock_abi` is the runner's `--landlock-abi` (confined runs only).
pub fn run_probe(
    runner: &File,
    canary: &File,
    probe: &ProbeSpec,
    mode: Mode,
    limits: Limits,
    landlock_abi: Option<u32>,
) -> io::Result<(String, RunOutput)> {
    let scratch = Scratch::new(probe.name)?;
    let targets = Targets::new()?;
    let request = canary_request_at(probe.name, &targets, limits, &scratch.victim())?;
    let launch = Launch {
        stage: &scratch.stage,
        plugin: canary,
        request: &request,
        input: if probe.pty { Input::Pty } else { Input::Pipe },
        limits,
        plugin_arg: crate::exec::PLUGIN_PATH,
        landlock_abi,
        reexec: probe.reexec,
        timeout: Duration::from_secs(30),
    };
    let run = match mode {
        Mode::Confined => launch.confined(runner)?,
        Mode::Unconfined => launch.unconfined()?,
    };
    Ok((outcome(&run, &scratch.stage, probe.name), run))
}

/// Runs `only` (or every probe) confined and compares each outcome with the table; the runner
/// gets `--landlock-abi` when `landlock_abi` is set.
pub fn prove(
    runner: &File,
    canary: &File,
    only: &[String],
    landlock_abi: Option<u32>,
) -> Result<ProveReport, ProveError> {
    let specs: Vec<&ProbeSpec> = if only.is_empty() {
        PROBES.iter().collect()
    } else {
        only.iter()
            .map(|n| spec(n).ok_or_else(|| ProveError::UnknownProbe(n.clone())))
            .collect::<Result<_, _>>()?
    };
    // Handed over exactly as dot-launch hands a plugin: a sealed private copy.
    let len = canary
        .metadata()
        .map_err(|e| ProveError::Canary {
            path: PathBuf::from("dot-canary"),
            reason: e.to_string(),
        })?
        .len();
    let canary =
        &sys::fs::sealed_copy(canary, len, c"dot-canary").map_err(|e| ProveError::Canary {
            path: PathBuf::from("dot-canary"),
            reason: e.to_string(),
        })?;
    let mut probes = Vec::with_capacity(specs.len());
    for s in specs {
        let (observed, _) = run_probe(
            runner,
            canary,
            s,
            Mode::Confined,
            PROVE_LIMITS,
            landlock_abi,
        )
        .map_err(|source| ProveError::Harness {
            name: s.name.to_owned(),
            source,
        })?;
        probes.push(ProbeResult {
            name: s.name.to_owned(),
            expected: s.confined.join("|"),
            ok: s.confined.contains(&observed.as_str()),
            observed,
        });
    }
    let ok = probes.iter().all(|p| p.ok);
    Ok(ProveReport { probes, ok })
}

/// `probe --prove`: the running dot-sandbox is the runner, `dot-canary` next to it the canary
/// (opened without following a symlink, from the directory of `/proc/self/exe`, never `PATH`).
pub fn prove_sibling(
    only: &[String],
    landlock_abi: Option<u32>,
) -> Result<ProveReport, ProveError> {
    let runner = File::open("/proc/self/exe").map_err(ProveError::Runner)?;
    let exe = std::fs::read_link("/proc/self/exe").map_err(ProveError::Runner)?;
    let path = exe
        .parent()
        .map(|d| d.join("dot-canary"))
        .unwrap_or_else(|| PathBuf::from("dot-canary"));
    let (canary, _) = sys::fs::open_regular(&path).map_err(|e| ProveError::Canary {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    prove(&runner, &canary, only, landlock_abi)
}
