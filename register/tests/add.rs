//! `dot-register add`: signed registration. Every refusal is its own test; each asserts the exit
//! code, the error kind, and that the root was not changed at all.
#![allow(clippy::unwrap_used)]

mod common;

use common::reg;
use proto::layout::Root;
use proto::{Containment, ErrorObject, Kind, Name, Sha256, Trust};
use register::report::{AddReport, ListItem};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;
use testkit::{KeyPair, TempDir};

const EXE: &[u8] = b"\x7fELF-ish bytes of an audit plugin\n";

/// A root made by `dot-register init`, publisher `acme` added by `dot-register publisher add`.
struct Fx {
    dir: TempDir,
    root: Root,
    key: KeyPair,
}

fn fx() -> Fx {
    let dir = TempDir::new();
    let key = KeyPair::generate();
    let root = common::root_trusting_acme(dir.path(), &key);
    fs::create_dir(dir.join("in")).unwrap();
    Fx { dir, root, key }
}

impl Fx {
    fn r(&self) -> &str {
        self.root.path().to_str().unwrap()
    }

    /// Writes the entry bytes, a signature over `signed` by `key`, and the exe into `in/`.
    fn inputs(&self, entry: &[u8], sig: &[u8], exe: &[u8]) -> (PathBuf, PathBuf, PathBuf) {
        let e = self.dir.join("in/hello.json");
        let s = self.dir.join("in/hello.json.minisig");
        fs::write(&e, entry).unwrap();
        fs::write(&s, sig).unwrap();
        let x = testkit::write_exe(&self.dir.join("in"), "hello", exe, 0o755);
        (e, s, x)
    }

    fn add_paths(&self, e: &Path, s: &Path, x: &Path, extra: &[&str]) -> Output {
        let mut args: Vec<&OsStr> = vec![
            "add".as_ref(),
            "--root".as_ref(),
            self.r().as_ref(),
            "--entry".as_ref(),
            e.as_os_str(),
            "--signature".as_ref(),
            s.as_os_str(),
            "--exe".as_ref(),
            x.as_os_str(),
        ];
        args.extend(extra.iter().map(|a| OsStr::new(*a)));
        // The fixture bytes are not a static ELF: an audit entry of them needs the owner's grant.
        args.push("--allow-dynamic".as_ref());
        reg(args)
    }

    /// Signs `entry` with acme's key and runs `add`.
    fn add(&self, entry: &proto::Entry, exe: &[u8], extra: &[&str]) -> Output {
        let bytes = entry.to_bytes();
        let (e, s, x) = self.inputs(&bytes, &self.key.sign(&bytes, true), exe);
        self.add_paths(&e, &s, &x, extra)
    }

    /// Asserts `out` is the refusal and the root is exactly as in `before`.
    fn refused(
        &self,
        before: &std::collections::BTreeMap<PathBuf, testkit::NodeFacts>,
        out: &Output,
        code: i32,
        kind: Kind,
    ) -> ErrorObject {
        let e = testkit::assert_refused(out, code, kind);
        assert_eq!(
            *before,
            testkit::tree_snapshot(self.root.path()),
            "root changed"
        );
        e
    }

    fn snap(&self) -> std::collections::BTreeMap<PathBuf, testkit::NodeFacts> {
        testkit::tree_snapshot(self.root.path())
    }
}

fn entry(containment: Containment, exe: &[u8]) -> proto::Entry {
    testkit::entry_for_bytes("hello", exe, containment, Some("acme"))
}

fn hello() -> Name {
    Name::new("hello").unwrap()
}

// ---- accepted ----------------------------------------------------------------------------------

