//! What `dot-register` says about the files it is given: a document that is not a regular file
//! is `document-not-regular` (not an executable's kind), a missing file is `file-missing` (exit 2,
//! not a system error), an entry built from `dev` options is named as such, and publisher names
//! read as names.
#![allow(clippy::unwrap_used)]

use assert_cmd::cargo::cargo_bin_cmd;
use proto::layout::Root;
use proto::{Containment, Kind};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use testkit::{KeyPair, TempDir};

fn reg(args: &[&OsStr]) -> Output {
    cargo_bin_cmd!("dot-register").args(args).output().unwrap()
}

/// A signed root trusting `acme` with `key`, and in `d`: a signed entry for hello, its signature
/// and hello itself.
struct Fx {
    d: TempDir,
    root: Root,
    key: KeyPair,
    entry: PathBuf,
    sig: PathBuf,
    exe: PathBuf,
}

fn fx() -> Fx {
    let d = TempDir::new();
    let root = testkit::make_root(&d.join("root"), false);
    let key = KeyPair::generate();
    testkit::install_publisher(&root, &testkit::publisher_record("acme", &[&key]));
    let exe = testkit::workspace_bin("hello");
    let entry = d.join("hello.json");
    let e = testkit::entry_for("hello", &exe, Containment::Audit, Some("acme"));
    fs::write(&entry, e.to_bytes()).unwrap();
    let sig = key.sign_file(&entry, true);
    Fx {
        d,
        root,
        key,
        entry,
        sig,
        exe,
    }
}

impl Fx {
    fn add(&self, entry: &Path, sig: &Path, exe: &Path) -> Output {
        reg(&[
            "add".as_ref(),
            "--root".as_ref(),
            self.root.path().as_os_str(),
            "--entry".as_ref(),
            entry.as_os_str(),
            "--signature".as_ref(),
            sig.as_os_str(),
            "--exe".as_ref(),
            exe.as_os_str(),
        ])
    }
}

#[test]
fn an_entry_or_signature_that_is_not_a_regular_file_is_document_not_regular() {
    let f = fx();
    for (odd, _) in testkit::odd_files(f.d.path(), &f.entry) {
        for (entry, sig) in [(&odd, &f.sig), (&f.entry, &odd)] {
            let e =
                testkit::assert_refused(&f.add(entry, sig, &f.exe), 2, Kind::DocumentNotRegular);
            assert_eq!(e.path, Some(odd.display().to_string()));
        }
    }
    // The executable keeps its own kinds.
    let e = testkit::assert_refused(
        &f.add(&f.entry, &f.sig, &f.d.join("dir")),
        1,
        Kind::ExeNotRegular,
    );
    assert_eq!(e.path, Some(f.d.join("dir").display().to_string()));
    // Nothing was registered.
    assert_eq!(fs::read_dir(f.root.plugins()).unwrap().count(), 0);
}

#[test]
fn a_public_key_or_statement_that_is_not_a_regular_file_is_document_not_regular() {
    let f = fx();
    let pk = f.key.pk_path(f.d.path());
    for (odd, _) in testkit::odd_files(f.d.path(), &pk) {
        let root = f.root.path().as_os_str();
        let e = testkit::assert_refused(
            &reg(&[
                "publisher".as_ref(),
                "add".as_ref(),
                "--root".as_ref(),
                root,
                "--id".as_ref(),
                "beta".as_ref(),
                "--pubkey".as_ref(),
                odd.as_os_str(),
            ]),
            2,
            Kind::DocumentNotRegular,
        );
        assert_eq!(e.path, Some(odd.display().to_string()));
        let next = KeyPair::generate().pk_path(f.d.path());
        let e = testkit::assert_refused(
            &reg(&[
                "publisher".as_ref(),
                "rotate".as_ref(),
                "--root".as_ref(),
                root,
                "--id".as_ref(),
                "acme".as_ref(),
                "--pubkey".as_ref(),
                next.as_os_str(),
                "--transition".as_ref(),
                odd.as_os_str(),
            ]),
            2,
            Kind::DocumentNotRegular,
        );
        assert_eq!(e.path, Some(odd.display().to_string()));
    }
}

#[test]
fn a_missing_file_is_file_missing_exit_2() {
    let f = fx();
    let missing = f.d.join("missing");
    for (entry, sig, exe) in [
        (&missing, &f.sig, &f.exe),
        (&f.entry, &missing, &f.exe),
        (&f.entry, &f.sig, &missing),
    ] {
        let e = testkit::assert_refused(&f.add(entry, sig, exe), 2, Kind::FileMissing);
        assert_eq!(e.path, Some(missing.display().to_string()));
    }
    let dev = TempDir::new();
    let root = testkit::make_root(&dev.join("root"), true);
    let e = testkit::assert_refused(
        &reg(&[
            "dev".as_ref(),
            "--root".as_ref(),
            root.path().as_os_str(),
            "--name".as_ref(),
            "hello".as_ref(),
            "--exe".as_ref(),
            missing.as_os_str(),
            "--containment".as_ref(),
            "audit".as_ref(),
        ]),
        2,
        Kind::FileMissing,
    );
    assert_eq!(e.path, Some(missing.display().to_string()));
}

#[test]
fn a_dev_entry_that_is_not_valid_is_named_as_built_from_the_options() {
    let d = TempDir::new();
    let root = testkit::make_root(&d.join("root"), true);
    let exe = testkit::workspace_bin("hello");
    for (option, value, field) in [
        ("--protocol", "garbage", "protocol"),
        ("--input", "x:string", "inputs"),
    ] {
        let mut args: Vec<OsString> = [
            "dev",
            "--root",
            root.path().to_str().unwrap(),
            "--name",
            "hello",
            "--exe",
            exe.to_str().unwrap(),
            "--containment",
            "audit",
            option,
            value,
        ]
        .iter()
        .map(OsString::from)
        .collect();
        if option == "--input" {
            // Declared twice.
            args.extend(["--input", "x:file"].map(OsString::from));
        }
        let out = cargo_bin_cmd!("dot-register").args(&args).output().unwrap();
        let e = testkit::assert_refused(&out, 2, Kind::EntryMalformed);
        assert_eq!(e.field.as_deref(), Some(field));
        assert!(
            e.message
                .starts_with("the entry built from the options is not a valid entry: "),
            "{}",
            e.message
        );
        assert_eq!(e.path, None);
    }
}

#[test]
fn a_different_key_under_a_known_key_id_names_the_publisher_as_a_name() {
    let f = fx();
    // The record holds another key under this key's id.
    let mut record = testkit::publisher_record("acme", &[&f.key]);
    record.keys[0].public_key = KeyPair::generate().public_key_b64();
    testkit::install_publisher(&f.root, &record);
    let pk = f.key.pk_path(f.d.path());
    let e = testkit::assert_refused(
        &reg(&[
            "publisher".as_ref(),
            "add".as_ref(),
            "--root".as_ref(),
            f.root.path().as_os_str(),
            "--id".as_ref(),
            "acme".as_ref(),
            "--pubkey".as_ref(),
            pk.as_os_str(),
        ]),
        2,
        Kind::PubkeyMalformed,
    );
    assert_eq!(e.path, Some(pk.display().to_string()));
    assert!(
        e.message.contains("publisher \"acme\" already has"),
        "{}",
        e.message
    );
    assert!(!e.message.contains("Name("), "{}", e.message);
}
