//! Spawning the plugin (directly at `audit`, through `dot-sandbox` at `process`) and supervising it:
//! the request on stdin, bounded stdout and stderr, the wall deadline, then the group terminated and
//! reaped before anything is decided.

use crate::error::LaunchError;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use proto::limits::Limits;
use proto::runner::{Invocation, Message, RunnerLimits, SandboxReport, MAX_REPORT};
use proto::runner::{DENIALS_FD, PLUGIN_FD, REPORT_FD, RUNNER_FD, RUNNER_PATH};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};
use sys::spawn::Child;

/// What happens to the plugin's stderr: it is always read and bounded by `max_stderr`, and never
/// written to disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StderrMode {
    /// Read and thrown away (the default).
    #[default]
    Discard,
    /// Forwarded live to dot-launch's own stderr, up to `max_stderr` bytes.
    Pass,
    /// The last `STDERR_TAIL` bytes kept for the failure object (`run.stderr_tail`).
    Tail,
}

impl std::str::FromStr for StderrMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "discard" => Ok(StderrMode::Discard),
            "pass" => Ok(StderrMode::Pass),
            "tail" => Ok(StderrMode::Tail),
            other => Err(format!(
                "unknown --stderr {other:?}; expected discard, pass or tail"
            )),
        }
    }
}

/// How many of stderr's last bytes `--stderr tail` keeps.
pub const STDERR_TAIL: usize = 4096;

/// What the invoker chooses for the plugin's output streams: they are not the entry's to declare.
#[derive(Clone, Copy, Debug)]
pub struct StreamLimits {
    /// What happens to the plugin's stderr.
    pub stderr: StderrMode,
    pub max_stdout: usize,
    pub max_stderr: usize,
    /// `--report-denials`: the seccomp filter's refusals counted in the result (`process` only).
    pub report_denials: bool,
}

/// What one run is held to: its [`Limits`] (the entry's, lowered by the invoker) and the
/// invoker's choices for the output streams.
#[derive(Clone, Copy, Debug)]
pub struct RunLimits {
    pub run: Limits,
    pub streams: StreamLimits,
}

/// Inodes of a `process` stage beyond one per input.
pub const STAGE_INODES: u64 = 8192;
/// The smallest `process` stage: what the runner accepts.
pub const STAGE_MIN_BYTES: u64 = 1 << 20;

impl RunLimits {
    /// The limits of a run whose entry's limits, lowered by the invoker, are `run`.
    pub fn new(run: &Limits, streams: StreamLimits) -> RunLimits {
        RunLimits { run: *run, streams }
    }

    /// The wall deadline, from the spawn.
    pub fn deadline(&self) -> Duration {
        Duration::from_millis(self.run.deadline_ms)
    }

    /// What the runner bounds for a run whose file inputs total `inputs` (bytes, count): memory,
    /// the CPU budget, the largest file (the outputs' limit), descriptors and tasks as the run's
    /// limits say, and a stage (a private tmpfs) with room for the outputs and as much again for
    /// scratch files (at least [`STAGE_MIN_BYTES`]), plus the inputs' own size; [`STAGE_INODES`]
    /// plus one per input.
    pub fn runner(&self, inputs: (u64, u64)) -> RunnerLimits {
        let stage_bytes = self.run.output_bytes.saturating_mul(2).max(STAGE_MIN_BYTES);
        RunnerLimits {
            memory_bytes: self.run.memory_bytes,
            cpu_seconds: self.run.cpu_budget(),
            file_bytes: self.run.output_bytes,
            descriptors: self.run.descriptors,
            tasks: self.run.tasks,
            stage_bytes: stage_bytes.saturating_add(inputs.0),
            stage_inodes: STAGE_INODES.saturating_add(inputs.1),
        }
    }
}

/// The runner for a `process` run: the opened `dot-sandbox`.
#[derive(Debug)]
pub struct Runner {
    pub file: File,
}

