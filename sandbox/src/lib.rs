//! `dot-sandbox`: the fixed sibling runner of `dot-launch`. `exec` confines the runner itself and
//! then executes the plugin it was handed on descriptor 4; `probe` reports what this kernel can
//! enforce, and `probe --prove` runs the canary under the real policy and checks every denial.
//!
//! Process containment exists only on Linux x86-64; elsewhere `exec` refuses and `probe` says
//! `process_enforceable: false`.
#![forbid(unsafe_code)]

pub mod exec;
pub mod identity;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod policy;
pub mod probe;
pub mod prove;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod seccomp;
pub mod stage;

pub use exec::ExecError;
pub use probe::{probe, Probe};
pub use prove::{ProbeResult, ProveError, ProveReport};

use argh::FromArgs;
use proto::cli::Output;
use proto::{ErrorObject, ExitCode, Kind, ToErrorObject};

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
/// report descriptor (a unix stream socket) open, and the on-disk stage holding the inputs in `in/`
/// as the working directory.
#[derive(FromArgs, Debug, Clone, PartialEq, Eq)]
#[argh(subcommand, name = "exec")]
pub struct ExecArgs {
    /// descriptor that receives the one-line JSON report (dot-launch passes 5)
    #[argh(option)]
    pub report_fd: i32,
    /// hard RLIMIT_AS in bytes
    #[argh(option)]
    pub as_bytes: u64,
    /// hard RLIMIT_CPU in seconds
    #[argh(option)]
    pub cpu_seconds: u64,
    /// hard RLIMIT_FSIZE in bytes
    #[argh(option)]
    pub fsize_bytes: u64,
    /// hard RLIMIT_NOFILE (at least 16)
    #[argh(option)]
    pub nofile: u64,
    /// hard RLIMIT_NPROC: the most tasks (processes and threads) of the run, at least 1
    #[argh(option)]
    pub nproc: u64,
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
    /// the plugin: must be exactly /proc/self/fd/4
    #[argh(positional)]
    pub plugin: String,
}

/// Print what this kernel can enforce as JSON; with --prove, run the canary under the real policy
/// and check that every expected denial happens (exit 1 if one does not).
#[derive(FromArgs, Debug, Clone, PartialEq, Eq)]
#[argh(subcommand, name = "probe")]
pub struct ProbeArgs {
    /// launch the dot-canary next to this dot-sandbox for every escape probe
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

/// Runs one `dot-sandbox` command. `exec` returns only on failure: on success the process image
/// is the plugin's.
pub fn run(args: Args) -> Result<Output, Error> {
    match args.command {
        Command::Exec(a) => match exec::run(&a) {
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
        Command::Probe(a) => Ok(Output::json(&probe::probe_capped(a.landlock_abi))),
    }
}
