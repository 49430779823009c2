//! One launch from the decision to the end of its run directory: the orchestration of the other
//! modules, in the order of the crate's step list.

use crate::audit::{record_decision, AuditSync};
use crate::cancel::{self, During};
use crate::commit::{self, CommitError};
use crate::decide::{decide, Consent, Decided, Start};
use crate::exec::{self, RunLimits, StreamLimits};
use crate::judge::{self, PluginFailure, Unconfirmed};
use crate::rundir::{now_ms, End, RunDir};
use crate::target::Target;
use crate::{hooks, inputs, pinning, stage, LaunchError};
use cli::Next;
use proto::journal::{Record, RECORD_VERSION};
use proto::layout::Root;
use proto::result::{ExitStatus, OutputFile, RunResult, RunStatus, Warning};
use proto::{Containment, Name};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use verify::layers::Registry;

/// Everything one launch needs.
#[derive(Debug)]
pub struct Options {
    /// Where the run's state goes (`txn/`, the audit log), and for `--root`, the registry.
    pub root: Root,
    /// Where the entry is looked up: the root, or the system layers (`verify::layers`).
    pub registry: Registry,
    /// The state directory is the user's default: made with its missing parents on first use.
    pub default_state: bool,
    pub name: String,
    pub consent: Consent,
    pub inputs: inputs::GivenInputs,
    pub target: PathBuf,
    /// The invoker's choices for stdout and stderr.
    pub streams: StreamLimits,
    /// The limits the invoker asked for: each may only lower the entry's.
    pub asked: proto::limits::Asked,
}

impl Options {
    /// `dot-launch` as given, up to the plugin name: `--root R [--state S]`, or for the system
    /// layers `[--sysroot S] --state STATE`.
    pub fn command(&self) -> Next {
        let cmd = Next::cmd("dot-launch");
        match &self.registry {
            Registry::Root(_) => cmd.root(&self.root),
            Registry::System(sys) => cmd
                .opt_if("--sysroot", verify::layers::sysroot_of(sys).as_deref())
                .arg("--state")
                .arg(self.root.state()),
        }
    }

    /// `dot-launch recover` of the run `txid` in this launch's state.
    pub fn recover_command(&self, txid: &str) -> Next {
        match &self.registry {
            Registry::Root(_) => cli::next::recover_run(&self.root, txid),
            Registry::System(_) => Next::cmd("dot-launch")
                .arg("recover")
                .arg("--state")
                .arg(self.root.state())
                .arg(txid),
        }
    }
}

/// Runs one plugin to the end. `Ok` is a committed run (with `warnings` when something was left
/// for the operator); every failure is an `Err`.
pub fn launch(opts: &Options) -> Result<RunResult, LaunchError> {
    // Nothing of the same user (an `audit` plugin of another run included) may open this process's
    // descriptors or trace it: only a holder of CAP_SYS_PTRACE can.
    nix::sys::prctl::set_dumpable(false)
        .map_err(|e| LaunchError::io("making dot-launch non-dumpable", "prctl", e.into()))?;
    let root = &opts.root;
    let name = Name::new(&opts.name)?;
    // The registry's layout, then the state: one apart from the registry is made on first use,
    // and nothing is decided (or recorded in its audit log) in a state that is not ours alone.
    let checked = verify::layers::check_registry(&opts.registry, &name)?;
    verify::root::ensure_state(root, opts.default_state)?;
    // Every process this launch starts is its descendant, the runner started early included.
    sys::process::set_child_subreaper()
        .map_err(|e| LaunchError::io("becoming a child subreaper", "prctl", e))?;
    let decision = decide(root, &name, opts, checked, Start::Early);
    let decision = confirm(decision);
    let mut audit = record_decision(root, &name, &decision)?;
    let decided = decision?;
    hooks::pause_after_verify();
    cancel::check(During::Decision)?;

    let mut run = RunDir::create(root)?;
    // The one place the run directory ends.
    match proceed(decided, &mut run, opts, &mut audit) {
        Ok(Done::Committed {
            mut result,
            durable,
        }) => {
            run.finish(durable, &mut result);
            Ok(result)
        }
        Ok(Done::Unrecorded(result)) => Ok(result),
        Err(Stop::Abandon(e)) => Err(run.abandon(e)),
        Err(Stop::Retain(e)) => Err(e),
    }
}

