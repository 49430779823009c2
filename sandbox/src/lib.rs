//! `dot-sandbox`: the fixed sibling runner of `dot-launch`. `exec` confines the runner itself and
//! then executes the plugin it was handed on descriptor 4; `probe` reports what this kernel can
//! enforce (`probe::probe`), and `probe --prove` runs the canary under the real policy and
//! checks every denial.
//!
//! Process containment exists only on Linux x86-64; elsewhere `exec` refuses and `probe` says
//! `process_enforceable: false`.
//!
//! The library's surface is the command line ([`Args`], [`run`]), the errors, the policy's identity
//! ([`policy_sha256`], [`policy_instructions`]) and the proof ([`prove`] and the harness that
//! runs the runner as `dot-launch` does, which the test suite shares); the confinement steps are
//! private.
#![forbid(unsafe_code)]

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod bpf;
mod denials;
mod exec;
mod harness;
mod identity;
mod namespaces;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod policy;
mod prove;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod seccomp;
mod stage;

pub use exec::ExecError;
pub use harness::{
    canary_invocation, canary_request, outcome, run_probe_as, Input, Run, RunOutput, Scratch,
    Targets, CANARY,
};
pub use prove::PROVE_LIMITS;
pub use prove::{prove, prove_sibling, run_probe, ProbeResult, ProveError, ProveReport};

use argh::FromArgs;
use cli::Output;
use proto::runner::{Invocation, RunnerLimits};
use proto::{ErrorObject, ExitCode, Kind, Name, Sha256, ToErrorObject};

