//! `dot-launch recover` fails closed exactly like `dot-discard`: the same checks of `txn/` and of
//! every run (owner, modes, the lock before the journal, BEGIN naming its own directory, PREPARED
//! naming only one-component names and this run's temp files in BEGIN's target), the same
//! removal (never a fifo, socket, device, setuid/setgid or foreign file), and anything else
//! retained with its reason. A run that vanishes during a pass is skipped, not an error.

#![allow(clippy::unwrap_used)]

mod common;

use common::{discard, recover, tool, Env};
use discard::State;
use launch::recover::RecoverReport;
use proto::journal::{PreparedFile, Record};
use proto::{Kind, Sha256};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use testkit::journal::{begin, committed, encode, write_run};
use testkit::tree_snapshot;

fn report(out: &std::process::Output) -> RecoverReport {
    assert!(out.stderr.is_empty(), "{out:?}");
    testkit::decode_json(&out.stdout)
}

/// A PREPARED run as a launcher killed right after PREPARED leaves it; returns its txid.
fn prepared_run(env: &Env) -> String {
    std::fs::write(env.target.join("a.txt"), b"old a\n").unwrap();
    let out = env
        .two_outputs()
        .env("DOT_FAILPOINT", "after-prepared")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{out:?}");
    let runs = env.runs();
    assert_eq!(runs.len(), 1);
    runs[0].clone()
}

/// The one skipped entry of a recover that exited 4, and everything under the root unchanged.
fn retained_untouched(env: &Env, txid: &str, state: State, why: &str) {
    let before = tree_snapshot(env.dir.path());
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(4), "{r:?}");
    let rep = report(&r);
    assert!(
        rep.recovered.is_empty() && rep.cleaned.is_empty(),
        "{rep:?}"
    );
    let s = rep
        .skipped
        .iter()
        .find(|s| s.txid == txid)
        .unwrap_or_else(|| panic!("{txid} not skipped: {rep:?}"));
    assert_eq!(s.state, state, "{s:?}");
    assert!(s.reason.contains(why), "{why:?} not in {s:?}");
    assert_eq!(
        tree_snapshot(env.dir.path()),
        before,
        "recover changed something"
    );
    // dot-discard says the same.
    let d = discard(&env.root);
    assert_eq!(d.status.code(), Some(4));
    let rep: discard::Report = testkit::decode_json(&d.stdout);
    let same = rep.retained.iter().find(|r| r.txid == txid).unwrap();
    assert_eq!(
        (same.state, same.reason.as_str()),
        (s.state, s.reason.as_str())
    );
    assert_eq!(
        tree_snapshot(env.dir.path()),
        before,
        "discard changed something"
    );
}

#[test]
fn a_prepared_run_owned_by_another_uid_or_open_to_others_is_not_rolled_forward() {
    let env = Env::new();
    let txid = prepared_run(&env);
    let dir = env.root.join("txn").join(&txid);
    std::os::unix::fs::chown(&dir, Some(12345), None).unwrap();
    retained_untouched(&env, &txid, State::Unrecognized, "owned by uid 12345");
    std::os::unix::fs::chown(&dir, Some(0), None).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    retained_untouched(&env, &txid, State::Unrecognized, "mode 755");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // Restored: it rolls forward.
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert_eq!(report(&r).recovered, [txid]);
    assert_eq!(env.target_files(), ["a.txt", "b.txt"]);
}

#[test]
fn an_unsafe_txn_is_refused_by_recover_as_by_discard() {
    let env = Env::new();
    prepared_run(&env);
    let txn = env.root.join("txn");
    std::fs::set_permissions(&txn, std::fs::Permissions::from_mode(0o777)).unwrap();
    for out in [recover(&env.root), discard(&env.root)] {
        let err = testkit::assert_refused(&out, 1, Kind::UnsafeTxn);
        assert_eq!(err.path, Some(txn.display().to_string()));
    }
    assert_eq!(
        env.target_files().len(),
        3,
        "a.txt and two temp files, untouched"
    );
}

