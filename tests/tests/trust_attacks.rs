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
