//! Reproducible builds: the release build's flags (`make rustflags`, the Makefile's
//! `RUSTFLAGS_RELEASE`) name the checkout, cargo's home and the toolchain by fixed prefixes, so
//! two clean builds of one tree in different directories give byte-identical binaries with no
//! build-machine path in them. Bounded to one small binary, `dot-reap`, each build with its own
//! `CARGO_TARGET_DIR` (offline: the registry sources the suite's own build fetched).

#![allow(clippy::unwrap_used)]

mod common;

use common::{repo_root, require_program};
use std::path::{Path, PathBuf};
use std::process::Command;

const TRIPLE: &str = "x86_64-unknown-linux-gnu";

/// Copies every file git tracks in the repository (as it is in the work tree) into `dir`.
fn copy_checkout(dir: &Path) {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo_root())
        .args(["ls-files", "-z"])
        .output()
        .unwrap();
    assert!(out.status.success(), "git ls-files: {out:?}");
    for rel in out.stdout.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let rel = Path::new(std::str::from_utf8(rel).unwrap());
        let from = repo_root().join(rel);
        if !from.is_file() {
            continue;
        }
        let to = dir.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
    }
}

/// A clean release build of `dot-reap` in a copy of the checkout at `dir`, with the flags the
/// Makefile gives a release build there; returns the binary's bytes and the flags.
fn build_in(dir: &Path) -> (Vec<u8>, String) {
    copy_checkout(dir);
    let clean = |c: &mut Command| {
        for v in [
            "RUSTFLAGS",
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_TARGET_DIR",
            "MAKEFLAGS",
            "MFLAGS",
            "CARGO_MAKEFLAGS",
        ] {
            c.env_remove(v);
        }
    };
    let mut make = Command::new("make");
    make.arg("-s").arg("-C").arg(dir).arg("rustflags");
    clean(&mut make);
    let out = make.output().unwrap();
    assert!(out.status.success(), "make rustflags: {out:?}");
    let flags = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    clean(&mut build);
    build
        .current_dir(dir)
        .args(["build", "--locked", "--offline", "--release", "-p", "reap"])
        .args(["--bin", "dot-reap", "--target", TRIPLE])
        .env("RUSTFLAGS", &flags)
        .env("CARGO_TARGET_DIR", dir.join("target"));
    let out = build.output().unwrap();
    assert!(
        out.status.success(),
        "cargo build in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let bin: PathBuf = dir.join("target").join(TRIPLE).join("release/dot-reap");
    (std::fs::read(&bin).unwrap(), flags)
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn two_clean_builds_in_different_directories_are_identical() {
    require_program("make", "make");
    require_program("git", "git");
    let tmp = testkit::TempDir::new();
    let a = tmp.join("a");
    // RUSTFLAGS splits on spaces, as make does: a checkout path has none.
    let b = tmp.join("a-longer").join("checkout-path");
    let (bin_a, flags_a) = build_in(&a);
    let (bin_b, flags_b) = build_in(&b);
    assert!(
        flags_a.contains("--remap-path-prefix") && flags_a != flags_b,
        "the flags name each checkout: {flags_a} / {flags_b}"
    );
    assert_eq!(
        proto::Sha256::of(&bin_a),
        proto::Sha256::of(&bin_b),
        "the two builds differ"
    );
    // No build-machine path: not the checkout, not cargo's home, not the toolchain (each a FROM
    // of the flags' `--remap-path-prefix=FROM=TO`).
    let remapped: Vec<&str> = flags_a
        .split_whitespace()
        .filter_map(|f| f.strip_prefix("--remap-path-prefix="))
        .filter_map(|m| m.split_once('=').map(|(from, _)| from))
        .collect();
    assert_eq!(remapped.len(), 3, "{flags_a}");
    assert_eq!(Path::new(remapped[0]), a, "{flags_a}");
    for path in remapped {
        assert!(!holds(&bin_a, path), "dot-reap holds {path}");
    }
    assert!(
        holds(&bin_a, "/cargo/registry/"),
        "panic locations keep the remapped prefix"
    );
}
