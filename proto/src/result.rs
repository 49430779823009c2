//! The result object `dot-launch` prints (and embeds in its error object when the plugin failed).

use crate::digest::Sha256;
use crate::entry::{Containment, Trust};
use crate::name::Name;
use crate::protocol::Response;
use serde::{Deserialize, Serialize};

/// What happened to one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunResult {
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
    pub response: Option<Response>,
    /// Why the run failed, for a failed run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
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
        }
    }
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

/// The containment `dot-sandbox` applied, as reported by it before the final exec.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Enforced {
    pub landlock_abi: u32,
    pub landlock_status: String,
    pub landlock_net: bool,
    pub landlock_scopes: bool,
    pub no_new_privs: bool,
    pub capabilities: String,
    pub rlimits: Rlimits,
    /// Who the plugin runs as, and what makes its task count its own.
    pub identity: Identity,
    /// The bounds of the plugin's working directory (a private tmpfs).
    pub stage: StageBound,
    pub seccomp_policy_sha256: Sha256,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confine_us: Option<u64>,
    /// Where the runner's confinement time went, step by step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<ConfineTimings>,
}

/// Microseconds each step of `dot-sandbox exec` took (in the order they run; `confine_us` is their
/// sum plus argument and descriptor checks), and the runner's peak resident set just before the
/// exec. Measured on every launch: a few clock reads, no extra work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfineTimings {
    /// The static-ELF check of the plugin (header, program headers, dynamic section).
    pub elf_us: u64,
    /// The run's own identity: a per-run uid, or a new user namespace.
    pub identity_us: u64,
    /// The private tmpfs made, the inputs copied into it.
    pub stage_us: u64,
    /// Parent-death signal and the parent check.
    pub parent_death_us: u64,
    pub rlimits_us: u64,
    /// Securebits, bounding set, ambient and capability sets, each checked afterwards.
    pub capabilities_us: u64,
    pub no_new_privs_us: u64,
    /// Ruleset built, rules added, `restrict_self`, status checked.
    pub landlock_us: u64,
    /// Every signal's disposition back to default, the signal mask emptied.
    #[serde(default)]
    pub signals_us: u64,
    /// The seccomp program made ready for this launch (per-launch values filled in).
    pub seccomp_build_us: u64,
    /// `seccomp(SECCOMP_SET_MODE_FILTER)`: the kernel checks, translates and compiles the program.
    pub seccomp_install_us: u64,
    /// Every descriptor >= 3 close-on-exec.
    pub cloexec_us: u64,
    /// The runner's peak resident set size (`ru_maxrss`), KiB.
    pub peak_rss_kib: u64,
}

/// Hard resource limits set on the plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rlimits {
    pub as_bytes: u64,
    pub cpu_seconds: u64,
    pub fsize_bytes: u64,
    pub nofile: u64,
    pub core: u64,
    /// `RLIMIT_NPROC`: the most tasks (processes and threads) of the run's own uid.
    pub nproc: u64,
}

/// Who a `process` plugin runs as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// The plugin's uid and gid, as the launcher's user namespace sees them.
    pub uid: u32,
    pub gid: u32,
    pub kind: IdentityKind,
}

/// What gives a run a task count of its own, so `RLIMIT_NPROC` bounds that run alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdentityKind {
    /// Launched by root: the plugin runs as a uid no account or file uses, derived from the
    /// runner's pid (unique among live runs), with no supplementary groups.
    PerRunUid,
    /// Launched by another user: the plugin runs as that user inside a new user namespace (uid
    /// mapped to itself), whose task count starts at one.
    UserNamespace,
}

/// The bounds of a `process` plugin's working directory: a private tmpfs, mounted nowhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageBound {
    /// Its size (`size=`): every byte of every file, inputs included.
    pub bytes: u64,
    /// Its inode count (`nr_inodes=`): files and directories, at any depth, the root included.
    pub inodes: u64,
}

/// The one line `dot-sandbox` writes on its report descriptor (fd 5) before the final exec: what it
/// enforced, or why it refused. The descriptor is close-on-exec, so the launcher reads to EOF.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
pub enum SandboxReport {
    Enforced(Enforced),
    Error(crate::error::ErrorObject),
}
