//! `dot-verify entry`: exactly the check `dot-launch` makes before spawning. Every refusal is its
//! own test; each asserts the exit code, the error kind, and that the root was not changed.
#![allow(clippy::unwrap_used)]

use assert_cmd::cargo::cargo_bin_cmd;
use proto::layout::Root;
use proto::{Containment, ErrorObject, Kind, Name, Trust};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Output;
use testkit::{KeyPair, TempDir};
use verify::cli::EntryReport;

const EXE: &[u8] = b"\x7fELF not really, but audit entries are not parsed as ELF\n";

/// A root with publisher `acme` (one key) and nothing registered.
struct Fx {
    _dir: TempDir,
    root: Root,
    key: KeyPair,
}

fn root(dev: bool) -> Fx {
    let dir = TempDir::new();
    let root = testkit::make_root(&dir.join("root"), dev);
    let key = KeyPair::generate();
    testkit::install_publisher(&root, &testkit::publisher_record("acme", &[&key]));
    Fx {
        _dir: dir,
        root,
        key,
    }
}

impl Fx {
    /// Registers `hello` signed by acme's key over `entry_bytes`, pinning `exe`.
    fn install_signed(&self, entry_bytes: &[u8], exe: &[u8], prehashed: bool) {
        let sig = self.key.sign(entry_bytes, prehashed);
        testkit::install_entry(&self.root, "hello", entry_bytes, Some(&sig), exe);
    }

    fn verify(&self, name: &str) -> Output {
        cargo_bin_cmd!("dot-verify")
            .args(["entry", "--root"])
            .arg(self.root.path())
            .arg(name)
            .output()
            .unwrap()
    }

    /// Runs `dot-verify entry NAME`, asserts the refusal and that nothing changed.
    fn refused(&self, name: &str, code: i32, kind: Kind) -> ErrorObject {
        let before = testkit::tree_snapshot(self.root.path());
        let out = self.verify(name);
        let e = testkit::assert_refused(&out, code, kind);
        assert_eq!(before, testkit::tree_snapshot(self.root.path()));
        e
    }

    fn store_file(&self, exe: &[u8]) -> std::path::PathBuf {
        self.root.store_file(&proto::Sha256::of(exe))
    }
}

fn signed_entry(containment: Containment, exe: &[u8]) -> proto::Entry {
    testkit::entry_for_bytes("hello", exe, containment, Some("acme"))
}

fn static_exe() -> Vec<u8> {
    fs::read(testkit::static_fixture("hello")).unwrap()
}

/// The entry's JSON with one change, as bytes.
fn edited(entry: &proto::Entry, edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v = serde_json::to_value(entry).unwrap();
    edit(&mut v);
    serde_json::to_vec_pretty(&v).unwrap()
}

// ---- accepted ----------------------------------------------------------------------------------

#[test]
fn prints_the_limits_a_launch_gets() {
    use proto::limits::{DeclaredLimits, Limits, Preset};
    let fx = root(false);
    let plain = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&plain.to_bytes(), EXE, true);
    let report: EntryReport = testkit::assert_ok(&fx.verify("hello"));
    assert_eq!(report.limits, Limits::STANDARD);
    let mut strict = plain.clone();
    strict.limits = Some(DeclaredLimits {
        preset: Some(Preset::Strict),
        deadline_ms: Some(60_000),
        ..DeclaredLimits::default()
    });
    fx.install_signed(&strict.to_bytes(), EXE, true);
    let report: EntryReport = testkit::assert_ok(&fx.verify("hello"));
    assert_eq!(
        report.limits,
        Limits {
            deadline_ms: 60_000,
            ..Limits::STRICT
        }
    );
}

