//! Process-group termination with zombie sampling: what `dot-launch` runs before it decides anything
//! about a run, and what `dot-reap` runs on the command line.
//!
//! [`reap_group`], in order:
//! 1. refuse a pgid ≤ 1 and the caller's own group: `kill(-1)` and `kill(0)` are never sent;
//! 2. SIGKILL the group;
//! 3. sample the members from `/proc`: one readdir, then each `/proc/PID/stat`, parsed after the
//!    last `)` (state, ppid, pgrp, thread count). A member is a process of the group, the leader,
//!    or, with [`Options::descendants_of`], any process whose parent chain leads to that pid (this
//!    catches children that called `setsid()`). When that pid is the caller itself and the caller
//!    is a child subreaper (`dot-launch`), a sample reads only the caller's descendants, from the
//!    `children` lists under `/proc/PID/task/`: everything a run can start stays a descendant of
//!    a subreaper (a child whose parent dies comes back to it), and a process of the run cannot
//!    put any other process into its group (`setpgid` moves only the caller or its own children).
//!    A process from outside the run that joined the group itself is signalled with the group but
//!    not waited for. A sample that saw a listed process vanish before its own list was read (its
//!    children may have been moving to a new parent) does not count as clean;
//! 4. a member is dead when it is a zombie (`Z`, or `X`) with no thread still running. While a
//!    member lives: SIGKILL the group and each live member, pause (a sixteenth of
//!    [`Options::interval`] at first, doubling up to it), sample again, at most
//!    [`Options::max_samples`] samples. Success needs two clean samples in a row (the second
//!    taken at once), so a process forked during one pass of `/proc` by a process that then died
//!    is seen by the next pass. A signal a live member cannot be sent (`EPERM`: it belongs to
//!    someone the caller may not signal) ends the loop at once: that member would never die;
//! 5. when those samples are spent, the wait goes on only if the kernel shows every member still
//!    alive already on its way out: each of its threads has `PF_EXITING` in the flags of
//!    `/proc/PID/task/TID/stat` (a killed process keeps running, in the kernel, while its memory
//!    is torn down, which for gigabytes takes hundreds of milliseconds: see `man/dot-reap.1`), or
//!    has SIGKILL pending in `/proc/PID/task/TID/status` (`SigPnd`/`ShdPnd`: the kill was queued
//!    but the thread has not run since, as on a loaded machine; it can never run user code
//!    again, it dies the next time it is scheduled).
//!    Then it samples every [`Options::exiting_interval`], at most
//!    [`Options::exiting_samples`] more times, as long as that stays true;
//! 6. only then wait for the leader (until here its pid, which is the pgid, stays reserved), then
//!    reap the dead members that are the caller's own children (orphans a subreaper inherited).
//!
//! Running out of samples, or a live member that is not exiting when the first budget is spent,
//! is [`ReapError::Survivors`], never success.
#![forbid(unsafe_code)]

use cli::Output;
use nix::errno::Errno;
use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;
use proto::{ErrorObject, Kind, ToErrorObject};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{self, Read};
use std::time::Duration;

/// A group leader the caller is the parent of: `std`'s child, or the launcher's
/// (`sys::spawn::Child`). [`reap_group`] waits for it last.
pub trait Leader: std::fmt::Debug {
    /// Its pid.
    fn id(&self) -> u32;
    /// Waits for it and reaps it.
    fn wait(&mut self) -> io::Result<std::process::ExitStatus>;
}

impl Leader for std::process::Child {
    fn id(&self) -> u32 {
        std::process::Child::id(self)
    }
    fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        std::process::Child::wait(self)
    }
}

impl Leader for sys::spawn::Child {
    fn id(&self) -> u32 {
        sys::spawn::Child::id(self)
    }
    fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        sys::spawn::Child::wait(self)
    }
}

/// How many samples [`Options::default`] takes while a member lives: with the pauses of
/// [`DEFAULT_INTERVAL`], about 100 ms. A killed process that is not stuck is gone within
/// microseconds, unless it is still tearing down its memory (the longer budget below).
pub const DEFAULT_MAX_SAMPLES: u32 = 50;
/// The longest pause between two samples in [`Options::default`].
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(2);
/// How many more samples [`Options::default`] takes while every live member is exiting: with
/// [`DEFAULT_EXITING_INTERVAL`], about 10 s. Measured here, a killed process holding 16 GiB took
/// up to 2.6 s to become a zombie (80 to 410 ms per GiB); 10 s covers more memory than this
/// machine has at the slowest rate seen.
pub const DEFAULT_EXITING_SAMPLES: u32 = 1_000;
/// The pause between two samples while every live member is exiting.
pub const DEFAULT_EXITING_INTERVAL: Duration = Duration::from_millis(10);

/// `PF_EXITING` in the flags field of `/proc/PID/stat`: the task is in `do_exit` and will not
/// return to user space (include/linux/sched.h).
pub const PF_EXITING: u32 = 0x4;

/// What a termination did. Printed by `dot-reap`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReapReport {
    pub pgid: i32,
    /// SIGKILLs delivered, to the group and to single members.
    pub signals: u32,
    /// `/proc` samples taken.
    pub samples: u32,
    pub outcome: Outcome,
    /// Members alive at the last sample: always empty in a report (a survivor is an error).
    pub survivors: Vec<i32>,
    /// What the leader used, read just before its wait ([`reap_group`] with a leader only; never
    /// printed).
    #[serde(skip)]
    pub leader_usage: Option<sys::process::ExitUsage>,
}

/// How the group ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// No member was left at the last sample.
    Absent,
    /// Every member left at the last sample was a zombie.
    AllZombie,
}

