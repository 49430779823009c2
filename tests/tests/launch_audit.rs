//! End-to-end runs at `audit` level through the real binaries.

#![allow(clippy::unwrap_used)]

mod common;

use common::{failure, result, Env};
use proto::result::RunStatus;
use proto::{Containment, Kind, Trust};

#[test]
fn hello_commits_its_file_and_reports_audit() {
    let env = Env::new();
    let out = env
        .launch("hello", &["--allow-audit-plugin", "--input", "name=dot"])
        .output()
        .unwrap();
    let r = result(&out);
    assert_eq!(r.status, RunStatus::Committed);
    assert_eq!(r.containment, Containment::Audit);
    assert_eq!(r.trust, Trust::Local);
    assert_eq!(r.exit.code, Some(0));
    assert_eq!(r.outputs.len(), 1);
    assert_eq!(r.outputs[0].name, "hello.txt");
    assert_eq!(
        std::fs::read(env.target.join("hello.txt")).unwrap(),
        b"hello, dot\n"
    );
    assert_eq!(r.outputs[0].sha256, proto::Sha256::of(b"hello, dot\n"));
    assert_eq!(
        env.runs(),
        Vec::<String>::new(),
        "the run directory is removed after commit"
    );
}

#[test]
fn a_run_without_outputs_commits_nothing_and_leaves_no_run_directory() {
    let env = Env::new();
    let hello = testkit::workspace_bin("hello");
    env.register("quiet", &hello, "audit", &["name", "write"]);
    let out = env
        .launch("quiet", &["--allow-audit-plugin", "--input", "write=no"])
        .output()
        .unwrap();
    let r = result(&out);
    assert_eq!(r.status, RunStatus::Committed);
    assert!(r.outputs.is_empty());
    assert_eq!(r.response.map(|x| x.outputs), Some(Vec::new()));
    assert_eq!(env.target_files(), Vec::<String>::new());
    assert_eq!(
        env.runs(),
        Vec::<String>::new(),
        "the run directory is removed"
    );
}

#[test]
fn plugin_gets_an_empty_environment_and_only_three_fds() {
    let env = Env::new();
    let out = env.fixture("env", &[], &[]);
    result(&out);
    assert_eq!(
        std::fs::read_to_string(env.target.join("result.txt")).unwrap(),
        ""
    );
    let out = env.fixture("fds", &[], &[]);
    result(&out);
    // 0, 1, 2 and the directory handle read_dir itself opened.
    let fds = std::fs::read_to_string(env.target.join("result.txt")).unwrap();
    let fds: Vec<&str> = fds.split(',').collect();
    assert_eq!(fds.len(), 4, "{fds:?}");
    assert!(fds.starts_with(&["0", "1", "2"]), "{fds:?}");
}

#[test]
fn stderr_is_counted_and_discarded() {
    let env = Env::new();
    let r = result(&env.fixture("some-stderr", &[], &[]));
    assert_eq!(
        r.stderr_bytes,
        "a warning the launcher counts and discards\n".len() as u64
    );
}

/// Runs the fixture in `mode`, asserts it failed with `kind` and changed nothing; its error.
fn assert_plugin_failure(mode: &str, kind: Kind) -> proto::ErrorObject {
    let env = Env::new();
    std::fs::write(env.target.join("result.txt"), b"old bytes").unwrap();
    let out = env.fixture(mode, &[], &["--deadline-ms", "2000"]);
    let err = failure(&out, 3);
    testkit::assert_kind!(err, kind, "{mode}:");
    let run = err
        .run
        .clone()
        .expect("the error object carries the run's fields");
    assert_eq!(run.status, RunStatus::Failed);
    assert!(run.outputs.is_empty());
    assert_eq!(
        std::fs::read(env.target.join("result.txt")).unwrap(),
        b"old bytes",
        "{mode}: target untouched"
    );
    assert_eq!(
        env.target_files(),
        vec!["result.txt".to_owned()],
        "{mode}: no temp files left"
    );
    assert_eq!(
        env.runs(),
        Vec::<String>::new(),
        "{mode}: the failed run is removed"
    );
    err
}

