//! The fault matrix: a target that runs out of space mid-commit, a full root, a read-only target,
//! a target on another filesystem, a plugin over its address-space limit, and dot-launch SIGKILLed
//! at every failpoint (the plugin running or not) under both containments. After each fault nothing
//! is partial, nothing is lost, no process of the run survives, and `recover` + `discard` reach a
//! clean state. Filesystem faults use a size-limited tmpfs mounted for the test (root needed; a
//! failed mount fails the test).

#![allow(clippy::unwrap_used)]

mod common;

use common::{discard, failure, launch_into, names, recover, result, wait_no_processes_under, Env};
use proto::Kind;
use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use testkit::mount::Tmpfs;
use testkit::tree_snapshot;

/// Every `failpoint("…")` of dot-launch; `failpoints_are_all_covered` checks this list against the
/// call sites in launch/src.
const FAILPOINTS: [&str; 6] = [
    "after-begin",
    "request-sent",
    "after-temp",
    "after-prepared",
    "between-renames",
    "before-committed",
];

/// Failpoints after which the run's outputs are authorized (PREPARED is durable).
fn commits_after(point: &str) -> bool {
    matches!(
        point,
        "after-prepared" | "between-renames" | "before-committed"
    )
}

fn temps(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|n| n.starts_with(".dot-"))
        .collect()
}

fn fixture_args<'a>(mode: &'a str, extra: &[&'a str]) -> Vec<String> {
    let mut v = vec![
        "--allow-audit-plugin".to_owned(),
        "--input".to_owned(),
        format!("mode={mode}"),
    ];
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn as_strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn failpoints_are_all_covered() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../launch/src");
    let mut found = BTreeSet::new();
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        for piece in text.split("failpoint(\"").skip(1) {
            found.insert(piece.split('"').next().unwrap().to_owned());
        }
    }
    let listed: BTreeSet<String> = FAILPOINTS.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        found, listed,
        "a failpoint in launch/src is not in FAILPOINTS"
    );
}

#[test]
fn enospc_mid_commit_leaves_nothing_partial_and_a_rerun_commits() {
    let env = Env::new();
    let fs = Tmpfs::mount(&env.dir.join("small"), 1 << 20);
    let target = fs.path();
    std::fs::write(target.join("keep.txt"), b"keep\n").unwrap();
    fs.fill(&target.join("filler"), 64 << 10);
    let before = tree_snapshot(target);
    let size = format!("size={}", 256 << 10);
    let args = fixture_args("big-output", &["--input", &size]);
    let out = launch_into(&env.root, "fixture", target, &as_strs(&args))
        .output()
        .unwrap();
    let err = failure(&out, 5);
    testkit::assert_kind!(err, Kind::Io, "{err:?}");
    assert!(
        err.message.contains("os error 28"),
        "ENOSPC expected: {err:?}"
    );
    // The small output's temp file was written first: the failure came in the middle of a commit.
    assert!(
        err.path.as_deref().is_some_and(|p| p.ends_with("-1.tmp")),
        "the second temp file hit ENOSPC: {err:?}"
    );
    assert_eq!(
        tree_snapshot(target),
        before,
        "nothing partial in the target"
    );
    assert!(env.runs().is_empty(), "no PREPARED, so no run is retained");

    std::fs::remove_file(target.join("filler")).unwrap();
    let r = result(
        &launch_into(&env.root, "fixture", target, &as_strs(&args))
            .output()
            .unwrap(),
    );
    assert_eq!(r.outputs.len(), 2);
    assert_eq!(names(target), ["big.bin", "keep.txt", "small.txt"]);
    assert_eq!(
        std::fs::read(target.join("big.bin")).unwrap(),
        vec![b'x'; 256 << 10]
    );
    assert_eq!(std::fs::read(target.join("keep.txt")).unwrap(), b"keep\n");
    assert!(env.runs().is_empty());
}

