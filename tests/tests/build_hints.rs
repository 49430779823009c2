//! `not-static-elf` at registration says how the executable's own toolchain builds a static one:
//! the language is told from the binary's bytes (Go's build-info blob, rustc's marks, a C
//! compiler's `.comment`), the fix is that toolchain's (C `-static`, Go `CGO_ENABLED=0` and what
//! pulls cgo in, Rust `+crt-static` with an explicit `--target`).

#![allow(clippy::unwrap_used)]

mod common;

use common::{repo_root, tool, Env};
use proto::{ErrorObject, Kind};
use std::path::Path;
use std::process::Command;

fn built(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `dot-register dev … --containment process` of `exe`, refused as `not-static-elf`.
fn refused_for_process(env: &Env, exe: &Path) -> ErrorObject {
    let out = tool("dot-register")
        .args(["dev", "--root"])
        .arg(&env.root)
        .args(["--name", "dyn", "--containment", "process", "--exe"])
        .arg(exe)
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 1, Kind::NotStaticElf);
    assert_eq!(e.path.as_deref(), exe.to_str());
    e
}

#[test]
fn a_dynamic_c_program_is_told_to_link_with_static() {
    common::require_program("cc", "gcc");
    let env = Env::new();
    let exe = env.dir.join("greet-c");
    built(
        Command::new("cc")
            .args(["-O2", "-o"])
            .arg(&exe)
            .arg(repo_root().join("examples/c/greet.c")),
        "cc",
    );
    let e = refused_for_process(&env, &exe);
    assert!(e.message.contains("C or C++ program"), "{}", e.message);
    assert!(e.message.contains("-static"), "{}", e.message);
}

#[test]
fn a_go_program_with_cgo_is_told_to_build_with_cgo_disabled() {
    common::require_program("go", "golang-go");
    common::require_program("cc", "gcc");
    let env = Env::new();
    let src = env.dir.join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("go.mod"), "module dyn\n\ngo 1.19\n").unwrap();
    // The net package's resolver is cgo's by default on Linux: the binary is dynamic.
    std::fs::write(
        src.join("main.go"),
        "package main\n\nimport (\n\t\"fmt\"\n\t\"net\"\n)\n\nfunc main() {\n\tfmt.Println(net.LookupHost(\"localhost\"))\n}\n",
    )
    .unwrap();
    let exe = env.dir.join("dyn-go");
    built(
        Command::new("go")
            .args(["build", "-o"])
            .arg(&exe)
            .arg(".")
            .current_dir(&src)
            .env("CGO_ENABLED", "1")
            .env("GOFLAGS", "-buildvcs=false")
            .env("GOCACHE", env.dir.join("gocache")),
        "go build",
    );
    let e = refused_for_process(&env, &exe);
    assert!(e.message.contains("Go program"), "{}", e.message);
    assert!(e.message.contains("CGO_ENABLED=0"), "{}", e.message);
    assert!(e.message.contains("net and os/user"), "{}", e.message);
}

#[test]
fn a_dynamic_rust_program_is_told_to_build_with_crt_static_and_a_target() {
    // Cargo itself: a Rust program linked dynamically against glibc.
    let cargo = std::env::var_os("CARGO").expect("cargo sets CARGO for its tests");
    let env = Env::new();
    let e = refused_for_process(&env, Path::new(&cargo));
    assert!(e.message.contains("Rust program"), "{}", e.message);
    assert!(
        e.message.contains("-C target-feature=+crt-static")
            && e.message.contains("--target x86_64-unknown-linux-gnu"),
        "{}",
        e.message
    );
}

#[test]
fn a_script_for_process_is_told_it_runs_only_at_audit() {
    let env = Env::new();
    let script = testkit::write_exe(env.dir.path(), "s.sh", testkit::SCRIPT, 0o755);
    let e = refused_for_process(&env, &script);
    assert!(e.message.contains("runs only at audit"), "{}", e.message);
}
