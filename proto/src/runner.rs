//! The contract between a launcher and the runner, `dot-sandbox exec`, in one place: which
//! descriptor holds what, the command line ([`Invocation::argv`]), the limits it carries, the
//! plugin's `argv[0]`, the messages on the report socket and the report itself. `dot-launch` and
//! `dot-sandbox probe --prove` build the runner's command line here, and the runner's argument
//! parser gives back the same [`Invocation`] (a test in `sandbox` proves the round trip).
//!
//! **The plugin's environment** is exactly the variables the invoker gave for names its entry
//! declares (`dot-launch --env NAME=VALUE`), nothing inherited, at both levels: `dot-launch`
//! executes an `audit` plugin with them as its whole environment, and passes them to the runner as
//! `--env NAME=VALUE` options ([`Invocation::argv_with_env`], before `--argv0`, in the order
//! given), which executes a `process` plugin with exactly those, in that order, as its `envp`, and
//! nothing else (the runner itself still runs with an empty environment). The runner re-checks
//! each name ([`EnvVar::parse`]: the syntax and the deny list of `crate::entry::EnvName`) and
//! refuses a name given twice.
//!
//! A launcher starts the runner with an empty environment, the on-disk stage (holding the inputs
//! in `in/`) as working directory, in a new process group, with:
//!
//! | descriptor | holds |
//! |---|---|
//! | 0, 1, 2 | the plugin's stdin, stdout, stderr |
//! | [`RUNNER_FD`] (3) | the runner, executed as [`RUNNER_PATH`], `argv[0]` [`RUNNER_ARGV0`] |
//! | [`PLUGIN_FD`] (4) | the plugin: the store file under a read lease, or a sealed memfd |
//! | [`REPORT_FD`] (5) | the runner's end of a unix `SOCK_SEQPACKET` socket pair |
//!
//! **The gate** (`--gate`, [`Invocation::gate`]): a launcher may start the runner before it has
//! finished with the run — while it digests the pinned executable, records its decision and makes
//! the run directory — so that the runner's own start and the steps that need nothing of the
//! launcher's (the ELF rule on descriptor 4, its identity, the namespaces, the stage's tmpfs, the
//! private root, the plugin's process) overlap that work. The plugin's process then waits, before
//! anything of the plugin's is read or executed, for the launcher's go: one message on the report
//! socket, [`GATE_MESSAGE`], carrying a descriptor of the on-disk stage (the directory whose `in/`
//! holds the inputs, instead of the working directory). No go — the launcher refused the run or
//! ended, and closed its end — and the runner exits without executing anything. Without `--gate`
//! the runner reads the inputs from its working directory at its start, as below.
//!
//! On the report socket the runner sends, in this order: the stage message ([`STAGE_MESSAGE`],
//! one NUL byte carrying a descriptor of its private stage's root), once the stage exists; then one
//! report line ([`SandboxReport`]: what it enforced, or why it refused). The socket closes when the
//! runner executes the plugin (it is close-on-exec) or exits.
//!
//! **The plugin's `argv[0]`** is its registry name at every containment level: `dot-launch`
//! executes an `audit` plugin with it, and passes it to the runner (`--argv0`), which executes a
//! `process` plugin with it. Nothing else is on the plugin's command line. A script plugin (at
//! `audit` only) is the exception the kernel makes: its interpreter gets the interpreter's path and
//! the script's (`/proc/self/fd/3`) instead.

use crate::digest::Sha256;
use crate::error::ErrorObject;
use crate::name::Name;
use serde::{Deserialize, Serialize};

/// The runner's descriptor.
pub const RUNNER_FD: i32 = 3;
/// The plugin's descriptor.
pub const PLUGIN_FD: i32 = 4;
/// The report socket's descriptor.
pub const REPORT_FD: i32 = 5;
/// With `--denials-fd`: the write end of the pipe the run's init writes a [`denial_line`] to for
/// each refusal of the seccomp filter.
pub const DENIALS_FD: i32 = 6;
/// What the launcher executes: the runner, through its descriptor.
pub const RUNNER_PATH: &str = "/proc/self/fd/3";
/// The runner's `argv[0]`.
pub const RUNNER_ARGV0: &str = "dot-sandbox";
/// The only plugin path the runner accepts (and executes).
pub const PLUGIN_PATH: &str = "/proc/self/fd/4";