/// What supervision observed.
#[derive(Debug, Default)]
pub struct Observed {
    pub stdout: Vec<u8>,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    /// The stream that went over its limit, if one did.
    pub over_limit: Option<crate::judge::Overflow>,
    pub deadline_hit: bool,
    /// The signal that cancelled the run while the plugin ran (`crate::cancel`).
    pub cancelled: Option<nix::sys::signal::Signal>,
    /// What `dot-sandbox` wrote on its report descriptor (empty at `audit`).
    pub report: Vec<u8>,
    /// With `--stderr tail`: the last `STDERR_TAIL` bytes of stderr.
    pub stderr_tail: Vec<u8>,
    /// With `--stderr pass`: how many bytes were forwarded to dot-launch's stderr, and whether
    /// the last of them ended a line.
    pub stderr_passed: u64,
    pub stderr_passed_ends_line: bool,
    /// The root of a `process` plugin's stage (its private tmpfs), sent with the report.
    pub stage: Option<OwnedFd>,
    /// When the report socket closed (the runner's exec of the plugin, or its end).
    pub report_closed_at: Option<Instant>,
    /// With `--report-denials`: the seccomp filter's refusals seen so far, and the lines they
    /// were counted from (bounded by `MAX_DENIAL_BYTES`).
    pub denials: Option<Vec<proto::runner::Denial>>,
    pub denial_lines: Vec<u8>,
    pub status: std::process::ExitStatus,
    pub duration: Duration,
    /// What the plugin process used, read when it was reaped.
    pub usage: Option<sys::process::ExitUsage>,
}

/// The most bytes of refusal lines a run keeps (about 50,000 refusals); later ones are read and
/// not counted.
pub const MAX_DENIAL_BYTES: usize = 1 << 20;

/// Where an `audit` script plugin finds its own (sealed) script.
pub const SCRIPT_FD: i32 = 3;

/// Whether the executable starts with `#!`.
fn is_script(exe: &File) -> bool {
    use std::os::unix::fs::FileExt;
    let mut magic = [0u8; 2];
    exe.read_exact_at(&mut magic, 0).is_ok() && magic == *b"#!"
}

/// A read lease that keeps the executable from changing until it is executed
/// (`verify::entry::Pinned::Leased`): taken at `since`, broken by the kernel `break_time` after a
/// would-be writer started waiting.
#[derive(Clone, Copy, Debug)]
pub struct Lease {
    pub since: Instant,
    pub break_time: Duration,
}

/// How a run went: observed to the end, or never started because a would-be writer of the leased
/// executable was waiting for the lease (it holds write access while it waits, so the kernel
/// refuses to execute the file: `ETXTBSY`). The caller then seals a private copy, the lease still
/// held, and runs again.
#[derive(Debug)]
pub enum Ran {
    Observed(Box<Observed>),
    WriterWaiting,
}

/// What a run executes and how: the pinned executable, its lease, the runner for `process`, the
/// plugin's `argv[0]` (its registry name, at both levels: `process` gives it to the runner with
/// `--argv0`; `proto::runner` states the rule), and the entry's `runtime` directories and `env`
/// as its whole environment (`audit`: its `envp`; `process`: the runner's `--env` options).
#[derive(Clone, Copy, Debug)]
pub struct Plan<'a> {
    pub exe: &'a File,
    pub lease: Option<Lease>,
    pub runner: Option<&'a Runner>,
    pub argv0: &'a str,
    pub limits: &'a RunLimits,
    /// The total size and count of the file inputs in the stage (a `process` stage is made that
    /// much larger).
    pub inputs: (u64, u64),
    pub runtime: &'a [proto::RuntimeDir],
    pub env: &'a [proto::runner::EnvVar],
}

/// Spawns the plugin (started in `workdir`, `crate::stage::prepare`) and supervises it to the end,
/// group reaped: [`start`] then [`finish`]. A `process` runner is given its go at once.
pub fn run(plan: &Plan<'_>, workdir: &Path, request: &[u8]) -> Result<Ran, LaunchError> {
    match start(plan, workdir)? {
        Start::Started(started) => finish(started, plan, workdir, request),
        Start::WriterWaiting => Ok(Ran::WriterWaiting),
    }
}

