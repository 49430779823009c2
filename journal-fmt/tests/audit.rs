//! `dot-journal-fmt --audit --root R`: the audit log for people and machines, failing closed on a
//! line that is not a record.
#![allow(clippy::unwrap_used)]

use assert_cmd::cargo::cargo_bin_cmd;
use proto::trust::{AuditAction, AuditOutcome, AuditRecord};
use proto::{Kind, Sha256};
use std::fs;
use std::process::Output;
use testkit::TempDir;

fn records() -> Vec<AuditRecord> {
    let mut reg = AuditRecord::new(1_764_000_000, AuditAction::Register, AuditOutcome::Allowed);
    reg.name = Some("hello".into());
    reg.version = Some("1.0.0".into());
    reg.sha256 = Some(Sha256::of(b"exe"));
    reg.overrides = vec!["allow-dynamic".into()];
    let mut refused = AuditRecord::new(1_764_000_060, AuditAction::Launch, AuditOutcome::Refused);
    refused.name = Some("hello".into());
    refused.kind = Some(proto::Kind::KeyRevoked);
    vec![reg, refused]
}

/// A root directory whose audit.log holds `bytes`.
fn root_with(bytes: &[u8]) -> TempDir {
    let d = TempDir::new();
    fs::write(d.join("audit.log"), bytes).unwrap();
    d
}

fn fmt(d: &TempDir, json: bool) -> Output {
    let mut c = cargo_bin_cmd!("dot-journal-fmt");
    c.arg("--audit").arg("--root").arg(d.path());
    if json {
        c.arg("--json");
    }
    c.output().unwrap()
}

fn log_of(recs: &[AuditRecord]) -> Vec<u8> {
    recs.iter().flat_map(AuditRecord::to_line).collect()
}

#[test]
fn prints_every_record_as_json_and_as_text() {
    let d = root_with(&log_of(&records()));
    let out = fmt(&d, true);
    assert_eq!(out.status.code(), Some(0));
    let back: Vec<AuditRecord> = testkit::decode_json_lines(&out.stdout);
    assert_eq!(back, records());
    let out = fmt(&d, false);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("2025-11-24T16:00:00.000Z  register"),
        "{text}"
    );
    assert!(lines[0].contains("overrides [allow-dynamic]"), "{text}");
    assert!(
        lines[1].contains("REFUSED key-revoked name hello"),
        "{text}"
    );
}

#[test]
fn an_absent_log_has_no_records() {
    let d = TempDir::new();
    let out = fmt(&d, true);
    assert_eq!((out.status.code(), out.stdout.len()), (Some(0), 0));
}

#[test]
fn fails_closed_on_a_malformed_line_and_names_it() {
    let mut bytes = log_of(&records()[..1]);
    bytes.extend_from_slice(b"{\"v\":1,\"at\":2,\"action\":\"launch\",\"outcome\":\"maybe\"}\n");
    bytes.extend(log_of(&records()[1..]));
    let d = root_with(&bytes);
    for json in [true, false] {
        let e = testkit::assert_refused(&fmt(&d, json), 2, Kind::AuditLogMalformed);
        assert_eq!(e.value.as_deref(), Some("2"));
    }
}

#[test]
fn reads_past_a_torn_last_line_and_a_torn_line_an_append_followed() {
    // An append cut short by ENOSPC: the last line without its newline.
    let mut bytes = log_of(&records());
    bytes.extend_from_slice(b"{\"v\":1,");
    let d = root_with(&bytes);
    let out = fmt(&d, true);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let back: Vec<AuditRecord> = testkit::decode_json_lines(&out.stdout);
    assert_eq!(back, records());
    let out = fmt(&d, false);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.ends_with("line 3: torn write, 7 bytes, not a record\n"),
        "{text}"
    );
    // The next append starts on a line of its own (sys::fs::append_line), and the log still
    // reads: the torn line, then the new record.
    sys::fs::append_line(&d.join("audit.log"), &records()[0].to_line()).unwrap();
    let raw = fs::read(d.join("audit.log")).unwrap();
    assert!(raw.ends_with(&[b"{\"v\":1,\n".as_slice(), &records()[0].to_line()].concat()));
    let out = fmt(&d, true);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let back: Vec<AuditRecord> = testkit::decode_json_lines(&out.stdout);
    assert_eq!(back.len(), 3);
    // A line that is whole JSON but not a record is still malformed.
    let mut bytes = log_of(&records());
    bytes.extend_from_slice(b"{\"v\":1}\n");
    let e = testkit::assert_refused(&fmt(&root_with(&bytes), true), 2, Kind::AuditLogMalformed);
    assert_eq!(e.value.as_deref(), Some("3"));
}

#[test]
fn audit_needs_a_root_and_no_journal_files() {
    let out = cargo_bin_cmd!("dot-journal-fmt")
        .args(["--audit", "some/journal"])
        .output()
        .unwrap();
    testkit::assert_refused(&out, 2, Kind::Usage);
}
