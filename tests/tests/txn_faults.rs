//! Runs left by a fault, and what `dot-launch recover`, `dot-discard`, `dot-journal-fmt` and the
//! commit's pending check make of them when the host misbehaves or the filesystem around the run
//! changes: an I/O error right after a run's lock is taken, an unreadable run under the target's
//! commit lock, a target directory renamed, replaced by a symbolic link or reached through a bind
//! mount that is gone, a bind mount inside a stage, a journal whose target holds a line break.
//! Each case checks the run is never taken for gone or finished while it is there, that nothing
//! outside the run is removed, and that what the tools say next works.

#![allow(clippy::unwrap_used)]

mod common;

use common::{discard, names, recover, require_program, tool, Env};
use discard::State;
use launch::recover::RecoverReport;
use proto::Kind;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};

fn two_outputs(env: &Env, target: &Path) -> Command {
    env.two_new_outputs_into(target)
}

/// The only run under `txn/`.
fn only_run(env: &Env) -> String {
    let runs = env.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

/// Leaves a run killed at `point` into `target` (holding `a.txt` "old a").
fn killed_at(env: &Env, target: &Path, point: &str) -> String {
    std::fs::write(target.join("a.txt"), b"old a\n").unwrap();
    let out = two_outputs(env, target)
        .env("DOT_FAILPOINT", point)
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{point}: {out:?}");
    only_run(env)
}

fn temps(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|n| n.starts_with(".dot-"))
        .collect()
}

fn discard_report(out: &Output) -> discard::Report {
    testkit::decode_json(&out.stdout)
}

fn recover_report(out: &Output) -> RecoverReport {
    testkit::decode_json(&out.stdout)
}

/// `cmd` under strace, its `nth` call of `syscall` failed with EIO (`None`: traced only, `log`
/// keeps the trace).
fn strace(cmd: &Command, trace: &str, inject: Option<(&str, usize)>, log: &Path) -> Output {
    let mut c = Command::new("strace");
    c.args(["-qq", "-o"])
        .arg(log)
        .arg("-e")
        .arg(format!("trace={trace}"));
    if let Some((syscall, n)) = inject {
        c.arg("-e")
            .arg(format!("inject={syscall}:error=EIO:when={n}"));
    }
    c.arg(cmd.get_program()).args(cmd.get_args());
    c.env_remove("DOT_FAILPOINT").output().unwrap()
}