/// How hard to look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The most `/proc` samples taken while a member lives, before giving up unless every live
    /// member is exiting.
    pub max_samples: u32,
    /// The longest pause before a sample that follows one that found a live member. The first
    /// such pause is a sixteenth of it, and each further one doubles up to it: a killed process
    /// is usually gone within microseconds, so most groups are confirmed after a short pause.
    pub interval: Duration,
    /// The most further samples taken while every live member is exiting (each of its threads
    /// shows `PF_EXITING`).
    pub exiting_samples: u32,
    /// The pause before each of those samples.
    pub exiting_interval: Duration,
    /// Also count as members all descendants of this pid (the caller's own pid when it is a child
    /// subreaper), so children that left the group with `setsid()` are killed too.
    pub descendants_of: Option<i32>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_samples: DEFAULT_MAX_SAMPLES,
            interval: DEFAULT_INTERVAL,
            exiting_samples: DEFAULT_EXITING_SAMPLES,
            exiting_interval: DEFAULT_EXITING_INTERVAL,
            descendants_of: None,
        }
    }
}

/// Why a group could not be confirmed dead.
#[derive(Debug, thiserror::Error)]
pub enum ReapError {
    #[error("refusing process group {pgid}: {why}")]
    BadPgid { pgid: i32, why: &'static str },
    #[error("refusing leader pid {pid}: {why}")]
    BadLeader { pid: i32, why: &'static str },
    #[error("could not signal process group {pgid}: {source}")]
    SignalGroup { pgid: i32, source: io::Error },
    #[error("could not signal process {pid} of group {pgid}: {source}")]
    SignalMember {
        pgid: i32,
        pid: i32,
        source: io::Error,
    },
    #[error("could not sample processes from {path}: {source}")]
    Sample { path: String, source: io::Error },
    #[error(
        "process group {pgid} not confirmed dead after {samples} samples; alive at the last: {survivors:?}"
    )]
    Survivors {
        pgid: i32,
        samples: u32,
        survivors: Vec<i32>,
    },
    #[error("could not wait for the group leader {pid}: {source}")]
    WaitLeader { pid: i32, source: io::Error },
}

impl ToErrorObject for ReapError {
    fn kind(&self) -> Kind {
        match self {
            ReapError::BadPgid { .. } => Kind::BadPgid,
            ReapError::BadLeader { .. } => Kind::BadLeader,
            ReapError::Survivors { .. } => Kind::ReapSurvivors,
            ReapError::SignalGroup { .. }
            | ReapError::SignalMember { .. }
            | ReapError::Sample { .. }
            | ReapError::WaitLeader { .. } => Kind::Io,
        }
    }

    fn to_error_object(&self) -> ErrorObject {
        let obj = ErrorObject::new(self.kind(), self.to_string());
        match self {
            ReapError::BadPgid { pgid, .. } => obj.field("pgid").value(pgid.to_string()),
            ReapError::BadLeader { pid, .. } => obj.field("leader").value(pid.to_string()),
            ReapError::SignalGroup { pgid, .. } => obj.field("pgid").value(pgid.to_string()),
            ReapError::SignalMember { pid, .. } => obj.field("pid").value(pid.to_string()),
            ReapError::Sample { path, .. } => obj.path(path),
            ReapError::Survivors {
                pgid, survivors, ..
            } => obj.field("survivors").value(format!("{survivors:?}")).next(
                &cli::Next::cmd("dot-reap")
                    .arg("--pgid")
                    .arg(pgid.to_string()),
            ),
            ReapError::WaitLeader { pid, .. } => obj.field("leader").value(pid.to_string()),
        }
    }
}

/// One process as one sample saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    /// The state letter (`R`, `S`, `D`, `Z`, …).
    pub state: u8,
    pub ppid: i32,
    pub pgrp: i32,
    /// The task flags (`PF_*`).
    pub flags: u32,
    /// Threads not yet released: a zombie group leader whose other threads still run shows `Z`
    /// with more than one.
    pub threads: u32,
}

impl ProcStat {
    /// Parses the contents of `/proc/PID/stat`. The command name may hold spaces and `)`, so the
    /// fields are read after the last `)`.
    pub fn parse(pid: i32, stat: &[u8]) -> Option<ProcStat> {
        let close = stat.iter().rposition(|&b| b == b')')?;
        let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
        let mut fields = rest.split_ascii_whitespace();
        let state = *fields.next()?.as_bytes().first()?;
        let ppid = fields.next()?.parse().ok()?;
        let pgrp = fields.next()?.parse().ok()?;
        // session tty_nr tpgid, then flags.
        let flags = fields.nth(3)?.parse().ok()?;
        // minflt cminflt majflt cmajflt utime stime cutime cstime priority nice, then num_threads.
        let threads = fields.nth(10)?.parse().ok()?;
        Some(ProcStat {
            pid,
            state,
            ppid,
            pgrp,
            flags,
            threads,
        })
    }

    /// Dead: a zombie with no thread left running.
    pub fn is_dead(&self) -> bool {
        matches!(self.state, b'Z' | b'X' | b'x') && self.threads <= 1
    }

    /// This task is in the kernel's exit path (`PF_EXITING`), or already a zombie.
    pub fn is_exiting(&self) -> bool {
        self.flags & PF_EXITING != 0 || matches!(self.state, b'Z' | b'X' | b'x')
    }
}

/// Whether a `/proc/PID/status` text shows SIGKILL pending, for the thread (`SigPnd`) or its
/// whole process (`ShdPnd`). A task with SIGKILL pending never returns to user mode: it exits the
/// next time it runs. Unreadable or missing fields answer false.
pub fn sigkill_pending(status: &[u8]) -> bool {
    // Signal N is bit N - 1 of the mask; SIGKILL is 9 on every Linux architecture.
    const SIGKILL_BIT: u64 = 1 << (9 - 1);
    status.split(|&b| b == b'\n').any(|line| {
        let value = line
            .strip_prefix(b"SigPnd:")
            .or_else(|| line.strip_prefix(b"ShdPnd:"));
        value
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .is_some_and(|mask| mask & SIGKILL_BIT != 0)
    })
}

