//! Cancellation: SIGTERM, SIGINT or SIGHUP sent to `dot-launch` ends its run cleanly — the plugin's
//! whole process group gone, the run directory removed, the target untouched, one `cancelled`
//! error naming the signal — and `dot-launch` then ends by that same signal (a shell sees
//! 128 + its number). Once PREPARED is durable the commit is finished instead. `recover` stops
//! between two runs. A second signal while the run is being cleaned changes nothing.

#![allow(clippy::unwrap_used)]

mod common;

use common::{discard, plugin_of, recover, result, tool, Env};
use launch::recover::RecoverReport;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;
use testkit::assert_cancelled;

const SIGNALS: [Signal; 3] = [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP];

// The runs below ask `--deadline-ms 30000`: the longest deadline an entry without limits allows
// (the standard preset's; docs/protocol.md "Limits"), far beyond the signals the tests send.

/// Starts `cmd` with its output captured.
fn start(mut cmd: impl std::borrow::BorrowMut<Command>) -> Child {
    let cmd = cmd.borrow_mut();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(child: &Child, sig: Signal) {
    kill(Pid::from_raw(child.id() as i32), sig).unwrap();
}

/// Waits (bounded: the bound only turns a hang into a failure) until `cond` holds.
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..3000 {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("gave up waiting for {what}");
}

/// Processes whose process group is `pgid`, zombies included.
fn group_members(pgid: u32) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        // state, ppid, pgrp
        if rest.split_whitespace().nth(2) == Some(pgid.to_string().as_str()) {
            found.push(stat);
        }
    }
    found
}

/// The blocked-signal mask of `pid` (`SigBlk` of its status), hex.
fn blocked(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigBlk:"))
        .unwrap()
        .trim()
        .to_owned()
}

/// After a cancelled run: nothing under `txn/`, nothing in the target, no process left.
fn assert_clean(env: &Env, what: &str) {
    assert_eq!(env.runs(), Vec::<String>::new(), "{what}: txn/ is empty");
    assert_eq!(
        env.target_files(),
        Vec::<String>::new(),
        "{what}: the target is untouched"
    );
    assert_eq!(
        common::processes_under(&env.root),
        Vec::<String>::new(),
        "{what}: no process of the run is left"
    );
    let r: RecoverReport = testkit::decode_json(&common::ok(recover(&env.root), "recover").stdout);
    assert_eq!(
        r,
        RecoverReport::default(),
        "{what}: recover has nothing to do"
    );
    let d = common::ok(discard(&env.root), "discard");
    assert!(
        !String::from_utf8_lossy(&d.stdout).contains("\"txid\""),
        "{what}: discard has nothing to do: {}",
        String::from_utf8_lossy(&d.stdout)
    );
}

/// Each signal, at each level, while the plugin runs: the group is ended (no member left, not
/// even a zombie), the run cleaned, one `cancelled` error, death by the same signal.
#[test]
fn a_signal_while_the_plugin_runs_cancels_the_run_at_either_level() {
    let env = Env::with_process_fixture();
    for (name, consent) in [
        ("fixture", "--allow-audit-plugin"),
        ("fixture-p", "--require-process-sandbox"),
    ] {
        for sig in SIGNALS {
            let what = format!("{name} {sig}");
            let child = start(env.launch(
                name,
                &[consent, "--input", "mode=sleep", "--deadline-ms", "30000"],
            ));
            let mut plugin = None;
            wait_for("the plugin to start", || {
                plugin = plugin_of(child.id(), &env.root);
                plugin.is_some()
            });
            let plugin = plugin.unwrap();
            // What dot-launch blocks for itself never reaches the plugin.
            assert_eq!(
                u64::from_str_radix(&blocked(plugin), 16).unwrap(),
                0,
                "{what}: the plugin starts with no blocked signal"
            );
            signal(&child, sig);
            let out = child.wait_with_output().unwrap();
            let e = assert_cancelled(&out, sig.as_str(), sig as i32);
            assert!(e.message.contains("while the plugin ran"), "{what}: {e:?}");
            assert_eq!(group_members(plugin), Vec::<String>::new(), "{what}");
            assert_clean(&env, &what);
        }
    }
}

