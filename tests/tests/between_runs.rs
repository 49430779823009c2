//! Transactions between runs: one commit at a time per target (a lock a killed process releases),
//! a PREPARED run pending in a target refuses launches there until it is recovered, a power cut
//! before BEGIN was durable leaves a run `dot-discard` removes, a torn COMMITTED is cut before
//! `recover` appends, a result that cannot be written is still reported, and a target whose
//! parents are swapped for symbolic links during the run receives the commit in the directory
//! that was checked, nothing outside it.

#![allow(clippy::unwrap_used)]

mod common;

use common::{discard, names, recover, result, tool, Env};
use nix::fcntl::{Flock, FlockArg};
use proto::journal::RunState;
use proto::Kind;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Polls `child` for `span`: true when it is still running at the end.
fn still_running_after(child: &mut Child, span: Duration) -> bool {
    let until = Instant::now() + span;
    while Instant::now() < until {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

fn temps(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|n| n.starts_with(".dot-"))
        .collect()
}

/// The only run directory's journal, classified.
fn only_run(env: &Env) -> (String, PathBuf) {
    let runs = env.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let txid = runs[0].clone();
    let journal = env.root.join("txn").join(&txid).join("journal");
    (txid, journal)
}

fn state_of(journal: &Path) -> RunState {
    proto::journal::classify(&std::fs::read(journal).unwrap()).state
}

#[test]
fn a_launch_waits_for_the_targets_commit_lock_and_says_so() {
    let env = Env::new();
    // Another commit into the target holds its lock (flock on the directory).
    let held = Flock::lock(
        std::fs::File::open(&env.target).unwrap(),
        FlockArg::LockExclusiveNonblock,
    )
    .unwrap();
    let mut child = env
        .two_outputs()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        still_running_after(&mut child, Duration::from_millis(1500)),
        "the launch committed while another held the target's lock"
    );
    assert!(
        env.target_files().is_empty(),
        "nothing is written while it waits"
    );
    drop(held);
    let r = result(&child.wait_with_output().unwrap());
    assert!(r.target_waited, "{r:?}");
    assert_eq!(env.target_files(), ["a.txt", "b.txt"]);
    // Uncontended: it did not wait, and the result says nothing of it.
    let out = env.two_outputs().output().unwrap();
    let r = result(&out);
    assert!(!r.target_waited);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("target_waited"));
    assert!(env.runs().is_empty());
}

#[test]
fn a_signal_ends_the_wait_for_the_target_lock_with_nothing_left() {
    let env = Env::new();
    let held = Flock::lock(
        std::fs::File::open(&env.target).unwrap(),
        FlockArg::LockExclusiveNonblock,
    )
    .unwrap();
    let mut child = env
        .two_outputs()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(still_running_after(&mut child, Duration::from_millis(500)));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    testkit::assert_cancelled(&out, "SIGTERM", 15);
    drop(held);
    assert!(env.target_files().is_empty());
    assert!(env.runs().is_empty());
}

#[test]
fn launches_into_one_target_at_once_each_land_as_one_set() {
    // Six launches at once, each writing a.txt and b.txt with its own bytes: whichever committed
    // last, both files are its.
    let env = Env::new();
    let children: Vec<(String, Child)> = (0..6)
        .map(|i| {
            let tag = format!("run {i}\n");
            let c = env
                .launch(
                    "fixture",
                    &[
                        "--allow-audit-plugin",
                        "--input",
                        "mode=two-outputs",
                        "--input",
                        &format!("a=a {tag}"),
                        "--input",
                        &format!("b=b {tag}"),
                    ],
                )
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (tag, c)
        })
        .collect();
    for (_, c) in children {
        result(&c.wait_with_output().unwrap());
    }
    let a = std::fs::read_to_string(env.target.join("a.txt")).unwrap();
    let b = std::fs::read_to_string(env.target.join("b.txt")).unwrap();
    assert_eq!(
        a.strip_prefix("a "),
        b.strip_prefix("b "),
        "mixed sets: {a:?} {b:?}"
    );
    assert!(temps(&env.target).is_empty());
    assert!(env.runs().is_empty());
}