#[test]
fn a_full_root_fails_before_the_plugin_runs_and_works_once_space_returns() {
    let env = Env::new();
    let txn = env.root.join("txn");
    let fs = Tmpfs::mount(&txn, 256 << 10);
    fs.fill(&txn.join("filler"), 0);
    let marker = env.dir.join("marker");
    let marker_arg = format!("marker={}", marker.display());
    let out = env.fixture("marker", &[], &["--input", &marker_arg]);
    let err = failure(&out, 5);
    testkit::assert_kind!(err, Kind::Io, "{err:?}");
    assert!(err.message.contains("os error 28"), "{err:?}");
    assert!(!marker.exists(), "the plugin never ran");
    assert_eq!(env.runs(), ["filler"], "the failed run left no directory");
    assert!(env.target_files().is_empty());

    std::fs::remove_file(txn.join("filler")).unwrap();
    let out = env.fixture("marker", &[], &["--input", &marker_arg]);
    result(&out);
    assert!(marker.exists());
    assert!(env.runs().is_empty());
    assert_eq!(env.target_files(), ["result.txt"]);
}

#[test]
fn a_read_only_target_fails_with_nothing_written() {
    let env = Env::new();
    let fs = Tmpfs::mount(&env.dir.join("ro"), 1 << 20);
    let target = fs.path();
    std::fs::write(target.join("result.txt"), b"old\n").unwrap();
    fs.remount_ro();
    let e = std::fs::write(target.join("probe"), b"x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(30), "EROFS even for root");
    let before = tree_snapshot(target);
    let out = launch_into(&env.root, "fixture", target, &["--allow-audit-plugin"])
        .output()
        .unwrap();
    let err = failure(&out, 5);
    testkit::assert_kind!(err, Kind::Io, "{err:?}");
    assert!(err.message.contains("os error 30"), "{err:?}");
    assert_eq!(tree_snapshot(target), before);
    assert!(env.runs().is_empty());
}

#[test]
fn a_prepared_run_is_retained_while_the_target_is_read_only_and_recovered_after() {
    let env = Env::new();
    let fs = Tmpfs::mount(&env.dir.join("ro"), 1 << 20);
    let target = fs.path();
    std::fs::write(target.join("a.txt"), b"old a\n").unwrap();
    let args = fixture_args(
        "two-outputs",
        &["--input", "a=new a\n", "--input", "b=new b\n"],
    );
    let out = launch_into(&env.root, "fixture", target, &as_strs(&args))
        .env("DOT_FAILPOINT", "after-prepared")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{out:?}");
    fs.remount_ro();
    let before = tree_snapshot(target);
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(4), "recover cannot rename: {r:?}");
    assert_eq!(env.runs().len(), 1, "the PREPARED run is retained");
    assert_eq!(tree_snapshot(target), before);
    // A read-only filesystem is the host's, not a conflict: the run stays PREPARED and its
    // `next` is recover again (never `--abandon`, which would give up a run that can finish).
    let report: launch::recover::RecoverReport = testkit::decode_json(&r.stdout);
    assert!(report.conflicts.is_empty(), "{report:?}");
    assert_eq!(report.skipped.len(), 1, "{report:?}");
    let s = &report.skipped[0];
    assert_eq!(s.state, discard::State::Prepared, "{s:?}");
    assert!(s.reason.contains("Read-only file system"), "{s:?}");
    let next = testkit::bare_argv(s.next_argv.as_deref()).unwrap();
    assert_eq!(
        next,
        [
            "dot-launch",
            "recover",
            "--root",
            env.root.to_str().unwrap(),
            env.runs()[0].as_str()
        ]
    );
    let d = discard(&env.root);
    assert_eq!(d.status.code(), Some(4), "discard retains it: {d:?}");
    assert_eq!(env.runs().len(), 1);

    fs.remount_rw();
    let r = common::tool("dot-launch")
        .args(&next[1..])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert_eq!(names(target), ["a.txt", "b.txt"]);
    assert_eq!(std::fs::read(target.join("a.txt")).unwrap(), b"new a\n");
    assert_eq!(std::fs::read(target.join("b.txt")).unwrap(), b"new b\n");
    assert_eq!(discard(&env.root).status.code(), Some(0));
    assert!(env.runs().is_empty());
}

