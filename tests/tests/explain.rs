//! `dot-launch NAME --explain`: the same decision as the launch, nothing created. For each case
//! the explanation's exit code (and, for a refusal, its error kind) is the real launch's, and the
//! explanation leaves the root (`txn/`, `audit.log`, everything else) and the target exactly as
//! they were, and runs no plugin. An allowed explanation states what the run then enforces.

#![allow(clippy::unwrap_used)]

mod common;

use common::{result, Env};
use proto::explain::Explanation;
use proto::{Containment, Kind};
use std::process::{Command, Output};
use testkit::tree_snapshot;

/// One case: the entry, its arguments, and an environment variable for the launcher.
struct Case {
    what: &'static str,
    name: &'static str,
    args: Vec<String>,
    env: Option<(&'static str, &'static str)>,
    /// `None`: allowed; else the refusal's kind.
    refused: Option<Kind>,
}

fn command(env: &Env, case: &Case, explain: bool) -> Command {
    let args: Vec<&str> = case.args.iter().map(String::as_str).collect();
    let mut c = env.launch(case.name, &args);
    if explain {
        c.arg("--explain");
    }
    if let Some((k, v)) = case.env {
        c.env(k, v);
    }
    c
}

fn code(out: &Output) -> Option<i32> {
    out.status.code()
}

#[test]
fn explain_decides_as_the_launch_does_and_creates_nothing() {
    let env = Env::with_process_fixture();
    let marker = env.dir.join("marker");
    let marker_arg = format!("marker={}", marker.display());
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let cases = [
        Case {
            what: "allowed audit",
            name: "fixture",
            args: s(&[
                "--allow-audit-plugin",
                "--input",
                "mode=marker",
                "--input",
                &marker_arg,
            ]),
            env: None,
            refused: None,
        },
        Case {
            what: "allowed process",
            name: "fixture-p",
            args: s(&["--require-process-sandbox", "--input", "mode=ok"]),
            env: None,
            refused: None,
        },
        Case {
            what: "missing consent",
            name: "fixture",
            args: s(&["--input", "mode=ok"]),
            env: None,
            refused: Some(Kind::ConsentMissing),
        },
        Case {
            what: "unknown input",
            name: "fixture",
            args: s(&["--allow-audit-plugin", "--input", "nope=1"]),
            env: None,
            refused: Some(Kind::InputUndeclared),
        },
        Case {
            what: "containment that cannot be enforced",
            name: "fixture-p",
            args: s(&["--require-process-sandbox", "--input", "mode=ok"]),
            env: Some(("DOT_PRETEND_LANDLOCK_ABI", "2")),
            refused: Some(Kind::ProcessUnsupported),
        },
        Case {
            what: "the other containment's consent",
            name: "fixture-p",
            args: s(&["--allow-audit-plugin", "--input", "mode=ok"]),
            env: None,
            refused: Some(Kind::ConsentMismatch),
        },
    ];
    for case in &cases {
        let what = case.what;
        let root_before = tree_snapshot(&env.root);
        let audit_before = std::fs::read(env.root.join("audit.log")).unwrap_or_default();
        let target_before = tree_snapshot(&env.target);

        let explained = command(&env, case, true).output().unwrap();

        assert_eq!(tree_snapshot(&env.root), root_before, "{what}: the root");
        assert_eq!(
            std::fs::read(env.root.join("audit.log")).unwrap_or_default(),
            audit_before,
            "{what}: audit.log is byte for byte as it was"
        );
        assert_eq!(tree_snapshot(&env.target), target_before, "{what}: target");
        assert!(!marker.exists(), "{what}: no plugin ran");

        let launched = command(&env, case, false).output().unwrap();
        assert_eq!(
            code(&explained),
            code(&launched),
            "{what}: --explain exits as the launch does; explained {:?}, launched {:?}",
            String::from_utf8_lossy(&explained.stderr),
            String::from_utf8_lossy(&launched.stderr)
        );
        match case.refused {
            Some(kind) => {
                let code = i32::from(kind.exit_code().code());
                let e = testkit::assert_refused(&explained, code, kind);
                let l = testkit::assert_refused(&launched, code, kind);
                assert_eq!(e.message, l.message, "{what}");
                assert_eq!((e.field, e.value), (l.field, l.value), "{what}");
            }
            None => {
                let x: Explanation = testkit::assert_ok(&explained);
                let r = result(&launched);
                assert_eq!(x.decision, "allowed", "{what}");
                assert_eq!(x.containment.used, r.containment, "{what}");
                assert_eq!(x.executable.sha256, r.sha256, "{what}");
                assert_eq!(Some(x.target.clone()), r.target, "{what}");
                assert_eq!(x.request.plugin, r.name, "{what}");
                assert!(x.request.inputs.contains_key("mode"), "{what}");
                match r.containment {
                    Containment::Process => {
                        let enforced = r.enforced.unwrap();
                        let runner = x.runner.unwrap();
                        assert_eq!(
                            runner.seccomp_policy_sha256,
                            Some(enforced.seccomp_policy_sha256),
                            "{what}: the policy digest is the one the run reports"
                        );
                        assert_eq!(runner.namespaces, enforced.namespaces, "{what}");
                        let allowed = &runner.seccomp_allowed;
                        assert!(
                            (100..=140).contains(&allowed.len()),
                            "{what}: the allowlist by name, {} calls",
                            allowed.len()
                        );
                        for name in ["read", "write", "clone", "execveat", "futex"] {
                            assert!(allowed.iter().any(|a| a == name), "{what}: {name}");
                        }
                        for name in ["socket", "execve", "landlock_restrict_self", "seccomp"] {
                            assert!(!allowed.iter().any(|a| a == name), "{what}: {name}");
                        }
                        let landlock = x.landlock.unwrap();
                        assert_eq!(landlock.abi, enforced.landlock_abi, "{what}");
                        assert_eq!(x.limits.rlimits, Some(enforced.rlimits), "{what}");
                        assert_eq!(x.limits.stage, Some(enforced.stage), "{what}");
                        assert!(runner.path.ends_with("/dot-sandbox"), "{what}");
                    }
                    Containment::Audit => {
                        assert!(x.runner.is_none() && x.landlock.is_none(), "{what}");
                        assert!(marker.exists(), "{what}: the real launch ran the plugin");
                        std::fs::remove_file(&marker).unwrap();
                    }
                }
                for f in env.target_files() {
                    std::fs::remove_file(env.target.join(f)).unwrap();
                }
            }
        }
    }
}