#[test]
fn an_io_error_looking_a_run_up_again_after_its_lock_never_makes_it_gone() {
    // inspect re-reads txn/TXID right after it takes the run's lock; only a name that is not there
    // (or names another directory) means its launcher finished it. An EIO there leaves the run
    // UNREADABLE, reported with the command that looks again, for recover and for dot-discard.
    require_program("strace", "strace");
    let env = Env::new();
    let log = env.dir.join("strace.log");
    for (tool_name, point) in [
        ("recover", "between-renames"),
        ("dot-discard", "after-temp"),
    ] {
        let txid = killed_at(&env, &env.target, point);
        let cmd = || {
            let mut c = match tool_name {
                "recover" => {
                    let mut c = tool("dot-launch");
                    c.arg("recover");
                    c
                }
                _ => tool("dot-discard"),
            };
            c.arg("--root").arg(&env.root);
            c
        };
        // Which newfstatat is the look-up after the lock: the first naming the run after flock.
        let out = strace(&cmd(), "flock,newfstatat", None, &log);
        assert!(out.status.code().is_some(), "{out:?}");
        let trace = std::fs::read_to_string(&log).unwrap();
        let mut locked = false;
        let mut nth = 0;
        let mut found = None;
        for line in trace.lines() {
            if line.starts_with("flock(") {
                locked = true;
            } else if line.starts_with("newfstatat(") {
                nth += 1;
                if locked && line.contains(&format!("\"{txid}\"")) && found.is_none() {
                    found = Some(nth);
                }
            }
        }
        let nth =
            found.unwrap_or_else(|| panic!("{tool_name}: no look-up after the lock:\n{trace}"));
        // The traced pass above finished the run: make it again, then fail that call.
        let _ = recover(&env.root);
        let _ = discard(&env.root);
        assert!(env.runs().is_empty());
        let txid = killed_at(&env, &env.target, point);
        let out = strace(&cmd(), "newfstatat", Some(("newfstatat", nth)), &log);
        assert!(
            std::fs::read_to_string(&log)
                .unwrap()
                .contains("(INJECTED)"),
            "{tool_name}: the fault was injected"
        );
        assert_eq!(out.status.code(), Some(4), "{tool_name}: {out:?}");
        let doc: serde_json::Value = testkit::decode_json(&out.stdout);
        let list = if tool_name == "recover" {
            "skipped"
        } else {
            "retained"
        };
        let entry = &doc[list][0];
        assert_eq!(entry["txid"], txid.as_str(), "{tool_name}: {doc}");
        assert_eq!(entry["state"], "UNREADABLE", "{tool_name}: {doc}");
        assert!(entry["next"].is_string(), "{tool_name}: {doc}");
        assert_eq!(
            env.runs(),
            std::slice::from_ref(&txid),
            "{tool_name}: the run is still there"
        );
        // Its next, run as printed, finishes it.
        let argv: Vec<String> = serde_json::from_value(entry["next_argv"].clone()).unwrap();
        let out = Command::new(&argv[0]).args(&argv[1..]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{tool_name}: {out:?}");
        assert!(env.runs().is_empty(), "{tool_name}: {:?}", env.runs());
        assert!(temps(&env.target).is_empty());
    }
}

#[test]
fn a_run_the_commits_pending_check_cannot_read_fails_the_launch_as_io() {
    // Run A killed between its renames is pending in the target. A launch whose check under the
    // target's lock cannot open A's run directory (EIO) must not take that for "no pending run":
    // it fails as `io` naming the run, and the target stays as A left it.
    require_program("strace", "strace");
    let env = Env::new();
    let txid = killed_at(&env, &env.target, "between-renames");
    let run_dir = env.root.join("txn").join(&txid);
    let before = testkit::tree_snapshot(&env.target);
    let launch = two_outputs(&env, &env.target);
    let log = env.dir.join("strace.log");
    let out = Command::new("strace")
        .args(["-qq", "-o"])
        .arg(&log)
        .arg("-P")
        .arg(&run_dir)
        .args(["-e", "trace=openat", "-e", "inject=openat:error=EIO"])
        .arg(launch.get_program())
        .args(launch.get_args())
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 5, Kind::Io);
    assert_eq!(e.path.as_deref(), run_dir.to_str(), "{e:?}");
    assert!(e.message.contains("pending"), "{e:?}");
    assert_eq!(
        testkit::tree_snapshot(&env.target),
        before,
        "nothing committed"
    );
    assert_eq!(env.runs(), [txid]);
    // Undisturbed, the run is pending; recover finishes it and launches commit again.
    let out = two_outputs(&env, &env.target).output().unwrap();
    testkit::assert_refused(&out, 4, Kind::TargetPending);
    assert_eq!(recover(&env.root).status.code(), Some(0));
    common::result(&two_outputs(&env, &env.target).output().unwrap());
    assert!(env.runs().is_empty());
    // What is not a run directory at all (a file, a symbolic link under a run's name) is no
    // pending run: recover never rolls it forward, and launches go on.
    let txn = env.root.join("txn");
    std::fs::write(txn.join(format!("{:032x}", 1)), b"not a run").unwrap();
    std::os::unix::fs::symlink(env.dir.path(), txn.join(format!("{:032x}", 2))).unwrap();
    common::result(&two_outputs(&env, &env.target).output().unwrap());
}

