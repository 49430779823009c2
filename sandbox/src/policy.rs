//! The seccomp policy as data: an **allowlist**. [`ALLOWED`] names every system call the plugin may
//! make, each with the one-line reason it is there; every other number fails with an errno. Some
//! allowed calls are allowed only in part: [`refused_by_argument`] holds the argument values that
//! refuse them. [`deny_rules`] turns both into the one shape the compiler (`bpf`) takes: for each
//! refused syscall number the ways it is refused (an empty list refuses it whatever its
//! arguments). `seccomp` holds that program as built at build time.
//!
//! Refusals are `EPERM`, never a signal: runtimes probe some calls and must see an errno. Every
//! number above the highest syscall this policy knows ([`MAX_KNOWN_NR`]) gets `ENOSYS`, and so
//! does `clone3` (its flags live in memory a filter cannot read; glibc and Go fall back to
//! `clone`, whose flags it can). Not listed on purpose, although they "only restrict further":
//! `landlock_*`, `seccomp` and `prctl(PR_SET_SECCOMP)` — every Landlock domain and every stacked
//! filter is kernel memory that no limit of the run charges (docs/security.md has the figures).
//!
//! This file is also compiled into the crate's build script (`build.rs`), with `bpf`, which builds
//! the program once at build time; it depends on `seccompiler` and `libc` only.

use seccompiler::{
    BackendError, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond,
    SeccompRule,
};
use std::collections::BTreeMap;

/// One way an allowed syscall is refused by its arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum Deny {
    /// A seccompiler rule: refused when all its conditions hold.
    Rule(SeccompRule),
    /// Refused when the low 32 bits of argument `arg` equal none of `values`: the argument's own
    /// allowlist (one seccompiler rule of `Dword` `Ne` conditions, compiled as one load and one
    /// comparison per value).
    NoneOf { arg: u8, values: Vec<u32> },
    /// Refused when the low 32 bits of argument `arg` have any bit of `mask` set (what a
    /// seccompiler `Dword` `MaskedEq` rule per bit would say, compiled as one load and one test).
    AnyBit { arg: u8, mask: u32 },
}

/// The refusals: for each syscall number the ways it is refused (OR'ed; an empty list refuses it
/// whatever its arguments). A number that is not a key is allowed.
pub type Rules = BTreeMap<i64, Vec<Deny>>;

/// The highest x86-64 syscall number this policy was written against (`file_setattr`, Linux 6.17).
pub const MAX_KNOWN_NR: u32 = 469;

/// One allowed system call: its x86-64 number, its name, and why a plugin needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allowed {
    pub nr: i64,
    pub name: &'static str,
    pub why: &'static str,
}

const fn allow(nr: i64, name: &'static str, why: &'static str) -> Allowed {
    Allowed { nr, name, why }
}