#[test]
fn recover_on_a_missing_root_is_not_a_root() {
    let env = Env::new();
    let missing = env.dir.join("nowhere");
    let out = tool("dot-launch")
        .arg("--root")
        .arg(&missing)
        .arg("recover")
        .output()
        .unwrap();
    let err = testkit::assert_refused(&out, 2, Kind::NotARoot);
    assert_eq!(err.path, Some(missing.join("txn").display().to_string()));
    assert_eq!(
        testkit::bare(err.next.as_deref()),
        Some(format!("dot-register init --root {}", missing.display()))
    );
    // A root that is a regular file is not a root either, and `init` would not help there.
    let file = env.dir.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    for out in [
        tool("dot-launch")
            .arg("--root")
            .arg(&file)
            .arg("recover")
            .output()
            .unwrap(),
        discard(&file),
    ] {
        let err = testkit::assert_refused(&out, 2, Kind::NotARoot);
        assert_eq!(err.next, None, "{err:?}");
    }
}

/// BEGIN of run `txid` naming `target`.
fn begin_into(txid: &str, target: &Path) -> Record {
    let mut r = begin(txid);
    if let Record::Begin { target: t, .. } = &mut r {
        *t = target.display().to_string();
    }
    r
}

/// PREPARED into `target` of new files `(name, temp, bytes)`.
fn prepared_into(target: &Path, files: &[(&str, &str, &[u8])]) -> Record {
    Record::Prepared {
        v: 1,
        seq: 1,
        at_ms: 1,
        target: target.display().to_string(),
        target_id: None,
        files: files
            .iter()
            .map(|(name, temp, bytes)| PreparedFile {
                name: (*name).into(),
                temp: (*temp).into(),
                size: bytes.len() as u64,
                sha256: Sha256::of(bytes),
                old: None,
            })
            .collect(),
        sum: None,
    }
}

fn txid(n: u32) -> String {
    format!("{n:032x}")
}

#[test]
fn a_forged_prepared_record_cannot_make_recover_touch_anything_but_this_runs_temp_files() {
    let env = Env::new();
    let root = proto::layout::Root::single(&env.root);
    let victim = env.dir.join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("precious"), b"precious bytes").unwrap();
    std::fs::write(victim.join("copy"), b"precious bytes").unwrap();
    let temp = |n: u32| proto::layout::target_temp(&txid(n), 0);
    let p: &[u8] = b"precious bytes";
    let cases: Vec<(u32, Vec<Record>, &str)> = vec![
        // The stale-temp rule would have unlinked `precious` (it holds the prepared bytes, and so
        // does `copy`): a temp that is not this run's is refused.
        (
            1,
            vec![
                begin_into(&txid(1), &victim),
                prepared_into(&victim, &[("copy", "precious", p)]),
            ],
            "is not one of this run's",
        ),
        (
            2,
            vec![
                begin_into(&txid(2), &victim),
                prepared_into(&victim, &[("../escape", &temp(2), p)]),
            ],
            "not one plain file name",
        ),
        (
            3,
            vec![
                begin_into(&txid(99), &victim),
                prepared_into(&victim, &[("copy", &temp(3), p)]),
            ],
            "BEGIN names run",
        ),
        (
            4,
            vec![
                begin_into(&txid(4), &env.target),
                prepared_into(&victim, &[("copy", &temp(4), p)]),
            ],
            "is not BEGIN's",
        ),
        (
            5,
            vec![
                begin_into(&txid(5), &victim),
                prepared_into(&victim, &[("copy", &temp(6), p)]),
            ],
            "is not one of this run's",
        ),
    ];
    for (n, records, _) in &cases {
        write_run(&root, &txid(*n), &encode(records));
    }
    let before = tree_snapshot(env.dir.path());
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(4), "{r:?}");
    let rep = report(&r);
    assert!(
        rep.recovered.is_empty() && rep.conflicts.is_empty(),
        "{rep:?}"
    );
    for (n, _, why) in &cases {
        let s = rep.skipped.iter().find(|s| s.txid == txid(*n)).unwrap();
        assert_eq!(s.state, State::Unrecognized, "{s:?}");
        assert!(s.reason.contains(why), "{n}: {why:?} not in {s:?}");
        assert_eq!(s.next, None);
    }
    assert_eq!(tree_snapshot(env.dir.path()), before, "nothing was touched");
    assert_eq!(std::fs::read(victim.join("precious")).unwrap(), p);
}