#[test]
fn accepts_signed_audit_entry_and_prints_it() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&entry.to_bytes(), EXE, true);
    let before = testkit::tree_snapshot(fx.root.path());
    let report: EntryReport = testkit::assert_ok(&fx.verify("hello"));
    assert_eq!(
        (&report.name, &report.version, report.sha256, &report.inputs),
        (&entry.name, &entry.version, entry.sha256, &entry.inputs)
    );
    // The fixture bytes are not a static ELF: accepted under the owner's grant, unpinned.
    assert_eq!(report.dependencies, proto::trust::Dependencies::Unpinned);
    assert_eq!(report.trust, Trust::Signed);
    assert_eq!(report.publisher, Some(Name::new("acme").unwrap()));
    assert_eq!(report.size, EXE.len() as u64);
    assert_eq!(before, testkit::tree_snapshot(fx.root.path()));
}

#[test]
fn accepts_legacy_signature() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&entry.to_bytes(), EXE, false);
    let report: EntryReport = testkit::assert_ok(&fx.verify("hello"));
    assert_eq!(report.sha256, proto::Sha256::of(EXE));
}

#[test]
fn accepts_static_executable_for_process() {
    let fx = root(false);
    let exe = static_exe();
    let entry = signed_entry(Containment::Process, &exe);
    fx.install_signed(&entry.to_bytes(), &exe, true);
    let report: EntryReport = testkit::assert_ok(&fx.verify("hello"));
    assert_eq!(report.containment, Containment::Process);
    assert_eq!(report.dependencies, proto::trust::Dependencies::Pinned);
}

#[test]
fn accepts_local_entry_in_dev_root() {
    let fx = root(true);
    let entry = testkit::entry_for_bytes("hello", EXE, Containment::Audit, None);
    testkit::install_entry(&fx.root, "hello", &entry.to_bytes(), None, EXE);
    let report: EntryReport = testkit::assert_ok(&fx.verify("hello"));
    assert_eq!(report.trust, Trust::Local);
    assert_eq!(report.publisher, None);
}

#[test]
fn verify_entry_library_returns_the_open_pinned_file() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&entry.to_bytes(), EXE, true);
    let v = verify::entry::verify_entry(&fx.root, &Name::new("hello").unwrap()).unwrap();
    assert_eq!(v.exe_path, fx.store_file(EXE));
    assert_eq!(v.key_id, Some(fx.key.key_id()));
    assert_eq!(v.elf, None);
    assert!(!v.dev_root);
    assert_eq!(
        verify::digest::digest_file(&v.exe).unwrap(),
        (proto::Sha256::of(EXE), EXE.len() as u64)
    );
}

// ---- names, root, entry file -------------------------------------------------------------------

#[test]
fn refuses_bad_names() {
    let fx = root(false);
    let long = "x".repeat(65);
    for bad in ["../x", "a/b", "", ".", "..", "Hello", long.as_str()] {
        let e = fx.refused(bad, 2, Kind::BadName);
        assert_eq!(e.value.as_deref(), Some(bad), "{e:?}");
    }
}

/// `recover` is a `dot-launch` subcommand, never an entry's name: refused as the name of an entry
/// (`entry-malformed`, field `name`), with no command offering to register what cannot be.
#[test]
fn refuses_the_reserved_name_recover_and_offers_no_registration() {
    let fx = root(true);
    let e = fx.refused("recover", 2, Kind::EntryMalformed);
    assert_eq!(e.field.as_deref(), Some("name"), "{e:?}");
    assert_eq!(e.value.as_deref(), Some("recover"), "{e:?}");
    assert_eq!((e.next, e.next_argv), (None, None));
    assert!(e.message.contains("reserved"));
}

#[test]
fn refuses_missing_entry_and_says_how_to_register() {
    let fx = root(false);
    let e = fx.refused("hello", 1, Kind::EntryMissing);
    assert!(testkit::bare(e.next.as_deref())
        .unwrap()
        .starts_with("dot-register add --root"));
}

