//! Every way a launch or a recover can fail, each mapped to one kind and one exit code.

use crate::rundir::NotRemoved;
use proto::result::RunResult;
use proto::{Containment, ErrorObject, ExitCode, ToErrorObject};
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
        next: String,
    },
    #[error("{name} requires {containment} containment, but {given} was given; {containment} needs exactly {flag}")]
    ConsentMismatch {
        name: String,
        containment: Containment,
        given: &'static str,
        flag: &'static str,
        next: String,
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
    #[error("file input {key:?} ({path}) {why}")]
    InputFileUnsafe {
        key: String,
        path: PathBuf,
        why: String,
    },
    #[error("request {path}: {why}")]
    Request { path: String, why: String },
    #[error("the entry accepts protocol {req:?}, which excludes this launcher's protocol {ours}")]
    ProtocolUnsupported { req: String, ours: &'static str },
    #[error("target {path}: {why}")]
    Target { path: PathBuf, why: String },
    #[error("{step}: {path}: {source}")]
    Io {
        step: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{message}")]
    Plugin {
        kind: &'static str,
        message: String,
        run: Box<RunResult>,
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
        next: String,
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
    /// `txn/` itself refused (missing, unsafe, unreadable), as `dot-discard` refuses it.
    #[error(transparent)]
    Txn(#[from] discard::DiscardError),
}

/// `CAUSE; ` before a retained run's message, when a failure ended the run.
fn cause_prefix(cause: &Option<Box<LaunchError>>) -> String {
    cause.as_ref().map(|c| format!("{c}; ")).unwrap_or_default()
}

impl LaunchError {
    pub(crate) fn io(step: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        LaunchError::Io {
            step,
            path: path.into(),
            source,
        }
    }
}

impl ToErrorObject for LaunchError {
    fn kind(&self) -> &'static str {
        match self {
            LaunchError::Usage(_) => "usage",
            LaunchError::BadName(_) => "bad-name",
            LaunchError::Verify(e) => e.kind(),
            LaunchError::ConsentMissing { .. } => "consent-missing",
            LaunchError::ConsentMismatch { .. } => "consent-mismatch",
            LaunchError::ProcessUnsupported { .. } => "process-unsupported",
            LaunchError::SandboxUnusable { .. } => "sandbox-unusable",
            LaunchError::InputUndeclared { .. } => "input-undeclared",
            LaunchError::InputMissing { .. } => "input-missing",
            LaunchError::InputKind { .. } => "input-kind",
            LaunchError::InputTwice { .. } => "input-twice",
            LaunchError::InputSyntax { .. } => "input-syntax",
            LaunchError::InputFileUnsafe { .. } => "input-file-unsafe",
            LaunchError::Request { .. } => "request-invalid",
            LaunchError::ProtocolUnsupported { .. } => "protocol-unsupported",
            LaunchError::Target { .. } => "target-invalid",
            LaunchError::Io { .. } => "io",
            LaunchError::Plugin { kind, .. } => kind,
            LaunchError::SandboxRefused { .. } => "sandbox-refused",
            LaunchError::NoSuchRun { .. } => "no-such-run",
            LaunchError::ExecUnconfirmed { .. } => "exec-unconfirmed",
            LaunchError::Retained { .. } => "run-retained",
            LaunchError::CleanupRetained { .. } => "cleanup-retained",
            LaunchError::Reap(e) => e.kind(),
            LaunchError::Txn(e) => e.kind(),
        }
    }

    fn exit_code(&self) -> ExitCode {
        match self {
            LaunchError::Verify(e) => e.exit_code(),
            LaunchError::Usage(_)
            | LaunchError::BadName(_)
            | LaunchError::InputMissing { .. }
            | LaunchError::InputKind { .. }
            | LaunchError::InputTwice { .. }
            | LaunchError::InputSyntax { .. }
            | LaunchError::Request { .. }
            | LaunchError::Target { .. }
            | LaunchError::NoSuchRun { .. } => ExitCode::Usage,
            LaunchError::ConsentMissing { .. }
            | LaunchError::ConsentMismatch { .. }
            | LaunchError::ProcessUnsupported { .. }
            | LaunchError::SandboxUnusable { .. }
            | LaunchError::InputUndeclared { .. }
            | LaunchError::InputFileUnsafe { .. }
            | LaunchError::ProtocolUnsupported { .. }
            | LaunchError::SandboxRefused { .. } => ExitCode::Refused,
            LaunchError::Plugin { .. } => ExitCode::PluginFailed,
            LaunchError::Retained { .. } | LaunchError::CleanupRetained { .. } => {
                ExitCode::Retained
            }
            LaunchError::Reap(e) => e.exit_code(),
            LaunchError::Txn(e) => e.exit_code(),
            LaunchError::Io { .. } | LaunchError::ExecUnconfirmed { .. } => ExitCode::System,
        }
    }

    fn to_error_object(&self) -> ErrorObject {
        let base = ErrorObject::new(self.kind(), self.to_string());
        match self {
            LaunchError::Verify(e) => e.to_error_object(),
            LaunchError::Reap(e) => e.to_error_object(),
            LaunchError::Txn(e) => e.to_error_object(),
            LaunchError::CleanupRetained { retained, cause } => {
                let base = base.path(&retained.path);
                match cause {
                    None => base,
                    Some(c) => {
                        let inner = c.to_error_object();
                        ErrorObject {
                            value: Some(inner.error),
                            run: inner.run,
                            ..base
                        }
                    }
                }
            }
            LaunchError::Retained { txid, next, .. } => base.value(txid.clone()).next(next.clone()),
            LaunchError::ConsentMissing { next, .. }
            | LaunchError::ConsentMismatch { next, .. } => {
                base.field("containment").next(next.clone())
            }
            LaunchError::Usage(_) => base.next("dot-launch --help"),
            LaunchError::ProcessUnsupported { .. } => base
                .field("containment")
                .value("process")
                .next("dot-sandbox probe"),
            LaunchError::NoSuchRun { txid, path } => {
                let root = path.parent().unwrap_or(path);
                base.value(txid.clone())
                    .path(path)
                    .next(format!("dot-journal-fmt --root {}", root.display()))
            }
            LaunchError::SandboxUnusable { path, .. } => base.path(path),
            LaunchError::InputUndeclared { key }
            | LaunchError::InputMissing { key }
            | LaunchError::InputKind { key, .. }
            | LaunchError::InputTwice { key } => base.field("inputs").value(key.clone()),
            LaunchError::InputSyntax { arg, .. } => base.value(arg.clone()),
            LaunchError::InputFileUnsafe { key, path, .. } => {
                base.field("inputs").value(key.clone()).path(path)
            }
            LaunchError::Request { path, .. } => base.path(path),
            LaunchError::ProtocolUnsupported { req, .. } => {
                base.field("protocol").value(req.clone())
            }
            LaunchError::Target { path, .. } => {
                let base = base.field("target").path(path);
                match std::fs::symlink_metadata(path) {
                    Err(_) => base.next(format!("mkdir -p {}", path.display())),
                    Ok(_) => base,
                }
            }
            LaunchError::Io { path, .. } => base.path(path),
            LaunchError::Plugin { run, .. } => ErrorObject {
                run: Some(run.clone()),
                ..base
            },
            LaunchError::SandboxRefused { error, run } => ErrorObject {
                run: Some(run.clone()),
                value: Some(error.error.clone()),
                ..base
            },
            _ => base,
        }
    }
}
