//! `dot-journal-fmt --root` lists every entry of `txn/`, odd ones included, as `dot-discard` and
//! `dot-launch recover` carry on past them: a file, a link, a fifo or a name that is not UTF-8
//! where a run directory should be is shown UNRECOGNIZED with the reason, and the listing goes on.
#![allow(clippy::unwrap_used)]

use assert_cmd::cargo::cargo_bin_cmd;
use journal_fmt::JournalReport;
use proto::journal::RunState;
use proto::Kind;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use testkit::journal::{encode, records};
use testkit::TempDir;

fn txid(n: u8) -> String {
    format!("{:032x}", n)
}

#[test]
fn every_entry_of_txn_is_listed_and_an_odd_one_does_not_stop_the_listing() {
    let d = TempDir::new();
    let root = testkit::make_root(&d.join("root"), true);
    let txn = root.txn();
    let begin = encode(&records(&txid(1))[..1]);
    testkit::journal::write_run(&root, &txid(1), &begin);
    fs::write(txn.join(txid(2)), b"a file where a run should be").unwrap();
    let elsewhere = d.join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    fs::write(elsewhere.join("journal"), &begin).unwrap();
    std::os::unix::fs::symlink(&elsewhere, txn.join(txid(3))).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(txn.join(txid(4)))
        .status()
        .unwrap();
    assert!(made.success());
    fs::create_dir_all(txn.join(txid(5)).join("journal")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        let private = fs::Permissions::from_mode(0o700);
        fs::set_permissions(txn.join(txid(5)), private).unwrap();
    }
    fs::create_dir(txn.join(OsStr::from_bytes(b"stray\xff"))).unwrap();
    testkit::journal::write_run(&root, &txid(6), &begin);

    let out = cargo_bin_cmd!("dot-journal-fmt")
        .args([
            OsStr::new("--json"),
            "--root".as_ref(),
            root.path().as_os_str(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
    let reports: Vec<JournalReport> = testkit::decode_json_lines(&out.stdout);
    let seen: Vec<(Option<String>, RunState, Option<String>)> = reports
        .into_iter()
        .map(|r| (r.txid, r.state, r.problem))
        .collect();
    // The reasons are dot-discard's and recover's: the same examination (`txn::run::peek`).
    let odd = |n: u8, problem: String| (Some(txid(n)), RunState::Unrecognized, Some(problem));
    assert_eq!(
        seen,
        [
            (Some(txid(1)), RunState::Abandoned, None),
            odd(2, "is a regular file, not a directory".to_owned()),
            odd(3, "is a symbolic link, not a directory".to_owned()),
            odd(4, "is a fifo, not a directory".to_owned()),
            odd(5, "journal is a directory".to_owned()),
            // BEGIN names run 1: UNRECOGNIZED, as recover and dot-discard read it.
            odd(
                6,
                format!(
                    "BEGIN names run \"{}\", not its directory {}",
                    txid(1),
                    txid(6)
                ),
            ),
            (
                None,
                RunState::Unrecognized,
                Some("not a transaction id".to_owned())
            ),
        ]
    );
    // The text form lists the same seven.
    let out = cargo_bin_cmd!("dot-journal-fmt")
        .args([OsStr::new("--root"), root.path().as_os_str()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.lines().filter(|l| l.starts_with("journal ")).count(),
        7,
        "{text}"
    );
}

#[test]
fn a_root_that_is_a_file_is_not_a_root_with_a_next_that_works() {
    let d = TempDir::new();
    let file = d.join("root");
    fs::write(&file, b"").unwrap();
    let out = cargo_bin_cmd!("dot-journal-fmt")
        .args([OsStr::new("--root"), file.as_os_str()])
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 2, Kind::NotARoot);
    assert_eq!(
        testkit::bare(e.next.as_deref()).as_deref(),
        Some("dot-register init --root DIR")
    );
    // A root that is only missing gets the init command for it.
    let missing = d.join("missing");
    let out = cargo_bin_cmd!("dot-journal-fmt")
        .args([OsStr::new("--root"), missing.as_os_str()])
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 2, Kind::NotARoot);
    assert_eq!(
        testkit::bare(e.next.as_deref()),
        Some(format!("dot-register init --root {}", missing.display()))
    );
}
