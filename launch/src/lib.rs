//! `dot-launch`: the one entry point that runs a plugin.
//!
//! 1. verify the entry (`verify` library: deny list, schema, trust, expiry, the pinned copy opened
//!    and digest-checked)
//! 2. consent must match the entry's containment exactly; for `process`, the kernel must be able to
//!    enforce it; inputs, protocol range and target are checked — nothing is created yet
//! 3. for `process`, open and validate the sibling `dot-sandbox`; append the decision (allowed or
//!    refused with its kind) to `ROOT/audit.log`
//! 4. create and lock `txn/TXID/`, append BEGIN, copy file inputs into the stage
//! 5. spawn in a new process group with an empty environment, cwd = stage (audit: the plugin's fd;
//!    process: the runner on fd 3, the plugin on fd 4, the runner's report on fd 5)
//! 6. feed the request, bound stdout and stderr, enforce the deadline
//! 7. terminate and reap the group (`reap` library) before deciding anything
//! 8. on success commit the outputs (BEGIN made durable, temp files, PREPARED, renames,
//!    COMMITTED) and remove the run directory, the journal last (a failed run's too); a directory
//!    that cannot be removed is reported (a warning of the result, or `cleanup-retained`), exit 4
#![forbid(unsafe_code)]

pub mod cli;
pub mod commit;
pub mod error;
pub mod exec;
pub mod hooks;
pub mod inputs;
pub mod names;
pub mod progress;
pub mod recover;
pub mod rundir;
pub mod target;

pub use error::LaunchError;

use exec::{Limits, Runner};
use proto::journal::{Record, RECORD_VERSION};
use proto::layout::Root;
use proto::protocol::{protocol_version, Response, ResponseStatus, PROTOCOL_VERSION};
use proto::result::{ExitStatus, RunResult, RunStatus, Warning};
use proto::runner::SandboxReport;
use proto::{Containment, Entry, Name};
use rundir::{now_ms, RunDir};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;

/// Everything one launch needs.
#[derive(Debug)]
pub struct Options {
    pub root: PathBuf,
    pub name: String,
    pub allow_audit_plugin: bool,
    pub require_process_sandbox: bool,
    pub inputs: inputs::GivenInputs,
    pub target: PathBuf,
    pub limits: Limits,
}

/// The consent flag each containment needs.
fn consent_flag(c: Containment) -> &'static str {
    match c {
        Containment::Audit => "--allow-audit-plugin",
        Containment::Process => "--require-process-sandbox",
    }
}

/// Consent must match the entry's containment exactly.
fn check_consent(entry: &Entry, opts: &Options) -> Result<(), LaunchError> {
    let flag = consent_flag(entry.containment);
    let next = format!(
        "dot-launch --root {} {} {flag}",
        opts.root.display(),
        entry.name
    );
    let name = entry.name.to_string();
    let containment = entry.containment;
    match (
        containment,
        opts.allow_audit_plugin,
        opts.require_process_sandbox,
    ) {
        (Containment::Audit, true, false) | (Containment::Process, false, true) => Ok(()),
        (_, false, false) => Err(LaunchError::ConsentMissing {
            name,
            containment,
            flag,
            next,
        }),
        (Containment::Audit, _, true) => Err(LaunchError::ConsentMismatch {
            name,
            containment,
            given: "--require-process-sandbox",
            flag,
            next,
        }),
        (Containment::Process, true, _) => Err(LaunchError::ConsentMismatch {
            name,
            containment,
            given: "--allow-audit-plugin",
            flag,
            next,
        }),
    }
}

fn check_protocol(entry: &Entry) -> Result<(), LaunchError> {
    // The requirement parsed when the entry was validated; an unparsable one cannot match.
    if entry
        .protocol_req()
        .is_ok_and(|req| req.matches(&protocol_version()))
    {
        Ok(())
    } else {
        Err(LaunchError::ProtocolUnsupported {
            req: entry.protocol.clone(),
            ours: PROTOCOL_VERSION,
        })
    }
}

