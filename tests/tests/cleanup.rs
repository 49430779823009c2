//! Removing a run directory: whatever an `audit` plugin left in its stage (any depth, any width,
//! things removal never deletes), a launch either removes its run directory or says it could not,
//! never silently; a committed run always says `committed`; a removal killed at any step is
//! finished by the next `dot-discard` (or `recover`, for a committed run).

#![allow(clippy::unwrap_used)]

mod common;

use common::{discard, failure, names, recover, result, tool, Env};
use proto::result::RunResult;
use proto::Kind;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};

/// `cmd` run with an open-file limit of `n` (soft and hard), through `sh`'s `ulimit`.
fn with_nofile(cmd: &Command, n: u32) -> Output {
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .env_remove("DOT_FAILPOINT");
    sh.output().unwrap()
}

fn decode_result(out: &Output) -> RunResult {
    testkit::decode_json(&out.stdout)
}

#[test]
fn a_plugin_nesting_deeper_than_the_launchers_open_file_limit_is_removed() {
    let env = Env::new();
    let c = env.launch(
        "fixture",
        &[
            "--allow-audit-plugin",
            "--input",
            "mode=deep",
            "--input",
            "size=400",
        ],
    );
    // 400 levels with at most 48 descriptors: a removal holding one descriptor per level fails.
    let out = with_nofile(&c, 48);
    let r = result(&out);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(env.target_files(), ["result.txt"]);
    assert_eq!(
        env.runs(),
        Vec::<String>::new(),
        "the run directory is gone"
    );
}

#[test]
fn a_wide_stage_is_removed() {
    let env = Env::new();
    let out = env.fixture("wide", &[("size", "20000")], &[]);
    let r = result(&out);
    assert_eq!(r.outputs.len(), 1);
    assert_eq!(env.runs(), Vec::<String>::new());
}

/// The run directory a result or an error names, checked to be the one run left.
fn the_run(env: &Env, path: Option<&str>) -> String {
    let runs = env.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(
        path,
        Some(env.root.join("txn").join(&runs[0]).display().to_string()).as_deref()
    );
    runs[0].clone()
}

#[test]
fn a_committed_run_whose_directory_cannot_be_removed_says_committed_with_a_warning_and_exits_4() {
    let env = Env::new();
    let out = env.fixture("leave-fifo", &[("then", "ok")], &[]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(out.stderr.is_empty(), "nothing on stderr: {out:?}");
    let r = decode_result(&out);
    assert_eq!(r.status, proto::result::RunStatus::Committed);
    assert_eq!(r.outputs.len(), 1);
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    let w = &r.warnings[0];
    testkit::assert_kind!(w, Kind::CleanupRetained, "{w:?}");
    assert!(w.message.contains("stage/out/sub/fifo is a fifo"), "{w:?}");
    let txid = the_run(&env, w.path.as_deref());
    assert_eq!(
        std::fs::read(env.target.join("result.txt")).unwrap(),
        b"fifo left\n"
    );

    // Its journal says COMMITTED, but recover cannot remove it either: dot-discard retains it
    // with the reason and no `next` (recover would change nothing), as recover does, until the
    // operator removes the fifo.
    let d = discard(&env.root);
    assert_eq!(d.status.code(), Some(4));
    let report: discard::Report = testkit::decode_json(&d.stdout);
    assert_eq!(report.retained.len(), 1, "{report:?}");
    let kept = &report.retained[0];
    assert_eq!(
        (kept.txid.as_str(), kept.state, kept.next.as_deref()),
        (txid.as_str(), discard::State::Committed, None),
        "{kept:?}"
    );
    assert!(
        kept.reason.contains("stage/out/sub/fifo is a fifo"),
        "{kept:?}"
    );
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(4), "{r:?}");
    let report: launch::recover::RecoverReport = testkit::decode_json(&r.stdout);
    assert_eq!(report.skipped.len(), 1, "{report:?}");
    let s = &report.skipped[0];
    assert_eq!(
        (s.txid.as_str(), s.state, s.next.as_deref()),
        (txid.as_str(), discard::State::Committed, None)
    );
    assert!(s.reason.contains("stage/out/sub/fifo is a fifo"), "{s:?}");
    std::fs::remove_file(env.root.join("txn").join(&txid).join("stage/out/sub/fifo")).unwrap();
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    let report: launch::recover::RecoverReport = testkit::decode_json(&r.stdout);
    assert_eq!(report.cleaned, [txid]);
    assert!(env.runs().is_empty());
}