/// Every system call the plugin may make (those marked "by argument" only in part, see
/// [`refused_by_argument`]). What a static glibc, Rust std or Go program needs, and nothing that
/// Docker's default profile refuses a container without capabilities (a unit test holds the list
/// against Docker's).
pub const ALLOWED: &[Allowed] = {
    use libc::*;
    &[
        // Descriptors: its pipes, its stage's files.
        allow(SYS_read, "read", "read a descriptor"),
        allow(SYS_write, "write", "write a descriptor"),
        allow(SYS_pread64, "pread64", "read at an offset"),
        allow(SYS_pwrite64, "pwrite64", "write at an offset"),
        allow(SYS_readv, "readv", "scatter read"),
        allow(SYS_writev, "writev", "gather write (stdio)"),
        allow(SYS_preadv, "preadv", "scatter read at an offset"),
        allow(SYS_pwritev, "pwritev", "gather write at an offset"),
        allow(SYS_preadv2, "preadv2", "scatter read with flags"),
        allow(SYS_pwritev2, "pwritev2", "gather write with flags"),
        allow(SYS_lseek, "lseek", "seek"),
        allow(SYS_close, "close", "close a descriptor"),
        allow(
            SYS_close_range,
            "close_range",
            "close descriptors; by argument: no private table",
        ),
        allow(SYS_dup, "dup", "duplicate a descriptor"),
        allow(SYS_dup2, "dup2", "duplicate to a number"),
        allow(SYS_dup3, "dup3", "duplicate to a number with flags (Go)"),
        allow(
            SYS_fcntl,
            "fcntl",
            "descriptor flags; by argument: no signal routes, no record locks",
        ),
        allow(
            SYS_ioctl,
            "ioctl",
            "isatty, window size, FIONREAD/FIONBIO/FIOCLEX; by argument",
        ),
        allow(SYS_pipe, "pipe", "a pipe within the run"),
        allow(SYS_pipe2, "pipe2", "a pipe within the run (Go's poller)"),
        allow(SYS_sendfile, "sendfile", "copy between descriptors"),
        allow(
            SYS_copy_file_range,
            "copy_file_range",
            "copy between files (Rust std::fs::copy)",
        ),
        allow(SYS_fadvise64, "fadvise64", "read-ahead advice"),
        allow(SYS_fsync, "fsync", "flush a file of its stage"),
        allow(SYS_fdatasync, "fdatasync", "flush a file's data"),
        allow(SYS_ftruncate, "ftruncate", "resize an open file"),
        allow(SYS_truncate, "truncate", "resize a file by path"),
        allow(SYS_fallocate, "fallocate", "reserve file space"),
        // Paths: resolved inside the private root, Landlock decides access.
        allow(SYS_open, "open", "open a path"),
        allow(SYS_openat, "openat", "open a path"),
        allow(SYS_stat, "stat", "file status"),
        allow(SYS_fstat, "fstat", "file status of a descriptor"),
        allow(SYS_lstat, "lstat", "file status without following"),
        allow(SYS_newfstatat, "newfstatat", "file status (glibc, Go)"),
        allow(SYS_statx, "statx", "file status (Rust std)"),
        allow(SYS_statfs, "statfs", "filesystem status"),
        allow(SYS_fstatfs, "fstatfs", "filesystem status of a descriptor"),
        allow(SYS_access, "access", "check access"),
        allow(SYS_faccessat, "faccessat", "check access"),
        allow(
            SYS_faccessat2,
            "faccessat2",
            "check access with flags (glibc)",
        ),
        allow(SYS_readlink, "readlink", "read a link"),
        allow(
            SYS_readlinkat,
            "readlinkat",
            "read a link (Go os.Executable)",
        ),
        allow(SYS_getdents64, "getdents64", "list a directory"),
        allow(SYS_getcwd, "getcwd", "working directory"),
        allow(SYS_chdir, "chdir", "change directory"),
        allow(SYS_fchdir, "fchdir", "change directory by descriptor"),
        allow(SYS_mkdir, "mkdir", "make a directory"),
        allow(SYS_mkdirat, "mkdirat", "make a directory"),
        allow(SYS_rmdir, "rmdir", "remove a directory"),
        allow(SYS_unlink, "unlink", "remove a file"),
        allow(SYS_unlinkat, "unlinkat", "remove a file or directory"),
        allow(SYS_rename, "rename", "rename"),
        allow(SYS_renameat, "renameat", "rename"),
        allow(SYS_renameat2, "renameat2", "rename with flags"),
        allow(SYS_umask, "umask", "file mode mask"),
        // Waiting on descriptors.
        allow(
            SYS_poll,
            "poll",
            "wait on descriptors (Rust std checks 0-2 at start)",
        ),
        allow(SYS_ppoll, "ppoll", "wait on descriptors"),
        allow(SYS_select, "select", "wait on descriptors"),
        allow(SYS_pselect6, "pselect6", "wait on descriptors"),
        allow(SYS_epoll_create1, "epoll_create1", "event poller (Go)"),
        allow(SYS_epoll_ctl, "epoll_ctl", "event poller (Go)"),
        allow(SYS_epoll_wait, "epoll_wait", "event poller"),
        allow(SYS_epoll_pwait, "epoll_pwait", "event poller (Go)"),
        allow(SYS_epoll_pwait2, "epoll_pwait2", "event poller"),
        allow(SYS_eventfd2, "eventfd2", "wake-up counter (Go's poller)"),
        // Memory: never executable, never the host's huge pages.
        allow(SYS_brk, "brk", "heap"),
        allow(
            SYS_mmap,
            "mmap",
            "map memory; by argument: not executable, no huge pages",
        ),
        allow(SYS_munmap, "munmap", "unmap memory"),
        allow(
            SYS_mprotect,
            "mprotect",
            "protect memory; by argument: never executable",
        ),
        allow(SYS_mremap, "mremap", "resize a mapping (realloc)"),
        allow(SYS_madvise, "madvise", "memory advice; by argument: no KSM"),
        allow(SYS_msync, "msync", "flush a file mapping"),
        allow(SYS_mincore, "mincore", "page residency (Go)"),
        // Threads, never processes.
        allow(
            SYS_clone,
            "clone",
            "threads; by argument: no process, no namespace",
        ),
        allow(
            SYS_execveat,
            "execveat",
            "the runner's own final exec; by argument: its cookie",
        ),
        allow(SYS_exit, "exit", "end a thread"),
        allow(SYS_exit_group, "exit_group", "end the plugin"),
        allow(SYS_futex, "futex", "thread synchronisation"),
        allow(
            SYS_set_robust_list,
            "set_robust_list",
            "thread start (glibc)",
        ),
        allow(
            SYS_set_tid_address,
            "set_tid_address",
            "thread start (glibc)",
        ),
        allow(SYS_rseq, "rseq", "restartable sequences (glibc)"),
        allow(
            SYS_arch_prctl,
            "arch_prctl",
            "thread pointer (static glibc, Go)",
        ),
        allow(
            SYS_prctl,
            "prctl",
            "thread name, dumpable, no_new_privs; by argument",
        ),
        allow(SYS_sched_yield, "sched_yield", "yield the CPU"),
        allow(
            SYS_sched_getaffinity,
            "sched_getaffinity",
            "CPU count (Go, glibc)",
        ),
        // Identity, read only.
        allow(SYS_getpid, "getpid", "own pid"),
        allow(SYS_gettid, "gettid", "own thread id"),
        allow(SYS_getppid, "getppid", "parent pid (the run's init)"),
        allow(SYS_getuid, "getuid", "own uid"),
        allow(SYS_geteuid, "geteuid", "own uid"),
        allow(SYS_getgid, "getgid", "own gid"),
        allow(SYS_getegid, "getegid", "own gid"),
        allow(SYS_getresuid, "getresuid", "own uids"),
        allow(SYS_getresgid, "getresgid", "own gids"),
        allow(SYS_getgroups, "getgroups", "own groups (none)"),
        allow(SYS_capget, "capget", "own capabilities (none)"),
        allow(SYS_uname, "uname", "kernel name (the run's own host name)"),
        allow(SYS_getrandom, "getrandom", "random bytes"),
        // Time.
        allow(
            SYS_clock_gettime,
            "clock_gettime",
            "clocks; by argument: not another process's CPU",
        ),
        allow(
            SYS_clock_getres,
            "clock_getres",
            "clock resolution; by argument",
        ),
        allow(SYS_clock_nanosleep, "clock_nanosleep", "sleep; by argument"),
        allow(SYS_nanosleep, "nanosleep", "sleep (Go)"),
        allow(SYS_gettimeofday, "gettimeofday", "wall clock"),
        allow(SYS_time, "time", "wall clock"),
        allow(SYS_setitimer, "setitimer", "interval timer (alarm)"),
        allow(SYS_getitimer, "getitimer", "interval timer"),
        // Limits and usage, its own.
        allow(SYS_getrlimit, "getrlimit", "own limits"),
        allow(SYS_setrlimit, "setrlimit", "lower own soft limits"),
        allow(
            SYS_prlimit64,
            "prlimit64",
            "own limits (Go, glibc); by argument: itself only",
        ),
        allow(SYS_getrusage, "getrusage", "own usage"),
        // Signals, to itself only.
        allow(SYS_rt_sigaction, "rt_sigaction", "signal handlers"),
        allow(SYS_rt_sigprocmask, "rt_sigprocmask", "signal mask"),
        allow(SYS_rt_sigreturn, "rt_sigreturn", "return from a handler"),
        allow(SYS_rt_sigpending, "rt_sigpending", "pending signals"),
        allow(SYS_rt_sigtimedwait, "rt_sigtimedwait", "wait for a signal"),
        allow(SYS_rt_sigsuspend, "rt_sigsuspend", "wait for a signal"),
        allow(
            SYS_sigaltstack,
            "sigaltstack",
            "signal stack (Rust std, Go)",
        ),
        allow(
            SYS_restart_syscall,
            "restart_syscall",
            "restart after a signal",
        ),
        allow(SYS_kill, "kill", "signal itself; by argument: itself only"),
        allow(SYS_tkill, "tkill", "signal own thread; by argument"),
        allow(
            SYS_tgkill,
            "tgkill",
            "signal own thread (Go preemption); by argument",
        ),
        allow(
            SYS_personality,
            "personality",
            "query persona; by argument: no change",
        ),
    ]
};