/// What the runner bounds, as its command line carries it: hard resource limits on the plugin, named
/// as the run's limits they come from (`crate::limits::Limits`), and the size of its stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunnerLimits {
    /// `RLIMIT_AS`, bytes: the run's `memory_bytes`.
    pub memory_bytes: u64,
    /// `RLIMIT_CPU`, seconds: the soft limit (`SIGXCPU`); the hard limit (`SIGKILL`) is one
    /// second more.
    pub cpu_seconds: u64,
    /// `RLIMIT_FSIZE`, bytes: the largest file (the run's `output_bytes`).
    pub file_bytes: u64,
    /// `RLIMIT_NOFILE`: the run's `descriptors`.
    pub descriptors: u64,
    /// `RLIMIT_NPROC`: the most tasks (processes and threads) of the run, its `tasks`.
    pub tasks: u64,
    /// Size of the stage (a private tmpfs), bytes.
    pub stage_bytes: u64,
    /// Inodes of the stage, the root included.
    pub stage_inodes: u64,
}

impl RunnerLimits {
    /// The smallest value of each limit the runner accepts (below it: `bad-limit`, exit 2). The
    /// runner itself needs 16 descriptors; a stage needs room for `in/`, `out/` and a few files.
    pub const MIN: RunnerLimits = RunnerLimits {
        memory_bytes: 1 << 20,
        cpu_seconds: 1,
        file_bytes: 1,
        descriptors: 16,
        tasks: 1,
        stage_bytes: 1 << 20,
        stage_inodes: 8,
    };

    /// Each limit with its option name (without `--`), in command-line order.
    pub fn options(&self) -> [(&'static str, u64); 7] {
        [
            ("memory-bytes", self.memory_bytes),
            ("cpu-seconds", self.cpu_seconds),
            ("file-bytes", self.file_bytes),
            ("descriptors", self.descriptors),
            ("tasks", self.tasks),
            ("stage-bytes", self.stage_bytes),
            ("stage-inodes", self.stage_inodes),
        ]
    }

    /// The first limit below its minimum, as (option name, value).
    pub fn below_minimum(&self) -> Option<(&'static str, u64)> {
        self.options()
            .into_iter()
            .zip(RunnerLimits::MIN.options())
            .find(|((_, value), (_, min))| value < min)
            .map(|(given, _)| given)
    }

    /// The resource limits these set, as the report states them (`RLIMIT_CORE` is always
    /// [`CORE_LIMIT`]; the CPU limit's hard value is one second above its soft one).
    pub fn rlimits(&self) -> Rlimits {
        Rlimits {
            as_bytes: self.memory_bytes,
            cpu_seconds: self.cpu_seconds,
            cpu_hard_seconds: self.cpu_seconds.saturating_add(1),
            fsize_bytes: self.file_bytes,
            nofile: self.descriptors,
            core: CORE_LIMIT,
            nproc: self.tasks,
            memlock_bytes: 0,
            sigpending: SIGPENDING,
        }
    }

    /// The stage's bounds.
    pub fn stage(&self) -> StageBound {
        StageBound {
            bytes: self.stage_bytes,
            inodes: self.stage_inodes,
        }
    }
}

/// One run of `dot-sandbox exec`: everything on its command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// The report socket's descriptor ([`REPORT_FD`]).
    pub report_fd: i32,
    pub limits: RunnerLimits,
    /// Test and diagnostic knob: the runner builds its Landlock ruleset as on a kernel with this
    /// ABI, when lower than the kernel's.
    pub landlock_abi: Option<u32>,
    /// The plugin's `argv[0]`: its registry name.
    pub argv0: Name,
    /// The entry's runtime directories (`--runtime DIR`, repeated): bound read-only into the run's
    /// private root.
    pub runtime: Vec<crate::entry::RuntimeDir>,
    /// The plugin path argument ([`PLUGIN_PATH`]; the runner refuses anything else).
    pub plugin: String,
    /// Wait for the launcher's go before the plugin's steps (`--gate`; the module documentation).
    pub gate: bool,
    /// `--denials-fd N`: every `EPERM` refusal of the seccomp filter is sent to the run's init,
    /// which answers it with the same `EPERM` and writes a [`denial_line`] for it to descriptor N.
    pub denials_fd: Option<i32>,
}