#[test]
fn a_pending_prepared_run_refuses_launches_into_its_target_until_recovered() {
    let env = Env::new();
    std::fs::write(env.target.join("a.txt"), b"old a\n").unwrap();
    let out = env
        .launch(
            "fixture",
            &[
                "--allow-audit-plugin",
                "--input",
                "mode=two-outputs",
                "--input",
                "a=first a\n",
                "--input",
                "b=first b\n",
            ],
        )
        .env("DOT_FAILPOINT", "between-renames")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9));
    let (txid, journal) = only_run(&env);
    assert_eq!(state_of(&journal), RunState::Prepared);
    let before = testkit::tree_snapshot(&env.target);
    // A new launch there is refused before its plugin runs (and so is one that would only commit
    // later); the target is as the killed run left it.
    let out = env.two_outputs().output().unwrap();
    let e = testkit::assert_refused(&out, 4, Kind::TargetPending);
    assert_eq!(e.value.as_deref(), Some(txid.as_str()));
    assert_eq!(
        testkit::bare(e.next.as_deref()),
        Some(format!(
            "dot-launch recover --root {} {txid}",
            env.root.display()
        ))
    );
    assert_eq!(testkit::tree_snapshot(&env.target), before);
    assert_eq!(
        env.runs(),
        std::slice::from_ref(&txid),
        "the refused launch left no run"
    );
    // dot-discard keeps it and points at recover; recover finishes it; then launches commit.
    let d = discard(&env.root);
    assert_eq!(d.status.code(), Some(4));
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert_eq!(
        std::fs::read(env.target.join("a.txt")).unwrap(),
        b"first a\n"
    );
    assert_eq!(
        std::fs::read(env.target.join("b.txt")).unwrap(),
        b"first b\n"
    );
    result(&env.two_outputs().output().unwrap());
    assert_eq!(env.target_files(), ["a.txt", "b.txt"]);
    assert!(env.runs().is_empty());
}

#[test]
fn a_run_whose_begin_a_power_cut_lost_is_abandoned_and_discarded() {
    // What ext4 keeps of a run when the power goes before BEGIN is durable: the run directory, a
    // 0-byte journal, the stage and a copied input (metadata is committed on its own, BEGIN's
    // bytes were never synced). A launch killed after BEGIN, its journal cut to 0 bytes, is that.
    let env = Env::new();
    env.register_with(
        "fx-file",
        &testkit::workspace_bin("fixture-plugin"),
        "audit",
        &[
            "--input",
            "mode:string:optional",
            "--input",
            "doc:file:optional",
        ],
    );
    let doc = env.dir.join("doc.txt");
    std::fs::write(&doc, b"a document\n").unwrap();
    let out = env
        .launch(
            "fx-file",
            &[
                "--allow-audit-plugin",
                "--input",
                "mode=ok",
                "--input-file",
                &format!("doc={}", doc.display()),
            ],
        )
        .env("DOT_FAILPOINT", "request-sent")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{out:?}");
    let (_, journal) = only_run(&env);
    std::fs::write(&journal, b"").unwrap();
    let stage_in = journal.with_file_name("stage").join("in");
    assert_eq!(names(&stage_in), ["doc"], "the copied input is there");
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    let d = discard(&env.root);
    assert_eq!(d.status.code(), Some(0), "{d:?}");
    let report: discard::Report = testkit::decode_json(&d.stdout);
    assert_eq!(report.discarded.len(), 1);
    assert!(env.runs().is_empty());
    assert!(env.target_files().is_empty());
}

#[test]
fn recover_cuts_a_torn_committed_before_it_appends_and_the_run_settles() {
    // COMMITTED cut short (ENOSPC) after every file was in place, then recover killed after its
    // own COMMITTED, before it removed the run: the journal must still read COMMITTED.
    let env = Env::new();
    let out = env
        .two_outputs()
        .env("DOT_FAILPOINT", "before-committed")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9));
    let (txid, journal) = only_run(&env);
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes.extend_from_slice(b"{\"kind\":\"COMMITTED\",\"v\":1,\"se");
    std::fs::write(&journal, &bytes).unwrap();
    assert_eq!(
        state_of(&journal),
        RunState::Prepared,
        "a torn tail is no record"
    );
    let killed = tool("dot-launch")
        .args(["recover", "--root"])
        .arg(&env.root)
        .env("DOT_FAILPOINT", "before-journal")
        .output()
        .unwrap();
    assert_eq!(killed.status.signal(), Some(9), "{killed:?}");
    assert_eq!(env.runs(), [txid]);
    assert_eq!(state_of(&journal), RunState::Committed);
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert!(env.runs().is_empty());
    assert_eq!(env.target_files(), ["a.txt", "b.txt"]);
}

/// Runs `cmd` with its stdout the write end of a pipe whose read end is closed.
fn into_closed_pipe(mut cmd: std::process::Command) -> std::process::Output {
    let (r, w) = nix::unistd::pipe().unwrap();
    drop(r);
    cmd.stdout(Stdio::from(w)).stderr(Stdio::piped());
    cmd.output().unwrap()
}

