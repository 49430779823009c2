//! `dot-verify doctor`: every entry verified as `dot-launch` verifies it, and the warnings that
//! come due within the window, on real signatures. Exit 0 only when nothing is invalid or due;
//! otherwise exit 1 with the report on stdout and nothing on stderr.
#![allow(clippy::unwrap_used)]

use assert_cmd::cargo::cargo_bin_cmd;
use proto::layout::Root;
use proto::trust::Policy;
use proto::{Containment, Entry, Kind};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Output;
use testkit::{KeyPair, TempDir};
use verify::doctor::{DoctorReport, Due, DueKind, DOCTOR_SCHEMA};
use verify::trust::now;

const DAY: u64 = 86_400;
const EXE: &[u8] = b"#!/bin/sh\nexit 0\n";

/// A root with publisher `acme` (one key, `not_after` as given) and nothing registered.
struct Fx {
    _dir: TempDir,
    root: Root,
    key: KeyPair,
}

fn root(key_not_after: Option<u64>) -> Fx {
    let dir = TempDir::new();
    let root = testkit::make_root(&dir.join("root"), false);
    let key = KeyPair::generate();
    let mut publisher = testkit::publisher_record("acme", &[&key]);
    publisher.keys[0].not_after = key_not_after;
    testkit::install_publisher(&root, &publisher);
    Fx {
        _dir: dir,
        root,
        key,
    }
}

impl Fx {
    /// Registers `name`, signed by acme's key at `signed_at`, expiring at `expires`.
    fn install(&self, name: &str, expires: Option<u64>, signed_at: u64) {
        let mut e: Entry = testkit::entry_for_bytes(name, EXE, Containment::Audit, Some("acme"));
        e.expires = expires;
        let bytes = e.to_bytes();
        let sig = self.key.sign_at(&bytes, signed_at);
        testkit::install_entry(&self.root, name, &bytes, Some(&sig), EXE);
    }

    fn set_policy(&self, policy: &Policy) {
        let p = self.root.policy();
        fs::write(&p, policy.to_bytes()).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
    }

    fn doctor(&self, warn_days: Option<u64>) -> Output {
        let mut cmd = cargo_bin_cmd!("dot-verify");
        cmd.args(["doctor", "--root"]).arg(self.root.path());
        if let Some(n) = warn_days {
            cmd.args(["--warn-days", &n.to_string()]);
        }
        cmd.output().unwrap()
    }

    /// Runs the doctor, asserts the exit code and that stderr is empty and the root unchanged,
    /// and decodes the report.
    fn report(&self, warn_days: Option<u64>, code: i32) -> DoctorReport {
        let before = testkit::tree_snapshot(self.root.path());
        let out = self.doctor(warn_days);
        assert_eq!(out.status.code(), Some(code), "{out:?}");
        assert!(out.stderr.is_empty(), "{out:?}");
        assert_eq!(before, testkit::tree_snapshot(self.root.path()));
        let r: DoctorReport = testkit::decode_json(&out.stdout);
        assert_eq!(r.schema, DOCTOR_SCHEMA);
        assert_eq!(r.ok, code == 0);
        r
    }
}

/// The one warning of the report's one entry.
fn one_entry_due(r: &DoctorReport) -> &Due {
    assert_eq!(r.entries.len(), 1);
    assert!(r.entries[0].valid, "{r:?}");
    assert_eq!(r.entries[0].due.len(), 1, "{r:?}");
    &r.entries[0].due[0]
}

#[test]
fn a_fresh_root_has_no_findings() {
    let fx = root(None);
    let r = fx.report(None, 0);
    assert!(r.entries.is_empty());
    assert_eq!(r.publishers.len(), 1);
    assert!(r.publishers[0].due.is_empty() && r.publishers[0].problem.is_none());
    assert_eq!(r.warn_days, Policy::default().expiry_warning_days);

    fx.install("hello", None, now());
    let r = fx.report(None, 0);
    assert_eq!(r.entries.len(), 1);
    assert_eq!(r.entries[0].name, "hello");
    assert!(r.entries[0].valid && r.entries[0].problem.is_none());
    assert!(r.entries[0].due.is_empty());
}

#[test]
fn an_entry_expiring_within_the_window_is_due() {
    let fx = root(None);
    let expires = now() + 2 * DAY + 3600;
    fx.install("hello", Some(expires), now());
    let r = fx.report(Some(7), 1);
    assert_eq!(r.warn_days, 7);
    let d = one_entry_due(&r);
    assert_eq!(d.what, DueKind::EntryExpires);
    assert_eq!(d.at, expires);
    assert_eq!(d.days, (expires - r.now) / DAY);
    assert_eq!(d.key_id, None);
    assert_eq!(d.describe(), format!("expires in {} day(s)", d.days));
}

