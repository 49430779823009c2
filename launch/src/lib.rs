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
//! 8. on success commit the outputs (PREPARED, renames, COMMITTED) and remove the run directory
#![forbid(unsafe_code)]

pub mod cli;
pub mod commit;
pub mod error;
pub mod exec;
pub mod hooks;
pub mod inputs;
pub mod recover;
pub mod rundir;

pub use error::LaunchError;

use exec::{Limits, Runner};
use proto::journal::{Record, RECORD_VERSION};
use proto::layout::Root;
use proto::protocol::{protocol_version, Response, ResponseStatus, PROTOCOL_VERSION};
use proto::result::{ExitStatus, RunResult, RunStatus, SandboxReport};
use proto::{Containment, Entry, Name};
use rundir::{now_ms, RunDir};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

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

/// The target directory: must exist and be a directory; returned absolute.
fn check_target(target: &Path) -> Result<PathBuf, LaunchError> {
    let abs = std::fs::canonicalize(target).map_err(|e| LaunchError::Target {
        path: target.to_path_buf(),
        why: e.to_string(),
    })?;
    let meta = std::fs::metadata(&abs).map_err(|e| LaunchError::Target {
        path: abs.clone(),
        why: e.to_string(),
    })?;
    if !meta.is_dir() {
        return Err(LaunchError::Target {
            path: abs,
            why: "is not a directory".into(),
        });
    }
    // The PREPARED record names the target as text: a path that is not UTF-8 could not be
    // recovered after an interruption.
    if abs.to_str().is_none() {
        return Err(LaunchError::Target {
            path: abs,
            why: "is not valid UTF-8, and the journal must name the target exactly".into(),
        });
    }
    Ok(abs)
}

/// For `process`: the kernel must be able to enforce it, checked before anything is created.
fn check_process_support() -> Result<(), LaunchError> {
    let mut probe = sandbox::probe();
    if let Some(abi) = hooks::pretend_landlock_abi() {
        probe.landlock_abi = probe.landlock_abi.min(abi);
    }
    match sandbox::probe::why_not(&probe) {
        None => Ok(()),
        Some(why) => Err(LaunchError::ProcessUnsupported { why }),
    }
}

/// Opens the sibling `dot-sandbox` (the directory of the running dot-launch; never PATH) once and
/// validates the open inode: regular, no setuid/setgid, owned by root or us, not group/world writable.
fn open_runner() -> Result<Runner, LaunchError> {
    let exe = std::fs::read_link("/proc/self/exe")
        .map_err(|e| LaunchError::io("resolving /proc/self/exe", "/proc/self/exe", e))?;
    let path = exe
        .parent()
        .map(|d| d.join("dot-sandbox"))
        .unwrap_or_else(|| PathBuf::from("/dot-sandbox"));
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
    Ok(Runner { file })
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
    let target = check_target(&opts.target)?;
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

/// Runs one plugin to the end. `Ok` is a committed run; every failure is an `Err`.
pub fn launch(opts: &Options) -> Result<RunResult, LaunchError> {
    let root = Root::new(&opts.root);
    let name = Name::new(&opts.name)?;
    let decision = decide(&root, &name, opts);
    let mut audit = record_decision(&root, &name, &decision)?;
    let Decided {
        verified,
        inputs,
        target,
        runner,
    } = decision?;
    let entry = &verified.entry;
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
        let _ = run.remove();
        return Err(e);
    }
    let request = serde_json::to_vec(&inputs.request(entry)).unwrap_or_default();
    let observed = match exec::run(
        &verified.exe,
        runner.as_ref(),
        &run.stage(),
        entry.name.as_str(),
        &request,
        &opts.limits,
    ) {
        Ok(o) => o,
        Err(e) => {
            let _ = run.remove();
            return Err(e);
        }
    };
    // The decision is durable before the run can change anything durably or report.
    if let Some(Err(e)) = audit.as_mut().map(AuditSync::wait) {
        let _ = run.remove();
        return Err(e);
    }
    let mut result = RunResult {
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
    };
    if let Err(e) = judge(&observed, &mut result, opts.limits.deadline) {
        let _ = run.remove();
        return Err(e);
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
        run.remove_with(false)?;
        return Ok(result);
    }
    match commit::commit(&mut run, &target, &names, &opts.limits) {
        Ok(outputs) => {
            result.outputs = outputs;
            result.status = RunStatus::Committed;
            run.remove()?;
            Ok(result)
        }
        Err(commit::CommitError::Invalid(why)) => {
            let _ = run.remove();
            Err(plugin_failure(result, "outputs-invalid", why))
        }
        Err(commit::CommitError::Conflict(why)) => {
            let _ = run.remove();
            Err(plugin_failure(result, "target-conflict", why))
        }
        Err(commit::CommitError::Before(e)) => {
            let _ = run.remove();
            Err(e)
        }
        Err(commit::CommitError::After(e)) => Err(LaunchError::Retained {
            txid: run.txid.clone(),
            why: e.to_string(),
            next: format!(
                "dot-launch recover --root {} {}",
                opts.root.display(),
                run.txid
            ),
        }),
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
