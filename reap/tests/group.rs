//! `reap_group` on real process groups: every member is dead when it returns.
//!
//! The test process is a child subreaper, so the group's orphans are reparented to it and
//! `reap_group` reaps them: no zombie is left behind. Only members are ever waited for, so the
//! tests running in parallel threads cannot take each other's children.

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;
use reap::{reap_group, Options, Outcome, ProcStat};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

/// A shell leading a new process group, with `n` background `sleep`s; returns it and their pids.
pub fn spawn_group(n: usize) -> (Child, Vec<i32>) {
    sys::process::set_child_subreaper().expect("subreaper");
    let script = format!(
        "i=0; while [ $i -lt {n} ]; do sleep 100 & echo $!; i=$((i+1)); done; echo ready; wait"
    );
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .process_group(0)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn sh");
    let out = child.stdout.take().expect("stdout");
    let mut pids = Vec::new();
    for line in BufReader::new(out).lines() {
        let line = line.expect("read pid");
        if line == "ready" {
            break;
        }
        pids.push(line.parse().expect("a pid"));
    }
    assert_eq!(pids.len(), n, "the shell started every child");
    (child, pids)
}

/// Gone (ESRCH) or a zombie.
fn dead(pid: i32) -> bool {
    match kill(Pid::from_raw(pid), None) {
        Err(Errno::ESRCH) => true,
        Ok(()) => std::fs::read(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|b| ProcStat::parse(pid, &b))
            .is_none_or(|s| s.is_dead()),
        Err(e) => panic!("kill({pid}, 0): {e}"),
    }
}

/// Reaped: no such process, not even a zombie.
fn reaped(pid: i32) -> bool {
    kill(Pid::from_raw(pid), None) == Err(Errno::ESRCH)
}

fn reaps(n: usize) {
    let (mut child, pids) = spawn_group(n);
    let pgid = child.id() as i32;
    assert!(
        pids.iter().all(|&p| !dead(p)),
        "children run before the reap"
    );
    let report = reap_group(pgid, Some(&mut child), &Options::default()).expect("reaped");
    assert_eq!(report.pgid, pgid);
    assert!(report.survivors.is_empty());
    assert!(report.signals >= 1 && report.samples >= 2);
    assert!(matches!(
        report.outcome,
        Outcome::AllZombie | Outcome::Absent
    ));
    // Every child died, and was reaped as our orphan: no zombie is left.
    let left: Vec<i32> = pids.iter().copied().filter(|&p| !reaped(p)).collect();
    assert_eq!(left, Vec::<i32>::new(), "every child is gone");
    assert!(reaped(pgid), "the leader is reaped");
    let status = child.try_wait().expect("status").expect("exited");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
}

#[test]
fn reaps_a_group_of_30() {
    reaps(30);
}

#[test]
fn reaps_a_group_of_1000() {
    reaps(1000);
}

#[test]
fn an_absent_group_is_absent() {
    // A group whose only member exited and was reaped.
    let mut child = Command::new("/bin/true")
        .process_group(0)
        .spawn()
        .expect("spawn");
    let pgid = child.id() as i32;
    child.wait().expect("wait");
    let report = reap_group(pgid, None, &Options::default()).expect("absent");
    assert_eq!(report.outcome, Outcome::Absent);
    assert_eq!(report.signals, 0);
}
