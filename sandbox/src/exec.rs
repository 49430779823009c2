//! `dot-sandbox exec`: confine this process, then execute the plugin on descriptor 4.
//!
//! The sequence — decide, acquire, narrow, exec — in this order (any failure stops it, writes
//! one error line on the report descriptor and stderr, and exits nonzero — never a partially
//! confined plugin):
//!
//! 1. claim the report descriptor; check the plugin argument is exactly `/proc/self/fd/4`; claim
//!    descriptor 4; the plugin is a static ELF executable for this machine (the `elf` crate)
//! 2. the run's own identity (`identity`): root plans a per-run uid; anyone else enters a new user
//!    namespace. The inputs in the on-disk stage's `in/` are opened now
//! 3. parent-death signal SIGKILL (after the user namespace, which clears it), and exit if the
//!    parent is already gone; the parent's CPUs taken (`take_parents_cpus`, in this step's time)
//! 4. new mount, PID, IPC, network, UTS and cgroup namespaces, and a fork into the PID namespace
//!    (`namespaces`): this process stays behind only to wait and end as the plugin ends; the
//!    child is the run's init (pid 1)
//! 5. init: parent-death signal; the stage (`stage`), a private tmpfs bounded in bytes and
//!    inodes; every mount private, the run's own host name, the stage attached and made the root
//!    (`pivot_root`), the host's tree detached; a fork: init waits, the child (pid 2) goes on
//! 6. securebits locked and the bounding set emptied (while CAP_SETPCAP is held); with `--gate`,
//!    the launcher's go; then root switches to the per-run uid; the stage is filled as its owner
//!    and handed to the launcher
//! 7. parent-death signal again (the identity change clears it); the parent must be init
//! 8. hard rlimits, soft = hard: AS, FSIZE, NOFILE, NPROC from the arguments, CORE = 1,
//!    MEMLOCK = 0, SIGPENDING; CPU soft from the arguments (SIGXCPU), hard one second more
//! 9. ambient, effective, permitted and inheritable capabilities cleared, and checked
//! 10. `no_new_privs`
//! 11. Landlock: ABI 3 file rights as a hard requirement (read+execute on the plugin's inode
//!     unless it is a sealed memfd, read/write/create/remove/truncate without execute beneath the
//!     stage); best effort above (ABI 4 TCP bind/connect denied, ABI 6 signal and abstract-unix
//!     scopes), for the kernel's ABI or the lower one `--landlock-abi` names; refused unless
//!     enforced
//! 12. every signal's disposition back to default and an empty signal mask (this runner, a Rust
//!     program, ignores SIGPIPE, and an ignore survives `execve`)
//! 13. seccomp (see `policy`: an allowlist), the last restriction because it refuses what steps
//!     2–12 use
//! 14. every descriptor ≥ 3 close-on-exec, so the plugin holds exactly 0, 1 and 2
//! 15. the report line, then `execveat(4, "", AT_EMPTY_PATH)` (the private root has no `/proc`)
//!     with `argv[0]` the plugin's registry name (`--argv0`) and nothing else, carrying the
//!     seccomp cookie.
//!
//! The report descriptor is a unix `SOCK_SEQPACKET` socket: once the stage is made, the stage
//! message (one NUL byte) carries a descriptor of its root to the launcher (step 6); the report
//! line (an error or what was enforced) is the next message. `proto::runner` is that contract.

use crate::{identity, stage};
use elf::ElfError;
use proto::probe::REQUIRED_LANDLOCK_ABI;
use proto::runner::{ConfineTimings, Enforced, Identity, Invocation, Rlimits, RunnerLimits};
use proto::runner::{
    SandboxReport, GATE_MESSAGE, PLUGIN_FD, PLUGIN_PATH, REPORT_FD, STAGE_MESSAGE,
};
use proto::{ErrorObject, Kind, ToErrorObject};
use std::convert::Infallible;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::time::Instant;

