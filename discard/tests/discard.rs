//! `dot-discard` removes exactly the ABANDONED runs, and retains every other run with its reason.

use assert_cmd::cargo::cargo_bin_cmd;
use discard::{Report, Retained, State};
use nix::fcntl::{Flock, FlockArg};
use proto::layout::Root;
use proto::Kind;
use std::fs;
use std::os::unix::fs::{symlink, DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use testkit::journal::{begin, committed, encode as journal, prepared_for, unknown_record};
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

/// `txn/TXID/` (0700) holding only `journal` (0600) with `bytes`.
fn bare(root: &Root, txid: &str, bytes: &[u8]) -> PathBuf {
    let dir = root.run_dir(txid);
    fs::DirBuilder::new().mode(0o700).create(&dir).expect("dir");
    fs::write(dir.join("journal"), bytes).expect("journal");
    fs::set_permissions(dir.join("journal"), fs::Permissions::from_mode(0o600)).expect("chmod");
    dir
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
    let p = prepared_for(&txid(2)).encode();
    run(&root, &txid(1), &journal(&[begin(&txid(1))]));
    run(
        &root,
        &txid(2),
        &[journal(&[begin(&txid(2))]), p[..p.len() - 9].to_vec()].concat(),
    );
    // A run without a stage, one whose stage is nested 200 levels deep and one 2,000 entries wide.
    bare(&root, &txid(3), &journal(&[begin(&txid(3))]));
    let deep = run(&root, &txid(4), &journal(&[begin(&txid(4))]));
    fs::create_dir_all(deep.join("stage").join(["d"; 200].join("/"))).expect("deep");
    let wide = run(&root, &txid(5), &journal(&[begin(&txid(5))]));
    for i in 0..2000 {
        fs::write(wide.join(format!("stage/out/f{i}")), b"x").expect("wide");
    }
    // An empty journal, and a torn first line, with nothing else (a launcher stopped before
    // BEGIN), or with the empty stage a launcher makes.
    bare(&root, &txid(6), b"");
    bare(&root, &txid(7), &begin(&txid(7)).encode()[..40]);
    let staged = bare(&root, &txid(8), b"");
    fs::create_dir_all(staged.join("stage/in")).expect("in");
    fs::create_dir_all(staged.join("stage/out")).expect("out");
    // What a power cut before BEGIN was durable leaves (ext4 commits metadata on its own): the
    // run directory, a 0-byte journal, a copied input and an output. No complete record means no
    // target was touched (BEGIN is durable before the first temp file), so it is ABANDONED.
    run(&root, &txid(11), b"");
    // Symbolic links (never followed) and a hard link (the other name keeps the data) go as names.
    let outside = tmp.join("outside");
    fs::create_dir(&outside).expect("outside");
    fs::write(outside.join("data"), b"kept").expect("data");
    let linked = run(&root, &txid(10), &journal(&[begin(&txid(10))]));
    symlink(&outside, linked.join("stage/out/dirlink")).expect("symlink");
    symlink(outside.join("data"), linked.join("stage/in/filelink")).expect("symlink");
    fs::hard_link(outside.join("data"), linked.join("stage/out/hard")).expect("hard link");
    // An empty run directory: a removal stopped between the journal and the directory.
    fs::DirBuilder::new()
        .mode(0o700)
        .create(root.run_dir(&txid(9)))
        .expect("empty");

    let (code, report) = discard(&root, &[]);
    assert_eq!(code, 0, "{report:?}");
    assert_eq!(report.discarded, (1..=11).map(txid).collect::<Vec<_>>());
    assert_eq!(
        names(&outside),
        ["data"],
        "nothing outside the run was touched"
    );
    assert_eq!(fs::read(outside.join("data")).expect("data"), b"kept");
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

    run(
        &root,
        &txid(1),
        &journal(&[begin(&txid(1)), prepared_for(&txid(1))]),
    );
    run(
        &root,
        &txid(2),
        &journal(&[begin(&txid(2)), prepared_for(&txid(2)), committed()]),
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
    let sock = abandoned(5).join("stage/out/sock");
    std::os::unix::net::UnixListener::bind(&sock).expect("socket");
    fs::write(abandoned(6).join("extra"), b"x").expect("extra");
    // A directory owned by someone else, deep inside.
    let foreign_dir = abandoned(7).join("stage/out/sub/theirs");
    fs::create_dir(&foreign_dir).expect("mkdir");
    std::os::unix::fs::chown(&foreign_dir, Some(12345), Some(12345)).expect("chown");
    let foreign = abandoned(8).join("stage/out/a");
    std::os::unix::fs::chown(&foreign, Some(12345), Some(12345)).expect("chown");
    let open = abandoned(9);
    fs::set_permissions(&open, fs::Permissions::from_mode(0o770)).expect("chmod");
    let live = abandoned(10);
    let no_journal = root.run_dir(&txid(11));
    fs::create_dir_all(no_journal.join("stage")).expect("no journal");
    fs::set_permissions(&no_journal, fs::Permissions::from_mode(0o700)).expect("chmod");
    nix::unistd::mkfifo(
        &abandoned(12).join("stage/out/fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .expect("mkfifo");
    let setuid = abandoned(13).join("stage/out/a");
    fs::set_permissions(&setuid, fs::Permissions::from_mode(0o4700)).expect("setuid");
    // BEGIN names another run than its directory.
    run(&root, &txid(14), &journal(&[begin(&txid(99))]));
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
        (txid(5), State::Unrecognized, "stage/out/sock is a socket"),
        (
            txid(6),
            State::Unrecognized,
            "unexpected entry extra in the run directory",
        ),
        (
            txid(7),
            State::Unrecognized,
            "stage/out/sub/theirs is owned by uid 12345, not 0",
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
        (txid(14), State::Unrecognized, "BEGIN names run"),
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
    let next = |n: &str| testkit::bare(retained(&report, n).next.as_deref());
    assert_eq!(next(&txid(1)), Some(recover(1)));
    assert_eq!(next(&txid(2)), Some(recover(2)));
    assert_eq!(retained(&report, &txid(3)).next, None);

    // Once the lock is released, the live run (BEGIN only) is abandoned and goes; the rest stay.
    drop(lock);
    testkit::flock::released(&live);
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
    run(
        &root,
        &txid(2),
        &journal(&[begin(&txid(2)), prepared_for(&txid(2))]),
    );
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
    run(
        &root,
        &txid(2),
        &journal(&[begin(&txid(2)), prepared_for(&txid(2))]),
    );
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
    testkit::assert_kind!(testkit::decode_error(&out.stderr), Kind::NotARoot);

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
    testkit::assert_kind!(err, Kind::UnsafeTxn);
    assert_eq!(err.path, Some(root.txn().display().to_string()));
}

/// BEGIN of run `txid` naming `target`.
fn begin_into(txid: &str, target: &Path) -> proto::journal::Record {
    let mut r = begin(txid);
    if let proto::journal::Record::Begin { target: t, .. } = &mut r {
        *t = target.display().to_string();
    }
    r
}

/// A name `.dot-TXID-N.tmp` in the target that is not a temp file the run wrote (a symbolic link,
/// a directory, a hard link, a foreign file) is never removed, and neither is its run: it is
/// retained with what the operator must do, not with a `next` that can never finish. A real temp
/// file beside them goes with its run.
#[test]
fn an_odd_temp_in_the_target_retains_the_run_with_what_to_do() {
    let tmp = TempDir::new();
    let root = root(&tmp);
    let target = tmp.join("target");
    fs::create_dir(&target).expect("target");
    fs::write(target.join("keep"), b"keep").expect("keep");
    let temp = |n: u32| target.join(format!(".dot-{}-0.tmp", txid(n)));
    for n in 1..=5 {
        run(&root, &txid(n), &journal(&[begin_into(&txid(n), &target)]));
    }
    symlink(target.join("keep"), temp(1)).expect("symlink");
    fs::create_dir(temp(2)).expect("dir");
    fs::hard_link(target.join("keep"), temp(3)).expect("hard link");
    fs::write(temp(4), b"theirs").expect("foreign");
    std::os::unix::fs::chown(temp(4), Some(12345), Some(12345)).expect("chown");
    fs::write(temp(5), b"a temp file the run wrote").expect("temp");
    fs::write(target.join(format!(".dot-{}-1.tmp", txid(5))), b"another").expect("temp");

    let (code, report) = discard(&root, &[]);
    assert_eq!(code, 4, "{report:?}");
    assert_eq!(report.discarded, vec![txid(5)]);
    let odd = [
        (1, "is a symbolic link"),
        (2, "is a directory"),
        (3, "has 2 hard links"),
        (4, "is owned by uid 12345"),
    ];
    for (n, what) in odd {
        let r = retained(&report, &txid(n));
        assert_eq!(r.state, State::Abandoned, "{r:?}");
        assert_eq!(r.next, None, "no command finishes it: {r:?}");
        assert!(r.reason.contains(what), "{r:?}");
        assert!(
            r.reason.contains("remove or move it yourself"),
            "the reason says what to do: {r:?}"
        );
        assert!(fs::symlink_metadata(temp(n)).is_ok(), "{n}: never removed");
        assert!(root.run_dir(&txid(n)).exists());
    }
    assert_eq!(
        names(&target),
        [
            format!(".dot-{}-0.tmp", txid(1)),
            format!(".dot-{}-0.tmp", txid(2)),
            format!(".dot-{}-0.tmp", txid(3)),
            format!(".dot-{}-0.tmp", txid(4)),
            "keep".to_owned()
        ],
        "the run's own temp files went with it"
    );
    // The operator moves them away: the next discard finishes.
    for n in 1..=4 {
        let p = temp(n);
        if p.is_dir() && !p.is_symlink() {
            fs::remove_dir(&p).expect("rmdir");
        } else {
            fs::remove_file(&p).expect("rm");
        }
    }
    let (code, again) = discard(&root, &[]);
    assert_eq!((code, again.discarded), (0, (1..=4).map(txid).collect()));
}
