//! A root's state part (`txn/`, the launch audit log) apart from its registry (`--state`):
//! launch, recover, discard and journal-fmt use the state directory, the registry is only read,
//! and a state directory that is not ours alone is refused before anything is decided or written.

#![allow(clippy::unwrap_used)]

mod common;

use common::{names, ok, result, tool, Env};
use proto::layout::Root;
use proto::trust::{AuditAction, AuditRecord};
use proto::Kind;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};

/// The Env's registry with its state in `state`.
fn split(env: &Env, state: &Path) -> Root {
    Root::split(&env.root, state)
}

/// `dot-launch --root R --state S` of the fixture at audit in `mode`.
fn launch(env: &Env, state: &Path, mode: &str, target: &Path) -> Command {
    let mut c = common::launch_into(
        &env.root,
        "fixture",
        target,
        &["--allow-audit-plugin", "--input", &format!("mode={mode}")],
    );
    c.arg("--state").arg(state);
    c
}

/// `TOOL [ARGS…] --root R --state S`.
fn with_state(name: &str, args: &[&str], root: &Root) -> Output {
    tool(name)
        .args(args)
        .arg("--root")
        .arg(root.path())
        .arg("--state")
        .arg(root.state())
        .output()
        .unwrap()
}

fn audit_lines(path: &Path) -> Vec<AuditRecord> {
    match std::fs::read(path) {
        Ok(b) => testkit::decode_json_lines(&b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("{}: {e}", path.display()),
    }
}

fn launches(path: &Path) -> usize {
    audit_lines(path)
        .iter()
        .filter(|r| r.action == AuditAction::Launch)
        .count()
}

#[test]
fn a_launch_keeps_its_run_and_audit_line_in_the_state_made_private_on_first_use() {
    let env = Env::new();
    let state = env.dir.join("state");
    let root = split(&env, &state);
    let before_registry = testkit::tree_snapshot(&env.root);
    let r = result(
        &launch(&env, &state, "two-outputs", &env.target)
            .output()
            .unwrap(),
    );
    assert_eq!(r.outputs.len(), 2);
    assert_eq!(env.target_files(), ["a.txt", "b.txt"]);
    for dir in [state.clone(), root.txn()] {
        let m = std::fs::symlink_metadata(&dir).unwrap();
        assert!(m.is_dir());
        assert_eq!(m.mode() & 0o7777, 0o700, "{}", dir.display());
    }
    assert_eq!(names(&root.txn()), Vec::<String>::new(), "the run ended");
    assert_eq!(
        launches(&root.audit_log()),
        1,
        "the decision is in the state"
    );
    assert_eq!(
        testkit::tree_snapshot(&env.root),
        before_registry,
        "the registry was only read"
    );
    // A second launch uses the state as it is.
    result(
        &launch(&env, &state, "two-outputs", &env.target)
            .output()
            .unwrap(),
    );
    assert_eq!(launches(&root.audit_log()), 2);
    // The registry still serves a single-directory launch, whose line goes to the root.
    result(&env.two_outputs().output().unwrap());
    assert_eq!(launches(&Root::single(&env.root).audit_log()), 1);
    assert_eq!(launches(&root.audit_log()), 2);
}

#[test]
fn recover_and_discard_act_on_the_runs_of_the_state_they_are_given() {
    let env = Env::new();
    let state = env.dir.join("state");
    let root = split(&env, &state);
    std::fs::write(env.target.join("a.txt"), b"old a\n").unwrap();
    let killed = launch(&env, &state, "two-outputs", &env.target)
        .env("DOT_FAILPOINT", "after-prepared")
        .output()
        .unwrap();
    assert_eq!(killed.status.signal(), Some(9), "{killed:?}");
    let runs = names(&root.txn());
    assert_eq!(runs.len(), 1);
    assert!(env.runs().is_empty(), "nothing in the registry's txn/");
    // The single root does not see the run; dot-discard retains it in the state, naming the
    // recover command with the state.
    let rep: discard::Report = testkit::decode_json(&common::discard(&env.root).stdout);
    assert!(rep.retained.is_empty() && rep.discarded.is_empty());
    let d = with_state("dot-discard", &[], &root);
    assert_eq!(d.status.code(), Some(4), "{d:?}");
    let rep: discard::Report = testkit::decode_json(&d.stdout);
    let next = rep.retained[0].next.clone().unwrap();
    assert!(next.contains("--state"), "{next}");
    // The journal is formatted from the state.
    let fmt = ok(
        tool("dot-journal-fmt")
            .arg("--state")
            .arg(&state)
            .output()
            .unwrap(),
        "journal-fmt --state",
    );
    assert!(String::from_utf8_lossy(&fmt.stdout).contains(&runs[0]));
    let audit = ok(
        tool("dot-journal-fmt")
            .args(["--audit", "--json", "--state"])
            .arg(&state)
            .output()
            .unwrap(),
        "journal-fmt --audit --state",
    );
    assert_eq!(
        testkit::decode_json_lines::<AuditRecord>(&audit.stdout).len(),
        1
    );
    // Recover rolls it forward from the state.
    let out = tool("dot-launch")
        .arg("recover")
        .arg("--root")
        .arg(&env.root)
        .arg("--state")
        .arg(&state)
        .output()
        .unwrap();
    let rep: launch::recover::RecoverReport = testkit::assert_ok(&out);
    assert_eq!(rep.recovered.len(), 1, "{rep:?}");
    assert_ne!(std::fs::read(env.target.join("a.txt")).unwrap(), b"old a\n");
    assert!(names(&root.txn()).is_empty());

    // An abandoned run in the state is discarded there.
    let killed = launch(&env, &state, "two-outputs", &env.target)
        .env("DOT_FAILPOINT", "after-begin")
        .output()
        .unwrap();
    assert_eq!(killed.status.signal(), Some(9), "{killed:?}");
    assert_eq!(names(&root.txn()).len(), 1);
    let rep: discard::Report = testkit::assert_ok(&with_state("dot-discard", &[], &root));
    assert_eq!(rep.discarded.len(), 1, "{rep:?}");
    assert!(names(&root.txn()).is_empty());
}

#[test]
fn a_state_not_ours_alone_is_refused_before_anything_is_decided() {
    let env = Env::new();
    let state = env.dir.join("state");
    let root = split(&env, &state);
    result(
        &launch(&env, &state, "two-outputs", &env.target)
            .output()
            .unwrap(),
    );
    let log = std::fs::read(root.audit_log()).unwrap();

    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o770)).unwrap();
    let e = testkit::assert_refused(
        &launch(&env, &state, "two-outputs", &env.target)
            .output()
            .unwrap(),
        1,
        Kind::RootUnsafe,
    );
    assert_eq!(e.path.as_deref(), Some(state.to_str().unwrap()));
    assert!(e.message.contains("state directory"), "{}", e.message);
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();

    std::os::unix::fs::chown(root.txn(), Some(65534), None).unwrap();
    let e = testkit::assert_refused(
        &launch(&env, &state, "two-outputs", &env.target)
            .output()
            .unwrap(),
        1,
        Kind::RootUnsafe,
    );
    assert_eq!(e.path.as_deref(), Some(root.txn().to_str().unwrap()));
    assert_eq!(
        std::fs::read(root.audit_log()).unwrap(),
        log,
        "nothing recorded"
    );
    assert!(names(&root.txn()).is_empty());
}