/// dot-sandbox: confine this process and execute a plugin (run only by dot-launch), or report what
/// this kernel can enforce.
#[derive(FromArgs, Debug)]
pub struct Args {
    #[argh(subcommand)]
    pub command: Command,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum Command {
    Exec(ExecArgs),
    Probe(ProbeArgs),
}

/// Confine this process (own identity, private stage, rlimits, capabilities, no_new_privs,
/// Landlock, seccomp) and execute the plugin on descriptor 4. Expects descriptor 4 = the plugin, the
/// report descriptor (a unix seqpacket socket) open, and the on-disk stage holding the inputs in
/// `in/` as the working directory (with `--gate`: sent with the launcher's go instead).
#[derive(FromArgs, Debug, Clone, PartialEq, Eq)]
#[argh(subcommand, name = "exec")]
pub struct ExecArgs {
    /// descriptor that receives the one-line JSON report (dot-launch passes 5)
    #[argh(option)]
    pub report_fd: i32,
    /// address space in bytes, the hard RLIMIT_AS (at least 1 MiB)
    #[argh(option)]
    pub memory_bytes: u64,
    /// hard RLIMIT_CPU in seconds
    #[argh(option)]
    pub cpu_seconds: u64,
    /// the largest file in bytes, the hard RLIMIT_FSIZE
    #[argh(option)]
    pub file_bytes: u64,
    /// the most open descriptors, the hard RLIMIT_NOFILE (at least 16)
    #[argh(option)]
    pub descriptors: u64,
    /// the most tasks (processes and threads) of the run, the hard RLIMIT_NPROC (at least 1)
    #[argh(option)]
    pub tasks: u64,
    /// size of the plugin's working directory (a private tmpfs), bytes, at least 1 MiB
    #[argh(option)]
    pub stage_bytes: u64,
    /// inodes (files and directories) of the plugin's working directory, at least 8
    #[argh(option)]
    pub stage_inodes: u64,
    /// test and diagnostic knob: build the Landlock ruleset as on a kernel with ABI
    /// min(N, this kernel's); it can only leave out the best-effort parts (TCP rules below 4,
    /// scopes below 6); below 3 is refused like such a kernel
    #[argh(option)]
    pub landlock_abi: Option<u32>,
    /// a host directory bound read-only at the same path into the run's private root, with read
    /// and execute beneath it (repeatable): the entry's runtime, for a script's interpreter or a
    /// dynamic program's libraries
    #[argh(option)]
    pub runtime: Vec<proto::RuntimeDir>,
    /// a NAME=VALUE the plugin gets in its environment (repeatable, each name once; an entry's
    /// declared variables as the invoker gave them), nothing else
    #[argh(option)]
    pub env: Vec<proto::runner::EnvVar>,
    /// wait, once everything that needs nothing of the launcher's is done, for the launcher's go
    /// on the report socket (a message carrying the on-disk stage, whose in/ holds the inputs)
    /// before anything of the plugin's runs; with none (the socket closed), exit
    #[argh(switch)]
    pub gate: bool,
    /// report what the seccomp filter refuses: each refusal goes to the run's init, which answers
    /// it with the same EPERM and writes one line per refusal to this descriptor (dot-launch
    /// --report-denials passes 6)
    #[argh(option)]
    pub denials_fd: Option<i32>,
    /// the plugin's argv[0]: its registry name
    #[argh(option)]
    pub argv0: Name,
    /// the plugin: must be exactly /proc/self/fd/4
    #[argh(positional)]
    pub plugin: String,
}

impl ExecArgs {
    /// What the command line says, as `proto::runner` describes the runner's invocation.
    pub fn invocation(&self) -> Invocation {
        Invocation {
            report_fd: self.report_fd,
            limits: RunnerLimits {
                memory_bytes: self.memory_bytes,
                cpu_seconds: self.cpu_seconds,
                file_bytes: self.file_bytes,
                descriptors: self.descriptors,
                tasks: self.tasks,
                stage_bytes: self.stage_bytes,
                stage_inodes: self.stage_inodes,
            },
            landlock_abi: self.landlock_abi,
            argv0: self.argv0.clone(),
            runtime: self.runtime.clone(),
            plugin: self.plugin.clone(),
            gate: self.gate,
            denials_fd: self.denials_fd,
        }
    }
}

/// Print what this kernel can enforce as JSON; with --prove, run the canary under the real policy
/// and check that every expected denial happens (exit 1 if one does not).
#[derive(FromArgs, Debug, Clone, PartialEq, Eq)]
#[argh(subcommand, name = "probe")]
pub struct ProbeArgs {
    /// launch the dot-canary (beside this dot-sandbox, else in ../libexec/dot or the built-in
    /// libexec directory, never through PATH) for every escape probe
    #[argh(switch)]
    pub prove: bool,
    /// run only this probe (repeatable; default: all)
    #[argh(option)]
    pub only: Vec<String>,
    /// test and diagnostic knob: report, and with --prove confine the canary, as on a kernel with
    /// Landlock ABI min(N, this kernel's) (passed to every exec as --landlock-abi)
    #[argh(option)]
    pub landlock_abi: Option<u32>,
}

/// Every failure of `dot-sandbox`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Exec(#[from] ExecError),
    #[error(transparent)]
    Prove(#[from] ProveError),
}

impl ToErrorObject for Error {
    fn kind(&self) -> Kind {
        match self {
            Error::Exec(e) => e.kind(),
            Error::Prove(e) => e.kind(),
        }
    }