/// Why the runner refused or failed; named after the step.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("report descriptor {fd} is not usable: {source}")]
    ReportFd { fd: i32, source: io::Error },
    #[error("plugin path must be exactly {PLUGIN_PATH}, got {path:?}")]
    BadPluginPath { path: String },
    #[error("limit --{field} = {value} is too small")]
    BadLimit { field: &'static str, value: u64 },
    #[error("--env {name} is given twice or holds a NUL byte")]
    BadEnv { name: String },
    #[error("plugin descriptor {PLUGIN_FD} is not open: {0}")]
    PluginFd(io::Error),
    #[error("plugin {0}")]
    NotStaticElf(#[from] ElfError),
    #[error("plugin {0}")]
    Program(#[from] elf::runtime::RuntimeError),
    #[error("setting the parent-death signal failed: {0}")]
    ParentDeathSignal(io::Error),
    #[error("the parent is already gone (parent is now pid {ppid})")]
    ParentGone { ppid: u32 },
    #[error("setting {resource} failed: {source}")]
    Rlimit {
        resource: &'static str,
        source: io::Error,
    },
    #[error("dropping capabilities failed at {step}: {source}")]
    Capabilities {
        step: &'static str,
        source: io::Error,
    },
    #[error("setting no_new_privs failed: {0}")]
    NoNewPrivs(io::Error),
    #[error("Landlock ABI {abi} is below the required {}", REQUIRED_LANDLOCK_ABI)]
    LandlockUnsupported { abi: u32 },
    #[error("resetting the signal dispositions and mask failed: {0}")]
    Signals(io::Error),
    #[error("Landlock ruleset failed: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("the run's own identity failed at {step}: {source}")]
    Identity {
        step: &'static str,
        source: io::Error,
    },
    #[error("the run's namespaces failed at {step}: {source}")]
    Namespaces {
        step: &'static str,
        source: io::Error,
    },
    #[error("the stage failed at {step}: {source}")]
    Stage {
        step: &'static str,
        source: io::Error,
    },
    #[error("Landlock is not enforced ({status})")]
    LandlockNotEnforced { status: String },
    #[error("building the seccomp policy failed: {0}")]
    SeccompPolicy(String),
    #[error("installing the seccomp filter failed: {0}")]
    SeccompInstall(io::Error),
    #[error("marking descriptors close-on-exec failed: {0}")]
    Cloexec(io::Error),
    #[error("writing the report failed: {0}")]
    Report(io::Error),
    #[error("executing the plugin failed: {0}")]
    Exec(io::Error),
    #[error("process containment is only available on Linux x86-64")]
    UnsupportedPlatform,
}

impl ToErrorObject for ExecError {
    fn kind(&self) -> Kind {
        match self {
            ExecError::ReportFd { .. } => Kind::BadReportFd,
            ExecError::BadPluginPath { .. } => Kind::BadPluginPath,
            ExecError::BadLimit { .. } => Kind::BadLimit,
            ExecError::BadEnv { .. } => Kind::EnvInvalid,
            ExecError::PluginFd(_) => Kind::BadPluginFd,
            ExecError::NotStaticElf(e) => e.kind(),
            ExecError::Program(e) => e.kind(),
            ExecError::ParentDeathSignal(_) => Kind::ParentDeathSignal,
            ExecError::ParentGone { .. } => Kind::ParentGone,
            ExecError::Rlimit { .. } => Kind::Rlimit,
            ExecError::Capabilities { .. } => Kind::Capabilities,
            ExecError::NoNewPrivs(_) => Kind::NoNewPrivs,
            ExecError::LandlockUnsupported { .. } => Kind::LandlockUnsupported,
            ExecError::Signals(_) => Kind::Signals,
            ExecError::Landlock(_) => Kind::Landlock,
            ExecError::Identity { .. } => Kind::Identity,
            ExecError::Stage { .. } => Kind::Stage,
            ExecError::Namespaces { .. } => Kind::Namespaces,
            ExecError::LandlockNotEnforced { .. } => Kind::LandlockNotEnforced,
            ExecError::SeccompPolicy(_) => Kind::SeccompPolicy,
            ExecError::SeccompInstall(_) => Kind::SeccompInstall,
            ExecError::Cloexec(_) => Kind::Cloexec,
            ExecError::Report(_) => Kind::Report,
            ExecError::Exec(_) => Kind::Exec,
            ExecError::UnsupportedPlatform => Kind::UnsupportedPlatform,
        }
    }

    fn to_error_object(&self) -> ErrorObject {
        let obj = ErrorObject::new(self.kind(), self.to_string());
        let probe_command = || cli::Next::cmd("dot-sandbox").arg("probe");
        match self {
            ExecError::BadPluginPath { path } => obj.field("plugin").value(path.clone()),
            ExecError::BadLimit { field, value } => obj.field(*field).value(value.to_string()),
            ExecError::BadEnv { name } => obj.field("env").value(name.clone()),
            ExecError::NotStaticElf(e) => e.to_error_object().path(PLUGIN_PATH),
            ExecError::Program(e) => e.to_error_object().path(PLUGIN_PATH),
            ExecError::PluginFd(_) => obj.path(PLUGIN_PATH),
            ExecError::ReportFd { fd, .. } => obj.field("report-fd").value(fd.to_string()),
            ExecError::LandlockUnsupported { abi } => obj
                .field("landlock_abi")
                .value(abi.to_string())
                .next(&probe_command()),
            ExecError::UnsupportedPlatform => obj.next(&probe_command()),
            ExecError::LandlockNotEnforced { status } => obj
                .field("landlock_status")
                .value(status.clone())
                .next(&probe_command()),
            ExecError::ParentGone { ppid } => obj.field("ppid").value(ppid.to_string()),
            ExecError::Rlimit { resource, .. } => obj.field("rlimits").value(*resource),
            ExecError::Capabilities { step, .. } => obj.field("capabilities").value(*step),
            ExecError::Exec(e) => match e.raw_os_error() {
                Some(errno) => obj.field("errno").value(errno.to_string()),
                None => obj,
            },
            ExecError::Identity { step, .. } => obj.field("identity").value(*step),
            ExecError::Stage { step, .. } => obj.field("stage").value(*step),
            ExecError::Namespaces { step, .. } => {
                obj.field("namespaces").value(*step).next(&probe_command())
            }
            _ => obj,
        }
    }
}

/// Runs the whole sequence. Returns only on failure, after reporting it on the report descriptor
/// (when that descriptor is usable); the caller prints it on stderr.
pub fn run(inv: &Invocation, env: &[proto::runner::EnvVar]) -> Result<Infallible, ExecError> {
    let start = Instant::now();
    let mut report = claim_report(inv.report_fd)?;
    let err = match confine_and_exec(inv, env, start, &mut report) {
        Ok(never) => match never {},
        Err(e) => e,
    };
    let line = SandboxReport::Error(err.to_error_object());
    let _ = write_line(&mut report, &line);
    Err(err)
}

fn claim_report(fd: i32) -> Result<File, ExecError> {
    if fd <= PLUGIN_FD {
        return Err(ExecError::ReportFd {
            fd,
            source: io::Error::from_raw_os_error(libc::EBADF),
        });
    }
    sys::confine::claim_inherited_fd(fd)
        .map(File::from)
        .map_err(|source| ExecError::ReportFd { fd, source })
}

fn check_plugin_path(path: &str) -> Result<(), ExecError> {
    if path == PLUGIN_PATH {
        Ok(())
    } else {
        Err(ExecError::BadPluginPath {
            path: path.to_owned(),
        })
    }
}

fn check_limits(limits: &RunnerLimits) -> Result<(), ExecError> {
    match limits.below_minimum() {
        Some((field, value)) => Err(ExecError::BadLimit { field, value }),
        None => Ok(()),
    }
}

fn claim_plugin() -> Result<File, ExecError> {
    sys::confine::claim_inherited_fd(PLUGIN_FD)
        .map(File::from)
        .map_err(ExecError::PluginFd)
}

/// What the plugin is: a static ELF, or (with runtime directories) a script or dynamic program
/// whose interpreter and libraries resolve inside them.
fn check_program(
    plugin: &File,
    runtime: &[proto::RuntimeDir],
) -> Result<elf::runtime::Program, ExecError> {
    Ok(elf::runtime::check_program(
        plugin,
        runtime,
        elf::runtime::Depth::Plugin,
    )?)
}

fn parent_death_signal() -> Result<(), ExecError> {
    sys::confine::set_parent_death_kill().map_err(ExecError::ParentDeathSignal)?;
    // The launcher is the parent and never pid 1; a parent of 1 means it died before the signal
    // was armed (a subreaper parent would be some other pid, see docs/design.md: launch is the
    // subreaper and the parent at once).
    match sys::confine::parent_pid() {
        0 | 1 => Err(ExecError::ParentGone {
            ppid: sys::confine::parent_pid(),
        }),
        _ => Ok(()),
    }
}

/// The CPUs the launcher may use, taken before init and the plugin are forked (they inherit
/// them). A launcher starts its runner on another CPU than its own and gives it every CPU back
/// right after its exec (`sys::spawn::Exec::elsewhere`); a launcher that is not scheduled again
/// before the runner forks would leave the plugin on one CPU, so the runner takes them itself.
/// Where they cannot be read or set, the runner keeps what it has (a matter of speed only).
fn take_parents_cpus() {
    use nix::sched::{sched_getaffinity, sched_setaffinity};
    if let Ok(cpus) = sched_getaffinity(nix::unistd::getppid()) {
        let _ = sched_setaffinity(nix::unistd::Pid::from_raw(0), &cpus);
    }
}

/// The plugin's parent-death signal (its parent is the run's init, pid 1 of its namespace; when
/// init dies the kernel kills the plugin anyway).
fn plugin_parent_death_signal() -> Result<(), ExecError> {
    sys::confine::set_parent_death_kill().map_err(ExecError::ParentDeathSignal)?;
    if crate::namespaces::plugin_parent_is_init() {
        Ok(())
    } else {
        Err(ExecError::ParentGone {
            ppid: sys::confine::parent_pid(),
        })
    }
}

fn set_rlimits(limits: &RunnerLimits) -> Result<Rlimits, ExecError> {
    use nix::sys::resource::Resource;
    let limits = limits.rlimits();
    // CPU: at the soft limit the kernel sends SIGXCPU (which ends a plugin that does not catch
    // it, and names the limit that stopped it); at the hard limit, one second later, SIGKILL.
    let table = [
        (
            "RLIMIT_AS",
            Resource::RLIMIT_AS,
            limits.as_bytes,
            limits.as_bytes,
        ),
        (
            "RLIMIT_CPU",
            Resource::RLIMIT_CPU,
            limits.cpu_seconds,
            limits.cpu_hard_seconds,
        ),
        (
            "RLIMIT_FSIZE",
            Resource::RLIMIT_FSIZE,
            limits.fsize_bytes,
            limits.fsize_bytes,
        ),
        (
            "RLIMIT_NOFILE",
            Resource::RLIMIT_NOFILE,
            limits.nofile,
            limits.nofile,
        ),
        (
            "RLIMIT_NPROC",
            Resource::RLIMIT_NPROC,
            limits.nproc,
            limits.nproc,
        ),
        (
            "RLIMIT_CORE",
            Resource::RLIMIT_CORE,
            limits.core,
            limits.core,
        ),
        (
            "RLIMIT_MEMLOCK",
            Resource::RLIMIT_MEMLOCK,
            limits.memlock_bytes,
            limits.memlock_bytes,
        ),
        (
            "RLIMIT_SIGPENDING",
            Resource::RLIMIT_SIGPENDING,
            limits.sigpending,
            limits.sigpending,
        ),
    ];
    for (resource, r, soft, hard) in table {
        sys::confine::set_rlimit(r, soft, hard)
            .map_err(|source| ExecError::Rlimit { resource, source })?;
    }
    Ok(limits)
}

fn cap_step(step: &'static str) -> impl Fn(io::Error) -> ExecError {
    move |source| ExecError::Capabilities { step, source }
}

/// While CAP_SETPCAP is still held (root, or anyone inside its new user namespace): uid 0 must gain
/// nothing at exec, for good (locked securebits), and the bounding set is emptied. Returns how many
/// capabilities this kernel knows.
fn lock_capabilities() -> Result<u32, ExecError> {
    use sys::confine as c;
    let (eff, prm, _) = c::capability_sets().map_err(cap_step("capget"))?;
    if nix::unistd::geteuid().as_raw() != 0 && eff == 0 && prm == 0 {
        // Without privilege neither is allowed, nor needed: nothing can be gained from an empty
        // permitted set once no_new_privs is set.
        return Ok(0);
    }
    c::set_securebits(c::LOCKED_SECUREBITS).map_err(cap_step("securebits"))?;
    // The capabilities this kernel knows: 0..known (EINVAL past the last one).
    for cap in 0..64 {
        match c::drop_bounding_cap(cap) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && cap > 0 => return Ok(cap),
            Err(e) => return Err(cap_step("bounding set")(e)),
        }
    }
    Ok(64)
}

/// Clears the ambient, effective, permitted and inheritable sets and checks that they, and the
/// bounding set's first `known` capabilities, are empty.
fn clear_capabilities(known: u32) -> Result<(), ExecError> {
    use sys::confine as c;
    c::clear_ambient_caps().map_err(cap_step("ambient set"))?;
    c::clear_capability_sets().map_err(cap_step("capset"))?;
    let sets = c::capability_sets().map_err(cap_step("capget"))?;
    if sets != (0, 0, 0) {
        return Err(cap_step("verify")(io::Error::from_raw_os_error(
            libc::EPERM,
        )));
    }
    if (0..known).any(|cap| c::bounding_has(cap).unwrap_or(false)) {
        return Err(cap_step("verify bounding set")(
            io::Error::from_raw_os_error(libc::EPERM),
        ));
    }
    Ok(())
}

fn set_no_new_privs() -> Result<(), ExecError> {
    sys::confine::set_no_new_privs().map_err(ExecError::NoNewPrivs)
}

/// What Landlock enforced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandlockApplied {
    pub abi: u32,
    pub status: &'static str,
    pub net: bool,
    pub scopes: bool,
}

