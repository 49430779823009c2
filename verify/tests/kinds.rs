//! Kinds and messages that match docs/errors.md: a document that is not a regular file, a file
//! that does not exist, a garbled key inside a publisher record, publisher names shown as names,
//! and a root path that is not a directory (with a `next` command that works).
#![allow(clippy::unwrap_used)]

use assert_cmd::cargo::cargo_bin_cmd;
use proto::layout::Root;
use proto::{Containment, Kind, Name};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use testkit::{KeyPair, TempDir};

fn verify<I: AsRef<OsStr>>(args: impl IntoIterator<Item = I>) -> Output {
    cargo_bin_cmd!("dot-verify").args(args).output().unwrap()
}

fn entry(root: &Path, name: &str) -> Output {
    verify([
        OsStr::new("entry"),
        "--root".as_ref(),
        root.as_os_str(),
        name.as_ref(),
    ])
}

#[test]
fn a_key_signature_or_signed_file_that_is_not_a_regular_file_is_document_not_regular() {
    let d = TempDir::new();
    let key = KeyPair::generate();
    let file = d.join("signed");
    fs::write(&file, b"bytes").unwrap();
    let sig = key.sign_file(&file, true);
    let pk = key.pk_path(d.path());
    for (odd, what) in testkit::odd_files(d.path(), &file) {
        for slot in 0..3 {
            let mut paths = [pk.clone(), sig.clone(), file.clone()];
            paths[slot] = odd.clone();
            let out = verify([
                OsStr::new("signature"),
                "--pubkey".as_ref(),
                paths[0].as_os_str(),
                "--signature".as_ref(),
                paths[1].as_os_str(),
                paths[2].as_os_str(),
            ]);
            let e = testkit::assert_refused(&out, 2, Kind::DocumentNotRegular);
            assert_eq!(e.path, Some(odd.display().to_string()), "slot {slot}");
            assert!(e.message.contains(what), "{}", e.message);
        }
    }
}

#[test]
fn a_missing_file_is_file_missing_exit_2_not_io() {
    let d = TempDir::new();
    let missing = d.join("missing");
    let e = testkit::assert_refused(
        &verify([OsStr::new("digest"), missing.as_os_str()]),
        2,
        Kind::FileMissing,
    );
    assert_eq!(e.path, Some(missing.display().to_string()));
    let key = KeyPair::generate();
    let e = testkit::assert_refused(
        &verify([
            OsStr::new("signature"),
            "--pubkey".as_ref(),
            key.pk_path(d.path()).as_os_str(),
            "--signature".as_ref(),
            missing.as_os_str(),
            missing.as_os_str(),
        ]),
        2,
        Kind::FileMissing,
    );
    assert_eq!(e.path, Some(missing.display().to_string()));
}

/// A signed root with `hello` signed by `signer`, and publisher `acme` as `record` makes it.
fn signed_root(d: &TempDir, signer: &KeyPair, record: impl FnOnce(&mut proto::Publisher)) -> Root {
    let root = testkit::make_root(&d.join("root"), false);
    let exe = testkit::workspace_bin("hello");
    let e = testkit::entry_for("hello", &exe, Containment::Audit, Some("acme"));
    let bytes = e.to_bytes();
    let sig = signer.sign(&bytes, true);
    testkit::install_entry(&root, "hello", &bytes, Some(&sig), &fs::read(&exe).unwrap());
    let mut p = testkit::publisher_record("acme", &[signer]);
    record(&mut p);
    let path = root.publisher(&Name::new("acme").unwrap());
    fs::write(&path, p.to_bytes()).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    root
}

#[test]
fn a_garbled_key_in_a_publisher_record_is_publisher_malformed() {
    let d = TempDir::new();
    let key = KeyPair::generate();
    let root = signed_root(&d, &key, |p| p.keys[0].public_key = "garbage".to_owned());
    let e = testkit::assert_refused(&entry(root.path(), "hello"), 2, Kind::PublisherMalformed);
    assert_eq!(e.field.as_deref(), Some("keys.public_key"));
    assert_eq!(
        e.path,
        Some(
            root.publisher(&Name::new("acme").unwrap())
                .display()
                .to_string()
        )
    );
    assert!(e.message.contains(&key.key_id()), "{}", e.message);
}

#[test]
fn publisher_names_read_as_names_in_messages() {
    // Signed by a key the publisher does not have.
    let d = TempDir::new();
    let root = signed_root(&d, &KeyPair::generate(), |p| {
        *p = testkit::publisher_record("acme", &[&KeyPair::generate()]);
    });
    let e = testkit::assert_refused(&entry(root.path(), "hello"), 1, Kind::SignatureInvalid);
    assert!(e.message.contains("publisher \"acme\""), "{}", e.message);
    assert!(!e.message.contains("Name("), "{}", e.message);
    // A record whose id is not its file's name.
    let d = TempDir::new();
    let key = KeyPair::generate();
    let root = signed_root(&d, &key, |p| p.id = Name::new("other").unwrap());
    let e = testkit::assert_refused(&entry(root.path(), "hello"), 2, Kind::PublisherMalformed);
    assert_eq!(e.field.as_deref(), Some("id"));
    assert!(
        e.message.contains("named for \"acme\" but says \"other\""),
        "{}",
        e.message
    );
}

/// Runs a `next` command with the workspace's binaries first on PATH.
fn run_next(next: &str) -> Output {
    let bins = testkit::workspace_bin("dot-register")
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bins.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("sh")
        .args(["-c", next])
        .env("PATH", path)
        .output()
        .unwrap()
}

#[test]
fn a_root_that_is_a_regular_file_suggests_a_root_elsewhere_that_works() {
    let d = TempDir::new();
    let file = d.join("root");
    fs::write(&file, b"").unwrap();
    let e = testkit::assert_refused(&entry(&file, "hello"), 1, Kind::RootMissing);
    assert_eq!(e.path, Some(file.display().to_string()));
    assert!(e.message.contains("regular file"), "{}", e.message);
    let next = e.next.unwrap();
    assert_eq!(
        testkit::bare(Some(&next)).as_deref(),
        Some("dot-register init --root DIR")
    );
    // DIR is for the operator to fill in; filled in, the command works.
    let dir = d.join("elsewhere");
    let out = run_next(&next.replace("DIR", dir.to_str().unwrap()));
    assert!(out.status.success(), "{out:?}");
    assert!(dir.join("txn").is_dir());
}

#[test]
fn a_root_whose_parent_is_missing_suggests_a_command_that_works() {
    let d = TempDir::new();
    let root = d.join("a/b/root");
    let e = testkit::assert_refused(&entry(&root, "hello"), 1, Kind::RootMissing);
    let next = e.next.unwrap();
    assert!(next.starts_with("mkdir -p "), "{next}");
    let out = run_next(&next);
    assert!(out.status.success(), "{out:?}");
    // And now the root is there: the entry is what is missing.
    testkit::assert_refused(&entry(&root, "hello"), 1, Kind::EntryMissing);
    // A root that is only missing (its parent exists) gets `init` alone, which works.
    let root = d.join("plain");
    let e = testkit::assert_refused(&entry(&root, "hello"), 1, Kind::RootMissing);
    let next = e.next.unwrap();
    assert_eq!(
        testkit::bare(Some(&next)),
        Some(format!("dot-register init --root {}", root.display()))
    );
    assert!(run_next(&next).status.success());
}
