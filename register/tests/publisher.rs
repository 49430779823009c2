//! `dot-register publisher add|revoke|list`.
#![allow(clippy::unwrap_used)]

mod common;

use common::reg;
use proto::layout::Root;
use proto::{Kind, Name, Publisher};
use std::ffi::OsStr;
use std::fs;
use std::process::Output;
use testkit::{KeyPair, TempDir};

fn root() -> (TempDir, Root) {
    let d = TempDir::new();
    let root = Root::single(d.join("root"));
    testkit::make_root(root.path(), false);
    (d, root)
}

fn add(root: &Root, id: &str, pk: &std::path::Path) -> Output {
    reg([
        OsStr::new("publisher"),
        "add".as_ref(),
        "--root".as_ref(),
        root.path().as_os_str(),
        "--id".as_ref(),
        id.as_ref(),
        "--pubkey".as_ref(),
        pk.as_os_str(),
    ])
}

fn r(root: &Root) -> &str {
    root.path().to_str().unwrap()
}

#[test]
fn add_trusts_the_key_as_minisign_wrote_it() {
    let (d, root) = root();
    let key = KeyPair::generate();
    let p: Publisher = testkit::assert_ok(&add(&root, "acme", &key.pk_path(d.path())));
    assert_eq!(p.id, Name::new("acme").unwrap());
    assert_eq!(p.keys.len(), 1);
    assert_eq!(p.keys[0].key_id, key.key_id());
    assert_eq!(p.keys[0].public_key, key.public_key_b64());
    let on_disk = Publisher::parse(&fs::read(root.publisher(&p.id)).unwrap()).unwrap();
    assert_eq!(on_disk, p);
}

#[test]
fn adding_the_same_key_again_changes_nothing() {
    let (d, root) = root();
    let key = KeyPair::generate();
    testkit::assert_ok::<Publisher>(&add(&root, "acme", &key.pk_path(d.path())));
    let before = testkit::tree_snapshot(root.path());
    testkit::assert_ok::<Publisher>(&add(&root, "acme", &key.pk_path(d.path())));
    assert_eq!(before, testkit::tree_snapshot(root.path()));
}

#[test]
fn adding_a_second_key_is_a_rotation() {
    let (d, root) = root();
    let (k1, k2) = (KeyPair::generate(), KeyPair::generate());
    testkit::assert_ok::<Publisher>(&add(&root, "acme", &k1.pk_path(d.path())));
    let before = testkit::tree_snapshot(root.path());
    let e = testkit::assert_refused(
        &add(&root, "acme", &k2.pk_path(d.path())),
        1,
        Kind::TransitionMissing,
    );
    assert!(e.next.unwrap().contains("publisher rotate"));
    assert_eq!(before, testkit::tree_snapshot(root.path()));
    let (stmt, sig) = k1.transition_to("acme", &k2);
    let t = d.join("rotate.json");
    std::fs::write(&t, stmt).unwrap();
    std::fs::write(d.join("rotate.json.minisig"), sig).unwrap();
    let p: Publisher = testkit::assert_ok(&reg([
        "publisher",
        "rotate",
        "--root",
        r(&root),
        "--id",
        "acme",
        "--pubkey",
        k2.pk_path(d.path()).to_str().unwrap(),
        "--transition",
        t.to_str().unwrap(),
    ]));
    let ids: Vec<_> = p.keys.iter().map(|k| k.key_id.clone()).collect();
    assert_eq!(ids, vec![k1.key_id(), k2.key_id()]);
}

/// Writes a transition statement and its signature under `dir`; returns the `--transition` path.
fn write_transition(dir: &std::path::Path, name: &str, stmt: &[u8], sig: &[u8]) -> String {
    let t = dir.join(name);
    fs::write(&t, stmt).unwrap();
    fs::write(dir.join(format!("{name}.minisig")), sig).unwrap();
    format!("{}.minisig", t.display())
}

fn rotate(root: &Root, id: &str, pk: &std::path::Path, transition: &str) -> Output {
    reg([
        "publisher",
        "rotate",
        "--root",
        r(root),
        "--id",
        id,
        "--pubkey",
        pk.to_str().unwrap(),
        "--transition",
        transition,
    ])
}