fn registers(prehashed: bool) {
    let fx = fx();
    let entry = entry(Containment::Audit, EXE);
    let bytes = entry.to_bytes();
    let sig = fx.key.sign(&bytes, prehashed);
    let (e, s, x) = fx.inputs(&bytes, &sig, EXE);
    let report: AddReport = testkit::assert_ok(&fx.add_paths(&e, &s, &x, &[]));
    assert_eq!(report.name, hello());
    assert_eq!(report.trust, Trust::Signed);
    assert_eq!(report.key_id, Some(fx.key.key_id()));
    assert_eq!(report.sha256, Sha256::of(EXE));
    assert!(!report.replaced);
    let store = fx.root.store_file(&Sha256::of(EXE));
    assert_eq!(report.store, store.display().to_string());
    assert_eq!(fs::read(&store).unwrap(), EXE);
    assert_eq!(fs::metadata(&store).unwrap().mode() & 0o7777, 0o555);
    assert_eq!(fs::read(fx.root.entry(&hello())).unwrap(), bytes);
    assert_eq!(fs::read(fx.root.entry_sig(&hello())).unwrap(), sig);
    assert_eq!(
        fs::metadata(fx.root.entry(&hello())).unwrap().mode() & 0o777,
        0o600
    );
    let v = verify::entry::verify_entry(&fx.root, &hello()).unwrap();
    assert_eq!(v.entry, entry);
}

#[test]
fn registers_signed_entry_and_pins_the_executable() {
    registers(true);
}

#[test]
fn registers_entry_with_legacy_signature() {
    registers(false);
}

#[test]
fn registers_static_executable_for_process() {
    let fx = fx();
    let exe = fs::read(testkit::static_fixture("hello")).unwrap();
    let report: AddReport =
        testkit::assert_ok(&fx.add(&entry(Containment::Process, &exe), &exe, &[]));
    assert_eq!(report.containment, Containment::Process);
    let v = verify::entry::verify_entry(&fx.root, &hello()).unwrap();
    assert!(v.elf.is_some());
}

#[test]
fn replaces_with_replace_and_keeps_the_old_pinned_copy() {
    let fx = fx();
    testkit::assert_ok::<AddReport>(&fx.add(&entry(Containment::Audit, EXE), EXE, &[]));
    let mut newer = entry(Containment::Audit, b"#!/bin/sh\n# version two\n");
    newer.version = semver::Version::new(2, 0, 0);
    let report: AddReport =
        testkit::assert_ok(&fx.add(&newer, b"#!/bin/sh\n# version two\n", &["--replace"]));
    assert!(report.replaced);
    assert_eq!(
        verify::entry::verify_entry(&fx.root, &hello())
            .unwrap()
            .entry,
        newer
    );
    assert!(fx.root.store_file(&Sha256::of(EXE)).exists());
}

#[test]
fn accepts_downgrade_with_allow_downgrade() {
    let fx = fx();
    let mut e = entry(Containment::Audit, EXE);
    e.version = semver::Version::new(2, 0, 0);
    testkit::assert_ok::<AddReport>(&fx.add(&e, EXE, &[]));
    e.version = semver::Version::new(1, 0, 0);
    let out = fx.add(&e, EXE, &["--replace", "--allow-downgrade"]);
    let report: AddReport = testkit::assert_ok(&out);
    assert_eq!(report.version, semver::Version::new(1, 0, 0));
}

#[test]
fn reuses_an_existing_pinned_copy_without_rewriting_it() {
    let fx = fx();
    testkit::assert_ok::<AddReport>(&fx.add(&entry(Containment::Audit, EXE), EXE, &[]));
    let store = fx.root.store_file(&Sha256::of(EXE));
    let ino = fs::metadata(&store).unwrap().ino();
    let mut again = entry(Containment::Audit, EXE);
    again.version = semver::Version::new(1, 0, 1);
    testkit::assert_ok::<AddReport>(&fx.add(&again, EXE, &["--replace"]));
    assert_eq!(fs::metadata(&store).unwrap().ino(), ino);
}

// ---- refusals: the executable ------------------------------------------------------------------

#[test]
fn refuses_symlinked_exe() {
    let fx = fx();
    let entry = entry(Containment::Audit, EXE);
    let bytes = entry.to_bytes();
    let (e, s, x) = fx.inputs(&bytes, &fx.key.sign(&bytes, true), EXE);
    let link = fx.dir.join("in/link");
    std::os::unix::fs::symlink(&x, &link).unwrap();
    let before = fx.snap();
    let err = fx.refused(
        &before,
        &fx.add_paths(&e, &s, &link, &[]),
        1,
        Kind::ExeSymlink,
    );
    assert_eq!(err.path, Some(link.display().to_string()));
}

