//! `dot-reap` on the command line.

use assert_cmd::cargo::cargo_bin_cmd;
use reap::{Outcome, ReapReport};
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
        assert_eq!(err.error, "bad-pgid", "pgid {pgid}");
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
    assert_eq!(testkit::decode_error(&out.stderr).error, "bad-leader");
}

#[test]
fn a_missing_pgid_is_a_usage_error() {
    let out = cargo_bin_cmd!("dot-reap").output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(testkit::decode_error(&out.stderr).error, "usage");
}

#[test]
fn kills_a_group_and_reports() {
    let mut sh = Command::new("/bin/sh")
        .arg("-c")
        .arg("for i in 1 2 3 4 5; do sleep 100 & done; echo ready; wait")
        .process_group(0)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn sh");
    let mut ready = String::new();
    BufReader::new(sh.stdout.take().expect("stdout"))
        .read_line(&mut ready)
        .expect("ready");
    assert_eq!(ready, "ready\n");
    let pgid = sh.id() as i32;
    let out = cargo_bin_cmd!("dot-reap")
        .args(["--pgid", &pgid.to_string(), "--leader", &pgid.to_string()])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: ReapReport = testkit::decode_json(&out.stdout);
    assert_eq!(report.pgid, pgid);
    // The shell is our child and unreaped: a zombie member, so not absent.
    assert_eq!(report.outcome, Outcome::AllZombie);
    assert!(report.survivors.is_empty());
    assert_eq!(sh.wait().expect("wait").signal(), Some(9));
}
