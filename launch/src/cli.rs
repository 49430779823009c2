//! Command line of `dot-launch`.

use crate::exec::{StderrMode, StreamLimits};
use crate::inputs::{GivenInputs, RequestSource};
use crate::{Consent, LaunchError, Options};
use argh::FromArgs;
use cli::Output;
use proto::layers::SystemLayers;
use proto::layout::Root;
use proto::ExitCode;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use verify::layers::Registry;

cli::with_limit_options! {
    role = " default: the entry's; may only lower it";
    /// Run a registered plugin with explicit consent, or recover interrupted runs.
    #[derive(FromArgs, Debug)]
    pub struct Args {
        /// the platform root (default: the system layers, admin over vendor, with the state in
        /// --state or the user's default state directory)
        #[argh(option, from_str_fn(cli::path))]
        pub root: Option<PathBuf>,
        /// without --root: the directory the system layers are under (as dpkg --root), for a tree
        /// installed elsewhere
        #[argh(option, from_str_fn(cli::path))]
        pub sysroot: Option<PathBuf>,
        /// the state directory: txn/ and the launch audit log (default: the root itself); made 0700
        /// on first use when missing (its parent must exist)
        #[argh(option, from_str_fn(cli::path))]
        pub state: Option<PathBuf>,
        /// consent to run an `audit` entry (no OS boundary)
        #[argh(switch)]
        pub allow_audit_plugin: bool,
        /// consent to run a `process` entry, only under the dot-sandbox runner
        #[argh(switch)]
        pub require_process_sandbox: bool,
        /// a string input, KEY=VALUE (repeatable)
        #[argh(option)]
        pub input: Vec<String>,
        /// a file input, KEY=PATH, copied into the stage's in/ (repeatable)
        #[argh(option, from_str_fn(cli::os_string))]
        pub input_file: Vec<OsString>,
        /// read the file input KEY even though its path is on the sensitive list (shadow files, keys,
        /// credentials, sudoers, /proc …, and the root policy's sensitive_inputs); repeatable
        #[argh(option)]
        pub allow_sensitive_input: Vec<String>,
        /// an environment variable of the plugin, NAME=VALUE, for a name its entry declares
        /// (repeatable); the plugin's environment is exactly these, nothing inherited (default: none)
        #[argh(option)]
        pub env: Vec<String>,
        /// a request document whose string inputs are used (FILE, or - for stdin)
        #[argh(option, from_str_fn(cli::path))]
        pub request: Option<PathBuf>,
        /// directory the outputs are committed into (default: the current directory)
        #[argh(option, default = "PathBuf::from(\".\")", from_str_fn(cli::path))]
        pub target: PathBuf,
        /// stdout limit in bytes (default 1 MiB, at most 1 GiB: stdout is held in memory)
        #[argh(option, default = "1 << 20")]
        pub max_stdout: usize,
        /// stderr limit in bytes, whatever --stderr says (default 64 KiB); more is a stderr-limit
        /// failure
        #[argh(option, default = "64 << 10")]
        pub max_stderr: usize,
        /// the plugin's stderr, always bounded by --max-stderr and never written to disk: discard
        /// (default), pass (forwarded live to this stderr) or tail (its last 4 KiB in a failure's
        /// run.stderr_tail); a failure whose stderr was discarded has as `next` the same launch with
        /// --stderr tail
        #[argh(option, default = "StderrMode::Discard")]
        pub stderr: StderrMode,
        /// process: list in the result (denials: name, number, count) the system calls the seccomp
        /// filter refused; each refusal is still EPERM, answered outside the plugin (a process entry
        /// only)
        #[argh(switch)]
        pub report_denials: bool,
        /// print the launch decision and the policy the run would get (containment, runner, limits,
        /// Landlock rules, seccomp policy digest, request, target, executable) as one JSON document,
        /// and create nothing; a refusal is the launch's own error and exit code
        #[argh(switch)]
        pub explain: bool,
        /// the plugin name, or `recover` to roll interrupted runs forward
        #[argh(positional)]
        pub name: String,
        /// with `recover TXID`: give up the PREPARED run TXID that recover cannot roll forward (a
        /// conflict): its temp files still in the target are removed, the target keeps what it holds
        /// now (each file new or old), and the run directory is removed
        #[argh(switch)]
        pub abandon: bool,
        /// with `recover`: the one run to recover (default: every run)
        #[argh(positional)]
        pub txid: Option<String>,
    }
}

/// The largest `--max-stdout`: the plugin's stdout is held in memory until it is parsed.
pub const MAX_STDOUT_LIMIT: usize = 1 << 30;

/// Where a launch reads its entry and keeps its state: `--root R [--state S]` as always; without
/// `--root`, the system layers (under `--sysroot`) and the state in `--state`, else the user's
/// default (`proto::layout::default_state`: /var/lib/dot for root, else `$XDG_STATE_HOME/dot`,
/// else `$HOME/.local/state/dot`). The `bool`: the state is that default.
fn locate(
    root: Option<PathBuf>,
    sysroot: Option<PathBuf>,
    state: Option<PathBuf>,
) -> Result<(Root, Registry, bool), LaunchError> {
    match (root, sysroot) {
        (Some(_), Some(_)) => Err(LaunchError::Usage(
            "--sysroot moves the system layers; it cannot go with --root".into(),
        )),
        (Some(r), None) => {
            let root = Root::from_args(r, state);
            Ok((root.clone(), Registry::Root(root), false))
        }
        (None, sysroot) => {
            let sys = SystemLayers::new(sysroot.as_deref());
            let default = state.is_none();
            let state = match state {
                Some(s) => s,
                None => proto::layout::default_state(
                    verify::root::euid(),
                    std::env::var_os("XDG_STATE_HOME").as_deref(),
                    std::env::var_os("HOME").as_deref(),
                )
                .ok_or_else(|| {
                    LaunchError::Usage(
                        "no state directory: give --state DIR (neither an absolute $XDG_STATE_HOME nor an absolute $HOME names a default)"
                            .into(),
                    )
                })?,
            };
            let root = Root::split(sys.admin.clone(), state);
            Ok((root, Registry::System(sys), default))
        }
    }
}

