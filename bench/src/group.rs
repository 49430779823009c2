//! Reaping groups of N members with the reap library, with the options `dot-launch` uses (this
//! process a child subreaper, every descendant counted).

use crate::stats::{summarize, Summary};
use crate::BenchError;
use cli::Output;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReapResult {
    pub members: usize,
    pub reap: Summary,
    /// `/proc` samples per reap (median).
    pub samples_median: u32,
}

fn exe() -> Result<std::path::PathBuf, BenchError> {
    std::env::current_exe().map_err(|e| BenchError::io("resolving", "/proc/self/exe", e))
}

/// Waits (unmeasured) for any of our children that are already dead.
fn collect_zombies() {
    while let Ok(s) = waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
        if s == WaitStatus::StillAlive {
            break;
        }
    }
}

pub fn bench(members: usize, runs: usize) -> Result<ReapResult, BenchError> {
    sys::process::set_child_subreaper()
        .map_err(|e| BenchError::io("becoming a subreaper", "prctl", e))?;
    let exe = exe()?;
    let opts = launch::exec::reap_options();
    let mut times = Vec::with_capacity(runs);
    let mut samples = Vec::with_capacity(runs);
    for i in 0..runs + 2 {
        let mut leader = Command::new(&exe)
            .args(["group", "--members", &members.to_string()])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| BenchError::io("spawning", exe.display(), e))?;
        let mut line = String::new();
        if let Some(out) = leader.stdout.take() {
            BufReader::new(out)
                .read_line(&mut line)
                .map_err(|e| BenchError::io("reading", "the group leader", e))?;
        }
        if line.trim() != "ready" {
            return Err(BenchError::CommandFailed {
                command: format!("dot-bench group --members {members}"),
                why: format!("said {line:?}, not ready"),
            });
        }
        let pgid = leader.id() as i32;
        let start = Instant::now();
        let report = reap::reap_group(pgid, Some(&mut leader), &opts).map_err(|e| {
            BenchError::CommandFailed {
                command: "reap::reap_group".into(),
                why: e.to_string(),
            }
        })?;
        let us = start.elapsed().as_secs_f64() * 1e6;
        collect_zombies();
        if i >= 2 {
            times.push(us);
            samples.push(report.samples);
        }
    }
    samples.sort_unstable();
    Ok(ReapResult {
        members,
        reap: summarize(&times),
        samples_median: samples.get(samples.len() / 2).copied().unwrap_or(0),
    })
}

/// The group leader: `members - 1` children that hold, then "ready" on stdout.
pub fn lead(members: usize) -> Result<(), BenchError> {
    let exe = exe()?;
    let mut children = Vec::with_capacity(members.saturating_sub(1));
    for _ in 1..members {
        children.push(
            Command::new(&exe)
                .arg("hold")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .map_err(|e| BenchError::io("spawning", exe.display(), e))?,
        );
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")
        .and_then(|()| out.flush())
        .map_err(|e| BenchError::io("writing", "stdout", e))?;
    drop(out);
    let _ = hold();
    drop(children);
    Ok(())
}

/// Sleeps until killed.
pub fn hold() -> Result<Output, BenchError> {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
