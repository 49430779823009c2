//! The attacks a local plugin registry faces (TUF's list, applied to one platform root), one test
//! each, named after the attack (docs/trust.md). Each runs the real `dot-register`, `dot-verify` and
//! `dot-launch`, and asserts the exit code, the error kind, that the root is unchanged where nothing
//! may change, and that `audit.log` got its line where a decision was made.
#![allow(clippy::unwrap_used)]

mod common;

use common::{launch_into, tool};
use proto::layout::Root;
use proto::trust::{AuditAction, AuditOutcome, AuditRecord, Dependencies, HighWater};
use proto::{Containment, Entry, ErrorObject, Kind, Name};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use testkit::{workspace_bin, KeyPair, NodeFacts, TempDir};

/// A normal (signed) root made by `dot-register init`, publisher `acme` trusting `key`, and the
/// static `hello` binary as the plugin executable.
struct Fx {
    dir: TempDir,
    root: Root,
    key: KeyPair,
    exe: PathBuf,
    n: std::cell::Cell<u32>,
}

fn run(name: &str, args: &[&OsStr]) -> Output {
    tool(name).args(args).output().unwrap()
}

fn os<S: AsRef<OsStr> + ?Sized>(s: &S) -> &OsStr {
    s.as_ref()
}

impl Fx {
    fn new() -> Fx {
        let dir = TempDir::new();
        let root = Root::single(dir.join("root"));
        let key = KeyPair::generate();
        fs::create_dir(dir.join("in")).unwrap();
        fs::create_dir(dir.join("out")).unwrap();
        let exe = dir.join("in/hello");
        testkit::copy_exe(&workspace_bin("hello"), &exe);
        let fx = Fx {
            dir,
            root,
            key,
            exe,
            n: std::cell::Cell::new(0),
        };
        ok(&fx.reg(&["init"]));
        let pk = fx.key.pk_path(fx.dir.path());
        ok(&fx.reg(&[
            "publisher",
            "add",
            "--id",
            "acme",
            "--pubkey",
            pk.to_str().unwrap(),
        ]));
        fx
    }

    fn r(&self) -> &str {
        self.root.path().to_str().unwrap()
    }

    /// `dot-register SUBCOMMAND… --root R rest…` (the root goes after the subcommand words).
    fn reg(&self, args: &[&str]) -> Output {
        let split = args
            .iter()
            .position(|a| a.starts_with("--"))
            .unwrap_or(args.len());
        let mut v: Vec<&OsStr> = args[..split].iter().map(os).collect();
        v.extend([os("--root"), os(self.r())]);
        v.extend(args[split..].iter().map(os));
        run("dot-register", &v)
    }

    /// A signed entry for the hello executable, version `version`.
    fn entry(&self, name: &str, version: &str) -> Entry {
        let mut e = testkit::entry_for(name, &self.exe, Containment::Process, Some("acme"));
        e.version = semver::Version::parse(version).unwrap();
        e
    }

    /// Writes `bytes` and `sig` as fresh input files; returns their paths.
    fn files(&self, bytes: &[u8], sig: &[u8]) -> (PathBuf, PathBuf) {
        let n = self.n.get() + 1;
        self.n.set(n);
        let e = self.dir.join(format!("in/e{n}.json"));
        let s = self.dir.join(format!("in/e{n}.json.minisig"));
        fs::write(&e, bytes).unwrap();
        fs::write(&s, sig).unwrap();
        (e, s)
    }