#[test]
fn an_abandoned_run_in_a_read_only_target_stays_abandoned_with_a_next_that_works() {
    // A launcher killed with its temp files in the target, then the target's filesystem read-only
    // for a while: the run is ABANDONED for every tool (its journal says so), and dot-discard,
    // which cannot remove the temp files yet, retains it as such with `next` itself, which
    // finishes it once the filesystem is writable again.
    let env = Env::new();
    let fs = Tmpfs::mount(&env.dir.join("ro"), 1 << 20);
    let target = fs.path();
    std::fs::write(target.join("a.txt"), b"old a\n").unwrap();
    let args = fixture_args("two-outputs", &[]);
    let out = launch_into(&env.root, "fixture", target, &as_strs(&args))
        .env("DOT_FAILPOINT", "after-temp")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{out:?}");
    assert_eq!(temps(target).len(), 2);
    fs.remount_ro();
    let d = discard(&env.root);
    assert_eq!(d.status.code(), Some(4), "{d:?}");
    let report: discard::Report = testkit::decode_json(&d.stdout);
    assert_eq!(report.retained.len(), 1, "{report:?}");
    let kept = &report.retained[0];
    assert_eq!(kept.state, discard::State::Abandoned, "{kept:?}");
    assert!(kept.reason.contains("Read-only file system"), "{kept:?}");
    let next = testkit::bare_argv(kept.next_argv.as_deref()).unwrap();
    assert_eq!(next, ["dot-discard", "--root", env.root.to_str().unwrap()]);
    // recover and dot-journal-fmt say the same state.
    let r: launch::recover::RecoverReport = testkit::decode_json(&recover(&env.root).stdout);
    assert_eq!(r.skipped.len(), 1, "{r:?}");
    assert_eq!(r.skipped[0].state, discard::State::Abandoned, "{r:?}");
    let shown = common::tool("dot-journal-fmt")
        .args(["--json", "--root"])
        .arg(&env.root)
        .output()
        .unwrap();
    let shown: Vec<serde_json::Value> = testkit::decode_json_lines(&shown.stdout);
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0]["state"], "ABANDONED", "{shown:?}");

    fs.remount_rw();
    let out = common::tool("dot-discard")
        .args(&next[1..])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(env.runs().is_empty());
    assert_eq!(names(target), ["a.txt"]);
}

#[test]
fn temp_files_live_in_the_target_directory_on_another_filesystem() {
    let env = Env::new();
    let fs = Tmpfs::mount(&env.dir.join("other"), 4 << 20);
    let target = fs.path();
    let target_dev = std::fs::metadata(target).unwrap().dev();
    assert_ne!(
        target_dev,
        std::fs::metadata(&env.root).unwrap().dev(),
        "the target is on another filesystem"
    );
    let args = fixture_args("two-outputs", &[]);
    let out = launch_into(&env.root, "fixture", target, &as_strs(&args))
        .env("DOT_FAILPOINT", "after-temp")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{out:?}");
    let t = temps(target);
    assert_eq!(t.len(), 2, "both temp files are in the target: {t:?}");
    for name in &t {
        assert_eq!(
            std::fs::metadata(target.join(name)).unwrap().dev(),
            target_dev
        );
    }
    let strays: Vec<_> = tree_snapshot(&env.root)
        .into_keys()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".dot-"))
        })
        .collect();
    assert!(strays.is_empty(), "no temp file under the root: {strays:?}");
    assert_eq!(discard(&env.root).status.code(), Some(0));
    assert!(names(target).is_empty(), "discard removed the temp files");

    let r = result(
        &launch_into(&env.root, "fixture", target, &as_strs(&args))
            .output()
            .unwrap(),
    );
    assert_eq!(r.outputs.len(), 2);
    assert_eq!(names(target), ["a.txt", "b.txt"]);
}

#[test]
fn a_plugin_over_its_address_space_limit_is_killed_and_nothing_is_committed() {
    let env = Env::new();
    env.register(
        "hog",
        &testkit::workspace_bin("fixture-plugin"),
        "process",
        &["mode", "size"],
    );
    let out = env
        .launch(
            "hog",
            &["--require-process-sandbox", "--input", "mode=alloc"],
        )
        .output()
        .unwrap();
    let err = failure(&out, 3);
    testkit::assert_kind!(err, Kind::PluginSignal, "{err:?}");
    let run = err.run.expect("the run's details");
    assert_eq!(run.exit.signal, Some(6), "the allocation failure aborts");
    assert!(env.target_files().is_empty());
    assert!(env.runs().is_empty());
    // Control: the same code under the limit (64 MiB) runs and commits.
    let size = format!("size={}", 64 << 20);
    let out = env
        .launch(
            "hog",
            &[
                "--require-process-sandbox",
                "--input",
                "mode=alloc",
                "--input",
                &size,
            ],
        )
        .output()
        .unwrap();
    let r = result(&out);
    assert_eq!(r.exit.code, Some(0));
    assert_eq!(
        std::fs::read_to_string(env.target.join("result.txt")).unwrap(),
        format!("{}\n", 64 << 20)
    );
}

