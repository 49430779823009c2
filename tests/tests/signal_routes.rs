//! Signals the kernel sends on a plugin's behalf, end to end through `dot-launch`: a plugin sets
//! itself up as the owner-chooser of its stdout pipe — `F_SETOWN(victim)`, `F_SETSIG(SIGKILL)`,
//! `O_ASYNC` — and writes its response; when `dot-launch` reads the pipe, the kernel would send
//! SIGKILL to the victim. Under `process` the filter refuses the first call, on every Landlock ABI
//! the launcher accepts (3 to 6 pretended through the test hook, which reaches the runner, and
//! this kernel's own); the plugin reports `errno:EPERM` in its committed output and the victim
//! lives. At `audit`, which has no OS boundary, the same plugin kills the victim: the test can see
//! the escape.
//!
//! The plugin is `dot-canary` (probe `sigio-sigkill`, input `victim`: a pid, or `parent`), the one
//! test program that makes raw syscalls; the fixture plugin has no `unsafe` and `fcntl(F_SETOWN)`
//! has no safe wrapper.

#![allow(clippy::unwrap_used)]

mod common;

use common::{launch_into, result, Env};
use proto::result::RunStatus;
use proto::Containment;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::time::Duration;
use testkit::workspace_bin;

/// The ABIs pretended through `DOT_PRETEND_LANDLOCK_ABI` (`None`: this kernel's).
const ABIS: [Option<u32>; 5] = [Some(3), Some(4), Some(5), Some(6), None];

fn canary_env() -> Env {
    let env = Env::new();
    let canary = workspace_bin("dot-canary");
    let inputs = ["probe", "victim"];
    env.register("canary-p", &canary, "process", &inputs);
    env.register("canary-a", &canary, "audit", &inputs);
    env
}

/// A harmless process to aim at.
struct Victim(Child);

impl Victim {
    fn new() -> Victim {
        Victim(Command::new("sleep").arg("60").spawn().unwrap())
    }

    fn pid(&self) -> String {
        self.0.id().to_string()
    }

    /// How it ended, if it has within `patience`.
    fn ended_within(&mut self, patience: Duration) -> Option<ExitStatus> {
        let step = Duration::from_millis(10);
        let mut waited = Duration::ZERO;
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return Some(status);
            }
            if waited >= patience {
                return None;
            }
            std::thread::sleep(step);
            waited += step;
        }
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Launches the canary entry `name` with probe `sigio-sigkill` aimed at `victim`, into a target
/// of its own, the ABI pretended when `abi` is set.
fn launch(
    env: &Env,
    name: &str,
    victim: &str,
    abi: Option<u32>,
) -> (std::process::Output, PathBuf) {
    let tag = abi.map_or("kernel".to_owned(), |a| a.to_string());
    let target = env.dir.join(format!("target-{name}-{victim}-{tag}"));
    std::fs::create_dir(&target).unwrap();
    let consent = if name == "canary-p" {
        "--require-process-sandbox"
    } else {
        "--allow-audit-plugin"
    };
    let victim_input = format!("victim={victim}");
    let args = [
        consent,
        "--input",
        "probe=sigio-sigkill",
        "--input",
        &victim_input,
    ];
    let mut c = launch_into(&env.root, name, &target, &args);
    c.env_remove("DOT_PRETEND_LANDLOCK_ABI");
    if let Some(abi) = abi {
        c.env("DOT_PRETEND_LANDLOCK_ABI", abi.to_string());
    }
    (c.output().unwrap(), target)
}

/// The canary's committed `result.json` outcome.
fn outcome(target: &std::path::Path) -> String {
    let body: serde_json::Value =
        serde_json::from_slice(&std::fs::read(target.join("result.json")).unwrap()).unwrap();
    assert_eq!(body["probe"], "sigio-sigkill");
    body["outcome"].as_str().unwrap().to_owned()
}

/// Under `process` at every ABI: committed, the plugin saw EPERM, and the runner applied exactly
/// the pretended ABI (no scopes below 6: seccomp alone stops it there).
fn refused_at_every_abi(victim: &str) {
    let env = canary_env();
    let mut kernel_abi = None;
    for abi in ABIS.iter().rev() {
        let (out, target) = launch(&env, "canary-p", victim, *abi);
        let r = result(&out);
        assert_eq!(r.status, RunStatus::Committed, "{abi:?}");
        assert_eq!(r.containment, Containment::Process);
        assert_eq!(outcome(&target), "errno:EPERM", "{abi:?}");
        let e = r.enforced.unwrap();
        let want = match abi {
            None => {
                kernel_abi = Some(e.landlock_abi);
                e.landlock_abi
            }
            Some(a) => (*a).min(kernel_abi.unwrap()),
        };
        assert_eq!(e.landlock_abi, want, "{abi:?}");
        assert_eq!(e.landlock_scopes, want >= 6, "{abi:?}");
    }
}

#[test]
fn sigkill_through_the_stdout_owner_is_refused_at_every_landlock_abi() {
    let mut victim = Victim::new();
    refused_at_every_abi(&victim.pid());
    assert_eq!(
        victim.ended_within(Duration::from_millis(200)),
        None,
        "the victim was killed"
    );
}

#[test]
fn sigkill_to_the_launcher_itself_is_refused_at_every_landlock_abi() {
    // `result` already requires dot-launch to have exited 0 with its result: it was not killed.
    refused_at_every_abi("parent");
}

/// `audit` has no OS boundary: the same plugin kills the victim. This is what the tests above
/// would see if the route were open.
#[test]
fn at_audit_the_same_plugin_kills_its_victim() {
    let env = canary_env();
    let mut victim = Victim::new();
    let (out, target) = launch(&env, "canary-a", &victim.pid(), None);
    let r = result(&out);
    assert_eq!(r.status, RunStatus::Committed);
    assert_eq!(r.containment, Containment::Audit);
    assert_eq!(outcome(&target), "ok");
    let ended = victim.ended_within(Duration::from_secs(5));
    assert_eq!(
        ended.and_then(|s| s.signal()),
        Some(sigkill()),
        "the victim was not killed: {ended:?}"
    );
}

#[test]
fn at_audit_the_same_plugin_kills_the_launcher() {
    let env = canary_env();
    let (out, _target) = launch(&env, "canary-a", "parent", None);
    assert_eq!(
        out.status.signal(),
        Some(sigkill()),
        "dot-launch survived: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn sigkill() -> i32 {
    nix::sys::signal::Signal::SIGKILL as i32
}
