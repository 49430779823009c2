//! dot-bench's own error kinds, caused through its command line: a spec it cannot read is
//! `malformed` (exit 2), a measured command that fails is `command-failed` (exit 5).
#![allow(clippy::unwrap_used)]

use assert_cmd::cargo::cargo_bin_cmd;
use bench::BenchKind;
use proto::ErrorObject;
use testkit::TempDir;

/// The error object of a failed `dot-bench`, of `kind`, exiting `code` with nothing on stdout.
fn refused(out: &std::process::Output, code: i32, kind: BenchKind) -> ErrorObject<BenchKind> {
    assert_eq!(out.status.code(), Some(code), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let e: ErrorObject<BenchKind> = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(e.error, kind);
    e
}

fn wall(spec: &std::path::Path) -> std::process::Output {
    cargo_bin_cmd!("dot-bench")
        .args(["wall", "--runs", "1", "--warmup", "0", "--spec"])
        .arg(spec)
        .output()
        .unwrap()
}

#[test]
fn a_spec_that_is_not_a_list_of_commands_is_malformed() {
    let dir = TempDir::new();
    let spec = dir.join("spec.json");
    for bad in [&b"not json"[..], br#"[{"name":"x","argv":[]}]"#] {
        std::fs::write(&spec, bad).unwrap();
        let e = refused(&wall(&spec), 2, BenchKind::Malformed);
        assert_eq!(e.path.as_deref(), spec.to_str());
    }
}

#[test]
fn a_measured_command_that_fails_is_command_failed() {
    let dir = TempDir::new();
    let spec = dir.join("spec.json");
    std::fs::write(&spec, br#"[{"name":"false","argv":["/bin/false"]}]"#).unwrap();
    let e = refused(&wall(&spec), 5, BenchKind::CommandFailed);
    assert_eq!(e.field.as_deref(), Some("command"));
    assert_eq!(e.value.as_deref(), Some("/bin/false"));
}