    /// `dot-register add` of `bytes` with signature `sig` and the hello executable.
    fn add_raw(&self, bytes: &[u8], sig: &[u8], exe: &Path, extra: &[&str]) -> Output {
        let (e, s) = self.files(bytes, sig);
        let mut args = vec![
            "add",
            "--entry",
            e.to_str().unwrap(),
            "--signature",
            s.to_str().unwrap(),
            "--exe",
            exe.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.reg(&args)
    }

    /// Signs `entry` with `key` (timestamp now) and registers it.
    fn add(&self, entry: &Entry, key: &KeyPair, extra: &[&str]) -> Output {
        let bytes = entry.to_bytes();
        self.add_raw(&bytes, &key.sign(&bytes, true), &self.exe, extra)
    }

    fn verify(&self, name: &str) -> Output {
        run(
            "dot-verify",
            &[os("entry"), os("--root"), os(self.r()), os(name)],
        )
    }

    /// `dot-launch` of `name` at process level into the fixture's `out/`.
    fn launch(&self, name: &str) -> Output {
        let target = self.dir.join("out");
        launch_into(
            self.root.path(),
            name,
            &target,
            &["--require-process-sandbox"],
        )
        .output()
        .unwrap()
    }

    /// Adds `key` to publisher acme on the owner's word (`publisher rotate --force-by-owner`).
    fn force_key(&self, key: &KeyPair, extra: &[&str]) {
        let pk = key.pk_path(self.dir.path());
        let mut args = vec!["publisher", "rotate", "--id", "acme", "--force-by-owner"];
        args.extend(["--pubkey", pk.to_str().unwrap()]);
        args.extend_from_slice(extra);
        ok(&self.reg(&args));
    }

    /// `publisher rotate --force-by-owner` of `key` for acme, which must be refused with `kind`,
    /// the root unchanged.
    fn force_key_refused(&self, key: &KeyPair, kind: Kind) {
        let pk = key.pk_path(self.dir.path());
        let before = self.snap();
        let args = [
            "publisher",
            "rotate",
            "--id",
            "acme",
            "--force-by-owner",
            "--pubkey",
            pk.to_str().unwrap(),
        ];
        let out = self.reg(&args);
        // The public key file is written outside the root: the snapshot is the root's.
        self.refused(&before, &out, kind);
    }

    fn snap(&self) -> BTreeMap<PathBuf, NodeFacts> {
        testkit::tree_snapshot(self.root.path())
    }

    /// Asserts a refusal that changed nothing in the root.
    fn refused(
        &self,
        before: &BTreeMap<PathBuf, NodeFacts>,
        out: &Output,
        kind: Kind,
    ) -> ErrorObject {
        let e = testkit::assert_refused(out, 1, kind);
        assert_eq!(*before, self.snap(), "the root changed on a refusal");
        e
    }

    /// Asserts a refusal whose only change to the root is one `launch refused KIND` audit line.
    fn launch_refused(&self, name: &str, kind: Kind) {
        let before = self.audit();
        let out = self.launch(name);
        testkit::assert_refused(&out, 1, kind);
        let after = self.audit();
        assert_eq!(after.len(), before.len() + 1, "one audit line per launch");
        let last = after.last().unwrap();
        assert_eq!(
            (last.action, last.outcome, last.kind, last.name.as_deref()),
            (
                AuditAction::Launch,
                AuditOutcome::Refused,
                Some(kind),
                Some(name)
            )
        );
    }

    /// Every record of the audit log, read through `dot-journal-fmt --audit --json`.
    fn audit(&self) -> Vec<AuditRecord> {
        let out = run(
            "dot-journal-fmt",
            &[os("--audit"), os("--json"), os("--root"), os(self.r())],
        );
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        testkit::decode_json_lines(&out.stdout)
    }

    fn last_audit(&self) -> AuditRecord {
        self.audit().pop().expect("an audit record")
    }

    fn high_water(&self, name: &str) -> Option<semver::Version> {
        let h = HighWater::parse(&fs::read(self.root.high_water()).unwrap()).unwrap();
        h.versions.get(&Name::new(name).unwrap()).cloned()
    }
}

fn ok(out: &Output) -> serde_json::Value {
    testkit::assert_ok(out)
}

// ---- the attacks -------------------------------------------------------------------------------

/// Someone without a trusted key installs a plugin: through `add` (refused, nothing written) and by
/// writing the files into the root directly (verify and launch refuse, the launch is logged).
#[test]
fn arbitrary_installation() {
    let fx = Fx::new();
    let mallory = KeyPair::generate();
    let entry = fx.entry("hello", "1.0.0");
    let before = fx.snap();
    let e = fx.refused(
        &before,
        &fx.add(&entry, &mallory, &[]),
        Kind::SignatureInvalid,
    );
    assert!(e.message.contains(&mallory.key_id()), "{e:?}");
    // Planted by hand, signed by the unknown key.
    let bytes = entry.to_bytes();
    let exe = fs::read(&fx.exe).unwrap();
    testkit::install_entry(
        &fx.root,
        "hello",
        &bytes,
        Some(&mallory.sign(&bytes, true)),
        &exe,
    );
    testkit::assert_refused(&fx.verify("hello"), 1, Kind::SignatureInvalid);
    fx.launch_refused("hello", Kind::SignatureInvalid);
    // Planted as a local entry in a normal root.
    let local = testkit::entry_for("hello", &fx.exe, Containment::Process, None);
    testkit::install_entry(&fx.root, "hello", &local.to_bytes(), None, &exe);
    testkit::assert_refused(&fx.verify("hello"), 1, Kind::LocalEntryNotDev);
    fx.launch_refused("hello", Kind::LocalEntryNotDev);
}

/// A validly signed entry offered with other software: `add` with another executable, and a
/// pinned copy swapped after registration.
#[test]
fn wrong_software() {
    let fx = Fx::new();
    let entry = fx.entry("hello", "1.0.0");
    let bytes = entry.to_bytes();
    let sig = fx.key.sign(&bytes, true);
    let other = fx.dir.join("in/other");
    testkit::copy_exe(&workspace_bin("fixture-plugin"), &other);
    let before = fx.snap();
    let out = fx.add_raw(&bytes, &sig, &other, &[]);
    let kind = testkit::decode_error(&out.stderr).error;
    assert!(
        kind == Kind::SizeMismatch || kind == Kind::DigestMismatch,
        "{kind}"
    );
    fx.refused(&before, &out, kind);
    // Same size, other bytes: the digest decides.
    let mut same_size = fs::read(&fx.exe).unwrap();
    let last = same_size.len() - 1;
    same_size[last] ^= 0xff;
    let forged = testkit::write_exe(&fx.dir.join("in"), "forged", &same_size, 0o755);
    fx.refused(
        &before,
        &fx.add_raw(&bytes, &sig, &forged, &[]),
        Kind::DigestMismatch,
    );
    // Registered properly, then the pinned copy is replaced.
    ok(&fx.add_raw(&bytes, &sig, &fx.exe, &[]));
    let store = fx.root.store_file(&entry.sha256);
    fs::remove_file(&store).unwrap();
    testkit::write_exe(
        store.parent().unwrap(),
        &entry.sha256.to_hex(),
        &same_size,
        0o500,
    );
    testkit::assert_refused(&fx.verify("hello"), 1, Kind::StoreTampered);
    fx.launch_refused("hello", Kind::StoreTampered);
}

/// Valid pieces combined wrongly: an entry signed for plugin A registered as B, and a signature
/// file taken from another entry.
#[test]
fn mix_and_match() {
    let fx = Fx::new();
    let a = fx.entry("alpha", "1.0.0");
    let b = fx.entry("beta", "1.0.0");
    let (a_bytes, b_bytes) = (a.to_bytes(), b.to_bytes());
    let (a_sig, b_sig) = (fx.key.sign(&a_bytes, true), fx.key.sign(&b_bytes, true));
    let before = fx.snap();
    // A's signed entry renamed to B: the name is inside the signed bytes.
    let renamed = String::from_utf8(a_bytes.clone())
        .unwrap()
        .replace("\"alpha\"", "\"beta\"");
    fx.refused(
        &before,
        &fx.add_raw(renamed.as_bytes(), &a_sig, &fx.exe, &[]),
        Kind::SignatureInvalid,
    );
    // A's entry with B's signature.
    fx.refused(
        &before,
        &fx.add_raw(&a_bytes, &b_sig, &fx.exe, &[]),
        Kind::SignatureInvalid,
    );
    // Both registered; A's file installed under B's name, and B's signature over A's entry.
    ok(&fx.add_raw(&a_bytes, &a_sig, &fx.exe, &[]));
    ok(&fx.add_raw(&b_bytes, &b_sig, &fx.exe, &[]));
    let beta = Name::new("beta").unwrap();
    let alpha = Name::new("alpha").unwrap();
    fs::copy(fx.root.entry(&alpha), fx.root.entry(&beta)).unwrap();
    fs::copy(fx.root.entry_sig(&alpha), fx.root.entry_sig(&beta)).unwrap();
    testkit::assert_refused(&fx.verify("beta"), 1, Kind::EntryNameMismatch);
    fx.launch_refused("beta", Kind::EntryNameMismatch);
    fs::copy(fx.root.entry_sig(&alpha), fx.root.entry_sig(&beta)).unwrap();
    fs::write(fx.root.entry(&beta), &b_bytes).unwrap();
    testkit::assert_refused(&fx.verify("beta"), 1, Kind::SignatureInvalid);
    fx.launch_refused("beta", Kind::SignatureInvalid);
}

/// An older, validly signed version (with a known hole) is offered again: over the registered one,
/// and after `remove` (the high-water version survives it).
#[test]
fn rollback() {
    let fx = Fx::new();
    ok(&fx.add(&fx.entry("hello", "2.0.0"), &fx.key, &[]));
    let old = fx.entry("hello", "1.0.0");
    let before = fx.snap();
    let e = fx.refused(
        &before,
        &fx.add(&old, &fx.key, &["--replace"]),
        Kind::Downgrade,
    );
    assert_eq!(e.value.as_deref(), Some("1.0.0"));
    assert!(e.next.unwrap().ends_with("--replace --allow-downgrade"));
    ok(&fx.reg(&["remove", "--name", "hello"]));
    assert_eq!(fx.last_audit().action, AuditAction::Remove);
    let before = fx.snap();
    fx.refused(&before, &fx.add(&old, &fx.key, &[]), Kind::Downgrade);
    // The owner's explicit downgrade is recorded; the high-water mark stays.
    ok(&fx.add(&old, &fx.key, &["--allow-downgrade"]));
    let rec = fx.last_audit();
    assert_eq!(rec.action, AuditAction::Register);
    assert_eq!(
        rec.overrides,
        vec!["allow-downgrade below 2.0.0".to_owned()]
    );
    assert_eq!(fx.high_water("hello"), Some(semver::Version::new(2, 0, 0)));
}

/// A compromised key registered a bogus huge version: after revoking it, the owner resets the
/// high-water mark so real updates are possible again, and the reset is recorded.
#[test]
fn fast_forward_reset() {
    let fx = Fx::new();
    let stolen = KeyPair::generate();
    fx.force_key(&stolen, &[]);
    ok(&fx.add(&fx.entry("hello", "999.0.0"), &stolen, &[]));
    let kid = stolen.key_id();
    ok(&fx.reg(&[
        "publisher",
        "revoke",
        "--id",
        "acme",
        "--key",
        &kid,
        "--reason",
        "stolen",
    ]));
    testkit::assert_refused(&fx.verify("hello"), 1, Kind::KeyRevoked);
    let fix = fx.entry("hello", "1.1.0");
    let before = fx.snap();
    fx.refused(
        &before,
        &fx.add(&fix, &fx.key, &["--replace"]),
        Kind::Downgrade,
    );
    ok(&fx.add(&fix, &fx.key, &["--replace", "--reset-high-water"]));
    let rec = fx.last_audit();
    assert_eq!(rec.action, AuditAction::Replace);
    assert_eq!(
        rec.overrides,
        vec!["reset-high-water from 999.0.0".to_owned()]
    );
    assert_eq!(fx.high_water("hello"), Some(semver::Version::new(1, 1, 0)));
    ok(&fx.verify("hello"));
    // From now on the ordinary rule applies against the new mark.
    ok(&fx.add(&fx.entry("hello", "1.2.0"), &fx.key, &["--replace"]));
}

/// A stale entry is kept in front of the platform (freeze): signed expiry refuses it everywhere,
/// `list` warns before it happens, and a root can cap signature age.
#[test]
fn freeze_expiry() {
    let fx = Fx::new();
    let mut expired = fx.entry("hello", "1.0.0");
    expired.expires = Some(1_000_000_000);
    let before = fx.snap();
    let e = fx.refused(&before, &fx.add(&expired, &fx.key, &[]), Kind::EntryExpired);
    assert_eq!(e.field.as_deref(), Some("expires"));
    // Frozen in place (registered by hand while it was still valid).
    let bytes = expired.to_bytes();
    let exe = fs::read(&fx.exe).unwrap();
    testkit::install_entry(
        &fx.root,
        "hello",
        &bytes,
        Some(&fx.key.sign(&bytes, true)),
        &exe,
    );
    testkit::assert_refused(&fx.verify("hello"), 1, Kind::EntryExpired);
    fx.launch_refused("hello", Kind::EntryExpired);
    // About to expire: valid, with a warning in `list`.
    let mut soon = fx.entry("hello", "1.0.1");
    soon.expires = Some(verify::trust::now() + 2 * 86_400 + 3600);
    ok(&fx.add(&soon, &fx.key, &["--replace"]));
    let items: Vec<register::report::ListItem> = testkit::assert_ok(&fx.reg(&["list"]));
    assert!(items[0].valid);
    assert_eq!(items[0].warning.as_deref(), Some("expires in 2 day(s)"));
    // A maximum signature age: an old signature is refused, the same entry freshly signed is not.
    ok(&fx.reg(&["policy", "set", "--max-signature-age-secs", "86400"]));
    assert_eq!(fx.last_audit().action, AuditAction::PolicySet);
    let e2 = fx.entry("hello", "1.0.2");
    let b2 = e2.to_bytes();
    let before = fx.snap();
    let out = fx.add_raw(
        &b2,
        &fx.key.sign_at(&b2, 1_000_000_000),
        &fx.exe,
        &["--replace"],
    );
    fx.refused(&before, &out, Kind::SignatureTooOld);
    let out = fx.add_raw(
        &b2,
        &fx.key.sign_with_comment(&b2, true, "no time"),
        &fx.exe,
        &["--replace"],
    );
    fx.refused(&before, &out, Kind::SignatureTimeMissing);
    ok(&fx.add(&e2, &fx.key, &["--replace"]));
}

/// A publisher's key is compromised: the publisher moves to a new key with a statement signed by
/// the old one (or the owner forces it, recorded), then the old key is revoked. Rotation statements
/// from keys that are not the publisher's are refused.
#[test]
fn key_compromise_rotation() {
    let fx = Fx::new();
    let new = KeyPair::generate();
    let new_pk = new.pk_path(fx.dir.path());
    let rotate = |extra: &[&str]| {
        let mut a = vec![
            "publisher",
            "rotate",
            "--id",
            "acme",
            "--pubkey",
            new_pk.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        fx.reg(&a)
    };
    let write_stmt = |signer: &KeyPair, name: &str| {
        let (stmt, sig) = signer.transition_to("acme", &new);
        let p = fx.dir.join(format!("in/{name}"));
        fs::write(&p, stmt).unwrap();
        fs::write(fx.dir.join(format!("in/{name}.minisig")), sig).unwrap();
        format!("{}.minisig", p.display())
    };
    let before = fx.snap();
    fx.refused(&before, &rotate(&[]), Kind::TransitionMissing);
    let mallory = KeyPair::generate();
    let forged = write_stmt(&mallory, "forged.json");
    fx.refused(
        &before,
        &rotate(&["--transition", &forged]),
        Kind::SignatureInvalid,
    );
    let good = write_stmt(&fx.key, "rotate.json");
    let p: proto::Publisher = testkit::assert_ok(&rotate(&["--transition", &good]));
    assert_eq!(p.keys.len(), 2);
    let rec = fx.last_audit();
    assert_eq!(rec.action, AuditAction::PublisherRotate);
    assert_eq!(rec.key_id, Some(new.key_id()));
    // The old key is revoked: what it signs is refused, the new key's entries are accepted.
    let old = fx.key.key_id();
    ok(&fx.reg(&[
        "publisher",
        "revoke",
        "--id",
        "acme",
        "--key",
        &old,
        "--reason",
        "leaked",
    ]));
    let before = fx.snap();
    fx.refused(
        &before,
        &fx.add(&fx.entry("hello", "1.0.0"), &fx.key, &[]),
        Kind::KeyRevoked,
    );
    ok(&fx.add(&fx.entry("hello", "1.0.0"), &new, &[]));
    ok(&fx.verify("hello"));
    // A revoked key cannot rotate any more; the owner can force a rotation, recorded.
    let third = KeyPair::generate();
    let third_pk = third.pk_path(fx.dir.path());
    let (stmt, sig) = fx.key.transition_to("acme", &third);
    fs::write(fx.dir.join("in/third.json"), stmt).unwrap();
    fs::write(fx.dir.join("in/third.json.minisig"), sig).unwrap();
    let t = fx.dir.join("in/third.json");
    let args = [
        "publisher",
        "rotate",
        "--id",
        "acme",
        "--pubkey",
        third_pk.to_str().unwrap(),
    ];
    let mut with_t = args.to_vec();
    with_t.extend(["--transition", t.to_str().unwrap()]);
    let before = fx.snap();
    fx.refused(&before, &fx.reg(&with_t), Kind::KeyRevoked);
    let mut forced = args.to_vec();
    forced.push("--force-by-owner");
    ok(&fx.reg(&forced));
    assert_eq!(fx.last_audit().overrides, vec!["force-by-owner".to_owned()]);
    // A key with a validity window accepts only signatures timestamped inside it.
    let windowed = KeyPair::generate();
    fx.force_key(&windowed, &["--not-before", "1000", "--not-after", "2000"]);
    let e = fx.entry("hello", "1.1.0");
    let b = e.to_bytes();
    let before = fx.snap();
    let out = fx.add_raw(&b, &windowed.sign(&b, true), &fx.exe, &["--replace"]);
    fx.refused(&before, &out, Kind::KeyNotValid);
    ok(&fx.add_raw(&b, &windowed.sign_at(&b, 1500), &fx.exe, &["--replace"]));
}

/// A revoked key (or a denied one) signs nothing any more, everywhere; the publisher's other
/// keys keep working.
#[test]
fn key_revocation() {
    let fx = Fx::new();
    let second = KeyPair::generate();
    fx.force_key(&second, &[]);
    ok(&fx.add(&fx.entry("one", "1.0.0"), &fx.key, &[]));
    ok(&fx.add(&fx.entry("two", "1.0.0"), &second, &[]));
    let kid = fx.key.key_id();
    ok(&fx.reg(&[
        "publisher",
        "revoke",
        "--id",
        "acme",
        "--key",
        &kid,
        "--reason",
        "lost",
    ]));
    let rec = fx.last_audit();
    assert_eq!(
        (rec.action, rec.key_id.as_deref()),
        (AuditAction::PublisherRevoke, Some(kid.as_str()))
    );
    testkit::assert_refused(&fx.verify("one"), 1, Kind::KeyRevoked);
    fx.launch_refused("one", Kind::KeyRevoked);
    ok(&fx.verify("two"));
    // The deny list refuses a key id before anything else, and is recorded.
    let kid2 = second.key_id();
    ok(&fx.reg(&["deny", "add", "--key", &kid2, "--reason", "pulled"]));
    assert_eq!(fx.last_audit().action, AuditAction::DenyAdd);
    let e = testkit::assert_refused(&fx.verify("two"), 1, Kind::Denied);
    assert_eq!(e.value.as_deref(), Some(kid2.as_str()));
    fx.launch_refused("two", Kind::Denied);
    let before = fx.snap();
    fx.refused(
        &before,
        &fx.add(&fx.entry("three", "1.0.0"), &second, &[]),
        Kind::Denied,
    );
    let pk2 = second.pk_path(fx.dir.path());
    let out = fx.reg(&[
        "publisher",
        "add",
        "--id",
        "other",
        "--pubkey",
        pk2.to_str().unwrap(),
    ]);
    fx.refused(&before, &out, Kind::Denied);
    // So is an executable digest.
    let hex = fx.entry("x", "1.0.0").sha256.to_hex();
    ok(&fx.reg(&["deny", "remove", "--key", &kid2]));
    ok(&fx.verify("two"));
    ok(&fx.reg(&["deny", "add", "--sha256", &hex, "--reason", "bad build"]));
    testkit::assert_refused(&fx.verify("two"), 1, Kind::Denied);
}

/// Endless data: entries, signatures, keys and executables larger than the root allows are
/// refused before they are read whole.
#[test]
fn endless_data() {
    let fx = Fx::new();
    let entry = fx.entry("hello", "1.0.0");
    let bytes = entry.to_bytes();
    let before = fx.snap();
    // A signature padded past the 4 KiB default.
    let mut sig = fx.key.sign(&bytes, true);
    sig.extend(std::iter::repeat_n(b'\n', 8 << 10));
    let e = fx.refused(
        &before,
        &fx.add_raw(&bytes, &sig, &fx.exe, &[]),
        Kind::TooLarge,
    );
    assert_eq!(e.field.as_deref(), Some("max_signature_bytes"));
    // A public key file padded past its limit.
    let pk = fx.dir.join("in/big.pub");
    let mut text = KeyPair::generate().public_key_file().into_bytes();
    text.extend(std::iter::repeat_n(b' ', 8 << 10));
    fs::write(&pk, text).unwrap();
    let out = fx.reg(&[
        "publisher",
        "add",
        "--id",
        "big",
        "--pubkey",
        pk.to_str().unwrap(),
    ]);
    let e = fx.refused(&before, &out, Kind::TooLarge);
    assert_eq!(e.field.as_deref(), Some("max_key_bytes"));
    // An executable over the root's limit.
    let size = entry.size.to_string();
    let limit = (entry.size - 1).to_string();
    ok(&fx.reg(&["policy", "set", "--max-exe-bytes", &limit]));
    let before = fx.snap();
    let e = fx.refused(&before, &fx.add(&entry, &fx.key, &[]), Kind::TooLarge);
    assert_eq!(
        (e.field.as_deref(), e.value.as_deref()),
        (Some("max_exe_bytes"), Some(size.as_str()))
    );
    ok(&fx.reg(&["policy", "set", "--max-exe-bytes", &size]));
    ok(&fx.add(&entry, &fx.key, &[]));
    // An entry over the root's entry limit.
    ok(&fx.reg(&["policy", "set", "--max-entry-bytes", "100"]));
    testkit::assert_refused(&fx.verify("hello"), 1, Kind::TooLarge);
    fx.launch_refused("hello", Kind::TooLarge);
}

/// Extraneous dependencies: an audit plugin that is a script or dynamic ELF (here `/bin/true`) runs
/// code the entry's digest does not pin; it is accepted only with the owner's --allow-dynamic,
/// recorded, and the result says so. `LD_*` never reaches a plugin.
#[test]
fn extraneous_dependencies() {
    let env = common::Env::new();
    let root = Root::single(&env.root);
    let script = testkit::write_exe(env.dir.path(), "script", testkit::SCRIPT, 0o755);
    let before = testkit::tree_snapshot(&env.root);
    for exe in [script.as_path(), Path::new("/bin/true")] {
        let out = tool("dot-register")
            .args(["dev", "--root"])
            .arg(&env.root)
            .args(["--name", "scripted", "--containment", "audit", "--exe"])
            .arg(exe)
            .output()
            .unwrap();
        let e = testkit::assert_refused(&out, 1, Kind::DynamicNotGranted);
        assert!(e.next.unwrap().ends_with("--allow-dynamic"), "{exe:?}");
        assert_eq!(before, testkit::tree_snapshot(&env.root));
    }
    env.register_with("scripted", &script, "audit", &["--allow-dynamic"]);
    let name = Name::new("scripted").unwrap();
    assert!(root.entry_grant(&name).exists());
    let log = fs::read(root.audit_log()).unwrap();
    let last: AuditRecord =
        serde_json::from_slice(log.split(|b| *b == b'\n').rev().nth(1).unwrap()).unwrap();
    assert_eq!(last.overrides, vec!["allow-dynamic".to_owned()]);
    let items: Vec<register::report::ListItem> = testkit::assert_ok(
        &tool("dot-register")
            .args(["list", "--root"])
            .arg(&env.root)
            .output()
            .unwrap(),
    );
    let item = items.iter().find(|i| i.name == "scripted").unwrap();
    assert_eq!(item.dependencies, Some(Dependencies::Unpinned));
    let hello = items.iter().find(|i| i.name == "hello").unwrap();
    assert_eq!(hello.dependencies, Some(Dependencies::Pinned));
    // Without the grant file the entry is refused at launch.
    fs::rename(root.entry_grant(&name), env.dir.join("grant")).unwrap();
    let out = env
        .launch("scripted", &["--allow-audit-plugin"])
        .output()
        .unwrap();
    testkit::assert_refused(&out, 1, Kind::DynamicNotGranted);
    fs::rename(env.dir.join("grant"), root.entry_grant(&name)).unwrap();
    // With it, the launch is allowed (and logged), the script runs (its interpreter reads it
    // through descriptor 3) and the run says `unpinned`.
    let out = env
        .launch("scripted", &["--allow-audit-plugin"])
        .output()
        .unwrap();
    let r = common::result(&out);
    assert_eq!(r.dependencies, Dependencies::Unpinned);
    let log = fs::read(root.audit_log()).unwrap();
    let last: AuditRecord =
        serde_json::from_slice(log.split(|b| *b == b'\n').rev().nth(1).unwrap()).unwrap();
    assert_eq!(
        (last.action, last.outcome, last.name.as_deref()),
        (AuditAction::Launch, AuditOutcome::Allowed, Some("scripted"))
    );
    // A static plugin's result says pinned; LD_* in dot-launch's environment never reach it.
    let out = env
        .launch("fixture", &["--allow-audit-plugin", "--input", "mode=env"])
        .env("LD_PRELOAD", "/nonexistent/libevil.so")
        .env("LD_LIBRARY_PATH", "/nonexistent")
        .output()
        .unwrap();
    let r = common::result(&out);
    assert_eq!(r.dependencies, Dependencies::Pinned);
    assert_eq!(
        fs::read_to_string(env.target.join("result.txt")).unwrap(),
        ""
    );
}

/// A replacement quietly asks for more: weaker containment, more inputs, a wider protocol range.
/// It needs `--accept-changes` naming exactly that difference; a stale or different acceptance
/// approves nothing.
#[test]
fn capability_widening() {
    let fx = Fx::new();
    ok(&fx.add(&fx.entry("hello", "1.0.0"), &fx.key, &[]));
    let mut wider = fx.entry("hello", "1.1.0");
    wider.containment = Containment::Audit;
    wider.inputs.push(proto::InputDecl {
        name: Name::new("path").unwrap(),
        kind: proto::InputKind::File,
        required: false,
    });
    wider.protocol = ">=1.0, <3".to_owned();
    let bytes = wider.to_bytes();
    let sig = fx.key.sign(&bytes, true);
    let before = fx.snap();
    let e = fx.refused(
        &before,
        &fx.add_raw(&bytes, &sig, &fx.exe, &["--replace"]),
        Kind::ChangesNeedConsent,
    );
    let changes = e.changes.clone().expect("the difference is printed");
    assert_eq!(
        changes.containment,
        Some([Containment::Process, Containment::Audit])
    );
    assert_eq!(changes.inputs_added.len(), 1);
    assert_eq!(
        changes.protocol,
        Some([">=1.0, <2".to_owned(), ">=1.0, <3".to_owned()])
    );
    let token = e.value.clone().unwrap();
    assert_eq!(token, changes.token());
    assert!(e
        .next
        .unwrap()
        .ends_with(&format!("--accept-changes {token}")));
    // An acceptance of a different change (only the input) approves nothing here.
    let mut smaller = fx.entry("hello", "1.1.0");
    smaller.inputs = wider.inputs.clone();
    let sb = smaller.to_bytes();
    let ss = fx.key.sign(&sb, true);
    let e2 = fx.refused(
        &before,
        &fx.add_raw(&sb, &ss, &fx.exe, &["--replace"]),
        Kind::ChangesNeedConsent,
    );
    let stale = e2.value.unwrap();
    assert_ne!(stale, token);
    let out = fx.add_raw(
        &bytes,
        &sig,
        &fx.exe,
        &["--replace", "--accept-changes", &stale],
    );
    fx.refused(&before, &out, Kind::ChangesNeedConsent);
    // The exact acceptance registers it (the audit executable is a static ELF) and is recorded.
    ok(&fx.add_raw(
        &bytes,
        &sig,
        &fx.exe,
        &["--replace", "--accept-changes", &token],
    ));
    let rec = fx.last_audit();
    assert_eq!(rec.overrides, vec![format!("accept-changes {token}")]);
    // Narrowing needs no consent.
    let mut narrower = wider.clone();
    narrower.version = semver::Version::new(1, 2, 0);
    narrower.containment = Containment::Process;
    narrower.inputs.clear();
    narrower.protocol = ">=1.0, <2".to_owned();
    ok(&fx.add(&narrower, &fx.key, &["--replace"]));
}

// ---- round two: thresholds, key bytes, levels, names, sensitive inputs -------------------------

impl Fx {
    /// Signs `entry` with each of `keys` (timestamp now) and registers it with one `--signature`
    /// per key, in that order.
    fn add_signed(&self, entry: &Entry, keys: &[&KeyPair], extra: &[&str]) -> Output {
        let bytes = entry.to_bytes();
        let n = self.n.get() + 1;
        self.n.set(n);
        let e = self.dir.join(format!("in/m{n}.json"));
        fs::write(&e, &bytes).unwrap();
        let mut args = vec![
            "add".to_owned(),
            "--entry".to_owned(),
            e.display().to_string(),
        ];
        for (i, k) in keys.iter().enumerate() {
            let s = self.dir.join(format!("in/m{n}.{i}.minisig"));
            fs::write(&s, k.sign(&bytes, true)).unwrap();
            args.extend(["--signature".to_owned(), s.display().to_string()]);
        }
        args.extend(["--exe".to_owned(), self.exe.display().to_string()]);
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        self.reg(&refs)
    }

    /// `dot-register publisher add --id ID --pubkey KEY.pub` plus `extra`.
    fn publisher_add(&self, id: &str, key: &KeyPair, extra: &[&str]) -> Output {
        let pk = key.pk_path(self.dir.path());
        let mut args = vec![
            "publisher",
            "add",
            "--id",
            id,
            "--pubkey",
            pk.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.reg(&args)
    }

    fn threshold(&self, id: &str, k: &str) -> Output {
        self.reg(&["publisher", "threshold", "--id", id, "--signatures", k])
    }

    /// acme with three keys (`fx.key` and two forced in) and a threshold of 2.
    fn two_of_three() -> (Fx, KeyPair, KeyPair) {
        let fx = Fx::new();
        let (k2, k3) = (KeyPair::generate(), KeyPair::generate());
        fx.force_key(&k2, &[]);
        fx.force_key(&k3, &[]);
        let p: proto::Publisher = testkit::assert_ok(&fx.threshold("acme", "2"));
        assert_eq!(p.threshold, 2);
        (fx, k2, k3)
    }
}

/// One leaked key of a threshold-2 publisher signs alone, twice, or with a key that is not the
/// publisher's (another publisher's, or its own key relisted under another id): each is refused
/// with `threshold-not-met`, nothing written. Two distinct keys register, verify and launch, and
/// the audit line names both.
#[test]
fn threshold_one_leaked_key() {
    let (fx, k2, _k3) = Fx::two_of_three();
    let beta = KeyPair::generate();
    ok(&fx.publisher_add("beta", &beta, &[]));
    let entry = fx.entry("hello", "1.0.0");
    let before = fx.snap();
    let refuse = |keys: &[&KeyPair]| {
        let e = fx.refused(
            &before,
            &fx.add_signed(&entry, keys, &[]),
            Kind::ThresholdNotMet,
        );
        assert_eq!(e.field.as_deref(), Some("threshold"), "{e:?}");
        e
    };
    let e = refuse(&[&fx.key]);
    assert_eq!(e.value.as_deref(), Some("1/2"));
    assert!(e.next.unwrap().ends_with("--signature FILE.minisig"));
    let e = refuse(&[&fx.key, &fx.key]);
    assert_eq!(e.value.as_deref(), Some("1/2"));
    assert!(e.message.contains("a key counts once"), "{}", e.message);
    let e = refuse(&[&fx.key, &beta]);
    assert!(
        e.message.contains("not a key of publisher"),
        "{}",
        e.message
    );
    let relisted = fx.key.relisted();
    let e = refuse(&[&fx.key, &relisted]);
    assert_eq!(e.value.as_deref(), Some("1/2"));
    // Nor can the same key be trusted twice under two ids to count twice.
    let pk = relisted.pk_path(fx.dir.path());
    let out = fx.reg(&[
        "publisher",
        "rotate",
        "--id",
        "acme",
        "--force-by-owner",
        "--pubkey",
        pk.to_str().unwrap(),
    ]);
    let e = testkit::assert_refused(&out, 2, Kind::PubkeyMalformed);
    assert_eq!(before, fx.snap(), "the root changed on a refusal");
    assert!(e.message.contains(&fx.key.key_id()), "{}", e.message);
    // Two distinct keys of acme.
    let r: register::report::AddReport =
        testkit::assert_ok(&fx.add_signed(&entry, &[&fx.key, &k2], &[]));
    assert_eq!(r.key_id, Some(fx.key.key_id()));
    let name = Name::new("hello").unwrap();
    assert!(fx.root.entry_sig_n(&name, 1).exists());
    assert!(fx.root.plugins().join("hello.json.2.minisig").exists());
    let rec = fx.last_audit();
    assert_eq!(rec.key_ids, vec![fx.key.key_id(), k2.key_id()]);
    let v: verify::cli::EntryReport = testkit::assert_ok(&fx.verify("hello"));
    assert_eq!(v.key_ids, vec![fx.key.key_id(), k2.key_id()]);
    let out = fx.launch("hello");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let rec = fx.last_audit();
    assert_eq!(
        (rec.action, rec.outcome, rec.key_ids.len()),
        (AuditAction::Launch, AuditOutcome::Allowed, 2)
    );
    // `remove` takes every signature with the entry.
    let r: register::report::RemoveReport =
        testkit::assert_ok(&fx.reg(&["remove", "--name", "hello"]));
    assert_eq!(r.removed.len(), 3, "{:?}", r.removed);
    assert!(!fx.root.entry_sig_n(&name, 0).exists() && !fx.root.entry_sig_n(&name, 1).exists());
}

/// Raising the threshold makes entries with fewer signatures fail everywhere (verify, launch,
/// doctor) with a `next` that adds the missing signature; lowering it is recorded. A revoked second
/// key no longer counts; rotation to a new key restores the entry.
#[test]
fn threshold_raised_revoked_and_lowered() {
    let (fx, k2, k3) = Fx::two_of_three();
    ok(&fx.add_signed(&fx.entry("hello", "1.0.0"), &[&fx.key, &k2], &[]));
    ok(&fx.threshold("acme", "3"));
    let rec = fx.last_audit();
    assert_eq!(
        (rec.action, rec.detail.as_deref()),
        (AuditAction::PublisherThreshold, Some("threshold 2 -> 3"))
    );
    let e = testkit::assert_refused(&fx.verify("hello"), 1, Kind::ThresholdNotMet);
    assert_eq!(e.value.as_deref(), Some("2/3"));
    assert!(e
        .next
        .unwrap()
        .contains("--replace --signature FILE.minisig"));
    fx.launch_refused("hello", Kind::ThresholdNotMet);
    let doctor = run("dot-verify", &[os("doctor"), os("--root"), os(fx.r())]);
    let report: verify::doctor::DoctorReport = serde_json::from_slice(&doctor.stdout).unwrap();
    assert_eq!(doctor.status.code(), Some(1));
    let problem = report.entries[0].problem.clone().unwrap();
    testkit::assert_kind!(problem, Kind::ThresholdNotMet);
    // Lowering is recorded as such.
    ok(&fx.threshold("acme", "2"));
    let rec = fx.last_audit();
    assert_eq!(rec.detail.as_deref(), Some("threshold 3 -> 2 (lowered)"));
    ok(&fx.verify("hello"));
    // A revoked second key: its signature no longer counts.
    let kid2 = k2.key_id();
    ok(&fx.reg(&[
        "publisher",
        "revoke",
        "--id",
        "acme",
        "--key",
        &kid2,
        "--reason",
        "lost",
    ]));
    let e = testkit::assert_refused(&fx.verify("hello"), 1, Kind::ThresholdNotMet);
    assert!(e.message.contains("revoked"), "{}", e.message);
    fx.launch_refused("hello", Kind::ThresholdNotMet);
    let before = fx.snap();
    fx.refused(
        &before,
        &fx.add_signed(&fx.entry("hello", "1.0.1"), &[&fx.key, &k2], &["--replace"]),
        Kind::ThresholdNotMet,
    );
    // More than the keys left is refused; the other key restores the entry.
    testkit::assert_refused(&fx.threshold("acme", "3"), 2, Kind::Usage);
    ok(&fx.add_signed(&fx.entry("hello", "1.0.1"), &[&fx.key, &k3], &["--replace"]));
    ok(&fx.verify("hello"));
    // A replacement with fewer signatures leaves none of the old ones behind.
    ok(&fx.threshold("acme", "1"));
    ok(&fx.add_signed(&fx.entry("hello", "1.0.2"), &[&k3], &["--replace"]));
    let name = Name::new("hello").unwrap();
    assert!(!fx.root.entry_sig_n(&name, 1).exists());
    ok(&fx.verify("hello"));
}

/// A revoked key stays revoked when it is listed again under another key id (minisign's key id is
/// not signed): in another publisher, in the same one, or planted by hand; and a denied key stays
/// denied under another id.
#[test]
fn revoked_key_relisted_under_another_id() {
    let fx = Fx::new();
    let second = KeyPair::generate();
    fx.force_key(&second, &[]);
    let kid = fx.key.key_id();
    ok(&fx.reg(&[
        "publisher",
        "revoke",
        "--id",
        "acme",
        "--key",
        &kid,
        "--reason",
        "leaked",
    ]));
    let relisted = fx.key.relisted();
    assert_ne!(relisted.key_id(), kid);
    let before = fx.snap();
    fx.refused(
        &before,
        &fx.publisher_add("mallory", &relisted, &[]),
        Kind::KeyRevoked,
    );
    fx.force_key_refused(&relisted, Kind::KeyRevoked);
    // Planted by hand: a publisher record holding the relisted key, an entry it signed.
    testkit::install_publisher(
        &fx.root,
        &testkit::publisher_record("mallory", &[&relisted]),
    );
    let mut e = fx.entry("hello", "1.0.0");
    e.publisher = Some(Name::new("mallory").unwrap());
    let bytes = e.to_bytes();
    let exe = fs::read(&fx.exe).unwrap();
    testkit::install_entry(
        &fx.root,
        "hello",
        &bytes,
        Some(&relisted.sign(&bytes, true)),
        &exe,
    );
    let err = testkit::assert_refused(&fx.verify("hello"), 1, Kind::KeyRevoked);
    assert!(err.message.contains(&kid), "{}", err.message);
    fx.launch_refused("hello", Kind::KeyRevoked);
    // Nor does it sign a rotation for the record it was planted in.
    let fresh = KeyPair::generate();
    let (stmt, sig) = relisted.transition_to("mallory", &fresh);
    fs::write(fx.dir.join("in/rot.json"), stmt).unwrap();
    fs::write(fx.dir.join("in/rot.json.minisig"), sig).unwrap();
    let fresh_pk = fresh.pk_path(fx.dir.path());
    let rot = fx.dir.join("in/rot.json");
    let before = fx.snap();
    let out = fx.reg(&[
        "publisher",
        "rotate",
        "--id",
        "mallory",
        "--pubkey",
        fresh_pk.to_str().unwrap(),
        "--transition",
        rot.to_str().unwrap(),
    ]);
    fx.refused(&before, &out, Kind::KeyRevoked);
    // A key denied by id is denied by its bytes too.
    let kid2 = second.key_id();
    ok(&fx.reg(&["deny", "add", "--key", &kid2, "--reason", "pulled"]));
    let deny = proto::trust::DenyList::parse(&fs::read(fx.root.deny_list()).unwrap()).unwrap();
    assert_eq!(deny.ed25519.len(), 1);
    let again = second.relisted();
    let before = fx.snap();
    let err = fx.refused(
        &before,
        &fx.publisher_add("other", &again, &[]),
        Kind::Denied,
    );
    assert_eq!(err.value, Some(again.key_id()));
    testkit::install_publisher(&fx.root, &testkit::publisher_record("other", &[&again]));
    let mut e = fx.entry("hello", "1.0.0");
    e.publisher = Some(Name::new("other").unwrap());
    let bytes = e.to_bytes();
    testkit::install_entry(
        &fx.root,
        "hello",
        &bytes,
        Some(&again.sign(&bytes, true)),
        &exe,
    );
    let err = testkit::assert_refused(&fx.verify("hello"), 1, Kind::Denied);
    assert_eq!(err.value, Some(again.key_id()));
    // `deny remove` of the id the refusal names takes the bytes off the list too.
    ok(&fx.reg(&["deny", "remove", "--key", &again.key_id()]));
    ok(&fx.verify("hello"));
    // And a public key file denies its bytes directly.
    let pk = again.pk_path(fx.dir.path());
    ok(&fx.reg(&[
        "deny",
        "add",
        "--pubkey",
        pk.to_str().unwrap(),
        "--reason",
        "pulled again",
    ]));
    testkit::assert_refused(&fx.verify("hello"), 1, Kind::Denied);
}

/// A publisher at level `verified`: its `audit` entries are refused at registration and, after a
/// level change, at verification and launch (recorded); its `process` entries run. The level is in
/// `publisher list`, `dot-verify entry` and the audit log.
#[test]
fn verified_publisher_runs_only_under_process() {
    let fx = Fx::new();
    let gamma = KeyPair::generate();
    let p: proto::Publisher =
        testkit::assert_ok(&fx.publisher_add("gamma", &gamma, &["--level", "verified"]));
    assert_eq!(p.level, proto::publisher::Level::Verified);
    assert_eq!(
        fx.last_audit().level,
        Some(proto::publisher::Level::Verified)
    );
    let mut audit_entry = fx.entry("tool", "1.0.0");
    audit_entry.publisher = Some(Name::new("gamma").unwrap());
    audit_entry.containment = Containment::Audit;
    let before = fx.snap();
    let e = fx.refused(
        &before,
        &fx.add(&audit_entry, &gamma, &[]),
        Kind::LevelNeedsProcess,
    );
    // The level is the keeper's restriction: no command lowering it is offered.
    assert_eq!((e.next, e.next_argv), (None, None));
    let mut process_entry = audit_entry.clone();
    process_entry.containment = Containment::Process;
    ok(&fx.add(&process_entry, &gamma, &[]));
    let v: verify::cli::EntryReport = testkit::assert_ok(&fx.verify("tool"));
    assert_eq!(v.level, Some(proto::publisher::Level::Verified));
    // acme's audit entry, registered while acme was trusted, stops running when acme is verified.
    let mut hello = fx.entry("hello", "1.0.0");
    hello.containment = Containment::Audit;
    ok(&fx.add(&hello, &fx.key, &[]));
    ok(&fx.reg(&["publisher", "level", "--id", "acme", "--level", "verified"]));
    let rec = fx.last_audit();
    assert_eq!(
        (rec.action, rec.detail.as_deref()),
        (
            AuditAction::PublisherLevel,
            Some("level trusted -> verified")
        )
    );
    testkit::assert_refused(&fx.verify("hello"), 1, Kind::LevelNeedsProcess);
    let before = fx.audit().len();
    let target = fx.dir.join("out");
    let out = launch_into(fx.root.path(), "hello", &target, &["--allow-audit-plugin"])
        .output()
        .unwrap();
    testkit::assert_refused(&out, 1, Kind::LevelNeedsProcess);
    let after = fx.audit();
    assert_eq!(after.len(), before + 1);
    assert_eq!(after.last().unwrap().kind, Some(Kind::LevelNeedsProcess));
    let list: Vec<proto::Publisher> = testkit::assert_ok(&fx.reg(&["publisher", "list"]));
    let levels: Vec<_> = list.iter().map(|p| (p.id.as_str(), p.level)).collect();
    use proto::publisher::Level::Verified;
    assert_eq!(levels, [("acme", Verified), ("gamma", Verified)]);
    let text = String::from_utf8(fs::read(fx.root.publisher(&Name::new("acme").unwrap())).unwrap())
        .unwrap();
    assert!(text.contains("\"level\": \"verified\""), "{text}");
}

/// A second publisher takes over a name with `add --replace`: it is a change that needs consent
/// naming it; and once the owner pins names to publishers, a name outside a publisher's pins, or
/// pinned to another publisher, is refused everywhere.
#[test]
fn name_takeover_by_another_publisher() {
    let fx = Fx::new();
    let beta = KeyPair::generate();
    ok(&fx.publisher_add("beta", &beta, &[]));
    ok(&fx.add(&fx.entry("hello", "1.0.0"), &fx.key, &[]));
    let mut theirs = fx.entry("hello", "1.0.1");
    theirs.publisher = Some(Name::new("beta").unwrap());
    let before = fx.snap();
    let e = fx.refused(
        &before,
        &fx.add(&theirs, &beta, &["--replace"]),
        Kind::ChangesNeedConsent,
    );
    let changes = e.changes.clone().unwrap();
    let names: Option<[&str; 2]> = changes
        .publisher
        .as_ref()
        .map(|[a, b]| [a.as_str(), b.as_str()]);
    assert_eq!(names, Some(["acme", "beta"]));
    assert!(
        e.message.contains("publisher acme -> beta"),
        "{}",
        e.message
    );
    // The owner pins hello to acme: beta's hello is refused even with consent.
    let p: proto::Publisher = testkit::assert_ok(&fx.reg(&[
        "publisher",
        "names",
        "--id",
        "acme",
        "--names",
        "hello",
        "--names",
        "hello-*",
    ]));
    assert_eq!(p.names, ["hello", "hello-*"]);
    assert_eq!(fx.last_audit().action, AuditAction::PublisherNames);
    let token = e.value.unwrap();
    let before = fx.snap();
    let e = fx.refused(
        &before,
        &fx.add(&theirs, &beta, &["--replace", "--accept-changes", &token]),
        Kind::NameNotDelegated,
    );
    assert!(
        e.message.contains("pinned to publisher \"acme\""),
        "{}",
        e.message
    );
    let mut other = fx.entry("hello-x", "1.0.0");
    other.publisher = Some(Name::new("beta").unwrap());
    fx.refused(&before, &fx.add(&other, &beta, &[]), Kind::NameNotDelegated);
    // acme itself signs only inside its pins.
    let e = fx.refused(
        &before,
        &fx.add(&fx.entry("world", "1.0.0"), &fx.key, &[]),
        Kind::NameNotDelegated,
    );
    // The pins are the keeper's: no command widening them is offered.
    assert_eq!((e.next, e.next_argv), (None, None));
    ok(&fx.add(&fx.entry("hello-two", "1.0.0"), &fx.key, &[]));
    // Planted by hand, beta's hello is refused at verification and launch.
    let bytes = theirs.to_bytes();
    let exe = fs::read(&fx.exe).unwrap();
    testkit::install_entry(
        &fx.root,
        "hello",
        &bytes,
        Some(&beta.sign(&bytes, true)),
        &exe,
    );
    testkit::assert_refused(&fx.verify("hello"), 1, Kind::NameNotDelegated);
    fx.launch_refused("hello", Kind::NameNotDelegated);
}

/// `--input-file` reads with dot-launch's rights: a sensitive file (here `/etc/shadow`, named
/// directly and through a symlinked directory; a key under `.ssh`; a path the root policy adds) is
/// refused unless the invoker names the input with `--allow-sensitive-input`, and `--explain` says
/// which file is read and by whom.
#[test]
fn sensitive_input_file() {
    let env = common::Env::new();
    env.register_with(
        "files",
        &workspace_bin("hello"),
        "audit",
        &["--input", "data:file"],
    );
    let launch = |arg: &str, extra: &[&str]| {
        let mut args = vec!["--allow-audit-plugin", "--input-file", arg];
        args.extend_from_slice(extra);
        env.launch("files", &args).output().unwrap()
    };
    let runs = || env.runs();
    let e = testkit::assert_refused(
        &launch("data=/etc/shadow", &[]),
        1,
        Kind::InputFileSensitive,
    );
    assert_eq!(
        (e.value.as_deref(), e.path.as_deref()),
        (Some("data"), Some("/etc/shadow"))
    );
    assert!(e.next.unwrap().ends_with("--allow-sensitive-input data"));
    let link = env.dir.join("etc-link");
    std::os::unix::fs::symlink("/etc", &link).unwrap();
    let arg = format!("data={}/shadow", link.display());
    let e = testkit::assert_refused(&launch(&arg, &[]), 1, Kind::InputFileSensitive);
    assert_eq!(
        e.path.as_deref(),
        Some("/etc/shadow"),
        "matched after resolving"
    );
    let ssh = env.dir.join("home/.ssh");
    fs::create_dir_all(&ssh).unwrap();
    fs::write(ssh.join("id_ed25519"), b"secret").unwrap();
    let arg = format!("data={}/id_ed25519", ssh.display());
    testkit::assert_refused(&launch(&arg, &[]), 1, Kind::InputFileSensitive);
    assert!(runs().is_empty(), "nothing was run");
    // The policy extends the list.
    let plain = env.dir.join("plain.txt");
    fs::write(&plain, b"twelve bytes").unwrap();
    let arg = format!("data={}", plain.display());
    let out = launch(&arg, &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let glob = format!("{}/*.txt", env.dir.path().display());
    ok(&tool("dot-register")
        .args(["policy", "set", "--root"])
        .arg(&env.root)
        .args(["--sensitive-input", &glob])
        .output()
        .unwrap());
    let e = testkit::assert_refused(&launch(&arg, &[]), 1, Kind::InputFileSensitive);
    assert!(e.message.contains(&glob), "{}", e.message);
    // Named by the invoker, it is read, and --explain says by whom.
    let x: proto::explain::Explanation = testkit::assert_ok(&launch(
        &arg,
        &["--allow-sensitive-input", "data", "--explain"],
    ));
    let f = &x.input_files[0];
    assert_eq!(f.sensitive.as_deref(), Some(glob.as_str()));
    assert_eq!(f.resolved, plain.display().to_string());
    let uid = nix::unistd::geteuid().as_raw();
    assert!(f.read_by.contains(&format!("uid {uid}")), "{}", f.read_by);
    let out = launch(&arg, &["--allow-sensitive-input", "data"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // An allowance for an input not given is a usage error.
    testkit::assert_refused(
        &launch(&arg, &["--allow-sensitive-input", "other"]),
        2,
        Kind::Usage,
    );
}

/// `--input-file` through a magic link of `/proc` (`/proc/PID/root/…`) reaches a file of another
/// mount namespace, whose path means another file here: a user's namespace binds a sensitive
/// directory under a harmless name, and root's launch would read the real file while the match saw
/// the harmless path. Such a path is refused (`input-file-unsafe`), and so is `/proc/self/root/…`;
/// a file of the proc filesystem mounted elsewhere is sensitive as `/proc/**`.
#[test]
fn sensitive_input_through_another_mount_namespace() {
    common::require_program("unshare", "util-linux");
    let env = common::Env::new();
    env.register_with(
        "files",
        &workspace_bin("hello"),
        "audit",
        &["--input", "data:file"],
    );
    let launch = |path: &Path| {
        let arg = format!("data={}", path.display());
        env.launch("files", &["--allow-audit-plugin", "--input-file", &arg])
            .output()
            .unwrap()
    };
    let secret = env.dir.join("secret");
    fs::create_dir(&secret).unwrap();
    fs::write(secret.join("data"), b"the secret\n").unwrap();
    ok(&tool("dot-register")
        .args(["policy", "set", "--root"])
        .arg(&env.root)
        .args(["--sensitive-input", &format!("{}/**", secret.display())])
        .output()
        .unwrap());
    let e = testkit::assert_refused(&launch(&secret.join("data")), 1, Kind::InputFileSensitive);
    assert_eq!(e.value.as_deref(), Some("data"));
    // Another mount namespace binds the secret directory at ns/x (only there).
    let bound = env.dir.join("ns/x");
    fs::create_dir_all(&bound).unwrap();
    let ready = env.dir.join("ready");
    let mut holder = std::process::Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount --bind "$1" "$2" && : > "$3" && exec sleep 120"#)
        .arg("sh")
        .args([&secret, &bound, &ready])
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !ready.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the namespace never got ready"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let rel = bound.strip_prefix("/").unwrap().join("data");
    let through = Path::new("/proc")
        .join(holder.id().to_string())
        .join("root")
        .join(&rel);
    assert_eq!(
        fs::read(&through).unwrap(),
        b"the secret\n",
        "the path reaches the secret"
    );
    let e = testkit::assert_refused(&launch(&through), 1, Kind::InputFileUnsafe);
    assert!(e.message.contains("magic link"), "{}", e.message);
    holder.kill().unwrap();
    holder.wait().unwrap();
    // Our own namespace through a magic link: refused alike.
    let plain = env.dir.join("plain.txt");
    fs::write(&plain, b"plain\n").unwrap();
    let own = Path::new("/proc/self/root").join(plain.strip_prefix("/").unwrap());
    testkit::assert_refused(&launch(&own), 1, Kind::InputFileUnsafe);
    assert!(
        env.runs().is_empty() && env.target_files().is_empty(),
        "nothing ran"
    );
    // The proc filesystem mounted elsewhere: sensitive as /proc/**.
    let p = env.dir.join("p");
    fs::create_dir(&p).unwrap();
    let inner = env.launch(
        "files",
        &[
            "--allow-audit-plugin",
            "--input-file",
            &format!("data={}/self/status", p.display()),
        ],
    );
    let out = std::process::Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount -t proc proc "$1" || exit 97; shift; exec "$@""#)
        .arg("sh")
        .arg(&p)
        .arg(inner.get_program())
        .args(inner.get_args())
        .env_remove("DOT_FAILPOINT")
        .env_remove("DOT_ROOT")
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 1, Kind::InputFileSensitive);
    assert!(e.message.contains("/proc/**"), "{}", e.message);
    // A plain file is read as before.
    let out = launch(&plain);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// Environment names that load code the digest does not pin are refused whole families at a
/// time: Lua's versioned names (`LUA_INIT_5_4`, read before `LUA_INIT`), OpenSSL's configuration
/// and modules, Java's class path, Python's warnings (which import modules), GLib, GTK, Qt and
/// GStreamer module paths. An entry signed before a name was refused is refused when it is read,
/// naming the field.
#[test]
fn code_loading_environment_names_are_refused() {
    let fx = Fx::new();
    for name in [
        "LUA_INIT_5_4",
        "LUA_PATH_5_4",
        "LUA_CPATH_5_4",
        "OPENSSL_CONF",
        "OPENSSL_MODULES",
        "CLASSPATH",
        "PYTHONWARNINGS",
        "GEM_PATH",
        "GIO_EXTRA_MODULES",
        "GTK_MODULES",
        "QT_PLUGIN_PATH",
        "GST_PLUGIN_PATH",
    ] {
        let out = run(
            "dot-register",
            &[
                os("entry"),
                os("new"),
                os("--name"),
                os("x"),
                os("--exe"),
                os(&fx.exe),
                os("--publisher"),
                os("acme"),
                os("--containment"),
                os("process"),
                os("--version"),
                os("1.0.0"),
                os("--env"),
                os(name),
            ],
        );
        let e = testkit::assert_refused(&out, 2, Kind::Usage);
        assert!(e.message.contains(name), "{name}: {}", e.message);
        assert!(
            e.message.contains("cannot be declared"),
            "{name}: {}",
            e.message
        );
    }
    // Signed with such a name before it was refused, planted: refused at verification, launch.
    let entry = fx.entry("hello", "1.0.0");
    let text = String::from_utf8(entry.to_bytes()).unwrap();
    let text = text.replacen('{', "{\"env\":[\"LUA_INIT_5_4\"],", 1);
    let bytes = text.into_bytes();
    let name = Name::new("hello").unwrap();
    fs::write(fx.root.entry(&name), &bytes).unwrap();
    fs::write(fx.root.entry_sig(&name), fx.key.sign(&bytes, true)).unwrap();
    let e = testkit::assert_refused(&fx.verify("hello"), 2, Kind::EntryMalformed);
    assert_eq!(e.field.as_deref(), Some("env[0]"));
    assert!(e.message.contains("LUA_INIT_5_4"), "{}", e.message);
    let out = fx.launch("hello");
    testkit::assert_refused(&out, 2, Kind::EntryMalformed);
}

/// In a development root a publisher's signed entry replaced by a local one (`dev --replace`) is
/// a change of who vouches for the name: it needs `--accept-changes` naming it, as another
/// publisher would.
#[test]
fn a_signed_entry_replaced_by_a_local_one_needs_consent() {
    let dir = TempDir::new();
    let root = dir.join("dev");
    common::init_dev_root(&root);
    let key = KeyPair::generate();
    let pk = key.pk_path(dir.path());
    ok(&run(
        "dot-register",
        &[
            os("publisher"),
            os("add"),
            os("--root"),
            os(&root),
            os("--id"),
            os("acme"),
            os("--pubkey"),
            os(&pk),
        ],
    ));
    let exe = dir.join("hello");
    testkit::copy_exe(&workspace_bin("hello"), &exe);
    let entry = testkit::entry_for("hello", &exe, Containment::Process, Some("acme"));
    let bytes = entry.to_bytes();
    let (e, s) = (dir.join("hello.json"), dir.join("hello.json.minisig"));
    fs::write(&e, &bytes).unwrap();
    fs::write(&s, key.sign(&bytes, true)).unwrap();
    ok(&run(
        "dot-register",
        &[
            os("add"),
            os("--root"),
            os(&root),
            os("--entry"),
            os(&e),
            os("--signature"),
            os(&s),
            os("--exe"),
            os(&exe),
        ],
    ));
    let dev = |extra: &[&str]| {
        let mut c = tool("dot-register");
        c.args(["dev", "--root"])
            .arg(&root)
            .args(["--name", "hello", "--exe"])
            .arg(&exe)
            .args(["--containment", "process", "--replace"])
            .args(extra);
        c.output().unwrap()
    };
    let before = testkit::tree_snapshot(&root);
    let err = testkit::assert_refused(&dev(&[]), 1, Kind::ChangesNeedConsent);
    assert_eq!(before, testkit::tree_snapshot(&root), "nothing changed");
    let changes = err.changes.unwrap();
    assert_eq!(
        changes.trust,
        Some([proto::Trust::Signed, proto::Trust::Local])
    );
    assert!(
        err.message.contains("trust signed -> local"),
        "{}",
        err.message
    );
    let token = err.value.unwrap();
    let r: register::report::AddReport = testkit::assert_ok(&dev(&["--accept-changes", &token]));
    assert_eq!(r.trust, proto::Trust::Local);
}

/// The minisign CLI prints a key id without its leading zeros (about one key in 16): that id, as
/// printed, revokes the key and denies it.
#[test]
fn key_ids_as_minisign_prints_them() {
    let fx = Fx::new();
    let key = loop {
        let k = KeyPair::generate();
        if k.key_id().starts_with('0') {
            break k;
        }
    };
    let printed = key.key_id().trim_start_matches('0').to_owned();
    assert!(printed.len() < 16);
    fx.force_key(&key, &[]);
    let p: proto::Publisher = testkit::assert_ok(&fx.reg(&[
        "publisher",
        "revoke",
        "--id",
        "acme",
        "--key",
        &printed,
        "--reason",
        "leaked",
    ]));
    let k = p.keys.iter().find(|k| k.key_id == key.key_id()).unwrap();
    assert!(k.revoked.is_some());
    assert_eq!(fx.last_audit().key_id, Some(key.key_id()));
    let d: proto::trust::DenyList =
        testkit::assert_ok(&fx.reg(&["deny", "add", "--key", &printed, "--reason", "leaked"]));
    assert_eq!(d.keys[0].value, key.key_id());
    assert_eq!(d.ed25519.len(), 1, "denied by its bytes too");
    let d: proto::trust::DenyList =
        testkit::assert_ok(&fx.reg(&["deny", "remove", "--key", &printed]));
    assert!(d.keys.is_empty() && d.ed25519.is_empty());
    testkit::assert_refused(
        &fx.reg(&["deny", "add", "--key", "12345678901234567", "--reason", "x"]),
        2,
        Kind::Usage,
    );
}

/// `deny add --key ID` of a key no trust store in reach lists cannot record the key's bytes, and
/// the id alone is no deny (minisign's key id is covered by no signature: the same key comes back
/// under another id): it is refused, nothing written, and `--pubkey` denies the key itself, under
/// whatever id it is listed later.
#[test]
fn a_key_denied_before_it_is_listed_is_denied_by_its_bytes() {
    let fx = Fx::new();
    let stranger = KeyPair::generate();
    let before = fx.snap();
    let e = fx.refused(
        &before,
        &fx.reg(&[
            "deny",
            "add",
            "--key",
            &stranger.key_id(),
            "--reason",
            "leaked",
        ]),
        Kind::KeyUnknown,
    );
    assert_eq!(
        (e.field.as_deref(), e.value.as_deref()),
        (Some("key_id"), Some(stranger.key_id().as_str()))
    );
    assert!(e.message.contains("--pubkey"), "{}", e.message);
    let pk = stranger.pk_path(fx.dir.path());
    ok(&fx.reg(&[
        "deny",
        "add",
        "--pubkey",
        pk.to_str().unwrap(),
        "--reason",
        "leaked",
    ]));
    let before = fx.snap();
    let again = stranger.relisted();
    let e = fx.refused(
        &before,
        &fx.publisher_add("later", &again, &[]),
        Kind::Denied,
    );
    assert_eq!(e.value, Some(again.key_id()));
}

/// With a maximum signature age, a signature claiming a time in the future would never grow old:
/// beyond a small skew it is refused (`signature-time-future`) at registration, verification and
/// launch; within the skew it is accepted.
#[test]
fn a_signature_from_the_future_never_grows_old() {
    let fx = Fx::new();
    ok(&fx.reg(&["policy", "set", "--max-signature-age-secs", "86400"]));
    let entry = fx.entry("hello", "1.0.0");
    let bytes = entry.to_bytes();
    let year_2100 = 4_102_444_800;
    let before = fx.snap();
    let e = fx.refused(
        &before,
        &fx.add_raw(&bytes, &fx.key.sign_at(&bytes, year_2100), &fx.exe, &[]),
        Kind::SignatureTimeFuture,
    );
    assert_eq!(e.value, Some(fx.key.key_id()));
    assert!(e.message.contains("4102444800"), "{}", e.message);
    let exe = fs::read(&fx.exe).unwrap();
    testkit::install_entry(
        &fx.root,
        "hello",
        &bytes,
        Some(&fx.key.sign_at(&bytes, year_2100)),
        &exe,
    );
    testkit::assert_refused(&fx.verify("hello"), 1, Kind::SignatureTimeFuture);
    fx.launch_refused("hello", Kind::SignatureTimeFuture);
    // A clock a minute ahead of ours is within the skew.
    let soon = verify::trust::now() + 60;
    ok(&fx.add_raw(
        &bytes,
        &fx.key.sign_at(&bytes, soon),
        &fx.exe,
        &["--replace"],
    ));
    ok(&fx.verify("hello"));
}