#[test]
fn a_big_plugin_killed_at_its_deadline_is_a_deadline_not_a_survivor() {
    // Unmapping gigabytes takes the kernel a few hundred milliseconds after SIGKILL; the reaper's
    // confirmation must outlast that rather than call the dying process a survivor (exit 5).
    let env = Env::new();
    env.register(
        "big",
        &testkit::workspace_bin("fixture-plugin"),
        "audit",
        &["mode"],
    );
    let out = env
        .launch(
            "big",
            &[
                "--allow-audit-plugin",
                "--input",
                "mode=alloc-sleep",
                "--deadline-ms",
                "4000",
            ],
        )
        .output()
        .unwrap();
    let err = failure(&out, 3);
    testkit::assert_kind!(err, Kind::Deadline, "{err:?}");
    assert!(env.target_files().is_empty());
    assert!(env.runs().is_empty());
    assert_eq!(wait_no_processes_under(&env.root), Vec::<String>::new());
}

/// SIGKILLs dot-launch at `point` (the plugin sleeping at `request-sent`, a two-output commit
/// otherwise), then checks: no process of the run survives; recover + discard leave no run; the
/// target holds the old bytes or exactly the new ones, never a temp file; a second recover +
/// discard changes nothing.
fn sigkill_at(point: &str, containment: &str, consent: &str) {
    let env = Env::new();
    env.register(
        "fx",
        &testkit::workspace_bin("fixture-plugin"),
        containment,
        &["mode", "a", "b"],
    );
    std::fs::write(env.target.join("a.txt"), b"old a\n").unwrap();
    let mode = if point == "request-sent" {
        "mode=sleep"
    } else {
        "mode=two-outputs"
    };
    let out = env
        .launch(
            "fx",
            &[
                consent,
                "--input",
                mode,
                "--input",
                "a=new a\n",
                "--input",
                "b=new b\n",
            ],
        )
        .env("DOT_FAILPOINT", point)
        .output()
        .unwrap();
    let what = format!("{point} ({containment})");
    assert_eq!(out.status.signal(), Some(9), "{what}: {out:?}");
    let left = wait_no_processes_under(&env.root);
    assert!(
        left.is_empty(),
        "{what}: processes of the run survived: {left:?}"
    );

    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(0), "{what}: recover: {r:?}");
    let d = discard(&env.root);
    assert_eq!(d.status.code(), Some(0), "{what}: discard: {d:?}");
    assert!(env.runs().is_empty(), "{what}: runs left");
    if commits_after(point) {
        assert_eq!(env.target_files(), ["a.txt", "b.txt"], "{what}");
        assert_eq!(std::fs::read(env.target.join("a.txt")).unwrap(), b"new a\n");
        assert_eq!(std::fs::read(env.target.join("b.txt")).unwrap(), b"new b\n");
    } else {
        assert_eq!(env.target_files(), ["a.txt"], "{what}");
        assert_eq!(std::fs::read(env.target.join("a.txt")).unwrap(), b"old a\n");
    }
    let before = tree_snapshot(env.dir.path());
    assert_eq!(recover(&env.root).status.code(), Some(0));
    assert_eq!(discard(&env.root).status.code(), Some(0));
    assert_eq!(
        tree_snapshot(env.dir.path()),
        before,
        "{what}: not idempotent"
    );
}

#[test]
fn sigkill_at_every_failpoint_audit() {
    for point in FAILPOINTS {
        sigkill_at(point, "audit", "--allow-audit-plugin");
    }
}

#[test]
fn sigkill_at_every_failpoint_process() {
    for point in FAILPOINTS {
        sigkill_at(point, "process", "--require-process-sandbox");
    }
}
