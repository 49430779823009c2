//! `dot-sandbox exec`: what it reports when it confines, and what it refuses (exit code, error
//! kind on the report descriptor and on stderr, plugin never ran).

mod common;

use common::request;
use proto::canary::CanaryResult;
use proto::runner::{SandboxReport, PLUGIN_PATH};
use proto::{ErrorObject, Kind};
use std::fs::File;
use std::os::unix::fs::PermissionsExt;

fn refused(plugin: &File, plugin_arg: &str, kind: Kind) {
    let mut argv = common::argv(common::limits(), None);
    if let Some(last) = argv.last_mut() {
        *last = plugin_arg.to_owned();
    }
    let (run, scratch) = common::launch_argv(plugin, &request("write-in-stage"), &argv);
    assert_eq!(
        run.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    match run.sandbox_report() {
        Some(SandboxReport::Error(e)) => testkit::assert_kind!(e, kind),
        other => panic!("expected an error report, got {other:?}"),
    }
    let stderr: ErrorObject =
        serde_json::from_slice(run.stderr.trim_ascii_end()).expect("stderr is one error object");
    testkit::assert_kind!(stderr, kind);
    assert!(run.stdout.is_empty(), "the plugin ran");
    assert!(
        common::read_stage_file(&run, &scratch.stage, "out/written.txt").is_err(),
        "the plugin ran"
    );
    assert!(run.stage.is_none(), "refused before a stage was made");
    assert!(!scratch.stage.join("ran").exists(), "the plugin ran");
}

#[test]
fn reports_what_it_enforced_then_runs_the_plugin() {
    let canary = common::canary();
    let (run, scratch) = common::launch(&canary, &request("write-in-stage"), common::limits());
    let e = enforced(&run);
    assert!(e.landlock_abi >= 3);
    assert_eq!(e.landlock_status, "fully-enforced");
    assert!(e.no_new_privs);
    assert_eq!(e.capabilities, "none");
    assert_eq!(e.landlock_net, e.landlock_abi >= 4);
    assert_eq!(e.landlock_scopes, e.landlock_abi >= 6);
    let l = common::limits();
    assert_eq!(
        (
            e.rlimits.as_bytes,
            e.rlimits.cpu_seconds,
            e.rlimits.fsize_bytes,
            e.rlimits.nofile,
            e.rlimits.core
        ),
        (
            l.memory_bytes,
            l.cpu_seconds,
            l.file_bytes,
            l.descriptors,
            proto::runner::CORE_LIMIT
        )
    );
    assert_eq!(
        Some(e.seccomp_policy_sha256),
        sandbox::policy_sha256(false).ok()
    );
    assert!(e.confine_us.is_some());
    let response = proto::protocol::Response::parse(&run.stdout, 4096).expect("one response");
    assert_eq!(response.outputs, ["result.json"]);
    assert_eq!(
        run.read_stage_file("out/written.txt").expect("output"),
        b"written\n"
    );
    assert!(
        !scratch.stage.join("out/written.txt").exists(),
        "the plugin wrote its private stage, not the on-disk one"
    );
}

#[test]
fn refuses_a_dynamic_plugin() {
    refused(
        &File::open("/bin/true").expect("/bin/true"),
        PLUGIN_PATH,
        Kind::NotStaticElf,
    );
}

#[test]
fn refuses_a_script_plugin() {
    let dir = sandbox::Scratch::new("script").expect("scratch");
    let path = dir.dir.join("plugin.sh");
    std::fs::write(&path, "#!/bin/sh\ntouch ran\n").expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    refused(
        &File::open(&path).expect("open"),
        PLUGIN_PATH,
        Kind::NotStaticElf,
    );
}

#[test]
fn refuses_any_plugin_path_but_fd_4() {
    let canary = common::canary();
    for arg in [
        "/proc/self/fd/3",
        "/bin/true",
        &common::canary_path().display().to_string(),
    ] {
        refused(&canary, arg, Kind::BadPluginPath);
    }
}

#[test]
fn fails_closed_without_a_report_descriptor() {
    let canary = common::canary();
    let runner = common::runner();
    let scratch = sandbox::Scratch::new("nofd5").expect("scratch");
    let argv = common::argv(common::limits(), None);
    let mut cmd = std::process::Command::new(proto::runner::RUNNER_PATH);
    cmd.args(&argv[1..])
        .env_clear()
        .current_dir(&scratch.stage)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    use std::os::fd::AsFd;
    let child = sys::process::spawn_with_fds(&mut cmd, &[(runner.as_fd(), 3), (canary.as_fd(), 4)])
        .expect("spawn");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(1));
    let err: ErrorObject =
        serde_json::from_slice(out.stderr.trim_ascii_end()).expect("error object");
    testkit::assert_kind!(err, Kind::BadReportFd);
    assert!(out.stdout.is_empty());
}