#[test]
fn refuses_missing_root_and_says_how_to_create_it() {
    let dir = TempDir::new();
    let out = cargo_bin_cmd!("dot-verify")
        .args(["entry", "--root"])
        .arg(dir.join("nope"))
        .arg("hello")
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 1, Kind::RootMissing);
    assert_eq!(
        testkit::bare(e.next.as_deref()),
        Some(format!(
            "dot-register init --root {}",
            dir.join("nope").display()
        ))
    );
    assert!(!dir.join("nope").exists());
}

#[test]
fn refuses_root_with_missing_layout_directory() {
    let fx = root(false);
    fs::remove_dir(fx.root.store()).unwrap();
    fx.refused("hello", 1, Kind::RootMissing);
}

#[test]
fn refuses_group_writable_root() {
    let fx = root(false);
    fs::set_permissions(fx.root.plugins(), fs::Permissions::from_mode(0o770)).unwrap();
    fx.refused("hello", 1, Kind::RootUnsafe);
}

#[test]
fn refuses_root_owned_by_another_user() {
    let fx = root(false);
    std::os::unix::fs::chown(fx.root.path(), Some(65534), None).unwrap();
    fx.refused("hello", 1, Kind::RootUnsafe);
}

#[test]
fn refuses_symlinked_entry_file() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    let elsewhere = fx._dir.join("hello.json");
    fs::write(&elsewhere, entry.to_bytes()).unwrap();
    std::os::unix::fs::symlink(&elsewhere, fx.root.entry(&Name::new("hello").unwrap())).unwrap();
    fx.refused("hello", 1, Kind::RootUnsafe);
}

/// A root whose `plugins.d/hello.json` is a signed entry edited by `edit` (without its signature).
fn with_edited_entry(edit: impl FnOnce(&mut serde_json::Value)) -> Fx {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    let bytes = edited(&entry, edit);
    fs::write(fx.root.entry(&entry.name), &bytes).unwrap();
    fs::set_permissions(
        fx.root.entry(&entry.name),
        fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    fx
}

fn refuses_malformed(edit: impl FnOnce(&mut serde_json::Value), field: Option<&str>) {
    let e = with_edited_entry(edit).refused("hello", 2, Kind::EntryMalformed);
    assert_eq!(e.field.as_deref(), field, "{e:?}");
}

#[test]
fn refuses_unknown_entry_field() {
    refuses_malformed(|v| v["extra"] = true.into(), Some("extra"));
}

#[test]
fn refuses_missing_entry_field() {
    refuses_malformed(
        |v| {
            v.as_object_mut().unwrap().remove("size");
        },
        Some("size"),
    );
}

#[test]
fn refuses_mistyped_entry_field() {
    refuses_malformed(|v| v["size"] = "10".into(), Some("size"));
}

#[test]
fn refuses_unknown_containment() {
    refuses_malformed(
        |v| v["containment"] = "container".into(),
        Some("containment"),
    );
}

#[test]
fn refuses_unparsable_protocol_requirement() {
    refuses_malformed(|v| v["protocol"] = "one or two".into(), Some("protocol"));
}

#[test]
fn refuses_duplicate_input_names() {
    refuses_malformed(
        |v| {
            v["inputs"] = serde_json::json!([
                {"name": "a", "kind": "string", "required": true},
                {"name": "a", "kind": "file", "required": false}
            ])
        },
        Some("inputs"),
    );
}

#[test]
fn refuses_bad_name_inside_entry() {
    refuses_malformed(|v| v["name"] = "../x".into(), Some("name"));
}

#[test]
fn refuses_oversized_entry() {
    let fx = with_edited_entry(|v| v["protocol"] = "x".repeat(70 * 1024).into());
    let e = fx.refused("hello", 1, Kind::TooLarge);
    assert_eq!(e.field.as_deref(), Some("max_entry_bytes"), "{e:?}");
}

#[test]
fn refuses_entry_whose_name_differs_from_its_file() {
    let fx = root(false);
    let mut entry = signed_entry(Containment::Audit, EXE);
    entry.name = Name::new("other").unwrap();
    fx.install_signed(&entry.to_bytes(), EXE, true);
    let e = fx.refused("hello", 1, Kind::EntryNameMismatch);
    assert_eq!(e.value.as_deref(), Some("other"));
}

// ---- trust -------------------------------------------------------------------------------------

#[test]
fn refuses_signed_entry_without_signature() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    testkit::install_entry(&fx.root, "hello", &entry.to_bytes(), None, EXE);
    fx.refused("hello", 1, Kind::SignatureMissing);
}

