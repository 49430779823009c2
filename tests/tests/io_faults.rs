//! The I/O-fault campaign as a suite: `strace -e inject=SYSCALL:error=EIO:when=N` fails the N-th
//! call of each system call a commit, a `recover` and a `dot-discard` make, for every N the
//! undisturbed run reaches. After each fault: the tool exits 0, 4 or 5 (never a refusal, a usage
//! error or a plugin failure: the host's error is never blamed on the plugin or the invoker); exit
//! 5 is one `io` (or `result-unwritten`) error object; exit 4 is a committed result with warnings,
//! a report, or one `run-retained`/`cleanup-retained` error; every run `dot-discard` or `recover`
//! retains under a fault says what to run next. Then `recover` and `dot-discard` settle the root:
//! `txn/` empty, no temp file in the target, and the target all-old or all-new.
//!
//! Only the tool itself is traced (no `-f`): the plugin is not disturbed.

#![allow(clippy::unwrap_used)]

mod common;

use common::{discard, names, recover, require_program, tool, Env};
use proto::Kind;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};

/// The calls a commit, a recover and a discard make on files and directories.
const SYSCALLS: [&str; 13] = [
    "openat",
    "write",
    "fsync",
    "fdatasync",
    "renameat",
    "unlinkat",
    "flock",
    "newfstatat",
    "statx",
    "getdents64",
    "mkdir",
    "read",
    "pread64",
];

/// `cmd` under strace: only `syscall` traced, its `when`-th call failed with EIO (`None`: no
/// fault, the trace kept in `log` to count the calls).
fn under_strace(
    cmd: &Command,
    syscall: &str,
    when: Option<usize>,
    log: &std::path::Path,
) -> Output {
    let mut c = Command::new("strace");
    c.args(["-qq", "-o"])
        .arg(log)
        .arg("-e")
        .arg(format!("trace={syscall}"));
    if let Some(n) = when {
        c.arg("-e")
            .arg(format!("inject={syscall}:error=EIO:when={n}"));
    }
    c.arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c.env_remove("DOT_FAILPOINT").output().unwrap()
}

/// How many times `cmd` calls `syscall` when nothing fails.
fn calls(cmd: &Command, syscall: &str, log: &std::path::Path) -> usize {
    let out = under_strace(cmd, syscall, None, log);
    assert!(out.status.code().is_some(), "{out:?}");
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with(&format!("{syscall}(")))
        .count()
}

/// The target's state: `Some(true)` all-new, `Some(false)` all-old, `None` anything else.
fn all_new(env: &Env) -> Option<bool> {
    let read = |n: &str| std::fs::read(env.target.join(n)).ok();
    match (read("a.txt").as_deref(), read("b.txt").as_deref()) {
        (Some(b"new a\n"), Some(b"new b\n")) => Some(true),
        (Some(b"old a\n"), None) => Some(false),
        _ => None,
    }
}

fn temps(env: &Env) -> Vec<String> {
    names(&env.target)
        .into_iter()
        .filter(|n| n.starts_with(".dot-"))
        .collect()
}