/// The Landlock ABI the ruleset is built for: the kernel's, or `cap` when that is lower.
pub fn target_abi(kernel_abi: u32, cap: Option<u32>) -> Result<u32, ExecError> {
    let abi = cap.map_or(kernel_abi, |c| c.min(kernel_abi));
    if abi < REQUIRED_LANDLOCK_ABI {
        return Err(ExecError::LandlockUnsupported { abi });
    }
    Ok(abi)
}

/// Applies the ruleset as a kernel with Landlock ABI `min(cap, kernel)` would get it: the ABI 3
/// file rights always (hard requirement), TCP bind/connect from ABI 4 and the scopes from ABI 6
/// (best effort).
fn apply_landlock(
    plugin: &File,
    runtime: &[proto::RuntimeDir],
    cap: Option<u32>,
) -> Result<LandlockApplied, ExecError> {
    use landlock::{
        Access, AccessFs, AccessNet, CompatLevel, Compatible, LandlockStatus, PathBeneath, Ruleset,
        RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
    };
    use std::os::unix::fs::OpenOptionsExt;

    let target = target_abi(sys::confine::landlock_abi_version().unwrap_or(0), cap)?;
    let stage = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(".")
        .map_err(|source| ExecError::Stage {
            step: "opening the working directory",
            source,
        })?;
    // The rights come from `proto::runner` (the description `dot-launch --explain` prints).
    let stage_rights = fs_rights(&proto::runner::STAGE_RIGHTS);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V3))?
        .set_compatibility(CompatLevel::BestEffort);
    if target >= 4 {
        ruleset = ruleset.handle_access(AccessNet::from_all(ABI::V4))?;
    }
    if target >= 6 {
        ruleset = ruleset.scope(Scope::from_all(ABI::V6))?;
    }
    let ruleset = ruleset
        .create()?
        .set_compatibility(CompatLevel::HardRequirement);
    // A sealed memfd (what dot-launch hands over) lives on an internal mount that Landlock neither
    // mediates nor accepts a rule for: it executes without one and nobody can change it. A plugin
    // file on a real filesystem gets read+execute on its own inode and nothing else.
    let ruleset = if sys::fs::is_frozen(plugin) {
        ruleset
    } else {
        ruleset.add_rule(PathBeneath::new(
            plugin,
            fs_rights(&proto::runner::PLUGIN_RIGHTS),
        ))?
    };
    let mut ruleset = ruleset.add_rule(PathBeneath::new(&stage, stage_rights))?;
    for dir in runtime {
        // The bind made in the private root at the same path (read-only, nosuid, nodev).
        let beneath = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(dir.as_str())
            .map_err(|source| ExecError::Stage {
                step: "opening a runtime directory in the private root",
                source,
            })?;
        ruleset = ruleset.add_rule(PathBeneath::new(
            &beneath,
            fs_rights(&proto::runner::RUNTIME_RIGHTS),
        ))?;
    }
    let status = ruleset.restrict_self()?;
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => abi_number(effective_abi).min(target),
        _ => 0,
    };
    let status_word = match status.ruleset {
        RulesetStatus::FullyEnforced => "fully-enforced",
        RulesetStatus::PartiallyEnforced => "partially-enforced",
        RulesetStatus::NotEnforced => "not-enforced",
    };
    if status.ruleset == RulesetStatus::NotEnforced
        || !status.no_new_privs
        || abi < REQUIRED_LANDLOCK_ABI
    {
        return Err(ExecError::LandlockNotEnforced {
            status: format!(
                "{status_word}, abi {abi}, no_new_privs {}",
                status.no_new_privs
            ),
        });
    }
    Ok(LandlockApplied {
        abi,
        status: status_word,
        net: abi >= 4,
        scopes: abi >= 6,
    })
}

