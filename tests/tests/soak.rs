//! Soak: many launches in a row, and two concurrent streams, leave nothing behind: every dot-launch
//! exits with exactly the descriptors it started with (its `DOT_REPORT_FDS` report), its peak RSS does
//! not grow from the first runs to the last, no run directory is left under `txn/`, no process
//! runs under the root, and no zombie is left to the test. Three runs in ten fail on purpose
//! (exit status, malformed response, a plugin-reported error) so the failure paths soak too.
//!
//! `make test` runs 200 sequential launches and two streams of 50; `make soak` runs 2,000 and two
//! streams of 500 (`DOT_SOAK_SEQUENTIAL`, `DOT_SOAK_STREAM`).

#![allow(clippy::unwrap_used)]

mod common;

use common::{processes_under, stat_state_ppid, Env};
use launch::hooks::ProcessReport;
use std::path::Path;

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The mode of run `i` and the exit code it must end with.
fn mode(i: usize) -> (&'static str, i32) {
    match i % 10 {
        3 => ("exit-3", 3),
        6 => ("not-json", 3),
        9 => ("status-error", 3),
        _ => ("ok", 0),
    }
}

fn launch_one(env: &Env, report: &Path, i: usize) {
    let (m, code) = mode(i);
    let out = env
        .launch(
            "fixture",
            &["--allow-audit-plugin", "--input", &format!("mode={m}")],
        )
        .env("DOT_REPORT_FDS", report)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(code), "run {i} ({m}): {out:?}");
}

/// Zombies whose parent is this test process.
fn our_zombies() -> Vec<String> {
    let me = std::process::id();
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        if stat_state_ppid(&stat) == Some(('Z', me)) {
            v.push(stat);
        }
    }
    v
}

/// The checks after a soak of `runs` launches.
fn assert_nothing_left(env: &Env, report: &Path, runs: usize) {
    let text = std::fs::read_to_string(report).unwrap();
    let reports: Vec<ProcessReport> = testkit::decode_json_lines(text.as_bytes());
    assert_eq!(reports.len(), runs, "one report per launch");
    for r in &reports {
        assert_eq!(
            r.fds, r.fds_at_start,
            "dot-launch {} leaked descriptors",
            r.pid
        );
        assert!(r.fds.starts_with(&[0, 1, 2]), "{r:?}");
    }
    // Peak RSS of the last tenth against the first tenth: a generous bound, not a timing.
    let tenth = (runs / 10).max(1);
    let avg = |rs: &[ProcessReport]| rs.iter().map(|r| r.vm_hwm_kb).sum::<u64>() / rs.len() as u64;
    let (first, last) = (avg(&reports[..tenth]), avg(&reports[runs - tenth..]));
    assert!(first > 0, "VmHWM was reported");
    eprintln!(
        "soak: {runs} launches; descriptors at exit {:?}; peak RSS first tenth {first} KiB, last tenth {last} KiB",
        reports[runs - 1].fds
    );
    assert!(
        last <= first + first / 2 + 2048,
        "dot-launch peak RSS grew: first runs {first} KiB, last runs {last} KiB"
    );
    assert!(
        env.runs().is_empty(),
        "run directories left: {:?}",
        env.runs()
    );
    let left = processes_under(&env.root);
    assert!(left.is_empty(), "processes left under the root: {left:?}");
    assert!(our_zombies().is_empty(), "zombies: {:?}", our_zombies());
    assert_eq!(
        std::fs::read(env.target.join("result.txt")).unwrap(),
        b"ok\n"
    );
}

#[test]
fn sequential_launches_leave_nothing_behind() {
    let runs = count("DOT_SOAK_SEQUENTIAL", 200);
    let env = Env::new();
    let report = env.dir.join("report.jsonl");
    for i in 0..runs {
        launch_one(&env, &report, i);
    }
    assert_nothing_left(&env, &report, runs);
}

#[test]
fn two_concurrent_streams_leave_nothing_behind() {
    let per_stream = count("DOT_SOAK_STREAM", 50);
    let env = Env::new();
    let report = env.dir.join("report.jsonl");
    std::thread::scope(|s| {
        for stream in 0..2 {
            let (env, report) = (&env, &report);
            s.spawn(move || {
                for i in 0..per_stream {
                    launch_one(env, report, stream * per_stream + i);
                }
            });
        }
    });
    assert_nothing_left(&env, &report, 2 * per_stream);
}