/// For `process`: the kernel must be able to enforce it, checked before anything is created.
fn check_process_support() -> Result<(), LaunchError> {
    let probe = sys::confine::probe().capped(hooks::pretend_landlock_abi());
    match probe.why_not {
        None => Ok(()),
        Some(why) => Err(LaunchError::ProcessUnsupported { why }),
    }
}

/// Opens the sibling `dot-sandbox` (the directory of the running dot-launch; never PATH) once and
/// validates the open inode: regular, no setuid/setgid, owned by root or us, not group/world
/// writable, not empty, executable by us.
fn open_runner() -> Result<Runner, LaunchError> {
    let path = runner_path()?;
    let unusable = |why: String| LaunchError::SandboxUnusable {
        path: path.clone(),
        why,
    };
    let (file, meta) = sys::fs::open_regular(&path).map_err(|e| unusable(e.to_string()))?;
    let euid = nix::unistd::geteuid().as_raw();
    if meta.uid() != 0 && meta.uid() != euid {
        return Err(unusable(format!(
            "is owned by uid {}, not root or {euid}",
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(unusable(format!(
            "is group or world writable (mode {:o})",
            meta.mode() & 0o7777
        )));
    }
    if meta.len() == 0 {
        return Err(unusable("is empty".into()));
    }
    // What execve itself will check (mode bits for us, a noexec mount), asked of the open inode
    // now: a runner that cannot be executed is a refusal before anything is recorded as allowed.
    nix::unistd::faccessat(
        &file,
        "",
        nix::unistd::AccessFlags::X_OK,
        nix::fcntl::AtFlags::AT_EMPTY_PATH,
    )
    .map_err(|e| {
        unusable(format!(
            "cannot be executed (mode {:o}): {e}",
            meta.mode() & 0o7777
        ))
    })?;
    Ok(Runner { file })
}

/// Where the runner is: `dot-sandbox` in the directory of the running dot-launch (never PATH).
pub fn runner_path() -> Result<PathBuf, LaunchError> {
    let exe = std::fs::read_link("/proc/self/exe")
        .map_err(|e| LaunchError::io("resolving /proc/self/exe", "/proc/self/exe", e))?;
    Ok(exe
        .parent()
        .map(|d| d.join("dot-sandbox"))
        .unwrap_or_else(|| PathBuf::from("/dot-sandbox")))
}

/// Everything checked before anything is created: the launch decision.
struct Decided {
    verified: verify::entry::Verified,
    inputs: inputs::Inputs,
    target: PathBuf,
    runner: Option<Runner>,
}

/// Steps 1–3: verification, consent, kernel support, protocol, inputs, target, runner.
fn decide(root: &Root, name: &Name, opts: &Options) -> Result<Decided, LaunchError> {
    let verified = verify::entry::verify_entry(root, name)?;
    let entry = &verified.entry;
    check_consent(entry, opts)?;
    if entry.containment == Containment::Process {
        check_process_support()?;
    }
    check_protocol(entry)?;
    let inputs = inputs::check(&opts.inputs, entry)?;
    let target = target::check(&opts.target, root)?;
    let runner = match entry.containment {
        Containment::Process => Some(open_runner()?),
        Containment::Audit => None,
    };
    Ok(Decided {
        verified,
        inputs,
        target,
        runner,
    })
}

/// Appends the launch decision to `ROOT/audit.log` with one write. A refusal is made durable
/// (fdatasync) at once. An allowed launch gets its line back unsynced: [`AuditSync`] makes it
/// durable on a second thread while the run proceeds, and the run waits for it before it can make
/// anything durable (PREPARED) or report a result. Not written when the root itself was refused
/// (missing or unsafe: nothing in it is trusted, so nothing is written into it). An allowed launch
/// whose record cannot be written does not run; a refusal stays the refusal.
fn record_decision(
    root: &Root,
    name: &Name,
    decision: &Result<Decided, LaunchError>,
) -> Result<Option<AuditSync>, LaunchError> {
    use proto::trust::{AuditAction, AuditOutcome, AuditRecord};
    use proto::ToErrorObject;
    let now = verify::trust::now();
    let rec = match decision {
        Ok(d) => {
            let e = &d.verified.entry;
            let mut rec = AuditRecord::new(now, AuditAction::Launch, AuditOutcome::Allowed);
            rec.version = Some(e.version.to_string());
            rec.publisher = e.publisher.as_ref().map(|p| p.to_string());
            rec.key_id = d.verified.key_id.clone();
            rec.sha256 = Some(e.sha256);
            rec
        }
        Err(e) if matches!(e.kind(), "root-missing" | "root-unsafe") => return Ok(None),
        Err(e) => {
            let mut rec = AuditRecord::new(now, AuditAction::Launch, AuditOutcome::Refused);
            rec.kind = Some(e.kind().to_owned());
            rec.detail = Some(e.to_string());
            rec
        }
    };
    let rec = AuditRecord {
        name: Some(name.to_string()),
        ..rec
    };
    let path = root.audit_log();
    let appended = sys::fs::append_line_unsynced(&path, &rec.to_line());
    match (appended, decision) {
        (Ok(line), Ok(_)) => AuditSync::start(line, path).map(Some),
        (Err(e), Ok(_)) => Err(LaunchError::io("appending to the audit log", path, e)),
        (Ok(line), Err(_)) => {
            let _ = line.sync();
            Ok(None)
        }
        (Err(_), Err(_)) => Ok(None),
    }
}

/// The allowed launch's audit line being made durable on its own thread (fdatasync takes about as
/// long as a process start here, so it overlaps the run instead of preceding it). `wait` joins it;
/// dropping it joins too, so no path out of `launch` leaves the line undurable.
struct AuditSync {
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    path: PathBuf,
}

impl AuditSync {
    fn start(line: sys::fs::Appended, path: PathBuf) -> Result<AuditSync, LaunchError> {
        let thread = std::thread::Builder::new()
            .name("audit-sync".into())
            .spawn(move || line.sync())
            .map_err(|e| LaunchError::io("starting the audit log sync", &path, e))?;
        Ok(AuditSync {
            thread: Some(thread),
            path,
        })
    }

    /// Waits until the line is durable.
    fn wait(&mut self) -> Result<(), LaunchError> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        let result = thread
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the audit log sync thread panicked")));
        result.map_err(|e| LaunchError::io("syncing the audit log", &self.path, e))
    }
}

impl Drop for AuditSync {
    fn drop(&mut self) {
        let _ = self.wait();
    }
}

/// Runs one plugin to the end. `Ok` is a committed run (with `warnings` when something was left
/// for the operator); every failure is an `Err`.
pub fn launch(opts: &Options) -> Result<RunResult, LaunchError> {
    // Nothing of the same user (an `audit` plugin of another run included) may open this process's
    // descriptors or trace it: only a holder of CAP_SYS_PTRACE can.
    nix::sys::prctl::set_dumpable(false)
        .map_err(|e| LaunchError::io("making dot-launch non-dumpable", "prctl", e.into()))?;
    let root = Root::new(&opts.root);
    let name = Name::new(&opts.name)?;
    let decision = decide(&root, &name, opts);
    let mut audit = record_decision(&root, &name, &decision)?;
    let Decided {
        mut verified,
        inputs,
        target,
        runner,
    } = decision?;
    let entry = &verified.entry.clone();
    hooks::pause_after_verify();

    sys::process::set_child_subreaper()
        .map_err(|e| LaunchError::io("becoming a child subreaper", "prctl", e))?;
    let mut run = RunDir::create(&root)?;
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
        target: target.display().to_string(),
        sum: None,
    };
    let prepared = run.append(&begin, false).and_then(|()| {
        hooks::failpoint("after-begin");
        prepare_stage(&run, &inputs)
    });
    if let Err(e) = prepared {
        return Err(abandon(run, e));
    }
    let request = serde_json::to_vec(&inputs.request(entry)).unwrap_or_default();
    let observed = match run_pinned(
        &mut verified,
        runner.as_ref(),
        &run,
        &request,
        opts,
        &inputs,
    ) {
        Ok(o) => o,
        Err(e) => return Err(abandon(run, e)),
    };
    // The decision is durable before the run can change anything durably or report.
    if let Some(Err(e)) = audit.as_mut().map(AuditSync::wait) {
        return Err(abandon(run, e));
    }
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
        target: Some(target.display().to_string()),
        response: None,
        failure: None,
        enforced: None,
        stderr_tail: (opts.limits.stderr == exec::StderrMode::Tail)
            .then(|| String::from_utf8_lossy(&observed.stderr_tail).into_owned()),
        warnings: Vec::new(),
    };
    if let Err(e) = judge(&observed, &mut result, opts.limits.deadline) {
        return Err(abandon(run, e));
    }
    let names = result
        .response
        .as_ref()
        .map(|r| r.outputs.clone())
        .unwrap_or_default();
    if names.is_empty() {
        // Nothing to change in the target, so nothing to make durable: no PREPARED, no renames,
        // no COMMITTED. The journal holds BEGIN only; a crash from here on leaves an ABANDONED
        // run, exactly as before the plugin ran.
        result.status = RunStatus::Committed;
        result.stderr_tail = None;
        finish(run, false, &mut result);
        return Ok(result);
    }
    let out_dir = match out_dir(&run, &observed) {
        Ok(d) => d,
        Err(e) => return Err(abandon(run, e)),
    };
    let recover = format!(
        "dot-launch recover --root {} {}",
        opts.root.display(),
        run.txid
    );
    match commit::commit(&mut run, &out_dir, &target, &names, &opts.limits) {
        Ok(outputs) => {
            result.outputs = outputs;
            result.status = RunStatus::Committed;
            result.stderr_tail = None;
            finish(run, true, &mut result);
            Ok(result)
        }
        Err(commit::CommitError::Unrecorded(outputs, e)) => {
            // Every output is in place and durable: the run is committed, whatever the journal
            // could not say. It stays PREPARED; recover finds the files in place and finishes it.
            result.outputs = outputs;
            result.status = RunStatus::Committed;
            result.stderr_tail = None;
            result.warnings.push(Warning::of(&LaunchError::Retained {
                txid: run.txid.clone(),
                why: e.to_string(),
                next: recover,
            }));
            Ok(result)
        }
        Err(commit::CommitError::Invalid(why)) => {
            Err(abandon(run, plugin_failure(result, "outputs-invalid", why)))
        }
        Err(commit::CommitError::Conflict(why)) => {
            Err(abandon(run, plugin_failure(result, "target-conflict", why)))
        }
        Err(commit::CommitError::Before(e)) => Err(abandon(run, e)),
        Err(commit::CommitError::After(e)) => Err(LaunchError::Retained {
            txid: run.txid.clone(),
            why: e.to_string(),
            next: recover,
        }),
    }
}

