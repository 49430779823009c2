//! `dot-discard` removes exactly the ABANDONED runs, and retains every other run with its reason.

use assert_cmd::cargo::cargo_bin_cmd;
use discard::{Report, Retained, State};
use nix::fcntl::{Flock, FlockArg};
use proto::layout::Root;
use std::fs;
use std::os::unix::fs::{symlink, DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use testkit::journal::{begin, committed, encode as journal, prepared, unknown_record};
use testkit::{tree_snapshot, TempDir};

/// A txid from a small number, so runs sort in creation order.
fn txid(n: u32) -> String {
    format!("{n:032x}")
}

/// A private platform root with an empty `txn/`.
fn root(dir: &TempDir) -> Root {
    testkit::make_root(&dir.join("root"), true)
}

/// `txn/TXID/` with `journal` holding `bytes` and a stage with a few files.
fn run(root: &Root, txid: &str, bytes: &[u8]) -> PathBuf {
    testkit::journal::write_run(root, txid, bytes)
}

fn discard(root: &Root, extra: &[&str]) -> (i32, Report) {
    let out = cargo_bin_cmd!("dot-discard")
        .arg("--root")
        .arg(root.path())
        .args(extra)
        .output()
        .expect("runs");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        out.status.code().expect("exit code"),
        testkit::decode_json(&out.stdout),
    )
}

fn retained<'a>(report: &'a Report, txid: &str) -> &'a Retained {
    report
        .retained
        .iter()
        .find(|r| r.txid == txid)
        .unwrap_or_else(|| panic!("{txid} is not retained: {report:?}"))
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn discards_abandoned_runs() {
    let tmp = TempDir::new();
    let root = root(&tmp);
    let p = prepared().encode();
    let cases: [Vec<u8>; 4] = [
        journal(&[begin(&txid(1))]),
        Vec::new(),
        begin(&txid(3)).encode()[..40].to_vec(),
        [journal(&[begin(&txid(4))]), p[..p.len() - 9].to_vec()].concat(),
    ];
    for (i, bytes) in cases.iter().enumerate() {
        run(&root, &txid(i as u32 + 1), bytes);
    }
    // A run without a stage, and one whose stage is nested exactly 32 levels deep.
    let bare = root.run_dir(&txid(5));
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&bare)
        .expect("dir");
    fs::write(bare.join("journal"), journal(&[begin(&txid(5))])).expect("journal");
    let deep = run(&root, &txid(6), &journal(&[begin(&txid(6))]));
    fs::create_dir_all(deep.join("stage").join(["d"; 32].join("/"))).expect("deep");

    let (code, report) = discard(&root, &[]);
    assert_eq!(code, 0, "{report:?}");
    assert_eq!(report.discarded, (1..=6).map(txid).collect::<Vec<_>>());
    assert!(report.retained.is_empty());
    assert!(!report.dry_run);
    assert_eq!(names(&root.txn()), Vec::<String>::new());
}