/// A spawned run not yet supervised: the plugin (`audit`) or the runner (`process`, waiting for
/// its go: `proto::runner`'s gate). Dropped unfinished, its group is killed and reaped.
#[derive(Debug)]
pub struct Started {
    child: Option<Child>,
    report: Option<OwnedFd>,
    /// With `--report-denials`: the read end of the run's init's denials pipe.
    denials: Option<File>,
    started: Instant,
    executed_at: Option<Instant>,
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = terminate(&mut child);
        }
    }
}

/// How a spawn went: started, or refused because a would-be writer of the leased executable is
/// waiting for the lease (`Ran::WriterWaiting`).
#[derive(Debug)]
pub enum Start {
    Started(Started),
    WriterWaiting,
}

/// Spawns the run in `dir`. At `audit` that is the plugin itself, executed before this returns
/// (its lease released then). At `process` it is the runner with `--gate`: it makes everything
/// that needs nothing of the launcher's (its identity, the namespaces, the stage's tmpfs, the
/// private root, the plugin's process) and waits for [`finish`]'s go before anything of the
/// plugin's runs — so a launcher may start it before the digest of the leased executable is
/// confirmed and the run directory exists, and `dir` need not be the stage.
pub fn start(plan: &Plan<'_>, dir: &Path) -> Result<Start, LaunchError> {
    let started = Instant::now();
    let Plan {
        exe,
        lease,
        runner,
        argv0,
        limits,
        inputs,
        runtime,
        env,
    } = *plan;
    let report_denials = limits.streams.report_denials;
    let mut report_read: Option<OwnedFd> = None;
    let mut denials_read: Option<File> = None;
    let mut denials_write: Option<OwnedFd> = None;
    let mut moves = Vec::new();
    let report_write: Option<OwnedFd>;
    let program: String;
    let argv: Vec<String>;
    // The plugin's environment: its own at `audit`; at `process` the runner's command line
    // carries it and the runner itself gets none.
    let mut envp: Vec<String> = env.iter().map(proto::runner::EnvVar::to_arg).collect();
    match runner {
        None if is_script(exe) => {
            // The interpreter reopens the path it is given, so a script's descriptor stays open
            // in the plugin (as descriptor 3, `audit` only: `process` runs static ELF only).
            program = format!("/proc/self/fd/{SCRIPT_FD}");
            argv = vec![argv0.to_owned()];
            moves.push((exe.as_fd(), SCRIPT_FD));
            report_write = None;
        }
        None => {
            program = format!("/proc/self/fd/{}", exe.as_raw_fd());
            argv = vec![argv0.to_owned()];
            report_write = None;
        }
        Some(r) => {
            let (rd, wr) = report_socket()?;
            report_read = Some(rd);
            let invocation = Invocation {
                // Test builds only: a pretended Landlock ABI reaches the runner, which builds its
                // ruleset as on that kernel.
                landlock_abi: crate::hooks::pretend_landlock_abi(),
                runtime: runtime.to_vec(),
                gate: true,
                denials_fd: report_denials.then_some(DENIALS_FD),
                ..Invocation::new(limits.runner(inputs), argv0.parse()?)
            };
            if report_denials {
                let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
                    .map_err(|e| LaunchError::io("creating the denials pipe", "pipe2", e.into()))?;
                denials_read = Some(File::from(rd));
                denials_write = Some(wr);
            }
            program = RUNNER_PATH.to_owned();
            argv = invocation.argv_with_env(env);
            envp.clear();
            moves.push((r.file.as_fd(), RUNNER_FD));
            moves.push((exe.as_fd(), PLUGIN_FD));
            report_write = Some(wr);
        }
    }
    if let Some(wr) = &report_write {
        moves.push((wr.as_fd(), REPORT_FD));
    }
    if let Some(wr) = &denials_write {
        moves.push((wr.as_fd(), DENIALS_FD));
    }
    let spawn_err = |e| LaunchError::io("spawning the plugin", dir, e);
    let c_string =
        |s: Vec<u8>| std::ffi::CString::new(s).map_err(|e| spawn_err(std::io::Error::other(e)));
    let program = c_string(program.into_bytes())?;
    let argv = argv
        .into_iter()
        .map(|a| c_string(a.into_bytes()))
        .collect::<Result<Vec<_>, _>>()?;
    let dir_c = c_string(dir.as_os_str().as_bytes().to_vec())?;
    let envp = envp
        .into_iter()
        .map(|v| c_string(v.into_bytes()))
        .collect::<Result<Vec<_>, _>>()?;
    if runner.is_none() {
        // A `process` runner executes the plugin only at its go: the test hook waits there.
        crate::hooks::sleep_before_spawn();
    }
    crate::cancel::check(crate::cancel::During::Stage)?;
    let spawned = sys::spawn::spawn(&sys::spawn::Exec {
        program: &program,
        argv: &argv,
        dir: &dir_c,
        moves: &moves,
        env: &envp,
        // The runner's start and namespaces overlap the digest only on a CPU of their own.
        elsewhere: runner.is_some(),
    });
    let child = match spawned {
        Err(e) if lease.is_some() && e.raw_os_error() == Some(nix::libc::ETXTBSY) => {
            return Ok(Start::WriterWaiting)
        }
        other => other.map_err(spawn_err)?,
    };
    drop((report_write, denials_write));
    // At `audit` the spawn returned after the plugin's own execve: it is pinned by the kernel now.
    let mut executed_at = None;
    if runner.is_none() {
        executed_at = Some(Instant::now());
        if lease.is_some() {
            let _ = sys::fs::release_lease(exe);
        }
    }
    Ok(Start::Started(Started {
        child: Some(child),
        report: report_read,
        denials: denials_read,
        started,
        executed_at,
    }))
}