/// Ends a run that failed before PREPARED (nothing in any target changed): its directory is
/// removed. When it cannot be, the failure comes back as `cleanup-retained` (exit 4) carrying the
/// run directory and why, never silently.
fn abandon(run: RunDir, err: LaunchError) -> LaunchError {
    match run.remove() {
        Ok(()) => err,
        Err(retained) => LaunchError::CleanupRetained {
            retained,
            cause: Some(Box::new(err)),
        },
    }
}

/// Ends a committed run: its directory is removed (`txn/` synced with `sync_txn`). When it
/// cannot be, the run is still committed: the result carries a `cleanup-retained` warning (and
/// exits 4), never an error that hides the commit.
fn finish(run: RunDir, sync_txn: bool, result: &mut RunResult) {
    if let Err(retained) = run.remove_with(sync_txn) {
        result
            .warnings
            .push(Warning::of(&LaunchError::CleanupRetained {
                retained,
                cause: None,
            }));
    }
}

/// The stage: `in/` with the file inputs (copied from the descriptors opened at check time) and an
/// empty `out/`.
fn prepare_stage(run: &RunDir, inputs: &inputs::Inputs) -> Result<(), LaunchError> {
    let stage = run.stage();
    for dir in [stage.clone(), stage.join("in"), stage.join("out")] {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| LaunchError::io("creating the stage", &dir, e))?;
    }
    for f in &inputs.files {
        let dest = stage.join("in").join(&f.key);
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&dest)
            .map_err(|e| LaunchError::io("copying a file input", &dest, e))?;
        let mut src = &f.file;
        std::io::copy(&mut src, &mut out)
            .map_err(|e| LaunchError::io("copying a file input", &f.path, e))?;
    }
    Ok(())
}