/// Runs `cmd` with its stdout /dev/full (every write ENOSPC).
fn into_full_disk(mut cmd: std::process::Command) -> std::process::Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    cmd.stdout(Stdio::from(full)).stderr(Stdio::piped());
    cmd.output().unwrap()
}

#[test]
fn a_committed_result_that_cannot_be_written_is_one_error_naming_the_run() {
    for (how, run) in [
        ("a closed pipe", into_closed_pipe as fn(_) -> _),
        ("a full disk", into_full_disk),
    ] {
        let env = Env::new();
        let out = run(env.two_outputs());
        let e = testkit::assert_refused(&out, 5, Kind::ResultUnwritten);
        assert!(e.message.contains("committed 2 output(s)"), "{how}: {e:?}");
        let txid = e.value.clone().unwrap();
        assert_eq!(txid.len(), 32, "{how}: {e:?}");
        assert_eq!(
            e.path.as_deref(),
            Some(
                std::fs::canonicalize(&env.target)
                    .unwrap()
                    .to_str()
                    .unwrap()
            ),
            "{how}"
        );
        // It did commit, and cleaned up.
        assert_eq!(env.target_files(), ["a.txt", "b.txt"], "{how}");
        assert!(env.runs().is_empty(), "{how}");
        // recover and dot-discard say what they did the same way.
        for (tool_args, what) in [
            (vec!["recover"], "recover finished"),
            (vec![], "dot-discard finished"),
        ] {
            let bin = if tool_args.is_empty() {
                "dot-discard"
            } else {
                "dot-launch"
            };
            let mut c = tool(bin);
            c.args(&tool_args).arg("--root").arg(&env.root);
            let out = run(c);
            let e = testkit::assert_refused(&out, 5, Kind::ResultUnwritten);
            assert!(e.message.starts_with(what), "{how}: {e:?}");
        }
    }
}

/// A target three levels below `base` (`base/l1/l2/t`), and a twin tree `evil/l1/l2/t` that a
/// swapped parent would lead to.
struct Swap {
    base: PathBuf,
    evil: PathBuf,
}

impl Swap {
    const LEVELS: [&'static str; 3] = ["l1", "l1/l2", "l1/l2/t"];

    fn target(&self) -> PathBuf {
        self.base.join("l1/l2/t")
    }

    /// Moves `base/LEVEL` aside and puts a symbolic link to `evil/LEVEL` in its place.
    fn swap(&self, level: &str) {
        let real = self.base.join(level);
        std::fs::rename(&real, real.with_extension("real")).unwrap();
        std::os::unix::fs::symlink(self.evil.join(level), &real).unwrap();
    }

    fn restore(&self, level: &str) {
        let real = self.base.join(level);
        std::fs::remove_file(&real).unwrap();
        std::fs::rename(real.with_extension("real"), &real).unwrap();
    }
}

#[test]
fn a_parent_swapped_for_a_symlink_during_the_run_never_redirects_the_commit() {
    let env = Env::new();
    let swap = Swap {
        base: env.dir.join("base"),
        evil: env.dir.join("evil"),
    };
    std::fs::create_dir_all(swap.target()).unwrap();
    std::fs::create_dir_all(swap.evil.join("l1/l2/t")).unwrap();
    let pause = env.dir.join("pause");
    let runs = 201;
    for i in 0..runs {
        let level = Swap::LEVELS[i % 3];
        let _ = std::fs::remove_file(format!("{}.ready", pause.display()));
        let _ = std::fs::remove_file(format!("{}.go", pause.display()));
        let tag = format!("run {i}\n");
        let child = common::launch_into(
            &env.root,
            "fixture",
            &swap.target(),
            &[
                "--allow-audit-plugin",
                "--input",
                "mode=two-outputs",
                "--input",
                &format!("a={tag}"),
            ],
        )
        .env("DOT_PAUSE_AFTER_VERIFY", &pause)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let ready = PathBuf::from(format!("{}.ready", pause.display()));
        while !ready.exists() {
            std::thread::sleep(Duration::from_millis(1));
        }
        // The target was checked; now a parent (or the target itself) is a link elsewhere.
        swap.swap(level);
        std::fs::write(format!("{}.go", pause.display()), b"").unwrap();
        let out = child.wait_with_output().unwrap();
        swap.restore(level);
        let r = result(&out);
        assert_eq!(r.outputs.len(), 2, "run {i}");
        assert_eq!(
            std::fs::read_to_string(swap.target().join("a.txt")).unwrap(),
            tag,
            "run {i} ({level} swapped): the commit went into the checked directory"
        );
        let outside: Vec<PathBuf> = testkit::tree_snapshot(&swap.evil).into_keys().collect();
        assert_eq!(
            outside,
            ["", "l1", "l1/l2", "l1/l2/t"].map(PathBuf::from),
            "run {i} ({level} swapped) wrote outside the target"
        );
    }
    assert!(env.runs().is_empty());
}

/// The recover report of `out`, which exited 4.
fn conflicted(out: &std::process::Output) -> launch::recover::RecoverReport {
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    testkit::decode_json(&out.stdout)
}

#[test]
fn a_conflicted_prepared_run_has_a_way_out_that_leaves_no_temp_and_no_run() {
    // Killed after PREPARED, before any rename, then one of its temp files changed by someone:
    // recover cannot roll forward (a conflict, exit 4). No file of the run is in place, so the
    // conflict's `next`, `recover --abandon TXID`, ends it with the target as it was before the
    // run: no temp in the target, no run.
    let env = Env::new();
    std::fs::write(env.target.join("a.txt"), b"old a\n").unwrap();
    let out = env
        .two_outputs()
        .env("DOT_FAILPOINT", "after-prepared")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9));
    let (txid, _) = only_run(&env);
    let left = temps(&env.target);
    assert_eq!(left.len(), 2, "{left:?}");
    std::fs::write(env.target.join(&left[1]), b"changed\n").unwrap();
    let report = conflicted(&recover(&env.root));
    assert_eq!(report.conflicts.len(), 1, "{report:?}");
    let next = testkit::bare_argv(report.conflicts[0].next_argv.as_deref()).unwrap();
    assert_eq!(
        next,
        [
            "dot-launch",
            "recover",
            "--root",
            env.root.to_str().unwrap(),
            "--abandon",
            txid.as_str()
        ]
    );
    let out = tool("dot-launch").args(&next[1..]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: launch::recover::RecoverReport = testkit::decode_json(&out.stdout);
    assert_eq!(report.abandoned, [txid]);
    assert!(temps(&env.target).is_empty());
    assert_eq!(
        env.target_files(),
        ["a.txt"],
        "the target keeps what it held"
    );
    assert_eq!(
        std::fs::read(env.target.join("a.txt")).unwrap(),
        b"old a\n",
        "all old: as before the run"
    );
    assert!(env.runs().is_empty());
    assert_eq!(discard(&env.root).status.code(), Some(0));
    result(&env.two_outputs().output().unwrap());
}

