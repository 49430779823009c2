//! Every error kind of `dot-sandbox`: caused through the command line where a test can cause it,
//! and otherwise (the kernel refusing a confinement step on a working system) checked on the typed
//! error: its kind, exit code and the fields of its error object.
#![allow(clippy::unwrap_used)]

mod common;

use proto::runner::RunnerLimits;
use proto::{ErrorObject, ExitCode, Kind, ToErrorObject};
use sandbox::{ExecError, ProveError};
use std::io;
use std::process::Command;

/// EPERM, the errno a refused step would carry.
fn eperm() -> io::Error {
    io::Error::from_raw_os_error(1)
}

fn stderr_error(out: &std::process::Output, code: i32) -> ErrorObject {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(out.stderr.trim_ascii_end()).expect("stderr is one error object")
}

/// `dot-sandbox exec` started by bash with the report descriptor 5 open (a file in `dir`) and
/// nothing on descriptor 4, under `limits`.
fn exec_without_plugin(
    dir: &std::path::Path,
    limits: RunnerLimits,
) -> (std::process::Output, String) {
    let report = dir.join("report");
    let argv = common::argv(limits, None);
    let script = format!(
        "exec 5>'{}'; exec '{}' {}",
        report.display(),
        common::runner_path().display(),
        argv[1..].join(" ")
    );
    let out = Command::new("bash")
        .args(["-c", &script])
        .current_dir(dir)
        .output()
        .unwrap();
    (out, std::fs::read_to_string(report).unwrap_or_default())
}

#[test]
fn a_limit_below_its_minimum_is_bad_limit_exit_2() {
    let dir = sandbox::Scratch::new("bad-limit").expect("scratch");
    let limits = RunnerLimits {
        descriptors: 15,
        ..common::limits()
    };
    let (out, report) = exec_without_plugin(&dir.dir, limits);
    let e = stderr_error(&out, 2);
    testkit::assert_kind!(e, Kind::BadLimit);
    assert_eq!(e.field.as_deref(), Some("descriptors"));
    assert_eq!(e.value.as_deref(), Some("15"));
    assert!(
        report.contains("\"bad-limit\""),
        "reported on fd 5 too: {report}"
    );
}

#[test]
fn no_plugin_on_descriptor_4_is_bad_plugin_fd_exit_1() {
    let dir = sandbox::Scratch::new("no-fd4").expect("scratch");
    let (out, report) = exec_without_plugin(&dir.dir, common::limits());
    let e = stderr_error(&out, 1);
    testkit::assert_kind!(e, Kind::BadPluginFd);
    assert_eq!(e.path.as_deref(), Some("/proc/self/fd/4"));
    assert!(report.contains("\"bad-plugin-fd\""), "{report}");
}

#[test]
fn prove_without_a_canary_beside_the_runner_is_canary_missing() {
    let dir = sandbox::Scratch::new("lonely").expect("scratch");
    let lonely = dir.dir.join("dot-sandbox");
    testkit::copy_exe(&common::runner_path(), &lonely);
    let out = Command::new(&lonely)
        .args(["probe", "--prove"])
        .output()
        .unwrap();
    let e = stderr_error(&out, 1);
    testkit::assert_kind!(e, Kind::CanaryMissing);
    assert_eq!(
        e.path.as_deref(),
        Some(dir.dir.join("dot-canary").to_str().unwrap())
    );
    // Installing and building differ: the message says both, and no one command is offered.
    assert_eq!(e.next, None);
    assert!(e.message.contains("make install"), "{}", e.message);
}

#[test]
fn prove_with_an_unknown_probe_is_unknown_probe_with_the_name() {
    let out = Command::new(common::runner_path())
        .args(["probe", "--prove", "--only", "no-such-probe"])
        .output()
        .unwrap();
    let e = stderr_error(&out, 2);
    testkit::assert_kind!(e, Kind::UnknownProbe);
    assert_eq!(e.field.as_deref(), Some("only"));
    assert_eq!(e.value.as_deref(), Some("no-such-probe"));
    assert_eq!(
        testkit::bare(e.next.as_deref()).as_deref(),
        Some("dot-sandbox probe --prove")
    );
}

/// An error, and the kind, exit code, `field` and `value` it must map to.
type Case = (
    ExecError,
    Kind,
    ExitCode,
    Option<&'static str>,
    Option<&'static str>,
);