/// The Landlock crate's set of the rights `rights` names.
fn fs_rights(rights: &[proto::runner::FsRight]) -> landlock::BitFlags<landlock::AccessFs> {
    use landlock::AccessFs;
    use proto::runner::FsRight;
    rights
        .iter()
        .map(|r| match r {
            FsRight::Execute => AccessFs::Execute,
            FsRight::WriteFile => AccessFs::WriteFile,
            FsRight::ReadFile => AccessFs::ReadFile,
            FsRight::ReadDir => AccessFs::ReadDir,
            FsRight::RemoveDir => AccessFs::RemoveDir,
            FsRight::RemoveFile => AccessFs::RemoveFile,
            FsRight::MakeChar => AccessFs::MakeChar,
            FsRight::MakeDir => AccessFs::MakeDir,
            FsRight::MakeReg => AccessFs::MakeReg,
            FsRight::MakeSock => AccessFs::MakeSock,
            FsRight::MakeFifo => AccessFs::MakeFifo,
            FsRight::MakeBlock => AccessFs::MakeBlock,
            FsRight::MakeSym => AccessFs::MakeSym,
            FsRight::Refer => AccessFs::Refer,
            FsRight::Truncate => AccessFs::Truncate,
        })
        .collect()
}

fn abi_number(abi: landlock::ABI) -> u32 {
    // The crate's ABI enum is not a number in its API; its Display is ("unsupported" or the number).
    abi.to_string().parse().unwrap_or(0)
}

