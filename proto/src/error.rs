//! Error kinds, exit codes and the error object every tool prints on failure.
//!
//! [`Kind`] is the catalogue of docs/errors.md as a type: every kind any tool can print, each with
//! the one exit code it always has (docs/design.md "Errors and exit codes"). A tool's typed errors
//! name their kind ([`ToErrorObject::kind`]); the exit code comes from the kind, never from the
//! error, so one kind cannot exit two ways.

use crate::result::RunResult;
use serde::{Deserialize, Serialize};

/// The exit codes (docs/design.md "Errors and exit codes").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    Success = 0,
    /// A trust, consent, policy or containment check failed; nothing of the plugin's ran and nothing
    /// was changed.
    Refused = 1,
    /// Usage or malformed input.
    Usage = 2,
    /// The plugin ran and failed; nothing committed.
    PluginFailed = 3,
    /// State retained for the operator.
    Retained = 4,
    /// System error (I/O, kernel).
    System = 5,
    /// Cancelled by a signal (SIGTERM, SIGINT, SIGHUP): after cleaning up, the tool ends by that
    /// signal itself, so its parent sees it killed by the signal (a shell's `$?` is 128 + the
    /// signal's number: 143, 130, 129). 128 is only the base, the status of a tool that could not.
    Cancelled = 128,
}

impl ExitCode {
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// As docs/errors.md writes it: the number, or `128+N` for [`ExitCode::Cancelled`].
impl std::fmt::Display for ExitCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExitCode::Cancelled => f.write_str("128+N"),
            c => write!(f, "{}", c.code()),
        }
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(c: ExitCode) -> Self {
        std::process::ExitCode::from(c.code())
    }
}