#[test]
fn rotate_refuses_a_statement_for_another_key_or_publisher() {
    let (d, root) = root();
    let (k1, k2, k3) = (
        KeyPair::generate(),
        KeyPair::generate(),
        KeyPair::generate(),
    );
    testkit::assert_ok::<Publisher>(&add(&root, "acme", &k1.pk_path(d.path())));
    testkit::assert_ok::<Publisher>(&add(&root, "other", &k1.pk_path(d.path())));
    let k2_pk = k2.pk_path(d.path());
    let before = testkit::tree_snapshot(root.path());
    // Signed by acme's valid key, but naming k3: it does not authorize k2.
    let (stmt, sig) = k1.transition_to("acme", &k3);
    let t = write_transition(d.path(), "to-k3.json", &stmt, &sig);
    let e = testkit::assert_refused(
        &rotate(&root, "acme", &k2_pk, &t),
        1,
        Kind::TransitionInvalid,
    );
    assert_eq!(e.path, Some(d.join("to-k3.json").display().to_string()));
    // Signed by a key both publishers hold, but written for `other`: not a statement for acme.
    let (stmt, sig) = k1.transition_to("other", &k2);
    let t = write_transition(d.path(), "for-other.json", &stmt, &sig);
    testkit::assert_refused(
        &rotate(&root, "acme", &k2_pk, &t),
        1,
        Kind::TransitionInvalid,
    );
    // A signed document that is not a statement at all.
    let junk = br#"{"schema":1,"publisher":"acme"}"#;
    let t = write_transition(d.path(), "junk.json", junk, &k1.sign(junk, true));
    testkit::assert_refused(
        &rotate(&root, "acme", &k2_pk, &t),
        1,
        Kind::TransitionInvalid,
    );
    assert_eq!(before, testkit::tree_snapshot(root.path()));
    // The statement for exactly this key and publisher is accepted.
    let (stmt, sig) = k1.transition_to("acme", &k2);
    let t = write_transition(d.path(), "to-k2.json", &stmt, &sig);
    let p: Publisher = testkit::assert_ok(&rotate(&root, "acme", &k2_pk, &t));
    assert_eq!(p.keys.len(), 2);
}

#[test]
fn add_refuses_malformed_public_key() {
    let (d, root) = root();
    let pk = d.join("bad.pub");
    fs::write(&pk, "untrusted comment: minisign public key\nAAAA\n").unwrap();
    let before = testkit::tree_snapshot(root.path());
    let e = testkit::assert_refused(&add(&root, "acme", &pk), 2, Kind::PubkeyMalformed);
    assert_eq!(e.path, Some(pk.display().to_string()));
    assert_eq!(before, testkit::tree_snapshot(root.path()));
}

#[test]
fn add_refuses_bad_publisher_id() {
    let (d, root) = root();
    let pk = KeyPair::generate().pk_path(d.path());
    let before = testkit::tree_snapshot(root.path());
    for bad in ["../x", "a/b", "", "Acme"] {
        testkit::assert_refused(&add(&root, bad, &pk), 2, Kind::BadName);
    }
    assert_eq!(before, testkit::tree_snapshot(root.path()));
}

#[test]
fn add_refuses_a_revoked_publisher() {
    let (d, root) = root();
    let key = KeyPair::generate();
    testkit::assert_ok::<Publisher>(&add(&root, "acme", &key.pk_path(d.path())));
    testkit::assert_ok::<Publisher>(&reg([
        "publisher",
        "revoke",
        "--root",
        r(&root),
        "--id",
        "acme",
        "--reason",
        "gone",
    ]));
    let before = testkit::tree_snapshot(root.path());
    let out = add(&root, "acme", &KeyPair::generate().pk_path(d.path()));
    testkit::assert_refused(&out, 1, Kind::PublisherRevoked);
    assert_eq!(before, testkit::tree_snapshot(root.path()));
}

#[test]
fn add_refuses_to_revive_a_revoked_key() {
    let (d, root) = root();
    let key = KeyPair::generate();
    testkit::assert_ok::<Publisher>(&add(&root, "acme", &key.pk_path(d.path())));
    let kid = key.key_id();
    testkit::assert_ok::<Publisher>(&reg([
        "publisher",
        "revoke",
        "--root",
        r(&root),
        "--id",
        "acme",
        "--reason",
        "x",
        "--key",
        &kid,
    ]));
    let before = testkit::tree_snapshot(root.path());
    testkit::assert_refused(
        &add(&root, "acme", &key.pk_path(d.path())),
        1,
        Kind::KeyRevoked,
    );
    assert_eq!(before, testkit::tree_snapshot(root.path()));
}

#[test]
fn revoke_records_the_reason() {
    let (d, root) = root();
    testkit::assert_ok::<Publisher>(&add(&root, "acme", &KeyPair::generate().pk_path(d.path())));
    let p: Publisher = testkit::assert_ok(&reg([
        "publisher",
        "revoke",
        "--root",
        r(&root),
        "--id",
        "acme",
        "--reason",
        "compromised",
    ]));
    assert_eq!(p.revoked.unwrap().reason, "compromised");
    let listed: Vec<Publisher> =
        testkit::assert_ok(&reg(["publisher", "list", "--root", r(&root)]));
    assert_eq!(listed[0].revoked.as_ref().unwrap().reason, "compromised");
}

