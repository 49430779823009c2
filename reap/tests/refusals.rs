//! `dot-reap` when the kernel refuses: a signal it may not send (`EPERM`) and a `/proc` it cannot
//! read. Both are errors (exit 5), never a report of success.
//!
//! A test running as root can signal anything, so the refused signal is sent from a user
//! namespace (`unshare --user --map-root-user`): there uid 0 is root only over its own namespace,
//! and a process of another uid in the initial namespace cannot be signalled. The unreadable
//! `/proc` is a tmpfs mounted over it in a private mount namespace (`unshare --mount`).

use assert_cmd::cargo::cargo_bin;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use proto::Kind;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Output};

/// `sleep 100` in a new process group of its own, as `uid` (root's child: we may always kill it).
fn sleeper(uid: Option<u32>) -> Child {
    let mut c = Command::new("sleep");
    c.arg("100").process_group(0);
    if let Some(uid) = uid {
        c.uid(uid).gid(uid);
    }
    c.spawn().expect("spawn sleep")
}

fn finish(mut child: Child) {
    let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
    assert_eq!(child.wait().expect("wait").signal(), Some(9));
}

/// `dot-reap ARGS` inside a new user namespace where it is uid 0.
fn reap_in_user_namespace(args: &[String]) -> Output {
    Command::new("unshare")
        .args(["--user", "--map-root-user"])
        .arg(cargo_bin!("dot-reap"))
        .args(args)
        .output()
        .expect("run unshare")
}

fn alive(child: &Child) -> bool {
    let pid = child.id();
    std::fs::read(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|b| reap::ProcStat::parse(pid as i32, &b))
        .is_some_and(|s| !s.is_dead())
}

#[test]
fn a_group_it_may_not_signal_is_an_io_error_exit_5() {
    let foreign = sleeper(Some(65534));
    let pgid = foreign.id().to_string();
    let out = reap_in_user_namespace(&["--pgid".into(), pgid.clone()]);
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    assert!(out.stdout.is_empty());
    let err = testkit::decode_error(&out.stderr);
    testkit::assert_kind!(err, Kind::Io);
    assert_eq!(
        (err.field.as_deref(), err.value.as_deref()),
        (Some("pgid"), Some(pgid.as_str()))
    );
    assert!(
        err.message.contains("Operation not permitted"),
        "{}",
        err.message
    );
    assert!(alive(&foreign), "the refusal is reported, not hidden");
    finish(foreign);
}

#[test]
fn a_member_it_may_not_signal_stops_the_reap_with_exit_5() {
    // Our own group (which the namespace's root may signal) with a leader of another uid, which
    // counts as a member but cannot be killed from the namespace.
    let ours = sleeper(None);
    let foreign = sleeper(Some(65534));
    let leader = foreign.id().to_string();
    let out = reap_in_user_namespace(&[
        "--pgid".into(),
        ours.id().to_string(),
        "--leader".into(),
        leader.clone(),
    ]);
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    let err = testkit::decode_error(&out.stderr);
    testkit::assert_kind!(err, Kind::Io);
    assert_eq!(
        (err.field.as_deref(), err.value.as_deref()),
        (Some("pid"), Some(leader.as_str()))
    );
    assert!(alive(&foreign));
    // The group it could signal was killed before the refusal.
    let mut ours = ours;
    assert_eq!(ours.wait().expect("wait").signal(), Some(9));
    finish(foreign);
}

#[test]
fn a_proc_it_cannot_read_is_an_io_error_exit_5_naming_the_file() {
    let group = sleeper(None);
    // A tmpfs over /proc holding one process whose stat line is garbage.
    let script = "mount -t tmpfs none /proc && mkdir /proc/4242 && echo garbage > /proc/4242/stat \
                  && exec \"$0\" --pgid \"$1\"";
    let out = Command::new("unshare")
        .args(["--mount", "sh", "-c", script])
        .arg(cargo_bin!("dot-reap"))
        .arg(group.id().to_string())
        .output()
        .expect("run unshare");
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    assert!(out.stdout.is_empty());
    let err = testkit::decode_error(&out.stderr);
    testkit::assert_kind!(err, Kind::Io);
    assert_eq!(err.path.as_deref(), Some("/proc/4242/stat"));
    assert!(
        err.message.contains("malformed stat line"),
        "{}",
        err.message
    );
    finish(group);
}