/// Supervises a started run to the end, group reaped. A `process` runner first gets its go with
/// `workdir` (the directory whose `in/` holds the inputs). With a lease on the executable, the lease is released once the
/// plugin is executed (`audit`: when the spawn returned; `process`: when the runner's report
/// socket closes at its exec), and the run fails (`exec-unconfirmed`) if that was not before the
/// kernel could have broken it.
pub fn finish(
    mut run: Started,
    plan: &Plan<'_>,
    workdir: &Path,
    request: &[u8],
) -> Result<Ran, LaunchError> {
    let Plan {
        exe,
        lease,
        runner,
        argv0,
        limits,
        ..
    } = *plan;
    let started = run.started;
    let report_read = run.report.take();
    if let Some(report) = &report_read {
        crate::hooks::sleep_before_spawn();
        crate::cancel::check(crate::cancel::During::Stage)?;
        send_go(report, workdir)?;
    }
    let Some(mut child) = run.child.take() else {
        return Err(LaunchError::io(
            "supervising the plugin",
            "plugin",
            std::io::Error::other("started twice"),
        ));
    };
    let leased = match (lease, runner) {
        (Some(l), Some(_)) => Some((exe, l)),
        _ => None,
    };
    let supervised = supervise(
        &mut child,
        (report_read, run.denials.take()),
        request,
        limits,
        started,
        leased,
        argv0,
    );
    // Whatever happened, the group is terminated and reaped before anything is decided.
    let reaped = terminate(&mut child);
    let (mut observed, mut streams) = supervised?;
    observed.usage = reaped?.leader_usage;
    if let Some(signal) = observed.cancelled {
        return Err(LaunchError::Cancelled {
            signal,
            during: crate::cancel::During::Plugin,
        });
    }
    if let Some(l) = lease {
        if runner.is_some() && runner_exec_busy(&observed.report) {
            return Ok(Ran::WriterWaiting);
        }
        let _ = sys::fs::release_lease(exe);
        let at = run
            .executed_at
            .or(observed.report_closed_at)
            .unwrap_or_else(Instant::now);
        let held = at.saturating_duration_since(l.since);
        if held >= l.break_time {
            return Err(LaunchError::ExecUnconfirmed {
                held_ms: held.as_millis() as u64,
                break_ms: l.break_time.as_millis() as u64,
            });
        }
    }
    let drained = streams.drain_to_eof(&mut observed, limits);
    if let Some(v) = streams.shown.as_mut() {
        let _ = std::io::stderr().write_all(&v.finish());
    }
    if !observed.stderr_passed_ends_line {
        // dot-launch's own last line (a result or an error) starts on a line of its own.
        let _ = std::io::stderr().write_all(b"\n");
    }
    observed.status = child
        .wait()
        .map_err(|e| LaunchError::io("waiting for the plugin", workdir, e))?;
    // A stream that failed to read is the run's failure, once the leader is reaped.
    drained?;
    if observed.denials.is_some() {
        observed.denials = Some(proto::runner::count_denials(&observed.denial_lines));
    }
    observed.duration = started.elapsed();
    Ok(Ran::Observed(Box::new(observed)))
}