/// `TCGETS2` (`_IOR('T', 0x2A, struct termios2)`), what newer C libraries ask for `isatty`.
pub const TCGETS2: u32 = 0x802c_542a;

/// The `fcntl` commands allowed (anything else is refused): duplicating, descriptor and status
/// flags, the pipe size (read), the seals (read). Not: `F_SETOWN`/`F_SETOWN_EX`/`F_SETSIG` (whom
/// the kernel signals for a descriptor, and with what), `F_SETLEASE` (a lease break signals the
/// owner), `F_NOTIFY` (dnotify signals), `F_SETPIPE_SZ` (pipe buffers are kernel memory),
/// `F_ADD_SEALS`, and record locks (`F_SETLK`, `F_OFD_SETLK`, …: every locked byte range is a
/// kernel object that no limit bounds, and `F_GETLK` names the holder's pid; `flock` is not on the
/// list either: each lock scans the file's lock list, and files kept open by mappings escape the
/// descriptor limit).
pub fn allowed_fcntl_commands() -> Vec<u32> {
    use libc::*;
    [
        F_DUPFD,
        F_DUPFD_CLOEXEC,
        F_GETFD,
        F_SETFD,
        F_GETFL,
        F_SETFL,
        F_GETPIPE_SZ,
        F_GET_SEALS,
    ]
    .iter()
    .map(|&c| c as u32)
    .collect()
}

/// The `ioctl` requests allowed, matched on the low 32 bits (the kernel ignores the rest): is it a
/// terminal (`TCGETS`, `TCGETS2`), its window size (`TIOCGWINSZ`), bytes waiting (`FIONREAD`),
/// non-blocking and close-on-exec (`FIONBIO`, `FIOCLEX`, `FIONCLEX`). Everything else — terminal
/// injection and job control, line disciplines, signal-driven I/O, inode attributes, every driver's
/// own requests — is refused.
pub fn allowed_ioctl_requests() -> Vec<u32> {
    [
        libc::TCGETS as u32,
        TCGETS2,
        libc::TIOCGWINSZ as u32,
        libc::FIONREAD as u32,
        libc::FIONBIO as u32,
        libc::FIOCLEX as u32,
        libc::FIONCLEX as u32,
    ]
    .to_vec()
}

/// The `prctl` options allowed: the thread's name, reading whether it is dumpable, its bounding set
/// and no_new_privs. Not `PR_SET_SECCOMP` (a stacked filter), `PR_SET_PDEATHSIG`, `PR_SET_DUMPABLE`,
/// `PR_SET_PTRACER`, `PR_SET_MM`, `PR_SET_MEMORY_MERGE` (KSM), nor any other.
pub fn allowed_prctl_options() -> Vec<u32> {
    use libc::*;
    [
        PR_SET_NAME,
        PR_GET_NAME,
        PR_GET_DUMPABLE,
        PR_CAPBSET_READ,
        PR_GET_NO_NEW_PRIVS,
    ]
    .iter()
    .map(|&o| o as u32)
    .collect()
}

/// The `madvise` advice allowed: access patterns, freeing pages, transparent huge pages on or off,
/// core dump exclusion. Not `MADV_MERGEABLE` (KSM merges identical pages across processes: how long
/// a write takes tells whether another process holds the same bytes), nor poisoning, nor anything
/// newer.
pub fn allowed_madvise_advice() -> Vec<u32> {
    use libc::*;
    [
        MADV_NORMAL,
        MADV_RANDOM,
        MADV_SEQUENTIAL,
        MADV_WILLNEED,
        MADV_DONTNEED,
        MADV_FREE,
        MADV_HUGEPAGE,
        MADV_NOHUGEPAGE,
        MADV_DONTDUMP,
        MADV_DODUMP,
    ]
    .iter()
    .map(|&a| a as u32)
    .collect()
}

/// The per-launch values a policy is built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// The plugin's pid in its own PID namespace: signals and `prlimit` only to itself.
    pub pid: u32,
    /// The value `execveat`'s unused sixth argument must carry; only the runner's final exec has it.
    pub cookie: u64,
    /// The run has runtime directories: its dynamic loader maps their libraries executable. A
    /// file's pages may then be mapped executable, never writable at once and never anonymous
    /// memory (the stage is mounted `noexec`, the runtime read-only: no file the plugin can write
    /// can be mapped so).
    pub runtime: bool,
}

/// A condition on the low 32 bits of argument `arg`.
pub fn dword(arg: u8, op: Op, value: u64) -> Result<Cond, BackendError> {
    Cond::new(arg, Len::Dword, op, value)
}

fn rule(conds: Vec<Cond>) -> Result<Deny, BackendError> {
    SeccompRule::new(conds).map(Deny::Rule)
}

/// A flag set in argument `arg` (low 32 bits).
fn flag_set(arg: u8, flag: u64) -> Result<Deny, BackendError> {
    rule(vec![dword(arg, Op::MaskedEq(flag), flag)?])
}

/// Argument `arg` (as a pid, low 32 bits) is not the plugin itself.
fn not_self(arg: u8, p: Params) -> Result<Deny, BackendError> {
    rule(vec![dword(arg, Op::Ne, u64::from(p.pid))?])
}