/// The seccomp program for this launch, ready to install, and the policy's digest.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn build_seccomp(
    params: crate::policy::Params,
    notify: bool,
) -> Result<(Vec<sys::confine::SockFilter>, proto::Sha256), ExecError> {
    let policy = |e: seccompiler::BackendError| ExecError::SeccompPolicy(e.to_string());
    let (mut program, digest) = crate::seccomp::program_and_digest(params).map_err(policy)?;
    if !notify {
        return Ok((program, digest));
    }
    crate::denials::notifying(&mut program);
    Ok((
        program,
        crate::denials::policy_sha256(params.runtime).map_err(policy)?,
    ))
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn install_seccomp(
    program: &[sys::confine::SockFilter],
    handshake: Option<crate::denials::PluginSide>,
) -> Result<(), ExecError> {
    match handshake {
        None => sys::confine::install_seccomp_filter(program).map_err(ExecError::SeccompInstall),
        Some(h) => {
            let listener = sys::confine::install_seccomp_filter_with_listener(program)
                .map_err(ExecError::SeccompInstall)?;
            h.hand_over(listener).map_err(ExecError::SeccompInstall)
        }
    }
}

fn claim_denials(fd: i32) -> Result<File, ExecError> {
    if fd <= REPORT_FD {
        return Err(ExecError::BadLimit {
            field: "denials-fd",
            value: u64::try_from(fd).unwrap_or(0),
        });
    }
    sys::confine::claim_inherited_fd(fd)
        .map(File::from)
        .map_err(|source| ExecError::ReportFd { fd, source })
}

/// Microseconds since the previous lap.
struct Laps(Instant);

impl Laps {
    fn lap(&mut self) -> u64 {
        let now = Instant::now();
        let us = now.duration_since(self.0).as_micros() as u64;
        self.0 = now;
        us
    }
}

fn peak_rss_kib() -> u64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_SELF)
        .map(|u| u.max_rss().max(0) as u64)
        .unwrap_or(0)
}