/// Kills the group `pgid`, confirms every member dead, then waits for `leader` and reaps the dead
/// members that are our own children. See the crate documentation for the order.
pub fn reap_group(
    pgid: i32,
    leader: Option<&mut dyn Leader>,
    opts: &Options,
) -> Result<ReapReport, ReapError> {
    let leader_pid = match &leader {
        Some(child) => Some(i32::try_from(child.id()).map_err(|_| ReapError::BadLeader {
            pid: -1,
            why: "the child's pid does not fit a pid_t",
        })?),
        None => None,
    };
    let mut sys = ProcFs {
        leader,
        ..ProcFs::default()
    };
    let mut report = terminate_and_reap(&mut sys, pgid, leader_pid, opts)?;
    report.leader_usage = sys.leader_usage;
    Ok(report)
}

/// Terminates the group, then waits for the leader and reaps our own dead members.
fn terminate_and_reap(
    sys: &mut impl System,
    pgid: i32,
    leader: Option<i32>,
    opts: &Options,
) -> Result<ReapReport, ReapError> {
    let (report, last) = terminate(sys, pgid, leader, opts)?;
    // The leader last: only now may its pid, the group's id, be reused.
    if let Some(pid) = leader {
        sys.wait_leader(pid)?;
    }
    let me = own_pid();
    for p in last
        .iter()
        .filter(|p| p.ppid == me && Some(p.pid) != leader)
    {
        // Only members we saw dead and whose parent we are: never another child of ours.
        sys.reap_dead_child(p.pid);
    }
    Ok(report)
}

/// Kills the group `pgid` and confirms every member dead, without waiting for anything: for a
/// caller that is not the leader's parent (`dot-reap`). `leader` is counted as a member even if it
/// left the group.
pub fn terminate_group(
    pgid: i32,
    leader: Option<i32>,
    opts: &Options,
) -> Result<ReapReport, ReapError> {
    terminate(&mut ProcFs::default(), pgid, leader, opts).map(|(report, _)| report)
}

/// What the sampling loop needs from the system; a fake stands in for it in unit tests.
trait System {
    /// One pass over all processes.
    fn scan(&mut self, out: &mut Vec<ProcStat>) -> Result<(), ReapError>;
    /// One pass over the descendants of `root` only; `Ok(false)` when a process vanished between
    /// being listed and having its own children listed (the pass may have missed some).
    fn scan_descendants(&mut self, root: i32, out: &mut Vec<ProcStat>) -> Result<bool, ReapError>;
    /// The caller is a child subreaper.
    fn is_subreaper(&mut self) -> bool;
    /// Every thread of this live member is exiting (or the member is gone).
    fn exiting(&mut self, member: &ProcStat) -> Result<bool, ReapError>;
    /// SIGKILL to the group: `Ok(true)` delivered, `Ok(false)` no such group.
    fn kill_group(&mut self, pgid: i32) -> Result<bool, ReapError>;
    /// SIGKILL to one process: `Ok(true)` delivered, `Ok(false)` no such process, an error when
    /// the kernel refused it (`EPERM`).
    fn kill_one(&mut self, pid: i32) -> io::Result<bool>;
    fn pause(&mut self, d: Duration);
    /// Waits for the group leader, our child.
    fn wait_leader(&mut self, pid: i32) -> Result<(), ReapError>;
    /// Reaps a dead member that is our child, if it still is one.
    fn reap_dead_child(&mut self, pid: i32);
}

fn own_pid() -> i32 {
    i32::try_from(std::process::id()).unwrap_or(i32::MAX)
}

fn check(pgid: i32, leader: Option<i32>) -> Result<(), ReapError> {
    if pgid <= 1 {
        return Err(ReapError::BadPgid {
            pgid,
            why: "a process group id must be greater than 1",
        });
    }
    if pgid == nix::unistd::getpgrp().as_raw() {
        return Err(ReapError::BadPgid {
            pgid,
            why: "it is the caller's own process group",
        });
    }
    if let Some(pid) = leader {
        if pid <= 1 {
            return Err(ReapError::BadLeader {
                pid,
                why: "a pid must be greater than 1",
            });
        }
        if pid == own_pid() {
            return Err(ReapError::BadLeader {
                pid,
                why: "it is the caller itself",
            });
        }
    }
    Ok(())
}

/// The sampling loop: returns the report and the members of the last sample.
fn terminate(
    sys: &mut impl System,
    pgid: i32,
    leader: Option<i32>,
    opts: &Options,
) -> Result<(ReapReport, Vec<ProcStat>), ReapError> {
    check(pgid, leader)?;
    let me = own_pid();
    let mut signals = 0u32;
    let mut samples = 0u32;
    let mut procs = Vec::new();
    let mut live: Vec<ProcStat> = Vec::new();
    let mut clean_before = false;
    let mut extending = false;
    let mut pause = opts.interval / 16;
    // The caller's own descendants are all the run has when the caller is a subreaper.
    let walk = opts.descendants_of == Some(me) && sys.is_subreaper();
    loop {
        if samples >= opts.max_samples {
            // The budget for live members is spent: wait on only for members the kernel shows
            // on their way out, and only so long. A last sample that found none left alive
            // (the first clean one, or one after the longer wait began) earns the sample that
            // confirms it: the member it saw last was alive, not stuck.
            let extra = samples - opts.max_samples;
            let wait_on = extra < opts.exiting_samples
                && match live.is_empty() {
                    true => extending || clean_before,
                    false => all_exiting(sys, &live)?,
                };
            if !wait_on {
                return Err(ReapError::Survivors {
                    pgid,
                    samples,
                    survivors: live.iter().map(|p| p.pid).collect(),
                });
            }
            extending = true;
            pause = opts.exiting_interval;
        }
        // Before every sample: the group, and each member the previous sample found alive.
        for p in live.iter().filter(|p| p.pid > 1 && p.pid != me) {
            match sys.kill_one(p.pid) {
                Ok(true) => signals += 1,
                Ok(false) => {}
                Err(source) => {
                    return Err(ReapError::SignalMember {
                        pgid,
                        pid: p.pid,
                        source,
                    })
                }
            }
        }
        if sys.kill_group(pgid)? {
            signals += 1;
        }
        if !live.is_empty() {
            sys.pause(pause);
            if samples < opts.max_samples {
                pause = (pause * 2).min(opts.interval);
            }
        }
        samples += 1;
        let (members, complete) = if walk {
            let complete = sys.scan_descendants(me, &mut procs)?;
            (procs.clone(), complete)
        } else {
            sys.scan(&mut procs)?;
            (members(&procs, pgid, leader, opts.descendants_of, me), true)
        };
        live = members.iter().filter(|p| !p.is_dead()).copied().collect();
        if !live.is_empty() || !complete {
            clean_before = false;
        } else if clean_before {
            let outcome = if members.is_empty() {
                Outcome::Absent
            } else {
                Outcome::AllZombie
            };
            let report = ReapReport {
                pgid,
                signals,
                samples,
                outcome,
                survivors: Vec::new(),
                leader_usage: None,
            };
            return Ok((report, members));
        } else {
            clean_before = true;
        }
    }
}