/// At `audit` the plugin's children (some in sessions of their own) end with it: none lives to
/// write its marker when the FIFO they wait on is released.
#[test]
fn a_cancelled_run_leaves_no_descendant_of_the_plugin() {
    let env = Env::new();
    let fifo = env.dir.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let marker = env.dir.join("marker");
    let child = start(env.fixture_command(
        "delayed-children",
        &[
            ("fifo", fifo.to_str().unwrap()),
            ("marker", marker.to_str().unwrap()),
            ("then", "hang"),
        ],
        &["--deadline-ms", "30000"],
    ));
    wait_for("the plugin's children", || {
        common::processes_under(&env.root).len() > 10
    });
    signal(&child, Signal::SIGTERM);
    let out = child.wait_with_output().unwrap();
    assert_cancelled(&out, "SIGTERM", Signal::SIGTERM as i32);
    // Release the FIFO: a waiter still alive would now write the marker.
    let w = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(&fifo);
    drop(w);
    std::thread::sleep(Duration::from_millis(100));
    assert!(!marker.exists(), "a descendant survived the cancellation");
    assert_clean(&env, "delayed-children");
}

/// A signal before the run directory exists (the launch paused after its decision) and one
/// while the stage is ready but the plugin not yet spawned: nothing is left either time.
#[test]
fn a_signal_before_the_plugin_starts_cancels_cleanly() {
    let env = Env::new();
    let pause = env.dir.join("pause");
    let mut cmd = env.fixture_command("ok", &[], &[]);
    cmd.env("DOT_PAUSE_AFTER_VERIFY", &pause);
    let child = start(&mut cmd);
    let ready = PathBuf::from(format!("{}.ready", pause.display()));
    wait_for("the pause after verification", || ready.exists());
    signal(&child, Signal::SIGINT);
    std::fs::write(format!("{}.go", pause.display()), b"").unwrap();
    let out = child.wait_with_output().unwrap();
    let e = assert_cancelled(&out, "SIGINT", Signal::SIGINT as i32);
    assert!(e.message.contains("nothing was created"), "{e:?}");
    assert_clean(&env, "after verify");

    let mut cmd = env.fixture_command("ok", &[], &[]);
    cmd.env("DOT_SLEEP_BEFORE_SPAWN_MS", "600000");
    let child = start(&mut cmd);
    wait_for("the run directory", || !env.runs().is_empty());
    signal(&child, Signal::SIGHUP);
    let out = child.wait_with_output().unwrap();
    let e = assert_cancelled(&out, "SIGHUP", Signal::SIGHUP as i32);
    assert!(e.message.contains("before the plugin started"), "{e:?}");
    assert_clean(&env, "before the spawn");
}

/// More signals while the first one's cleanup runs: still one error, a whole cleanup, and the
/// process ends by one of the signals sent.
#[test]
fn more_signals_during_the_cleanup_change_nothing() {
    let env = Env::new();
    for _ in 0..5 {
        let child = start(env.fixture_command("sleep", &[], &["--deadline-ms", "30000"]));
        wait_for("the plugin to start", || {
            plugin_of(child.id(), &env.root).is_some()
        });
        for sig in [
            Signal::SIGTERM,
            Signal::SIGINT,
            Signal::SIGHUP,
            Signal::SIGTERM,
        ] {
            signal(&child, sig);
        }
        let out = child.wait_with_output().unwrap();
        let got = testkit::decode_error(&out.stderr)
            .signal
            .unwrap_or_default()
            .parse::<Signal>()
            .unwrap();
        assert!(SIGNALS.contains(&got), "{got}");
        assert_cancelled(&out, got.as_str(), got as i32);
        assert_clean(&env, "several signals");
    }
}

