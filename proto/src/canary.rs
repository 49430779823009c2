//! The canary's escape probes, in one list: each probe's name (the `probe` input of a request to
//! `dot-canary`), the layer expected to stop it and the outcomes accepted under `process`
//! containment and, where running it unconfined is safe and meaningful, unconfined. `dot-canary`
//! performs each [`Probe`] (an exhaustive match: a probe added here and not performed there does
//! not compile); `dot-sandbox probe --prove` and the probe suite run [`PROBES`] and compare.
//!
//! An outcome is `ok` (the escape worked), `none` (nothing was found to use), `errno:NAME` (the
//! kernel refused), `signal:NAME` (a signal ended the canary), or a probe's own word (`default`,
//! `ignored:SIGPIPE`). The canary writes it to `out/result.json` ([`CanaryResult`]).

use serde::{Deserialize, Serialize};

/// The layer expected to stop a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    Landlock,
    Seccomp,
    Rlimit,
    Capability,
    /// Descriptor hygiene: the runner leaves the plugin only 0, 1 and 2.
    Descriptors,
    /// The kernel refuses it whatever the confinement.
    Kernel,
    /// The static-ELF rule, which the runner applies before anything else: no segment both
    /// writable and executable, so the kernel maps data without execute.
    Elf,
    /// What the runner's exec hands over: default signal dispositions, no blocked signal.
    Signals,
    /// The run's private view of the host: its own mount, PID, IPC, network, UTS and cgroup namespaces,
    /// its stage as the root (no host path exists).
    Namespaces,
    /// A positive control: must succeed under containment.
    Control,
}

/// What a probe must give, and how it is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expect {
    pub layer: Layer,
    /// The outcomes accepted under `process`.
    pub confined: &'static [&'static str],
    /// The outcomes accepted unconfined, where running it so is safe and meaningful.
    pub unconfined: Option<&'static [&'static str]>,
    /// Standard input is a terminal (the TIOCSTI probes).
    pub pty: bool,
    /// Unconfined, the canary first re-executes itself (`--reexec`), as a Rust runner that does
    /// not reset its signal dispositions would execute a plugin.
    pub reexec: bool,
}

/// One escape probe of the list: the probe, its name, and what it must give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeSpec {
    pub probe: Probe,
    pub name: &'static str,
    pub layer: Layer,
    pub confined: &'static [&'static str],
    pub unconfined: Option<&'static [&'static str]>,
    pub pty: bool,
    pub reexec: bool,
}

impl ProbeSpec {
    const fn new(probe: Probe, name: &'static str, e: Expect) -> ProbeSpec {
        ProbeSpec {
            probe,
            name,
            layer: e.layer,
            confined: e.confined,
            unconfined: e.unconfined,
            pty: e.pty,
            reexec: e.reexec,
        }
    }
}

const OK: &[&str] = &["ok"];
const EPERM: &[&str] = &["errno:EPERM"];
const ENOENT: &[&str] = &["errno:ENOENT"];

const fn p(
    layer: Layer,
    confined: &'static [&'static str],
    unconfined: Option<&'static [&'static str]>,
) -> Expect {
    Expect {
        layer,
        confined,
        unconfined,
        pty: false,
        reexec: false,
    }
}

const fn seccomp() -> Expect {
    p(Layer::Seccomp, EPERM, Some(OK))
}

/// A host path: it does not exist in the private root (unconfined, it does).
const fn private_root() -> Expect {
    p(Layer::Namespaces, ENOENT, Some(OK))
}

const fn pty(e: Expect) -> Expect {
    Expect { pty: true, ..e }
}

const fn reexec(e: Expect) -> Expect {
    Expect { reexec: true, ..e }
}

/// Declares the list once: the [`Probe`] enum and [`PROBES`], in the same order.
macro_rules! probes {
    ($($variant:ident = $name:literal => $expect:expr;)*) => {
        /// An escape probe (see [`PROBES`] for its name and expected outcomes).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Probe {
            $($variant,)*
        }

        /// Every probe, in the order they run (a probe's index is its [`Probe`] discriminant).
        pub const PROBES: &[ProbeSpec] = &[$(ProbeSpec::new(Probe::$variant, $name, $expect),)*];
    };
}