#[test]
fn a_conflicted_run_with_files_already_in_place_is_not_abandoned_into_a_mixed_target() {
    // Killed between its renames (a.txt holds the run's new bytes), then its remaining temp file
    // changed: a conflict. Giving the run up now would leave a.txt new beside an old b.txt, so
    // the conflict offers no `--abandon`, and `--abandon` typed anyway refuses and changes
    // nothing. Once the operator restores a.txt (it did not exist before the run), it works.
    let env = Env::new();
    let out = env
        .two_outputs()
        .env("DOT_FAILPOINT", "between-renames")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9));
    let (txid, _) = only_run(&env);
    let left = temps(&env.target);
    assert_eq!(left.len(), 1, "{left:?}");
    std::fs::write(env.target.join(&left[0]), b"changed\n").unwrap();
    let report = conflicted(&recover(&env.root));
    assert_eq!(report.conflicts.len(), 1, "{report:?}");
    let c = &report.conflicts[0];
    assert_eq!(
        (c.next.as_deref(), c.next_argv.as_deref()),
        (None, None),
        "{c:?}"
    );
    assert!(
        c.reason
            .contains("a.txt already holds this run's new bytes")
            && c.reason.contains("mixed"),
        "{c:?}"
    );
    let before = testkit::tree_snapshot(&env.target);
    let abandon = || {
        tool("dot-launch")
            .args(["recover", "--root"])
            .arg(&env.root)
            .args(["--abandon", &txid])
            .output()
            .unwrap()
    };
    let report = conflicted(&abandon());
    assert!(report.abandoned.is_empty(), "{report:?}");
    assert_eq!(report.conflicts.len(), 1, "{report:?}");
    assert_eq!(report.conflicts[0].next, None, "{report:?}");
    assert!(report.conflicts[0].reason.contains("refuses"), "{report:?}");
    assert_eq!(
        testkit::tree_snapshot(&env.target),
        before,
        "nothing changed"
    );
    assert_eq!(env.runs(), std::slice::from_ref(&txid));
    // The operator makes the target whole (all old: a.txt was not there before the run).
    std::fs::remove_file(env.target.join("a.txt")).unwrap();
    let out = abandon();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: launch::recover::RecoverReport = testkit::decode_json(&out.stdout);
    assert_eq!(report.abandoned, [txid]);
    assert!(env.target_files().is_empty(), "{:?}", env.target_files());
    assert!(env.runs().is_empty());
}