#[test]
fn refuses_non_regular_exe() {
    let fx = fx();
    let entry = entry(Containment::Audit, EXE);
    let bytes = entry.to_bytes();
    let (e, s, _) = fx.inputs(&bytes, &fx.key.sign(&bytes, true), EXE);
    let before = fx.snap();
    let out = fx.add_paths(&e, &s, &fx.dir.join("in"), &[]);
    fx.refused(&before, &out, 1, Kind::ExeNotRegular);
}

#[test]
fn refuses_setuid_exe() {
    let fx = fx();
    let entry = entry(Containment::Audit, EXE);
    let bytes = entry.to_bytes();
    let (e, s, x) = fx.inputs(&bytes, &fx.key.sign(&bytes, true), EXE);
    fs::set_permissions(&x, fs::Permissions::from_mode(0o4755)).unwrap();
    let before = fx.snap();
    fx.refused(&before, &fx.add_paths(&e, &s, &x, &[]), 1, Kind::ExeSetid);
}

#[test]
fn refuses_setgid_exe() {
    let fx = fx();
    let entry = entry(Containment::Audit, EXE);
    let bytes = entry.to_bytes();
    let (e, s, x) = fx.inputs(&bytes, &fx.key.sign(&bytes, true), EXE);
    fs::set_permissions(&x, fs::Permissions::from_mode(0o2755)).unwrap();
    let before = fx.snap();
    fx.refused(&before, &fx.add_paths(&e, &s, &x, &[]), 1, Kind::ExeSetid);
}

#[test]
fn refuses_size_mismatch() {
    let fx = fx();
    let mut e = entry(Containment::Audit, EXE);
    e.size += 1;
    let before = fx.snap();
    let err = fx.refused(&before, &fx.add(&e, EXE, &[]), 1, Kind::SizeMismatch);
    assert_eq!(err.value, Some(EXE.len().to_string()));
}

#[test]
fn refuses_digest_mismatch() {
    let fx = fx();
    let mut other = EXE.to_vec();
    other[3] ^= 0x20;
    let e = entry(Containment::Audit, &other);
    let before = fx.snap();
    let err = fx.refused(&before, &fx.add(&e, EXE, &[]), 1, Kind::DigestMismatch);
    assert_eq!(err.value, Some(Sha256::of(EXE).to_hex()));
}

#[test]
fn refuses_dynamic_exe_as_process() {
    let fx = fx();
    let exe = fs::read("/bin/true").unwrap();
    let before = fx.snap();
    let out = fx.add(&entry(Containment::Process, &exe), &exe, &[]);
    fx.refused(&before, &out, 1, Kind::NotStaticElf);
}

#[test]
fn refuses_script_as_process() {
    let fx = fx();
    let before = fx.snap();
    let out = fx.add(
        &entry(Containment::Process, testkit::SCRIPT),
        testkit::SCRIPT,
        &[],
    );
    fx.refused(&before, &out, 1, Kind::NotStaticElf);
}

// ---- refusals: the entry -----------------------------------------------------------------------

fn refuses_malformed(edit: impl FnOnce(&mut serde_json::Value), field: Option<&str>) {
    let fx = fx();
    let mut v = serde_json::to_value(entry(Containment::Audit, EXE)).unwrap();
    edit(&mut v);
    let bytes = serde_json::to_vec_pretty(&v).unwrap();
    let (e, s, x) = fx.inputs(&bytes, &fx.key.sign(&bytes, true), EXE);
    let before = fx.snap();
    let err = fx.refused(
        &before,
        &fx.add_paths(&e, &s, &x, &[]),
        2,
        Kind::EntryMalformed,
    );
    assert_eq!(err.field.as_deref(), field, "{err:?}");
}

#[test]
fn refuses_unknown_entry_field() {
    refuses_malformed(|v| v["extra"] = 1.into(), Some("extra"));
}

