//! What `dot-launch NAME --explain` prints: the whole launch decision and the policy the run would
//! get, made by the same code as a launch, with nothing created (docs/protocol.md "Explain").

use crate::digest::Sha256;
use crate::entry::{Containment, Trust};
use crate::name::Name;
use crate::protocol::Request;
use crate::runner::{LandlockPlan, Rlimits, StageBound};
use serde::{Deserialize, Serialize};

/// The explanation schema this code writes and reads.
pub const EXPLAIN_SCHEMA: u32 = 2;

/// An allowed launch, explained. A field that does not apply (the runner, Landlock and the
/// runner's limits at `audit`) is absent, never `null`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Explanation {
    /// `EXPLAIN_SCHEMA`.
    pub schema: u32,
    /// Always `allowed`: a refusal is the launch's own error, with its exit code.
    pub decision: String,
    pub name: Name,
    /// Where the entry was looked up, and what named it.
    pub registry: ExplainedRegistry,
    pub version: String,
    pub trust: Trust,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    /// The key that signed the entry (absent for a local entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    pub executable: Executable,
    pub containment: ContainmentDecision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<RunnerPlan>,
    pub limits: ExplainedLimits,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landlock: Option<LandlockPlan>,
    /// The request the plugin would read on stdin.
    pub request: Request,
    /// The file inputs, each copied into the stage as `in/KEY`.
    pub input_files: Vec<InputFile>,
    /// The target directory the outputs would be committed into (absolute).
    pub target: String,
    /// The names of the environment variables the plugin would get (`--env`), in the order given:
    /// its whole environment. Their values are not shown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
}

/// The registry a launch reads: a root, named by `--root` or, without it, by the `DOT_ROOT`
/// environment variable; or the system layers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainedRegistry {
    /// `--root`, `DOT_ROOT` or `system`.
    pub from: String,
    /// The root's directory (`--root`, `DOT_ROOT`), or the system layers' directories, vendor
    /// then admin (`system`).
    pub paths: Vec<String>,
}

/// The executable that would run, as verified.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Executable {
    /// The pinned copy in the store.
    pub path: String,
    pub sha256: Sha256,
    pub size: u64,
    /// How the bytes executed are kept the bytes digested: `leased` (the store file under a read
    /// lease) or `sealed` (a sealed private copy in memory).
    pub pinned: String,
    /// `pinned` (static ELF) or `unpinned` (script or dynamic ELF under `--allow-dynamic`).
    pub dependencies: crate::trust::Dependencies,
}

/// The containment the entry requires, the one the run would use, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContainmentDecision {
    pub required: Containment,
    pub used: Containment,
    /// The consent flag that allowed it.
    pub consent: String,
    pub why: String,
}

/// The runner that would confine a `process` plugin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerPlan {
    /// `dot-sandbox` beside `dot-launch`, opened and validated as a launch does.
    pub path: String,
    /// Its command line, as it would be given (executed as `/proc/self/fd/3`), but for the
    /// `--env NAME=VALUE` options, whose values are not shown (the names are `env`).
    pub argv: Vec<String>,
    /// The digest of the seccomp policy it installs, as that runner itself states it (its
    /// `--version`); absent when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seccomp_policy_sha256: Option<Sha256>,
    /// The system calls that policy allows (some only in part, by argument), by name, as the
    /// runner states them; everything else is refused (docs/security.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seccomp_allowed: Vec<String>,
    /// The namespaces the plugin gets of its own (`/proc/self/ns` names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// The entry's runtime directories, bound read-only into the run's root (their files are the
    /// host's, not pinned: `executable.dependencies` is `runtime` then).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime: Vec<String>,
}

/// The limits of the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainedLimits {
    /// The run's limits: the entry's, lowered by the invoker (the run result's `limits`).
    pub run: crate::limits::Limits,
    /// The invoker's bounds on the plugin's stdout and stderr, bytes.
    pub max_stdout: u64,
    pub max_stderr: u64,
    /// `process`: the hard resource limits the runner sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rlimits: Option<Rlimits>,
    /// `process`: the bounds of the plugin's private stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<StageBound>,
}

/// One file input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputFile {
    pub key: String,
    /// The file given.
    pub path: String,
    /// The file it resolved to (the opened descriptor's path), which the sensitive-path list
    /// is matched against.
    pub resolved: String,
    pub size: u64,
    /// Who reads it: dot-launch, with the invoker's rights (this uid), before the plugin starts;
    /// the plugin reads a copy in its stage.
    pub read_by: String,
    /// The sensitive-path pattern it matched, read anyway on `--allow-sensitive-input KEY`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sensitive: Option<String>,
}