/// The inputs are stated as the plugin would get them: the request with each file input's stage
/// path, and each file given with its size; the file is opened (a missing one refuses as the
/// launch does) but not copied anywhere.
#[test]
fn explain_states_the_inputs_as_they_would_be_passed() {
    let env = Env::new();
    env.register_with(
        "withfile",
        &testkit::workspace_bin("fixture-plugin"),
        "audit",
        &[
            "--input",
            "mode:string:optional",
            "--input",
            "doc:file:optional",
        ],
    );
    let doc = env.dir.join("doc.txt");
    std::fs::write(&doc, b"twelve bytes").unwrap();
    let file_arg = format!("doc={}", doc.display());
    let before = tree_snapshot(&env.root);
    let out = env
        .launch(
            "withfile",
            &[
                "--allow-audit-plugin",
                "--input",
                "mode=ok",
                "--input-file",
                &file_arg,
                "--explain",
            ],
        )
        .output()
        .unwrap();
    let x: Explanation = testkit::assert_ok(&out);
    assert_eq!(tree_snapshot(&env.root), before);
    assert_eq!(
        x.request.inputs.get("doc").map(String::as_str),
        Some("in/doc")
    );
    assert_eq!(x.request.inputs.get("mode").map(String::as_str), Some("ok"));
    assert_eq!(x.input_files.len(), 1);
    assert_eq!(
        (x.input_files[0].key.as_str(), x.input_files[0].size),
        ("doc", 12)
    );
    assert_eq!(x.input_files[0].path, doc.display().to_string());

    let missing = format!("doc={}", env.dir.join("nope").display());
    let args = ["--allow-audit-plugin", "--input-file", missing.as_str()];
    let explained = env
        .launch("withfile", &[&args[..], &["--explain"]].concat())
        .output()
        .unwrap();
    let launched = env.launch("withfile", &args).output().unwrap();
    let e = testkit::assert_refused(&explained, 2, Kind::FileMissing);
    let l = testkit::assert_refused(&launched, 2, Kind::FileMissing);
    assert_eq!(e.path, l.path);
}

/// A state apart from the registry that does not exist yet is not made by `--explain`; the launch
/// makes it.
#[test]
fn explain_makes_no_state_directory() {
    let env = Env::new();
    let state = env.dir.join("state");
    let state_arg = state.display().to_string();
    let args = ["--allow-audit-plugin", "--state", state_arg.as_str()];
    let out = env
        .launch("fixture", &[&args[..], &["--explain"]].concat())
        .output()
        .unwrap();
    let _: Explanation = testkit::assert_ok(&out);
    assert!(!state.exists(), "--explain made the state directory");
    result(&env.launch("fixture", &args).output().unwrap());
    assert!(state.join("txn").is_dir(), "the launch makes it");
}

/// `--explain` with `recover` is a usage error: there is no decision to explain.
#[test]
fn explain_does_not_apply_to_recover() {
    let env = Env::new();
    let out = common::tool("dot-launch")
        .arg("--root")
        .arg(&env.root)
        .args(["recover", "--explain"])
        .output()
        .unwrap();
    testkit::assert_refused(&out, 2, Kind::Usage);
}