/// The reason and next of the only entry of a `dot-discard` report that retained `txid`.
fn retained_once(out: &Output, txid: &str) -> proto::retained::Retained {
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let report = discard_report(out);
    assert!(report.discarded.is_empty(), "{report:?}");
    assert_eq!(report.retained.len(), 1, "{report:?}");
    assert_eq!(report.retained[0].txid, txid);
    report.retained[0].clone()
}

#[test]
fn an_abandoned_run_whose_target_moved_keeps_its_temp_files_findable() {
    // A launcher killed with its temp files in the target, then the target renamed away (and
    // then a symbolic link put at its path): the temp files are in the moved directory, which no
    // tool can find. dot-discard must not remove the run (the only record naming them) and must
    // not say "run again" forever: it retains it without `next`, saying what to do. Put back,
    // the directory is the run's again and dot-discard removes both.
    let env = Env::new();
    let txid = killed_at(&env, &env.target, "after-temp");
    let moved = env.dir.join("moved");
    std::fs::rename(&env.target, &moved).unwrap();
    assert_eq!(temps(&moved).len(), 2);
    for shape in ["renamed", "a symbolic link"] {
        if shape == "a symbolic link" {
            std::os::unix::fs::symlink(&moved, &env.target).unwrap();
        }
        for _ in 0..2 {
            let kept = retained_once(&discard(&env.root), &txid);
            assert_eq!(kept.state, State::Abandoned, "{shape}: {kept:?}");
            assert_eq!(kept.next, None, "{shape}: no command helps: {kept:?}");
            assert!(
                kept.reason.contains(&format!(
                    "put the directory back at {}",
                    env.target.display()
                )),
                "{shape}: {kept:?}"
            );
            assert_eq!(temps(&moved).len(), 2, "{shape}: the temp files are kept");
        }
        let r = recover_report(&recover(&env.root));
        assert_eq!(r.skipped.len(), 1, "{r:?}");
        assert_eq!(r.skipped[0].state, State::Abandoned);
    }
    std::fs::remove_file(&env.target).unwrap();
    std::fs::rename(&moved, &env.target).unwrap();
    let out = discard(&env.root);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(discard_report(&out).discarded, [txid]);
    assert!(temps(&env.target).is_empty());
    assert_eq!(names(&env.target), ["a.txt"]);
}

#[test]
fn a_prepared_run_whose_target_was_replaced_is_retained_and_still_blocks_its_directory() {
    // A run killed between its renames, then its target renamed away and an empty directory made
    // at its path. recover must not roll forward into the new directory, nor call it a conflict
    // (whose way out, --abandon, would drop the only record of the temp file): it retains the run
    // without `next`. The run still blocks launches into its real directory (found by the
    // identity BEGIN recorded), and once that is back, recover finishes it.
    let env = Env::new();
    let txid = killed_at(&env, &env.target, "between-renames");
    let moved = env.dir.join("moved");
    std::fs::rename(&env.target, &moved).unwrap();
    std::fs::create_dir(&env.target).unwrap();
    let out = recover(&env.root);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let r = recover_report(&out);
    assert!(r.conflicts.is_empty(), "{r:?}");
    assert_eq!(r.skipped.len(), 1, "{r:?}");
    let s = &r.skipped[0];
    assert_eq!(
        (s.state, s.next.as_deref()),
        (State::Prepared, None),
        "{s:?}"
    );
    assert!(
        s.reason.contains("not the directory the run began in"),
        "{s:?}"
    );
    assert!(
        names(&env.target).is_empty(),
        "nothing in the new directory"
    );
    let before = testkit::tree_snapshot(&moved);
    let out = two_outputs(&env, &moved).output().unwrap();
    let e = testkit::assert_refused(&out, 4, Kind::TargetPending);
    assert_eq!(e.value.as_deref(), Some(txid.as_str()));
    assert_eq!(
        testkit::tree_snapshot(&moved),
        before,
        "nothing committed over it"
    );
    std::fs::remove_dir(&env.target).unwrap();
    std::fs::rename(&moved, &env.target).unwrap();
    let out = recover(&env.root);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(recover_report(&out).recovered, [txid]);
    assert_eq!(std::fs::read(env.target.join("a.txt")).unwrap(), b"new a\n");
    assert_eq!(std::fs::read(env.target.join("b.txt")).unwrap(), b"new b\n");
    assert!(temps(&env.target).is_empty());
}

