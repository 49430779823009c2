//! Crash points: a test-only failpoint SIGKILLs dot-launch at each step of a commit. After each,
//! every target file holds the old bytes or exactly the prepared bytes; `recover` then `discard`
//! bring the root to a clean state; running them again changes nothing.

#![allow(clippy::unwrap_used)]

mod common;

use common::{discard, recover, Env};

const OLD_A: &[u8] = b"old a\n";
const NEW_A: &str = "new a\n";
const NEW_B: &str = "new b\n";

fn crash_at(point: &str) -> Env {
    crash_at_with(point, OLD_A)
}

/// `crash_at` with `a.txt` holding `old` before the run.
fn crash_at_with(point: &str, old: &[u8]) -> Env {
    let env = Env::new();
    std::fs::write(env.target.join("a.txt"), old).unwrap();
    let mut c = env.two_outputs();
    c.args([
        "--input",
        &format!("a={NEW_A}"),
        "--input",
        &format!("b={NEW_B}"),
    ]);
    c.env("DOT_FAILPOINT", point);
    let out = c.output().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(9),
        "{point}: dot-launch must have been killed by the failpoint: {out:?}"
    );
    env
}

fn assert_old_or_prepared(env: &Env, point: &str) {
    let a = std::fs::read(env.target.join("a.txt")).unwrap();
    assert!(
        a == OLD_A || a == NEW_A.as_bytes(),
        "{point}: a.txt is partial: {a:?}"
    );
    match std::fs::read(env.target.join("b.txt")) {
        Ok(b) => assert_eq!(b, NEW_B.as_bytes(), "{point}: b.txt"),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound),
    }
}

/// After recover + discard: no run left; the target is either untouched (crash before PREPARED)
/// or fully committed (crash after PREPARED), with no temp file.
fn assert_clean(env: &Env, point: &str, committed: bool) {
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(0), "{point}: recover: {r:?}");
    let d = discard(&env.root);
    assert_eq!(d.status.code(), Some(0), "{point}: discard: {d:?}");
    assert_eq!(env.runs(), Vec::<String>::new(), "{point}: runs left");
    if committed {
        assert_eq!(
            std::fs::read(env.target.join("a.txt")).unwrap(),
            NEW_A.as_bytes(),
            "{point}"
        );
        assert_eq!(
            std::fs::read(env.target.join("b.txt")).unwrap(),
            NEW_B.as_bytes(),
            "{point}"
        );
        assert_eq!(env.target_files(), ["a.txt", "b.txt"], "{point}");
    } else {
        assert_eq!(
            std::fs::read(env.target.join("a.txt")).unwrap(),
            OLD_A,
            "{point}"
        );
        assert_eq!(
            env.target_files(),
            ["a.txt"],
            "{point}: discard removes the run's temp files"
        );
    }
    let before = testkit::tree_snapshot(env.dir.path());
    assert_eq!(recover(&env.root).status.code(), Some(0));
    assert_eq!(discard(&env.root).status.code(), Some(0));
    assert_eq!(
        testkit::tree_snapshot(env.dir.path()),
        before,
        "{point}: a second recover/discard changed something"
    );
}

#[test]
fn crash_after_begin_is_discarded() {
    let env = crash_at("after-begin");
    assert_old_or_prepared(&env, "after-begin");
    assert_eq!(env.runs().len(), 1);
    assert_clean(&env, "after-begin", false);
}

#[test]
fn crash_after_temp_files_is_discarded_and_target_untouched() {
    let env = crash_at("after-temp");
    assert_old_or_prepared(&env, "after-temp");
    assert_eq!(std::fs::read(env.target.join("a.txt")).unwrap(), OLD_A);
    assert_clean(&env, "after-temp", false);
}

#[test]
fn crash_after_prepared_is_rolled_forward() {
    let env = crash_at("after-prepared");
    assert_old_or_prepared(&env, "after-prepared");
    assert_clean(&env, "after-prepared", true);
}

#[test]
fn crash_between_renames_is_rolled_forward() {
    let env = crash_at("between-renames");
    assert_old_or_prepared(&env, "between-renames");
    assert_eq!(
        std::fs::read(env.target.join("a.txt")).unwrap(),
        NEW_A.as_bytes(),
        "first rename done"
    );
    assert_clean(&env, "between-renames", true);
}

#[test]
fn crash_before_committed_is_rolled_forward() {
    let env = crash_at("before-committed");
    assert_old_or_prepared(&env, "before-committed");
    assert_clean(&env, "before-committed", true);
}

#[test]
fn recover_refuses_a_conflicting_target() {
    let env = crash_at("after-prepared");
    std::fs::write(env.target.join("a.txt"), b"someone else wrote this").unwrap();
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(4), "{r:?}");
    let report: launch::recover::RecoverReport = testkit::decode_json(&r.stdout);
    assert_eq!(report.conflicts.len(), 1);
    assert_eq!(report.conflicts[0].file, "a.txt");
    assert_eq!(
        std::fs::read(env.target.join("a.txt")).unwrap(),
        b"someone else wrote this"
    );
    assert!(
        std::fs::read(env.target.join("b.txt")).is_err(),
        "a conflict renames nothing"
    );
    assert_eq!(env.runs().len(), 1, "the PREPARED run is retained");
    let d = discard(&env.root);
    assert_eq!(
        d.status.code(),
        Some(4),
        "discard retains a PREPARED run: {d:?}"
    );
    assert_eq!(env.runs().len(), 1);
}

#[test]
fn recover_removes_the_temp_of_a_file_that_already_held_the_new_bytes() {
    let env = crash_at_with("after-prepared", NEW_A.as_bytes());
    assert_eq!(
        env.target_files().len(),
        3,
        "a.txt and two temp files: {:?}",
        env.target_files()
    );
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert_eq!(env.runs(), Vec::<String>::new());
    assert_eq!(env.target_files(), ["a.txt", "b.txt"], "no temp file left");
    assert_eq!(
        std::fs::read(env.target.join("a.txt")).unwrap(),
        NEW_A.as_bytes()
    );
    assert_eq!(
        std::fs::read(env.target.join("b.txt")).unwrap(),
        NEW_B.as_bytes()
    );
}