#[test]
fn a_state_whose_parent_is_missing_names_init_with_the_state() {
    let env = Env::new();
    let state = env.dir.join("no/such/state");
    let e = testkit::assert_refused(
        &launch(&env, &state, "two-outputs", &env.target)
            .output()
            .unwrap(),
        1,
        Kind::RootMissing,
    );
    assert!(
        !state.exists(),
        "no parent is made for a state given by name"
    );
    let next = e.next.unwrap();
    assert!(next.contains("init") && next.contains("--state"), "{next}");
}

#[test]
fn the_target_may_not_be_inside_the_state() {
    let env = Env::new();
    let state = env.dir.join("state");
    result(
        &launch(&env, &state, "two-outputs", &env.target)
            .output()
            .unwrap(),
    );
    for inside in [state.clone(), state.join("txn")] {
        let e = testkit::assert_refused(
            &launch(&env, &state, "two-outputs", &inside)
                .output()
                .unwrap(),
            2,
            Kind::TargetInvalid,
        );
        assert!(e.message.contains("platform root"), "{}", e.message);
    }
    let e = testkit::assert_refused(
        &launch(&env, &state, "two-outputs", &env.dir.join("."))
            .output()
            .unwrap(),
        2,
        Kind::TargetInvalid,
    );
    assert!(
        e.message.contains("holds the platform root"),
        "{}",
        e.message
    );
}

#[test]
fn nothing_is_made_in_the_state_for_a_registry_that_is_not_there() {
    let env = Env::new();
    let state = env.dir.join("state");
    let mut c = common::launch_into(
        &env.dir.join("no-registry"),
        "fixture",
        &env.target,
        &["--allow-audit-plugin"],
    );
    let out = c.arg("--state").arg(&state).output().unwrap();
    testkit::assert_refused(&out, 1, Kind::RootMissing);
    assert!(!state.exists(), "the state was made for a missing registry");
}