/// Every live member is exiting: none of them can ever run user code again.
fn all_exiting(sys: &mut impl System, live: &[ProcStat]) -> Result<bool, ReapError> {
    for p in live {
        if !sys.exiting(p)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The processes of one sample that belong to the group: same pgrp, the leader, or (with `root`)
/// a descendant of `root`. The caller itself never is one.
fn members(
    procs: &[ProcStat],
    pgid: i32,
    leader: Option<i32>,
    root: Option<i32>,
    me: i32,
) -> Vec<ProcStat> {
    let under = root.map(|r| descendants(procs, r));
    procs
        .iter()
        .enumerate()
        .filter(|&(i, p)| {
            p.pid != me
                && (p.pgrp == pgid || Some(p.pid) == leader || under.as_ref().is_some_and(|u| u[i]))
        })
        .map(|(_, p)| *p)
        .collect()
}

/// For each process of the sample: does its parent chain lead to `root`? One pass, memoized; a
/// chain longer than the sample (possible only in a torn snapshot) counts as no.
fn descendants(procs: &[ProcStat], root: i32) -> Vec<bool> {
    let index: HashMap<i32, usize> = procs.iter().enumerate().map(|(i, p)| (p.pid, i)).collect();
    let mut memo: Vec<Option<bool>> = vec![None; procs.len()];
    let mut path = Vec::new();
    for start in 0..procs.len() {
        path.clear();
        let mut at = start;
        let verdict = loop {
            if let Some(v) = memo[at] {
                break v;
            }
            let p = &procs[at];
            if p.pid == root || path.len() > procs.len() {
                break false;
            }
            path.push(at);
            if p.ppid == root {
                break true;
            }
            match index.get(&p.ppid) {
                Some(&parent) => at = parent,
                None => break false,
            }
        };
        for &i in &path {
            memo[i] = Some(verdict);
        }
    }
    memo.into_iter().map(|v| v.unwrap_or(false)).collect()
}

/// The real system: `/proc`, `kill(2)` and `waitpid(2)`.
#[derive(Debug, Default)]
struct ProcFs<'a> {
    path: String,
    /// The group leader, our child, when the caller is its parent.
    leader: Option<&'a mut dyn Leader>,
    /// What the leader used, read (without reaping it) just before its wait.
    leader_usage: Option<sys::process::ExitUsage>,
}

const PROC: &str = "/proc";
/// `/proc/PID/stat` is far shorter (52 numbers and a 16-byte name); a longer read is malformed.
const STAT_MAX: usize = 4096;

fn sample_err(path: &str, source: io::Error) -> ReapError {
    ReapError::Sample {
        path: path.to_owned(),
        source,
    }
}

impl ProcFs<'_> {
    /// `/proc/PID/stat`, or `None` if the process is gone.
    fn stat(&mut self, pid: i32, buf: &mut [u8; STAT_MAX]) -> Result<Option<ProcStat>, ReapError> {
        use std::fmt::Write as _;
        self.path.clear();
        let _ = write!(self.path, "{PROC}/{pid}/stat");
        self.read_stat(pid, buf)
    }

    /// Reads and parses the stat file at `self.path`: `None` if it is gone.
    /// SIGKILL is pending for the task whose `status` file is at `self.path` (a task that is gone
    /// counts as on its way out).
    fn kill_pending(&mut self) -> Result<bool, ReapError> {
        match std::fs::read(&self.path) {
            Ok(status) => Ok(sigkill_pending(&status)),
            Err(e) if gone(&e) => Ok(true),
            Err(e) => Err(sample_err(&self.path, e)),
        }
    }

    fn read_stat(
        &mut self,
        pid: i32,
        buf: &mut [u8; STAT_MAX],
    ) -> Result<Option<ProcStat>, ReapError> {
        // open + one read + close: the kernel produces the whole line on the first read.
        let n = match std::fs::File::open(&self.path).and_then(|mut f| f.read(buf)) {
            Ok(n) => n,
            Err(e) if gone(&e) => return Ok(None),
            Err(e) => return Err(sample_err(&self.path, e)),
        };
        buf.get(..n)
            .filter(|_| n < STAT_MAX)
            .and_then(|b| ProcStat::parse(pid, b))
            .map(Some)
            .ok_or_else(|| {
                sample_err(
                    &self.path,
                    io::Error::new(io::ErrorKind::InvalidData, "malformed stat line"),
                )
            })
    }
}