/// The digest of the leased executable confirmed (`verify::entry::Digest::AfterLease`). A
/// `process` run's runner, started at its gate by `decide` (`pinning::start_early`), stays in the
/// decision: its start and the steps it makes before its gate overlap the target's checks, the
/// digest, the decision's record and the run directory. A digest that does not match is the
/// decision (`store-tampered`), and the runner goes with the rest of the decision: ended and
/// reaped without having run anything of the plugin's.
fn confirm(decision: Result<Decided, LaunchError>) -> Result<Decided, LaunchError> {
    let mut d = decision?;
    d.verified.confirm_digest()?;
    Ok(d)
}

/// A run that reached its end without failing.
enum Done {
    /// Committed: its directory is removed (`txn/` synced when the run made anything durable).
    Committed { result: RunResult, durable: bool },
    /// Every output is in place, but COMMITTED could not be written: the run stays PREPARED
    /// (`dot-launch recover` finds the files in place and finishes it) and the result says so.
    Unrecorded(RunResult),
}

/// A run that failed.
enum Stop {
    /// Before PREPARED: nothing in the target changed, the run directory is removed.
    Abandon(LaunchError),
    /// After PREPARED: the changes are authorized but not finished; the run is retained for
    /// `dot-launch recover`.
    Retain(LaunchError),
}

impl From<LaunchError> for Stop {
    fn from(e: LaunchError) -> Stop {
        Stop::Abandon(e)
    }
}

/// Steps 4–8 inside the run directory: BEGIN, the stage, the run, the judgement, the commit.
fn proceed(
    decided: Decided,
    run: &mut RunDir,
    opts: &Options,
    audit: &mut Option<AuditSync>,
) -> Result<Done, Stop> {
    let Decided {
        mut verified,
        inputs,
        target,
        runner,
        limits: run_limits,
        layer,
        early,
    } = decided;
    let limits = RunLimits::new(&run_limits, opts.streams);
    let entry = verified.entry.clone();
    let begin = Record::Begin {
        v: RECORD_VERSION,
        seq: run.seq(),
        at_ms: now_ms(),
        txid: run.txid.clone(),
        name: entry.name.clone(),
        version: entry.version.to_string(),
        sha256: entry.sha256,
        containment: entry.containment,
        pid: std::process::id(),
        target: target.path.display().to_string(),
        target_id: Some(target.id),
        sum: None,
    };
    run.append(&begin, false).map_err(LaunchError::from)?;
    hooks::failpoint("after-begin");
    let workdir = stage::prepare(run, &inputs, entry.containment)?;
    cancel::check(During::Stage)?;
    let request = serde_json::to_vec(&inputs.request(&entry)).unwrap_or_default();
    let observed = pinning::run_pinned(
        &mut verified,
        runner.as_ref(),
        &workdir,
        &request,
        &limits,
        &inputs,
        early,
    )?;
    // The decision is durable before the run can change anything durably or report.
    if let Some(a) = audit.as_mut() {
        a.wait()?;
    }
    // A signal that came after the plugin ended, before anything was judged.
    cancel::check(During::Plugin)?;
    let mut result = RunResult {
        schema: proto::result::RESULT_SCHEMA,
        txid: run.txid.clone(),
        name: entry.name.clone(),
        version: entry.version.to_string(),
        sha256: entry.sha256,
        trust: entry.trust,
        containment: entry.containment,
        dependencies: verified.dependencies,
        status: RunStatus::Failed,
        exit: ExitStatus {
            code: observed.status.code(),
            signal: observed.status.signal(),
        },
        duration_ms: observed.duration.as_millis() as u64,
        stdout_bytes: observed.stdout_bytes,
        stderr_bytes: observed.stderr_bytes,
        outputs: Vec::new(),
        target: Some(target.path.display().to_string()),
        target_waited: false,
        response: None,
        failure: None,
        limits: Some(run_limits),
        usage: observed.usage.map(|u| proto::result::Usage {
            cpu_us: u.user_us.saturating_add(u.system_us),
            user_us: u.user_us,
            system_us: u.system_us,
            peak_rss_kib: u.max_rss_kib,
        }),
        enforced: None,
        stderr_tail: (limits.streams.stderr == exec::StderrMode::Tail)
            .then(|| String::from_utf8_lossy(&observed.stderr_tail).into_owned()),
        warnings: Vec::new(),
        layer,
        denials: observed.denials.clone(),
    };
    if entry.containment == Containment::Process {
        match judge::confirmed(&observed) {
            Ok(enforced) => result.enforced = Some(enforced),
            Err(Unconfirmed::Refused(error)) => {
                result.failure = Some(error.message.clone());
                return Err(Stop::Abandon(LaunchError::SandboxRefused {
                    error,
                    run: Box::new(result),
                }));
            }
            Err(Unconfirmed::NoReport(f)) => return Err(failed(result, f)),
        }
    }
    let response = match judge::judge(&observed, &limits, entry.containment) {
        Ok(r) => r,
        Err(f) => return Err(failed(result, f)),
    };
    let names = response.outputs.clone();
    result.response = Some(response);
    if names.is_empty() {
        // Nothing to change in the target, so nothing to make durable: no PREPARED, no renames,
        // no COMMITTED. The journal holds BEGIN only; a crash from here on leaves an ABANDONED
        // run, exactly as before the plugin ran.
        return Ok(Done::Committed {
            result: committed(result, Vec::new()),
            durable: false,
        });
    }
    cancel::check(During::Commit)?;
    let out_dir = stage::out_dir(run, &observed)?;
    commit_outputs(run, &out_dir, &target, &names, opts, &limits, result)
}

