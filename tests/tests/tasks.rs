//! The tasks of one `process` run are bounded (`--max-tasks`, default 256): a thread bomb stops at
//! the bound, the bound is the run's own (two runs at once each get all of it), the host can still
//! fork while a run sits at its bound, and the same plugin at `audit` (no OS boundary) is not
//! bounded — which is what shows the test can see an unbounded plugin.

#![allow(clippy::unwrap_used)]

mod common;

use common::{result, Env};
use proto::runner::IdentityKind;
use proto::Kind;
use std::process::{Command, Stdio};
use std::time::Duration;

fn env() -> Env {
    Env::with_process_fixture()
}

fn bomb(env: &Env, name: &str, consent: &str, extra: &[&str]) -> Command {
    let mut args = vec![consent, "--input", "mode=thread-bomb"];
    args.extend_from_slice(extra);
    env.launch(name, &args)
}

fn threads_line(env: &Env) -> String {
    std::fs::read_to_string(env.target.join("result.txt")).unwrap()
}

#[test]
fn a_thread_bomb_stops_at_the_bound_and_the_result_says_which() {
    let env = env();
    for (bound, extra) in [(256u64, vec![]), (40, vec!["--max-tasks", "40"])] {
        let out = bomb(&env, "fixture-p", "--require-process-sandbox", &extra)
            .output()
            .unwrap();
        let r = result(&out);
        let e = r.enforced.expect("enforced");
        assert_eq!(e.rlimits.nproc, bound);
        assert_eq!(e.identity.kind, IdentityKind::PerRunUid, "run as root here");
        assert_ne!(e.identity.uid, 0);
        // The plugin's own main thread is one of the bound's tasks.
        assert_eq!(
            threads_line(&env),
            format!("threads {} EAGAIN\n", bound - 1)
        );
    }
}

#[test]
fn the_same_plugin_at_audit_is_not_bounded() {
    let env = env();
    let out = bomb(
        &env,
        "fixture",
        "--allow-audit-plugin",
        &["--input", "size=600"],
    )
    .output()
    .unwrap();
    result(&out);
    assert_eq!(threads_line(&env), "threads 600 none\n");
}

#[test]
fn two_runs_at_once_each_get_the_whole_bound() {
    let env = env();
    let targets: Vec<_> = (0..2).map(|i| env.dir.join(format!("t{i}"))).collect();
    let children: Vec<_> = targets
        .iter()
        .map(|t| {
            std::fs::create_dir(t).unwrap();
            common::launch_into(
                &env.root,
                "fixture-p",
                t,
                &[
                    "--require-process-sandbox",
                    "--input",
                    "mode=thread-bomb",
                    "--max-tasks",
                    "100",
                ],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let mut uids = Vec::new();
    for (child, t) in children.into_iter().zip(&targets) {
        let out = child.wait_with_output().unwrap();
        uids.push(result(&out).enforced.unwrap().identity.uid);
        assert_eq!(
            std::fs::read_to_string(t.join("result.txt")).unwrap(),
            "threads 99 EAGAIN\n"
        );
    }
    assert_ne!(uids[0], uids[1], "each run has its own uid");
}

/// A field of `/proc/PID/status` (its first number).
fn status_field(status: &str, name: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// The pid of a live process of a per-run uid (0x7F000000 and up) with `threads` threads.
fn plugin_at_bound(threads: u64) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid = e.file_name().to_string_lossy().parse::<u32>().ok()?;
        let status = std::fs::read_to_string(e.path().join("status")).ok()?;
        let uid = status_field(&status, "Uid:")?;
        let per_run = (0x7F00_0000..0x7F40_0000).contains(&uid);
        (per_run && status_field(&status, "Threads:") == Some(threads)).then_some(pid)
    })
}

#[test]
fn the_host_can_still_fork_while_a_run_sits_at_its_bound() {
    let env = env();
    let child = bomb(
        &env,
        "fixture-p",
        "--require-process-sandbox",
        &["--input", "then=hold", "--max-tasks", "64"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Find the plugin at its bound: 64 tasks of one per-run uid.
    let mut at_bound = None;
    for _ in 0..3000 {
        at_bound = plugin_at_bound(64);
        if at_bound.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = at_bound.expect("the plugin reached 64 tasks");
    // The host: a new process and a handful of threads.
    let status = Command::new("/bin/true").status().unwrap();
    assert!(status.success());
    let threads: Vec<_> = (0..16).map(|_| std::thread::spawn(|| 7u8)).collect();
    assert!(threads.into_iter().all(|t| t.join().unwrap() == 7));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = common::failure(&out, 3);
    testkit::assert_kind!(err, Kind::PluginSignal);
}