/// When allowed syscalls are refused by their arguments: each entry's rules are OR'ed, a rule's
/// conditions AND'ed. Every number here is in [`ALLOWED`] (a unit test holds it).
pub fn refused_by_argument(p: Params) -> Result<Vec<(i64, Vec<Deny>)>, BackendError> {
    use libc::*;
    let clone_new = [
        CLONE_NEWNS,
        CLONE_NEWCGROUP,
        CLONE_NEWUTS,
        CLONE_NEWIPC,
        CLONE_NEWUSER,
        CLONE_NEWPID,
        CLONE_NEWNET,
        CLONE_NEWTIME,
    ];
    // A thread must share the descriptor table (`CLONE_FILES`): `RLIMIT_NOFILE` bounds each
    // table, so threads with tables of their own would multiply the run's descriptors by NPROC.
    let clone = vec![
        rule(vec![dword(0, Op::MaskedEq(CLONE_THREAD as u64), 0)?])?,
        rule(vec![dword(0, Op::MaskedEq(CLONE_FILES as u64), 0)?])?,
        Deny::AnyBit {
            arg: 0,
            mask: clone_new.iter().fold(0, |m, f| m | *f as u32),
        },
    ];
    let exec = |arg| flag_set(arg, PROT_EXEC as u64);
    // The pid comes first: no chain built with a pid can then equal a chain of constants (the
    // personality rule below is `!= 0 && != 0xffffffff`), whatever the pid, so the program's
    // layout (which shares equal chains) never depends on the pid (seccomp::tests check it).
    let pid_other = || -> Result<Vec<Deny>, BackendError> {
        Ok(vec![rule(vec![
            dword(0, Op::Ne, u64::from(p.pid))?,
            dword(0, Op::Ne, 0)?,
        ])?])
    };
    // A CPU clock id names a process when it is negative (`~pid << 3`) without the per-thread
    // bit (4); the kernel lets anyone read any process's CPU time through one, a timing channel
    // into other processes. Its own are the constants (`CLOCK_PROCESS_CPUTIME_ID`, …) and its
    // threads' clocks (the per-thread bit set; the kernel refuses other processes' threads).
    let other_cpu_clock = || -> Result<Vec<Deny>, BackendError> {
        Ok(vec![rule(vec![dword(
            0,
            Op::MaskedEq(0x8000_0004),
            0x8000_0000,
        )?])?])
    };
    Ok(vec![
        (SYS_clone, clone),
        (SYS_clock_gettime, other_cpu_clock()?),
        (SYS_clock_getres, other_cpu_clock()?),
        (SYS_clock_nanosleep, other_cpu_clock()?),
        // Only the runner's own final exec carries the cookie, in the sixth argument, which
        // `execveat` (five arguments) never reads.
        (
            SYS_execveat,
            vec![rule(vec![Cond::new(5, Len::Qword, Op::Ne, p.cookie)?])?],
        ),
        (SYS_kill, vec![not_self(0, p)?]),
        (SYS_tkill, vec![not_self(0, p)?]),
        (SYS_tgkill, vec![not_self(0, p)?]),
        (SYS_prlimit64, pid_other()?),
        // MAP_HUGETLB takes pages from the host's huge page pool, which is not the run's: its
        // size is set aside for whatever the host reserved it for.
        (SYS_mmap, mmap_refusals(p)?),
        (
            SYS_madvise,
            vec![Deny::NoneOf {
                arg: 2,
                values: allowed_madvise_advice(),
            }],
        ),
        (SYS_mprotect, vec![exec(2)?]),
        // Only the query (0xffffffff) and the default persona (0).
        (
            SYS_personality,
            vec![rule(vec![
                dword(0, Op::Ne, 0)?,
                dword(0, Op::Ne, 0xffff_ffff)?,
            ])?],
        ),
        (
            SYS_prctl,
            vec![Deny::NoneOf {
                arg: 0,
                values: allowed_prctl_options(),
            }],
        ),
        // The request number is matched on its low 32 bits: the kernel ignores the rest.
        (
            SYS_ioctl,
            vec![Deny::NoneOf {
                arg: 1,
                values: allowed_ioctl_requests(),
            }],
        ),
        // The command is an `unsigned int` to the kernel, as is `F_SETFL`'s flags argument.
        // `O_ASYNC` turns on signal-driven I/O, whose signal goes to the descriptor's owner: on
        // a terminal the kernel makes that the terminal's foreground process group.
        (
            SYS_fcntl,
            vec![
                Deny::NoneOf {
                    arg: 1,
                    values: allowed_fcntl_commands(),
                },
                rule(vec![
                    dword(1, Op::Eq, F_SETFL as u64)?,
                    dword(2, Op::MaskedEq(O_ASYNC as u64), O_ASYNC as u64)?,
                ])?,
            ],
        ),
        // A thread that gave itself a descriptor table of its own after the fact, as `clone`
        // without `CLONE_FILES` would have (the rule above): `close_range`'s unshare flag.
        (
            SYS_close_range,
            vec![flag_set(2, CLOSE_RANGE_UNSHARE as u64)?],
        ),
    ])
}

/// When `mmap` is refused: executable memory (without a runtime: any; with one: anonymous, or
/// writable at once), and huge pages.
fn mmap_refusals(p: Params) -> Result<Vec<Deny>, BackendError> {
    use libc::{MAP_ANONYMOUS, MAP_HUGETLB, PROT_EXEC, PROT_WRITE};
    let exec = || dword(2, Op::MaskedEq(PROT_EXEC as u64), PROT_EXEC as u64);
    let mut v = if p.runtime {
        vec![
            rule(vec![
                exec()?,
                dword(3, Op::MaskedEq(MAP_ANONYMOUS as u64), MAP_ANONYMOUS as u64)?,
            ])?,
            rule(vec![
                exec()?,
                dword(2, Op::MaskedEq(PROT_WRITE as u64), PROT_WRITE as u64)?,
            ])?,
        ]
    } else {
        vec![rule(vec![exec()?])?]
    };
    v.push(flag_set(3, MAP_HUGETLB as u64)?);
    Ok(v)
}

/// Whether `nr` is in [`ALLOWED`].
pub fn is_allowed(nr: i64) -> bool {
    ALLOWED.iter().any(|a| a.nr == nr)
}