/// Declares [`Kind`] from one table: variant, the string printed as `error`, and its exit code.
/// The table is the only place a kind's exit code is written; `Kind::ALL` and the exhaustive
/// `exit_code` and `as_str` are made from it, so no kind can be missing from any of them.
macro_rules! kinds {
    ($($(#[$doc:meta])* $variant:ident = $name:literal => $code:ident,)*) => {
        /// Every error kind a dot tool can print (the `error` member of the error object, the `kind`
        /// of a result's warning). Serialized as its kebab-case name, e.g. `entry-missing`; docs/errors.md
        /// has one row for each, with its cause and fix.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum Kind {
            $($(#[$doc])* $variant,)*
        }

        impl Kind {
            /// Every kind, in catalogue order.
            pub const ALL: &'static [Kind] = &[$(Kind::$variant,)*];

            /// The exit code of a tool that fails with this kind.
            pub const fn exit_code(self) -> ExitCode {
                match self {
                    $(Kind::$variant => ExitCode::$code,)*
                }
            }

            /// The kind's name, as printed.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Kind::$variant => $name,)*
                }
            }
        }
    };
}

kinds! {
    // Every tool.
    Usage = "usage" => Usage,
    Io = "io" => System,
    ResultUnwritten = "result-unwritten" => System,
    // A registry entry, its signature, its publisher, the root and the executable: the `verify` library's
    // checks, reported alike by dot-verify, dot-register and dot-launch.
    BadName = "bad-name" => Usage,
    EntryMissing = "entry-missing" => Refused,
    EntryMasked = "entry-masked" => Refused,
    EntryMalformed = "entry-malformed" => Usage,
    EntryNameMismatch = "entry-name-mismatch" => Refused,
    RootMissing = "root-missing" => Refused,
    RootUnsafe = "root-unsafe" => Refused,
    RegistryReadOnly = "registry-read-only" => Refused,
    RootNotDev = "root-not-dev" => Refused,
    SignatureMissing = "signature-missing" => Refused,
    SignatureInvalid = "signature-invalid" => Refused,
    PubkeyMalformed = "pubkey-malformed" => Usage,
    PublisherUnknown = "publisher-unknown" => Refused,
    PublisherMalformed = "publisher-malformed" => Usage,
    PublisherRevoked = "publisher-revoked" => Refused,
    KeyRevoked = "key-revoked" => Refused,
    ThresholdNotMet = "threshold-not-met" => Refused,
    LevelNeedsProcess = "level-needs-process" => Refused,
    NameNotDelegated = "name-not-delegated" => Refused,
    KeyNotValid = "key-not-valid" => Refused,
    SignatureTimeMissing = "signature-time-missing" => Refused,
    SignatureTooOld = "signature-too-old" => Refused,
    EntryExpired = "entry-expired" => Refused,
    KeyUnknown = "key-unknown" => Refused,
    LocalEntryNotDev = "local-entry-not-dev" => Refused,
    LocalEntryInAdd = "local-entry-in-add" => Refused,
    EntryExists = "entry-exists" => Refused,
    Downgrade = "downgrade" => Refused,
    ChangesNeedConsent = "changes-need-consent" => Refused,
    TransitionMissing = "transition-missing" => Refused,
    TransitionInvalid = "transition-invalid" => Refused,
    Denied = "denied" => Refused,
    TrustMalformed = "trust-malformed" => Usage,
    TooLarge = "too-large" => Refused,
    DynamicNotGranted = "dynamic-not-granted" => Refused,
    ExeSymlink = "exe-symlink" => Refused,
    ExeNotRegular = "exe-not-regular" => Refused,
    ExeUnknownFormat = "exe-unknown-format" => Refused,
    DocumentNotRegular = "document-not-regular" => Usage,
    FileMissing = "file-missing" => Usage,
    ExeSetid = "exe-setid" => Refused,
    ExeUnsafeOwner = "exe-unsafe-owner" => Refused,
    SizeMismatch = "size-mismatch" => Refused,
    DigestMismatch = "digest-mismatch" => Refused,
    StoreTampered = "store-tampered" => Refused,
    ExecSealUnavailable = "exec-seal-unavailable" => Refused,
    ExecUnconfirmed = "exec-unconfirmed" => System,
    NotStaticElf = "not-static-elf" => Refused,
    ExeWxSegment = "exe-wx-segment" => Refused,
    // dot-launch.
    ConsentMissing = "consent-missing" => Refused,
    ConsentMismatch = "consent-mismatch" => Refused,
    ProcessUnsupported = "process-unsupported" => Refused,
    SandboxUnusable = "sandbox-unusable" => Refused,
    InputUndeclared = "input-undeclared" => Refused,
    InputMissing = "input-missing" => Usage,
    InputKind = "input-kind" => Usage,
    InputTwice = "input-twice" => Usage,
    InputSyntax = "input-syntax" => Usage,
    EnvUndeclared = "env-undeclared" => Refused,
    EnvInvalid = "env-invalid" => Usage,
    InputFileUnsafe = "input-file-unsafe" => Refused,
    InputFileSensitive = "input-file-sensitive" => Refused,
    RequestInvalid = "request-invalid" => Usage,
    ProtocolUnsupported = "protocol-unsupported" => Refused,
    TargetInvalid = "target-invalid" => Usage,
    TargetPending = "target-pending" => Retained,
    LimitAboveEntry = "limit-above-entry" => Usage,
    PluginExit = "plugin-exit" => PluginFailed,
    PluginSignal = "plugin-signal" => PluginFailed,
    Deadline = "deadline" => PluginFailed,
    StdoutLimit = "stdout-limit" => PluginFailed,
    StderrLimit = "stderr-limit" => PluginFailed,
    CpuLimit = "cpu-limit" => PluginFailed,
    FileSizeLimit = "file-size-limit" => PluginFailed,
    PluginProtocol = "plugin-protocol" => PluginFailed,
    PluginError = "plugin-error" => PluginFailed,
    OutputsInvalid = "outputs-invalid" => PluginFailed,
    TargetConflict = "target-conflict" => PluginFailed,
    SandboxNoReport = "sandbox-no-report" => PluginFailed,
    SandboxRefused = "sandbox-refused" => Refused,
    RunRetained = "run-retained" => Retained,
    CleanupRetained = "cleanup-retained" => Retained,
    NoSuchRun = "no-such-run" => Usage,
    Cancelled = "cancelled" => Cancelled,
    // dot-reap (and a launch's reap).
    BadPgid = "bad-pgid" => Usage,
    BadLeader = "bad-leader" => Usage,
    ReapSurvivors = "reap-survivors" => System,
    // `txn/` and journals: dot-discard, dot-journal-fmt, `dot-launch recover`.
    NotARoot = "not-a-root" => Usage,
    UnsafeTxn = "unsafe-txn" => Refused,
    NoJournal = "no-journal" => Usage,
    NotAJournal = "not-a-journal" => Usage,
    AuditLogMalformed = "audit-log-malformed" => Usage,
    // dot-sandbox.
    BadReportFd = "bad-report-fd" => Refused,
    BadPluginPath = "bad-plugin-path" => Refused,
    BadPluginFd = "bad-plugin-fd" => Refused,
    BadLimit = "bad-limit" => Usage,
    ParentGone = "parent-gone" => Refused,
    LandlockUnsupported = "landlock-unsupported" => Refused,
    LandlockNotEnforced = "landlock-not-enforced" => Refused,
    UnsupportedPlatform = "unsupported-platform" => Refused,
    ParentDeathSignal = "parent-death-signal" => System,
    Rlimit = "rlimit" => System,
    Capabilities = "capabilities" => System,
    NoNewPrivs = "no-new-privs" => System,
    Landlock = "landlock" => System,
    Stage = "stage" => System,
    Identity = "identity" => Refused,
    Namespaces = "namespaces" => Refused,
    RuntimeUnresolved = "runtime-unresolved" => Refused,
    SeccompPolicy = "seccomp-policy" => System,
    SeccompInstall = "seccomp-install" => System,
    Signals = "signals" => System,
    Cloexec = "cloexec" => System,
    Report = "report" => System,
    Exec = "exec" => System,
    CanaryMissing = "canary-missing" => Refused,
    RunnerMissing = "runner-missing" => Refused,
    UnknownProbe = "unknown-probe" => Usage,
    Harness = "harness" => System,
    // dot-bench (`make bench` only; not installed).
    CommandFailed = "command-failed" => System,
    Malformed = "malformed" => Usage,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Kind {
    type Err = UnknownKind;
    fn from_str(s: &str) -> Result<Kind, UnknownKind> {
        Kind::ALL
            .iter()
            .copied()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownKind(s.to_owned()))
    }
}

/// A string that names no [`Kind`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an error kind")]
pub struct UnknownKind(pub String);

/// `{"error":"KIND","message":"…", …details}`, printed as one line on stderr.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorObject {
    pub error: Kind,
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
    /// The command that resolves it, where one exists: a POSIX `sh` command line, quoted
    /// (docs/errors.md, "next"; `crate::next`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// `next` as an argument vector, when it is one command runnable as printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_argv: Option<Vec<String>>,
    /// For `changes-need-consent`: the exact widening that needs `--accept-changes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Box<crate::trust::Changes>>,
    /// For a plugin failure: the same fields as a successful run's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<Box<RunResult>>,
    /// For `cancelled`: the signal that cancelled the tool, by its name (`SIGTERM`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// For `next`: the failed command line changed this way, which only the tool's `main` can
    /// resolve (`crate::cli`); never printed.
    #[serde(skip)]
    pub again: Option<crate::next::Again>,
}