pub fn run(args: Args) -> Result<Output, LaunchError> {
    // Before any thread and any run directory: SIGTERM, SIGINT and SIGHUP cancel the run cleanly.
    crate::cancel::arm()?;
    // Started with SIGCHLD ignored, the kernel would reap the plugin before its status is read.
    sys::signal::default_child_signal()
        .map_err(|e| LaunchError::io("resetting SIGCHLD to its default", "sigaction", e))?;
    if args.name == "recover" && args.explain {
        return Err(LaunchError::Usage(
            "--explain explains a launch, not recover".into(),
        ));
    }
    let asked = args.limit_options();
    let (root, registry, default_state) = locate(args.root, args.sysroot, args.state)?;
    if args.name == "recover" {
        let report = match (args.abandon, args.txid.as_deref()) {
            (true, Some(txid)) => crate::recover::abandon(&root, txid)?,
            (true, None) => {
                return Err(LaunchError::Usage(
                    "--abandon gives up one run: recover --abandon TXID".into(),
                ))
            }
            (false, txid) => crate::recover::recover(&root, txid)?,
        };
        let code = if report.needs_operator() {
            ExitCode::Retained
        } else {
            ExitCode::Success
        };
        let done = format!(
            "recover finished: {} recovered ({}), {} abandoned, {} cleaned, {} skipped, {} conflicts",
            report.recovered.len(),
            report.recovered.join(", "),
            report.abandoned.len(),
            report.cleaned.len(),
            report.skipped.len(),
            report.conflicts.len()
        );
        return Ok(Output::json(&report).with_code(code).done(done, None, None));
    }
    if args.abandon {
        return Err(LaunchError::Usage(
            "--abandon is an option of recover: dot-launch recover --abandon TXID".into(),
        ));
    }
    if let Some(extra) = args.txid {
        return Err(LaunchError::Usage(format!(
            "unexpected argument {extra:?} after the plugin name"
        )));
    }
    if let Some((limit, value)) = asked.below_minimum() {
        return Err(LaunchError::Usage(format!(
            "{} {value} is below the smallest limit, {}",
            limit.option, limit.min
        )));
    }
    if args.max_stdout > MAX_STDOUT_LIMIT {
        return Err(LaunchError::Usage(format!(
            "--max-stdout {} is over the largest limit, {MAX_STDOUT_LIMIT} bytes (stdout is held in memory)",
            args.max_stdout
        )));
    }
    let request = match args.request.as_deref() {
        None => None,
        Some(p) if p == Path::new("-") => {
            let b = sys::fs::read_at_most(std::io::stdin(), (1 << 20) + 1)
                .map_err(|e| LaunchError::io("reading the request", "-", e))?;
            Some(RequestSource::Stdin(b))
        }
        Some(p) => Some(RequestSource::File(p.to_path_buf())),
    };
    let explain = args.explain;
    let opts = Options {
        root,
        registry,
        default_state,
        name: args.name,
        consent: Consent {
            allow_audit_plugin: args.allow_audit_plugin,
            require_process_sandbox: args.require_process_sandbox,
        },
        inputs: GivenInputs {
            strings: args.input,
            files: args.input_file,
            request,
            allow_sensitive: args.allow_sensitive_input,
            env: args.env,
        },
        target: args.target,
        streams: StreamLimits {
            stderr: args.stderr,
            max_stdout: args.max_stdout,
            max_stderr: args.max_stderr,
            report_denials: args.report_denials,
        },
        asked,
    };
    if explain {
        return crate::explain::explain(&opts).map(|e| Output::json(&e));
    }
    let again = opts.command().arg(&opts.name);
    let result = crate::launch(&opts).map_err(|e| e.see_stderr(opts.streams.stderr, again));
    result.map(|r| {
        let code = if r.warnings.is_empty() {
            ExitCode::Success
        } else {
            ExitCode::Retained
        };
        let done = format!(
            "run {} committed {} output(s) into {}",
            r.txid,
            r.outputs.len(),
            r.target.as_deref().unwrap_or("its target")
        );
        let (txid, target) = (r.txid.clone(), r.target.clone());
        Output::json(&r)
            .with_code(code)
            .done(done, Some(txid), target)
    })
}

/// What `dot-launch --version` adds to its name and version: the protocol it speaks, and the
/// `--version` line of the runner beside it (its seccomp policy digest), or why there is none.
pub fn version_about() -> String {
    let protocol = proto::protocol::PROTOCOL_VERSION;
    let runner = match crate::runner_path() {
        Ok(path) => match std::process::Command::new(&path)
            .arg("--version")
            .env_clear()
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
        {
            Ok(out) if out.status.success() => {
                String::from_utf8_lossy(&out.stdout).trim().to_owned()
            }
            Ok(out) => format!("{} did not answer ({:?})", path.display(), out.status),
            Err(e) => format!("{}: {e}", path.display()),
        },
        Err(e) => e.to_string(),
    };
    format!("(protocol {protocol}; runner: {runner})")
}