#[test]
fn refuses_missing_entry_field() {
    refuses_malformed(
        |v| {
            v.as_object_mut().unwrap().remove("sha256");
        },
        Some("sha256"),
    );
}

#[test]
fn refuses_mistyped_entry_field() {
    refuses_malformed(|v| v["inputs"] = "name".into(), Some("inputs"));
}

#[test]
fn refuses_unknown_containment() {
    refuses_malformed(|v| v["containment"] = "vm".into(), Some("containment"));
}

#[test]
fn refuses_unparsable_protocol_requirement() {
    refuses_malformed(|v| v["protocol"] = ">=banana".into(), Some("protocol"));
}

#[test]
fn refuses_duplicate_input_names() {
    refuses_malformed(
        |v| {
            v["inputs"] = serde_json::json!([
                {"name": "x", "kind": "string", "required": true},
                {"name": "x", "kind": "string", "required": true}
            ])
        },
        Some("inputs"),
    );
}

#[test]
fn refuses_bad_names_in_entry() {
    let long = "x".repeat(65);
    for bad in ["../x", "a/b", "", ".", "Hello", long.as_str()] {
        refuses_malformed(|v| v["name"] = bad.into(), Some("name"));
    }
}

#[test]
fn refuses_local_entry() {
    let fx = fx();
    let e = testkit::entry_for_bytes("hello", EXE, Containment::Audit, None);
    let before = fx.snap();
    let err = fx.refused(&before, &fx.add(&e, EXE, &[]), 1, Kind::LocalEntryInAdd);
    assert!(testkit::bare(err.next.as_deref())
        .unwrap()
        .starts_with("dot-register dev"));
}

// ---- refusals: trust ---------------------------------------------------------------------------

#[test]
fn refuses_publisher_not_in_trust_store() {
    let fx = fx();
    let e = testkit::entry_for_bytes("hello", EXE, Containment::Audit, Some("stranger"));
    let before = fx.snap();
    let err = fx.refused(&before, &fx.add(&e, EXE, &[]), 1, Kind::PublisherUnknown);
    assert!(testkit::bare(err.next.as_deref())
        .unwrap()
        .starts_with("dot-register publisher add"));
}

#[test]
fn refuses_revoked_publisher() {
    let fx = fx();
    testkit::assert_ok::<proto::Publisher>(&reg([
        "publisher",
        "revoke",
        "--root",
        fx.r(),
        "--id",
        "acme",
        "--reason",
        "compromised",
    ]));
    let before = fx.snap();
    let out = fx.add(&entry(Containment::Audit, EXE), EXE, &[]);
    fx.refused(&before, &out, 1, Kind::PublisherRevoked);
}

#[test]
fn refuses_revoked_key() {
    let fx = fx();
    let kid = fx.key.key_id();
    testkit::assert_ok::<proto::Publisher>(&reg([
        "publisher",
        "revoke",
        "--root",
        fx.r(),
        "--id",
        "acme",
        "--reason",
        "rotated",
        "--key",
        &kid,
    ]));
    let before = fx.snap();
    let out = fx.add(&entry(Containment::Audit, EXE), EXE, &[]);
    fx.refused(&before, &out, 1, Kind::KeyRevoked);
}

#[test]
fn refuses_signature_by_another_key() {
    let fx = fx();
    let bytes = entry(Containment::Audit, EXE).to_bytes();
    let (e, s, x) = fx.inputs(&bytes, &KeyPair::generate().sign(&bytes, true), EXE);
    let before = fx.snap();
    let err = fx.refused(
        &before,
        &fx.add_paths(&e, &s, &x, &[]),
        1,
        Kind::SignatureInvalid,
    );
    assert_eq!(err.path, Some(s.display().to_string()));
}

fn refuses_changed_after_signing(edit: impl FnOnce(&mut proto::Entry), exe: &[u8]) {
    let fx = fx();
    let original = entry(Containment::Process, EXE);
    let sig = fx.key.sign(&original.to_bytes(), true);
    let mut changed = original.clone();
    edit(&mut changed);
    let (e, s, x) = fx.inputs(&changed.to_bytes(), &sig, exe);
    let before = fx.snap();
    fx.refused(
        &before,
        &fx.add_paths(&e, &s, &x, &[]),
        1,
        Kind::SignatureInvalid,
    );
}