#[test]
fn refuses_publisher_not_in_trust_store() {
    let fx = root(false);
    let mut entry = signed_entry(Containment::Audit, EXE);
    entry.publisher = Some(Name::new("stranger").unwrap());
    fx.install_signed(&entry.to_bytes(), EXE, true);
    let e = fx.refused("hello", 1, Kind::PublisherUnknown);
    assert!(testkit::bare(e.next.as_deref())
        .unwrap()
        .starts_with("dot-register publisher add --root"));
}

#[test]
fn refuses_revoked_publisher() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&entry.to_bytes(), EXE, true);
    let mut p = testkit::publisher_record("acme", &[&fx.key]);
    p.revoked = Some(proto::publisher::Revocation {
        at: 2,
        reason: "key leaked".into(),
    });
    testkit::install_publisher(&fx.root, &p);
    fx.refused("hello", 1, Kind::PublisherRevoked);
}

#[test]
fn refuses_revoked_key() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&entry.to_bytes(), EXE, true);
    let mut p = testkit::publisher_record("acme", &[&fx.key]);
    p.keys[0].revoked = Some(proto::publisher::Revocation {
        at: 2,
        reason: "rotated".into(),
    });
    testkit::install_publisher(&fx.root, &p);
    let e = fx.refused("hello", 1, Kind::KeyRevoked);
    assert_eq!(e.value, Some(fx.key.key_id()));
}

#[test]
fn refuses_signature_by_another_key() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    let bytes = entry.to_bytes();
    let sig = KeyPair::generate().sign(&bytes, true);
    testkit::install_entry(&fx.root, "hello", &bytes, Some(&sig), EXE);
    fx.refused("hello", 1, Kind::SignatureInvalid);
}

#[test]
fn refuses_malformed_signature_file() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    testkit::install_entry(
        &fx.root,
        "hello",
        &entry.to_bytes(),
        Some(b"untrusted comment: x\nnot base64\n"),
        EXE,
    );
    fx.refused("hello", 1, Kind::SignatureInvalid);
}

/// Signs the original entry, installs the edited bytes with that signature.
fn refuses_changed_after_signing(edit: impl FnOnce(&mut proto::Entry), prehashed: bool) {
    let fx = root(false);
    let entry = signed_entry(Containment::Process, EXE);
    let sig = fx.key.sign(&entry.to_bytes(), prehashed);
    let mut changed = entry.clone();
    edit(&mut changed);
    testkit::install_entry(&fx.root, "hello", &changed.to_bytes(), Some(&sig), EXE);
    let e = fx.refused("hello", 1, Kind::SignatureInvalid);
    assert_eq!(
        e.path,
        Some(fx.root.entry_sig(&entry.name).display().to_string())
    );
}

#[test]
fn refuses_containment_weakened_after_signing() {
    refuses_changed_after_signing(|e| e.containment = Containment::Audit, true);
}

#[test]
fn refuses_containment_weakened_after_legacy_signing() {
    refuses_changed_after_signing(|e| e.containment = Containment::Audit, false);
}

