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

/// What a tool's error kind is to the code that prints it: its name, its one exit code, and the
/// two kinds the command-line layer itself reports for every tool (`usage`, `result-unwritten`).
/// [`Kind`] is the catalogue of the installed tools; a tool outside it (dot-bench) declares its own
/// with [`kinds!`](crate::kinds).
pub trait ErrorKind: Copy + Eq + std::fmt::Debug + std::fmt::Display + Serialize + 'static {
    /// A command line that does not parse (exit 2).
    const USAGE: Self;
    /// The tool finished but its result could not be written to stdout (exit 5).
    const RESULT_UNWRITTEN: Self;
    /// The exit code of a tool that fails with this kind.
    fn exit_code(self) -> ExitCode;
    /// The kind's name, as printed.
    fn as_str(self) -> &'static str;
}

/// Declares an error-kind enum from one table: variant, the string printed as `error`, and its
/// exit code. The table is the only place a kind's exit code is written; `ALL` and the exhaustive
/// `exit_code` and `as_str` are made from it, so no kind can be missing from any of them. The
/// table must hold `Usage` and `ResultUnwritten` (what the command-line layer reports for every
/// tool). The kind serializes as its name and parses back only from a name of the table.
#[macro_export]
macro_rules! kinds {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$doc:meta])* $variant:ident = $str:literal => $code:ident,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis enum $name {
            $($(#[$doc])* $variant,)*
        }

        impl $name {
            /// Every kind, in catalogue order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The exit code of a tool that fails with this kind.
            pub const fn exit_code(self) -> $crate::error::ExitCode {
                match self {
                    $($name::$variant => $crate::error::ExitCode::$code,)*
                }
            }

            /// The kind's name, as printed.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $str,)*
                }
            }
        }

        impl $crate::error::ErrorKind for $name {
            const USAGE: Self = $name::Usage;
            const RESULT_UNWRITTEN: Self = $name::ResultUnwritten;
            fn exit_code(self) -> $crate::error::ExitCode {
                $name::exit_code(self)
            }
            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::error::UnknownKind;
            fn from_str(s: &str) -> ::std::result::Result<$name, $crate::error::UnknownKind> {
                $name::ALL
                    .iter()
                    .copied()
                    .find(|k| k.as_str() == s)
                    .ok_or_else(|| $crate::error::UnknownKind(s.to_owned()))
            }
        }

        impl $crate::__serde::Serialize for $name {
            fn serialize<S: $crate::__serde::Serializer>(
                &self,
                s: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> $crate::__serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::__serde::Deserializer<'de>>(
                d: D,
            ) -> ::std::result::Result<$name, D::Error> {
                let s = <::std::string::String as $crate::__serde::Deserialize>::deserialize(d)?;
                s.parse().map_err(<D::Error as $crate::__serde::de::Error>::custom)
            }
        }
    };
}

kinds! {
    /// Every error kind a dot tool can print (the `error` member of the error object, the `kind`
    /// of a result's warning), e.g. `entry-missing`; docs/errors.md has one row for each, with its
    /// cause and fix.
    pub enum Kind {
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
        SignatureTimeFuture = "signature-time-future" => Refused,
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
        RuntimeUnsafe = "runtime-unsafe" => Refused,
        RuntimeNotAllowed = "runtime-not-allowed" => Refused,
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
    }
}

/// A string that names no [`Kind`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an error kind")]
pub struct UnknownKind(pub String);

/// `{"error":"KIND","message":"…", …details}`, printed as one line on stderr. `K` is the kind's
/// type: [`Kind`], the catalogue, for every installed tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorObject<K = Kind> {
    pub error: K,
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
    /// (docs/errors.md, "next"; [`NextCommand`]).
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
    /// resolve (the command-line layer, `cli`); never printed.
    #[serde(skip)]
    pub again: Option<Again>,
}

/// An option the failed command needs (with its value, if it takes one), or must lose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opt {
    pub name: &'static str,
    pub value: Option<std::ffi::OsString>,
}

impl Opt {
    /// A flag without a value (`--replace`).
    pub fn flag(name: &'static str) -> Opt {
        Opt { name, value: None }
    }

    /// An option with its value (`--accept-changes TOKEN`).
    pub fn with(name: &'static str, value: impl Into<std::ffi::OsString>) -> Opt {
        Opt {
            name,
            value: Some(value.into()),
        }
    }
}

/// What to change in the failed command line to make the next one: a `next` that is the failed
/// command again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Again {
    /// Options added, each replacing any occurrence of the same option already given.
    pub add: Vec<Opt>,
    /// Options removed wherever they occur (flags only).
    pub remove: Vec<&'static str>,
}

/// The command that resolves an error, as an error object (or a warning, or a report entry)
/// carries it: the data model holds what is printed, `next` and `next_argv`; building the command
/// and quoting it for the shell is the command-line layer's (`cli::next::Next`).
pub trait NextCommand {
    /// `next`: one POSIX `sh` command line.
    fn text(&self) -> String;
    /// `next_argv`: the same command as an argument vector, when it is one command runnable as
    /// printed and every argument is UTF-8.
    fn argv(&self) -> Option<Vec<String>>;
    /// Whether `next` holds placeholders for the user to fill in (`FILE`, `DIR`).
    fn placeholders(&self) -> bool;
    /// When `next` is the failed command again: how to change the command line as typed.
    fn again(&self) -> Option<&Again>;
}

impl<K: ErrorKind> ErrorObject<K> {
    pub fn new(kind: K, message: impl Into<String>) -> Self {
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
    pub fn next(mut self, n: &impl NextCommand) -> Self {
        self.next = Some(n.text());
        self.next_argv = n.argv();
        self.again = n.again().cloned();
        self
    }

    /// [`ErrorObject::next`], and when it has placeholders, what to put in their place said at the
    /// end of the message (`what`: "FILE is the publisher's public key file"): such a `next` has
    /// no `next_argv` and runs only once they are filled in.
    pub fn next_to_fill(self, n: &impl NextCommand, what: &str) -> Self {
        let mut obj = self.next(n);
        if n.placeholders() {
            obj.message = format!("{}; in next, {what}", obj.message);
        }
        obj
    }

    /// The same object with another kind (the command-line layer's own `usage` for a tool with
    /// kinds of its own).
    pub fn with_kind<J: ErrorKind>(self, kind: J) -> ErrorObject<J> {
        ErrorObject {
            error: kind,
            message: self.message,
            field: self.field,
            path: self.path,
            value: self.value,
            next: self.next,
            next_argv: self.next_argv,
            changes: self.changes,
            run: self.run,
            signal: self.signal,
            again: self.again,
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
/// ([`ErrorKind::exit_code`]). `K` is [`Kind`] for every installed tool.
pub trait ToErrorObject<K: ErrorKind = Kind>: std::fmt::Display {
    /// The kind, e.g. [`Kind::DigestMismatch`].
    fn kind(&self) -> K;
    /// The error object; the default carries kind and message only.
    fn to_error_object(&self) -> ErrorObject<K> {
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
