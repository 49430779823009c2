//! The publisher's commands: `entry new` prints the entry to sign, `publisher transition` the
//! rotation statement to sign; what they print is what `add` and `publisher rotate` accept.
#![allow(clippy::unwrap_used)]

mod common;

use common::reg;
use proto::trust::KeyTransition;
use proto::{Containment, Entry, InputKind, Kind, Publisher, Sha256, Trust};
use std::ffi::OsStr;
use std::fs;
use std::path::Path;
use std::process::Output;
use testkit::{KeyPair, TempDir};

/// `dot-register entry new` for `exe` with the given containment and extra options.
fn entry_new(exe: &Path, containment: &str, extra: &[&str]) -> Output {
    let fixed = [
        "entry",
        "new",
        "--name",
        "greet",
        "--publisher",
        "acme",
        "--version",
        "1.2.3",
        "--containment",
        containment,
        "--exe",
    ];
    let mut args: Vec<&OsStr> = fixed.iter().map(OsStr::new).collect();
    args.push(exe.as_os_str());
    args.extend(extra.iter().map(OsStr::new));
    reg(args)
}

/// A root trusting publisher acme (key `key`); its path.
fn root_with(dir: &TempDir, key: &KeyPair) -> String {
    let root = common::root_trusting_acme(dir.path(), key);
    root.path().to_str().unwrap().to_owned()
}

#[test]
fn entry_new_prints_the_entry_of_the_file_that_add_then_accepts() {
    let dir = TempDir::new();
    let exe = testkit::static_fixture("hello");
    let bytes = fs::read(&exe).unwrap();
    let out = entry_new(
        &exe,
        "process",
        &[
            "--input",
            "who:string",
            "--input",
            "data:file:optional",
            "--expires",
            "2030-01-01",
            "--env",
            "RUST_BACKTRACE",
            "--env",
            "RUST_LOG",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stderr.is_empty());
    let entry = Entry::parse(&out.stdout).expect("a valid entry");
    assert_eq!(
        out.stdout,
        entry.to_bytes(),
        "printed exactly as it is signed"
    );
    assert_eq!(entry.sha256, Sha256::of(&bytes));
    assert_eq!(entry.size, bytes.len() as u64);
    assert_eq!(entry.trust, Trust::Signed);
    assert_eq!(entry.publisher.as_ref().map(|p| p.as_str()), Some("acme"));
    assert_eq!(entry.containment, Containment::Process);
    assert_eq!(entry.version, semver::Version::new(1, 2, 3));
    assert_eq!(entry.expires, Some(1_893_456_000));
    let env: Vec<&str> = entry.env.iter().map(|n| n.as_str()).collect();
    assert_eq!(env, ["RUST_BACKTRACE", "RUST_LOG"]);
    let inputs: Vec<(&str, InputKind, bool)> = entry
        .inputs
        .iter()
        .map(|i| (i.name.as_str(), i.kind, i.required))
        .collect();
    assert_eq!(
        inputs,
        [
            ("who", InputKind::String, true),
            ("data", InputKind::File, false)
        ]
    );

    // Signed by the publisher's key, it is what `add` registers.
    let key = KeyPair::generate();
    let r = root_with(&dir, &key);
    let entry_path = dir.join("greet.json");
    fs::write(&entry_path, &out.stdout).unwrap();
    let sig = key.sign_file(&entry_path, true);
    let added = reg([
        OsStr::new("add"),
        "--root".as_ref(),
        r.as_ref(),
        "--entry".as_ref(),
        entry_path.as_os_str(),
        "--signature".as_ref(),
        sig.as_os_str(),
        "--exe".as_ref(),
        exe.as_os_str(),
    ]);
    let report: register::report::AddReport = testkit::assert_ok(&added);
    assert_eq!(report.sha256, entry.sha256);
}

#[test]
fn entry_new_refuses_what_add_would_refuse() {
    let dir = TempDir::new();
    // A process plugin must be a static ELF: a script is not.
    let script = testkit::write_exe(dir.path(), "greet.sh", testkit::SCRIPT, 0o755);
    testkit::assert_refused(&entry_new(&script, "process", &[]), 1, Kind::NotStaticElf);
    // At audit the script is an entry like any other (the operator grants --allow-dynamic).
    let out = entry_new(&script, "audit", &[]);
    assert_eq!(
        Entry::parse(&out.stdout).unwrap().sha256,
        Sha256::of(testkit::SCRIPT)
    );
    // Bad options are usage-class refusals naming the value.
    let e = testkit::assert_refused(
        &entry_new(&script, "audit", &["--input", "who:number"]),
        2,
        Kind::EntryMalformed,
    );
    assert_eq!(e.value.as_deref(), Some("who:number"));
    let e = testkit::assert_refused(
        &entry_new(&dir.join("missing"), "audit", &[]),
        2,
        Kind::FileMissing,
    );
    assert!(e.path.unwrap().ends_with("missing"));
}

#[test]
fn the_transition_statement_signed_by_the_current_key_is_what_rotate_accepts() {
    let dir = TempDir::new();
    let key = KeyPair::generate();
    let r = root_with(&dir, &key);
    let new_key = KeyPair::generate();
    let new_pk = new_key.pk_path(dir.path());
    let out = reg([
        OsStr::new("publisher"),
        "transition".as_ref(),
        "--id".as_ref(),
        "acme".as_ref(),
        "--pubkey".as_ref(),
        new_pk.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stmt = KeyTransition::parse(&out.stdout).expect("a valid statement");
    assert_eq!(
        out.stdout,
        stmt.to_bytes(),
        "printed exactly as it is signed"
    );
    assert_eq!(stmt.publisher.as_str(), "acme");
    assert_eq!(stmt.new_key_id, new_key.key_id());
    assert_eq!(stmt.new_public_key, new_key.public_key_b64());

    let stmt_path = dir.join("rotate.json");
    fs::write(&stmt_path, &out.stdout).unwrap();
    let rotate = |sig_path: &Path| {
        reg([
            OsStr::new("publisher"),
            "rotate".as_ref(),
            "--root".as_ref(),
            r.as_ref(),
            "--id".as_ref(),
            "acme".as_ref(),
            "--pubkey".as_ref(),
            new_pk.as_os_str(),
            "--transition".as_ref(),
            sig_path.as_os_str(),
        ])
    };
    // Signed by the new key itself it proves nothing.
    fs::write(dir.join("self.json"), &out.stdout).unwrap();
    let self_signed = new_key.sign_file(&dir.join("self.json"), true);
    testkit::assert_refused(&rotate(&self_signed), 1, Kind::SignatureInvalid);
    let sig = key.sign_file(&stmt_path, true);
    let p: Publisher = testkit::assert_ok(&rotate(&sig));
    let ids: Vec<&str> = p.keys.iter().map(|k| k.key_id.as_str()).collect();
    assert_eq!(ids, [key.key_id().as_str(), new_key.key_id().as_str()]);
}