#[test]
fn refuses_limits_raised_or_added_after_signing() {
    use proto::limits::{DeclaredLimits, Preset};
    // An entry without limits runs under the standard preset: adding a member changes the bytes.
    refuses_changed_after_signing(
        |e| {
            e.limits = Some(DeclaredLimits {
                cpu_seconds: Some(3600),
                ..DeclaredLimits::default()
            })
        },
        true,
    );
    refuses_changed_after_signing(
        |e| {
            e.limits = Some(DeclaredLimits {
                preset: Some(Preset::Standard),
                ..DeclaredLimits::default()
            })
        },
        false,
    );
}

#[test]
fn refuses_sha256_changed_after_signing() {
    refuses_changed_after_signing(|e| e.sha256 = proto::Sha256::of(b"other"), true);
}

#[test]
fn refuses_inputs_changed_after_signing() {
    refuses_changed_after_signing(|e| e.inputs.clear(), true);
}

#[test]
fn refuses_version_changed_after_signing() {
    refuses_changed_after_signing(|e| e.version = semver::Version::new(9, 0, 0), true);
}

#[test]
fn refuses_one_byte_of_whitespace_added_after_signing() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    let bytes = entry.to_bytes();
    let sig = fx.key.sign(&bytes, true);
    let mut changed = bytes.clone();
    changed.push(b'\n');
    testkit::install_entry(&fx.root, "hello", &changed, Some(&sig), EXE);
    fx.refused("hello", 1, Kind::SignatureInvalid);
}

#[test]
fn refuses_local_entry_in_non_dev_root() {
    let fx = root(false);
    let entry = testkit::entry_for_bytes("hello", EXE, Containment::Audit, None);
    testkit::install_entry(&fx.root, "hello", &entry.to_bytes(), None, EXE);
    fx.refused("hello", 1, Kind::LocalEntryNotDev);
}

// ---- the pinned executable ---------------------------------------------------------------------

#[test]
fn refuses_dynamic_executable_for_process() {
    let fx = root(false);
    let exe = fs::read("/bin/true").unwrap();
    let entry = signed_entry(Containment::Process, &exe);
    fx.install_signed(&entry.to_bytes(), &exe, true);
    let e = fx.refused("hello", 1, Kind::NotStaticElf);
    assert!(e.message.contains("PT_INTERP"), "{}", e.message);
}

#[test]
fn refuses_script_for_process() {
    let fx = root(false);
    let entry = signed_entry(Containment::Process, testkit::SCRIPT);
    fx.install_signed(&entry.to_bytes(), testkit::SCRIPT, true);
    let e = fx.refused("hello", 1, Kind::NotStaticElf);
    assert!(e.message.contains("script"), "{}", e.message);
}

/// Rewrites the pinned copy as root would have to: chmod writable, write, chmod back.
fn rewrite_store(path: &std::path::Path, bytes: &[u8]) {
    fs::set_permissions(path, fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(path, bytes).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o500)).unwrap();
}

#[test]
fn catches_pinned_copy_changed_after_registration() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&entry.to_bytes(), EXE, true);
    testkit::assert_ok::<EntryReport>(&fx.verify("hello"));
    let mut other = EXE.to_vec();
    other[0] ^= 1;
    rewrite_store(&fx.store_file(EXE), &other);
    let e = fx.refused("hello", 1, Kind::StoreTampered);
    assert_eq!(e.path, Some(fx.store_file(EXE).display().to_string()));
    assert!(e.next.unwrap().contains("--replace"));
}

#[test]
fn catches_pinned_copy_grown_after_registration() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&entry.to_bytes(), EXE, true);
    let mut other = EXE.to_vec();
    other.push(0);
    rewrite_store(&fx.store_file(EXE), &other);
    fx.refused("hello", 1, Kind::StoreTampered);
}

#[test]
fn catches_missing_pinned_copy() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&entry.to_bytes(), EXE, true);
    fs::remove_file(fx.store_file(EXE)).unwrap();
    fx.refused("hello", 1, Kind::StoreTampered);
}