#[test]
fn a_failed_run_whose_directory_cannot_be_removed_is_cleanup_retained_not_silent() {
    let env = Env::new();
    let out = env.fixture("leave-fifo", &[("then", "fail")], &[]);
    let err = failure(&out, 4);
    testkit::assert_kind!(err, Kind::CleanupRetained, "{err:?}");
    assert_eq!(
        err.value.as_deref(),
        Some("plugin-exit"),
        "the failure that ended the run"
    );
    assert!(
        err.message.contains("the plugin exited with status 3"),
        "{err:?}"
    );
    assert!(
        err.message.contains("stage/out/sub/fifo is a fifo"),
        "{err:?}"
    );
    let run = err.run.expect("the failed run's result");
    assert_eq!(run.exit.code, Some(3));
    let txid = the_run(&env, err.path.as_deref());
    assert!(env.target_files().is_empty(), "nothing committed");

    // dot-discard retains it with the same reason, and removes it once the fifo is gone.
    let d = discard(&env.root);
    assert_eq!(d.status.code(), Some(4));
    let report: discard::Report = testkit::decode_json(&d.stdout);
    assert_eq!(report.retained[0].state, discard::State::Unrecognized);
    assert!(report.retained[0].reason.contains("fifo"), "{report:?}");
    std::fs::remove_file(env.root.join("txn").join(&txid).join("stage/out/sub/fifo")).unwrap();
    assert_eq!(discard(&env.root).status.code(), Some(0));
    assert!(env.runs().is_empty());
}

#[test]
fn a_commit_whose_committed_record_cannot_be_written_is_committed_with_a_run_retained_warning() {
    let env = Env::new();
    std::fs::write(env.target.join("a.txt"), b"old a\n").unwrap();
    let out = env
        .two_outputs()
        .env("DOT_INJECT", "append-committed")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let r = decode_result(&out);
    assert_eq!(r.status, proto::result::RunStatus::Committed);
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    let w = &r.warnings[0];
    testkit::assert_kind!(w, Kind::RunRetained, "{w:?}");
    assert!(w.message.contains("os error 5"), "{w:?}");
    let runs = env.runs();
    assert_eq!(
        testkit::bare(w.next.as_deref()),
        Some(format!(
            "dot-launch recover --root {} {}",
            env.root.display(),
            runs[0]
        ))
    );
    assert_eq!(
        env.target_files(),
        ["a.txt", "b.txt"],
        "both outputs are in place"
    );
    assert_eq!(std::fs::read(env.target.join("a.txt")).unwrap(), b"A\n");
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    let report: launch::recover::RecoverReport = testkit::decode_json(&r.stdout);
    assert_eq!(report.recovered, runs);
    assert!(env.runs().is_empty());
    assert_eq!(env.target_files(), ["a.txt", "b.txt"]);
}

#[test]
fn a_journal_that_cannot_be_created_leaves_no_run_directory() {
    let env = Env::new();
    let out = env
        .launch("fixture", &["--allow-audit-plugin"])
        .env("DOT_INJECT", "create-journal")
        .output()
        .unwrap();
    let err = failure(&out, 5);
    testkit::assert_kind!(err, Kind::Io, "{err:?}");
    assert!(err.message.contains("creating the journal"), "{err:?}");
    assert_eq!(
        env.runs(),
        Vec::<String>::new(),
        "the new directory was removed"
    );
}

/// Runs `cmd` with `DOT_FAILPOINT=point@n` for n = 1, 2, … until a run is not killed (the point
/// is not reached that often); after each kill, `check` gets the killed output and the kill
/// number. Returns how many kills there were.
fn kill_at_every_hit(
    point: &str,
    mut run: impl FnMut(&str) -> Output,
    mut check: impl FnMut(u32),
) -> u32 {
    for n in 1..200 {
        let out = run(&format!("{point}@{n}"));
        if out.status.signal() != Some(9) {
            return n - 1;
        }
        check(n);
    }
    panic!("{point} was hit 200 times");
}

/// The points of a run directory's removal (`txn::hooks`).
const REMOVAL_POINTS: [&str; 3] = ["remove-entry", "before-journal", "before-rmdir"];

#[test]
fn a_launchers_removal_killed_at_every_step_is_finished_by_one_discard() {
    // A failed run and a run without outputs: both journals hold BEGIN only.
    for failed in [true, false] {
        let env = Env::new();
        env.register(
            "quiet",
            &testkit::workspace_bin("hello"),
            "audit",
            &["write"],
        );
        std::fs::write(env.target.join("keep"), b"keep").unwrap();
        let what = if failed { "failed" } else { "no outputs" };
        for point in REMOVAL_POINTS {
            let kills = kill_at_every_hit(
                point,
                |fp| {
                    let mut c = if failed {
                        env.launch(
                            "fixture",
                            &["--allow-audit-plugin", "--input", "mode=exit-3"],
                        )
                    } else {
                        env.launch("quiet", &["--allow-audit-plugin", "--input", "write=no"])
                    };
                    c.env("DOT_FAILPOINT", fp).output().unwrap()
                },
                |n| {
                    let d = discard(&env.root);
                    assert_eq!(d.status.code(), Some(0), "{what} {point}@{n}: {d:?}");
                    assert!(env.runs().is_empty(), "{what} {point}@{n}: runs left");
                    assert_eq!(env.target_files(), ["keep"], "{what} {point}@{n}");
                },
            );
            assert!(kills >= 1, "{what}: {point} was never reached");
        }
    }
}