probes! {
    // Files outside the stage, and special files inside it: none exists in the private root
    // (Landlock, which grants nothing beyond the stage, stays as a second layer).
    ReadEtcPasswd = "read-etc-passwd" => private_root();
    ReadProcSelfStatus = "read-proc-self-status" => private_root();
    ReadParentEnviron = "read-parent-environ" => private_root();
    // tmpfs outside the stage (memory no stage bound counts), and its own memory through /proc.
    CreateDevShm = "create-dev-shm" => private_root();
    WriteProcSelfMem = "write-proc-self-mem" => private_root();
    // A path opened with O_PATH (which Landlock does not check) as the base of an openat.
    OPathOpenat = "o-path-openat" => private_root();
    WriteOutside = "write-outside" => private_root();
    CreateOutside = "create-outside" => private_root();
    RenameOutside = "rename-outside" => private_root();
    UnlinkOutside = "unlink-outside" => private_root();
    // link and symlink are not on the filter's allowlist, which answers before any path is looked up.
    LinkOutside = "link-outside" => seccomp();
    TruncateOutside = "truncate-outside" => private_root();
    SymlinkInStage = "symlink-in-stage" => seccomp();
    // mknod is also refused by the filter, which answers before Landlock (no make_fifo right).
    MkfifoInStage = "mkfifo-in-stage" => p(Layer::Seccomp, EPERM, Some(OK));
    RenameAcrossStageDirs = "rename-across-stage-dirs" =>
        p(Layer::Landlock, &["errno:EXDEV"], Some(OK));
    // The plugin's own binary through /proc/self/exe: there is no /proc in the private root.
    // Unconfined the kernel refuses writes to a running image (ETXTBSY): no counterpart.
    WriteOwnBinary = "write-own-binary" => p(Layer::Namespaces, ENOENT, None);
    TruncateOwnBinary = "truncate-own-binary" => p(Layer::Namespaces, ENOENT, None);
    // What else of the host a plugin could see: a host file's size and times, the host's
    // processes (through /proc, or any call that takes a pid), its network interfaces, its name.
    StatHostPath = "stat-host-path" => private_root();
    ListProc = "list-proc" => private_root();
    SysClassNet = "sys-class-net" => private_root();
    OtherPids = "other-pids" => p(Layer::Namespaces, &["none"], Some(OK));
    HostName = "host-name" => p(Layer::Namespaces, &["none"], Some(OK));
    GetpgidInit = "getpgid-init" => seccomp();
    GetpriorityUser = "getpriority-user" => seccomp();
    IoprioGetUser = "ioprio-get-user" => seccomp();
    Sysinfo = "sysinfo" => seccomp();
    // Self-confinement that costs the host kernel memory no limit charges: Landlock domains and
    // stacked seccomp filters (unconfined, prctl(PR_SET_SECCOMP) with no program is EFAULT).
    LandlockCreateRuleset = "landlock-create-ruleset" => seccomp();
    SeccompSyscall = "seccomp-syscall" => seccomp();
    PrctlSetSeccomp = "prctl-set-seccomp" => p(Layer::Seccomp, EPERM, Some(&["errno:EFAULT"]));
    // Calls off the allowlist that Docker's default refuses too, and a number no kernel assigned
    // (unconfined the kernel answers ENOSYS: the filter refuses it first).
    SetMempolicy = "set-mempolicy" => seccomp();
    TimerCreate = "timer-create" => seccomp();
    UnassignedSyscall = "unassigned-syscall" => p(Layer::Seccomp, EPERM, Some(&["errno:ENOSYS"]));
    // Pipe buffers are kernel memory: the size stays the kernel's default.
    FsetpipeSz = "fsetpipe-sz" => seccomp();
    // Whole-file locks: every lock on a file scans the file's list of locks, so a plugin holding
    // tens of thousands (one open file each, kept by a mapping) made its own exit take longer
    // than the launcher's wait for it.
    Flock = "flock" => seccomp();
    // Metadata.
    Chmod = "chmod" => seccomp();
    Chown = "chown" => seccomp();
    Utimensat = "utimensat" => seccomp();
    Setxattr = "setxattr" => seccomp();
    FsIocSetflags = "fs-ioc-setflags" => seccomp();
    FsIocFssetxattr = "fs-ioc-fssetxattr" => seccomp();
    // Executing anything else.
    ExecBinSh = "exec-bin-sh" => seccomp();
    ExecStageFile = "exec-stage-file" => seccomp();
    ExecProcSelfExe = "exec-proc-self-exe" => seccomp();
    Execveat = "execveat" => seccomp();
    MemfdExec = "memfd-exec" => seccomp();
    // Network and IPC.
    SocketInet = "socket-inet" => seccomp();
    SocketInet6 = "socket-inet6" => seccomp();
    SocketUnix = "socket-unix" => seccomp();
    SocketNetlink = "socket-netlink" => seccomp();
    SocketPacket = "socket-packet" => seccomp();
    SocketMptcp = "socket-mptcp" => seccomp();
    Socketpair = "socketpair" => seccomp();
    ConnectTcpLoopback = "connect-tcp-loopback" => seccomp();
    ConnectAbstractUnix = "connect-abstract-unix" => seccomp();
    SysvShm = "sysv-shm" => seccomp();
    SysvSem = "sysv-sem" => seccomp();
    SysvMsg = "sysv-msg" => seccomp();
    PosixMq = "posix-mq" => seccomp();
    // Namespaces and new processes.
    UnshareUser = "unshare-user" => seccomp();
    UnshareMount = "unshare-mount" => seccomp();
    UnshareNet = "unshare-net" => seccomp();
    Setns = "setns" => seccomp();
    CloneNewuser = "clone-newuser" => seccomp();
    // The kernel refuses CLONE_NEWUSER with CLONE_THREAD itself (EINVAL); the filter answers first.
    CloneThreadNewuser = "clone-thread-newuser" =>
        p(Layer::Seccomp, EPERM, Some(&["errno:EINVAL"]));
    // A thread with a descriptor table of its own: RLIMIT_NOFILE bounds each table, so such
    // threads would multiply the run's descriptors (and the kernel objects behind them) by NPROC.
    CloneThreadOwnFiles = "clone-thread-own-files" => seccomp();
    // The same table of its own after the fact: close_range's unshare flag.
    CloseRangeUnshare = "close-range-unshare" => seccomp();
    CloneProcess = "clone-process" => seccomp();
    Fork = "fork" => seccomp();
    Vfork = "vfork" => seccomp();
    Clone3 = "clone3" => p(Layer::Seccomp, &["errno:ENOSYS"], Some(OK));
    Setsid = "setsid" => seccomp();
    Setpgid = "setpgid" => seccomp();
    // Other processes.
    KillParent = "kill-parent" => seccomp();
    KillAll = "kill-all" => seccomp();
    KillGroup = "kill-group" => seccomp();
    KillInit = "kill-init" => seccomp();
    TgkillParent = "tgkill-parent" => seccomp();
    TkillParent = "tkill-parent" => seccomp();
    SigqueueParent = "sigqueue-parent" => seccomp();
    // Signals sent by the kernel on the plugin's behalf, to whoever owns a descriptor: choosing
    // the owner, the signal, turning signal-driven I/O on, leases and dnotify (whose events signal
    // the owner). Landlock's ABI 6 signal scope blocks the delivery only; seccomp refuses the
    // calls on every kernel. Unconfined, each sets its target and sends nothing, except
    // sigio-sigkill, which aims SIGKILL at itself and is killed when the harness reads its output.
    FsetownParent = "fsetown-parent" => seccomp();
    FsetownInit = "fsetown-init" => seccomp();
    FsetownExParent = "fsetown-ex-parent" => seccomp();
    Fsetsig = "fsetsig" => seccomp();
    OAsync = "o-async" => seccomp();
    Fioasync = "fioasync" => seccomp();
    Fsetlease = "fsetlease" => seccomp();
    Fnotify = "fnotify" => seccomp();
    Fiosetown = "fiosetown" => seccomp();
    Siocspgrp = "siocspgrp" => seccomp();
    SigioSigkill = "sigio-sigkill" => p(Layer::Seccomp, EPERM, Some(&["signal:SIGKILL"]));
    Tiocsctty = "tiocsctty" => pty(seccomp());
    Tiocspgrp = "tiocspgrp" => pty(seccomp());
    Tiocsig = "tiocsig" => seccomp();
    // What the exec hands the plugin: every signal at its default, none blocked. Unconfined the
    // canary is executed by itself, a Rust program, which leaves SIGPIPE ignored.
    SignalDispositions = "signal-dispositions" =>
        reexec(p(Layer::Signals, &["default"], Some(&["ignored:SIGPIPE"])));
    // The plugin's argv[0] is its registry name, at every level (the harness names the canary
    // `canary`, as dot-launch names a plugin after its entry); nothing else is on its command line.
    Argv0 = "argv0" => p(Layer::Control, &["argv0:canary"], Some(&["argv0:canary"]));
    PidfdOpenParent = "pidfd-open-parent" => seccomp();
    PtraceAttachParent = "ptrace-attach-parent" => seccomp();
    PtraceTraceme = "ptrace-traceme" => seccomp();
    ProcessVmReadvParent = "process-vm-readv-parent" => seccomp();
    ProcessVmWritevSelf = "process-vm-writev-self" => seccomp();
    PidfdGetfdParent = "pidfd-getfd-parent" => seccomp();
    PidfdSendSignalParent = "pidfd-send-signal-parent" => seccomp();
    KcmpParent = "kcmp-parent" => seccomp();
    // The parent's CPU time through its process CPU clock, which the kernel lets anyone read.
    CpuClockParent = "cpu-clock-parent" => seccomp();
    PrlimitParent = "prlimit-parent" => seccomp();
    // The parent's scheduling, set to what it already is (unconfined, nothing changes).
    SetpriorityParent = "setpriority-parent" => seccomp();
    IoprioSetParent = "ioprio-set-parent" => seccomp();
    SchedSetaffinityParent = "sched-setaffinity-parent" => seccomp();
    // Mounts and roots.
    Mount = "mount" => seccomp();
    Chroot = "chroot" => seccomp();
    Fsopen = "fsopen" => seccomp();
    // Executable memory.
    MmapExec = "mmap-exec" => seccomp();
    // A file of its own stage mapped executable: the filter refuses it without a runtime; with one
    // (where file mappings may be executable, for the loader) the stage's noexec mount does, with
    // the same errno. Writable and executable at once is refused by the filter either way.
    MmapExecStageFile = "mmap-exec-stage-file" => seccomp();
    MmapWxStageFile = "mmap-wx-stage-file" => seccomp();
    MprotectExec = "mprotect-exec" => seccomp();
    PkeyMprotectExec = "pkey-mprotect-exec" => seccomp();
    PersonalityReadImpliesExec = "personality-read-implies-exec" => seccomp();
    // Machine code written into its own data and called: the data segment is not executable.
    // Unconfined this is the same; the test suite shows the probe detects the escape with a copy
    // of the canary whose data segment has PF_X, which the runner refuses to run.
    WriteExecData = "write-exec-data" => p(Layer::Elf, &["signal:SIGSEGV"], None);
    // Kernel attack surface.
    IoUringSetup = "io-uring-setup" => seccomp();
    Bpf = "bpf" => seccomp();
    Keyctl = "keyctl" => seccomp();
    PerfEventOpen = "perf-event-open" => seccomp();
    Userfaultfd = "userfaultfd" => seccomp();
    FanotifyInit = "fanotify-init" => seccomp();
    NameToHandleAt = "name-to-handle-at" => seccomp();
    ModifyLdt = "modify-ldt" => seccomp();
    Syslog = "syslog" => seccomp();
    // Writeback of every filesystem of the host.
    Sync = "sync" => seccomp();
    DevUserfaultfd = "dev-userfaultfd" => private_root();
    // Legacy AIO: every context counts against one host-wide budget (fs.aio-max-nr).
    AioSetup = "aio-setup" => seccomp();
    // An inotify instance counts against its user's budget, up through every user namespace.
    InotifyInit = "inotify-init" => seccomp();
    // Other system-call ABIs: the i386 one through `int 0x80`, x32 numbers. The filter kills the
    // process; unconfined, `int 0x80` works where the kernel has IA-32 emulation (SIGSEGV where
    // it is off) and x32 where it has x32 (ENOSYS where it has not).
    Int80 = "int80" => p(Layer::Seccomp, &["signal:SIGSYS"], Some(&["ok", "signal:SIGSEGV"]));
    X32 = "x32" => p(Layer::Seccomp, &["signal:SIGSYS"], Some(&["ok", "errno:ENOSYS"]));
    // Host-wide memory mechanisms: the huge page pool (unconfined, ENOMEM where the host
    // reserved no huge pages) and KSM (EINVAL where the kernel has none).
    MmapHugetlb = "mmap-hugetlb" => p(Layer::Seccomp, EPERM, Some(&["ok", "errno:ENOMEM"]));
    MadviseMergeable =
        "madvise-mergeable" => p(Layer::Seccomp, EPERM, Some(&["ok", "errno:EINVAL"]));
    // KSM for the whole process at once (Linux 6.4 and later; EINVAL without KSM).
    PrctlMemoryMerge =
        "prctl-memory-merge" => p(Layer::Seccomp, EPERM, Some(&["ok", "errno:EINVAL"]));
    PrctlPdeathsig = "prctl-pdeathsig" => seccomp();
    // Terminal injection on standard input (a pty here).
    Tiocsti = "tiocsti" => pty(seccomp());
    TiocstiHighBits = "tiocsti-high-bits" => pty(seccomp());
    // A line discipline is kernel code chosen per terminal (n_gsm, n_hdlc, …).
    Tiocsetd = "tiocsetd" => pty(seccomp());
    // Privilege.
    // Raising a hard limit needs CAP_SYS_RESOURCE, which root need not hold (it does not on every
    // host); that every capability is gone is what the `capabilities` probe proves both ways.
    SetrlimitRaiseHard = "setrlimit-raise-hard" => p(Layer::Capability, EPERM, None);
    Capabilities = "capabilities" => p(Layer::Capability, &["none"], Some(OK));
    // Identity calls, to the identity it already has (unconfined, nothing changes but root's
    // supplementary groups, in the probe process only).
    SetuidSelf = "setuid-self" => seccomp();
    Setgroups = "setgroups" => seccomp();
    // Descriptors.
    InheritedFd = "inherited-fd" => p(Layer::Descriptors, &["none"], Some(OK));
    // Resource limits (the canary tries to exceed the limit it is told).
    Nofile = "nofile" => p(Layer::Rlimit, &["errno:EMFILE"], Some(OK));
    Fsize = "fsize" => p(Layer::Rlimit, &["errno:EFBIG"], Some(OK));
    AddressSpace = "address-space" => p(Layer::Rlimit, &["errno:ENOMEM"], Some(OK));
    Cpu = "cpu" => p(Layer::Rlimit, &["signal:SIGKILL", "signal:SIGXCPU"], Some(OK));
    // Positive controls.
    WriteInStage = "write-in-stage" => p(Layer::Control, OK, Some(OK));
    RenameInStage = "rename-in-stage" => p(Layer::Control, OK, Some(OK));
    Threads = "threads" => p(Layer::Control, OK, Some(OK));
    KillSelf = "kill-self" => p(Layer::Control, OK, Some(OK));
    TgkillOwnThread = "tgkill-own-thread" => p(Layer::Control, OK, Some(OK));
}

impl Probe {
    /// The probe's entry of [`PROBES`].
    pub fn spec(self) -> &'static ProbeSpec {
        &PROBES[self as usize]
    }

    /// The probe's name: the canary's `probe` input.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The probe named `name`.
    pub fn from_name(name: &str) -> Option<Probe> {
        PROBES.iter().find(|s| s.name == name).map(|s| s.probe)
    }
}

/// The canary's `out/result.json`: the probe it ran and the outcome it saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CanaryResult {
    pub probe: String,
    pub outcome: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_probe_is_listed_once_at_its_own_index_with_a_unique_name() {
        let mut names = std::collections::BTreeSet::new();
        for (i, s) in PROBES.iter().enumerate() {
            assert_eq!(s.probe as usize, i, "{}", s.name);
            assert_eq!(s.probe.spec(), s);
            assert_eq!(Probe::from_name(s.name), Some(s.probe));
            assert!(names.insert(s.name), "{} twice", s.name);
            assert!(!s.confined.is_empty(), "{}", s.name);
        }
        assert_eq!(Probe::from_name("no-such-probe"), None);
    }
}