#[test]
fn revoke_refuses_unknown_publisher() {
    let (_d, root) = root();
    let before = testkit::tree_snapshot(root.path());
    let out = reg([
        "publisher",
        "revoke",
        "--root",
        r(&root),
        "--id",
        "nobody",
        "--reason",
        "x",
    ]);
    testkit::assert_refused(&out, 1, Kind::PublisherUnknown);
    assert_eq!(before, testkit::tree_snapshot(root.path()));
}

#[test]
fn revoke_refuses_unknown_key() {
    let (d, root) = root();
    testkit::assert_ok::<Publisher>(&add(&root, "acme", &KeyPair::generate().pk_path(d.path())));
    let before = testkit::tree_snapshot(root.path());
    let out = reg([
        "publisher",
        "revoke",
        "--root",
        r(&root),
        "--id",
        "acme",
        "--reason",
        "x",
        "--key",
        "0123456789ABCDEF",
    ]);
    testkit::assert_refused(&out, 1, Kind::KeyUnknown);
    assert_eq!(before, testkit::tree_snapshot(root.path()));
}

#[test]
fn list_returns_every_publisher_by_id() {
    let (d, root) = root();
    testkit::assert_ok::<Publisher>(&add(&root, "zeta", &KeyPair::generate().pk_path(d.path())));
    testkit::assert_ok::<Publisher>(&add(&root, "acme", &KeyPair::generate().pk_path(d.path())));
    let listed: Vec<Publisher> =
        testkit::assert_ok(&reg(["publisher", "list", "--root", r(&root)]));
    let ids: Vec<&str> = listed.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, vec!["acme", "zeta"]);
}

// ---- deny list and policy ----------------------------------------------------------------------

fn deny(root: &Root, args: &[&str]) -> Output {
    let mut v = vec!["deny", args[0], "--root", r(root)];
    v.extend_from_slice(&args[1..]);
    reg(v)
}

#[test]
fn deny_needs_exactly_one_well_formed_item() {
    let (_d, root) = root();
    let before = testkit::tree_snapshot(root.path());
    let hex = "ab".repeat(32);
    for args in [
        vec!["add", "--reason", "x"],
        vec![
            "add",
            "--reason",
            "x",
            "--sha256",
            &hex,
            "--key",
            "0123456789ABCDEF",
        ],
        vec!["add", "--reason", "x", "--sha256", "ABCD"],
        vec!["add", "--reason", "x", "--key", "0123456789abcdef"],
        vec!["remove"],
    ] {
        testkit::assert_refused(&deny(&root, &args), 2, Kind::Usage);
    }
    assert_eq!(before, testkit::tree_snapshot(root.path()));
}

#[test]
fn deny_add_list_remove_round_trip_and_adding_twice_keeps_the_first_reason() {
    let (_d, root) = root();
    let hex = "ab".repeat(32);
    testkit::assert_ok::<proto::trust::DenyList>(&deny(
        &root,
        &["add", "--sha256", &hex, "--reason", "first"],
    ));
    let d: proto::trust::DenyList = testkit::assert_ok(&deny(
        &root,
        &["add", "--sha256", &hex, "--reason", "second"],
    ));
    assert_eq!(d.digests.len(), 1);
    assert_eq!(d.digests[0].reason, "first");
    let listed: proto::trust::DenyList = testkit::assert_ok(&deny(&root, &["list"]));
    assert_eq!(listed, d);
    let d: proto::trust::DenyList = testkit::assert_ok(&deny(&root, &["remove", "--sha256", &hex]));
    assert!(d.digests.is_empty());
    let log = std::fs::read_to_string(root.audit_log()).unwrap();
    let actions: Vec<proto::trust::AuditAction> = log
        .lines()
        .map(|l| {
            proto::trust::AuditRecord::parse_line(l.as_bytes())
                .unwrap()
                .action
        })
        .collect();
    use proto::trust::AuditAction::{DenyAdd, DenyRemove};
    assert_eq!(actions, vec![DenyAdd, DenyRemove]);
}

