//! `dot-verify signature`: real minisign signatures, prehashed and legacy.
#![allow(clippy::unwrap_used)]

use assert_cmd::cargo::cargo_bin_cmd;
use proto::Kind;
use std::fs;
use std::path::Path;
use std::process::Output;
use testkit::{KeyPair, TempDir};
use verify::cli::SignatureReport;

fn check(pubkey: &Path, sig: &Path, file: &Path) -> Output {
    cargo_bin_cmd!("dot-verify")
        .arg("signature")
        .arg("--pubkey")
        .arg(pubkey)
        .arg("--signature")
        .arg(sig)
        .arg(file)
        .output()
        .unwrap()
}

fn signed_file(
    d: &TempDir,
    key: &KeyPair,
    prehashed: bool,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let file = d.join("entry.json");
    fs::write(&file, b"{\"the\":\"signed bytes\"}\n").unwrap();
    let sig = key.sign_file(&file, prehashed);
    (file, sig)
}

fn accepts(prehashed: bool) {
    let d = TempDir::new();
    let key = KeyPair::generate();
    let (file, sig) = signed_file(&d, &key, prehashed);
    let comment = "timestamp:1700000000\tfile:entry.json".to_owned();
    fs::write(
        &sig,
        key.sign_with_comment(&fs::read(&file).unwrap(), prehashed, &comment),
    )
    .unwrap();
    let report: SignatureReport = testkit::assert_ok(&check(&key.pk_path(d.path()), &sig, &file));
    assert_eq!(
        report,
        SignatureReport {
            key_id: key.key_id(),
            trusted_comment: comment,
        }
    );
}

#[test]
fn accepts_prehashed_signature_and_prints_key_id_and_trusted_comment() {
    accepts(true);
}

#[test]
fn accepts_legacy_signature() {
    accepts(false);
}

#[test]
fn refuses_signature_by_another_key() {
    let d = TempDir::new();
    let key = KeyPair::generate();
    let (file, sig) = signed_file(&d, &KeyPair::generate(), true);
    let e = testkit::assert_refused(
        &check(&key.pk_path(d.path()), &sig, &file),
        1,
        Kind::SignatureInvalid,
    );
    assert_eq!(e.path, Some(sig.display().to_string()));
}

#[test]
fn refuses_bytes_changed_after_signing() {
    for prehashed in [true, false] {
        let d = TempDir::new();
        let key = KeyPair::generate();
        let (file, sig) = signed_file(&d, &key, prehashed);
        fs::write(&file, b"{\"the\":\"signed bytez\"}\n").unwrap();
        testkit::assert_refused(
            &check(&key.pk_path(d.path()), &sig, &file),
            1,
            Kind::SignatureInvalid,
        );
    }
}

#[test]
fn refuses_trusted_comment_changed_after_signing() {
    let d = TempDir::new();
    let key = KeyPair::generate();
    let (file, sig) = signed_file(&d, &key, true);
    let text = fs::read_to_string(&sig).unwrap();
    fs::write(&sig, text.replace("timestamp:", "timestamp:9")).unwrap();
    testkit::assert_refused(
        &check(&key.pk_path(d.path()), &sig, &file),
        1,
        Kind::SignatureInvalid,
    );
}

#[test]
fn refuses_malformed_signature() {
    let d = TempDir::new();
    let key = KeyPair::generate();
    let (file, sig) = signed_file(&d, &key, true);
    fs::write(&sig, b"untrusted comment: x\nRWQ=\n").unwrap();
    testkit::assert_refused(
        &check(&key.pk_path(d.path()), &sig, &file),
        1,
        Kind::SignatureInvalid,
    );
}

#[test]
fn refuses_malformed_public_key() {
    let d = TempDir::new();
    let key = KeyPair::generate();
    let (file, sig) = signed_file(&d, &key, true);
    let pk = d.join("bad.pub");
    for text in [
        "".to_owned(),
        key.public_key_b64(),
        "untrusted comment: minisign public key\nnot-base64!\n".to_owned(),
        format!("untrusted comment: x\n{}\n", &key.public_key_b64()[4..]),
    ] {
        fs::write(&pk, text).unwrap();
        let e = testkit::assert_refused(&check(&pk, &sig, &file), 2, Kind::PubkeyMalformed);
        assert_eq!(e.path, Some(pk.display().to_string()));
    }
}
