//! Spawning the plugin (directly at `audit`, through `dot-sandbox` at `process`) and supervising it:
//! the request on stdin, bounded stdout and stderr, the wall deadline, then the group terminated and
//! reaped before anything is decided.

use crate::error::LaunchError;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Limits for one run.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub deadline: Duration,
    pub max_stdout: usize,
    pub max_stderr: usize,
    pub max_outputs: usize,
    pub max_output_bytes: u64,
    /// Hard `RLIMIT_AS` for `process` runs.
    pub max_memory: u64,
    /// Hard `RLIMIT_NOFILE` for `process` runs.
    pub max_files: u64,
}

/// The runner for a `process` run: the opened `dot-sandbox`.
#[derive(Debug)]
pub struct Runner {
    pub file: File,
}

/// What supervision observed.
#[derive(Debug)]
pub struct Observed {
    pub stdout: Vec<u8>,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    /// `stdout-limit` or `stderr-limit` when a stream went over its limit.
    pub over_limit: Option<&'static str>,
    pub deadline_hit: bool,
    /// What `dot-sandbox` wrote on its report descriptor (empty at `audit`).
    pub report: Vec<u8>,
    pub status: std::process::ExitStatus,
    pub duration: Duration,
}

const MAX_REPORT: usize = 64 * 1024;

