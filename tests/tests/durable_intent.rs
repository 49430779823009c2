//! The record that names the target (BEGIN) is durable before the first temp file is created in
//! the target: the journal, the run directory and `txn/` are synced first, so a crash can never
//! leave temp files in a target that no journal names. A run without outputs makes nothing
//! durable. Checked on the system calls dot-launch makes (strace, with descriptors shown as paths).

#![allow(clippy::unwrap_used)]

mod common;

use common::{require_program, Env};
use std::path::Path;

/// dot-launch's `openat`, `fsync` and `fdatasync` calls (all threads), one line each, descriptors
/// shown as their paths.
fn traced(env: &Env, name: &str, args: &[&str]) -> Vec<String> {
    require_program("strace", "strace");
    let log = env.dir.join("strace.log");
    let launch = env.launch(name, args);
    let out = std::process::Command::new("strace")
        .args(["-f", "-y", "-e", "trace=openat,fsync,fdatasync", "-o"])
        .arg(&log)
        .arg(launch.get_program())
        .args(launch.get_args())
        .env_remove("DOT_FAILPOINT")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The index of the first line that satisfies `f`.
fn first(lines: &[String], what: &str, f: impl Fn(&str) -> bool) -> usize {
    lines
        .iter()
        .position(|l| f(l))
        .unwrap_or_else(|| panic!("no {what} in:\n{}", lines.join("\n")))
}

fn is_sync(l: &str) -> bool {
    l.contains(" fsync(") || l.contains(" fdatasync(")
}

#[test]
fn begin_is_durable_before_the_first_temp_file_is_created_in_the_target() {
    let env = Env::new();
    let lines = traced(
        &env,
        "fixture",
        &["--allow-audit-plugin", "--input", "mode=two-outputs"],
    );
    let txn = std::fs::canonicalize(env.root.join("txn")).unwrap();
    let txn = txn.display().to_string();
    let temp = first(&lines, "temp file creation", |l| {
        l.contains(" openat(") && l.contains("/.dot-") && l.contains("O_CREAT")
    });
    let journal = first(&lines, "journal sync", |l| {
        is_sync(l) && l.contains(&format!("{txn}/")) && l.contains("/journal>")
    });
    let run_dir = first(&lines, "run directory sync", |l| {
        is_sync(l)
            && Path::new(l.split('<').nth(1).unwrap_or("").trim_end_matches(">) = 0"))
                .parent()
                .is_some_and(|p| p == Path::new(&txn))
    });
    let txn_sync = first(&lines, "txn/ sync", |l| {
        is_sync(l) && l.contains(&format!("<{txn}>"))
    });
    assert!(
        journal < temp && run_dir < temp && txn_sync < temp,
        "journal {journal}, run directory {run_dir}, txn {txn_sync}, first temp {temp}:\n{}",
        lines.join("\n")
    );
}

#[test]
fn a_run_without_outputs_syncs_nothing_under_txn() {
    let env = Env::new();
    env.register(
        "quiet",
        &testkit::workspace_bin("hello"),
        "audit",
        &["write"],
    );
    let lines = traced(
        &env,
        "quiet",
        &["--allow-audit-plugin", "--input", "write=no"],
    );
    let txn = std::fs::canonicalize(env.root.join("txn")).unwrap();
    let synced: Vec<&String> = lines
        .iter()
        .filter(|l| is_sync(l) && l.contains(&txn.display().to_string()))
        .collect();
    assert!(synced.is_empty(), "{synced:?}");
    assert!(
        lines.iter().any(|l| l.contains("/journal>")),
        "the trace shows descriptors as paths"
    );
}
