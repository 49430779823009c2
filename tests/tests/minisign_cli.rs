//! Interoperability with the stock `minisign` CLI (Debian's package, installed by `.ci/run`): keys
//! made by `minisign -G`, entries signed by `minisign -S` in the default prehashed format and in the
//! legacy format (`-l`), registered, verified and launched; a wrong key and a changed entry refused.
#![allow(clippy::unwrap_used)]

mod common;

use common::{bin_dir, failure, launch_into, require_program, result, tool};
use proto::{Containment, Entry, Kind};
use std::path::{Path, PathBuf};
use std::process::Command;
use testkit::{assert_ok, assert_refused, tree_snapshot, TempDir};

fn minisign(dir: &Path, args: &[&str]) {
    require_program("minisign", "minisign");
    let out = Command::new("minisign")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "minisign {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes `NAME.json` for the hello plugin signed by publisher acme and signs it with the key
/// `key`; `legacy` selects `minisign -S -l`. Returns (entry, signature).
fn signed_entry(
    dir: &Path,
    name: &str,
    containment: Containment,
    key: &str,
    legacy: bool,
) -> (PathBuf, PathBuf) {
    let comment = format!("{name} by acme");
    let mut extra = vec!["-t", comment.as_str()];
    if legacy {
        extra.push("-l");
    }
    sign_entry(dir, name, containment, key, &extra)
}

/// Writes `NAME.json` as `signed_entry` does and runs `minisign -S -s KEY -m NAME.json EXTRA…`.
fn sign_entry(
    dir: &Path,
    name: &str,
    containment: Containment,
    key: &str,
    extra: &[&str],
) -> (PathBuf, PathBuf) {
    let entry = testkit::entry_for(name, &bin_dir().join("hello"), containment, Some("acme"));
    let file = format!("{name}.json");
    std::fs::write(dir.join(&file), entry.to_bytes()).unwrap();
    let mut args = vec!["-S", "-s", key, "-m", &file];
    args.extend_from_slice(extra);
    minisign(dir, &args);
    (dir.join(&file), dir.join(format!("{file}.minisig")))
}

/// The signature algorithm minisign wrote: `ED` (prehashed) or `Ed` (legacy), the first two bytes
/// of the base64 line after the untrusted comment.
fn algorithm(sig: &Path) -> String {
    let text = std::fs::read_to_string(sig).unwrap();
    let line = text.lines().nth(1).unwrap();
    // Base64 of "ED" starts "RU", of "Ed" "RW" (the third character depends on the next byte).
    match &line[..2] {
        "RU" => "ED".to_owned(),
        "RW" => "Ed".to_owned(),
        other => panic!("unexpected signature line {other}…"),
    }
}

struct Publisher {
    dir: TempDir,
    root: PathBuf,
    target: PathBuf,
}

/// A root trusting the `minisign -G` key `acme.pub`; `other.key` is a key it does not trust.
fn publisher() -> Publisher {
    let dir = TempDir::new();
    minisign(
        dir.path(),
        &["-G", "-W", "-p", "acme.pub", "-s", "acme.key"],
    );
    minisign(
        dir.path(),
        &["-G", "-W", "-p", "other.pub", "-s", "other.key"],
    );
    let root = dir.join("root");
    let target = dir.join("out");
    std::fs::create_dir(&target).unwrap();
    let out = tool("dot-register")
        .args(["init", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    let _: serde_json::Value = assert_ok(&out);
    let out = tool("dot-register")
        .args(["publisher", "add", "--root"])
        .arg(&root)
        .args(["--id", "acme", "--pubkey"])
        .arg(dir.join("acme.pub"))
        .output()
        .unwrap();
    let p: proto::Publisher = assert_ok(&out);
    let pub_text = std::fs::read_to_string(dir.join("acme.pub")).unwrap();
    assert!(
        pub_text.contains(&p.keys[0].public_key),
        "the key minisign made"
    );
    Publisher { dir, root, target }
}

impl Publisher {
    fn add(&self, entry: &Path, sig: &Path) -> std::process::Output {
        tool("dot-register")
            .args(["add", "--root"])
            .arg(&self.root)
            .arg("--entry")
            .arg(entry)
            .arg("--signature")
            .arg(sig)
            .arg("--exe")
            .arg(bin_dir().join("hello"))
            .output()
            .unwrap()
    }

    fn verify(&self, name: &str) -> std::process::Output {
        tool("dot-verify")
            .args(["entry", "--root"])
            .arg(&self.root)
            .arg(name)
            .output()
            .unwrap()
    }

    fn launch(&self, name: &str, consent: &str) -> std::process::Output {
        let input = format!("name={name}");
        launch_into(
            &self.root,
            name,
            &self.target,
            &[consent, "--input", &input],
        )
        .output()
        .unwrap()
    }
}

#[test]
fn prehashed_and_legacy_signatures_from_the_minisign_cli_register_verify_and_launch() {
    let p = publisher();
    let d = p.dir.path();
    let cases = [
        (
            "hello",
            Containment::Audit,
            false,
            "--allow-audit-plugin",
            "ED",
        ),
        (
            "hello-legacy",
            Containment::Process,
            true,
            "--require-process-sandbox",
            "Ed",
        ),
    ];
    for (name, containment, legacy, consent, alg) in cases {
        let (entry, sig) = signed_entry(d, name, containment, "acme.key", legacy);
        assert_eq!(
            algorithm(&sig),
            alg,
            "{name}: minisign wrote the format asked for"
        );

        let out = tool("dot-verify")
            .arg("signature")
            .arg("--pubkey")
            .arg(d.join("acme.pub"))
            .arg("--signature")
            .arg(&sig)
            .arg(&entry)
            .output()
            .unwrap();
        let report: serde_json::Value = assert_ok(&out);
        assert_eq!(report["trusted_comment"], format!("{name} by acme"));

        let _: serde_json::Value = assert_ok(&p.add(&entry, &sig));
        let v: serde_json::Value = assert_ok(&p.verify(name));
        assert_eq!(v["publisher"], "acme");
        assert_eq!(v["trust"], "signed");

        let r = result(&p.launch(name, consent));
        assert_eq!(r.containment, containment);
        assert_eq!(r.trust, proto::Trust::Signed);
        assert_eq!(
            std::fs::read_to_string(p.target.join("hello.txt")).unwrap(),
            format!("hello, {name}\n")
        );
    }
}

#[test]
fn a_signature_by_an_untrusted_key_is_refused_everywhere() {
    let p = publisher();
    let d = p.dir.path();
    let (entry, sig) = signed_entry(d, "hello", Containment::Audit, "other.key", false);
    let before = tree_snapshot(&p.root);
    assert_refused(&p.add(&entry, &sig), 1, Kind::SignatureInvalid);
    assert_eq!(tree_snapshot(&p.root), before, "a refusal writes nothing");

    // Registered with acme's key, then the signature swapped for the other key's.
    let (entry, good) = signed_entry(d, "hello", Containment::Audit, "acme.key", false);
    let _: serde_json::Value = assert_ok(&p.add(&entry, &good));
    let (_, bad) = signed_entry(d, "hello", Containment::Audit, "other.key", true);
    std::fs::copy(&bad, p.root.join("plugins.d/hello.json.minisig")).unwrap();
    assert_refused(&p.verify("hello"), 1, Kind::SignatureInvalid);
    let e = failure(&p.launch("hello", "--allow-audit-plugin"), 1);
    testkit::assert_kind!(e, Kind::SignatureInvalid);
    assert_eq!(
        std::fs::read_dir(&p.target).unwrap().count(),
        0,
        "nothing ran"
    );
}

#[test]
fn an_entry_changed_after_signing_is_refused_everywhere() {
    let p = publisher();
    let d = p.dir.path();
    for legacy in [false, true] {
        let (entry, sig) = signed_entry(d, "hello", Containment::Audit, "acme.key", legacy);
        // Weakening the containment breaks the signature, whatever the format.
        let weakened = Entry {
            containment: Containment::Process,
            ..Entry::parse(&std::fs::read(&entry).unwrap()).unwrap()
        };
        std::fs::write(&entry, weakened.to_bytes()).unwrap();
        let before = tree_snapshot(&p.root);
        assert_refused(&p.add(&entry, &sig), 1, Kind::SignatureInvalid);
        assert_eq!(tree_snapshot(&p.root), before);
    }

    // A registered entry edited in the root (one added byte of whitespace).
    let (entry, sig) = signed_entry(d, "hello", Containment::Audit, "acme.key", false);
    let _: serde_json::Value = assert_ok(&p.add(&entry, &sig));
    let installed = p.root.join("plugins.d/hello.json");
    let mut bytes = std::fs::read(&installed).unwrap();
    bytes.push(b'\n');
    std::fs::write(&installed, bytes).unwrap();
    let e = assert_refused(&p.verify("hello"), 1, Kind::SignatureInvalid);
    assert!(e.path.is_some_and(|p| p.ends_with("hello.json.minisig")));
    let e = failure(&p.launch("hello", "--allow-audit-plugin"), 1);
    testkit::assert_kind!(e, Kind::SignatureInvalid);
    assert_eq!(std::fs::read_dir(p.root.join("txn")).unwrap().count(), 0);
}

/// The minisign CLI's default trusted comment (`timestamp:N\tfile:…`) is the signing time dot
/// checks. Without bounds or a maximum age, a signature without it (`-t` replaced the comment) is
/// accepted; once the root sets a maximum signature age, that one is `signature-time-missing`
/// everywhere and the timestamped one is still accepted.
#[test]
fn the_minisign_cli_timestamp_is_the_signing_time_a_maximum_age_checks() {
    let p = publisher();
    let d = p.dir.path();
    let (entry, sig) = sign_entry(d, "stamped", Containment::Audit, "acme.key", &[]);
    let comment = std::fs::read_to_string(&sig).unwrap();
    assert!(comment.contains("trusted comment: timestamp:"), "{comment}");
    let _: serde_json::Value = assert_ok(&p.add(&entry, &sig));
    let (entry, sig) = signed_entry(d, "plain", Containment::Audit, "acme.key", false);
    let _: serde_json::Value = assert_ok(&p.add(&entry, &sig));
    let _: serde_json::Value = assert_ok(&p.verify("plain"));

    let out = tool("dot-register")
        .args(["policy", "set", "--root"])
        .arg(&p.root)
        .args(["--max-signature-age-secs", "86400"])
        .output()
        .unwrap();
    let policy: proto::trust::Policy = assert_ok(&out);
    assert_eq!(policy.max_signature_age_secs, Some(86400));

    let v: serde_json::Value = assert_ok(&p.verify("stamped"));
    assert_eq!(v["name"], "stamped");
    let r = result(&p.launch("stamped", "--allow-audit-plugin"));
    assert_eq!(r.status, proto::result::RunStatus::Committed);
    assert_refused(&p.verify("plain"), 1, Kind::SignatureTimeMissing);
    assert_refused(
        &p.launch("plain", "--allow-audit-plugin"),
        1,
        Kind::SignatureTimeMissing,
    );
    let (entry, sig) = signed_entry(d, "plain2", Containment::Audit, "acme.key", false);
    let before = tree_snapshot(&p.root);
    assert_refused(&p.add(&entry, &sig), 1, Kind::SignatureTimeMissing);
    assert_eq!(before, tree_snapshot(&p.root));
}