/// Every way a run is not provably abandoned, each retained with its own reason.
#[test]
fn retains_each_run_it_cannot_prove_abandoned() {
    let tmp = TempDir::new();
    let root = root(&tmp);
    let abandoned = |n: u32| run(&root, &txid(n), &journal(&[begin(&txid(n))]));

    run(&root, &txid(1), &journal(&[begin(&txid(1)), prepared()]));
    run(
        &root,
        &txid(2),
        &journal(&[begin(&txid(2)), prepared(), committed()]),
    );
    run(
        &root,
        &txid(3),
        &[journal(&[begin(&txid(3))]), unknown_record()].concat(),
    );
    let mut bad = journal(&[begin(&txid(4))]);
    let at = bad.iter().position(|&b| b == b'h').expect("an h");
    bad[at] = b'j';
    run(&root, &txid(4), &bad);
    symlink("/etc/passwd", abandoned(5).join("stage/out/link")).expect("symlink");
    fs::write(abandoned(6).join("extra"), b"x").expect("extra");
    let linked = abandoned(7);
    fs::hard_link(linked.join("stage/out/a"), linked.join("stage/in/a2")).expect("link");
    let foreign = abandoned(8).join("stage/out/a");
    std::os::unix::fs::chown(&foreign, Some(12345), Some(12345)).expect("chown");
    let open = abandoned(9);
    fs::set_permissions(&open, fs::Permissions::from_mode(0o770)).expect("chmod");
    let live = abandoned(10);
    let bare = root.run_dir(&txid(11));
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&bare)
        .expect("no journal");
    nix::unistd::mkfifo(
        &abandoned(12).join("stage/out/fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .expect("mkfifo");
    let setuid = abandoned(13).join("stage/out/a");
    fs::set_permissions(&setuid, fs::Permissions::from_mode(0o4700)).expect("setuid");
    let deep = abandoned(14);
    fs::create_dir_all(deep.join("stage").join(["d"; 33].join("/"))).expect("deep");
    let outside = tmp.join("outside");
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&outside)
        .expect("outside");
    symlink(&outside, root.run_dir(&txid(16))).expect("symlinked run dir");
    fs::create_dir(root.txn().join("not-a-txid")).expect("odd name");

    let before = tree_snapshot(root.path());
    let lock = Flock::lock(
        fs::File::open(&live).expect("open run dir"),
        FlockArg::LockExclusiveNonblock,
    )
    .expect("hold the run's lock");
    let (code, report) = discard(&root, &[]);
    assert_eq!(code, 4);
    assert_eq!(
        tree_snapshot(root.path()),
        before,
        "nothing retained changed"
    );
    assert!(report.discarded.is_empty());
    // (txid, state, part of the reason)
    let expect: &[(String, State, &str)] = &[
        (txid(1), State::Prepared, "PREPARED"),
        (txid(2), State::Committed, "COMMITTED"),
        (
            txid(3),
            State::Unrecognized,
            "line 2: not a record this version knows",
        ),
        (
            txid(4),
            State::Unrecognized,
            "line 1: checksum does not match",
        ),
        (
            txid(5),
            State::Unrecognized,
            "stage/out/link is a symbolic link",
        ),
        (
            txid(6),
            State::Unrecognized,
            "unexpected entry extra in the run directory",
        ),
        (
            txid(7),
            State::Unrecognized,
            "linked: stage/in/a2 has 2 hard links",
        ),
        (
            txid(8),
            State::Unrecognized,
            "stage/out/a is owned by uid 12345, not 0",
        ),
        (
            txid(9),
            State::Unrecognized,
            "gives access to group or others (mode 770)",
        ),
        (txid(10), State::Live, "locked (live)"),
        (txid(11), State::Unrecognized, "no journal"),
        (txid(12), State::Unrecognized, "stage/out/fifo is a fifo"),
        (
            txid(13),
            State::Unrecognized,
            "stage/out/a has the setuid or setgid bit",
        ),
        (
            txid(14),
            State::Unrecognized,
            "nested deeper than 32 levels",
        ),
        (
            txid(16),
            State::Unrecognized,
            "is a symbolic link, not a directory",
        ),
        (
            "not-a-txid".into(),
            State::Unrecognized,
            "not a transaction id",
        ),
    ];
    assert_eq!(report.retained.len(), expect.len(), "{report:#?}");
    for (id, state, reason) in expect {
        let r = retained(&report, id);
        assert_eq!(r.state, *state, "{id}: {r:?}");
        assert!(
            r.reason.contains(reason),
            "{id}: {:?} lacks {reason:?}",
            r.reason
        );
    }
    let recover = |n| {
        format!(
            "dot-launch recover --root {} {}",
            root.path().display(),
            txid(n)
        )
    };
    assert_eq!(retained(&report, &txid(1)).next, Some(recover(1)));
    assert_eq!(retained(&report, &txid(2)).next, Some(recover(2)));
    assert_eq!(retained(&report, &txid(3)).next, None);

    // Once the lock is released, the live run (BEGIN only) is abandoned and goes; the rest stay.
    drop(lock);
    let (code, again) = discard(&root, &[]);
    assert_eq!(code, 4);
    assert_eq!(again.discarded, vec![txid(10)]);
    assert_eq!(again.retained.len(), expect.len() - 1);
    // A third run changes nothing at all.
    let settled = tree_snapshot(root.path());
    let (code, third) = discard(&root, &[]);
    assert_eq!(code, 4);
    assert!(third.discarded.is_empty());
    assert_eq!(third.retained, again.retained);
    assert_eq!(tree_snapshot(root.path()), settled);
}

#[test]
fn running_twice_is_running_once() {
    let tmp = TempDir::new();
    let root = root(&tmp);
    run(&root, &txid(1), &journal(&[begin(&txid(1))]));
    run(&root, &txid(2), &journal(&[begin(&txid(2)), prepared()]));
    let (code, first) = discard(&root, &[]);
    assert_eq!((code, first.discarded.clone()), (4, vec![txid(1)]));
    let after = tree_snapshot(root.path());
    let (code, second) = discard(&root, &[]);
    assert_eq!(code, 4);
    assert!(second.discarded.is_empty());
    assert_eq!(second.retained, first.retained);
    assert_eq!(tree_snapshot(root.path()), after);
}

#[test]
fn dry_run_changes_nothing() {
    let tmp = TempDir::new();
    let root = root(&tmp);
    run(&root, &txid(1), &journal(&[begin(&txid(1))]));
    run(&root, &txid(2), &journal(&[begin(&txid(2)), prepared()]));
    let before = tree_snapshot(root.path());
    let (code, report) = discard(&root, &["--dry-run"]);
    assert_eq!(code, 4);
    assert!(report.dry_run);
    assert_eq!(report.discarded, vec![txid(1)]);
    assert_eq!(retained(&report, &txid(2)).state, State::Prepared);
    assert_eq!(tree_snapshot(root.path()), before);
    // Nothing retained: exit 0.
    fs::remove_dir_all(root.run_dir(&txid(2))).expect("rm");
    let (code, report) = discard(&root, &["--dry-run"]);
    assert_eq!((code, report.discarded), (0, vec![txid(1)]));
    assert!(root.run_dir(&txid(1)).exists());
}

#[test]
fn refuses_a_missing_root_and_a_symlinked_txn() {
    let tmp = TempDir::new();
    let out = cargo_bin_cmd!("dot-discard")
        .arg("--root")
        .arg(tmp.join("nowhere"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(testkit::decode_error(&out.stderr).error, "not-a-root");

    let root = root(&tmp);
    fs::remove_dir(root.txn()).expect("rm txn");
    fs::create_dir(tmp.join("elsewhere")).expect("mkdir");
    symlink(tmp.join("elsewhere"), root.txn()).expect("symlink");
    let out = cargo_bin_cmd!("dot-discard")
        .arg("--root")
        .arg(root.path())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = testkit::decode_error(&out.stderr);
    assert_eq!(err.error, "unsafe-txn");
    assert_eq!(err.path, Some(root.txn().display().to_string()));
}