/// Spawns the plugin and supervises it to the end, group reaped.
pub fn run(
    exe: &File,
    runner: Option<&Runner>,
    stage: &Path,
    argv0: &str,
    request: &[u8],
    limits: &Limits,
) -> Result<Observed, LaunchError> {
    let started = Instant::now();
    let mut report_read: Option<File> = None;
    let mut cmd;
    let mut moves = Vec::new();
    let report_write: Option<OwnedFd>;
    match runner {
        None => {
            cmd = Command::new(format!("/proc/self/fd/{}", exe.as_raw_fd()));
            cmd.arg0(argv0);
            report_write = None;
        }
        Some(r) => {
            let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
                .map_err(|e| LaunchError::io("creating the report pipe", "pipe", e.into()))?;
            report_read = Some(File::from(rd));
            cmd = Command::new("/proc/self/fd/3");
            cmd.arg0("dot-sandbox").args([
                "exec".to_owned(),
                "--report-fd".to_owned(),
                "5".to_owned(),
                "--as-bytes".to_owned(),
                limits.max_memory.to_string(),
                "--cpu-seconds".to_owned(),
                (limits.deadline.as_secs() + 1).to_string(),
                "--fsize-bytes".to_owned(),
                limits.max_output_bytes.to_string(),
                "--nofile".to_owned(),
                limits.max_files.to_string(),
                "/proc/self/fd/4".to_owned(),
            ]);
            moves.push((r.file.as_fd(), 3));
            moves.push((exe.as_fd(), 4));
            report_write = Some(wr);
        }
    }
    if let Some(wr) = &report_write {
        moves.push((wr.as_fd(), 5));
    }
    cmd.env_clear()
        .current_dir(stage)
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = sys::process::spawn_with_fds(&mut cmd, &moves)
        .map_err(|e| LaunchError::io("spawning the plugin", stage, e))?;
    drop(report_write);
    let supervised = supervise(&mut child, report_read, request, limits, started);
    // Whatever happened, the group is terminated and reaped before anything is decided.
    let reaped = terminate(&mut child);
    let (mut observed, mut streams) = supervised?;
    reaped?;
    streams.drain_to_eof(&mut observed, limits);
    observed.status = child
        .wait()
        .map_err(|e| LaunchError::io("waiting for the plugin", stage, e))?;
    observed.duration = started.elapsed();
    Ok(observed)
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
    stdin: Option<std::process::ChildStdin>,
    stdout: Option<std::process::ChildStdout>,
    stderr: Option<std::process::ChildStderr>,
    report: Option<File>,
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
fn read_some(r: &mut impl Read, keep: Option<(&mut Vec<u8>, usize)>, count: &mut u64) -> bool {
    let mut buf = [0u8; 16 * 1024];
    let mut keep = keep;
    loop {
        match r.read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => {
                *count += n as u64;
                if let Some((v, cap)) = keep.as_mut() {
                    let room = cap.saturating_add(1).saturating_sub(v.len());
                    v.extend_from_slice(&buf[..n.min(room)]);
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

impl Streams {
    /// Reads every stream until EOF; used after the group is gone, so EOF comes at once. Bounded by
    /// a short grace period in case a descriptor leaked somewhere unexpected.
    fn drain_to_eof(&mut self, o: &mut Observed, limits: &Limits) {
        let until = Instant::now() + Duration::from_millis(200);
        while (self.stdout.is_some() || self.stderr.is_some() || self.report.is_some())
            && Instant::now() < until
        {
            self.pump(o, limits);
            if self.stdout.is_some() || self.stderr.is_some() || self.report.is_some() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        self.check_limits(o, limits);
    }

    fn pump(&mut self, o: &mut Observed, limits: &Limits) {
        if let Some(s) = self.stdout.as_mut() {
            if !read_some(
                s,
                Some((&mut o.stdout, limits.max_stdout)),
                &mut o.stdout_bytes,
            ) {
                self.stdout = None;
            }
        }
        if let Some(s) = self.stderr.as_mut() {
            if !read_some(s, None, &mut o.stderr_bytes) {
                self.stderr = None;
            }
        }
        if let Some(s) = self.report.as_mut() {
            let mut n = 0;
            if !read_some(s, Some((&mut o.report, MAX_REPORT)), &mut n) {
                self.report = None;
            }
        }
    }

    fn check_limits(&self, o: &mut Observed, limits: &Limits) {
        if o.over_limit.is_none() {
            if o.stdout_bytes > limits.max_stdout as u64 {
                o.over_limit = Some("stdout-limit");
            } else if o.stderr_bytes > limits.max_stderr as u64 {
                o.over_limit = Some("stderr-limit");
            }
        }
    }
}

fn supervise(
    child: &mut Child,
    report: Option<File>,
    request: &[u8],
    limits: &Limits,
    started: Instant,
) -> Result<(Observed, Streams), LaunchError> {
    let mut s = Streams {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        report,
    };
    let pidfd = sys::process::pidfd_open(child.id())
        .map_err(|e| LaunchError::io("pidfd_open", "plugin", e))?;
    for fd in [
        s.stdin.as_ref().map(|f| f.as_fd()),
        s.stdout.as_ref().map(|f| f.as_fd()),
        s.stderr.as_ref().map(|f| f.as_fd()),
        s.report.as_ref().map(|f| f.as_fd()),
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
        report: Vec::new(),
        status: std::os::unix::process::ExitStatusExt::from_raw(0),
        duration: Duration::ZERO,
    };
    let deadline = started + limits.deadline;
    let mut sent = 0usize;
    let mut leader_exited = false;
    while !leader_exited {
        let now = Instant::now();
        if now >= deadline {
            o.deadline_hit = true;
            break;
        }
        let wait_ms = (deadline - now).as_millis().clamp(1, 1000) as u16;
        let mut fds = Vec::with_capacity(5);
        fds.push(PollFd::new(pidfd.as_fd(), PollFlags::POLLIN));
        let stdin_at = s.stdin.as_ref().map(|f| {
            fds.push(PollFd::new(f.as_fd(), PollFlags::POLLOUT));
            fds.len() - 1
        });
        for f in [
            s.stdout.as_ref().map(|f| f.as_fd()),
            s.stderr.as_ref().map(|f| f.as_fd()),
            s.report.as_ref().map(|f| f.as_fd()),
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
        drop(fds);
        if stdin_ready {
            if let Some(w) = s.stdin.as_mut() {
                match w.write(&request[sent..]) {
                    Ok(n) => sent += n,
                    Err(e)
                        if e.kind() == ErrorKind::WouldBlock
                            || e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => sent = request.len(), // EPIPE: the plugin closed its stdin
                }
                if sent >= request.len() {
                    s.stdin = None;
                    crate::hooks::failpoint("request-sent");
                }
            }
        }
        s.pump(&mut o, limits);
        s.check_limits(&mut o, limits);
        if o.over_limit.is_some() {
            break;
        }
    }
    s.stdin = None;
    // The leader is gone (or we stop waiting): take what is already in the pipes.
    s.pump(&mut o, limits);
    s.check_limits(&mut o, limits);
    Ok((o, s))
}