/// Runs the plugin (`exec::run`) with what pins its executable. A leased executable whose
/// exec was refused because a would-be writer was waiting for the lease is sealed into a private
/// copy (the lease still held, the writer still waiting) and run again, once.
fn run_pinned(
    verified: &mut verify::entry::Verified,
    runner: Option<&exec::Runner>,
    run: &RunDir,
    request: &[u8],
    opts: &Options,
    inputs: &inputs::Inputs,
) -> Result<exec::Observed, LaunchError> {
    let name = verified.entry.name.clone();
    let go = |verified: &mut verify::entry::Verified| {
        let lease = pinned_lease(verified)?;
        exec::run(
            &verified.exe,
            lease,
            runner,
            &run.stage(),
            name.as_str(),
            request,
            &opts.limits,
            inputs.totals(),
        )
    };
    match go(verified)? {
        exec::Ran::Observed(o) => Ok(*o),
        exec::Ran::WriterWaiting => {
            verified.seal_now()?;
            match go(verified)? {
                exec::Ran::Observed(o) => Ok(*o),
                exec::Ran::WriterWaiting => Err(LaunchError::io(
                    "executing the sealed copy",
                    &verified.exe_path,
                    std::io::Error::from_raw_os_error(nix::libc::ETXTBSY),
                )),
            }
        }
    }
}

