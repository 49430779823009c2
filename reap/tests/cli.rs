//! `dot-reap` on the command line.

use assert_cmd::cargo::cargo_bin_cmd;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;
use proto::Kind;
use reap::{Outcome, ProcStat, ReapReport};
use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};

#[test]
fn refuses_pgid_zero_one_and_negative() {
    for pgid in ["0", "1", "-1", "-42"] {
        let out = cargo_bin_cmd!("dot-reap")
            .args(["--pgid", pgid])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "pgid {pgid}");
        let err = testkit::decode_error(&out.stderr);
        testkit::assert_kind!(err, Kind::BadPgid, "pgid {pgid}");
        assert_eq!(err.value.as_deref(), Some(pgid));
    }
}

#[test]
fn refuses_a_leader_pid_of_one() {
    let out = cargo_bin_cmd!("dot-reap")
        .args(["--pgid", "4242", "--leader", "1"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    testkit::assert_kind!(testkit::decode_error(&out.stderr), Kind::BadLeader);
}

#[test]
fn a_missing_pgid_is_a_usage_error() {
    let out = cargo_bin_cmd!("dot-reap").output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    testkit::assert_kind!(testkit::decode_error(&out.stderr), Kind::Usage);
}

#[test]
fn kills_a_group_and_reports_only_when_every_member_is_dead() {
    // As a subreaper, this process inherits the group's orphans: they stay zombies until it reaps
    // them, so their state after dot-reap returns can be checked.
    sys::process::set_child_subreaper().expect("subreaper");
    let mut sh = Command::new("/bin/sh")
        .arg("-c")
        .arg("for i in 1 2 3 4 5; do sleep 100 & echo $!; done; echo ready; wait")
        .process_group(0)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn sh");
    let mut pids: Vec<i32> = Vec::new();
    for line in BufReader::new(sh.stdout.take().expect("stdout")).lines() {
        let line = line.expect("line");
        if line == "ready" {
            break;
        }
        pids.push(line.parse().expect("pid"));
    }
    assert_eq!(pids.len(), 5);
    let pgid = sh.id() as i32;
    let out = cargo_bin_cmd!("dot-reap")
        .args(["--pgid", &pgid.to_string(), "--leader", &pgid.to_string()])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: ReapReport = testkit::decode_json(&out.stdout);
    assert_eq!(report.pgid, pgid);
    // The shell and the sleeps are our unreaped children now: zombie members, so not absent.
    assert_eq!(report.outcome, Outcome::AllZombie);
    assert!(report.survivors.is_empty());
    for &pid in &pids {
        let stat = std::fs::read(format!("/proc/{pid}/stat")).expect("a zombie is still listed");
        let stat = ProcStat::parse(pid, &stat).expect("parses");
        assert!(stat.is_dead(), "{pid} is a zombie: {stat:?}");
        let status = waitpid(Pid::from_raw(pid), None).expect("reap");
        assert_eq!(
            status,
            WaitStatus::Signaled(Pid::from_raw(pid), Signal::SIGKILL, false)
        );
    }
    assert_eq!(sh.wait().expect("wait").signal(), Some(9));
}
