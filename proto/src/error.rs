//! Exit codes and the error object every tool prints on failure.

use crate::result::RunResult;
use serde::{Deserialize, Serialize};

/// DESIGN.md's exit codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    Success = 0,
    /// A trust, consent, policy or containment check failed; nothing was spawned or changed.
    Refused = 1,
    /// Usage or malformed input.
    Usage = 2,
    /// The plugin ran and failed; nothing committed.
    PluginFailed = 3,
    /// State retained for the operator.
    Retained = 4,
    /// System error (I/O, kernel).
    System = 5,
}

impl ExitCode {
    pub fn code(self) -> u8 {
        self as u8
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(c: ExitCode) -> Self {
        std::process::ExitCode::from(c.code())
    }
}

/// `{"error":"KIND","message":"…", …details}`, printed as one line on stderr.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ErrorObject {
    pub error: String,
    pub message: String,
    /// The field of a document that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The file the error is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The offending value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The exact command that resolves it, where one exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// For `changes-need-consent`: the exact widening that needs `--accept-changes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Box<crate::trust::Changes>>,
    /// For a plugin failure: the same fields as a successful run's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<Box<RunResult>>,
}

impl ErrorObject {
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        ErrorObject {
            error: kind.into(),
            message: message.into(),
            ..Default::default()
        }
    }

    pub fn field(mut self, f: impl Into<String>) -> Self {
        self.field = Some(f.into());
        self
    }

    pub fn path(mut self, p: impl AsRef<std::path::Path>) -> Self {
        self.path = Some(p.as_ref().display().to_string());
        self
    }

    pub fn value(mut self, v: impl Into<String>) -> Self {
        self.value = Some(v.into());
        self
    }

    pub fn next(mut self, n: impl Into<String>) -> Self {
        self.next = Some(n.into());
        self
    }

    /// The single line printed on stderr.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| format!("{{\"error\":{:?}}}", self.error))
    }
}

/// A typed error that knows its kind string, its exit code and its error object.
pub trait ToErrorObject: std::fmt::Display {
    /// The `error` kind string, e.g. `digest-mismatch`.
    fn kind(&self) -> &'static str;
    /// The exit code this error maps to.
    fn exit_code(&self) -> ExitCode;
    /// The error object; the default carries kind and message only.
    fn to_error_object(&self) -> ErrorObject {
        ErrorObject::new(self.kind(), self.to_string())
    }
}
