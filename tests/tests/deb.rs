//! `make deb`: a Debian package of dot that lintian accepts, that dpkg installs into a scratch
//! root, whose installed tools run a process-contained plugin with nothing on PATH, and that dpkg
//! removes without leaving a file.
#![allow(clippy::unwrap_used)]

mod common;

use common::{bin_dir, repo_root, require_program, result};
use proto::Containment;
use std::path::{Path, PathBuf};
use std::process::Command;
use testkit::deb::{dpkg, installed_files, run, scratch_root};
use testkit::TempDir;

/// `make deb` from the binaries this test run built, into `dir`; the package's path.
fn make_deb(dir: &Path) -> PathBuf {
    let printed = run(
        Command::new("make")
            .arg("-C")
            .arg(repo_root())
            .args(["--no-print-directory", "deb", "PROFILE=debug"])
            .arg(format!("BUILT={}", bin_dir().display()))
            .arg(format!("DEB_DIR={}", dir.display()))
            .env_remove("MAKEFLAGS")
            .env_remove("MFLAGS"),
        "make deb",
    );
    let deb = printed
        .lines()
        .rev()
        .find(|l| l.ends_with(".deb"))
        .expect("make deb prints the package");
    PathBuf::from(deb)
}

#[test]
fn the_package_passes_lintian_installs_runs_and_removes_cleanly() {
    for (program, package) in [
        ("make", "make"),
        ("dpkg-deb", "dpkg"),
        ("lintian", "lintian"),
        ("strip", "binutils"),
    ] {
        require_program(program, package);
    }
    let tmp = TempDir::new();
    // make deb runs lintian and fails on any error or warning it reports.
    let deb = make_deb(&tmp.join("deb"));

    // Every file is root's; the licence and changelog are where Debian wants them.
    let listing = run(
        Command::new("dpkg-deb").arg("--contents").arg(&deb),
        "dpkg-deb --contents",
    );
    for line in listing.lines() {
        assert!(line.contains(" root/root "), "{line}");
    }
    assert!(
        !listing.lines().any(|l| l.ends_with("./usr/bin/dot-canary")),
        "the canary is not on PATH:\n{listing}"
    );
    for want in [
        "./usr/bin/dot-launch",
        "./usr/bin/dot-sandbox",
        "./usr/libexec/dot/dot-canary",
        "./usr/share/man/man1/dot-launch.1.gz",
        "./usr/share/man/man7/dot.7.gz",
        "./usr/share/doc/dot/copyright",
        "./usr/share/doc/dot/changelog.gz",
    ] {
        assert!(
            listing.lines().any(|l| l.ends_with(want)),
            "{want} not in\n{listing}"
        );
    }

    // Installed into a scratch root, the tools run a process-contained plugin with no PATH.
    let sysroot = scratch_root(tmp.path());
    dpkg(&sysroot, &["--install"], Some(&deb));
    let bindir = sysroot.join("usr/bin");
    let tool = |name: &str| {
        let mut c = Command::new(bindir.join(name));
        c.env_clear().env("PATH", "/nonexistent");
        c
    };
    let root = tmp.join("root");
    let target = tmp.join("out");
    std::fs::create_dir(&target).unwrap();
    run(
        tool("dot-register")
            .args(["init", "--dev", "--root"])
            .arg(&root),
        "init",
    );
    run(
        tool("dot-register")
            .args(["dev", "--root"])
            .arg(&root)
            .args(["--name", "hello", "--containment", "process", "--exe"])
            .arg(bin_dir().join("hello"))
            .args(["--input", "name:string:optional"]),
        "dev",
    );
    let out = tool("dot-launch")
        .arg("--root")
        .arg(&root)
        .args(["hello", "--require-process-sandbox", "--input", "name=deb"])
        .arg("--target")
        .arg(&target)
        .output()
        .unwrap();
    let r = result(&out);
    assert_eq!(r.containment, Containment::Process);
    assert_eq!(
        std::fs::read_to_string(target.join("hello.txt")).unwrap(),
        "hello, deb\n"
    );
    // The packaged runner finds the packaged canary in /usr/libexec/dot, with nothing on PATH.
    run(
        tool("dot-sandbox").args(["probe", "--prove", "--only", "read-etc-passwd"]),
        "probe --prove",
    );
    // No packaged binary keeps the toolchains' `.comment` section.
    for bin in ["usr/bin/dot-launch", "usr/libexec/dot/dot-canary"] {
        let headers = run(
            Command::new("objdump").arg("-h").arg(sysroot.join(bin)),
            "objdump -h",
        );
        assert!(
            !headers.split_whitespace().any(|w| w == ".comment"),
            "{bin}: {headers}"
        );
    }

    // Removing the package removes every file it installed.
    assert!(!installed_files(&sysroot).is_empty());
    dpkg(&sysroot, &["--remove", "dot"], None);
    assert_eq!(installed_files(&sysroot), Vec::<PathBuf>::new());
}