/// The refusals for `p`: every known number not in [`ALLOWED`] refused whatever its arguments
/// (`clone3` included: the compiler's prefix answers it `ENOSYS` first), and the allowed ones'
/// refusals by argument.
pub fn deny_rules(p: Params) -> Result<Rules, BackendError> {
    let mut rules: Rules = (0..=i64::from(MAX_KNOWN_NR))
        .filter(|nr| !is_allowed(*nr))
        .map(|nr| (nr, vec![]))
        .collect();
    for (nr, chain) in refused_by_argument(p)? {
        rules.insert(nr, chain);
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::testing::*;
    use crate::bpf::RET_ALLOW;

    /// `fcntl` commands (include/uapi/asm-generic/fcntl.h) the libc crate does not name.
    const F_SETSIG: u32 = 10;
    const F_SETOWN_EX: u32 = 15;

    /// The names Docker's default seccomp profile allows a container without added capabilities on
    /// x86-64 (moby's profiles/seccomp/default.json: its unconditional list, plus `clone`,
    /// `personality`, `socket` by argument, `arch_prctl` and `modify_ldt` for amd64, `ptrace` and
    /// `process_vm_*` from Linux 4.8). Everything else is refused there.
    const DOCKER_DEFAULT_ALLOWS: &[&str] = &[
        "accept",
        "accept4",
        "access",
        "adjtimex",
        "alarm",
        "bind",
        "brk",
        "capget",
        "capset",
        "chdir",
        "chmod",
        "chown",
        "clock_adjtime",
        "clock_getres",
        "clock_gettime",
        "clock_nanosleep",
        "close",
        "close_range",
        "connect",
        "copy_file_range",
        "creat",
        "dup",
        "dup2",
        "dup3",
        "epoll_create",
        "epoll_create1",
        "epoll_ctl",
        "epoll_ctl_old",
        "epoll_pwait",
        "epoll_pwait2",
        "epoll_wait",
        "epoll_wait_old",
        "eventfd",
        "eventfd2",
        "execve",
        "execveat",
        "exit",
        "exit_group",
        "faccessat",
        "faccessat2",
        "fadvise64",
        "fallocate",
        "fanotify_mark",
        "fchdir",
        "fchmod",
        "fchmodat",
        "fchown",
        "fchownat",
        "fcntl",
        "fdatasync",
        "fgetxattr",
        "flistxattr",
        "flock",
        "fork",
        "fremovexattr",
        "fsetxattr",
        "fstat",
        "fstatfs",
        "fsync",
        "ftruncate",
        "futex",
        "futex_waitv",
        "futimesat",
        "getcpu",
        "getcwd",
        "getdents",
        "getdents64",
        "getegid",
        "geteuid",
        "getgid",
        "getgroups",
        "getitimer",
        "getpeername",
        "getpgid",
        "getpgrp",
        "getpid",
        "getppid",
        "getpriority",
        "getrandom",
        "getresgid",
        "getresuid",
        "getrlimit",
        "get_robust_list",
        "getrusage",
        "getsid",
        "getsockname",
        "getsockopt",
        "get_thread_area",
        "gettid",
        "gettimeofday",
        "getuid",
        "getxattr",
        "inotify_add_watch",
        "inotify_init",
        "inotify_init1",
        "inotify_rm_watch",
        "io_cancel",
        "ioctl",
        "io_destroy",
        "io_getevents",
        "io_pgetevents",
        "ioprio_get",
        "ioprio_set",
        "io_setup",
        "io_submit",
        "io_uring_enter",
        "io_uring_register",
        "io_uring_setup",
        "kill",
        "landlock_add_rule",
        "landlock_create_ruleset",
        "landlock_restrict_self",
        "lchown",
        "lgetxattr",
        "link",
        "linkat",
        "listen",
        "listxattr",
        "llistxattr",
        "lremovexattr",
        "lseek",
        "lsetxattr",
        "lstat",
        "madvise",
        "membarrier",
        "memfd_create",
        "memfd_secret",
        "mincore",
        "mkdir",
        "mkdirat",
        "mknod",
        "mknodat",
        "mlock",
        "mlock2",
        "mlockall",
        "mmap",
        "mprotect",
        "mq_getsetattr",
        "mq_notify",
        "mq_open",
        "mq_timedreceive",
        "mq_timedsend",
        "mq_unlink",
        "mremap",
        "msgctl",
        "msgget",
        "msgrcv",
        "msgsnd",
        "msync",
        "munlock",
        "munlockall",
        "munmap",
        "name_to_handle_at",
        "nanosleep",
        "newfstatat",
        "open",
        "openat",
        "openat2",
        "pause",
        "pidfd_open",
        "pidfd_send_signal",
        "pipe",
        "pipe2",
        "pkey_alloc",
        "pkey_free",
        "pkey_mprotect",
        "poll",
        "ppoll",
        "prctl",
        "pread64",
        "preadv",
        "preadv2",
        "prlimit64",
        "process_mrelease",
        "pselect6",
        "pwrite64",
        "pwritev",
        "pwritev2",
        "read",
        "readahead",
        "readlink",
        "readlinkat",
        "readv",
        "recvfrom",
        "recvmmsg",
        "recvmsg",
        "remap_file_pages",
        "removexattr",
        "rename",
        "renameat",
        "renameat2",
        "restart_syscall",
        "rmdir",
        "rseq",
        "rt_sigaction",
        "rt_sigpending",
        "rt_sigprocmask",
        "rt_sigqueueinfo",
        "rt_sigreturn",
        "rt_sigsuspend",
        "rt_sigtimedwait",
        "rt_tgsigqueueinfo",
        "sched_getaffinity",
        "sched_getattr",
        "sched_getparam",
        "sched_get_priority_max",
        "sched_get_priority_min",
        "sched_getscheduler",
        "sched_rr_get_interval",
        "sched_setaffinity",
        "sched_setattr",
        "sched_setparam",
        "sched_setscheduler",
        "sched_yield",
        "seccomp",
        "select",
        "semctl",
        "semget",
        "semop",
        "semtimedop",
        "sendfile",
        "sendmmsg",
        "sendmsg",
        "sendto",
        "setfsgid",
        "setfsuid",
        "setgid",
        "setgroups",
        "setitimer",
        "setpgid",
        "setpriority",
        "setregid",
        "setresgid",
        "setresuid",
        "setreuid",
        "setrlimit",
        "set_robust_list",
        "setsid",
        "setsockopt",
        "set_thread_area",
        "set_tid_address",
        "setuid",
        "setxattr",
        "shmat",
        "shmctl",
        "shmdt",
        "shmget",
        "shutdown",
        "sigaltstack",
        "signalfd",
        "signalfd4",
        "socketpair",
        "splice",
        "stat",
        "statfs",
        "statx",
        "symlink",
        "symlinkat",
        "sync",
        "sync_file_range",
        "syncfs",
        "sysinfo",
        "tee",
        "tgkill",
        "time",
        "timer_create",
        "timer_delete",
        "timer_getoverrun",
        "timer_gettime",
        "timer_settime",
        "timerfd_create",
        "timerfd_gettime",
        "timerfd_settime",
        "times",
        "tkill",
        "truncate",
        "umask",
        "uname",
        "unlink",
        "unlinkat",
        "utime",
        "utimensat",
        "utimes",
        "vfork",
        "vmsplice",
        "wait4",
        "waitid",
        "write",
        "writev",
        "clone",
        "personality",
        "socket",
        "arch_prctl",
        "modify_ldt",
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
    ];

    #[test]
    fn the_allowlist_is_short_and_inside_dockers_default() {
        assert!(ALLOWED.len() <= 140, "{} syscalls allowed", ALLOWED.len());
        let outside: Vec<&str> = ALLOWED
            .iter()
            .map(|a| a.name)
            .filter(|n| !DOCKER_DEFAULT_ALLOWS.contains(n))
            .collect();
        assert_eq!(outside, Vec::<&str>::new());
        let mut nrs: Vec<i64> = ALLOWED.iter().map(|a| a.nr).collect();
        nrs.sort_unstable();
        nrs.dedup();
        assert_eq!(nrs.len(), ALLOWED.len(), "a number listed twice");
        let mut names: Vec<&str> = ALLOWED.iter().map(|a| a.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALLOWED.len(), "a name listed twice");
        assert!(ALLOWED.iter().all(|a| !a.why.is_empty()));
    }

    /// docs/security.md's allowlist table is this one: every call with its reason, nothing else.
    #[test]
    fn the_documented_table_is_the_allowlist() {
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/security.md"))
                .expect("docs/security.md");
        let rows: Vec<String> = doc
            .lines()
            .skip_while(|l| *l != "| syscall | why |")
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(str::to_owned)
            .collect();
        let want: Vec<String> = ALLOWED
            .iter()
            .map(|a| format!("| `{}` | {} |", a.name, a.why))
            .collect();
        assert_eq!(rows, want);
    }

    /// A rule by argument is only for an allowed syscall (one for a refused one would be dead).
    #[test]
    fn every_rule_by_argument_is_for_an_allowed_syscall() {
        let dead: Vec<i64> = refused_by_argument(P)
            .expect("rules")
            .into_iter()
            .map(|(nr, _)| nr)
            .filter(|nr| !is_allowed(*nr))
            .collect();
        assert_eq!(dead, Vec::<i64>::new());
    }

    /// Every allowed syscall without a rule by argument passes whatever its arguments.
    #[test]
    fn allowed_syscalls_pass() {
        let by_argument: Vec<i64> = refused_by_argument(P)
            .expect("rules")
            .into_iter()
            .map(|(nr, _)| nr)
            .collect();
        for a in ALLOWED.iter().filter(|a| !by_argument.contains(&a.nr)) {
            for args in [[0; 6], [u64::MAX; 6], [1, 2, 3, 4, 5, 6]] {
                assert_eq!(call(a.nr, args), RET_ALLOW, "{} {args:?}", a.name);
            }
        }
    }

    /// Everything not listed is refused with EPERM, the unassigned numbers among them, up to the
    /// highest known number; above it ENOSYS.
    #[test]
    fn everything_else_is_refused() {
        for nr in 0..=i64::from(MAX_KNOWN_NR) {
            if is_allowed(nr) || nr == libc::SYS_clone3 {
                continue;
            }
            assert_eq!(call(nr, [0; 6]), EPERM, "syscall {nr}");
            assert_eq!(call(nr, [u64::MAX; 6]), EPERM, "syscall {nr}");
        }
        for nr in [336, 400, 423] {
            assert_eq!(call(nr, [0; 6]), EPERM, "unassigned {nr}");
        }
        assert_eq!(call(i64::from(MAX_KNOWN_NR) + 1, [0; 6]), ENOSYS);
    }

    /// What round three found allowed and Docker refuses, self-confinement that costs the host
    /// kernel memory, and the calls that showed other processes.
    #[test]
    fn named_refusals() {
        let refused = [
            libc::SYS_landlock_create_ruleset,
            libc::SYS_landlock_add_rule,
            libc::SYS_landlock_restrict_self,
            libc::SYS_seccomp,
            libc::SYS_mbind,
            libc::SYS_set_mempolicy,
            libc::SYS_get_mempolicy,
            450, // set_mempolicy_home_node
            451, // cachestat
            453, // map_shadow_stack
            454, // futex_wake
            455, // futex_wait
            456, // futex_requeue
            459, // lsm_get_self_attr
            460, // lsm_set_self_attr
            461, // lsm_list_modules
            462, // mseal
            468, // file_getattr
            335, // uretprobe
            libc::SYS_getpgid,
            libc::SYS_getsid,
            libc::SYS_getpriority,
            libc::SYS_ioprio_get,
            libc::SYS_sched_getparam,
            libc::SYS_sysinfo,
            libc::SYS_timer_create,
            libc::SYS_socket,
            libc::SYS_socketpair,
            libc::SYS_execve,
            libc::SYS_fork,
            libc::SYS_vfork,
            libc::SYS_unshare,
            libc::SYS_setns,
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_pidfd_open,
            libc::SYS_memfd_create,
            libc::SYS_io_uring_setup,
            libc::SYS_bpf,
            libc::SYS_mount,
            libc::SYS_chmod,
            libc::SYS_fchown,
            libc::SYS_setxattr,
            libc::SYS_setsid,
            libc::SYS_setpgid,
            libc::SYS_rt_sigqueueinfo,
            libc::SYS_pkey_mprotect,
            libc::SYS_sync,
            libc::SYS_syncfs,
            libc::SYS_inotify_init1,
            libc::SYS_shmget,
            libc::SYS_keyctl,
        ];
        for nr in refused {
            assert_eq!(call(nr, [0; 6]), EPERM, "syscall {nr}");
        }
        let seccomp = libc::PR_SET_SECCOMP as u64;
        assert_eq!(call(libc::SYS_prctl, [seccomp, 2, 0, 0, 0, 0]), EPERM);
    }

    #[test]
    fn threads_pass_and_processes_and_namespaces_do_not() {
        let go_thread = (libc::CLONE_VM
            | libc::CLONE_FS
            | libc::CLONE_FILES
            | libc::CLONE_SIGHAND
            | libc::CLONE_THREAD
            | libc::CLONE_SYSVSEM
            | libc::CLONE_SETTLS) as u64;
        let glibc_thread =
            go_thread | (libc::CLONE_PARENT_SETTID | libc::CLONE_CHILD_CLEARTID) as u64;
        assert_eq!(call(libc::SYS_clone, [go_thread, 0, 0, 0, 0, 0]), RET_ALLOW);
        assert_eq!(
            call(libc::SYS_clone, [glibc_thread, 0, 0, 0, 0, 0]),
            RET_ALLOW
        );
        assert_eq!(
            call(libc::SYS_clone, [libc::SIGCHLD as u64, 0, 0, 0, 0, 0]),
            EPERM
        );
        let own_files = go_thread & !(libc::CLONE_FILES as u64);
        assert_eq!(call(libc::SYS_clone, [own_files, 0, 0, 0, 0, 0]), EPERM);
        let vfork = (libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD) as u64;
        assert_eq!(call(libc::SYS_clone, [vfork, 0, 0, 0, 0, 0]), EPERM);
        for ns in [
            libc::CLONE_NEWUSER,
            libc::CLONE_NEWNET,
            libc::CLONE_NEWNS,
            libc::CLONE_NEWPID,
            libc::CLONE_NEWTIME,
        ] {
            let flags = go_thread | ns as u64;
            assert_eq!(call(libc::SYS_clone, [flags, 0, 0, 0, 0, 0]), EPERM);
        }
    }

    #[test]
    fn only_the_cookie_exec_passes() {
        let nr = libc::SYS_execveat;
        assert_eq!(call(nr, [4, 0, 2, 3, 0x1000, P.cookie]), RET_ALLOW);
        assert_eq!(call(nr, [4, 0, 2, 3, 0x1000, 0]), EPERM);
        assert_eq!(call(nr, [4, 0, 2, 3, 0x1000, P.cookie ^ (1 << 40)]), EPERM);
        assert_eq!(call(nr, [4, 0, 2, 3, 0x1000, P.cookie ^ 1]), EPERM);
        assert_eq!(
            call(libc::SYS_execve, [1, 2, 3, P.cookie, 0, P.cookie]),
            EPERM
        );
    }

    #[test]
    fn signals_only_to_itself() {
        let me = u64::from(P.pid);
        assert_eq!(call(libc::SYS_kill, [me, 0, 0, 0, 0, 0]), RET_ALLOW);
        assert_eq!(call(libc::SYS_tgkill, [me, 77, 23, 0, 0, 0]), RET_ALLOW);
        for other in [0u64, 1, me + 1, u64::from(u32::MAX), u64::MAX] {
            for nr in [libc::SYS_kill, libc::SYS_tkill, libc::SYS_tgkill] {
                assert_eq!(call(nr, [other, me, 0, 0, 0, 0]), EPERM, "{nr} to {other}");
            }
        }
        assert_eq!(call(libc::SYS_prlimit64, [0, 7, 0, 1, 0, 0]), RET_ALLOW);
        assert_eq!(call(libc::SYS_prlimit64, [me, 7, 0, 1, 0, 0]), RET_ALLOW);
        assert_eq!(call(libc::SYS_prlimit64, [1, 7, 0, 1, 0, 0]), EPERM);
    }

    #[test]
    fn other_processes_cpu_clocks_are_refused() {
        let process_clock = |pid: i32| u64::from(((!pid) << 3 | 2) as u32);
        let thread_clock = |tid: i32| u64::from(((!tid) << 3 | 4 | 2) as u32);
        for nr in [
            libc::SYS_clock_gettime,
            libc::SYS_clock_getres,
            libc::SYS_clock_nanosleep,
        ] {
            for own in [
                libc::CLOCK_MONOTONIC,
                libc::CLOCK_REALTIME,
                libc::CLOCK_PROCESS_CPUTIME_ID,
                libc::CLOCK_THREAD_CPUTIME_ID,
            ] {
                assert_eq!(call(nr, [own as u64, 0, 0, 0, 0, 0]), RET_ALLOW);
            }
            assert_eq!(call(nr, [thread_clock(4242), 0, 0, 0, 0, 0]), RET_ALLOW);
            for pid in [1, 4242, P.pid as i32] {
                let clock = process_clock(pid);
                assert_eq!(call(nr, [clock, 0, 0, 0, 0, 0]), EPERM, "{nr} {pid}");
                let high = clock | 0xffff_ffff_0000_0000;
                assert_eq!(call(nr, [high, 0, 0, 0, 0, 0]), EPERM, "{nr} {pid}");
            }
        }
    }

    #[test]
    fn no_executable_memory() {
        let rw = (libc::PROT_READ | libc::PROT_WRITE) as u64;
        let rx = (libc::PROT_READ | libc::PROT_EXEC) as u64;
        for nr in [libc::SYS_mmap, libc::SYS_mprotect] {
            assert_eq!(call(nr, [0, 4096, rw, 0x22, 0, 0]), RET_ALLOW);
            assert_eq!(call(nr, [0, 4096, rx, 0x22, 0, 0]), EPERM);
        }
        assert_eq!(call(libc::SYS_pkey_mprotect, [0, 4096, rw, 0, 0, 0]), EPERM);
        let huge = 0x22 | libc::MAP_HUGETLB as u64;
        assert_eq!(call(libc::SYS_mmap, [0, 1 << 21, rw, huge, 0, 0]), EPERM);
        let merge = libc::MADV_MERGEABLE as u64;
        assert_eq!(call(libc::SYS_madvise, [0, 4096, merge, 0, 0, 0]), EPERM);
        assert_eq!(
            call(libc::SYS_madvise, [0, 4096, merge | (1 << 32), 0, 0, 0]),
            EPERM
        );
        for advice in allowed_madvise_advice() {
            let args = [0, 4096, u64::from(advice), 0, 0, 0];
            assert_eq!(call(libc::SYS_madvise, args), RET_ALLOW, "{advice}");
        }
        assert_eq!(
            call(libc::SYS_personality, [0xffff_ffff, 0, 0, 0, 0, 0]),
            RET_ALLOW
        );
        assert_eq!(call(libc::SYS_personality, [0, 0, 0, 0, 0, 0]), RET_ALLOW);
        let read_implies_exec = 0x0040_0000;
        assert_eq!(
            call(libc::SYS_personality, [read_implies_exec, 0, 0, 0, 0, 0]),
            EPERM
        );
    }

    /// With a runtime the loader maps its libraries' text: a file mapping may be executable, never
    /// anonymous memory, never writable at once; `mprotect` never adds execute.
    #[test]
    fn with_a_runtime_only_file_mappings_may_be_executable() {
        let p = Params { runtime: true, ..P };
        let code = crate::bpf::program(p).expect("policy");
        let mmap = |prot: i32, flags: i32| {
            let args = [0, 4096, prot as u64, flags as u64, 3, 0];
            run(
                &code,
                crate::bpf::AUDIT_ARCH_X86_64,
                libc::SYS_mmap as u32,
                args,
            )
        };
        use libc::{MAP_ANONYMOUS, MAP_PRIVATE, PROT_EXEC, PROT_READ, PROT_WRITE};
        assert_eq!(mmap(PROT_READ | PROT_EXEC, MAP_PRIVATE), RET_ALLOW);
        assert_eq!(
            mmap(PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS),
            EPERM
        );
        assert_eq!(mmap(PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE), EPERM);
        assert_eq!(
            mmap(PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS),
            RET_ALLOW
        );
        let mprotect = [0, 4096, (PROT_READ | PROT_EXEC) as u64, 0, 0, 0];
        let nr = libc::SYS_mprotect as u32;
        assert_eq!(
            run(&code, crate::bpf::AUDIT_ARCH_X86_64, nr, mprotect),
            EPERM
        );
        // Without one, no executable mapping at all.
        assert_eq!(
            call(
                libc::SYS_mmap,
                [
                    0,
                    4096,
                    (PROT_READ | PROT_EXEC) as u64,
                    MAP_PRIVATE as u64,
                    3,
                    0
                ]
            ),
            EPERM
        );
    }

    #[test]
    fn prctl_has_its_own_allowlist() {
        for option in allowed_prctl_options() {
            let args = [u64::from(option), 0, 0, 0, 0, 0];
            assert_eq!(call(libc::SYS_prctl, args), RET_ALLOW, "prctl {option}");
        }
        for option in [
            libc::PR_SET_PDEATHSIG,
            libc::PR_SET_DUMPABLE,
            libc::PR_SET_PTRACER,
            libc::PR_SET_MM,
            libc::PR_SET_MEMORY_MERGE,
            libc::PR_SET_SECCOMP,
            libc::PR_SET_NO_NEW_PRIVS,
            libc::PR_CAP_AMBIENT,
            libc::PR_SET_SECUREBITS,
        ] {
            let args = [option as u64, 1, 0, 0, 0, 0];
            assert_eq!(call(libc::SYS_prctl, args), EPERM, "prctl {option}");
        }
        let name_high = libc::PR_SET_NAME as u64 | (1 << 32);
        assert_eq!(call(libc::SYS_prctl, [name_high, 0, 0, 0, 0, 0]), RET_ALLOW);
    }

    /// `fcntl` commands and `ioctl` requests have allowlists of their own, matched on the low 32
    /// bits (the kernel takes both as `unsigned int`), and `F_SETFL` never turns on `O_ASYNC`.
    #[test]
    fn descriptor_commands_have_their_own_allowlists() {
        let high = [0u64, 1 << 32, 0xdead_0000_0000, 0xffff_ffff_0000_0000];
        for cmd in allowed_fcntl_commands() {
            for h in high {
                let args = [1, u64::from(cmd) | h, 0, 0, 0, 0];
                assert_eq!(
                    call(libc::SYS_fcntl, args),
                    RET_ALLOW,
                    "fcntl {cmd} | {h:#x}"
                );
            }
        }
        for cmd in [
            libc::F_SETOWN as u32,
            F_SETSIG,
            F_SETOWN_EX,
            libc::F_SETLEASE as u32,
            libc::F_NOTIFY as u32,
            libc::F_SETPIPE_SZ as u32,
            libc::F_ADD_SEALS as u32,
            libc::F_GETLK as u32,
            libc::F_SETLK as u32,
            libc::F_SETLKW as u32,
            libc::F_OFD_SETLK as u32,
        ] {
            for h in high {
                let args = [1, u64::from(cmd) | h, 4242, 0, 0, 0];
                assert_eq!(call(libc::SYS_fcntl, args), EPERM, "fcntl {cmd} | {h:#x}");
            }
        }
        let o_async = libc::O_ASYNC as u64;
        let setfl = libc::F_SETFL as u64;
        for flags in [o_async, o_async | libc::O_NONBLOCK as u64, u64::MAX] {
            assert_eq!(call(libc::SYS_fcntl, [1, setfl, flags, 0, 0, 0]), EPERM);
            let args = [1, setfl | (1 << 40), flags, 0, 0, 0];
            assert_eq!(
                call(libc::SYS_fcntl, args),
                EPERM,
                "F_SETFL(high) {flags:#x}"
            );
        }
        let nonblock = libc::O_NONBLOCK as u64;
        assert_eq!(
            call(libc::SYS_fcntl, [1, setfl, nonblock, 0, 0, 0]),
            RET_ALLOW
        );
        assert_eq!(
            call(libc::SYS_fcntl, [1, setfl, o_async << 32, 0, 0, 0]),
            RET_ALLOW
        );
        for req in allowed_ioctl_requests() {
            for h in high {
                let args = [1, u64::from(req) | h, 0, 0, 0, 0];
                assert_eq!(call(libc::SYS_ioctl, args), RET_ALLOW, "ioctl {req:#x}");
            }
        }
        for req in [
            TIOCSTI,
            TIOCLINUX,
            libc::TIOCSETD,
            libc::TIOCSCTTY,
            libc::TIOCSPGRP,
            libc::TIOCGPGRP,
            libc::TIOCSWINSZ,
            libc::FIOASYNC,
            0x8901, // FIOSETOWN
            0x8902, // SIOCSPGRP
            libc::FS_IOC_SETFLAGS,
            libc::FS_IOC_GETFLAGS,
            0x401c_5820, // FS_IOC_FSSETXATTR
        ] {
            for h in high {
                let args = [0, req | h, 0, 0, 0, 0];
                assert_eq!(
                    call(libc::SYS_ioctl, args),
                    EPERM,
                    "ioctl {req:#x} | {h:#x}"
                );
            }
        }
    }

    #[test]
    fn a_descriptor_table_of_its_own_is_refused() {
        let unshare = u64::from(libc::CLOSE_RANGE_UNSHARE);
        assert_eq!(call(libc::SYS_close_range, [3, 3, unshare, 0, 0, 0]), EPERM);
        assert_eq!(call(libc::SYS_close_range, [3, 3, 0, 0, 0, 0]), RET_ALLOW);
    }
}