/// A directory outside every run, to bind-mount into a stage: it must come out whole.
fn precious(env: &Env) -> std::path::PathBuf {
    let p = env.dir.join("precious");
    std::fs::create_dir_all(p.join("sub")).unwrap();
    std::fs::write(p.join("data.txt"), b"keep me\n").unwrap();
    std::fs::write(p.join("sub/more.txt"), b"me too\n").unwrap();
    p
}

fn assert_whole(p: &Path) {
    assert_eq!(std::fs::read(p.join("data.txt")).unwrap(), b"keep me\n");
    assert_eq!(std::fs::read(p.join("sub/more.txt")).unwrap(), b"me too\n");
}

#[test]
fn a_bind_mount_in_an_abandoned_runs_stage_is_never_entered_by_discard() {
    // A directory of the same filesystem bind-mounted into a run's stage shows the stage's
    // device: dot-discard tells it by its mount and retains the run, the mounted files intact.
    let env = Env::new();
    let out = env
        .fixture_command("ok", &[], &[])
        .env("DOT_FAILPOINT", "request-sent")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{out:?}");
    let txid = only_run(&env);
    let keep = precious(&env);
    let mnt = env.root.join("txn").join(&txid).join("stage/out/mnt");
    let bind = testkit::mount::Bind::mount(&keep, &mnt);
    for dry in [true, false] {
        let mut c = tool("dot-discard");
        c.arg("--root").arg(&env.root);
        if dry {
            c.arg("--dry-run");
        }
        let kept = retained_once(&c.output().unwrap(), &txid);
        assert_eq!(
            (kept.state, kept.next.as_deref()),
            (State::Unrecognized, None)
        );
        assert!(
            kept.reason.contains("stage/out/mnt is a mount point"),
            "{kept:?}"
        );
        assert_whole(&keep);
    }
    drop(bind);
    let out = discard(&env.root);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(env.runs().is_empty());
    assert_whole(&keep);
}

#[test]
fn a_bind_mount_in_the_stage_is_never_entered_by_the_launchers_own_removal() {
    // The launcher removes its run directory by the same code: a bind mount an audit plugin (or
    // anyone) left in the stage stops it, the run committed with a cleanup-retained warning, the
    // mounted files intact; once unmounted, recover finishes the cleanup.
    let env = Env::new();
    let keep = precious(&env);
    let pause = env.dir.join("pause");
    let child = common::spawn_paused(two_outputs(&env, &env.target), "after-prepared", &pause);
    let txid = only_run(&env);
    let mnt = env.root.join("txn").join(&txid).join("stage/out/mnt");
    let bind = testkit::mount::Bind::mount(&keep, &mnt);
    common::go_on(&pause);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let r: proto::result::RunResult = testkit::decode_json(&out.stdout);
    assert_eq!(r.status, proto::result::RunStatus::Committed);
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    testkit::assert_kind!(r.warnings[0], Kind::CleanupRetained, "{:?}", r.warnings);
    assert!(
        r.warnings[0]
            .message
            .contains("stage/out/mnt is a mount point"),
        "{:?}",
        r.warnings
    );
    assert_whole(&keep);
    assert_eq!(std::fs::read(env.target.join("a.txt")).unwrap(), b"new a\n");
    let rep = recover_report(&recover(&env.root));
    assert_eq!(rep.skipped.len(), 1, "{rep:?}");
    assert_eq!(rep.skipped[0].next, None, "{rep:?}");
    assert_whole(&keep);
    drop(bind);
    let out = recover(&env.root);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(recover_report(&out).cleaned, [txid]);
    assert_whole(&keep);
}

