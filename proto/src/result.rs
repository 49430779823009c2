//! The result object `dot-launch` prints (and embeds in its error object when the plugin failed).

use crate::digest::Sha256;
use crate::entry::{Containment, Trust};
use crate::name::Name;
use crate::protocol::Response;
use crate::runner::Enforced;
use serde::{Deserialize, Serialize};

/// The result schema this code writes and reads.
pub const RESULT_SCHEMA: u32 = 1;

/// What happened to one run. A field that does not apply to this run is absent, never `null`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunResult {
    /// `RESULT_SCHEMA`: a reader refuses a schema it does not know.
    pub schema: u32,
    pub txid: String,
    pub name: Name,
    pub version: String,
    pub sha256: Sha256,
    pub trust: Trust,
    /// The containment actually enforced.
    pub containment: Containment,
    /// `pinned` (static ELF) or `unpinned` (script or dynamic ELF under `--allow-dynamic`).
    pub dependencies: crate::trust::Dependencies,
    pub status: RunStatus,
    pub exit: ExitStatus,
    pub duration_ms: u64,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    /// Files committed to the target directory (empty unless `status` is `committed`).
    pub outputs: Vec<OutputFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The launch waited for the target's commit lock: another run was committing into the same
    /// target directory (docs/protocol.md "One commit at a time per target").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub target_waited: bool,
    /// The plugin's response, once it gave a valid one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Response>,
    /// Why the run failed, for a failed run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The limits of the run: the entry's (or its preset's), lowered by the invoker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<crate::limits::Limits>,
    /// What the plugin process used: absent only when the kernel could not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// For `process`: the containment the runner reported as enforced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforced: Option<Enforced>,
    /// With `--stderr tail`, for a failed run: the last 4 KiB of the plugin's stderr (invalid
    /// UTF-8 replaced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
    /// What needs the operator although the outcome stands: a committed run whose directory
    /// could not be removed, or whose COMMITTED record could not be written. Absent when empty;
    /// a result with warnings exits 4.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    /// Without `--root`: the system layer whose entry ran (`vendor` or `admin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<crate::layers::Layer>,
    /// With `--report-denials` (`process` only): the system calls the seccomp filter refused, by
    /// number, each with how many times (docs/security.md "Seeing what was refused"). Present
    /// (maybe empty) exactly when they were counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denials: Option<Vec<crate::runner::Denial>>,
}

/// One warning of a result: an error kind of the catalogue (docs/errors.md), what happened, the
/// file it is about, and the command that resolves it where one exists.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Warning {
    pub kind: crate::error::Kind,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_argv: Option<Vec<String>>,
}

impl Warning {
    /// The warning for an error that does not change the outcome.
    pub fn of(e: &impl crate::error::ToErrorObject) -> Warning {
        let obj = e.to_error_object();
        Warning {
            kind: obj.error,
            message: obj.message,
            path: obj.path,
            next: obj.next,
            next_argv: obj.next_argv,
        }
    }
}

/// What the plugin process used, from the kernel's accounting of it when it exited (`wait4`):
/// CPU time of every thread, and of the children it waited for itself; its peak resident set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// User and system CPU time together, microseconds.
    pub cpu_us: u64,
    pub user_us: u64,
    pub system_us: u64,
    /// The largest resident set of the plugin process, KiB (`ru_maxrss`). At `process` the
    /// process was the runner until it executed the plugin, so this is at least the runner's
    /// peak (`enforced.timings.peak_rss_kib`).
    pub peak_rss_kib: u64,
}

/// The outcome of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// The plugin succeeded and its outputs are in place.
    Committed,
    /// The plugin ran and failed; nothing was committed.
    Failed,
}

/// How the plugin process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExitStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

/// One committed output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputFile {
    pub name: String,
    pub size: u64,
    pub sha256: Sha256,
}