/// The lease that keeps a leased executable from changing until it is executed, if it still has
/// at least half the kernel's lease break time to go; an older one is exchanged for a sealed
/// private copy (checked against the entry's digest) first.
fn pinned_lease(
    verified: &mut verify::entry::Verified,
) -> Result<Option<exec::Lease>, LaunchError> {
    let verify::entry::Pinned::Leased { since } = verified.pinned else {
        return Ok(None);
    };
    let break_time = hooks::lease_break_time().unwrap_or_else(sys::fs::lease_break_time);
    if since.elapsed() >= break_time / 2 {
        verified.seal_now()?;
        return Ok(None);
    }
    Ok(Some(exec::Lease { since, break_time }))
}

/// The stage's `out/`, opened: in the private tmpfs the runner handed over (`process`), or in the
/// run directory (`audit`).
fn out_dir(run: &RunDir, o: &exec::Observed) -> Result<std::fs::File, LaunchError> {
    use nix::fcntl::{openat, OFlag};
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let path = run.stage().join("out");
    let fd = match &o.stage {
        Some(stage) => openat(stage, "out", flags, nix::sys::stat::Mode::empty()),
        None => nix::fcntl::open(&path, flags, nix::sys::stat::Mode::empty()),
    };
    fd.map(std::fs::File::from)
        .map_err(|e| LaunchError::io("opening the stage's out/", path, e.into()))
}