/// `dot-journal-fmt --json --root R`'s one run.
fn shown(env: &Env) -> serde_json::Value {
    let out = tool("dot-journal-fmt")
        .args(["--json", "--root"])
        .arg(&env.root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let mut v: Vec<serde_json::Value> = testkit::decode_json_lines(&out.stdout);
    assert_eq!(v.len(), 1, "{v:?}");
    v.remove(0)
}

#[test]
fn journal_fmt_classifies_a_run_as_recover_and_discard_do() {
    // A PREPARED run that breaks a rule of the run directory is UNRECOGNIZED for the tools that
    // act on it; dot-journal-fmt shows the same state with the same reason (and an oversized
    // journal with its real size, not the amount read).
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let txid = killed_at(&env, &env.target, "after-prepared");
    let run = env.root.join("txn").join(&txid);
    let dry = || {
        let out = tool("dot-discard")
            .args(["--dry-run", "--root"])
            .arg(&env.root)
            .output()
            .unwrap();
        retained_once(&out, &txid)
    };
    let agree = |what: &str, why: &str| {
        let kept = dry();
        let fmt = shown(&env);
        assert_eq!(kept.state, State::Unrecognized, "{what}: {kept:?}");
        assert_eq!(fmt["state"], "UNRECOGNIZED", "{what}: {fmt}");
        assert_eq!(fmt["problem"], kept.reason.as_str(), "{what}: {fmt}");
        assert!(kept.reason.contains(why), "{what}: {kept:?}");
    };
    assert_eq!(shown(&env)["state"], "PREPARED");
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    agree("mode 755", "mode 755");
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    let second = env.dir.join("second-name");
    std::fs::hard_link(run.join("journal"), &second).unwrap();
    agree("two links", "2 hard links");
    std::fs::remove_file(&second).unwrap();
    assert_eq!(shown(&env)["state"], "PREPARED");
    assert_eq!(recover(&env.root).status.code(), Some(0));
    // An oversized journal: its real size.
    std::fs::create_dir(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(run.join("journal"), vec![b'x'; 5_000_000]).unwrap();
    std::fs::set_permissions(run.join("journal"), std::fs::Permissions::from_mode(0o600)).unwrap();
    agree("5,000,000 bytes", "journal is 5000000 bytes, over 4194304");
}

#[test]
fn a_target_holding_a_line_break_is_refused_and_a_forged_one_is_shown_escaped() {
    // A launch refuses a target whose path holds a control character (the journal names it to
    // people), and dot-journal-fmt shows a journal's strings escaped, so one forged with a line
    // break cannot print a state line of its own.
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let odd = env.dir.join("t\n  state: COMMITTED");
    std::fs::create_dir(&odd).unwrap();
    let out = two_outputs(&env, &odd).output().unwrap();
    let e = testkit::assert_refused(&out, 2, Kind::TargetInvalid);
    assert!(e.message.contains("U+000A"), "{e:?}");
    assert!(env.runs().is_empty());
    assert!(names(&odd).is_empty());
    // A journal written by someone else, with that target (checksums valid).
    let txid = testkit::journal::TXID;
    let target = odd.display().to_string();
    let mut records = testkit::journal::records(txid);
    for r in &mut records {
        if let proto::journal::Record::Begin { target: t, .. }
        | proto::journal::Record::Prepared { target: t, .. } = r
        {
            *t = target.clone();
        }
    }
    let run = env.root.join("txn").join(txid);
    std::fs::create_dir(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(run.join("journal"), testkit::journal::encode(&records[..2])).unwrap();
    let out = tool("dot-journal-fmt")
        .arg("--root")
        .arg(&env.root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let states: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("state:"))
        .collect();
    assert_eq!(states, ["  state: PREPARED"], "{text}");
    assert!(text.contains("t\\x0a  state: COMMITTED"), "{text}");
}
