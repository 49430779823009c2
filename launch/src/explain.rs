//! `dot-launch NAME --explain`: the launch decision and the policy the run would get, without the
//! run. The decision is `decide`'s, the one a launch makes (verification, consent, kernel support,
//! protocol, inputs, target, the runner opened and validated); then nothing is created: no audit
//! line, no run directory, no target file, no plugin. A refusal is the launch's own error, with
//! its exit code. For `process`, the runner's seccomp policy digest and allowed system calls are
//! asked of the validated runner itself (`--version`, executed from its opened descriptor): the
//! only process started.

use crate::decide::{decide, Decided, Start};
use crate::exec::Runner;
use crate::{LaunchError, Options};
use proto::explain::{
    ContainmentDecision, Executable, ExplainedLimits, ExplainedRegistry, Explanation, InputFile,
    RunnerPlan, EXPLAIN_SCHEMA,
};
use proto::runner::{Invocation, LandlockPlan, RUNNER_ARGV0, RUNNER_FD, RUNNER_PATH};
use proto::{Containment, Name, Sha256};
use std::os::fd::AsFd;

/// The registry of `registry`, with what named it: a root given by `DOT_ROOT` is the one
/// `cli` added to the command line.
fn explained_registry(registry: &verify::layers::Registry) -> ExplainedRegistry {
    match registry {
        verify::layers::Registry::Root(root) => {
            let from_env = cli::env_root().is_some_and(|r| r == root.path().as_os_str());
            ExplainedRegistry {
                from: if from_env { cli::ROOT_VAR } else { "--root" }.into(),
                paths: vec![root.path().display().to_string()],
            }
        }
        verify::layers::Registry::System(sys) => ExplainedRegistry {
            from: "system".into(),
            paths: sys
                .each()
                .iter()
                .map(|(_, d)| d.display().to_string())
                .collect(),
        },
    }
}