#[test]
fn a_committed_launchers_removal_killed_at_every_step_is_finished_by_recover() {
    let env = Env::new();
    for point in REMOVAL_POINTS {
        let kills = kill_at_every_hit(
            point,
            |fp| {
                let _ = std::fs::remove_file(env.target.join("result.txt"));
                env.launch("fixture", &["--allow-audit-plugin"])
                    .env("DOT_FAILPOINT", fp)
                    .output()
                    .unwrap()
            },
            |n| {
                assert_eq!(env.target_files(), ["result.txt"], "{point}@{n}: committed");
                let r = recover(&env.root);
                assert_eq!(r.status.code(), Some(0), "{point}@{n}: {r:?}");
                let d = discard(&env.root);
                assert_eq!(d.status.code(), Some(0), "{point}@{n}: {d:?}");
                assert!(env.runs().is_empty(), "{point}@{n}: runs left");
            },
        );
        assert!(kills >= 1, "{point} was never reached");
    }
}

/// An ABANDONED run as a launcher killed after its temp files leaves it.
fn abandoned_with_temps(env: &Env) {
    let out = env
        .two_outputs()
        .env("DOT_FAILPOINT", "after-temp")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{out:?}");
    assert_eq!(env.runs().len(), 1);
}

#[test]
fn a_discard_killed_at_every_step_is_finished_by_the_next() {
    let env = Env::new();
    for point in [
        "remove-entry",
        "remove-temp",
        "before-journal",
        "before-rmdir",
    ] {
        let kills = kill_at_every_hit(
            point,
            |fp| {
                if env.runs().is_empty() {
                    abandoned_with_temps(&env);
                }
                tool("dot-discard")
                    .arg("--root")
                    .arg(&env.root)
                    .env("DOT_FAILPOINT", fp)
                    .output()
                    .unwrap()
            },
            |n| {
                let d = discard(&env.root);
                assert_eq!(d.status.code(), Some(0), "{point}@{n}: {d:?}");
                assert!(env.runs().is_empty(), "{point}@{n}: runs left");
                assert!(env.target_files().is_empty(), "{point}@{n}: temps left");
            },
        );
        assert!(kills >= 1, "{point} was never reached");
        // The last run was removed unkilled.
        assert!(env.runs().is_empty());
    }
}

#[test]
fn a_recover_killed_at_every_step_of_its_removal_is_finished_by_recover_and_discard() {
    let env = Env::new();
    for point in REMOVAL_POINTS {
        let kills = kill_at_every_hit(
            point,
            |fp| {
                if env.runs().is_empty() {
                    let _ = std::fs::remove_file(env.target.join("a.txt"));
                    let _ = std::fs::remove_file(env.target.join("b.txt"));
                    let out = env
                        .two_outputs()
                        .env("DOT_FAILPOINT", "after-prepared")
                        .output()
                        .unwrap();
                    assert_eq!(out.status.signal(), Some(9));
                }
                tool("dot-launch")
                    .arg("--root")
                    .arg(&env.root)
                    .arg("recover")
                    .env("DOT_FAILPOINT", fp)
                    .output()
                    .unwrap()
            },
            |n| {
                // Killed after its journal went, the run is an empty directory: dot-discard's.
                let r = recover(&env.root);
                assert_eq!(r.status.code(), Some(0), "{point}@{n}: {r:?}");
                let d = discard(&env.root);
                assert_eq!(d.status.code(), Some(0), "{point}@{n}: {d:?}");
                assert!(env.runs().is_empty(), "{point}@{n}: runs left");
                assert_eq!(env.target_files(), ["a.txt", "b.txt"], "{point}@{n}");
            },
        );
        assert!(kills >= 1, "{point} was never reached");
    }
}

/// `names` of a directory that may not exist.
fn names_or_none(dir: &Path) -> Vec<String> {
    if dir.exists() {
        names(dir)
    } else {
        Vec::new()
    }
}

#[test]
fn a_process_runs_directory_is_removed_by_the_same_rules() {
    let env = Env::new();
    env.register(
        "px",
        &testkit::workspace_bin("fixture-plugin"),
        "process",
        &["mode"],
    );
    let out = env
        .launch("px", &["--require-process-sandbox"])
        .output()
        .unwrap();
    let r = result(&out);
    assert!(r.warnings.is_empty());
    assert_eq!(names_or_none(&env.root.join("txn")), Vec::<String>::new());
}