/// The runner's go: [`proto::runner::GATE_MESSAGE`] carrying the on-disk stage `dir`. A runner
/// that already ended (it refused, and reports why) cannot take it: not an error here, its report
/// says what happened.
fn send_go(report: &OwnedFd, dir: &Path) -> Result<(), LaunchError> {
    let stage = sys::fs::open_dir(dir)
        .map_err(|e| LaunchError::io("opening the stage for the runner", dir, e.into()))?;
    match sys::process::send_with_fd(report.as_fd(), proto::runner::GATE_MESSAGE, stage.as_fd()) {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(nix::libc::EPIPE) => Ok(()),
        Err(e) => Err(LaunchError::io("sending the runner its go", dir, e)),
    }
}

/// Whether the runner reported that executing the plugin failed with `ETXTBSY` (after its line
/// of what it enforced: it confined itself, then its `execve` was refused).
fn runner_exec_busy(report: &[u8]) -> bool {
    report
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .filter_map(|line| serde_json::from_slice::<SandboxReport>(line).ok())
        .any(|r| match r {
            SandboxReport::Error(e) => {
                e.error == proto::Kind::Exec
                    && e.value.as_deref() == Some(&nix::libc::ETXTBSY.to_string())
            }
            SandboxReport::Enforced(_) => false,
        })
}

/// The report channel: a unix `SOCK_SEQPACKET` pair (close-on-exec), so the runner can hand over the
/// stage's descriptor in a message of its own before its report line.
fn report_socket() -> Result<(OwnedFd, OwnedFd), LaunchError> {
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
    socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|e| LaunchError::io("creating the report socket", "socketpair", e.into()))
}

/// How a launch terminates its run's group: every descendant of this (subreaper) process counts.
pub fn reap_options() -> reap::Options {
    reap::Options {
        descendants_of: Some(std::process::id() as i32),
        ..reap::Options::default()
    }
}

fn terminate(child: &mut Child) -> Result<reap::ReapReport, LaunchError> {
    let pgid = child.id() as i32;
    reap::reap_group(pgid, Some(child), &reap_options()).map_err(LaunchError::from)
}

/// The parent's ends of the child's pipes.
struct Streams {
    stdin: Option<File>,
    stdout: Option<File>,
    stderr: Option<File>,
    report: Option<OwnedFd>,
    /// With `--report-denials`: the run's init's denials pipe.
    denials: Option<File>,
    /// With `--stderr pass` to a terminal: the plugin's stderr shown escaped, so that it cannot
    /// act on the terminal (clear it, move the cursor, write the clipboard).
    shown: Option<cli::VisibleStream>,
}

fn set_nonblocking(fd: impl AsFd) -> Result<(), LaunchError> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags =
        fcntl(&fd, FcntlArg::F_GETFL).map_err(|e| LaunchError::io("fcntl", "pipe", e.into()))?;
    fcntl(
        &fd,
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK),
    )
    .map_err(|e| LaunchError::io("fcntl", "pipe", e.into()))?;
    Ok(())
}

