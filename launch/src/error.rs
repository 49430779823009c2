//! Every way a launch or a recover can fail, each mapped to one kind and one exit code.

use crate::judge::PluginFailure;
use crate::rundir::NotRemoved;
use cli::next::Opt;
use cli::Next;
use proto::protocol::Response;
use proto::result::{RunResult, RunStatus};
use proto::{Containment, ErrorObject, Kind, ToErrorObject};
use std::path::PathBuf;

/// Why `dot-launch` stopped.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("usage: {0}")]
    Usage(String),
    #[error("bad plugin name: {0}")]
    BadName(#[from] proto::NameError),
    #[error(transparent)]
    Verify(#[from] verify::VerifyError),
    #[error("{name} requires {containment} containment; consent with {flag}")]
    ConsentMissing {
        name: String,
        containment: Containment,
        flag: &'static str,
        next: Next,
    },
    #[error("{name} requires {containment} containment, but {given} was given; {containment} needs exactly {flag}{}", no_sandbox_note(.next))]
    ConsentMismatch {
        name: String,
        containment: Containment,
        given: &'static str,
        flag: &'static str,
        /// None when the entry is `audit` and `--require-process-sandbox` was given: no command
        /// drops a requirement of the sandbox.
        next: Option<Next>,
    },
    #[error("{above}")]
    LimitAboveEntry {
        above: proto::limits::AboveEntry,
        next: Next,
    },
    #[error("process containment cannot be enforced here: {why}")]
    ProcessUnsupported { why: String },
    #[error("the sibling runner {path} is unusable: {why}")]
    SandboxUnusable { path: PathBuf, why: String },
    #[error("input {key:?} is not declared by the entry")]
    InputUndeclared { key: String },
    #[error("required input {key:?} is missing")]
    InputMissing { key: String },
    #[error("input {key:?} is declared as a {expected} input; pass it with {flag}")]
    InputKind {
        key: String,
        expected: proto::InputKind,
        flag: &'static str,
    },
    #[error("input {key:?} given twice")]
    InputTwice { key: String },
    #[error("{arg:?} is not KEY=VALUE: {why}")]
    InputSyntax { arg: String, why: &'static str },
    #[error("--env {name}: the entry declares no such environment name (it declares {declared})")]
    EnvUndeclared { name: String, declared: String },
    #[error("--env {name}: {why}")]
    EnvInvalid { name: String, why: String },
    #[error("file input {key:?} ({path}) {why}")]
    InputFileUnsafe {
        key: String,
        path: PathBuf,
        why: String,
    },
    #[error("{0}")]
    InputFileSensitive(Box<SensitiveInput>),
    #[error("request {path}: {why}")]
    Request { path: String, why: String },
    #[error("the entry accepts protocol {req:?}, which excludes this launcher's protocol {ours}")]
    ProtocolUnsupported { req: String, ours: &'static str },
    #[error("target {path}: {why}")]
    Target { path: PathBuf, why: String },
    #[error("target {target} has run {txid} PREPARED and not finished: nothing else commits there until it is recovered")]
    TargetPending {
        target: PathBuf,
        txid: String,
        next: Next,
    },
    #[error("{step}: {path}: {source}")]
    Io {
        step: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// The plugin ran and failed; `run` is its result, `status: "failed"`; `next`, when its
    /// stderr was discarded, the same launch with `--stderr tail` ([`LaunchError::see_stderr`]).
    #[error("{failure}")]
    Plugin {
        failure: PluginFailure,
        run: Box<RunResult>,
        next: Option<Next>,
    },
    #[error("dot-sandbox refused to run the plugin: {}", .error.message)]
    SandboxRefused {
        error: Box<ErrorObject>,
        run: Box<RunResult>,
    },
    #[error("run {txid} is retained for the operator: {why}")]
    Retained {
        txid: String,
        why: String,
        next: Next,
    },
    #[error(transparent)]
    Reap(#[from] reap::ReapError),
    #[error("run {txid} was not found under {path}")]
    NoSuchRun { txid: String, path: PathBuf },
    #[error("the plugin's executable was read-leased for {held_ms} ms before it was executed, not less than the kernel's lease break time of {break_ms} ms: that the bytes executed were the bytes digested cannot be confirmed")]
    ExecUnconfirmed { held_ms: u64, break_ms: u64 },
    /// A run that ended (failed: `cause`; or committed, reported as a warning of the result) but
    /// whose directory could not be removed: it stays for the operator.
    #[error("{}{retained}", cause_prefix(.cause))]
    CleanupRetained {
        retained: NotRemoved,
        cause: Option<Box<LaunchError>>,
    },
    /// SIGTERM, SIGINT or SIGHUP ended the launch (or `recover`) before PREPARED: everything it
    /// made is gone (`crate::cancel`).
    #[error("cancelled by {} {during}", .signal.as_str())]
    Cancelled {
        signal: nix::sys::signal::Signal,
        during: crate::cancel::During,
    },
    /// `txn/` itself refused (missing, unsafe, unreadable), as `dot-discard` refuses it.
    #[error(transparent)]
    Txn(#[from] txn::TxnError),
}

/// `CAUSE; ` before a retained run's message, when a failure ended the run.
fn cause_prefix(cause: &Option<Box<LaunchError>>) -> String {
    cause.as_ref().map(|c| format!("{c}; ")).unwrap_or_default()
}

/// A file input on the sensitive list (`input-file-sensitive`).
#[derive(Debug, thiserror::Error)]
#[error("file input {key:?} ({}) is {} ({pattern}), on the sensitive list: it would be read with dot-launch's rights (uid {uid}) and handed to the plugin; pass --allow-sensitive-input {key} to read it anyway", .path.display(), .resolved.display())]
pub struct SensitiveInput {
    pub key: String,
    pub path: PathBuf,
    /// The file the path resolved to (the opened descriptor's).
    pub resolved: PathBuf,
    /// The sensitive-path pattern it matched.
    pub pattern: String,
    pub uid: u32,
    /// The launch again with `--allow-sensitive-input KEY` (set by the caller).
    pub next: Option<Next>,
}

/// Why a consent mismatch offers no command, when it does not: the invoker required the sandbox.
fn no_sandbox_note(next: &Option<Next>) -> &'static str {
    match next {
        Some(_) => "",
        None => {
            "; it would run without the process sandbox you required, which only you can decide, \
             so no command is offered"
        }
    }
}

impl LaunchError {
    /// The plugin's `failure`, with the run's result marked failed and carrying the failure's
    /// message (and, for `plugin-error`, the plugin's own response).
    pub fn plugin(mut run: RunResult, failure: PluginFailure) -> LaunchError {
        run.status = RunStatus::Failed;
        run.failure = Some(failure.to_string());
        if let PluginFailure::Error { response, .. } = &failure {
            run.response = Some(Response::clone(response));
        }
        LaunchError::Plugin {
            failure,
            run: Box::new(run),
            next: None,
        }
    }

    /// A plugin failure whose stderr may explain it, when the launch discarded that stderr, with
    /// `next`: the same launch, every argument kept, with `--stderr tail` (the failure's
    /// `run.stderr_tail` then holds stderr's last 4 KiB). `base` is the launch as the library can
    /// rebuild it (`Options::command` and the name); `dot-launch`'s main resolves the command
    /// line as typed. Any other error is returned as it is.
    pub fn see_stderr(self, stderr: crate::exec::StderrMode, base: Next) -> LaunchError {
        match self {
            LaunchError::Plugin {
                failure,
                run,
                next: None,
            } if stderr == crate::exec::StderrMode::Discard && failure.stderr_may_explain() => {
                let next = Next::again(
                    vec![Opt::with("--stderr", "tail")],
                    vec![],
                    base.arg("--stderr").arg("tail"),
                );
                LaunchError::Plugin {
                    failure,
                    run,
                    next: Some(next),
                }
            }
            other => other,
        }
    }

    pub(crate) fn io(step: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        LaunchError::Io {
            step,
            path: path.into(),
            source,
        }
    }
}

impl ToErrorObject for LaunchError {
    fn kind(&self) -> Kind {
        match self {
            LaunchError::Usage(_) => Kind::Usage,
            LaunchError::BadName(_) => Kind::BadName,
            LaunchError::Verify(e) => e.kind(),
            LaunchError::ConsentMissing { .. } => Kind::ConsentMissing,
            LaunchError::ConsentMismatch { .. } => Kind::ConsentMismatch,
            LaunchError::ProcessUnsupported { .. } => Kind::ProcessUnsupported,
            LaunchError::LimitAboveEntry { .. } => Kind::LimitAboveEntry,
            LaunchError::SandboxUnusable { .. } => Kind::SandboxUnusable,
            LaunchError::InputUndeclared { .. } => Kind::InputUndeclared,
            LaunchError::InputMissing { .. } => Kind::InputMissing,
            LaunchError::InputKind { .. } => Kind::InputKind,
            LaunchError::InputTwice { .. } => Kind::InputTwice,
            LaunchError::InputSyntax { .. } => Kind::InputSyntax,
            LaunchError::EnvUndeclared { .. } => Kind::EnvUndeclared,
            LaunchError::EnvInvalid { .. } => Kind::EnvInvalid,
            LaunchError::InputFileUnsafe { .. } => Kind::InputFileUnsafe,
            LaunchError::InputFileSensitive(_) => Kind::InputFileSensitive,
            LaunchError::Request { .. } => Kind::RequestInvalid,
            LaunchError::ProtocolUnsupported { .. } => Kind::ProtocolUnsupported,
            LaunchError::Target { .. } => Kind::TargetInvalid,
            LaunchError::TargetPending { .. } => Kind::TargetPending,
            LaunchError::Io { .. } => Kind::Io,
            LaunchError::Plugin { failure, .. } => failure.kind(),
            LaunchError::SandboxRefused { .. } => Kind::SandboxRefused,
            LaunchError::NoSuchRun { .. } => Kind::NoSuchRun,
            LaunchError::ExecUnconfirmed { .. } => Kind::ExecUnconfirmed,
            LaunchError::Retained { .. } => Kind::RunRetained,
            LaunchError::CleanupRetained { .. } => Kind::CleanupRetained,
            LaunchError::Reap(e) => e.kind(),
            LaunchError::Txn(e) => e.kind(),
            LaunchError::Cancelled { .. } => Kind::Cancelled,
        }
    }

    fn to_error_object(&self) -> ErrorObject {
        let base = ErrorObject::new(self.kind(), self.to_string());
        match self {
            LaunchError::Verify(e) => e.to_error_object(),
            LaunchError::Reap(e) => e.to_error_object(),
            LaunchError::Txn(e) => cli::next::or_init_root(e.to_error_object(), e.missing_root()),
            LaunchError::CleanupRetained { retained, cause } => {
                let base = base.path(&retained.path);
                match cause {
                    None => base,
                    Some(c) => {
                        let inner = c.to_error_object();
                        ErrorObject {
                            value: Some(inner.error.to_string()),
                            run: inner.run,
                            ..base
                        }
                    }
                }
            }
            LaunchError::Retained { txid, next, .. } => base.value(txid.clone()).next(next),
            LaunchError::TargetPending { target, txid, next } => base
                .field("target")
                .path(target)
                .value(txid.clone())
                .next(next),
            LaunchError::ConsentMissing { next, .. } => base.field("containment").next(next),
            LaunchError::ConsentMismatch { next, .. } => match next {
                Some(next) => base.field("containment").next(next),
                None => base.field("containment"),
            },
            LaunchError::Usage(_) => base.next(&Next::cmd("dot-launch").arg("--help")),
            LaunchError::LimitAboveEntry { above, next } => base
                .field(above.limit.option)
                .value(above.asked.to_string())
                .next(next),
            LaunchError::ProcessUnsupported { .. } => base
                .field("containment")
                .value("process")
                .next(&Next::cmd("dot-sandbox").arg("probe")),
            LaunchError::NoSuchRun { txid, path } => {
                let root = path.parent().unwrap_or(path);
                base.value(txid.clone())
                    .path(path)
                    .next(&Next::cmd("dot-journal-fmt").arg("--root").arg(root))
            }
            LaunchError::SandboxUnusable { path, .. } => base.path(path),
            LaunchError::InputUndeclared { key }
            | LaunchError::InputMissing { key }
            | LaunchError::InputKind { key, .. }
            | LaunchError::InputTwice { key } => base.field("inputs").value(key.clone()),
            LaunchError::InputSyntax { arg, .. } => base.value(arg.clone()),
            LaunchError::EnvUndeclared { name, .. } | LaunchError::EnvInvalid { name, .. } => {
                base.field("env").value(name.clone())
            }
            LaunchError::InputFileUnsafe { key, path, .. } => {
                base.field("inputs").value(key.clone()).path(path)
            }
            LaunchError::InputFileSensitive(s) => {
                let base = base.field("inputs").value(s.key.clone()).path(&s.resolved);
                match &s.next {
                    Some(n) => base.next(n),
                    None => base,
                }
            }
            LaunchError::Request { path, .. } => base.path(path),
            LaunchError::ProtocolUnsupported { req, .. } => {
                base.field("protocol").value(req.clone())
            }
            LaunchError::Target { path, .. } => {
                let base = base.field("target").path(path);
                match std::fs::symlink_metadata(path) {
                    // A path that is not UTF-8 is refused whether it exists or not.
                    Err(_) if path.to_str().is_some() => {
                        base.next(&Next::cmd("mkdir").arg("-p").arg(path))
                    }
                    Err(_) => base,
                    Ok(_) => base,
                }
            }
            LaunchError::Io { path, .. } => base.path(path),
            LaunchError::Cancelled { signal, .. } => ErrorObject {
                signal: Some(signal.as_str().to_owned()),
                ..base
            },
            LaunchError::Plugin { run, next, failure } => {
                let mut base = ErrorObject {
                    run: Some(run.clone()),
                    ..base
                };
                if let Some(stdout) = failure.stdout() {
                    base = base.field("stdout").value(stdout.text.clone());
                }
                if let PluginFailure::OtherProtocol(version) = failure {
                    base = base.field("protocol").value(version.clone());
                }
                match next {
                    Some(n) => base.next(n),
                    None => base,
                }
            }
            LaunchError::SandboxRefused { error, run } => ErrorObject {
                run: Some(run.clone()),
                value: Some(error.error.to_string()),
                ..base
            },
            _ => base,
        }
    }
}
