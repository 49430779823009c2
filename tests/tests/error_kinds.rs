//! Error kinds of `dot-launch` the other suites do not cause, each caused through the command line
//! (exit code, kind, and the fields and `next` command of its error object), and the one that
//! needs a failure between PREPARED and COMMITTED checked on the typed error.
#![allow(clippy::unwrap_used)]

mod common;

use common::{bin_dir, failure, launch_into, tool, Env};
use launch::LaunchError;
use proto::{ExitCode, Kind, ToErrorObject};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

#[test]
fn a_string_input_given_as_a_file_is_input_kind() {
    let env = Env::new();
    let e = failure(
        &env.fixture("ok", &[], &["--input-file", "name=/etc/hostname"]),
        2,
    );
    testkit::assert_kind!(e, Kind::InputKind);
    assert_eq!(e.field.as_deref(), Some("inputs"));
    assert_eq!(e.value.as_deref(), Some("name"));
    assert!(env.runs().is_empty(), "nothing was created");
}

#[test]
fn an_input_without_equals_is_input_syntax() {
    let env = Env::new();
    let e = failure(&env.fixture("ok", &[], &["--input", "name"]), 2);
    testkit::assert_kind!(e, Kind::InputSyntax);
    assert_eq!(e.value.as_deref(), Some("name"));
}

#[test]
fn an_input_given_twice_is_input_twice() {
    let env = Env::new();
    let e = failure(&env.fixture("ok", &[("name", "a"), ("name", "b")], &[]), 2);
    testkit::assert_kind!(e, Kind::InputTwice);
    assert_eq!(e.value.as_deref(), Some("name"));
}

#[test]
fn an_unreadable_or_invalid_request_is_request_invalid() {
    let env = Env::new();
    let missing = env.dir.join("missing.json");
    let e = failure(
        &env.fixture("ok", &[], &["--request", missing.to_str().unwrap()]),
        2,
    );
    testkit::assert_kind!(e, Kind::RequestInvalid);
    assert_eq!(e.path.as_deref(), missing.to_str());

    let other = env.dir.join("other.json");
    std::fs::write(
        &other,
        br#"{"protocol":"1.0","plugin":"hello","inputs":{}}"#,
    )
    .unwrap();
    let e = failure(
        &env.fixture("ok", &[], &["--request", other.to_str().unwrap()]),
        2,
    );
    testkit::assert_kind!(e, Kind::RequestInvalid, "a request for another plugin");
}

#[test]
fn a_missing_target_is_target_invalid_with_the_mkdir_that_fixes_it() {
    let env = Env::new();
    let to = |target: &Path| {
        let out = launch_into(&env.root, "hello", target, &["--allow-audit-plugin"])
            .output()
            .unwrap();
        failure(&out, 2)
    };
    let missing = env.dir.join("no-such-dir");
    let e = to(&missing);
    testkit::assert_kind!(e, Kind::TargetInvalid);
    assert_eq!(e.field.as_deref(), Some("target"));
    assert_eq!(
        e.next,
        Some(format!("mkdir -p {}", missing.display())),
        "{e:?}"
    );
    assert!(env.runs().is_empty());

    let file = env.dir.join("a-file");
    std::fs::write(&file, b"").unwrap();
    let e = to(&file);
    testkit::assert_kind!(e, Kind::TargetInvalid);
    assert_eq!(e.next, None, "no single command fixes a file in the way");
}

#[test]
fn an_output_whose_name_is_a_directory_in_the_target_is_target_conflict() {
    let env = Env::new();
    std::fs::create_dir(env.target.join("result.txt")).unwrap();
    let e = failure(&env.fixture("ok", &[], &[]), 3);
    testkit::assert_kind!(e, Kind::TargetConflict);
    let run = e.run.expect("a plugin failure carries the run");
    assert_eq!(run.status, proto::result::RunStatus::Failed);
    assert!(env.target.join("result.txt").is_dir(), "nothing replaced");
    assert!(env.runs().is_empty(), "the run directory is removed");
}

