//! Every kind of static executable `process` runs passes the rule as built by its own toolchain:
//! Rust `+crt-static` (static-pie), C `-static` and `-static-pie` with gcc, Go `CGO_ENABLED=0`.
//! The toolchains are required (tests/need.sh installs them): a missing one fails, never skips.

use elf::{check_static_elf, ElfFacts};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

const C_SOURCE: &str = "#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n";
const GO_SOURCE: &str = "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") }\n";

fn check(path: &Path) -> ElfFacts {
    let file = File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    check_static_elf(&file).unwrap_or_else(|e| panic!("{} refused: {e}", path.display()))
}

fn build(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn c_sample(dir: &testkit::TempDir, flag: &str) -> PathBuf {
    testkit::require_program("cc", "gcc");
    let src = dir.join("hi.c");
    std::fs::write(&src, C_SOURCE).expect("write hi.c");
    let exe = dir.join(format!("hi{flag}"));
    build(
        Command::new("cc")
            .args([flag, "-O2", "-o"])
            .arg(&exe)
            .arg(&src),
    );
    exe
}

#[test]
fn a_rust_crt_static_binary_passes_as_static_pie() {
    assert_eq!(
        check(&testkit::static_fixture("hello")),
        ElfFacts { pie: true }
    );
}

#[test]
fn a_gcc_static_binary_passes() {
    let dir = testkit::TempDir::new();
    assert_eq!(check(&c_sample(&dir, "-static")), ElfFacts { pie: false });
}

#[test]
fn a_gcc_static_pie_binary_passes() {
    let dir = testkit::TempDir::new();
    assert_eq!(
        check(&c_sample(&dir, "-static-pie")),
        ElfFacts { pie: true }
    );
}

#[test]
fn a_go_cgo_disabled_binary_passes() {
    testkit::require_program("go", "golang-go");
    let dir = testkit::TempDir::new();
    std::fs::write(dir.join("main.go"), GO_SOURCE).expect("write main.go");
    std::fs::write(dir.join("go.mod"), "module hi\n\ngo 1.19\n").expect("write go.mod");
    let exe = dir.join("hi-go");
    build(
        Command::new("go")
            .args(["build", "-o"])
            .arg(&exe)
            .arg(".")
            .current_dir(dir.path())
            .env("CGO_ENABLED", "0")
            .env("GOFLAGS", "-buildvcs=false")
            .env("GOCACHE", dir.join("gocache")),
    );
    assert_eq!(check(&exe), ElfFacts { pie: false });
}