#[test]
fn policy_show_gives_defaults_and_set_refuses_out_of_range_values() {
    let (_d, root) = root();
    let p: proto::trust::Policy = testkit::assert_ok(&reg(["policy", "show", "--root", r(&root)]));
    assert_eq!(p, proto::trust::Policy::default());
    assert_eq!(p.max_exe_bytes, 256 << 20);
    let before = testkit::tree_snapshot(root.path());
    let out = reg([
        "policy",
        "set",
        "--root",
        r(&root),
        "--max-entry-bytes",
        "70000",
    ]);
    testkit::assert_refused(&out, 2, Kind::Usage);
    assert_eq!(before, testkit::tree_snapshot(root.path()));
    let p: proto::trust::Policy = testkit::assert_ok(&reg([
        "policy",
        "set",
        "--root",
        r(&root),
        "--max-exe-bytes",
        "1000",
    ]));
    assert_eq!(p.max_exe_bytes, 1000);
    let shown: proto::trust::Policy =
        testkit::assert_ok(&reg(["policy", "show", "--root", r(&root)]));
    assert_eq!(shown, p);
}

#[test]
fn key_windows_take_iso_8601_dates_or_unix_seconds() {
    let (d, root) = root();
    let key = KeyPair::generate();
    let pk = key.pk_path(d.path());
    let p: Publisher = testkit::assert_ok(&reg([
        OsStr::new("publisher"),
        "add".as_ref(),
        "--root".as_ref(),
        root.path().as_os_str(),
        "--id".as_ref(),
        "acme".as_ref(),
        "--pubkey".as_ref(),
        pk.as_os_str(),
        "--not-before".as_ref(),
        "1798761600".as_ref(),
        "--not-after".as_ref(),
        "2028-01-01T00:00:00+01:00".as_ref(),
    ]));
    assert_eq!(p.keys[0].not_before, Some(1_798_761_600));
    assert_eq!(p.keys[0].not_after, Some(1_830_294_000));
    let bad = reg([
        "publisher",
        "add",
        "--root",
        r(&root),
        "--id",
        "beta",
        "--pubkey",
        pk.to_str().unwrap(),
        "--not-after",
        "2028-02-30",
    ]);
    let e = testkit::assert_refused(&bad, 2, proto::Kind::Usage);
    assert!(e.message.contains("2028-02-30"), "{}", e.message);
}

/// `dot-register publisher WORD --root R ARGS…`.
fn publisher(word: &str, root: &Root, args: &[&str]) -> Output {
    let mut v: Vec<&OsStr> = vec![
        OsStr::new("publisher"),
        word.as_ref(),
        "--root".as_ref(),
        root.path().as_os_str(),
    ];
    v.extend(args.iter().map(OsStr::new));
    reg(v)
}

#[test]
fn threshold_level_and_names_are_checked_and_the_same_value_changes_nothing() {
    let (d, root) = root();
    let key = KeyPair::generate();
    testkit::assert_ok::<Publisher>(&add(&root, "acme", &key.pk_path(d.path())));
    let before = testkit::tree_snapshot(root.path());
    for k in ["0", "2"] {
        let out = publisher("threshold", &root, &["--id", "acme", "--signatures", k]);
        testkit::assert_refused(&out, 2, Kind::Usage);
    }
    let out = publisher("names", &root, &["--id", "acme", "--names", "Hello"]);
    testkit::assert_refused(&out, 2, Kind::Usage);
    let out = publisher("level", &root, &["--id", "acme", "--level", "root"]);
    testkit::assert_refused(&out, 2, Kind::Usage);
    // `add` of the publisher's own key does not change its level: `publisher level` does.
    let pk = key.pk_path(d.path());
    let out = reg([
        OsStr::new("publisher"),
        "add".as_ref(),
        "--root".as_ref(),
        root.path().as_os_str(),
        "--id".as_ref(),
        "acme".as_ref(),
        "--pubkey".as_ref(),
        pk.as_os_str(),
        "--level".as_ref(),
        "verified".as_ref(),
    ]);
    testkit::assert_refused(&out, 2, Kind::Usage);
    let p: Publisher = testkit::assert_ok(&publisher(
        "threshold",
        &root,
        &["--id", "acme", "--signatures", "1"],
    ));
    assert_eq!(p.threshold, 1);
    assert_eq!(
        before,
        testkit::tree_snapshot(root.path()),
        "nothing changed"
    );
    let p: Publisher = testkit::assert_ok(&publisher(
        "level",
        &root,
        &["--id", "acme", "--level", "verified"],
    ));
    assert_eq!(p.level, proto::publisher::Level::Verified);
    let p: Publisher = testkit::assert_ok(&publisher("names", &root, &["--id", "acme"]));
    assert!(p.names.is_empty());
    let unknown = publisher("level", &root, &["--id", "nobody", "--level", "verified"]);
    testkit::assert_refused(&unknown, 1, Kind::PublisherUnknown);
}