impl Invocation {
    /// The invocation a launcher makes: report on [`REPORT_FD`], plugin at [`PLUGIN_PATH`].
    pub fn new(limits: RunnerLimits, argv0: Name) -> Invocation {
        Invocation {
            report_fd: REPORT_FD,
            limits,
            landlock_abi: None,
            argv0,
            runtime: Vec::new(),
            plugin: PLUGIN_PATH.to_owned(),
            gate: false,
            denials_fd: None,
        }
    }

    /// [`Invocation::argv`] with `--env NAME=VALUE` for each of `env`, in order, before `--argv0`:
    /// the plugin's environment (module documentation). With no variable it is `argv()`.
    pub fn argv_with_env(&self, env: &[EnvVar]) -> Vec<String> {
        let mut argv = self.argv();
        let at = argv.len().saturating_sub(3);
        let options = env.iter().flat_map(|v| ["--env".to_owned(), v.to_arg()]);
        argv.splice(at..at, options);
        argv
    }

    /// The runner's whole command line, `argv[0]` ([`RUNNER_ARGV0`]) first.
    pub fn argv(&self) -> Vec<String> {
        let mut argv = vec![
            RUNNER_ARGV0.to_owned(),
            "exec".to_owned(),
            "--report-fd".to_owned(),
            self.report_fd.to_string(),
        ];
        for (option, value) in self.limits.options() {
            argv.push(format!("--{option}"));
            argv.push(value.to_string());
        }
        if let Some(abi) = self.landlock_abi {
            argv.push("--landlock-abi".to_owned());
            argv.push(abi.to_string());
        }
        for dir in &self.runtime {
            argv.push("--runtime".to_owned());
            argv.push(dir.to_string());
        }
        if self.gate {
            argv.push("--gate".to_owned());
        }
        if let Some(fd) = self.denials_fd {
            argv.push("--denials-fd".to_owned());
            argv.push(fd.to_string());
        }
        argv.push("--argv0".to_owned());
        argv.push(self.argv0.to_string());
        argv.push(self.plugin.clone());
        argv
    }
}

/// The longest value of one environment variable, in bytes.
pub const MAX_ENV_VALUE: usize = 4096;

/// One variable of the plugin's environment: a name its entry may declare, and a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvVar {
    pub name: crate::entry::EnvName,
    pub value: String,
}

/// Why `NAME=VALUE` is not an environment variable a plugin can be given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadEnvVar {
    #[error("not NAME=VALUE: there is no =")]
    NoEquals,
    #[error(transparent)]
    Name(#[from] crate::entry::BadEnvName),
    #[error("the value holds a NUL byte")]
    Nul,
    #[error("the value is {0} bytes, over {MAX_ENV_VALUE}")]
    TooLong(usize),
}

impl EnvVar {
    /// `NAME=VALUE` (the first `=` ends the name; the value may be empty).
    pub fn parse(arg: &str) -> Result<EnvVar, BadEnvVar> {
        let (name, value) = arg.split_once('=').ok_or(BadEnvVar::NoEquals)?;
        let name = crate::entry::EnvName::new(name)?;
        if value.contains('\0') {
            return Err(BadEnvVar::Nul);
        }
        if value.len() > MAX_ENV_VALUE {
            return Err(BadEnvVar::TooLong(value.len()));
        }
        Ok(EnvVar {
            name,
            value: value.to_owned(),
        })
    }

    /// `NAME=VALUE`, as an `envp` entry and as the runner's option value.
    pub fn to_arg(&self) -> String {
        format!("{}={}", self.name, self.value)
    }
}

impl std::str::FromStr for EnvVar {
    type Err = BadEnvVar;
    fn from_str(s: &str) -> Result<EnvVar, BadEnvVar> {
        EnvVar::parse(s)
    }
}

/// The stage message: one NUL byte, carrying a descriptor of the stage's root (`SCM_RIGHTS`).
pub const STAGE_MESSAGE: &[u8] = b"\0";

/// The line the run's init writes on the denials descriptor for one refusal: `NR NAME`.
pub fn denial_line(nr: i32, name: &str) -> String {
    format!("{nr} {name}\n")
}

