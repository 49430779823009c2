//! The order in which the real `dot-launch` ends a run's process group, seen with strace: every
//! group signal comes before the leader is waited for, and nothing is signalled after. Until the
//! leader is reaped its pid, which is the group's id, cannot be reused, so no signal can reach a
//! stranger's group.
#![allow(clippy::unwrap_used)]

mod common;

use common::{require_program, Env};
use std::process::Command;

/// The launcher's `kill` and `wait4` calls, in order: (syscall, first argument).
fn calls(trace: &str, launcher: &str) -> Vec<(String, i64)> {
    trace
        .lines()
        .filter_map(|l| {
            let (pid, rest) = l.split_once(char::is_whitespace)?;
            let rest = rest.trim_start();
            let (name, args) = rest.split_once('(')?;
            let first = args.split([',', ')']).next()?.trim().parse().ok()?;
            (pid == launcher).then(|| (name.to_owned(), first))
        })
        .collect()
}

#[test]
fn the_leader_is_reaped_after_the_last_group_signal() {
    require_program("strace", "strace");
    let env = Env::new();
    let trace = env.dir.join("trace");
    for mode in ["ok", "sleep"] {
        let launch = env.launch(
            "fixture",
            &[
                "--allow-audit-plugin",
                "--input",
                &format!("mode={mode}"),
                "--deadline-ms",
                "300",
            ],
        );
        let out = Command::new("strace")
            .args([
                "-f",
                "-qq",
                "-e",
                "trace=kill,wait4",
                "-e",
                "signal=none",
                "-o",
            ])
            .arg(&trace)
            .arg(launch.get_program())
            .args(launch.get_args())
            .output()
            .unwrap();
        let expected = if mode == "ok" { 0 } else { 3 };
        assert_eq!(out.status.code(), Some(expected), "{mode}: {out:?}");
        let text = std::fs::read_to_string(&trace).unwrap();
        // The launcher is the process that signals the group: kill(-PGID, SIGKILL).
        let (launcher, pgid) = text
            .lines()
            .find_map(|l| {
                let (pid, rest) = l.split_once(char::is_whitespace)?;
                let pgid = rest
                    .trim_start()
                    .strip_prefix("kill(-")?
                    .split(',')
                    .next()?;
                Some((pid.to_owned(), pgid.parse::<i64>().ok()?))
            })
            .unwrap_or_else(|| panic!("{mode}: no group signal in\n{text}"));
        let calls = calls(&text, &launcher);
        let wait = calls
            .iter()
            .position(|c| *c == ("wait4".to_owned(), pgid))
            .unwrap_or_else(|| panic!("{mode}: the leader is never waited for\n{text}"));
        let signals: Vec<usize> = calls
            .iter()
            .enumerate()
            .filter(|(_, (name, _))| name == "kill")
            .map(|(i, _)| i)
            .collect();
        assert!(
            signals.len() >= 2,
            "{mode}: two clean samples, two group signals\n{text}"
        );
        assert!(
            signals.iter().all(|&i| i < wait),
            "{mode}: a signal after the leader was reaped\n{text}"
        );
        // Exactly one wait for the leader.
        assert_eq!(
            calls
                .iter()
                .filter(|c| **c == ("wait4".to_owned(), pgid))
                .count(),
            1,
            "{mode}\n{text}"
        );
    }
}