fn plugin_failure(mut result: RunResult, kind: &'static str, message: String) -> LaunchError {
    result.status = RunStatus::Failed;
    result.failure = Some(message.clone());
    LaunchError::Plugin {
        kind,
        message,
        run: Box::new(result),
    }
}

/// Decides whether the plugin succeeded; fills `response`/`enforced` on the way.
fn judge(
    o: &exec::Observed,
    result: &mut RunResult,
    deadline: std::time::Duration,
) -> Result<(), LaunchError> {
    if result.containment == Containment::Process {
        let line = o.report.split(|&b| b == b'\n').next().unwrap_or_default();
        match serde_json::from_slice::<SandboxReport>(line) {
            Ok(SandboxReport::Enforced(_)) if o.stage.is_none() => {
                let why = "dot-sandbox reported its containment but handed over no stage: the plugin result is discarded";
                return Err(plugin_failure(
                    result.clone(),
                    "sandbox-no-report",
                    why.into(),
                ));
            }
            Ok(SandboxReport::Enforced(e)) => result.enforced = Some(e),
            Ok(SandboxReport::Error(error)) => {
                result.failure = Some(error.message.clone());
                return Err(LaunchError::SandboxRefused {
                    error: Box::new(error),
                    run: Box::new(result.clone()),
                });
            }
            Err(_) => {
                let why = "dot-sandbox reported nothing: containment was not confirmed, the plugin result is discarded";
                return Err(plugin_failure(
                    result.clone(),
                    "sandbox-no-report",
                    why.into(),
                ));
            }
        }
    }
    let r = result.clone();
    if o.deadline_hit {
        return Err(plugin_failure(
            r,
            "deadline",
            format!(
                "the plugin still ran at its deadline of {} ms (stopped after {} ms)",
                deadline.as_millis(),
                result.duration_ms
            ),
        ));
    }
    if let Some(kind) = o.over_limit {
        let msg = match kind {
            "stdout-limit" => format!("stdout went over its limit ({} bytes seen)", o.stdout_bytes),
            _ => format!("stderr went over its limit ({} bytes seen)", o.stderr_bytes),
        };
        return Err(plugin_failure(r, kind, msg));
    }
    if let Some(sig) = o.status.signal() {
        return Err(plugin_failure(
            r,
            "plugin-signal",
            format!("the plugin was killed by signal {sig}"),
        ));
    }
    if let Some(code) = o.status.code().filter(|c| *c != 0) {
        // A plugin that explains itself (`status: "error"`) keeps its message, whatever its exit
        // status.
        if let Ok(response) = Response::parse(&o.stdout, o.stdout.len().max(1)) {
            if response.protocol == PROTOCOL_VERSION && response.status == ResponseStatus::Error {
                let msg = format!(
                    "{} (exit status {code})",
                    response
                        .message
                        .as_deref()
                        .unwrap_or("the plugin reported an error")
                );
                result.response = Some(response);
                return Err(plugin_failure(result.clone(), "plugin-error", msg));
            }
        }
        return Err(plugin_failure(
            r,
            "plugin-exit",
            format!("the plugin exited with status {code}"),
        ));
    }
    let response = Response::parse(&o.stdout, o.stdout.len().max(1)).map_err(|e| {
        plugin_failure(
            r.clone(),
            "plugin-protocol",
            format!("stdout is not one protocol response: {e}"),
        )
    })?;
    if response.protocol != PROTOCOL_VERSION {
        return Err(plugin_failure(
            r,
            "plugin-protocol",
            format!(
                "response protocol {:?} is not {PROTOCOL_VERSION}",
                response.protocol
            ),
        ));
    }
    result.response = Some(response.clone());
    if response.status == ResponseStatus::Error {
        let msg = response
            .message
            .clone()
            .unwrap_or_else(|| "the plugin reported an error".into());
        return Err(plugin_failure(result.clone(), "plugin-error", msg));
    }
    Ok(())
}
