//! What the sandbox test files share: the runner and canary binaries, one-off launches under the
//! runner, and the probes run unconfined (the canary executed directly, to prove each probe
//! detects its escape) — the part of the harness `dot-sandbox probe --prove` does not need.
#![allow(dead_code)]

use proto::canary::ProbeSpec;
use proto::runner::RunnerLimits;
use sandbox::{canary_invocation, canary_request, outcome, Input, Run, RunOutput, Scratch};
use sandbox::{Targets, CANARY, PROVE_LIMITS};
use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `dot-sandbox` this test run built.
pub fn runner_path() -> PathBuf {
    PathBuf::from(assert_cmd::cargo::cargo_bin!("dot-sandbox"))
}

pub fn runner() -> File {
    File::open(runner_path()).expect("open dot-sandbox")
}

/// The static `dot-canary` next to `dot-sandbox` (the workspace builds every dot binary with
/// `+crt-static` into one directory).
pub fn canary_path() -> PathBuf {
    let path = runner_path().with_file_name("dot-canary");
    assert!(
        path.is_file(),
        "{} is missing: build it static next to dot-sandbox, e.g. \
         RUSTFLAGS='-C target-feature=+crt-static' cargo test -p canary -p sandbox \
         --target x86_64-unknown-linux-gnu",
        path.display()
    );
    path
}

pub fn canary() -> File {
    File::open(canary_path()).expect("open dot-canary")
}

pub fn limits() -> RunnerLimits {
    PROVE_LIMITS
}

/// The canary's request for `probe` (its victim, if it needs one, is not given).
pub fn request(probe: &str) -> Vec<u8> {
    canary_request(probe, &Targets::new().expect("targets"), limits(), None).expect("request")
}

/// The runner's command line for a plugin under `limits`, with `--landlock-abi` when given.
pub fn argv(limits: RunnerLimits, landlock_abi: Option<u32>) -> Vec<String> {
    canary_invocation(limits, landlock_abi)
        .expect("invocation")
        .argv()
}

/// Runs `plugin` under the runner with `argv` (see [`argv`]) in a fresh scratch stage.
pub fn launch_argv(plugin: &File, request: &[u8], argv: &[String]) -> (RunOutput, Scratch) {
    let scratch = Scratch::new("test").expect("scratch");
    let run = Run {
        stage: &scratch.stage,
        request,
        input: Input::Pipe,
        timeout: Duration::from_secs(60),
    }
    .runner(&runner(), plugin, argv)
    .expect("launch");
    (run, scratch)
}

/// Runs `plugin` under the runner, as a launcher would, in a fresh scratch stage.
pub fn launch(plugin: &File, request: &[u8], limits: RunnerLimits) -> (RunOutput, Scratch) {
    launch_argv(plugin, request, &argv(limits, None))
}

/// [`launch`], the runner given `--landlock-abi`.
pub fn launch_at_abi(
    plugin: &File,
    request: &[u8],
    limits: RunnerLimits,
    landlock_abi: u32,
) -> (RunOutput, Scratch) {
    launch_argv(plugin, request, &argv(limits, Some(landlock_abi)))
}

/// A file the plugin wrote in its stage: through the descriptor the runner handed over, else (a
/// run without the runner) in the on-disk stage.
pub fn read_stage_file(run: &RunOutput, stage: &Path, rel: &str) -> io::Result<Vec<u8>> {
    match run.stage {
        Some(_) => run.read_stage_file(rel),
        None => std::fs::read(stage.join(rel)),
    }
}

/// How a probe is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Confined,
    Unconfined,
}

/// Runs one probe confined (as `probe --prove` does) or unconfined: the canary executed directly
/// from descriptor 9 (which stays open in it), in this process group, re-executing itself first
/// when the probe says so. Returns the observed outcome and the run.
pub fn run_probe(
    canary: &File,
    probe: &ProbeSpec,
    mode: Mode,
    landlock_abi: Option<u32>,
) -> (String, RunOutput) {
    if mode == Mode::Confined {
        return sandbox::run_probe(&runner(), canary, probe, limits(), landlock_abi)
            .expect("harness runs");
    }
    let scratch = Scratch::new(probe.name).expect("scratch");
    let targets = Targets::new().expect("targets");
    let request =
        canary_request(probe.name, &targets, limits(), Some(&scratch.victim())).expect("request");
    let mut cmd = std::process::Command::new("/proc/self/fd/9");
    cmd.arg0(CANARY);
    if probe.reexec {
        cmd.arg("--reexec");
    }
    let run = Run {
        stage: &scratch.stage,
        request: &request,
        input: if probe.pty { Input::Pty } else { Input::Pipe },
        timeout: Duration::from_secs(30),
    }
    .direct(cmd, &[(canary.as_fd(), 9)])
    .expect("harness runs");
    let result = read_stage_file(&run, &scratch.stage, "out/result.json");
    (outcome(&run, result, probe.name), run)
}