/// Reads what is available now. Returns `false` at EOF (or on error), `true` when the stream is
/// still open.
/// Reads what is there; `Ok(false)` at end of stream. A read error is the host's (a pipe that
/// fails to read, EIO): the run fails with it, never as if the plugin had closed its stream.
fn read_some(
    r: &mut impl Read,
    count: &mut u64,
    mut sink: impl FnMut(&[u8]),
) -> std::io::Result<bool> {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(false),
            Ok(n) => {
                *count += n as u64;
                sink(&buf[..n]);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(true),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads what the runner sent so far: the stage message's descriptor (a second one, and any other
/// descriptor, is closed and ignored) and the report bytes (up to `MAX_REPORT`). Returns `false`
/// at end of stream or on error.
fn read_report(sock: &OwnedFd, o: &mut Observed) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match sys::process::recv_with_fds(sock.as_fd(), &mut buf) {
            Ok((0, _)) => return false,
            Ok((n, fds)) => match Message::of(&buf[..n], fds.len()) {
                Message::Stage if o.stage.is_none() => o.stage = fds.into_iter().next(),
                Message::Report => {
                    let room = (MAX_REPORT + 1).saturating_sub(o.report.len());
                    o.report.extend_from_slice(&buf[..n.min(room)]);
                }
                Message::Stage | Message::Stray => {}
            },
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            // A runner that ended without reading its go (it refused first) resets the socket:
            // the kernel reports `ECONNRESET` once, before the messages it still holds (the
            // refusal), and clears it. Reading on is what gets the report.
            Err(e) if e.raw_os_error() == Some(nix::libc::ECONNRESET) => {}
            Err(_) => return false,
        }
    }
}