/// A [`denial_line`] (without its newline) read back: the number and the name.
pub fn parse_denial_line(line: &str) -> Option<(i32, &str)> {
    let (nr, name) = line.split_once(' ')?;
    let ok = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    Some((nr.parse().ok()?, name)).filter(|_| ok)
}

/// The refusals in `lines` (each a [`denial_line`]; anything else is skipped), one [`Denial`] per
/// number in the order of the numbers, at most [`MAX_DENIALS`] distinct ones.
pub fn count_denials(lines: &[u8]) -> Vec<Denial> {
    let mut by_nr: std::collections::BTreeMap<i32, Denial> = std::collections::BTreeMap::new();
    for line in lines.split(|&b| b == b'\n') {
        let Some((nr, name)) = std::str::from_utf8(line).ok().and_then(parse_denial_line) else {
            continue;
        };
        if let Some(d) = by_nr.get_mut(&nr) {
            d.count = d.count.saturating_add(1);
        } else if by_nr.len() < MAX_DENIALS {
            by_nr.insert(
                nr,
                Denial {
                    syscall: name.to_owned(),
                    nr,
                    count: 1,
                },
            );
        }
    }
    by_nr.into_values().collect()
}

/// The most distinct system calls a result lists as refused.
pub const MAX_DENIALS: usize = 512;

/// One system call the seccomp filter refused (with `EPERM`), and how many times.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Denial {
    /// Its x86-64 name (`"unknown"` for a number the runner has no name for).
    pub syscall: String,
    pub nr: i32,
    pub count: u64,
}

/// The plugin's `RLIMIT_CORE`: 1 byte, at which the kernel makes no core dump at all — a core file
/// needs at least a page, and a `core_pattern` pipe handler (which ignores the limit otherwise,
/// and runs as root on the host) is skipped at exactly 1, the kernel's own guard against a handler
/// that dumps core. 0 would still start a pipe handler.
pub const CORE_LIMIT: u64 = 1;

/// The launcher's go to a runner started with `--gate`: these bytes, carrying a descriptor of the
/// on-disk stage (`SCM_RIGHTS`), from the launcher to the runner on the report socket.
pub const GATE_MESSAGE: &[u8] = b"go";

/// The most report bytes a launcher keeps (the report is one line of well under 4 KiB).
pub const MAX_REPORT: usize = 64 * 1024;

/// What one message on the report socket is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    /// The stage message: its descriptor is the stage's root (the first one counts; a launcher
    /// closes any later one).
    Stage,
    /// Report bytes.
    Report,
    /// Descriptors in any other message: closed, and the message ignored.
    Stray,
}

impl Message {
    /// Classifies a message of `bytes` that carried `descriptors` descriptors.
    pub fn of(bytes: &[u8], descriptors: usize) -> Message {
        match (descriptors, bytes == STAGE_MESSAGE) {
            (0, _) => Message::Report,
            (1, true) => Message::Stage,
            _ => Message::Stray,
        }
    }
}

/// The one line `dot-sandbox` writes on its report descriptor (fd 5) before the final exec: what it
/// enforced, or why it refused. The descriptor is close-on-exec, so the launcher reads to EOF.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
pub enum SandboxReport {
    Enforced(Enforced),
    Error(ErrorObject),
}

