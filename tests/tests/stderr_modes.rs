//! The plugin's stderr: bounded and discarded by default; `--stderr pass` forwards it live to
//! dot-launch's stderr (still bounded); `--stderr tail` keeps its last 4 KiB in the failure object.
//! Nothing of it is ever written to disk. A plugin that answers `status: "error"` and exits nonzero
//! keeps its message.

#![allow(clippy::unwrap_used)]

mod common;

use common::Env;
use proto::Kind;

fn explain_fail(env: &Env, extra: &[&str]) -> std::process::Output {
    env.fixture("explain-fail", &[], extra)
}

/// The last line of stderr: dot-launch's own error object.
fn error_of(out: &std::process::Output) -> proto::ErrorObject {
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let text = String::from_utf8_lossy(&out.stderr);
    let last = text.lines().last().unwrap();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {last}"))
}

/// No file under `dir` holds `needle`.
fn nowhere_on_disk(dir: &std::path::Path, needle: &[u8]) {
    for (path, _) in testkit::tree_snapshot(dir) {
        let full = dir.join(&path);
        if full.is_file() {
            let bytes = std::fs::read(&full).unwrap();
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle),
                "{} holds the plugin's stderr",
                full.display()
            );
        }
    }
}

#[test]
fn an_explained_failure_keeps_its_message_and_exit_status() {
    let env = Env::new();
    let out = explain_fail(&env, &[]);
    let e = error_of(&out);
    testkit::assert_kind!(e, Kind::PluginError);
    assert_eq!(e.message, "the input was not a poem (exit status 4)");
    let run = e.run.unwrap();
    assert_eq!(run.exit.code, Some(4));
    assert_eq!(
        run.response.unwrap().message.as_deref(),
        Some("the input was not a poem")
    );
    assert_eq!(run.stderr_tail, None, "discarded by default");
    // Discarded: dot-launch's stderr is exactly its one error line.
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}

#[test]
fn pass_forwards_stderr_live_and_bounded() {
    let env = Env::new();
    let out = explain_fail(&env, &["--stderr", "pass"]);
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        text.starts_with("debug line 0\ndebug line 1\ndebug line 2\n{"),
        "{text}"
    );
    testkit::assert_kind!(error_of(&out), Kind::PluginError);
    // Bounded: past --max-stderr nothing more is forwarded and the run fails.
    let out = explain_fail(
        &env,
        &[
            "--stderr",
            "pass",
            "--max-stderr",
            "100",
            "--input",
            "size=1000",
        ],
    );
    let e = error_of(&out);
    testkit::assert_kind!(e, Kind::StderrLimit);
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    let forwarded = text.len() - text.lines().last().unwrap().len() - 1;
    assert!(forwarded <= 101, "{forwarded} bytes forwarded: {text}");
    nowhere_on_disk(env.dir.path(), b"debug line 12\n");
}

#[test]
fn tail_keeps_the_last_bytes_in_the_failure_object() {
    let env = Env::new();
    let out = explain_fail(&env, &["--stderr", "tail", "--input", "size=2000"]);
    let e = error_of(&out);
    let tail = e.run.unwrap().stderr_tail.unwrap();
    assert!(tail.len() <= 4096, "{}", tail.len());
    assert!(
        tail.ends_with("debug line 1998\ndebug line 1999\n"),
        "{tail}"
    );
    assert!(!tail.contains("debug line 0\n"));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    nowhere_on_disk(env.dir.path(), b"debug line 12\n");
}

#[test]
fn an_unknown_stderr_mode_is_a_usage_error() {
    let env = Env::new();
    let out = env
        .launch("fixture", &["--allow-audit-plugin", "--stderr", "file"])
        .output()
        .unwrap();
    let e = common::failure(&out, 2);
    testkit::assert_kind!(e, Kind::Usage);
}
