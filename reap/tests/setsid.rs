//! A child that left the group with `setsid()` escapes a plain group kill and is caught by
//! `descendants_of`. This test makes its process a child subreaper, so it lives alone in this file
//! (one test, one process).

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::sys::wait::{waitid, Id, WaitPidFlag};
use nix::unistd::Pid;
use reap::{reap_group, Options, ProcStat};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

fn stat(pid: i32) -> Option<ProcStat> {
    std::fs::read(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|b| ProcStat::parse(pid, &b))
}

/// A shell leading a new group, with one `sleep` in the group and one that called setsid(): returns
/// the shell, the member and the escapee (once it has left the group).
fn spawn_with_escapee() -> (Child, i32, i32) {
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg("sleep 100 & echo $!; setsid sleep 100 & echo $!; echo ready; wait")
        .process_group(0)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn sh");
    let pgid = child.id() as i32;
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut next = || -> String { lines.next().expect("a line").expect("read") };
    let member: i32 = next().parse().expect("pid");
    let escapee: i32 = next().parse().expect("pid");
    assert_eq!(next(), "ready");
    // Wait (bounded by tries, not by time) until the escapee has called setsid().
    let mut tries = 0;
    while stat(escapee).is_none_or(|s| s.pgrp == pgid) {
        tries += 1;
        assert!(tries < 10_000, "the escapee never left the group");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    (child, member, escapee)
}

fn alive(pid: i32) -> bool {
    stat(pid).is_some_and(|s| !s.is_dead())
}

#[test]
fn setsid_escapes_the_group_kill_but_not_descendants_of() {
    sys::process::set_child_subreaper().expect("subreaper");
    let me = std::process::id() as i32;

    // Without descendants_of: the group dies, the escapee lives on (reparented to us).
    let (mut sh, member, escapee) = spawn_with_escapee();
    let pgid = sh.id() as i32;
    reap_group(pgid, Some(&mut sh), &Options::default()).expect("group reaped");
    assert!(!alive(member), "the member is dead");
    assert!(alive(escapee), "a plain group kill misses a setsid() child");
    assert_eq!(
        stat(escapee).map(|s| s.ppid),
        Some(me),
        "it is now our orphan"
    );

    // With descendants_of: the new escapee and the old orphan both die and are reaped.
    let (mut sh2, member2, escapee2) = spawn_with_escapee();
    let pgid2 = sh2.id() as i32;
    let opts = Options {
        descendants_of: Some(me),
        ..Options::default()
    };
    let report = reap_group(pgid2, Some(&mut sh2), &opts).expect("reaped");
    assert!(report.survivors.is_empty());
    for pid in [member2, escapee2, escapee] {
        assert!(!alive(pid), "{pid} is dead");
    }
    // Our own dead children (the orphans, and the first group's member, reparented to us when
    // its shell died) were reaped by reap_group.
    for pid in [member, escapee, escapee2] {
        assert_eq!(
            kill(Pid::from_raw(pid), None),
            Err(Errno::ESRCH),
            "{pid} was reaped"
        );
    }
    loop {
        match waitid(Id::All, WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG) {
            Err(Errno::ECHILD) => break,
            Ok(nix::sys::wait::WaitStatus::StillAlive) => panic!("a child of ours still runs"),
            Ok(_) => continue,
            Err(e) => panic!("waitid: {e}"),
        }
    }
}