impl System for ProcFs<'_> {
    fn scan(&mut self, out: &mut Vec<ProcStat>) -> Result<(), ReapError> {
        out.clear();
        let dir = std::fs::read_dir(PROC).map_err(|e| sample_err(PROC, e))?;
        let mut buf = [0u8; STAT_MAX];
        for entry in dir {
            let entry = entry.map_err(|e| sample_err(PROC, e))?;
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            if let Some(stat) = self.stat(pid, &mut buf)? {
                out.push(stat);
            }
        }
        Ok(())
    }

    fn scan_descendants(&mut self, root: i32, out: &mut Vec<ProcStat>) -> Result<bool, ReapError> {
        out.clear();
        let mut complete = true;
        let mut seen = std::collections::HashSet::new();
        let mut parents = vec![root];
        let mut list = String::new();
        let mut buf = [0u8; STAT_MAX];
        while let Some(parent) = parents.pop() {
            let task_dir = format!("{PROC}/{parent}/task");
            let tasks = match std::fs::read_dir(&task_dir) {
                Ok(t) => t,
                Err(e) if gone(&e) => {
                    complete = false;
                    continue;
                }
                Err(e) => return Err(sample_err(&task_dir, e)),
            };
            for task in tasks {
                let task = task.map_err(|e| sample_err(&task_dir, e))?;
                let children = task.path().join("children");
                list.clear();
                match std::fs::File::open(&children).and_then(|mut f| f.read_to_string(&mut list)) {
                    Ok(_) => {}
                    Err(e) if gone(&e) => {
                        complete = false;
                        continue;
                    }
                    Err(e) => return Err(sample_err(&children.display().to_string(), e)),
                }
                for pid in list.split_ascii_whitespace() {
                    let pid: i32 = pid.parse().map_err(|_| {
                        sample_err(
                            &children.display().to_string(),
                            io::Error::new(io::ErrorKind::InvalidData, "malformed children list"),
                        )
                    })?;
                    if !seen.insert(pid) {
                        continue;
                    }
                    match self.stat(pid, &mut buf)? {
                        Some(stat) => {
                            // A dead process has no children: they moved to us when it exited.
                            if !stat.is_dead() {
                                parents.push(pid);
                            }
                            out.push(stat);
                        }
                        None => complete = false,
                    }
                }
            }
        }
        Ok(complete)
    }

    fn is_subreaper(&mut self) -> bool {
        nix::sys::prctl::get_child_subreaper().unwrap_or(false)
    }

    fn exiting(&mut self, member: &ProcStat) -> Result<bool, ReapError> {
        use std::fmt::Write as _;
        if member.threads <= 1 {
            if member.is_exiting() {
                return Ok(true);
            }
            self.path.clear();
            let _ = write!(self.path, "{PROC}/{}/status", member.pid);
            return self.kill_pending();
        }
        // Each thread has its own flags: a zombie leader's other threads may still run.
        let task_dir = format!("{PROC}/{}/task", member.pid);
        let tasks = match std::fs::read_dir(&task_dir) {
            Ok(t) => t,
            Err(e) if gone(&e) => return Ok(true),
            Err(e) => return Err(sample_err(&task_dir, e)),
        };
        let mut buf = [0u8; STAT_MAX];
        for task in tasks {
            let task = task.map_err(|e| sample_err(&task_dir, e))?;
            let Some(tid) = task
                .file_name()
                .to_str()
                .and_then(|t| t.parse::<i32>().ok())
            else {
                continue;
            };
            self.path.clear();
            let _ = write!(self.path, "{task_dir}/{tid}/stat");
            if let Some(t) = self.read_stat(tid, &mut buf)? {
                if !t.is_exiting() {
                    self.path.clear();
                    let _ = write!(self.path, "{task_dir}/{tid}/status");
                    if !self.kill_pending()? {
                        return Ok(false);
                    }
                }
            }
        }
        Ok(true)
    }

    fn kill_group(&mut self, pgid: i32) -> Result<bool, ReapError> {
        match killpg(Pid::from_raw(pgid), Signal::SIGKILL) {
            Ok(()) => Ok(true),
            Err(Errno::ESRCH) => Ok(false),
            Err(e) => Err(ReapError::SignalGroup {
                pgid,
                source: e.into(),
            }),
        }
    }

    fn kill_one(&mut self, pid: i32) -> io::Result<bool> {
        match kill(Pid::from_raw(pid), Signal::SIGKILL) {
            Ok(()) => Ok(true),
            Err(Errno::ESRCH) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    fn pause(&mut self, d: Duration) {
        std::thread::sleep(d);
    }

    fn wait_leader(&mut self, pid: i32) -> Result<(), ReapError> {
        if self.leader.is_some() {
            // Its usage is gone once it is reaped; reading it is best effort (a leader already
            // reaped by the caller has none to give).
            self.leader_usage = sys::process::exit_usage(pid).ok();
        }
        match self.leader.as_mut() {
            Some(child) => child
                .wait()
                .map(drop)
                .map_err(|source| ReapError::WaitLeader { pid, source }),
            None => Ok(()),
        }
    }

    fn reap_dead_child(&mut self, pid: i32) {
        let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
    }
}

/// The process went away between the readdir and the read.
fn gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(Errno::ESRCH as i32)
}

/// `dot-reap`: SIGKILL a process group and sample /proc until every member is a zombie or gone;
/// print the report as JSON.
#[derive(argh::FromArgs, Debug)]
pub struct Args {
    /// the process group to kill: greater than 1, not dot-reap's own
    #[argh(option)]
    pub pgid: i32,
    /// the group leader's pid, counted as a member even if it left the group
    #[argh(option)]
    pub leader: Option<i32>,
}

/// `dot-reap`'s entry point. `dot-reap` is not the leader's parent, so it waits for nothing; it
/// reports once every member is dead.
pub fn run(args: Args) -> Result<Output, ReapError> {
    let report = terminate_group(args.pgid, args.leader, &Options::default())?;
    Ok(Output::json(&report))
}

