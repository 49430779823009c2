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

/// A small deterministic generator (xorshift), seeded per stream: no clock in the schedule.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The tags of `a.txt` and `b.txt` in `target`: both of one launch, or neither there.
fn one_set(target: &Path) -> Result<Option<String>, String> {
    let read = |n: &str| std::fs::read_to_string(target.join(n)).ok();
    match (read("a.txt"), read("b.txt")) {
        (None, None) => Ok(None),
        (Some(a), Some(b)) if a.strip_prefix("a ") == b.strip_prefix("b ") => {
            Ok(a.strip_prefix("a ").map(str::to_owned))
        }
        (a, b) => Err(format!("mixed: a.txt {a:?}, b.txt {b:?}")),
    }
}

#[test]
fn concurrent_launches_killed_at_random_beside_recover_and_discard_settle() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let per_stream = count("DOT_SOAK_STREAM", 50);
    let env = Env::new();
    let targets = [env.target.clone(), env.dir.join("target2")];
    std::fs::create_dir_all(&targets[1]).unwrap();
    const POINTS: [&str; 6] = [
        "after-begin",
        "request-sent",
        "after-temp",
        "after-prepared",
        "between-renames",
        "before-committed",
    ];
    let stop = AtomicBool::new(false);
    let (committed, killed, pending, other) = (
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    );
    let (recovers, discards) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|s| {
        let tool_loop = |name: &'static str, passes: &'static str| {
            let (env, stop) = (&env, &stop);
            let counter = if passes == "recover" {
                &recovers
            } else {
                &discards
            };
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let out = if name == "recover" {
                        common::recover(&env.root)
                    } else {
                        common::discard(&env.root)
                    };
                    assert!(
                        matches!(out.status.code(), Some(0 | 4)),
                        "{name} beside the launches: {out:?}"
                    );
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let r = tool_loop("recover", "recover");
        let d = tool_loop("discard", "discard");
        let streams: Vec<_> = (0..3u64)
            .map(|stream| {
                let (env, targets) = (&env, &targets);
                let (committed, killed, pending, other) = (&committed, &killed, &pending, &other);
                s.spawn(move || {
                    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ((stream + 1) * 0x1000_0001));
                    for i in 0..per_stream {
                        let tag = format!("{stream}-{i}\n");
                        let target = &targets[(rng.next() % 2) as usize];
                        let mut c = common::launch_into(
                            &env.root,
                            "fixture",
                            target,
                            &[
                                "--allow-audit-plugin",
                                "--input",
                                "mode=two-outputs",
                                "--input",
                                &format!("a=a {tag}"),
                                "--input",
                                &format!("b=b {tag}"),
                            ],
                        );
                        // One launch in three is killed at a failpoint, one in six by a timer.
                        let roll = rng.next() % 6;
                        if roll < 2 {
                            c.env("DOT_FAILPOINT", POINTS[(rng.next() % 6) as usize]);
                        }
                        let mut child = c
                            .stdout(std::process::Stdio::piped())
                            .stderr(std::process::Stdio::piped())
                            .spawn()
                            .unwrap();
                        if roll == 2 {
                            std::thread::sleep(std::time::Duration::from_millis(rng.next() % 40));
                            let _ = child.kill();
                        }
                        let out = child.wait_with_output().unwrap();
                        use std::os::unix::process::ExitStatusExt;
                        match (out.status.code(), out.status.signal()) {
                            (Some(0), _) => committed.fetch_add(1, Ordering::Relaxed),
                            (None, Some(9)) => killed.fetch_add(1, Ordering::Relaxed),
                            (Some(4), _)
                                if String::from_utf8_lossy(&out.stderr)
                                    .contains("\"target-pending\"") =>
                            {
                                pending.fetch_add(1, Ordering::Relaxed)
                            }
                            (Some(4), _) => other.fetch_add(1, Ordering::Relaxed),
                            _ => panic!("launch {stream}-{i}: {out:?}"),
                        };
                    }
                })
            })
            .collect();
        for t in streams {
            t.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        r.join().unwrap();
        d.join().unwrap();
    });
    // Settle: recover rolls the PREPARED runs forward, dot-discard removes the ABANDONED ones.
    for _ in 0..3 {
        let _ = common::recover(&env.root);
        let _ = common::discard(&env.root);
    }
    let runs = env.runs();
    let temps: Vec<String> = targets
        .iter()
        .flat_map(|t| common::names(t))
        .filter(|n| n.starts_with(".dot-"))
        .collect();
    let sets: Vec<_> = targets.iter().map(|t| one_set(t)).collect();
    eprintln!(
        "soak with kills: {} launches in 3 streams into 2 targets: {} committed, {} killed, {} refused \
         target-pending, {} exit 4 otherwise; {} recover and {} dot-discard passes beside; left: \
         {} runs, {} temps; targets {:?}",
        3 * per_stream,
        committed.load(Ordering::Relaxed),
        killed.load(Ordering::Relaxed),
        pending.load(Ordering::Relaxed),
        other.load(Ordering::Relaxed),
        recovers.load(Ordering::Relaxed),
        discards.load(Ordering::Relaxed),
        runs.len(),
        temps.len(),
        sets
    );
    if !runs.is_empty() {
        let fmt = common::tool("dot-journal-fmt")
            .arg("--root")
            .arg(&env.root)
            .output()
            .unwrap();
        eprintln!(
            "left:\nrecover: {}\ndiscard: {}\njournals: {}",
            String::from_utf8_lossy(&common::recover(&env.root).stdout),
            String::from_utf8_lossy(&common::discard(&env.root).stdout),
            String::from_utf8_lossy(&fmt.stdout)
        );
    }
    assert!(runs.is_empty(), "runs left in txn/: {runs:?}");
    assert!(temps.is_empty(), "temps left: {temps:?}");
    for (t, set) in targets.iter().zip(&sets) {
        assert!(set.is_ok(), "{}: {set:?}", t.display());
    }
    assert!(killed.load(Ordering::Relaxed) > 0 && committed.load(Ordering::Relaxed) > 0);
}