impl Streams {
    /// Reads every stream until EOF; used after the group is gone, so EOF comes at once. Bounded by
    /// a short grace period in case a descriptor leaked somewhere unexpected.
    fn drain_to_eof(&mut self, o: &mut Observed, limits: &RunLimits) -> Result<(), LaunchError> {
        let until = Instant::now() + Duration::from_millis(200);
        let open = |s: &Streams| {
            s.stdout.is_some() || s.stderr.is_some() || s.report.is_some() || s.denials.is_some()
        };
        while open(self) && Instant::now() < until {
            self.pump(o, limits)?;
            if open(self) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        self.check_limits(o, limits);
        Ok(())
    }

    fn pump(&mut self, o: &mut Observed, limits: &RunLimits) -> Result<(), LaunchError> {
        if let Some(s) = self.stdout.as_mut() {
            let keep = &mut o.stdout;
            let open = read_some(s, &mut o.stdout_bytes, |b| {
                let room = limits
                    .streams
                    .max_stdout
                    .saturating_add(1)
                    .saturating_sub(keep.len());
                keep.extend_from_slice(&b[..b.len().min(room)]);
            })
            .map_err(|e| LaunchError::io("reading the plugin's stdout", "stdout", e))?;
            if !open {
                self.stdout = None;
            }
        }
        if let Some(s) = self.stderr.as_mut() {
            let (tail, passed, ends_line, shown) = (
                &mut o.stderr_tail,
                &mut o.stderr_passed,
                &mut o.stderr_passed_ends_line,
                &mut self.shown,
            );
            let open = read_some(s, &mut o.stderr_bytes, |b| match limits.streams.stderr {
                StderrMode::Discard => {}
                StderrMode::Tail => {
                    tail.extend_from_slice(b);
                    let extra = tail.len().saturating_sub(STDERR_TAIL);
                    tail.drain(..extra);
                }
                StderrMode::Pass => {
                    // Forwarded as it comes, never past the limit (the run fails beyond it).
                    let room = (limits.streams.max_stderr as u64).saturating_sub(*passed);
                    let n = b.len().min(usize::try_from(room).unwrap_or(usize::MAX));
                    let written = match shown.as_mut() {
                        Some(v) => std::io::stderr().write_all(&v.feed(&b[..n])),
                        None => std::io::stderr().write_all(&b[..n]),
                    };
                    if n > 0 && written.is_ok() {
                        *passed += n as u64;
                        *ends_line = b[n - 1] == b'\n';
                    }
                }
            })
            .map_err(|e| LaunchError::io("reading the plugin's stderr", "stderr", e))?;
            if !open {
                self.stderr = None;
            }
        }
        if let Some(s) = self.report.as_ref() {
            if !read_report(s, o) {
                o.report_closed_at = Some(Instant::now());
                self.report = None;
            }
        }
        if let Some(d) = self.denials.as_mut() {
            // Read however much comes (init waits on a full pipe, and the plugin on init), kept
            // up to `MAX_DENIAL_BYTES`; counted once the run has ended (`finish`).
            let mut ignored = 0;
            let lines = &mut o.denial_lines;
            let open = read_some(d, &mut ignored, |b| {
                let room = MAX_DENIAL_BYTES.saturating_sub(lines.len());
                lines.extend_from_slice(&b[..b.len().min(room)]);
            })
            .map_err(|e| LaunchError::io("reading the refused system calls", "denials", e))?;
            if !open {
                self.denials = None;
            }
        }
        Ok(())
    }

    fn check_limits(&self, o: &mut Observed, limits: &RunLimits) {
        if o.over_limit.is_none() {
            if o.stdout_bytes > limits.streams.max_stdout as u64 {
                o.over_limit = Some(crate::judge::Overflow::Stdout);
            } else if o.stderr_bytes > limits.streams.max_stderr as u64 {
                o.over_limit = Some(crate::judge::Overflow::Stderr);
            }
        }
    }
}

fn supervise(
    child: &mut Child,
    (report, denials): (Option<OwnedFd>, Option<File>),
    request: &[u8],
    limits: &RunLimits,
    started: Instant,
    mut leased: Option<(&File, Lease)>,
    argv0: &str,
) -> Result<(Observed, Streams), LaunchError> {
    let mut s = Streams {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        report,
        denials,
        shown: (limits.streams.stderr == StderrMode::Pass
            && std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .then(cli::VisibleStream::default),
    };
    let pidfd = sys::process::pidfd_open(child.id())
        .map_err(|e| LaunchError::io("pidfd_open", "plugin", e))?;
    for fd in [
        s.stdin.as_ref().map(|f| f.as_fd()),
        s.stdout.as_ref().map(|f| f.as_fd()),
        s.stderr.as_ref().map(|f| f.as_fd()),
        s.report.as_ref().map(|f| f.as_fd()),
        s.denials.as_ref().map(|f| f.as_fd()),
    ]
    .into_iter()
    .flatten()
    {
        set_nonblocking(fd)?;
    }
    let mut o = Observed {
        stdout: Vec::new(),
        stdout_bytes: 0,
        stderr_bytes: 0,
        over_limit: None,
        deadline_hit: false,
        cancelled: None,
        report: Vec::new(),
        stderr_tail: Vec::new(),
        stderr_passed: 0,
        stderr_passed_ends_line: true,
        stage: None,
        report_closed_at: None,
        denials: s.denials.is_some().then(Vec::new),
        denial_lines: Vec::new(),
        status: std::os::unix::process::ExitStatusExt::from_raw(0),
        duration: Duration::ZERO,
        usage: None,
    };
    let deadline = started + limits.deadline();
    let mut sent = 0usize;
    let mut leader_exited = false;
    let mut progress = crate::progress::Progress::new(
        argv0,
        limits.deadline(),
        limits.streams.stderr != StderrMode::Pass
            && crate::progress::Progress::stderr_is_terminal(),
    );
    let watch = crate::cancel::watch();
    while !leader_exited {
        let now = Instant::now();
        if now >= deadline {
            o.deadline_hit = true;
            break;
        }
        progress.tick(started, o.stdout_bytes, o.stderr_bytes);
        let most = progress
            .wait_at_most()
            .unwrap_or(Duration::from_secs(1))
            .as_millis();
        let wait_ms = (deadline - now).as_millis().clamp(1, most) as u16;
        let mut fds = Vec::with_capacity(6);
        fds.push(PollFd::new(pidfd.as_fd(), PollFlags::POLLIN));
        let cancel_at = watch.fd().map(|f| {
            fds.push(PollFd::new(f, PollFlags::POLLIN));
            fds.len() - 1
        });
        let stdin_at = s.stdin.as_ref().map(|f| {
            fds.push(PollFd::new(f.as_fd(), PollFlags::POLLOUT));
            fds.len() - 1
        });
        for f in [
            s.stdout.as_ref().map(|f| f.as_fd()),
            s.stderr.as_ref().map(|f| f.as_fd()),
            s.report.as_ref().map(|f| f.as_fd()),
            s.denials.as_ref().map(|f| f.as_fd()),
        ]
        .into_iter()
        .flatten()
        {
            fds.push(PollFd::new(f, PollFlags::POLLIN));
        }
        match nix::poll::poll(&mut fds, PollTimeout::from(wait_ms)) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(LaunchError::io("poll", "plugin pipes", e.into())),
        }
        leader_exited = fds[0].any().unwrap_or(false);
        let stdin_ready = stdin_at.and_then(|i| fds[i].any()).unwrap_or(false);
        let signalled = cancel_at.and_then(|i| fds[i].any()).unwrap_or(false);
        drop(fds);
        if signalled {
            if let Some(signal) = watch.received() {
                o.cancelled = Some(signal);
                break;
            }
        }
        if stdin_ready {
            if let Some(w) = s.stdin.as_mut() {
                match w.write(&request[sent..]) {
                    Ok(n) => sent += n,
                    Err(e)
                        if e.kind() == ErrorKind::WouldBlock
                            || e.kind() == ErrorKind::Interrupted => {}
                    // EPIPE: the plugin closed its stdin without reading it all (its choice);
                    // any other error is the host's, and the run fails with it.
                    Err(e) if e.raw_os_error() == Some(nix::libc::EPIPE) => sent = request.len(),
                    Err(e) => {
                        return Err(LaunchError::io(
                            "writing the request to the plugin's stdin",
                            "stdin",
                            e,
                        ))
                    }
                }
                if sent >= request.len() {
                    s.stdin = None;
                    crate::hooks::failpoint("request-sent");
                }
            }
        }
        s.pump(&mut o, limits)?;
        s.check_limits(&mut o, limits);
        // The report socket closes at the runner's exec of the plugin: pinned by the kernel now
        // (unless the exec was refused because a writer is waiting: the lease stays, for sealing).
        if o.report_closed_at.is_some() && !runner_exec_busy(&o.report) {
            if let Some((file, _)) = leased.take() {
                let _ = sys::fs::release_lease(file);
            }
        }
        if o.over_limit.is_some() {
            break;
        }
    }
    s.stdin = None;
    progress.clear();
    // The leader is gone (or we stop waiting): take what is already in the pipes.
    s.pump(&mut o, limits)?;
    s.check_limits(&mut o, limits);
    Ok((o, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runner bounds exactly what the run's limits say (the CPU budget resolved), with a stage
    /// twice the output bytes, never below the runner's smallest stage, grown by the inputs.
    #[test]
    fn the_runner_gets_the_run_limits_and_room_for_the_inputs() {
        let streams = StreamLimits {
            stderr: StderrMode::Tail,
            max_stdout: 5,
            max_stderr: 6,
            report_denials: true,
        };
        let limits = RunLimits::new(&Limits::STANDARD, streams);
        assert_eq!(limits.deadline(), Duration::from_secs(30));
        assert_eq!(
            limits.runner((3 << 20, 5)),
            RunnerLimits {
                memory_bytes: 1 << 30,
                cpu_seconds: 30 * 256,
                file_bytes: 64 << 20,
                descriptors: 64,
                tasks: 256,
                stage_bytes: (128 << 20) + (3 << 20),
                stage_inodes: STAGE_INODES + 5,
            }
        );
        let tiny = Limits {
            output_bytes: 4096,
            ..Limits::STRICT
        };
        let r = RunLimits::new(&tiny, streams).runner((0, 0));
        assert_eq!((r.cpu_seconds, r.stage_bytes), (10, STAGE_MIN_BYTES));
        let huge = limits.runner((u64::MAX, u64::MAX));
        assert_eq!((huge.stage_bytes, huge.stage_inodes), (u64::MAX, u64::MAX));
    }
}