/// Explains the launch `opts` describes, or fails exactly as that launch would before anything
/// is created.
pub fn explain(opts: &Options) -> Result<Explanation, LaunchError> {
    let root = &opts.root;
    let name = Name::new(&opts.name)?;
    // The launch's checks of the registry and the state, without making anything: a state apart
    // from the registry that does not exist yet is left for the launch to make.
    let checked = verify::layers::check_registry(&opts.registry, &name)?;
    if root.separate_state().is_none_or(|d| d.exists()) {
        verify::root::check_state(root)?;
    }
    let Decided {
        verified,
        inputs,
        target,
        runner,
        limits: run_limits,
        ..
    } = decide(root, &name, opts, checked, Start::Never)?;
    let entry = &verified.entry;
    let limits = &crate::exec::RunLimits::new(&run_limits, opts.streams);
    let runner_limits = limits.runner(inputs.totals());
    let (why, plan, landlock) = match (&runner, entry.containment) {
        (Some(r), Containment::Process) => {
            let probe = probe::probe().capped(crate::hooks::pretend_landlock_abi());
            let abi = probe.landlock_abi;
            let invocation = Invocation {
                landlock_abi: crate::hooks::pretend_landlock_abi(),
                runtime: entry.runtime.clone(),
                ..Invocation::new(runner_limits, entry.name.clone())
            };
            let plugin = match verified.pinned {
                verify::entry::Pinned::Leased { .. } => {
                    Some(verified.exe_path.display().to_string())
                }
                verify::entry::Pinned::Sealed => None,
            };
            let loaded = !entry.runtime.is_empty();
            let (digest, allowed) = match runner_policy(r, loaded) {
                Some((d, a)) => (Some(d), a),
                None => (None, Vec::new()),
            };
            let mut namespaces: Vec<String> = proto::probe::RUN_NAMESPACES
                .iter()
                .map(|n| (*n).to_owned())
                .collect();
            if probe.identity == proto::runner::IdentityKind::UserNamespace {
                namespaces.push("user".to_owned());
            }
            let plan = RunnerPlan {
                path: crate::runner_path()?.display().to_string(),
                argv: invocation.argv(),
                seccomp_policy_sha256: digest,
                seccomp_allowed: allowed,
                namespaces,
                runtime: entry.runtime.iter().map(|d| d.to_string()).collect(),
            };
            let why = format!(
                "the entry requires process and --require-process-sandbox consents to it; this kernel can enforce it (Landlock ABI {abi}, seccomp); dot-sandbox confines the plugin"
            );
            let landlock = LandlockPlan::new(
                abi,
                plugin,
                "the stage: a private tmpfs, the plugin's working directory".into(),
            );
            (why, Some(plan), Some(landlock))
        }
        _ => (
            "the entry requires audit and --allow-audit-plugin consents to it: no OS boundary (an empty environment, a process group, the deadline and byte limits); the plugin runs as this user".to_owned(),
            None,
            None,
        ),
    };
    let process = entry.containment == Containment::Process;
    // A signal received while deciding cancels the explanation as it would the launch.
    crate::cancel::check(crate::cancel::During::Decision)?;
    Ok(Explanation {
        schema: EXPLAIN_SCHEMA,
        decision: "allowed".into(),
        name: entry.name.clone(),
        registry: explained_registry(&opts.registry),
        version: entry.version.to_string(),
        trust: entry.trust,
        publisher: entry.publisher.as_ref().map(|p| p.to_string()),
        key_id: verified.key_id.clone(),
        executable: Executable {
            path: verified.exe_path.display().to_string(),
            sha256: entry.sha256,
            size: entry.size,
            pinned: match verified.pinned {
                verify::entry::Pinned::Leased { .. } => "leased",
                verify::entry::Pinned::Sealed => "sealed",
            }
            .into(),
            dependencies: verified.dependencies,
        },
        containment: ContainmentDecision {
            required: entry.containment,
            used: entry.containment,
            consent: match entry.containment {
                Containment::Audit => "--allow-audit-plugin",
                Containment::Process => "--require-process-sandbox",
            }
            .into(),
            why,
        },
        runner: plan,
        limits: ExplainedLimits {
            run: limits.run,
            max_stdout: limits.streams.max_stdout as u64,
            max_stderr: limits.streams.max_stderr as u64,
            rlimits: process.then(|| runner_limits.rlimits()),
            stage: process.then(|| runner_limits.stage()),
        },
        landlock,
        request: inputs.request(entry),
        input_files: inputs
            .files
            .iter()
            .map(|f| InputFile {
                key: f.key.clone(),
                path: f.path.display().to_string(),
                resolved: f.resolved.display().to_string(),
                size: f.file.metadata().map(|m| m.len()).unwrap_or(0),
                read_by: format!(
                    "dot-launch, with the invoker's rights (uid {}), before the plugin starts; the plugin reads a copy, stage/in/{}",
                    nix::unistd::geteuid().as_raw(),
                    f.key
                ),
                sensitive: f.sensitive.clone(),
            })
            .collect(),
        target: target.path.display().to_string(),
        env: inputs.env.iter().map(|v| v.name.to_string()).collect(),
    })
}

/// The seccomp policy digest (`loaded`: of the variant for a program the runtime's loader maps)
/// and the allowed system calls the validated runner states (`dot-sandbox --version`, executed
/// from its opened descriptor with an empty environment), if it states them.
fn runner_policy(runner: &Runner, loaded: bool) -> Option<(Sha256, Vec<String>)> {
    use std::io::Read;
    let argv = [
        std::ffi::CString::new(RUNNER_ARGV0).ok()?,
        std::ffi::CString::new("--version").ok()?,
    ];
    let mut child = sys::spawn::spawn(&sys::spawn::Exec {
        program: &std::ffi::CString::new(RUNNER_PATH).ok()?,
        argv: &argv,
        dir: c"/",
        moves: &[(runner.file.as_fd(), RUNNER_FD)],
        env: &[],
        elsewhere: false,
    })
    .ok()?;
    drop(child.stdin.take());
    drop(child.stderr.take());
    let mut stdout = Vec::new();
    let read = child
        .stdout
        .take()
        .map(|out| out.take(64 * 1024).read_to_end(&mut stdout));
    child.wait().ok()?;
    read?.ok()?;
    let text = String::from_utf8(stdout).ok()?;
    // The policy for a program the runtime's loader maps (a script or dynamic program) is the
    // second digest.
    let marker = if loaded {
        "with a runtime sha256:"
    } else {
        "sha256:"
    };
    let (_, rest) = text.split_once(marker)?;
    let digest = rest.get(..64)?.parse().ok()?;
    let allowed = rest
        .split_once("system calls: ")
        .map(|(_, names)| {
            names
                .trim_end()
                .trim_end_matches(')')
                .split(' ')
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Some((digest, allowed))
}
