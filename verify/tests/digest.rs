//! `dot-verify digest`.
#![allow(clippy::unwrap_used)]

use assert_cmd::cargo::cargo_bin_cmd;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use testkit::TempDir;
use verify::cli::DigestLine;

#[test]
fn prints_one_line_per_file_with_sha256_and_size() {
    let d = TempDir::new();
    let a = testkit::write_exe(d.path(), "a", b"abc", 0o600);
    let big: Vec<u8> = (0..3 * 1024 * 1024 + 5).map(|i| (i % 253) as u8).collect();
    let b = testkit::write_exe(d.path(), "b", &big, 0o600);
    let out = cargo_bin_cmd!("dot-verify")
        .arg("digest")
        .args([&a, &b])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<DigestLine> = testkit::decode_json_lines(&out.stdout);
    assert_eq!(
        lines,
        vec![
            DigestLine {
                path: a.display().to_string(),
                path_sh: None,
                sha256: Sha256::parse_hex(
                    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
                )
                .unwrap(),
                size: 3,
            },
            DigestLine {
                path: b.display().to_string(),
                path_sh: None,
                sha256: Sha256::of(&big),
                size: big.len() as u64,
            },
        ]
    );
}

/// A path that is not UTF-8 cannot be JSON text: `path_sh` gives it quoted for `sh`, and the
/// shell turns it back into the file's own name.
#[test]
fn a_path_that_is_not_utf8_round_trips_through_path_sh() {
    use std::os::unix::ffi::OsStrExt;
    let d = TempDir::new();
    let name = std::ffi::OsStr::from_bytes(b"he\xffllo 'x'");
    let a = d.join(name);
    fs::write(&a, b"abc").unwrap();
    let out = cargo_bin_cmd!("dot-verify")
        .arg("digest")
        .arg(&a)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let lines: Vec<DigestLine> = testkit::decode_json_lines(&out.stdout);
    let quoted = lines[0].path_sh.as_deref().expect("path_sh");
    let listed = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ls -d -- {quoted}"))
        .output()
        .unwrap();
    assert_eq!(listed.status.code(), Some(0), "{listed:?}");
    assert_eq!(listed.stdout, [a.as_os_str().as_bytes(), b"\n"].concat());
    assert!(lines[0].path.contains('\u{FFFD}'), "{:?}", lines[0]);
}

#[test]
fn refuses_symlink() {
    let d = TempDir::new();
    let a = testkit::write_exe(d.path(), "a", b"abc", 0o600);
    std::os::unix::fs::symlink(&a, d.join("link")).unwrap();
    let out = cargo_bin_cmd!("dot-verify")
        .arg("digest")
        .arg(d.join("link"))
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 1, Kind::ExeSymlink);
    assert_eq!(e.path, Some(d.join("link").display().to_string()));
}

#[test]
fn refuses_directory() {
    let d = TempDir::new();
    let out = cargo_bin_cmd!("dot-verify")
        .arg("digest")
        .arg(d.path())
        .output()
        .unwrap();
    testkit::assert_refused(&out, 1, Kind::ExeNotRegular);
}

#[test]
fn refuses_fifo_without_blocking() {
    let d = TempDir::new();
    let status = std::process::Command::new("mkfifo")
        .arg(d.join("p"))
        .status()
        .unwrap();
    assert!(status.success());
    let out = cargo_bin_cmd!("dot-verify")
        .arg("digest")
        .arg(d.join("p"))
        .output()
        .unwrap();
    testkit::assert_refused(&out, 1, Kind::ExeNotRegular);
}

#[test]
fn refuses_setuid_file() {
    let d = TempDir::new();
    let a = testkit::write_exe(d.path(), "a", b"abc", 0o755);
    fs::set_permissions(&a, fs::Permissions::from_mode(0o4755)).unwrap();
    let out = cargo_bin_cmd!("dot-verify")
        .arg("digest")
        .arg(&a)
        .output()
        .unwrap();
    testkit::assert_refused(&out, 1, Kind::ExeSetid);
}

#[test]
fn missing_file_is_file_missing_naming_it() {
    let d = TempDir::new();
    let out = cargo_bin_cmd!("dot-verify")
        .arg("digest")
        .arg(d.join("nope"))
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 2, Kind::FileMissing);
    assert_eq!(e.path, Some(d.join("nope").display().to_string()));
}

#[test]
fn unknown_subcommand_is_a_usage_error() {
    let out = cargo_bin_cmd!("dot-verify")
        .arg("frobnicate")
        .output()
        .unwrap();
    testkit::assert_refused(&out, 2, Kind::Usage);
}

#[test]
fn help_exits_zero() {
    let out = cargo_bin_cmd!("dot-verify").arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8(out.stdout).unwrap().contains("digest"));
}
use proto::{Kind, Sha256};