/// The protocol's one response line of the fixture, as an excerpt shows it.
const OK_SHOWN: &str = r#"{\"protocol\":\"1.0\",\"status\":\"ok\",\"outputs\":[\"result.txt\"]}\n"#;

/// Asserts `err` shows stdout's first bytes as `shown` (field `stdout`, and in the message),
/// followed by `more` bytes not shown.
fn assert_shows_stdout(err: &proto::ErrorObject, shown: &str, more: usize) {
    assert_eq!(err.field.as_deref(), Some("stdout"), "{err:?}");
    assert_eq!(err.value.as_deref(), Some(shown), "{err:?}");
    let said = match more {
        0 => format!("; stdout was \"{shown}\""),
        n => format!("; stdout began \"{shown}\" and {n} more bytes"),
    };
    assert!(err.message.ends_with(&said), "{}", err.message);
}

#[test]
fn noise_before_the_response_fails() {
    let err = assert_plugin_failure("noise-before", Kind::PluginProtocol);
    let stdout = format!("starting up\\n{OK_SHOWN}");
    // 80 bytes shown, of the 12 + 58 + 1 the fixture wrote: all of it.
    assert_shows_stdout(&err, &stdout, 0);
}

#[test]
fn noise_after_the_response_fails() {
    let err = assert_plugin_failure("noise-after", Kind::PluginProtocol);
    assert_shows_stdout(&err, &format!("{OK_SHOWN}done\\n"), 0);
}

#[test]
fn two_json_objects_fail() {
    let err = assert_plugin_failure("two-objects", Kind::PluginProtocol);
    // 57 bytes and a newline, twice: the first 80 shown, 36 more.
    let value = err.value.clone().unwrap_or_default();
    assert!(value.starts_with(&format!("{OK_SHOWN}{{")), "{value}");
    assert_shows_stdout(&err, &value, 116 - 80);
}

#[test]
fn non_json_stdout_fails() {
    let err = assert_plugin_failure("not-json", Kind::PluginProtocol);
    assert_shows_stdout(&err, "hello world\\n", 0);
}