#[test]
fn an_entry_expiring_after_the_window_is_not_due() {
    let fx = root(None);
    fx.install("hello", Some(now() + 2 * DAY + 3600), now());
    let r = fx.report(Some(1), 0);
    assert!(r.entries[0].valid);
    assert!(r.entries[0].due.is_empty());
}

#[test]
fn the_policy_sets_the_default_window() {
    let fx = root(None);
    fx.install("hello", Some(now() + 2 * DAY + 3600), now());
    fx.set_policy(&Policy {
        expiry_warning_days: 1,
        ..Policy::default()
    });
    assert_eq!(fx.report(None, 0).warn_days, 1);
    fx.set_policy(&Policy {
        expiry_warning_days: 3,
        ..Policy::default()
    });
    let r = fx.report(None, 1);
    assert_eq!(r.warn_days, 3);
    assert_eq!(one_entry_due(&r).what, DueKind::EntryExpires);
}

#[test]
fn an_expired_entry_is_invalid_with_entry_expired() {
    let fx = root(None);
    fx.install("fresh", None, now());
    fx.install("hello", Some(now() - 60), now() - 3600);
    let r = fx.report(Some(7), 1);
    assert_eq!(r.entries.len(), 2);
    assert_eq!(r.entries[0].name, "fresh");
    assert!(r.entries[0].valid && r.entries[0].due.is_empty());
    let e = &r.entries[1];
    assert_eq!(e.name, "hello");
    assert!(!e.valid);
    assert!(e.due.is_empty());
    let problem = e.problem.as_ref().unwrap();
    testkit::assert_kind!(problem, Kind::EntryExpired);
    assert_eq!(problem.field.as_deref(), Some("expires"));
}

#[test]
fn a_key_ending_within_the_window_is_due_for_its_entries_and_its_publisher() {
    let not_after = now() + 3 * DAY;
    let fx = root(Some(not_after));
    fx.install("hello", None, now() - 60);
    let r = fx.report(Some(7), 1);
    let d = one_entry_due(&r);
    assert_eq!(d.what, DueKind::KeyNotAfter);
    assert_eq!(d.at, not_after);
    assert_eq!(d.key_id.as_deref(), Some(fx.key.key_id().as_str()));
    assert_eq!(r.publishers.len(), 1);
    assert_eq!(r.publishers[0].id, "acme");
    assert_eq!(r.publishers[0].due, vec![d.clone()]);

    // Outside a 2-day window: nothing due.
    let r = fx.report(Some(2), 0);
    assert!(r.entries[0].valid && r.entries[0].due.is_empty());
    assert!(r.publishers[0].due.is_empty());
}

#[test]
fn a_signature_nearing_the_maximum_age_is_due() {
    let fx = root(None);
    let signed_at = now() - 29 * DAY;
    fx.install("hello", None, signed_at);
    fx.set_policy(&Policy {
        max_signature_age_secs: Some(30 * DAY),
        ..Policy::default()
    });
    let r = fx.report(Some(7), 1);
    let d = one_entry_due(&r);
    assert_eq!(d.what, DueKind::SignatureMaxAge);
    assert_eq!(d.at, signed_at + 30 * DAY);
    assert_eq!(d.key_id.as_deref(), Some(fx.key.key_id().as_str()));

    // A maximum age far away is not due.
    fx.set_policy(&Policy {
        max_signature_age_secs: Some(365 * DAY),
        ..Policy::default()
    });
    assert!(fx.report(Some(7), 0).entries[0].due.is_empty());
}

#[test]
fn a_malformed_publisher_record_is_a_finding() {
    let fx = root(None);
    let p = fx.root.publishers().join("broken.json");
    fs::write(&p, b"{}").unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
    let r = fx.report(None, 1);
    assert_eq!(r.publishers.len(), 2);
    assert_eq!(r.publishers[0].id, "acme");
    assert_eq!(r.publishers[1].id, "broken");
    let problem = r.publishers[1].problem.as_ref().unwrap();
    testkit::assert_kind!(problem, Kind::PublisherMalformed);
}

#[test]
fn a_missing_root_is_an_error_not_a_report() {
    let dir = TempDir::new();
    let out = cargo_bin_cmd!("dot-verify")
        .args(["doctor", "--root"])
        .arg(dir.join("nope"))
        .output()
        .unwrap();
    testkit::assert_refused(&out, 1, Kind::RootMissing);
    assert!(out.stdout.is_empty());
}

// ---- each distinct store file digested once -----------------------------------------------------