#[cfg(test)]
mod tests {
    #[test]
    fn sigkill_pending_reads_the_thread_and_the_shared_masks() {
        let status = |sig: &str, shd: &str| {
            format!("Name:\tx\nState:\tR (running)\nSigQ:\t1/95\nSigPnd:\t{sig}\nShdPnd:\t{shd}\nSigBlk:\t0000000000000100\n")
        };
        for (sig, shd, pending) in [
            ("0000000000000100", "0000000000000000", true),
            ("0000000000000000", "0000000000000100", true),
            ("0000000000000000", "0000000000000000", false),
            // SIGTERM (15) and SIGSTOP (19) are not SIGKILL; blocked SIGKILL (SigBlk) is no pending one.
            ("0000000000004000", "0000000000040000", false),
            ("ffffffffffffffff", "0000000000000000", true),
            ("garbage", "", false),
        ] {
            assert_eq!(
                super::sigkill_pending(status(sig, shd).as_bytes()),
                pending,
                "{sig} {shd}"
            );
        }
        assert!(!super::sigkill_pending(b""));
    }

    use super::*;

    fn p(pid: i32, state: u8, ppid: i32, pgrp: i32) -> ProcStat {
        ProcStat {
            pid,
            state,
            ppid,
            pgrp,
            flags: 0,
            threads: 1,
        }
    }

    /// A live process the kernel shows exiting.
    fn exiting(pid: i32, pgrp: i32) -> ProcStat {
        ProcStat {
            flags: PF_EXITING,
            ..p(pid, b'R', 1, pgrp)
        }
    }

    #[test]
    fn parses_after_the_last_paren() {
        let line =
            b"4242 (a) b) S (c) Z 7 4242 4242 0 -1 4227148 99 0 0 0 0 0 0 0 20 0 3 0 1 2 3\n";
        let s = ProcStat::parse(4242, line).expect("parses");
        assert_eq!(
            (s.state, s.ppid, s.pgrp, s.flags, s.threads, s.is_dead()),
            (b'Z', 7, 4242, 0x40_804c, 3, false)
        );
        assert!(s.is_exiting());
        assert_eq!(ProcStat::parse(1, b"1 (x S 0 1"), None);
        assert_eq!(ProcStat::parse(1, b"1 (x) S 0"), None);
    }

    #[test]
    fn a_zombie_leader_with_running_threads_is_alive() {
        let mut z = p(10, b'Z', 1, 10);
        assert!(z.is_dead());
        z.threads = 2;
        assert!(!z.is_dead());
        assert!(p(10, b'X', 1, 10).is_dead());
        assert!(!p(10, b'D', 1, 10).is_dead());
    }

    #[test]
    fn descendants_follow_the_parent_chain() {
        // 100 is the root; 101 its child in another session; 102 a grandchild; 200 unrelated.
        let procs = [
            p(100, b'S', 1, 100),
            p(102, b'S', 101, 102),
            p(101, b'S', 100, 101),
            p(200, b'S', 1, 200),
            p(300, b'S', 301, 300),
            p(301, b'S', 300, 300), // a cycle a torn snapshot could show
        ];
        assert_eq!(
            descendants(&procs, 100),
            vec![false, true, true, false, false, false]
        );
        let m = members(&procs, 200, None, Some(100), 999);
        let pids: Vec<i32> = m.iter().map(|p| p.pid).collect();
        assert_eq!(pids, vec![102, 101, 200]);
        // The caller is never a member, even in the group.
        assert!(members(&procs, 200, None, None, 200).is_empty());
        // The leader is a member even in another group.
        assert_eq!(members(&procs, 7, Some(300), None, 1).len(), 1);
    }

    /// What the scripted system was asked to do, in order.
    #[derive(Clone, Debug, PartialEq, Eq)]
    enum Event {
        Scan,
        KillGroup,
        KillOne(i32),
        WaitLeader(i32),
        ReapChild(i32),
    }

    /// A system whose samples are scripted.
    struct Script {
        samples: Vec<Vec<ProcStat>>,
        at: usize,
        killed: Vec<i32>,
        pauses: Vec<Duration>,
        subreaper: bool,
        /// Samples whose descendant pass reports a vanished process.
        incomplete: Vec<usize>,
        events: Vec<Event>,
        /// The sample at which `scan` fails, with this errno.
        scan_fails: Option<(usize, i32)>,
        /// `kill_one` of these pids returns EPERM.
        not_ours: Vec<i32>,
        /// `kill_group` returns this errno.
        group_errno: Option<i32>,
    }

    impl System for Script {
        fn scan(&mut self, out: &mut Vec<ProcStat>) -> Result<(), ReapError> {
            self.events.push(Event::Scan);
            if let Some((at, errno)) = self.scan_fails.filter(|(at, _)| *at == self.at) {
                return Err(sample_err(
                    &format!("{PROC}/{at}/stat"),
                    io::Error::from_raw_os_error(errno),
                ));
            }
            let i = self.at.min(self.samples.len() - 1);
            self.at += 1;
            *out = self.samples[i].clone();
            Ok(())
        }
        fn scan_descendants(&mut self, _: i32, out: &mut Vec<ProcStat>) -> Result<bool, ReapError> {
            let pass = self.at;
            self.scan(out)?;
            Ok(!self.incomplete.contains(&pass))
        }
        fn is_subreaper(&mut self) -> bool {
            self.subreaper
        }
        fn exiting(&mut self, member: &ProcStat) -> Result<bool, ReapError> {
            Ok(member.is_exiting())
        }
        fn kill_group(&mut self, pgid: i32) -> Result<bool, ReapError> {
            self.events.push(Event::KillGroup);
            match self.group_errno {
                Some(errno) => Err(ReapError::SignalGroup {
                    pgid,
                    source: io::Error::from_raw_os_error(errno),
                }),
                None => Ok(true),
            }
        }
        fn kill_one(&mut self, pid: i32) -> io::Result<bool> {
            self.events.push(Event::KillOne(pid));
            if self.not_ours.contains(&pid) {
                return Err(io::Error::from_raw_os_error(libc_eperm()));
            }
            self.killed.push(pid);
            Ok(true)
        }
        fn pause(&mut self, d: Duration) {
            self.pauses.push(d);
        }
        fn wait_leader(&mut self, pid: i32) -> Result<(), ReapError> {
            self.events.push(Event::WaitLeader(pid));
            Ok(())
        }
        fn reap_dead_child(&mut self, pid: i32) {
            self.events.push(Event::ReapChild(pid));
        }
    }

