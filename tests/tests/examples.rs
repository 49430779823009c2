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
    run_example_with(env, name, exe, containment, expect, &[]);
}

fn run_example_with(
    env: &Env,
    name: &str,
    exe: &Path,
    containment: &str,
    expect: &str,
    more: &[&str],
) {
    let mut extra = vec!["--input", "name:string:optional"];
    if containment == "audit" {
        extra.push("--allow-dynamic");
    }
    extra.extend(more);
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
fn the_python_example_runs_under_process_with_a_runtime() {
    common::require_program("python3", "python3");
    let env = Env::new();
    run_example_with(
        &env,
        "greet-py",
        &examples().join("python/greet.py"),
        "process",
        "Python",
        &["--runtime", "/usr"],
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

/// examples/host/host.py, the Python host the README points to: a committed run's result, a
/// refusal with the command that resolves it (which, run as given, commits), a plugin failure.
#[test]
fn the_python_host_example_reads_results_and_errors_as_documented() {
    common::require_program("python3", "python3");
    let env = Env::new();
    let host = |name: &str, consent: &str, pairs: &[&str]| {
        let out = Command::new("python3")
            .arg(examples().join("host/host.py"))
            .arg(workspace_bin("dot-launch"))
            .arg(&env.root)
            .args([name, consent])
            .arg(&env.target)
            .args(pairs)
            .output()
            .unwrap();
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    let (code, text) = host("hello", "--allow-audit-plugin", &["name=host"]);
    assert_eq!(code, Some(0), "{text}");
    let sha = proto::Sha256::of(b"hello, host\n").to_hex();
    assert_eq!(
        text,
        format!("status: committed (schema 1)\noutput: hello.txt 12 bytes sha256:{sha}\n")
    );

    // An audit entry launched with the sandbox required: refused, and no command is offered
    // (running it without the sandbox is the invoker's decision, docs/errors.md).
    let (code, text) = host("hello", "--require-process-sandbox", &["name=again"]);
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(text, "refused: consent-mismatch (exit 1)\n");
    // A process entry launched with audit's flag: the stricter flag is offered, runnable as is.
    env.register("hello-p", &workspace_bin("hello"), "process", &["name"]);
    let (code, text) = host("hello-p", "--allow-audit-plugin", &["name=again"]);
    assert_eq!(code, Some(1), "{text}");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("refused: consent-mismatch (exit 1)"));
    let next = lines
        .next()
        .and_then(|l| l.strip_prefix("next: "))
        .expect(&text);
    let argv: Vec<String> = serde_json::from_str(next).unwrap();
    assert_eq!(
        argv.last().map(String::as_str),
        Some("--require-process-sandbox")
    );
    let run = Command::new(&argv[0]).args(&argv[1..]).output().unwrap();
    assert_eq!(result(&run).status, proto::result::RunStatus::Committed);
    assert_eq!(
        std::fs::read_to_string(env.target.join("hello.txt")).unwrap(),
        "hello, again\n",
        "the next command kept the input"
    );

    let (code, text) = host("fixture", "--allow-audit-plugin", &["mode=signal"]);
    assert_eq!(code, Some(3), "{text}");
    assert_eq!(
        text,
        "refused: plugin-signal (exit 3)\nplugin ended: {\"signal\": 9}\n"
    );
}
