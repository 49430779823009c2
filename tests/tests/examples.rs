//! The example plugins in examples/ are built, registered and launched as examples/README.md
//! shows: C, Go and Rust under `process`, Python at `audit`.

#![allow(clippy::unwrap_used)]

mod common;

use common::{repo_root, result, Env};
use proto::Containment;
use std::path::{Path, PathBuf};
use std::process::Command;
use testkit::workspace_bin;

fn build(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn run_example(env: &Env, name: &str, exe: &Path, containment: &str, expect: &str) {
    let mut extra = vec!["--input", "name:string:optional"];
    if containment == "audit" {
        extra.push("--allow-dynamic");
    }
    env.register_with(name, exe, containment, &extra);
    let consent = match containment {
        "process" => "--require-process-sandbox",
        _ => "--allow-audit-plugin",
    };
    let out = env
        .launch(name, &[consent, "--input", "name=ada"])
        .output()
        .unwrap();
    let r = result(&out);
    assert_eq!(r.containment.to_string(), containment);
    if r.containment == Containment::Process {
        assert!(r.enforced.is_some());
    }
    assert_eq!(
        std::fs::read_to_string(env.target.join("greeting.txt")).unwrap(),
        format!("hello, ada, from {expect}\n"),
        "{name}"
    );
}

fn examples() -> PathBuf {
    repo_root().join("examples")
}

#[test]
fn the_c_example_runs_under_process() {
    common::require_program("cc", "gcc");
    let env = Env::new();
    let exe = env.dir.join("greet-c");
    build(
        Command::new("cc")
            .args(["-static", "-O2", "-o"])
            .arg(&exe)
            .arg(examples().join("c/greet.c")),
        "cc",
    );
    run_example(&env, "greet-c", &exe, "process", "C");
}

#[test]
fn the_go_example_runs_under_process() {
    common::require_program("go", "golang-go");
    let env = Env::new();
    let exe = env.dir.join("greet-go");
    build(
        Command::new("go")
            .args(["build", "-o"])
            .arg(&exe)
            .arg(".")
            .current_dir(examples().join("go"))
            .env("CGO_ENABLED", "0")
            .env("GOFLAGS", "-buildvcs=false")
            .env("GOCACHE", env.dir.join("gocache")),
        "go build",
    );
    run_example(&env, "greet-go", &exe, "process", "Go");
}

#[test]
fn the_rust_example_runs_under_process() {
    let env = Env::new();
    run_example(
        &env,
        "greet-rust",
        &workspace_bin("example-greet"),
        "process",
        "Rust",
    );
}

#[test]
fn the_python_example_runs_at_audit() {
    common::require_program("python3", "python3");
    let env = Env::new();
    run_example(
        &env,
        "greet-py",
        &examples().join("python/greet.py"),
        "audit",
        "Python",
    );
}