    fn libc_eperm() -> i32 {
        Errno::EPERM as i32
    }

    fn script(samples: Vec<Vec<ProcStat>>) -> Script {
        Script {
            samples,
            at: 0,
            killed: Vec::new(),
            pauses: Vec::new(),
            subreaper: false,
            incomplete: Vec::new(),
            events: Vec::new(),
            scan_fails: None,
            not_ours: Vec::new(),
            group_errno: None,
        }
    }

    #[test]
    fn never_succeeds_while_a_member_lives() {
        let mut sys = script(vec![vec![p(50, b'Z', 1, 50), p(51, b'S', 1, 50)]]);
        let err = terminate(&mut sys, 50, None, &Options::default()).expect_err("a survivor");
        match err {
            ReapError::Survivors {
                samples, survivors, ..
            } => assert_eq!((samples, survivors), (DEFAULT_MAX_SAMPLES, vec![51])),
            other => panic!("{other}"),
        }
        // A live member that is not exiting gets 50 samples, not one more.
        assert_eq!(DEFAULT_MAX_SAMPLES, 50);
        assert_eq!(sys.killed.len() as u32, DEFAULT_MAX_SAMPLES - 1);
        assert_eq!(sys.pauses.len() as u32, DEFAULT_MAX_SAMPLES - 1);
        // Short pauses first, doubling up to the interval, never beyond.
        let i = DEFAULT_INTERVAL;
        assert_eq!(sys.pauses[..6], [i / 16, i / 8, i / 4, i / 2, i, i]);
        assert!(sys.pauses.iter().all(|d| *d <= i));
    }

    #[test]
    fn an_exiting_member_gets_the_longer_wait_and_then_counts_as_dead() {
        // 51 is tearing down its memory for 60 samples, then a zombie.
        let mut samples = vec![vec![p(50, b'Z', 1, 50), exiting(51, 50)]; 60];
        samples.push(vec![p(50, b'Z', 1, 50), p(51, b'Z', 1, 50)]);
        let mut sys = script(samples);
        let (report, _) = terminate(&mut sys, 50, None, &Options::default()).expect("dies");
        assert_eq!((report.samples, report.outcome), (62, Outcome::AllZombie));
        // The pauses past the first budget are the exiting interval.
        let past: Vec<Duration> = sys.pauses[DEFAULT_MAX_SAMPLES as usize..].to_vec();
        assert_eq!(past, vec![DEFAULT_EXITING_INTERVAL; 10]);
    }