#[test]
fn refuses_containment_changed_from_process_to_audit_after_signing() {
    refuses_changed_after_signing(|e| e.containment = Containment::Audit, EXE);
}

#[test]
fn refuses_sha256_changed_after_signing() {
    refuses_changed_after_signing(
        |e| {
            e.sha256 = Sha256::of(b"evil");
            e.size = 4;
        },
        b"evil",
    );
}

#[test]
fn refuses_inputs_changed_after_signing() {
    refuses_changed_after_signing(
        |e| {
            e.inputs[0].kind = proto::InputKind::File;
        },
        EXE,
    );
}

#[test]
fn refuses_version_changed_after_signing() {
    refuses_changed_after_signing(|e| e.version = semver::Version::new(1, 0, 1), EXE);
}

// ---- refusals: the registry --------------------------------------------------------------------

#[test]
fn refuses_existing_name_without_replace() {
    let fx = fx();
    testkit::assert_ok::<AddReport>(&fx.add(&entry(Containment::Audit, EXE), EXE, &[]));
    let mut newer = entry(Containment::Audit, b"#!/bin/sh\n# two\n");
    newer.version = semver::Version::new(2, 0, 0);
    let before = fx.snap();
    let err = fx.refused(
        &before,
        &fx.add(&newer, b"#!/bin/sh\n# two\n", &[]),
        1,
        Kind::EntryExists,
    );
    assert!(err.next.unwrap().ends_with("--replace"));
}

#[test]
fn refuses_downgrade() {
    let fx = fx();
    let mut e = entry(Containment::Audit, EXE);
    e.version = semver::Version::new(1, 2, 0);
    testkit::assert_ok::<AddReport>(&fx.add(&e, EXE, &[]));
    let older = entry(Containment::Audit, b"#!/bin/sh\n# old\n");
    let before = fx.snap();
    let err = fx.refused(
        &before,
        &fx.add(&older, b"#!/bin/sh\n# old\n", &["--replace"]),
        1,
        Kind::Downgrade,
    );
    assert_eq!(err.value.as_deref(), Some("1.0.0"));
    // Every argument of the refused command kept (--replace too), the missing flag added.
    let argv = err.next_argv.expect("argv");
    assert_eq!(argv.last().map(String::as_str), Some("--allow-downgrade"));
    assert!(argv.contains(&"--replace".into()), "{argv:?}");
}

#[test]
fn refuses_missing_root() {
    let fx = fx();
    let bytes = entry(Containment::Audit, EXE).to_bytes();
    let (e, s, x) = fx.inputs(&bytes, &fx.key.sign(&bytes, true), EXE);
    let missing = fx.dir.join("nope");
    let out = reg([
        OsStr::new("add"),
        "--root".as_ref(),
        missing.as_os_str(),
        "--entry".as_ref(),
        e.as_os_str(),
        "--signature".as_ref(),
        s.as_os_str(),
        "--exe".as_ref(),
        x.as_os_str(),
    ]);
    testkit::assert_refused(&out, 1, Kind::RootMissing);
    assert!(!missing.exists());
}

