//! What the sandbox test files share: the runner and canary binaries and one-off launches.
#![allow(dead_code)]

use sandbox::prove::{Input, Launch, Limits, RunOutput, Scratch, PROVE_LIMITS};
use std::fs::File;
use std::path::PathBuf;
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

/// Runs `plugin` under the runner in a fresh scratch stage.
pub fn launch(
    plugin: &File,
    request: &[u8],
    plugin_arg: &str,
    limits: Limits,
) -> (RunOutput, Scratch) {
    launch_at_abi(plugin, request, plugin_arg, limits, None)
}

/// [`launch`], the runner given `--landlock-abi` when `landlock_abi` is set.
pub fn launch_at_abi(
    plugin: &File,
    request: &[u8],
    plugin_arg: &str,
    limits: Limits,
    landlock_abi: Option<u32>,
) -> (RunOutput, Scratch) {
    let scratch = Scratch::new("test").expect("scratch");
    let launch = Launch {
        stage: &scratch.stage,
        plugin,
        request,
        input: Input::Pipe,
        limits,
        plugin_arg,
        landlock_abi,
        reexec: false,
        timeout: Duration::from_secs(60),
    };
    let run = launch.confined(&runner()).expect("launch");
    (run, scratch)
}

pub fn limits() -> Limits {
    PROVE_LIMITS
}