fn default_signals() -> Result<(), ExecError> {
    sys::confine::default_signals().map_err(ExecError::Signals)
}

fn cloexec_inherited() -> Result<(), ExecError> {
    sys::confine::cloexec_from(3).map_err(ExecError::Cloexec)
}

fn write_line(report: &mut File, line: &SandboxReport) -> io::Result<()> {
    let mut text = serde_json::to_string(line).map_err(io::Error::other)?;
    text.push('\n');
    report.write_all(text.as_bytes())
}

/// Hands the stage to the launcher: one NUL byte with a descriptor of the stage's root attached
/// (`SCM_RIGHTS`), its own message on the report socket, sent before seccomp (which denies
/// `sendmsg`); the report line follows as the next message.
fn send_stage(report: &File, stage: &std::os::fd::OwnedFd) -> io::Result<()> {
    use std::os::fd::AsFd;
    match sys::process::send_with_fd(report.as_fd(), STAGE_MESSAGE, stage.as_fd())? {
        1 => Ok(()),
        _ => Err(io::Error::new(
            io::ErrorKind::WriteZero,
            "the stage message was not sent",
        )),
    }
}

/// Waits for the launcher's go ([`GATE_MESSAGE`] with one descriptor: the on-disk stage) and
/// returns that descriptor. The socket closed first (the launcher refused the run or ended), or
/// any other message: an error, and nothing of the plugin's runs.
fn wait_for_go(report: &File) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::AsFd;
    let mut buf = [0u8; 16];
    loop {
        match sys::process::recv_with_fds(report.as_fd(), &mut buf) {
            Ok((n, mut fds)) if &buf[..n] == GATE_MESSAGE && fds.len() == 1 => {
                return fds.pop().ok_or_else(|| io::Error::other("no descriptor"))
            }
            Ok((0, _)) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the launcher closed the report socket without a go",
                ))
            }
            Ok((n, fds)) => {
                return Err(io::Error::other(format!(
                    "a message of {n} bytes and {} descriptors instead of the go",
                    fds.len()
                )))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The plugin's `argv[0]` (its registry name) as the exec takes it.
fn exec_argv0(inv: &Invocation) -> Result<CString, ExecError> {
    CString::new(inv.argv0.as_str()).map_err(|e| ExecError::Exec(io::Error::other(e)))
}

/// The plugin's environment: exactly the `NAME=VALUE` pairs given, each name once.
fn exec_env(env: &[proto::runner::EnvVar]) -> Result<Vec<CString>, ExecError> {
    let mut seen = std::collections::BTreeSet::new();
    env.iter()
        .map(|v| {
            if !seen.insert(v.name.to_string()) {
                return Err(ExecError::BadEnv {
                    name: v.name.to_string(),
                });
            }
            CString::new(v.to_arg()).map_err(|_| ExecError::BadEnv {
                name: v.name.to_string(),
            })
        })
        .collect()
}

/// Executes the plugin through its descriptor (no path: the private root has no `/proc`) with
/// exactly `envp` as its environment.
fn exec_plugin(plugin: &File, argv0: &CString, envp: &[CString], cookie: u64) -> ExecError {
    use std::os::fd::AsFd;
    let envp: Vec<&std::ffi::CStr> = envp.iter().map(CString::as_c_str).collect();
    ExecError::Exec(sys::confine::execveat_with_cookie(
        plugin.as_fd(),
        &[argv0.as_c_str()],
        &envp,
        cookie,
    ))
}

/// Closes this process's copy of the report descriptor (the runner and init keep none: the
/// launcher reads the report until the plugin's side closes at its exec).
fn sys_close_report(report: &mut File) {
    use std::os::fd::AsRawFd;
    let _ = nix::unistd::close(report.as_raw_fd());
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn confine_and_exec(
    inv: &Invocation,
    env: &[proto::runner::EnvVar],
    start: Instant,
    report: &mut File,
) -> Result<Infallible, ExecError> {
    use crate::namespaces::{self, Below, Role};
    // Decide.
    check_plugin_path(&inv.plugin)?;
    check_limits(&inv.limits)?;
    let argv0 = exec_argv0(inv)?;
    let envp = exec_env(env)?;
    let plugin = claim_plugin()?;
    let mut denials = inv.denials_fd.map(claim_denials).transpose()?;
    let mut laps = Laps(Instant::now());
    let mut t = ConfineTimings::default();
    let plugin_program = check_program(&plugin, &inv.runtime)?;
    let script = matches!(plugin_program, elf::runtime::Program::Script { .. });
    t.elf_us = laps.lap();
    let id = identity::plan().map_err(|source| ExecError::Identity {
        step: "reading /proc/self/uid_map",
        source,
    })?;
    let stage_err = |step| move |source| ExecError::Stage { step, source };
    let ns_err = |(step, source)| ExecError::Namespaces { step, source };
    // Without a gate the inputs are in the working directory's `in/`, opened now (by the identity
    // that placed them); with one, in the directory the launcher's go carries (below).
    let mut inputs = if inv.gate {
        Vec::new()
    } else {
        stage::open_inputs(None).map_err(stage_err("opening the inputs in in/"))?
    };
    // Acquire: identity, namespaces, the run's init, the private root, the plugin's process.
    let owner = match id {
        identity::Plan::UserNamespace { uid, gid } => {
            identity::enter_user_namespace(uid, gid)
                .map_err(|(step, source)| ExecError::Identity { step, source })?;
            None
        }
        identity::Plan::PerRunUid { .. } => Some(id.ids()),
    };
    t.identity_us = laps.lap();
    parent_death_signal()?;
    take_parents_cpus();
    t.parent_death_us = laps.lap();
    namespaces::unshare_all().map_err(ns_err)?;
    let pipe =
        namespaces::StatusPipe::new().map_err(|source| ns_err(("the status pipe", source)))?;
    let status = match namespaces::fork_init(pipe).map_err(ns_err)? {
        Role::Runner { init, status } => {
            drop((plugin, inputs, denials));
            // The report descriptor is the caller's; closing every standard stream and the
            // report here leaves the plugin's side the only holder.
            sys_close_report(report);
            namespaces::close_standard_streams();
            namespaces::mirror(init, status)
        }
        Role::Init { status } => status,
    };
    namespaces::init_parent_death(&status)
        .map_err(|source| ns_err(("init's parent-death signal", source)))?;
    let bound = inv.limits.stage();
    let stage_root = stage::create(bound, owner).map_err(stage_err("creating the tmpfs"))?;
    namespaces::private_root(&stage_root, &inv.runtime, script).map_err(ns_err)?;
    let handshake = match denials {
        Some(_) => Some(
            crate::denials::Handshake::new()
                .map_err(|source| ns_err(("the denials handshake", source)))?,
        ),
        None => None,
    };
    let handshake_plugin = match namespaces::fork_plugin().map_err(ns_err)? {
        Below::Init { plugin: pid } => {
            drop((plugin, inputs, stage_root));
            sys_close_report(report);
            namespaces::close_standard_streams();
            if let (Some(h), Some(out)) = (handshake, denials.take()) {
                namespaces::init_answer_denials(pid, h.init_side(), out);
            }
            namespaces::init_wait(pid, status)
        }
        Below::Plugin => {
            drop((status, denials.take()));
            handshake.map(crate::denials::Handshake::plugin_side)
        }
    };
    t.namespaces_us = laps.lap();
    // The plugin's process: nothing it could gain at its exec (needs nothing of the launcher's,
    // so before the gate), its identity and its stage, then narrow.
    let known = lock_capabilities()?;
    t.capabilities_us = laps.lap();
    if inv.gate {
        // Nothing of the plugin's has been read beyond its headers: wait for the launcher's go.
        use std::os::fd::AsFd;
        let base = wait_for_go(report).map_err(stage_err("waiting for the launcher's go"))?;
        inputs = stage::open_inputs(Some(base.as_fd()))
            .map_err(stage_err("opening the inputs in in/"))?;
        t.gate_us = laps.lap();
    }
    if let identity::Plan::PerRunUid { id } = id {
        identity::become_run_uid(id)
            .map_err(|(step, source)| ExecError::Identity { step, source })?;
    }
    t.identity_us += laps.lap();
    stage::fill(&stage_root, inputs).map_err(stage_err("copying the inputs"))?;
    send_stage(report, &stage_root).map_err(stage_err("handing the stage to the launcher"))?;
    drop(stage_root);
    t.stage_us = laps.lap();
    plugin_parent_death_signal()?;
    t.parent_death_us += laps.lap();
    let rlimits = set_rlimits(&inv.limits)?;
    t.rlimits_us = laps.lap();
    clear_capabilities(known)?;
    t.capabilities_us += laps.lap();
    set_no_new_privs()?;
    t.no_new_privs_us = laps.lap();
    let landlock = apply_landlock(&plugin, &inv.runtime, inv.landlock_abi)?;
    t.landlock_us = laps.lap();
    default_signals()?;
    t.signals_us = laps.lap();
    let params = crate::policy::Params {
        pid: std::process::id(),
        cookie: sys::confine::random_u64().map_err(|e| ExecError::SeccompPolicy(e.to_string()))?,
        runtime: !inv.runtime.is_empty(),
    };
    let (program, seccomp_policy_sha256) = build_seccomp(params, handshake_plugin.is_some())?;
    t.seccomp_build_us = laps.lap();
    install_seccomp(&program, handshake_plugin)?;
    t.seccomp_install_us = laps.lap();
    cloexec_inherited()?;
    if script {
        // The interpreter reads the pinned script through /dev/fd/4.
        use std::os::fd::AsFd;
        sys::confine::keep_across_exec(plugin.as_fd()).map_err(ExecError::Cloexec)?;
    }
    t.cloexec_us = laps.lap();
    t.peak_rss_kib = peak_rss_kib();
    let (uid, gid) = id.ids();
    let enforced = Enforced {
        landlock_abi: landlock.abi,
        landlock_status: landlock.status.to_owned(),
        landlock_net: landlock.net,
        landlock_scopes: landlock.scopes,
        no_new_privs: true,
        capabilities: "none".to_owned(),
        rlimits,
        identity: Identity {
            uid,
            gid,
            kind: id.kind(),
        },
        stage: bound,
        namespaces: namespaces::names(matches!(id, identity::Plan::UserNamespace { .. })),
        runtime: inv.runtime.iter().map(|d| d.to_string()).collect(),
        program: Some(plugin_program.word().to_owned()),
        seccomp_policy_sha256,
        confine_us: Some(start.elapsed().as_micros() as u64),
        timings: Some(t),
    };
    write_line(report, &SandboxReport::Enforced(enforced)).map_err(ExecError::Report)?;
    Err(exec_plugin(&plugin, &argv0, &envp, params.cookie))
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn confine_and_exec(
    _inv: &Invocation,
    _env: &[proto::runner::EnvVar],
    _start: Instant,
    _report: &mut File,
) -> Result<Infallible, ExecError> {
    Err(ExecError::UnsupportedPlatform)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The description `dot-launch --explain` prints is the ruleset's: every ABI 3 right handled,
    /// and the rules' rights are what the runner grants.
    #[test]
    fn the_landlock_rights_are_proto_runners() {
        use landlock::{Access, AccessFs, ABI};
        assert_eq!(
            fs_rights(&proto::runner::HANDLED_FS),
            AccessFs::from_all(ABI::V3)
        );
        assert_eq!(
            fs_rights(&proto::runner::PLUGIN_RIGHTS),
            AccessFs::ReadFile | AccessFs::Execute
        );
        assert!(!fs_rights(&proto::runner::STAGE_RIGHTS).contains(AccessFs::Execute));
    }

    #[test]
    fn only_the_fd4_path_is_accepted() {
        assert!(check_plugin_path(PLUGIN_PATH).is_ok());
        for bad in [
            "/proc/self/fd/3",
            "/proc/self/fd/4/",
            "/bin/true",
            "",
            "/proc/self/fd/44",
        ] {
            let err = check_plugin_path(bad).expect_err(bad);
            assert_eq!(err.kind(), Kind::BadPluginPath);
        }
    }

    #[test]
    fn the_landlock_abi_can_only_be_lowered_and_never_below_3() {
        assert_eq!(target_abi(7, None).ok(), Some(7));
        assert_eq!(target_abi(7, Some(4)).ok(), Some(4));
        assert_eq!(target_abi(5, Some(7)).ok(), Some(5));
        assert_eq!(target_abi(3, Some(9)).ok(), Some(3));
        for (kernel, cap) in [(7, Some(2)), (7, Some(0)), (2, None), (2, Some(7))] {
            let err = target_abi(kernel, cap).expect_err("below 3");
            assert_eq!(err.kind(), Kind::LandlockUnsupported);
        }
    }

    #[test]
    fn tiny_limits_are_usage_errors() {
        let good = RunnerLimits {
            memory_bytes: 1 << 30,
            cpu_seconds: 10,
            file_bytes: 1 << 20,
            descriptors: 64,
            tasks: 64,
            stage_bytes: 16 << 20,
            stage_inodes: 256,
        };
        assert!(check_limits(&good).is_ok());
        for (field, bad) in [
            (
                "descriptors",
                RunnerLimits {
                    descriptors: 3,
                    ..good
                },
            ),
            ("tasks", RunnerLimits { tasks: 0, ..good }),
            (
                "stage-bytes",
                RunnerLimits {
                    stage_bytes: 4096,
                    ..good
                },
            ),
            (
                "stage-inodes",
                RunnerLimits {
                    stage_inodes: 2,
                    ..good
                },
            ),
        ] {
            let err = check_limits(&bad).expect_err(field);
            assert_eq!(err.kind(), Kind::BadLimit);
            assert_eq!(err.to_error_object().field.as_deref(), Some(field));
        }
    }
}
