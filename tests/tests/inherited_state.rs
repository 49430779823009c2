//! What `dot-launch` inherits from whoever started it must not change a run: started with SIGCHLD
//! ignored (a parent's `SIG_IGN` survives exec, and the kernel would then reap every child the
//! moment it ends, before its status could be read), a launch still sees its plugin's exit status
//! and commits, at audit and under `process`; and `dot-sandbox probe --prove` still reads each
//! canary run.

#![allow(clippy::unwrap_used)]

mod common;

use common::{result, Env};
use proto::result::RunStatus;
use std::process::Command;

/// `cmd` run by coreutils' `env --ignore-signal=CHLD`: SIGCHLD ignored across the exec.
fn with_sigchld_ignored(cmd: &Command) -> std::process::Output {
    let mut c = Command::new("env");
    c.arg("--ignore-signal=CHLD").arg(cmd.get_program());
    c.args(cmd.get_args());
    c.env_remove("DOT_FAILPOINT");
    c.output().unwrap()
}

#[test]
fn sigchld_ignored_by_the_parent_is_ignored_by_nobody() {
    // The wrapper really ignores it: a child of its sees SIGCHLD (bit 17) in SigIgn.
    let status = with_sigchld_ignored(Command::new("grep").args(["SigIgn", "/proc/self/status"]));
    let mask = String::from_utf8_lossy(&status.stdout);
    let bits = u64::from_str_radix(mask.trim().trim_start_matches("SigIgn:").trim(), 16).unwrap();
    assert_ne!(bits & (1 << 16), 0, "SIGCHLD is not ignored: {mask}");

    let env = Env::with_process_fixture();
    let run = result(&with_sigchld_ignored(
        &env.launch("hello", &["--allow-audit-plugin", "--input", "name=chld"]),
    ));
    assert_eq!(run.status, RunStatus::Committed);
    assert_eq!(
        std::fs::read_to_string(env.target.join("hello.txt")).unwrap(),
        "hello, chld\n"
    );
    let run = result(&with_sigchld_ignored(&env.launch(
        "fixture-p",
        &["--require-process-sandbox", "--input", "mode=ok"],
    )));
    assert_eq!((run.status, run.exit.code), (RunStatus::Committed, Some(0)));
    // A failing plugin keeps its own exit status.
    let out = with_sigchld_ignored(&env.fixture_command("explain-fail", &[], &[]));
    let e = common::failure(&out, 3);
    testkit::assert_kind!(e, proto::Kind::PluginError);
    assert_eq!(e.run.unwrap().exit.code, Some(4));
}

#[test]
fn probe_prove_with_sigchld_ignored_still_reads_each_run() {
    let mut prove = Command::new(testkit::workspace_bin("dot-sandbox"));
    prove.args(["probe", "--prove", "--only", "read-etc-passwd"]);
    let out = with_sigchld_ignored(&prove);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: sandbox::ProveReport = testkit::decode_json(&out.stdout);
    assert!(report.ok && report.probes.len() == 1, "{report:?}");
}