    fn to_error_object(&self) -> ErrorObject {
        match self {
            Error::Exec(e) => e.to_error_object(),
            Error::Prove(e) => e.to_error_object(),
        }
    }
}

/// What `dot-sandbox --version` adds to its name and version: the protocol and the digest of the
/// seccomp policy it installs (the digest every launch reports as `seccomp_policy_sha256`).
pub fn version_about() -> String {
    let protocol = proto::protocol::PROTOCOL_VERSION;
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    let policy = match (seccomp::policy_sha256(false), seccomp::policy_sha256(true)) {
        (Ok(d), Ok(r)) => format!(
            "seccomp policy sha256:{}, with a runtime sha256:{}, allowing {} system calls: {}",
            d.to_hex(),
            r.to_hex(),
            policy::ALLOWED.len(),
            allowed_syscalls().join(" ")
        ),
        (Err(e), _) | (_, Err(e)) => format!("seccomp policy unavailable: {e}"),
    };
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    let policy = "no process containment on this platform".to_owned();
    format!("(protocol {protocol}, {policy})")
}

/// Runs one `dot-sandbox` command. `exec` returns only on failure: on success the process image
/// is the plugin's.
pub fn run(args: Args) -> Result<Output, Error> {
    match args.command {
        Command::Exec(a) => match exec::run(&a.invocation(), &a.env) {
            Err(e) => Err(Error::Exec(e)),
            Ok(never) => match never {},
        },
        Command::Probe(a) if a.prove => {
            let report = prove::prove_sibling(&a.only, a.landlock_abi)?;
            let code = if report.ok {
                ExitCode::Success
            } else {
                ExitCode::Refused
            };
            Ok(Output::json(&report).with_code(code))
        }
        Command::Probe(a) => Ok(Output::json(&probe::probe().capped(a.landlock_abi))),
    }
}

/// The seccomp policy's identity: SHA-256 of its program with the per-launch values set to zero
/// (what every report's `seccomp_policy_sha256` says).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub fn policy_sha256(runtime: bool) -> Result<Sha256, seccompiler::BackendError> {
    seccomp::policy_sha256(runtime)
}

/// The names of the system calls the seccomp policy allows (some only in part, by argument), in
/// the policy's order (docs/security.md has the table with a reason for each).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub fn allowed_syscalls() -> Vec<&'static str> {
    policy::ALLOWED.iter().map(|a| a.name).collect()
}

/// How many instructions the seccomp program the runner installs has.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub fn policy_instructions() -> Result<usize, seccompiler::BackendError> {
    seccomp::program_and_digest(policy::Params {
        pid: 0,
        cookie: 0,
        runtime: false,
    })
    .map(|(p, _)| p.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::runner::PLUGIN_PATH;

    fn parse(argv: &[String]) -> Result<Args, argh::EarlyExit> {
        let rest: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
        Args::from_args(&[argv[0].as_str()], &rest)
    }

    /// What a launcher puts on the runner's command line is what the runner reads from it.
    #[test]
    fn the_runner_parses_back_every_invocation() {
        let limits = RunnerLimits {
            memory_bytes: 1 << 30,
            cpu_seconds: 31,
            file_bytes: 64 << 20,
            descriptors: 64,
            tasks: 256,
            stage_bytes: 128 << 20,
            stage_inodes: 8192,
        };
        let name = Name::new("hello").expect("name");
        let plain = Invocation::new(limits, name.clone());
        let knob = Invocation {
            landlock_abi: Some(4),
            ..plain.clone()
        };
        let odd = Invocation {
            report_fd: 9,
            plugin: "/bin/true".into(),
            argv0: Name::new("a.b-c_9").expect("name"),
            limits: RunnerLimits::MIN,
            landlock_abi: Some(0),
            runtime: vec![
                "/usr".parse().expect("dir"),
                "/opt/py 3".parse().expect("dir"),
            ],
            gate: true,
            denials_fd: Some(6),
        };
        for inv in [plain, knob, odd] {
            match parse(&inv.argv()) {
                Ok(Args {
                    command: Command::Exec(a),
                }) => assert_eq!(a.invocation(), inv),
                other => panic!("{:?} parsed as {other:?}", inv.argv()),
            }
        }
        assert_eq!(Invocation::new(limits, name).plugin, PLUGIN_PATH);
    }

    #[test]
    fn an_argv0_that_is_not_a_registry_name_is_a_usage_error() {
        let inv = Invocation::new(RunnerLimits::MIN, Name::new("hello").expect("name"));
        let argv: Vec<String> = inv
            .argv()
            .into_iter()
            .map(|a| if a == "hello" { "../x".to_owned() } else { a })
            .collect();
        assert!(parse(&argv).is_err());
    }
}