/// Checks one faulted tool's exit, stderr and stdout; returns the error kind, if any.
fn judge(what: &str, out: &Output) -> Option<Kind> {
    let code = out.status.code();
    assert!(
        matches!(code, Some(0 | 4 | 5)),
        "{what}: exit {:?} (signal {:?})\nstdout {}\nstderr {}",
        code,
        out.status.signal(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.stderr.is_empty() {
        assert_ne!(code, Some(5), "{what}: exit 5 without an error object");
        // A document on stdout: a result, or a report; every run retained says what to run next.
        let doc: serde_json::Value = testkit::decode_json(&out.stdout);
        for list in ["retained", "skipped", "conflicts"] {
            for r in doc[list].as_array().into_iter().flatten() {
                let state = r["state"].as_str().unwrap_or("");
                if state != "LIVE" && state != "UNRECOGNIZED" {
                    assert!(
                        r["next"].is_string(),
                        "{what}: {list} entry without next: {r}"
                    );
                }
            }
        }
        return None;
    }
    let e = testkit::assert_failed(out, code.unwrap_or(-1));
    let allowed: &[Kind] = match code {
        Some(5) => &[Kind::Io, Kind::ResultUnwritten],
        Some(4) => &[Kind::RunRetained, Kind::CleanupRetained],
        _ => &[],
    };
    assert!(allowed.contains(&e.error), "{what}: {e:?}");
    Some(e.error)
}

/// After a faulted `recover` or `dot-discard` that printed its report: every run still in `txn/`
/// is in the report with its reason (a fault never makes a run look gone, finished or absent while
/// it is there), and a host's error is never a conflict: no `conflicts` entry, and no `next` that
/// gives a run up (`--abandon`), which would leave the target mixed.
fn accounts_for_every_run(env: &Env, what: &str, out: &Output) {
    if !out.stderr.is_empty() {
        return;
    }
    let doc: serde_json::Value = testkit::decode_json(&out.stdout);
    let listed: Vec<&str> = ["retained", "skipped", "conflicts"]
        .iter()
        .flat_map(|list| doc[*list].as_array().into_iter().flatten())
        .filter_map(|r| r["txid"].as_str())
        .collect();
    for run in env.runs() {
        assert!(
            listed.contains(&run.as_str()),
            "{what}: run {run} is still there but the report does not say so: {doc}"
        );
    }
    assert!(
        doc["conflicts"].as_array().is_none_or(|c| c.is_empty()),
        "{what}: an error of the host reported as a conflict: {doc}"
    );
    assert!(
        !doc.to_string().contains("--abandon"),
        "{what}: a host error's next gives the run up: {doc}"
    );
}

/// Runs recover and dot-discard (a few times: a run a fault left may need its own pass) until
/// `txn/` is empty; asserts it is, with no temp left in the target.
fn settle(env: &Env, what: &str) {
    for _ in 0..3 {
        if env.runs().is_empty() {
            break;
        }
        let _ = recover(&env.root);
        let _ = discard(&env.root);
    }
    assert!(env.runs().is_empty(), "{what}: runs left {:?}", env.runs());
    assert!(temps(env).is_empty(), "{what}: temps left {:?}", temps(env));
}

fn launch(env: &Env) -> Command {
    env.two_new_outputs_into(&env.target)
}

fn reset(env: &Env) {
    for n in names(&env.target) {
        std::fs::remove_file(env.target.join(n)).unwrap();
    }
    std::fs::write(env.target.join("a.txt"), b"old a\n").unwrap();
}

/// Leaves the run killed at `point` in the reset target.
fn killed_at(env: &Env, point: &str) {
    reset(env);
    let out = launch(env).env("DOT_FAILPOINT", point).output().unwrap();
    assert_eq!(out.status.signal(), Some(9), "{point}: {out:?}");
}

/// Whether a target state may follow a fault: (all-new?, the error kind, the tool's output).
type End = dyn Fn(Option<bool>, Option<Kind>, &Output) -> bool;

/// The campaign over one tool: `prepare` makes the state, `cmd` is the tool, `end` says which
/// target states may follow the fault (after settling). Returns the number of faults injected.
fn campaign(
    env: &Env,
    syscalls: &[&str],
    tool_name: &str,
    prepare: &dyn Fn(&Env),
    cmd: &dyn Fn(&Env) -> Command,
    end: &End,
) -> usize {
    let log = env.dir.join("strace.log");
    let mut faults = 0;
    for &syscall in syscalls {
        prepare(env);
        let n = calls(&cmd(env), syscall, &log);
        settle(env, &format!("{tool_name}: counting {syscall}"));
        for when in 1..=n {
            prepare(env);
            let what = format!("{tool_name}: {syscall} call {when} of {n} fails with EIO");
            let out = under_strace(&cmd(env), syscall, Some(when), &log);
            let kind = judge(&what, &out);
            if tool_name == "recover" || tool_name == "dot-discard" {
                accounts_for_every_run(env, &what, &out);
            }
            settle(env, &what);
            let state = all_new(env);
            assert!(
                state.is_some() && end(state, kind, &out),
                "{what}: the target is {:?} ({:?}) after {out:?}",
                state,
                names(&env.target)
            );
            faults += 1;
        }
    }
    faults
}

#[test]
fn every_io_fault_of_a_commit_recover_and_discard_is_reported_and_settles() {
    require_program("strace", "strace");
    let env = Env::with_process_fixture();
    // A commit: a committed result means all-new; a failure before PREPARED all-old, after it
    // all-new once recovered.
    let commits = campaign(
        &env,
        &SYSCALLS,
        "dot-launch",
        &reset,
        &launch,
        &|state, kind, out| match (out.status.code(), kind) {
            (Some(0), _) | (Some(4), None) => state == Some(true),
            _ => state.is_some(),
        },
    );
    // recover of a run killed between its renames: once settled, always all-new.
    let recovers = campaign(
        &env,
        &SYSCALLS,
        "recover",
        &|env| killed_at(env, "between-renames"),
        &|env| {
            let mut c = tool("dot-launch");
            c.args(["recover", "--root"]).arg(&env.root);
            c
        },
        &|state, _, _| state == Some(true),
    );
    // dot-discard of a run killed with its temp files in the target: always all-old.
    let discards = campaign(
        &env,
        &SYSCALLS,
        "dot-discard",
        &|env| killed_at(env, "after-temp"),
        &|env| {
            let mut c = tool("dot-discard");
            c.arg("--root").arg(&env.root);
            c
        },
        &|state, _, _| state == Some(false),
    );
    // A `process` launch: its opens (dot-sandbox among them) and reads (the pinned copy's ELF
    // check among them).
    let confined = campaign(
        &env,
        &["openat", "read", "pread64"],
        "dot-launch (process)",
        &reset,
        &|env| env.two_new_outputs_as("fixture-p", "--require-process-sandbox", &env.target),
        &|state, kind, out| match (out.status.code(), kind) {
            (Some(0), _) | (Some(4), None) => state == Some(true),
            _ => state.is_some(),
        },
    );
    eprintln!(
        "faults injected: {commits} commit, {confined} process commit, {recovers} recover, \
         {discards} discard"
    );
    assert!(commits > 100 && confined > 20 && recovers > 20 && discards > 20);
}