impl SandboxReport {
    /// The report in `bytes`, if they are exactly one valid line.
    pub fn parse(bytes: &[u8]) -> Option<SandboxReport> {
        let line = bytes.strip_suffix(b"\n")?;
        if line.contains(&b'\n') {
            return None;
        }
        serde_json::from_slice(line).ok()
    }
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
    /// The bounds of the plugin's working directory (a private tmpfs, the root of its view).
    pub stage: StageBound,
    /// The namespaces the plugin has of its own (`/proc/self/ns` names: `mnt`, `pid`, `ipc`,
    /// `net`, `uts`, and `user` when the run has a user namespace).
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// The runtime directories bound read-only into the private root (their files are the
    /// host's, not pinned); empty for a static plugin without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime: Vec<String>,
    /// What the runner executed: `static` (a static ELF, all of it pinned), `dynamic` (an ELF whose
    /// interpreter and libraries come from the runtime) or `script` (an interpreter from the
    /// runtime, handed the pinned script by descriptor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
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
    /// The run's namespaces made, the fork into the new PID namespace, the private root
    /// (`pivot_root` onto the stage) and the fork of the plugin below the run's init.
    #[serde(default)]
    pub namespaces_us: u64,
    /// With `--gate`: waiting for the launcher's go (its digest of the plugin, its decision, the
    /// run directory), then opening the inputs it names. Zero without a gate.
    #[serde(default)]
    pub gate_us: u64,
    /// The private tmpfs made, the inputs copied into it.
    pub stage_us: u64,
    /// Parent-death signal and the parent check (and, in the runner, taking the parent's CPUs).
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
    /// `RLIMIT_CPU`'s soft value, seconds of every thread together: the kernel sends `SIGXCPU`.
    pub cpu_seconds: u64,
    /// Its hard value, one second more: the kernel sends `SIGKILL`.
    pub cpu_hard_seconds: u64,
    pub fsize_bytes: u64,
    pub nofile: u64,
    pub core: u64,
    /// `RLIMIT_NPROC`: the most tasks (processes and threads) of the run's own uid.
    pub nproc: u64,
    /// `RLIMIT_MEMLOCK`: no memory locked (`MAP_LOCKED`, `mlock`): locked pages are the host's.
    #[serde(default)]
    pub memlock_bytes: u64,
    /// `RLIMIT_SIGPENDING`: the most signals queued for the run's own uid (each is kernel
    /// memory).
    #[serde(default)]
    pub sigpending: u64,
}

/// The run's `RLIMIT_SIGPENDING`: a few signals per task are plenty (standard signals do not
/// queue; Go's preemption signal is one of them).
pub const SIGPENDING: u64 = 1024;

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