/// `dot-verify entry NAME`'s verdict: `None` when valid, else its error object.
fn entry_alone(root: &Root, name: &str) -> Option<proto::ErrorObject> {
    let out = cargo_bin_cmd!("dot-verify")
        .args(["entry", "--root"])
        .arg(root.path())
        .arg(name)
        .output()
        .unwrap();
    match out.status.code() {
        Some(0) => None,
        _ => Some(testkit::decode_error(&out.stderr)),
    }
}

/// Every entry of the report has exactly the verdict `dot-verify entry` gives it alone.
fn assert_same_as_alone(fx: &Fx, r: &DoctorReport) {
    for e in &r.entries {
        let alone = entry_alone(&fx.root, &e.name);
        assert_eq!(e.problem, alone, "{}", e.name);
        assert_eq!(e.valid, alone.is_none(), "{}", e.name);
    }
}

impl Fx {
    /// Registers `name` (signed) for the executable `exe` under `containment`, its size as given.
    fn install_exe(&self, name: &str, exe: &[u8], containment: Containment, size: u64) {
        let mut e = testkit::entry_for_bytes(name, exe, containment, Some("acme"));
        e.size = size;
        let bytes = e.to_bytes();
        let sig = self.key.sign(&bytes, true);
        testkit::install_entry(&self.root, name, &bytes, Some(&sig), exe);
    }
}

#[test]
fn entries_sharing_a_store_file_get_one_digest_and_the_verdicts_each_gets_alone() {
    use verify::batch::Check;
    let fx = root(None);
    let hello = fs::read(testkit::static_fixture("hello")).unwrap();
    // A script at audit (pinned as a sealed copy) and a static ELF under process (leased), each
    // shared by several entries; one entry of the script claims a size it does not have.
    for i in 0..6 {
        fx.install_exe(&format!("s{i}"), EXE, Containment::Audit, EXE.len() as u64);
        let name = format!("p{i}");
        fx.install_exe(&name, &hello, Containment::Process, hello.len() as u64);
    }
    fx.install_exe("s9", EXE, Containment::Audit, EXE.len() as u64 + 1);
    let r = fx.report(None, 1);
    assert_eq!(r.entries.len(), 13);
    assert_same_as_alone(&fx, &r);
    let store = |exe: &[u8]| fx.root.store_file(&proto::Sha256::of(exe));
    for e in &r.entries {
        let (first, exe_check, bytes) = match e.name.starts_with('s') {
            true => ("s0", Check::Grant, EXE),
            false => ("p0", Check::StaticElf, hello.as_slice()),
        };
        if e.name == "s9" {
            // Refused on its size before any digest: its verdict, no checks passed, no digest.
            testkit::assert_kind!(e.problem.as_ref().unwrap(), Kind::StoreTampered);
            assert!(e.checks.is_empty() && e.digest.is_none(), "{e:?}");
            continue;
        }
        let digest = e.digest.as_ref().expect("the store file was digested");
        assert_eq!(digest.read_for, first, "{}", e.name);
        assert_eq!(digest.store, store(bytes).display().to_string());
        assert!(e.valid, "{e:?}");
        assert_eq!(
            e.checks,
            [
                Check::Entry,
                Check::DenyList,
                Check::Signature,
                Check::Expiry,
                Check::StoreFile,
                Check::Digest,
                exe_check
            ],
            "{}",
            e.name
        );
    }
}

#[test]
fn a_tampered_store_file_is_reported_for_every_entry_that_uses_it() {
    let fx = root(None);
    let hello = fs::read(testkit::static_fixture("hello")).unwrap();
    for i in 0..12 {
        fx.install_exe(
            &format!("p{i:02}"),
            &hello,
            Containment::Process,
            hello.len() as u64,
        );
    }
    // One byte changed in the pinned copy, as root could (chmod, write, chmod back).
    let store = fx.root.store_file(&proto::Sha256::of(&hello));
    let mut changed = hello.clone();
    changed[4096] ^= 1;
    fs::set_permissions(&store, fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(&store, &changed).unwrap();
    fs::set_permissions(&store, fs::Permissions::from_mode(0o555)).unwrap();
    let r = fx.report(None, 1);
    assert_eq!(r.entries.len(), 12);
    for e in &r.entries {
        let problem = e
            .problem
            .as_ref()
            .unwrap_or_else(|| panic!("{} valid", e.name));
        testkit::assert_kind!(problem, Kind::StoreTampered, "{}", e.name);
        assert!(
            problem
                .message
                .contains(&proto::Sha256::of(&changed).to_hex()),
            "{problem:?}"
        );
        assert_eq!(e.digest.as_ref().map(|d| d.read_for.as_str()), Some("p00"));
    }
    assert_same_as_alone(&fx, &r);
}