#[test]
fn a_committed_runs_stage_holding_what_removal_never_deletes_is_retained_with_the_reason() {
    let env = Env::new();
    let root = proto::layout::Root::single(&env.root);
    let records = |n: u32| {
        encode(&[
            begin(&txid(n)),
            testkit::journal::prepared_for(&txid(n)),
            committed(),
        ])
    };
    let out = |n: u32| -> PathBuf { write_run(&root, &txid(n), &records(n)).join("stage/out") };
    nix::unistd::mkfifo(
        &out(1).join("fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    std::os::unix::net::UnixListener::bind(out(2).join("sock")).unwrap();
    nix::sys::stat::mknod(
        &out(3).join("null"),
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o600),
        nix::sys::stat::makedev(1, 3),
    )
    .unwrap();
    std::fs::set_permissions(out(4).join("a"), std::fs::Permissions::from_mode(0o4755)).unwrap();
    std::os::unix::fs::chown(out(5).join("a"), Some(12345), None).unwrap();
    let before = tree_snapshot(env.dir.path());
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(4), "{r:?}");
    let rep = report(&r);
    assert!(rep.cleaned.is_empty(), "{rep:?}");
    let expect = [
        (1, "stage/out/fifo is a fifo"),
        (2, "stage/out/sock is a socket"),
        (3, "stage/out/null is a character device"),
        (4, "stage/out/a has the setuid or setgid bit"),
        (5, "stage/out/a is owned by uid 12345"),
    ];
    for (n, why) in expect {
        let s = rep.skipped.iter().find(|s| s.txid == txid(n)).unwrap();
        assert_eq!(
            (s.state, s.next.as_deref()),
            (State::Committed, None),
            "{s:?}"
        );
        assert!(s.reason.contains(why), "{why:?} not in {s:?}");
    }
    assert_eq!(tree_snapshot(env.dir.path()), before, "nothing was removed");
}

#[test]
fn a_live_run_is_live_and_an_odd_entry_is_retained_like_discard_retains_it() {
    let env = Env::new();
    let root = proto::layout::Root::single(&env.root);
    let live = write_run(&root, &txid(1), &encode(&[begin(&txid(1))]));
    std::fs::create_dir(env.root.join("txn/not-a-txid")).unwrap();
    let lock = std::fs::File::open(&live).unwrap();
    lock.lock().unwrap();
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(4), "{r:?}");
    let rep = report(&r);
    let states: Vec<(String, State)> = rep
        .skipped
        .iter()
        .map(|s| (s.txid.clone(), s.state))
        .collect();
    assert_eq!(
        states,
        [
            (txid(1), State::Live),
            ("not-a-txid".to_owned(), State::Unrecognized)
        ]
    );
    drop(lock);
    testkit::flock::released(&live);
    std::fs::remove_dir(env.root.join("txn/not-a-txid")).unwrap();
    // Unlocked, the run is ABANDONED: dot-discard's, which recover does not count for the operator.
    let r = recover(&env.root);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert_eq!(report(&r).skipped[0].state, State::Abandoned);
}

#[test]
fn runs_that_come_and_go_during_a_recover_pass_are_skipped_not_errors() {
    let env = Env::new();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let launcher = {
        let stop = stop.clone();
        let c = env.launch("fixture", &["--allow-audit-plugin"]);
        let (prog, args): (PathBuf, Vec<std::ffi::OsString>) = (
            c.get_program().into(),
            c.get_args().map(|a| a.to_owned()).collect(),
        );
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let out = std::process::Command::new(&prog)
                    .args(&args)
                    .env_remove("DOT_FAILPOINT")
                    .output()
                    .unwrap();
                assert_eq!(out.status.code(), Some(0), "{out:?}");
                n += 1;
            }
            n
        })
    };
    let mut passes = 0;
    let mut saw_live = 0;
    while passes < 300 {
        let r = recover(&env.root);
        assert_eq!(r.status.code(), Some(0), "pass {passes}: {r:?}");
        let rep = report(&r);
        for s in &rep.skipped {
            assert!(
                matches!(s.state, State::Live | State::Abandoned),
                "pass {passes}: {s:?}"
            );
            saw_live += usize::from(s.state == State::Live);
        }
        passes += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let launches = launcher.join().unwrap();
    assert!(launches > 0);
    assert!(
        saw_live > 0,
        "the passes met live runs ({launches} launches)"
    );
    assert!(env.runs().is_empty());
}