#[test]
fn recover_of_an_unknown_run_is_no_such_run_with_the_command_that_lists_runs() {
    let env = Env::new();
    let txid = "0123456789abcdef0123456789abcdef";
    let out = tool("dot-launch")
        .arg("--root")
        .arg(&env.root)
        .args(["recover", txid])
        .output()
        .unwrap();
    let e = failure(&out, 2);
    testkit::assert_kind!(e, Kind::NoSuchRun);
    assert_eq!(e.value.as_deref(), Some(txid));
    assert_eq!(
        testkit::bare(e.next.as_deref()),
        Some(format!("dot-journal-fmt --root {}", env.root.display()))
    );
}

#[test]
fn an_extra_argument_is_usage_with_help_as_next() {
    let env = Env::new();
    let e = failure(&env.fixture("ok", &[], &["--", "hello", "extra"]), 2);
    testkit::assert_kind!(e, Kind::Usage);
    assert!(e.next.is_some_and(|n| n.ends_with("--help")));
}

#[test]
fn a_malformed_publisher_record_is_publisher_malformed_with_the_field() {
    let env = Env::new();
    let record = env.root.join("trust/publishers/acme.json");
    std::fs::write(&record, br#"{"x":1}"#).unwrap();
    std::fs::set_permissions(&record, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = tool("dot-register")
        .args(["publisher", "list", "--root"])
        .arg(&env.root)
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 2, Kind::PublisherMalformed);
    assert_eq!(e.field.as_deref(), Some("x"));
    assert_eq!(e.path.as_deref(), record.to_str());
}

/// A copy of `dot-launch` in its own directory with `runner` beside it as `dot-sandbox`, and a DEV
/// root with `hello` registered at `process`.
fn launch_with_runner(env: &Env, runner: &Path) -> std::process::Output {
    let dir = env.dir.join("bin");
    std::fs::create_dir(&dir).unwrap();
    testkit::copy_exe(&bin_dir().join("dot-launch"), &dir.join("dot-launch"));
    testkit::copy_exe(runner, &dir.join("dot-sandbox"));
    for f in ["dot-launch", "dot-sandbox"] {
        std::fs::set_permissions(dir.join(f), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    env.register("hello-p", &bin_dir().join("hello"), "process", &["name"]);
    env.launch_via(
        &dir.join("dot-launch"),
        "hello-p",
        &["--require-process-sandbox"],
    )
    .output()
    .unwrap()
}

#[test]
fn a_runner_that_reports_nothing_is_sandbox_no_report_and_nothing_is_committed() {
    let env = Env::new();
    // hello stands in for dot-sandbox: it runs and answers, but never reports on descriptor 5.
    let e = failure(&launch_with_runner(&env, &bin_dir().join("hello")), 3);
    testkit::assert_kind!(e, Kind::SandboxNoReport);
    assert!(e.run.is_some_and(|r| r.enforced.is_none()));
    assert!(
        env.target_files().is_empty(),
        "its output was not committed"
    );
}

#[test]
fn a_runner_that_refuses_is_sandbox_refused_with_its_kind() {
    let env = Env::new();
    let e = failure(
        &launch_with_runner(&env, &bin_dir().join("fixture-plugin")),
        1,
    );
    testkit::assert_kind!(e, Kind::SandboxRefused);
    assert_eq!(e.value.as_deref(), Some("landlock-not-enforced"));
    assert!(env.target_files().is_empty());
    assert!(env.runs().is_empty());
}

/// A failure after PREPARED (a rename or fsync in the target failing) cannot be caused on purpose
/// without breaking the filesystem; the crash suites cover the interrupted run itself.
#[test]
fn a_failure_after_prepared_is_run_retained_with_the_recover_command() {
    let e = LaunchError::Retained {
        txid: "0123456789abcdef0123456789abcdef".into(),
        why: "renaming hello.txt: EIO".into(),
        next: cli::next::recover_run(
            &proto::layout::Root::single("/srv/dot"),
            "0123456789abcdef0123456789abcdef",
        ),
    };
    testkit::assert_typed(&e, Kind::RunRetained);
    assert_eq!(Kind::RunRetained.exit_code(), ExitCode::Retained);
    let obj = e.to_error_object();
    testkit::assert_kind!(obj, Kind::RunRetained);
    assert_eq!(
        obj.value.as_deref(),
        Some("0123456789abcdef0123456789abcdef")
    );
    assert_eq!(
        obj.next.as_deref(),
        Some("dot-launch recover --root /srv/dot 0123456789abcdef0123456789abcdef")
    );
}