/// The confinement steps a working kernel does not refuse: each maps to its kind and exit code,
/// and the error object says which step (and, where it helps, what to run next).
#[test]
fn kernel_refusals_of_a_confinement_step_map_to_their_kinds() {
    let ruleset = landlock::Ruleset::default()
        .create()
        .expect_err("a ruleset that handles nothing is refused");
    let cases: Vec<Case> = vec![
        (
            ExecError::ParentDeathSignal(eperm()),
            Kind::ParentDeathSignal,
            ExitCode::System,
            None,
            None,
        ),
        (
            ExecError::ParentGone { ppid: 1 },
            Kind::ParentGone,
            ExitCode::Refused,
            Some("ppid"),
            Some("1"),
        ),
        (
            ExecError::Rlimit {
                resource: "RLIMIT_AS",
                source: eperm(),
            },
            Kind::Rlimit,
            ExitCode::System,
            Some("rlimits"),
            Some("RLIMIT_AS"),
        ),
        (
            ExecError::Capabilities {
                step: "bounding set",
                source: eperm(),
            },
            Kind::Capabilities,
            ExitCode::System,
            Some("capabilities"),
            Some("bounding set"),
        ),
        (
            ExecError::NoNewPrivs(eperm()),
            Kind::NoNewPrivs,
            ExitCode::System,
            None,
            None,
        ),
        (
            ExecError::LandlockUnsupported { abi: 2 },
            Kind::LandlockUnsupported,
            ExitCode::Refused,
            Some("landlock_abi"),
            Some("2"),
        ),
        (
            ExecError::Landlock(ruleset),
            Kind::Landlock,
            ExitCode::System,
            None,
            None,
        ),
        (
            ExecError::Stage {
                step: "creating the tmpfs",
                source: eperm(),
            },
            Kind::Stage,
            ExitCode::System,
            Some("stage"),
            Some("creating the tmpfs"),
        ),
        (
            ExecError::Identity {
                step: "unshare(CLONE_NEWUSER)",
                source: eperm(),
            },
            Kind::Identity,
            ExitCode::Refused,
            Some("identity"),
            Some("unshare(CLONE_NEWUSER)"),
        ),
        (
            ExecError::Namespaces {
                step: "pivot_root onto the stage",
                source: eperm(),
            },
            Kind::Namespaces,
            ExitCode::Refused,
            Some("namespaces"),
            Some("pivot_root onto the stage"),
        ),
        (
            ExecError::LandlockNotEnforced {
                status: "not-enforced".into(),
            },
            Kind::LandlockNotEnforced,
            ExitCode::Refused,
            Some("landlock_status"),
            Some("not-enforced"),
        ),
        (
            ExecError::SeccompPolicy("x".into()),
            Kind::SeccompPolicy,
            ExitCode::System,
            None,
            None,
        ),
        (
            ExecError::SeccompInstall(eperm()),
            Kind::SeccompInstall,
            ExitCode::System,
            None,
            None,
        ),
        (
            ExecError::Signals(eperm()),
            Kind::Signals,
            ExitCode::System,
            None,
            None,
        ),
        (
            ExecError::Cloexec(eperm()),
            Kind::Cloexec,
            ExitCode::System,
            None,
            None,
        ),
        (
            ExecError::Report(eperm()),
            Kind::Report,
            ExitCode::System,
            None,
            None,
        ),
        (
            ExecError::Exec(eperm()),
            Kind::Exec,
            ExitCode::System,
            Some("errno"),
            Some("1"),
        ),
        (
            ExecError::UnsupportedPlatform,
            Kind::UnsupportedPlatform,
            ExitCode::Refused,
            None,
            None,
        ),
    ];
    for (err, kind, code, field, value) in cases {
        let obj = err.to_error_object();
        testkit::assert_typed(&err, kind);
        assert_eq!(kind.exit_code(), code, "{err}");
        testkit::assert_kind!(obj, kind);
        assert_eq!(obj.message, err.to_string());
        assert_eq!(obj.field.as_deref(), field, "{kind}");
        assert_eq!(obj.value.as_deref(), value, "{kind}");
        let probe_helps = matches!(
            kind,
            Kind::LandlockUnsupported
                | Kind::LandlockNotEnforced
                | Kind::UnsupportedPlatform
                | Kind::Namespaces
        );
        assert_eq!(
            obj.next.as_deref(),
            probe_helps.then_some("dot-sandbox probe"),
            "{kind}"
        );
    }
}

#[test]
fn prove_harness_failures_map_to_their_kinds() {
    let runner = ProveError::Runner(eperm());
    testkit::assert_typed(&runner, Kind::RunnerMissing);
    assert_eq!(Kind::RunnerMissing.exit_code(), ExitCode::Refused);
    assert_eq!(
        runner.to_error_object().path.as_deref(),
        Some("/proc/self/exe")
    );
    let harness = ProveError::Harness {
        name: "fork".into(),
        source: eperm(),
    };
    testkit::assert_typed(&harness, Kind::Harness);
    assert_eq!(Kind::Harness.exit_code(), ExitCode::System);
    let obj = harness.to_error_object();
    assert_eq!(
        (obj.field.as_deref(), obj.value.as_deref()),
        (Some("only"), Some("fork"))
    );
}