#[test]
fn multi_threaded_rust_plugin_runs() {
    let canary = common::canary();
    let (run, _scratch) = common::launch(&canary, &request("threads"), common::limits());
    assert!(run.status.success());
    let result: CanaryResult =
        serde_json::from_slice(&run.read_stage_file("out/result.json").expect("result"))
            .expect("result json");
    assert_eq!(result.outcome, "ok");
}

/// Median confinement time over 20 launches, printed for the record (never asserted).
#[test]
fn confine_time_is_reported() {
    let canary = common::canary();
    let mut us: Vec<u64> = (0..20)
        .map(|_| {
            let (run, _s) = common::launch(&canary, &request("kill-self"), common::limits());
            match run.sandbox_report() {
                Some(SandboxReport::Enforced(e)) => e.confine_us.expect("confine_us"),
                other => panic!("{other:?}"),
            }
        })
        .collect();
    us.sort_unstable();
    let instructions = sandbox::policy_instructions().expect("policy");
    println!(
        "confine_us median {} (min {}, max {}); seccomp program {instructions} instructions",
        us[10], us[0], us[19],
    );
}

/// The runner's command line with `--gate`.
fn gated_argv() -> Vec<String> {
    proto::runner::Invocation {
        gate: true,
        ..sandbox::canary_invocation(common::limits(), None).expect("invocation")
    }
    .argv()
}

/// Runs the canary's `write-in-stage` probe under a runner started with `--gate`, given its go or
/// not.
fn at_gate(go: bool) -> (sandbox::RunOutput, sandbox::Scratch) {
    let scratch = sandbox::Scratch::new("gate").expect("scratch");
    let run = sandbox::Run {
        stage: &scratch.stage,
        request: &request("write-in-stage"),
        input: sandbox::Input::Pipe,
        timeout: std::time::Duration::from_secs(60),
    }
    .runner_at_gate(&common::runner(), &common::canary(), &gated_argv(), go)
    .expect("launch");
    (run, scratch)
}

/// With `--gate` the runner confines and executes the plugin once it has its go, and says how long
/// it waited for it.
#[test]
fn a_gated_runner_runs_the_plugin_after_its_go() {
    let (run, _scratch) = at_gate(true);
    let e = enforced(&run);
    assert_eq!(e.namespaces, ["mnt", "pid", "ipc", "net", "uts", "cgroup"]);
    assert!(e.timings.is_some());
    let response = proto::protocol::Response::parse(&run.stdout, 4096).expect("one response");
    assert_eq!(response.outputs, ["result.json"]);
}

/// With `--gate` and no go (the launcher shut its end: it refused the run), the runner ends without
/// executing anything: a `stage` error naming the go (exit 5, as every `stage` failure), no
/// response, nothing in the stage.
#[test]
fn a_gated_runner_without_its_go_runs_nothing() {
    let (run, scratch) = at_gate(false);
    assert_eq!(
        run.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    match run.sandbox_report() {
        Some(SandboxReport::Error(e)) => {
            testkit::assert_kind!(e, Kind::Stage);
            assert!(e.message.contains("the launcher's go"), "{}", e.message);
        }
        other => panic!("expected an error report, got {other:?}"),
    }
    assert!(run.stdout.is_empty(), "the plugin ran");
    assert!(
        common::read_stage_file(&run, &scratch.stage, "out/written.txt").is_err(),
        "the plugin ran"
    );
}

/// What a run that succeeded reported it enforced.
fn enforced(run: &sandbox::RunOutput) -> proto::runner::Enforced {
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    match run.sandbox_report() {
        Some(SandboxReport::Enforced(e)) => e,
        _ => panic!(
            "no enforced report: {:?}",
            String::from_utf8_lossy(&run.report)
        ),
    }
}