impl ErrorObject {
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        ErrorObject {
            error: kind,
            message: message.into(),
            field: None,
            path: None,
            value: None,
            next: None,
            next_argv: None,
            changes: None,
            run: None,
            signal: None,
            again: None,
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

    /// The command that resolves the error (`next`, `next_argv`).
    pub fn next(mut self, n: &crate::next::Next) -> Self {
        self.next = Some(n.text());
        self.next_argv = n.argv();
        self.again = n.again_changes().cloned();
        self
    }

    /// Says in the message what to put in place of `next`'s placeholders (`what`: "FILE is the
    /// publisher's public key file"), when `next` has any: such a `next` has no `next_argv`
    /// and runs only once they are filled in.
    pub fn supply(mut self, what: &str) -> Self {
        let template = self.next_argv.is_none()
            && self.next.as_deref().is_some_and(|n| {
                n.split(' ')
                    .any(|w| w != "&&" && crate::next::RAW_WORDS.contains(&w))
            });
        if template {
            self.message = format!("{}; in next, {what}", self.message);
        }
        self
    }

    /// `next` for the command line `typed` (program first, as the tool was run) when the error
    /// asks for the failed command again: every typed argument kept, the options changed.
    pub fn resolve_again(&mut self, typed: &[std::ffi::OsString]) {
        if let Some(again) = self.again.take() {
            let argv = crate::next::apply(typed, &again);
            self.next = Some(crate::next::join(&argv));
            self.next_argv = crate::next::utf8(&argv);
        }
    }

    /// The exit code of a tool that prints this object: its kind's.
    pub fn exit_code(&self) -> ExitCode {
        self.error.exit_code()
    }

    /// The single line printed on stderr.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self)
            .unwrap_or_else(|_| format!("{{\"error\":\"{}\"}}", self.error.as_str()))
    }
}

/// A typed error that knows its kind and its error object. Its exit code is its kind's
/// ([`Kind::exit_code`]).
pub trait ToErrorObject: std::fmt::Display {
    /// The kind, e.g. [`Kind::DigestMismatch`].
    fn kind(&self) -> Kind;
    /// The error object; the default carries kind and message only.
    fn to_error_object(&self) -> ErrorObject {
        ErrorObject::new(self.kind(), self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_prints_as_its_name_and_parses_back() {
        for &k in Kind::ALL {
            let json = serde_json::to_string(&k).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", k.as_str()), "{k:?}");
            assert_eq!(serde_json::from_str::<Kind>(&json).ok(), Some(k));
            assert_eq!(k.as_str().parse::<Kind>(), Ok(k));
        }
        assert!("no-such-kind".parse::<Kind>().is_err());
        assert!(serde_json::from_str::<Kind>("\"no-such-kind\"").is_err());
    }

    #[test]
    fn kinds_are_unique_and_never_exit_zero() {
        let names: std::collections::BTreeSet<&str> =
            Kind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), Kind::ALL.len());
        assert!(Kind::ALL.iter().all(|k| k.exit_code() != ExitCode::Success));
    }

    #[test]
    fn an_error_object_with_an_unknown_kind_is_refused() {
        let line = r#"{"error":"not-a-kind","message":"m"}"#;
        assert!(serde_json::from_str::<ErrorObject>(line).is_err());
        let obj: ErrorObject = serde_json::from_str(r#"{"error":"digest-mismatch","message":"m"}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (obj.error, obj.exit_code()),
            (Kind::DigestMismatch, ExitCode::Refused)
        );
    }
}