impl IdentityKind {
    /// The identity a runner with effective uid `euid` and `/proc/self/uid_map` text `uid_map`
    /// gives its plugin: a per-run uid for root of the initial user namespace (the one map line
    /// `0 0 4294967295`), a new user namespace for anyone else.
    pub fn for_runner(euid: u32, uid_map: &str) -> IdentityKind {
        let initial = uid_map.split_whitespace().eq(["0", "0", "4294967295"]);
        if euid == 0 && initial {
            IdentityKind::PerRunUid
        } else {
            IdentityKind::UserNamespace
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Refusal lines are counted by number, in order; anything that is not one is skipped, and
    /// the distinct numbers are bounded.
    #[test]
    fn refusal_lines_are_counted_by_number() {
        let mut lines = String::new();
        for (nr, name) in [(41, "socket"), (112, "setsid"), (41, "socket"), (0, "read")] {
            lines.push_str(&denial_line(nr, name));
        }
        lines.push_str("garbage\n41 \n-3 x y\nabc socket\n41 so\u{1b}cket\n");
        let d = count_denials(lines.as_bytes());
        let got: Vec<_> = d
            .iter()
            .map(|d| (d.nr, d.syscall.as_str(), d.count))
            .collect();
        assert_eq!(got, [(0, "read", 1), (41, "socket", 2), (112, "setsid", 1)]);
        let many: String = (0..MAX_DENIALS as i32 + 10)
            .map(|nr| denial_line(nr, "x"))
            .collect();
        assert_eq!(count_denials(many.as_bytes()).len(), MAX_DENIALS);
        assert_eq!(parse_denial_line("7 a_b9"), Some((7, "a_b9")));
    }

    fn limits() -> RunnerLimits {
        RunnerLimits {
            memory_bytes: 3 << 20,
            cpu_seconds: 2,
            file_bytes: 5,
            descriptors: 17,
            tasks: 3,
            stage_bytes: 7 << 20,
            stage_inodes: 11,
        }
    }

    #[test]
    fn environment_variables_go_before_argv0_in_order_and_are_checked() {
        let inv = Invocation::new(limits(), Name::new("p").expect("name"));
        assert_eq!(inv.argv_with_env(&[]), inv.argv());
        let env: Vec<EnvVar> = ["RUST_BACKTRACE=1", "A_B=x=y ", "EMPTY="]
            .iter()
            .map(|a| EnvVar::parse(a).expect(a))
            .collect();
        assert_eq!(env[1].value, "x=y ");
        let argv = inv.argv_with_env(&env);
        let tail: Vec<&str> = argv[argv.len() - 9..].iter().map(String::as_str).collect();
        assert_eq!(
            tail,
            [
                "--env",
                "RUST_BACKTRACE=1",
                "--env",
                "A_B=x=y ",
                "--env",
                "EMPTY=",
                "--argv0",
                "p",
                PLUGIN_PATH
            ]
        );
        for (bad, why) in [
            ("NOEQUALS", BadEnvVar::NoEquals),
            (
                "LD_PRELOAD=/x.so",
                BadEnvVar::Name(crate::entry::BadEnvName::Denied("LD_PRELOAD".into())),
            ),
            (
                "lower=1",
                BadEnvVar::Name(crate::entry::BadEnvName::Syntax("lower".into())),
            ),
            ("A=\0", BadEnvVar::Nul),
        ] {
            assert_eq!(EnvVar::parse(bad), Err(why), "{bad}");
        }
        let long = format!("A={}", "v".repeat(MAX_ENV_VALUE + 1));
        assert_eq!(
            EnvVar::parse(&long),
            Err(BadEnvVar::TooLong(MAX_ENV_VALUE + 1))
        );
        assert!(EnvVar::parse(&long[..MAX_ENV_VALUE + 2]).is_ok());
    }

    #[test]
    fn the_command_line_names_every_limit_once_and_ends_with_the_plugin() {
        let name = Name::new("hello").expect("name");
        let mut inv = Invocation::new(limits(), name);
        assert_eq!(
            inv.argv().join(" "),
            "dot-sandbox exec --report-fd 5 --memory-bytes 3145728 --cpu-seconds 2 --file-bytes 5 \
             --descriptors 17 --tasks 3 --stage-bytes 7340032 --stage-inodes 11 --argv0 hello \
             /proc/self/fd/4"
        );
        inv.landlock_abi = Some(4);
        let argv = inv.argv();
        let at = argv
            .iter()
            .position(|a| a == "--landlock-abi")
            .expect("knob");
        assert_eq!(argv[at + 1], "4");
        assert_eq!(argv.last().map(String::as_str), Some(PLUGIN_PATH));
    }

    #[test]
    fn each_limit_below_its_minimum_is_named() {
        assert_eq!(limits().below_minimum(), None);
        assert_eq!(RunnerLimits::MIN.below_minimum(), None);
        let cases = [
            (
                "descriptors",
                RunnerLimits {
                    descriptors: 15,
                    ..limits()
                },
                15,
            ),
            (
                "tasks",
                RunnerLimits {
                    tasks: 0,
                    ..limits()
                },
                0,
            ),
            (
                "memory-bytes",
                RunnerLimits {
                    memory_bytes: 4096,
                    ..limits()
                },
                4096,
            ),
            (
                "stage-inodes",
                RunnerLimits {
                    stage_inodes: 7,
                    ..limits()
                },
                7,
            ),
        ];
        for (option, l, value) in cases {
            assert_eq!(l.below_minimum(), Some((option, value)));
        }
    }

    #[test]
    fn the_stage_message_is_one_nul_byte_with_one_descriptor() {
        assert_eq!(Message::of(b"\0", 1), Message::Stage);
        assert_eq!(Message::of(b"\0", 0), Message::Report);
        assert_eq!(Message::of(b"{}\n", 0), Message::Report);
        assert_eq!(Message::of(b"\0", 2), Message::Stray);
        assert_eq!(Message::of(b"x", 1), Message::Stray);
    }

    #[test]
    fn a_report_is_exactly_one_line() {
        let e = SandboxReport::Error(ErrorObject::new(crate::Kind::Exec, "no"));
        let mut line = serde_json::to_vec(&e).expect("json");
        assert_eq!(SandboxReport::parse(&line), None, "no newline");
        line.push(b'\n');
        assert_eq!(SandboxReport::parse(&line), Some(e));
        let twice = [line.clone(), line].concat();
        assert_eq!(SandboxReport::parse(&twice), None);
    }

    #[test]
    fn only_root_of_the_initial_user_namespace_gets_a_per_run_uid() {
        let initial = "         0          0 4294967295\n";
        assert_eq!(
            IdentityKind::for_runner(0, initial),
            IdentityKind::PerRunUid
        );
        assert_eq!(
            IdentityKind::for_runner(1000, initial),
            IdentityKind::UserNamespace
        );
        for map in [
            "         0     100000      65536\n",
            "      1000       1000          1\n",
            "",
        ] {
            assert_eq!(
                IdentityKind::for_runner(0, map),
                IdentityKind::UserNamespace,
                "{map:?}"
            );
        }
    }
}

/// A Landlock filesystem right, as the kernel names it (`LANDLOCK_ACCESS_FS_*`, lowercased).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FsRight {
    Execute,
    WriteFile,
    ReadFile,
    ReadDir,
    RemoveDir,
    RemoveFile,
    MakeChar,
    MakeDir,
    MakeReg,
    MakeSock,
    MakeFifo,
    MakeBlock,
    MakeSym,
    Refer,
    Truncate,
}

/// Every filesystem right of Landlock ABI 3: the runner handles all of them (a hard requirement),
/// so each is denied wherever no rule grants it.
pub const HANDLED_FS: [FsRight; 15] = [
    FsRight::Execute,
    FsRight::WriteFile,
    FsRight::ReadFile,
    FsRight::ReadDir,
    FsRight::RemoveDir,
    FsRight::RemoveFile,
    FsRight::MakeChar,
    FsRight::MakeDir,
    FsRight::MakeReg,
    FsRight::MakeSock,
    FsRight::MakeFifo,
    FsRight::MakeBlock,
    FsRight::MakeSym,
    FsRight::Refer,
    FsRight::Truncate,
];

/// What the runner grants on the plugin's own executable (when it is a file on a filesystem).
pub const PLUGIN_RIGHTS: [FsRight; 2] = [FsRight::ReadFile, FsRight::Execute];

/// What the runner grants beneath each runtime directory (a read-only bind): read and execute.
pub const RUNTIME_RIGHTS: [FsRight; 3] = [FsRight::ReadFile, FsRight::ReadDir, FsRight::Execute];

/// What the runner grants beneath the stage (its working directory): read and write, never
/// execute, no special files, no links, no renames across directories.
pub const STAGE_RIGHTS: [FsRight; 8] = [
    FsRight::ReadFile,
    FsRight::ReadDir,
    FsRight::WriteFile,
    FsRight::MakeReg,
    FsRight::MakeDir,
    FsRight::RemoveFile,
    FsRight::RemoveDir,
    FsRight::Truncate,
];

/// One Landlock rule: the rights granted beneath `path`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LandlockRule {
    /// What the rule is on, for people: a path, or what stands for one.
    pub path: String,
    pub access: Vec<FsRight>,
}