#[test]
fn refuses_symlinked_pinned_copy() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&entry.to_bytes(), EXE, true);
    let store = fx.store_file(EXE);
    let elsewhere = fx._dir.join("exe");
    fs::rename(&store, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &store).unwrap();
    fx.refused("hello", 1, Kind::ExeSymlink);
}

#[test]
fn refuses_non_regular_pinned_copy() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&entry.to_bytes(), EXE, true);
    let store = fx.store_file(EXE);
    fs::remove_file(&store).unwrap();
    fs::create_dir(&store).unwrap();
    fx.refused("hello", 1, Kind::ExeNotRegular);
}

#[test]
fn refuses_setuid_pinned_copy() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&entry.to_bytes(), EXE, true);
    fs::set_permissions(fx.store_file(EXE), fs::Permissions::from_mode(0o4500)).unwrap();
    fx.refused("hello", 1, Kind::ExeSetid);
}

#[test]
fn refuses_world_writable_pinned_copy() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&entry.to_bytes(), EXE, true);
    fs::set_permissions(fx.store_file(EXE), fs::Permissions::from_mode(0o502)).unwrap();
    fx.refused("hello", 1, Kind::ExeUnsafeOwner);
}

#[test]
fn refuses_pinned_copy_owned_by_another_user() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&entry.to_bytes(), EXE, true);
    std::os::unix::fs::chown(fx.store_file(EXE), Some(65534), None).unwrap();
    fx.refused("hello", 1, Kind::ExeUnsafeOwner);
}

// ---- unpinned dependencies ---------------------------------------------------------------------

#[test]
fn refuses_unpinned_audit_executable_without_the_owners_grant() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&entry.to_bytes(), EXE, true);
    fs::remove_file(fx.root.entry_grant(&entry.name)).unwrap();
    let e = fx.refused("hello", 1, Kind::DynamicNotGranted);
    assert!(e.next.unwrap().ends_with("--replace --allow-dynamic"));
    // A grant for another executable grants nothing.
    let mut other = entry.clone();
    other.sha256 = proto::Sha256::of(b"another build");
    testkit::install_grant(&fx.root, &other);
    fx.refused("hello", 1, Kind::DynamicNotGranted);
}

// ---- the root's trust documents ----------------------------------------------------------------

/// Writes `bytes` as one of the root's private trust documents (mode 0600, as dot-register does).
fn write_trust_doc(path: &std::path::Path, bytes: &[u8]) {
    fs::write(path, bytes).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn refuses_when_a_trust_document_is_malformed() {
    let fx = root(false);
    let entry = signed_entry(Containment::Audit, EXE);
    fx.install_signed(&entry.to_bytes(), EXE, true);
    testkit::assert_ok::<EntryReport>(&fx.verify("hello"));
    let grant = fx.root.entry_grant(&entry.name);
    let good_grant = fs::read(&grant).unwrap();
    let cases: [(std::path::PathBuf, &[u8], &str); 4] = [
        (
            fx.root.deny_list(),
            br#"{"schema":1,"digests":[],"keys":[],"hosts":[]}"#,
            "hosts",
        ),
        (
            fx.root.policy(),
            br#"{"schema":1,"max_entry_bytes":0}"#,
            "max_entry_bytes",
        ),
        (fx.root.policy(), br#"{"schema":2}"#, "schema"),
        (grant.clone(), br#"{"schema":1,"name":"hello"}"#, "sha256"),
    ];
    for (path, bytes, field) in cases {
        write_trust_doc(&path, bytes);
        let e = fx.refused("hello", 2, Kind::TrustMalformed);
        assert_eq!(e.path, Some(path.display().to_string()), "{e:?}");
        assert_eq!(e.field.as_deref(), Some(field), "{e:?}");
        if path == grant {
            write_trust_doc(&path, &good_grant);
        } else {
            fs::remove_file(&path).unwrap();
        }
    }
    // Restored, the same root verifies again: the refusals were the documents' doing.
    testkit::assert_ok::<EntryReport>(&fx.verify("hello"));
}