    #[test]
    fn the_longer_wait_is_bounded_and_a_timeout_is_never_success() {
        let mut sys = script(vec![vec![exiting(51, 50)]]);
        let opts = Options::default();
        match terminate(&mut sys, 50, None, &opts) {
            Err(ReapError::Survivors {
                samples, survivors, ..
            }) => {
                assert_eq!(samples, opts.max_samples + opts.exiting_samples);
                assert_eq!(survivors, vec![51]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_member_that_stops_exiting_ends_the_longer_wait() {
        // Exiting at the end of the first budget, then a member that is not (a new process, or
        // a thread still running user code) is seen: no further sample.
        let mut samples = vec![vec![exiting(51, 50)]; 55];
        samples.push(vec![exiting(51, 50), p(52, b'S', 1, 50)]);
        let mut sys = script(samples);
        match terminate(&mut sys, 50, None, &Options::default()) {
            Err(ReapError::Survivors {
                samples, survivors, ..
            }) => assert_eq!((samples, survivors), (56, vec![51, 52])),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_leader_is_waited_for_after_the_last_group_signal() {
        let me = own_pid();
        let mut sys = script(vec![
            vec![p(50, b'S', 1, 50), p(51, b'S', 50, 50)],
            vec![p(50, b'Z', 1, 50), p(51, b'Z', me, 50)],
        ]);
        let report = terminate_and_reap(&mut sys, 50, Some(50), &Options::default()).expect("ok");
        assert_eq!(report.outcome, Outcome::AllZombie);
        let wait = sys
            .events
            .iter()
            .position(|e| *e == Event::WaitLeader(50))
            .expect("the leader is waited for");
        let last_signal = sys
            .events
            .iter()
            .rposition(|e| matches!(e, Event::KillGroup | Event::KillOne(_)))
            .expect("signals");
        let last_scan = sys.events.iter().rposition(|e| *e == Event::Scan);
        assert!(
            last_signal < wait && last_scan < Some(wait),
            "{:?}",
            sys.events
        );
        // After the leader: only our own dead member is reaped, and nothing is signalled.
        assert_eq!(sys.events[wait + 1..], [Event::ReapChild(51)]);
    }

    #[test]
    fn a_failed_proc_query_is_an_io_error_and_nothing_is_waited_for() {
        let mut sys = script(vec![vec![p(50, b'S', 1, 50)]]);
        sys.scan_fails = Some((1, Errno::EACCES as i32));
        let err = terminate_and_reap(&mut sys, 50, Some(50), &Options::default())
            .expect_err("the query failed");
        assert!(matches!(err, ReapError::Sample { .. }), "{err}");
        assert_eq!(err.kind(), Kind::Io);
        assert_eq!(err.to_error_object().path.as_deref(), Some("/proc/1/stat"));
        assert!(!sys.events.iter().any(|e| matches!(e, Event::WaitLeader(_))));
    }

    #[test]
    fn a_kill_refused_with_eperm_stops_at_once() {
        // 51 belongs to someone we may not signal: it would never die.
        let mut sys = script(vec![vec![p(50, b'Z', 1, 50), p(51, b'S', 1, 50)]]);
        sys.not_ours = vec![51];
        let err =
            terminate_and_reap(&mut sys, 50, Some(50), &Options::default()).expect_err("refused");
        match &err {
            ReapError::SignalMember { pid, source, .. } => {
                assert_eq!(
                    (*pid, source.raw_os_error()),
                    (51, Some(Errno::EPERM as i32))
                )
            }
            other => panic!("{other}"),
        }
        assert_eq!(err.kind(), Kind::Io);
        let obj = err.to_error_object();
        assert_eq!(
            (obj.field.as_deref(), obj.value.as_deref()),
            (Some("pid"), Some("51"))
        );
        // One sample found it alive; the refusal came before a second.
        assert_eq!(sys.at, 1);
        assert!(!sys.events.iter().any(|e| matches!(e, Event::WaitLeader(_))));
        // A group signal refused outright is an error too.
        let mut sys = script(vec![vec![]]);
        sys.group_errno = Some(Errno::EPERM as i32);
        let err = terminate(&mut sys, 50, None, &Options::default()).expect_err("refused");
        assert!(
            matches!(err, ReapError::SignalGroup { pgid: 50, .. }),
            "{err}"
        );
        assert_eq!(sys.at, 0, "nothing sampled");
    }

    #[test]
    fn one_clean_sample_is_not_enough() {
        // Clean, then a member shows up alive (forked during the first pass), then all dead.
        let mut sys = script(vec![
            vec![p(50, b'Z', 1, 50)],
            vec![p(50, b'Z', 1, 50), p(60, b'S', 50, 60)],
            vec![p(50, b'Z', 1, 50), p(60, b'Z', 1, 60)],
        ]);
        let opts = Options {
            descendants_of: Some(1),
            ..Options::default()
        };
        let (report, last) = terminate(&mut sys, 50, None, &opts).expect("dies");
        assert_eq!(report.samples, 4);
        assert_eq!(report.outcome, Outcome::AllZombie);
        assert_eq!(sys.killed, vec![60]);
        assert_eq!(last.len(), 2);
        // The budget spent on the first clean sample: the confirming one is still taken.
        let mut sys = script(vec![vec![]]);
        let one = Options {
            max_samples: 1,
            ..Options::default()
        };
        let (report, _) = terminate(&mut sys, 50, None, &one).expect("confirmed");
        assert_eq!((report.samples, report.outcome), (2, Outcome::Absent));
        // A budget spent on a pass that was not complete: nothing to confirm, not success.
        let mut sys = script(vec![vec![]]);
        sys.subreaper = true;
        sys.incomplete = vec![0];
        let sub = Options {
            descendants_of: Some(own_pid()),
            ..one
        };
        assert!(matches!(
            terminate(&mut sys, 50, None, &sub),
            Err(ReapError::Survivors { samples: 1, .. })
        ));
    }

    #[test]
    fn a_member_that_dies_on_the_last_sample_of_the_budget_is_confirmed_not_a_survivor() {
        // Alive (not yet showing PF_EXITING) for the whole first budget, a zombie on its last
        // sample: the confirming sample follows, as it would on any other.
        let mut samples = vec![vec![p(51, b'R', 1, 50)]; DEFAULT_MAX_SAMPLES as usize - 1];
        samples.push(vec![p(51, b'Z', 1, 50)]);
        let mut sys = script(samples);
        let (report, _) = terminate(&mut sys, 50, None, &Options::default()).expect("dies");
        assert_eq!(
            (report.samples, report.outcome),
            (DEFAULT_MAX_SAMPLES + 1, Outcome::AllZombie)
        );
    }

    #[test]
    fn a_subreaper_samples_its_descendants_and_an_incomplete_pass_is_not_clean() {
        let me = own_pid();
        let opts = Options {
            descendants_of: Some(me),
            ..Options::default()
        };
        // Clean passes, but the first two lost a process mid-way: four samples, not two.
        let mut sys = script(vec![vec![p(50, b'Z', me, 50)]]);
        sys.subreaper = true;
        sys.incomplete = vec![0, 1];
        let (report, last) = terminate(&mut sys, 50, Some(50), &opts).expect("dies");
        assert_eq!((report.samples, report.outcome), (4, Outcome::AllZombie));
        assert_eq!(last.len(), 1);
        // Without the subreaper flag the whole table is scanned and filtered by group: the same
        // sample holds a process of another group that is not ours.
        let mut sys = script(vec![vec![p(50, b'Z', me, 50), p(70, b'S', 1, 70)]]);
        let (report, last) = terminate(&mut sys, 50, Some(50), &opts).expect("dies");
        assert_eq!((report.samples, last.len()), (2, 1));
        // As a subreaper, every process the pass returns is a member: a live one is killed.
        let mut sys = script(vec![
            vec![p(50, b'Z', me, 50), p(71, b'S', me, 71)],
            vec![p(50, b'Z', me, 50), p(71, b'Z', me, 71)],
        ]);
        sys.subreaper = true;
        let (report, _) = terminate(&mut sys, 50, Some(50), &opts).expect("dies");
        assert_eq!(
            (report.samples, sys.killed.as_slice()),
            (3, [71].as_slice())
        );
    }

    #[test]
    fn absent_group_is_absent() {
        let mut sys = script(vec![vec![p(9, b'S', 1, 9)]]);
        let (report, last) = terminate(&mut sys, 50, None, &Options::default()).expect("absent");
        assert_eq!((report.outcome, report.samples), (Outcome::Absent, 2));
        assert!(last.is_empty());
        assert!(sys.pauses.is_empty());
    }

    #[test]
    fn refuses_pgid_zero_one_negative_and_our_own() {
        for pgid in [0, 1, -1, -5, nix::unistd::getpgrp().as_raw()] {
            let mut sys = script(vec![vec![]]);
            assert!(matches!(
                terminate(&mut sys, pgid, None, &Options::default()),
                Err(ReapError::BadPgid { .. })
            ));
            assert_eq!(sys.at, 0, "nothing sampled or signalled for {pgid}");
        }
    }
}