/// The Landlock ruleset the runner applies on a kernel with Landlock ABI `abi`: the pure
/// description `dot-sandbox` builds its ruleset from, and `dot-launch --explain` prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LandlockPlan {
    /// The ABI the ruleset is built for (the kernel's, or lower when capped).
    pub abi: u32,
    /// The lowest ABI accepted; below it `process` refuses.
    pub required_abi: u32,
    /// Filesystem rights handled (denied unless a rule grants them): a hard requirement.
    pub handled_fs: Vec<FsRight>,
    /// The rules: what is granted, and where.
    pub rules: Vec<LandlockRule>,
    /// Handled when the ABI has them (best effort, ABI 4 and up): TCP bind and connect, denied.
    pub tcp_denied: bool,
    /// Scoped when the ABI has them (best effort, ABI 6 and up): abstract unix sockets and
    /// signals to processes outside the sandbox, denied.
    pub scopes_denied: bool,
}

impl LandlockPlan {
    /// The plan for ABI `abi`, with the plugin's executable at `plugin` (`None`: a sealed
    /// in-memory copy, which Landlock does not mediate and needs no rule) and the stage at `stage`.
    pub fn new(abi: u32, plugin: Option<String>, stage: String) -> LandlockPlan {
        let mut rules = Vec::with_capacity(2);
        if let Some(path) = plugin {
            rules.push(LandlockRule {
                path,
                access: PLUGIN_RIGHTS.to_vec(),
            });
        }
        rules.push(LandlockRule {
            path: stage,
            access: STAGE_RIGHTS.to_vec(),
        });
        LandlockPlan {
            abi,
            required_abi: crate::probe::REQUIRED_LANDLOCK_ABI,
            handled_fs: HANDLED_FS.to_vec(),
            rules,
            tcp_denied: abi >= 4,
            scopes_denied: abi >= 6,
        }
    }
}