#[test]
fn stdout_that_would_drive_a_terminal_is_shown_escaped() {
    let env = Env::new();
    let out = env.fixture("terminal-noise", &[], &[]);
    let err = failure(&out, 3);
    testkit::assert_kind!(err, Kind::PluginProtocol);
    assert_shows_stdout(&err, r"\u{1b}[2J\u{1b}]0;title\u{7}\xff\n", 0);
    assert!(
        !out.stderr.iter().any(|&b| b == 0x1b || b == 0x07),
        "no control byte on dot-launch's stderr: {:?}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn stdout_over_the_limit_fails() {
    let err = assert_plugin_failure("big-stdout", Kind::StdoutLimit);
    let seen = err.run.as_ref().map_or(0, |r| r.stdout_bytes) as usize;
    assert_shows_stdout(&err, &"x".repeat(80), seen - 80);
}

#[test]
fn stderr_over_the_limit_fails() {
    assert_plugin_failure("big-stderr", Kind::StderrLimit);
}

#[test]
fn nonzero_exit_fails() {
    assert_plugin_failure("exit-3", Kind::PluginExit);
}

#[test]
fn death_by_signal_fails() {
    assert_plugin_failure("signal", Kind::PluginSignal);
}

#[test]
fn deadline_fails() {
    assert_plugin_failure("sleep", Kind::Deadline);
}

#[test]
fn error_status_fails() {
    assert_plugin_failure("status-error", Kind::PluginError);
}

#[test]
fn output_name_with_a_path_fails() {
    assert_plugin_failure("bad-output-name", Kind::OutputsInvalid);
}

#[test]
fn symlinked_output_fails() {
    assert_plugin_failure("symlink-output", Kind::OutputsInvalid);
}

#[test]
fn missing_output_fails() {
    assert_plugin_failure("missing-output", Kind::OutputsInvalid);
}

fn assert_refused_never_ran(args: &[&str], code: i32, kind: Kind) {
    let env = Env::new();
    let marker = env.dir.join("marker");
    let mut c = env.launch("fixture", args);
    c.args([
        "--input",
        "mode=marker",
        "--input",
        &format!("marker={}", marker.display()),
    ]);
    let err = failure(&c.output().unwrap(), code);
    testkit::assert_kind!(err, kind);
    assert!(!marker.exists(), "the plugin must never have run");
    assert_eq!(env.runs(), Vec::<String>::new(), "nothing created");
    assert_eq!(env.target_files(), Vec::<String>::new());
}

#[test]
fn missing_consent_refuses_and_names_the_flag() {
    let env = Env::new();
    let err = failure(&env.launch("hello", &[]).output().unwrap(), 1);
    testkit::assert_kind!(err, Kind::ConsentMissing);
    assert!(err.next.unwrap().contains("--allow-audit-plugin"));
    assert_refused_never_ran(&[], 1, Kind::ConsentMissing);
}

#[test]
fn process_consent_on_an_audit_entry_refuses() {
    assert_refused_never_ran(&["--require-process-sandbox"], 1, Kind::ConsentMismatch);
    assert_refused_never_ran(
        &["--allow-audit-plugin", "--require-process-sandbox"],
        1,
        Kind::ConsentMismatch,
    );
}

#[test]
fn undeclared_input_refuses() {
    assert_refused_never_ran(
        &["--allow-audit-plugin", "--input", "nope=1"],
        1,
        Kind::InputUndeclared,
    );
}

#[test]
fn rewritten_pinned_store_file_refuses() {
    let env = Env::new();
    let marker = env.dir.join("marker");
    let store = env.root.join("store/sha256");
    for e in std::fs::read_dir(&store).unwrap() {
        let p = e.unwrap().path();
        let mut bytes = std::fs::read(&p).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        std::fs::write(&p, &bytes).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o500)).unwrap();
    }
    let mut c = env.launch("fixture", &["--allow-audit-plugin"]);
    c.args([
        "--input",
        "mode=marker",
        "--input",
        &format!("marker={}", marker.display()),
    ]);
    let err = failure(&c.output().unwrap(), 1);
    testkit::assert_kind!(err, Kind::StoreTampered, "{err:?}");
    assert!(!marker.exists());
    assert_eq!(env.runs(), Vec::<String>::new());
}

#[test]
fn file_input_that_is_a_symlink_refuses() {
    let env = Env::new();
    let fixture = testkit::workspace_bin("fixture-plugin");
    env.register_with("cat", &fixture, "audit", &["--input", "doc:file"]);
    std::fs::write(env.dir.join("real"), b"x").unwrap();
    std::os::unix::fs::symlink(env.dir.join("real"), env.dir.join("link")).unwrap();
    let run = |arg: String| {
        let mut c = env.launch("cat", &["--allow-audit-plugin"]);
        c.args(["--input-file", &arg]);
        c.output().unwrap()
    };
    testkit::assert_kind!(
        failure(&run(format!("doc={}", env.dir.join("link").display())), 1),
        Kind::InputFileUnsafe
    );
    testkit::assert_kind!(
        failure(&run(format!("doc={}", env.dir.path().display())), 1),
        Kind::InputFileUnsafe
    );
    let missing = env
        .launch("cat", &["--allow-audit-plugin"])
        .output()
        .unwrap();
    testkit::assert_kind!(failure(&missing, 2), Kind::InputMissing);
}

#[test]
fn protocol_range_excluding_ours_refuses() {
    let env = Env::new();
    let hello = testkit::workspace_bin("hello");
    env.register_with("future", &hello, "audit", &["--protocol", ">=2"]);
    let err = failure(
        &env.launch("future", &["--allow-audit-plugin"])
            .output()
            .unwrap(),
        1,
    );
    testkit::assert_kind!(err, Kind::ProtocolUnsupported);
    assert_eq!(err.field.as_deref(), Some("protocol"));
}