/// Step 8: the outputs committed into `target`, or why not.
fn commit_outputs(
    run: &mut RunDir,
    out_dir: &std::fs::File,
    target: &Target,
    names: &[String],
    opts: &Options,
    limits: &RunLimits,
    mut result: RunResult,
) -> Result<Done, Stop> {
    let retained = |run: &RunDir, e: LaunchError| LaunchError::Retained {
        txid: run.txid.clone(),
        why: e.to_string(),
        next: opts.recover_command(&run.txid),
    };
    let outcome = commit::commit(
        run,
        out_dir,
        target,
        names,
        limits,
        &mut result.target_waited,
    );
    match outcome {
        Ok(outputs) => Ok(Done::Committed {
            result: committed(result, outputs),
            durable: true,
        }),
        Err(CommitError::Unrecorded(outputs, e)) => {
            // Every output is in place and durable: the run is committed, whatever the journal
            // could not say.
            let mut result = committed(result, outputs);
            result.warnings.push(Warning::of(&retained(run, *e)));
            Ok(Done::Unrecorded(result))
        }
        Err(CommitError::Invalid(why)) => Err(failed(result, PluginFailure::OutputsInvalid(why))),
        Err(CommitError::Conflict(why)) => Err(failed(result, PluginFailure::TargetConflict(why))),
        Err(CommitError::Pending(txid)) => Err(Stop::Abandon(LaunchError::TargetPending {
            target: target.path.clone(),
            next: opts.recover_command(&txid),
            txid,
        })),
        Err(CommitError::Before(e)) => Err(Stop::Abandon(e)),
        Err(CommitError::After(e)) => Err(Stop::Retain(retained(run, e))),
    }
}

/// The result of a committed run.
fn committed(mut result: RunResult, outputs: Vec<OutputFile>) -> RunResult {
    result.outputs = outputs;
    result.status = RunStatus::Committed;
    result.stderr_tail = None;
    result
}

/// The plugin failed: the run is abandoned with its result.
fn failed(result: RunResult, failure: PluginFailure) -> Stop {
    Stop::Abandon(LaunchError::plugin(result, failure))
}