#[test]
fn refuses_when_the_pinned_copy_was_tampered_and_never_rewrites_it() {
    let fx = fx();
    testkit::assert_ok::<AddReport>(&fx.add(&entry(Containment::Audit, EXE), EXE, &[]));
    let store = fx.root.store_file(&Sha256::of(EXE));
    fs::set_permissions(&store, fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(&store, b"tampered").unwrap();
    fs::set_permissions(&store, fs::Permissions::from_mode(0o500)).unwrap();
    let mut again = entry(Containment::Audit, EXE);
    again.version = semver::Version::new(1, 0, 1);
    let before = fx.snap();
    fx.refused(
        &before,
        &fx.add(&again, EXE, &["--replace"]),
        1,
        Kind::StoreTampered,
    );
    assert_eq!(fs::read(&store).unwrap(), b"tampered");
}

#[test]
fn list_shows_a_tampered_pinned_copy_as_invalid() {
    let fx = fx();
    testkit::assert_ok::<AddReport>(&fx.add(&entry(Containment::Audit, EXE), EXE, &[]));
    let items: Vec<ListItem> = testkit::assert_ok(&reg(["list", "--root", fx.r()]));
    assert_eq!(items.len(), 1);
    assert!(items[0].valid);
    assert_eq!(items[0].problem, None);
    assert_eq!(items[0].trust, Some(Trust::Signed));
    let store = fx.root.store_file(&Sha256::of(EXE));
    fs::set_permissions(&store, fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(&store, b"tampered").unwrap();
    let items: Vec<ListItem> = testkit::assert_ok(&reg(["list", "--root", fx.r()]));
    assert!(!items[0].valid);
    testkit::assert_kind!(items[0].problem.as_ref().unwrap(), Kind::StoreTampered);
    assert_eq!(items[0].sha256, Some(Sha256::of(EXE)));
}

#[test]
fn remove_deletes_entry_and_signature_but_keeps_the_pinned_copy() {
    let fx = fx();
    testkit::assert_ok::<AddReport>(&fx.add(&entry(Containment::Audit, EXE), EXE, &[]));
    let report: register::report::RemoveReport =
        testkit::assert_ok(&reg(["remove", "--root", fx.r(), "--name", "hello"]));
    // The entry, its signature and the owner's --allow-dynamic grant.
    assert_eq!(report.removed.len(), 3);
    assert!(!fx.root.entry(&hello()).exists());
    assert!(!fx.root.entry_sig(&hello()).exists());
    assert!(!fx.root.entry_grant(&hello()).exists());
    assert!(fx.root.store_file(&Sha256::of(EXE)).exists());
    let items: Vec<ListItem> = testkit::assert_ok(&reg(["list", "--root", fx.r()]));
    assert!(items.is_empty());
}

#[test]
fn remove_refuses_missing_entry() {
    let fx = fx();
    let before = fx.snap();
    let out = reg(["remove", "--root", fx.r(), "--name", "hello"]);
    fx.refused(&before, &out, 1, Kind::EntryMissing);
}

#[test]
fn remove_refuses_bad_name() {
    let fx = fx();
    let before = fx.snap();
    let out = reg(["remove", "--root", fx.r(), "--name", "../plugins.d"]);
    fx.refused(&before, &out, 2, Kind::BadName);
}

#[test]
fn a_writer_waits_for_the_root_lock_and_writes_nothing_meanwhile() {
    let fx = fx();
    let e = entry(Containment::Audit, EXE);
    let bytes = e.to_bytes();
    let (ep, sp, xp) = fx.inputs(&bytes, &fx.key.sign(&bytes, true), EXE);
    let dir = fs::File::open(fx.root.plugins()).unwrap();
    let held = nix::fcntl::Flock::lock(dir, nix::fcntl::FlockArg::LockExclusive).unwrap();
    let before = fx.snap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin!("dot-register"))
        .args(["add", "--root", fx.r(), "--entry"])
        .arg(&ep)
        .arg("--signature")
        .arg(&sp)
        .arg("--exe")
        .arg(&xp)
        .arg("--allow-dynamic")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The kernel lists a writer blocked on a flock as "-> FLOCK ... PID" in /proc/locks.
    let waiting = format!(" {} ", child.id());
    let mut seen = false;
    for _ in 0..5000 {
        let locks = fs::read_to_string("/proc/locks").unwrap();
        if locks
            .lines()
            .any(|l| l.contains("->") && l.contains("FLOCK") && l.contains(&waiting))
        {
            seen = true;
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "add finished while the lock was held"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert!(seen, "dot-register add never waited for the root lock");
    assert_eq!(before, fx.snap(), "a blocked writer wrote something");
    drop(held);
    let out = child.wait_with_output().unwrap();
    testkit::assert_ok::<AddReport>(&out);
    assert!(fx.root.entry(&hello()).exists());
}