#[test]
fn two_outputs_commit_atomically_per_file() {
    let env = Env::new();
    let r = result(&env.fixture("two-outputs", &[("a", "first"), ("b", "second")], &[]));
    assert_eq!(
        r.outputs
            .iter()
            .map(|o| o.name.as_str())
            .collect::<Vec<_>>(),
        ["a.txt", "b.txt"]
    );
    assert_eq!(std::fs::read(env.target.join("a.txt")).unwrap(), b"first");
    assert_eq!(std::fs::read(env.target.join("b.txt")).unwrap(), b"second");
    assert_eq!(env.target_files(), ["a.txt", "b.txt"]);
}

/// A FIFO in place of `ROOT/audit.log` (no reader: a blocking open would wait forever, with the
/// cancelling signals blocked): the launch refuses at once as `root-unsafe` naming the log, and
/// nothing runs.
#[test]
fn an_audit_log_that_is_a_fifo_refuses_the_launch_without_waiting() {
    let env = Env::new();
    let log = env.root.join("audit.log");
    std::fs::remove_file(&log).unwrap();
    nix::unistd::mkfifo(&log, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let mut child = env
        .launch("hello", &["--allow-audit-plugin", "--input", "name=fifo"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("dot-launch waited on the fifo");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let e = testkit::assert_refused(&out, 1, Kind::RootUnsafe);
    assert_eq!(e.path.as_deref(), log.to_str());
    assert!(e.message.contains("fifo"), "{}", e.message);
    assert!(!env.target.join("hello.txt").exists(), "nothing ran");
    assert!(env.runs().is_empty(), "no run directory: {:?}", env.runs());
}

/// An audit log that is a symbolic link, a directory, a hard link to a file elsewhere or a file
/// others may write is not the root's own log: the launch refuses as `root-unsafe` (exit 1, as for
/// any layout file not ours alone), appends nothing anywhere, and nothing runs.
#[test]
fn an_audit_log_that_is_a_link_a_directory_shared_or_open_to_others_refuses_the_launch() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let log = env.root.join("audit.log");
    let elsewhere = env.dir.join("elsewhere.log");
    std::fs::rename(&log, &elsewhere).unwrap();
    let before = std::fs::read(&elsewhere).unwrap();
    let cases: [(&str, &dyn Fn()); 4] = [
        ("symbolic link", &|| {
            std::os::unix::fs::symlink(&elsewhere, &log).unwrap()
        }),
        ("directory", &|| std::fs::create_dir(&log).unwrap()),
        ("hard-linked file", &|| {
            std::fs::hard_link(&elsewhere, &log).unwrap()
        }),
        ("writable by group or others", &|| {
            std::fs::write(&log, b"").unwrap();
            std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
        }),
    ];
    for (what, make) in cases {
        make();
        let out = env
            .launch("hello", &["--allow-audit-plugin", "--input", "name=log"])
            .output()
            .unwrap();
        let e = testkit::assert_refused(&out, 1, Kind::RootUnsafe);
        assert_eq!(e.path.as_deref(), log.to_str(), "{what}");
        assert!(e.message.contains(what), "{what}: {}", e.message);
        assert!(
            !env.target.join("hello.txt").exists(),
            "{what}: nothing ran"
        );
        assert!(env.runs().is_empty(), "{what}: {:?}", env.runs());
        assert_eq!(std::fs::read(&elsewhere).unwrap(), before, "{what}");
        match std::fs::symlink_metadata(&log) {
            Ok(m) if m.is_dir() => std::fs::remove_dir(&log).unwrap(),
            _ => std::fs::remove_file(&log).unwrap(),
        }
    }
    // Removed, the next launch makes it again.
    let out = env
        .launch("hello", &["--allow-audit-plugin", "--input", "name=log"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(log.is_file());
}