/// Starts the two-output fixture paused at the commit's `point`, sends SIGTERM there, and lets it go.
fn signal_at_commit(env: &Env, point: &str) -> Output {
    let pause = env.dir.join(format!("pause-{point}"));
    let mut cmd = env.two_outputs();
    cmd.env("DOT_PAUSE_AT", format!("{point}:{}", pause.display()));
    let child = start(&mut cmd);
    let ready = PathBuf::from(format!("{}.ready", pause.display()));
    wait_for(point, || ready.exists());
    signal(&child, Signal::SIGTERM);
    std::fs::write(format!("{}.go", pause.display()), b"").unwrap();
    child.wait_with_output().unwrap()
}

/// A signal when the temp files are written and durable but PREPARED is not: cancelled, the temp
/// files removed, the target as it was.
#[test]
fn a_signal_before_prepared_cancels_and_removes_the_temp_files() {
    let env = Env::new();
    let out = signal_at_commit(&env, "after-temp");
    let e = assert_cancelled(&out, "SIGTERM", Signal::SIGTERM as i32);
    assert!(
        e.message.contains("before its outputs were prepared"),
        "{e:?}"
    );
    assert_clean(&env, "after-temp");
}

/// A signal once PREPARED is durable: the commit is finished (every output in place,
/// COMMITTED, the run removed) and reported as a committed run, exit 0; recover and discard
/// find nothing to do.
#[test]
fn a_signal_after_prepared_lets_the_commit_finish() {
    let env = Env::new();
    let out = signal_at_commit(&env, "after-prepared");
    let r = result(&out);
    assert_eq!(r.status, proto::result::RunStatus::Committed);
    assert_eq!(env.target_files(), ["a.txt", "b.txt"]);
    assert_eq!(std::fs::read(env.target.join("a.txt")).unwrap(), b"A\n");
    assert_eq!(env.runs(), Vec::<String>::new());
    let rep: RecoverReport =
        testkit::decode_json(&common::ok(recover(&env.root), "recover").stdout);
    assert_eq!(rep, RecoverReport::default());
    assert_eq!(env.target_files(), ["a.txt", "b.txt"]);
}

/// `recover` stops between two runs on a signal: the runs it did not reach stay PREPARED, one
/// `cancelled` error; the next `recover` rolls them forward.
#[test]
fn recover_stops_between_runs_on_a_signal() {
    let env = Env::new();
    // Two targets: a PREPARED run pending in a target refuses the next launch there.
    let second = env.dir.join("target2");
    std::fs::create_dir(&second).unwrap();
    for target in [&env.target, &second] {
        let out = common::launch_into(
            &env.root,
            "fixture",
            target,
            &["--allow-audit-plugin", "--input", "mode=two-outputs"],
        )
        .env("DOT_FAILPOINT", "after-prepared")
        .output()
        .unwrap();
        assert_eq!(out.status.code(), None, "the failpoint kills the launcher");
    }
    assert_eq!(env.runs().len(), 2);
    let pause = env.dir.join("pause-recover");
    let child = start(
        tool("dot-launch")
            .arg("--root")
            .arg(&env.root)
            .arg("recover")
            .env("DOT_PAUSE_AT", format!("recover-next:{}", pause.display())),
    );
    let ready = PathBuf::from(format!("{}.ready", pause.display()));
    wait_for("recover's pause", || ready.exists());
    signal(&child, Signal::SIGTERM);
    std::fs::write(format!("{}.go", pause.display()), b"").unwrap();
    let out = child.wait_with_output().unwrap();
    let e = assert_cancelled(&out, "SIGTERM", Signal::SIGTERM as i32);
    assert!(e.message.contains("between two runs"), "{e:?}");
    assert_eq!(env.runs().len(), 2, "the runs are as they were");
    let r: RecoverReport = testkit::decode_json(&common::ok(recover(&env.root), "recover").stdout);
    assert_eq!(r.recovered.len(), 2);
    assert_eq!(env.runs(), Vec::<String>::new());
    assert_eq!(env.target_files(), ["a.txt", "b.txt"]);
    assert_eq!(common::names(&second), ["a.txt", "b.txt"]);
}
