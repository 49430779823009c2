//! `dot-launch` blames the right party and says the right numbers: the deadline message names
//! the configured deadline, a response followed by more than one newline is a protocol failure,
//! and the launcher running out of descriptors while committing is its own `io` failure (exit 5),
//! not the plugin's.
#![allow(clippy::unwrap_used)]

mod common;

use common::{failure, Env};
use proto::Kind;
use std::process::Command;

#[test]
fn the_deadline_message_names_the_deadline_and_the_time_taken() {
    let env = Env::new();
    let e = failure(&env.fixture("sleep", &[], &["--deadline-ms", "250"]), 3);
    testkit::assert_kind!(e, Kind::Deadline);
    assert!(
        e.message
            .starts_with("the plugin still ran at its deadline of 250 ms (stopped after "),
        "{}",
        e.message
    );
    let run = e.run.unwrap();
    assert!(
        e.message.ends_with(&format!("{} ms)", run.duration_ms)),
        "{}",
        e.message
    );
}

#[test]
fn a_response_followed_by_two_newlines_is_plugin_protocol() {
    let env = Env::new();
    let e = failure(&env.fixture("two-newlines", &[], &[]), 3);
    testkit::assert_kind!(e, Kind::PluginProtocol);
    assert!(e.message.contains("at most one newline"), "{}", e.message);
    assert!(env.target_files().is_empty());
    // The same response with one newline commits.
    let out = env.fixture("ok", &[], &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn the_launcher_out_of_descriptors_while_committing_is_io_not_the_plugins_fault() {
    let env = Env::new();
    // 200 outputs: validating them holds every one open at once. The limit leaves enough
    // descriptors to run the plugin, not enough to hold its outputs.
    let launch = env.launch(
        "fixture",
        &["--allow-audit-plugin", "--input", "mode=many-outputs"],
    );
    let out = Command::new("prlimit")
        .arg("--nofile=64:64")
        .arg(launch.get_program())
        .args(launch.get_args())
        .output()
        .unwrap();
    let e = failure(&out, 5);
    testkit::assert_kind!(e, Kind::Io);
    assert!(e.message.contains("Too many open files"), "{}", e.message);
    assert!(e.path.unwrap().starts_with("out/f"));
    assert!(env.target_files().is_empty(), "nothing committed");
    assert!(env.runs().is_empty(), "the run was removed");
    // With the usual limit the same plugin commits all 200.
    let out = env.fixture("many-outputs", &[], &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(env.target_files().len(), 200);
}

#[test]
fn a_missing_input_file_is_file_missing_not_unsafe() {
    let env = Env::new();
    env.register_with(
        "files",
        &testkit::workspace_bin("hello"),
        "audit",
        &["--input", "data:file"],
    );
    let missing = env.dir.join("missing");
    let arg = format!("data={}", missing.display());
    let launch = |arg: &str| {
        env.launch("files", &["--allow-audit-plugin", "--input-file", arg])
            .output()
            .unwrap()
    };
    let e = failure(&launch(&arg), 2);
    testkit::assert_kind!(e, Kind::FileMissing);
    assert_eq!(e.path, Some(missing.display().to_string()));
    // A file that is there but not a regular file is still refused as unsafe.
    let e = failure(&launch(&format!("data={}", env.dir.path().display())), 1);
    testkit::assert_kind!(e, Kind::InputFileUnsafe);
    assert_eq!(e.value.as_deref(), Some("data"));
    assert!(env.runs().is_empty());
}

/// A message is one line: argh's list of missing options (one per indented line) is joined after
/// its colon, for every tool (`dot-reap` without `--pgid`, `dot-register init` without `--root`).
#[test]
fn a_missing_option_is_named_on_one_line() {
    for (tool_name, args, missing) in [
        ("dot-reap", &[][..], "--pgid"),
        ("dot-register", &["init"][..], "--root"),
        (
            "dot-verify",
            &["signature", "f"][..],
            "--pubkey, --signature",
        ),
    ] {
        let out = common::tool(tool_name).args(args).output().unwrap();
        let e = testkit::assert_refused(&out, 2, proto::Kind::Usage);
        assert_eq!(
            e.message,
            format!("Required options not provided: {missing}"),
            "{tool_name}"
        );
        assert!(!e.message.contains('\n'), "{e:?}");
    }
}
