//! The seccomp policy as data: the syscalls the plugin may not make, and the arguments that deny
//! the ones it may make only in part ([`deny_rules`]). `bpf` compiles them into the program the
//! runner installs; `seccomp` holds that program as built at build time.
//!
//! Denials are `EPERM`, never a signal: runtimes probe some of these calls and must see an errno.
//! Every number above the highest syscall this policy knows ([`MAX_KNOWN_NR`]) is refused with
//! `ENOSYS`, so a syscall added by a later kernel is refused, not allowed.
//!
//! This file is also compiled into the crate's build script (`build.rs`), with `bpf`, which builds
//! the program once at build time; it depends on `seccompiler` and `libc` only.

use seccompiler::{
    BackendError, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond,
    SeccompRule,
};
use std::collections::BTreeMap;

/// One way a syscall is denied by its arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum Deny {
    /// A seccompiler rule: denied when all its conditions hold.
    Rule(SeccompRule),
    /// Denied when the low 32 bits of argument `arg` equal one of `values` (what a seccompiler
    /// `Dword` `Eq` rule per value would say, compiled as one load and one comparison per value).
    OneOf { arg: u8, values: Vec<u32> },
    /// Denied when the low 32 bits of argument `arg` have any bit of `mask` set (what a
    /// seccompiler `Dword` `MaskedEq` rule per bit would say, compiled as one load and one test).
    AnyBit { arg: u8, mask: u32 },
}

/// The deny rules: for each syscall number the ways it is denied (OR'ed; an empty list denies it
/// unconditionally).
pub type Rules = BTreeMap<i64, Vec<Deny>>;

/// The highest x86-64 syscall number this policy was written against (`file_setattr`, Linux 6.17).
pub const MAX_KNOWN_NR: u32 = 469;

/// `fcntl` commands (include/uapi/asm-generic/fcntl.h) the libc crate does not name.
pub const F_SETSIG: u32 = 10;
pub const F_SETOWN_EX: u32 = 15;
/// Socket `ioctl`s that set the owner of a descriptor's signals (include/uapi/linux/sockios.h,
/// asm-generic/sockios.h).
pub const FIOSETOWN: u32 = 0x8901;
pub const SIOCSPGRP: u32 = 0x8902;
/// `_IOW('X', 32, struct fsxattr)` (include/uapi/linux/fs.h; struct fsxattr is 28 bytes).
pub const FS_IOC_FSSETXATTR: u32 = 0x401c_5820;

/// The `fcntl` commands denied whatever their argument: the ones that choose whom the kernel
/// signals for a descriptor (`F_SETOWN`, `F_SETOWN_EX`) or with what (`F_SETSIG`), and the two
/// that make the kernel signal on an event (`F_SETLEASE`: a lease break; `F_NOTIFY`: dnotify).
pub fn denied_fcntl_commands() -> [u32; 5] {
    [
        libc::F_SETOWN as u32,
        F_SETSIG,
        F_SETOWN_EX,
        libc::F_SETLEASE as u32,
        libc::F_NOTIFY as u32,
    ]
}

/// The `ioctl` requests denied, matched on the low 32 bits (the kernel ignores the rest):
/// terminal input injection (`TIOCSTI`, `TIOCLINUX`); the choice of a terminal's line discipline,
/// kernel code such as n_gsm or n_hdlc (`TIOCSETD`); terminal job control, which signals process
/// groups (`TIOCSCTTY`, `TIOCSPGRP`, `TIOCNOTTY`, `TIOCSIG`); signal-driven I/O (`FIOASYNC`, the
/// ioctl form of `O_ASYNC`, and the socket owner calls `FIOSETOWN`, `SIOCSPGRP`); a window size
/// change, which the kernel answers with SIGWINCH to the terminal's foreground process group
/// (`TIOCSWINSZ`, both sides' groups on a pty); inode attribute
/// changes, like `file_setattr` (`FS_IOC_SETFLAGS`, `FS_IOC_FSSETXATTR`, `FS_IOC_SETVERSION`, and
/// the 32-bit forms of the first and last, which have numbers of their own).
pub fn denied_ioctl_requests() -> [u32; 16] {
    [
        libc::TIOCSTI as u32,
        libc::TIOCLINUX as u32,
        libc::TIOCSETD as u32,
        libc::TIOCSCTTY as u32,
        libc::TIOCSPGRP as u32,
        libc::TIOCNOTTY as u32,
        libc::TIOCSIG as u32,
        libc::TIOCSWINSZ as u32,
        libc::FIOASYNC as u32,
        FIOSETOWN,
        SIOCSPGRP,
        libc::FS_IOC_SETFLAGS as u32,
        libc::FS_IOC32_SETFLAGS as u32,
        FS_IOC_FSSETXATTR,
        libc::FS_IOC_SETVERSION as u32,
        libc::FS_IOC32_SETVERSION as u32,
    ]
}

/// The per-launch values a policy is built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// The runner's pid, which becomes the plugin's: signals and `prlimit` only to itself.
    pub pid: u32,
    /// The value `execve`'s unused fourth argument must carry; only the runner's final exec has it.
    pub cookie: u64,
}

/// Syscalls denied whatever their arguments.
fn always_denied() -> Vec<i64> {
    use libc::*;
    let mut v = vec![
        // Sockets and socket I/O (socket..getsockopt is one run of numbers).
        SYS_socket,
        SYS_connect,
        SYS_accept,
        SYS_sendto,
        SYS_recvfrom,
        SYS_sendmsg,
        SYS_recvmsg,
        SYS_shutdown,
        SYS_bind,
        SYS_listen,
        SYS_getsockname,
        SYS_getpeername,
        SYS_socketpair,
        SYS_setsockopt,
        SYS_getsockopt,
        SYS_accept4,
        SYS_recvmmsg,
        SYS_sendmmsg,
        // New processes and namespaces (threads go through `clone`, checked by argument).
        SYS_fork,
        SYS_vfork,
        SYS_unshare,
        SYS_setns,
        SYS_execveat,
        // Other processes.
        SYS_ptrace,
        SYS_process_vm_readv,
        SYS_process_vm_writev,
        SYS_kcmp,
        SYS_pidfd_open,
        SYS_pidfd_getfd,
        SYS_pidfd_send_signal,
        SYS_process_madvise,
        SYS_process_mrelease,
        SYS_setsid,
        SYS_setpgid,
        SYS_setpriority,
        SYS_ioprio_set,
        SYS_sched_setparam,
        SYS_sched_setscheduler,
        SYS_sched_setattr,
        SYS_migrate_pages,
        SYS_move_pages,
        // Mount family, old and new API; root changes.
        SYS_mount,
        SYS_umount2,
        SYS_pivot_root,
        SYS_chroot,
        SYS_open_tree,
        SYS_move_mount,
        SYS_fsopen,
        SYS_fsconfig,
        SYS_fsmount,
        SYS_fspick,
        SYS_mount_setattr,
        457,
        458, // statmount, listmount
        467, // open_tree_attr
        // Metadata changes: mode, owner, times, extended attributes, inode attributes.
        SYS_chmod,
        SYS_fchmod,
        SYS_fchmodat,
        SYS_fchmodat2,
        SYS_chown,
        SYS_fchown,
        SYS_lchown,
        SYS_fchownat,
        SYS_utime,
        SYS_utimes,
        SYS_futimesat,
        SYS_utimensat,
        SYS_setxattr,
        SYS_lsetxattr,
        SYS_fsetxattr,
        SYS_getxattr,
        SYS_lgetxattr,
        SYS_fgetxattr,
        SYS_listxattr,
        SYS_llistxattr,
        SYS_flistxattr,
        SYS_removexattr,
        SYS_lremovexattr,
        SYS_fremovexattr,
        463,
        464,
        465,
        466, // setxattrat, getxattrat, listxattrat, removexattrat
        469, // file_setattr
        SYS_mknod,
        SYS_mknodat,
        // Executable memory that is not a file, and System V / POSIX IPC with other processes.
        SYS_memfd_create,
        SYS_memfd_secret,
        SYS_shmget,
        SYS_shmat,
        SYS_shmctl,
        SYS_shmdt,
        SYS_semget,
        SYS_semop,
        SYS_semctl,
        SYS_semtimedop,
        SYS_msgget,
        SYS_msgsnd,
        SYS_msgrcv,
        SYS_msgctl,
        SYS_mq_open,
        SYS_mq_unlink,
        SYS_mq_timedsend,
        SYS_mq_timedreceive,
        SYS_mq_notify,
        SYS_mq_getsetattr,
        // Kernel attack surface and observers.
        SYS_io_uring_setup,
        SYS_io_uring_enter,
        SYS_io_uring_register,
        // Legacy AIO: every context counts against one host-wide budget (fs.aio-max-nr), which
        // one plugin could take whole, failing every other program's io_setup with EAGAIN.
        SYS_io_setup,
        SYS_io_destroy,
        SYS_io_getevents,
        333, // io_pgetevents
        SYS_io_submit,
        SYS_io_cancel,
        SYS_bpf,
        SYS_keyctl,
        SYS_add_key,
        SYS_request_key,
        SYS_perf_event_open,
        SYS_userfaultfd,
        SYS_fanotify_init,
        SYS_fanotify_mark,
        SYS_name_to_handle_at,
        SYS_open_by_handle_at,
        // inotify: watches are denied, and an instance without one only spends its user's
        // budget (max_user_instances, counted up through every user namespace: a plugin run in
        // one by a user would spend that user's).
        SYS_inotify_init,
        SYS_inotify_init1,
        SYS_inotify_add_watch,
        SYS_modify_ldt,
        SYS_syslog,
        SYS_lookup_dcookie,
        SYS_vhangup,
        SYS_acct,
        SYS_quotactl,
        SYS_quotactl_fd,
        SYS_sysfs,
        SYS_uselib,
        SYS__sysctl,
        SYS_ustat,
        460, // lsm_set_self_attr
        // Identity and capabilities.
        SYS_setuid,
        SYS_setgid,
        SYS_setreuid,
        SYS_setregid,
        SYS_setgroups,
        SYS_setresuid,
        SYS_setresgid,
        SYS_setfsuid,
        SYS_setfsgid,
        SYS_capset,
        // The machine: power, kernel images and modules, swap, clocks, names, I/O ports.
        SYS_reboot,
        SYS_kexec_load,
        SYS_kexec_file_load,
        SYS_init_module,
        SYS_finit_module,
        SYS_delete_module,
        174,
        /* create_module */ SYS_swapon,
        SYS_swapoff,
        SYS_settimeofday,
        SYS_clock_settime,
        SYS_adjtimex,
        SYS_clock_adjtime,
        SYS_sethostname,
        SYS_setdomainname,
        SYS_iopl,
        SYS_ioperm,
        SYS_nfsservctl,
        // Writeback of every filesystem of the host. `fsync`, `fdatasync` and `syncfs` stay: the
        // plugin's descriptors are its pipes and files on its private tmpfs stage.
        SYS_sync,
    ];
    v.sort_unstable();
    v.dedup();
    v
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

/// Syscalls denied by argument: each entry's rules are OR'ed, a rule's conditions AND'ed.
fn denied_by_argument(p: Params) -> Result<Vec<(i64, Vec<Deny>)>, BackendError> {
    use libc::*;
    let clone_new = [
        CLONE_NEWNS,
        CLONE_NEWCGROUP,
        CLONE_NEWUTS,
        CLONE_NEWIPC,
        CLONE_NEWUSER,
        CLONE_NEWPID,
        CLONE_NEWNET,
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
    let prctl = Deny::OneOf {
        arg: 0,
        values: vec![
            PR_SET_PDEATHSIG as u32,
            PR_SET_DUMPABLE as u32,
            PR_SET_PTRACER as u32,
            PR_SET_MM as u32,
            // KSM for every mapping of the process, now and later: `MADV_MERGEABLE` below, whole.
            PR_SET_MEMORY_MERGE as u32,
        ],
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
        (SYS_timer_create, other_cpu_clock()?),
        // Only the runner's own final exec carries the cookie.
        (
            SYS_execve,
            vec![rule(vec![Cond::new(3, Len::Qword, Op::Ne, p.cookie)?])?],
        ),
        (SYS_kill, vec![not_self(0, p)?]),
        (SYS_tkill, vec![not_self(0, p)?]),
        (SYS_tgkill, vec![not_self(0, p)?]),
        (SYS_rt_sigqueueinfo, vec![not_self(0, p)?]),
        (SYS_rt_tgsigqueueinfo, vec![not_self(0, p)?]),
        (SYS_prlimit64, pid_other()?),
        (SYS_sched_setaffinity, pid_other()?),
        // MAP_HUGETLB takes pages from the host's huge page pool, which is not the run's: its
        // size is set aside for whatever the host reserved it for.
        (SYS_mmap, vec![exec(2)?, flag_set(3, MAP_HUGETLB as u64)?]),
        // MADV_MERGEABLE offers its pages to KSM, which merges identical pages across
        // processes: how long a write takes then tells whether another process holds a page
        // with the same bytes.
        (
            SYS_madvise,
            vec![Deny::OneOf {
                arg: 2,
                values: vec![MADV_MERGEABLE as u32],
            }],
        ),
        (SYS_mprotect, vec![exec(2)?]),
        (SYS_pkey_mprotect, vec![exec(2)?]),
        // Only the query (0xffffffff) and the default persona (0).
        (
            SYS_personality,
            vec![rule(vec![
                dword(0, Op::Ne, 0)?,
                dword(0, Op::Ne, 0xffff_ffff)?,
            ])?],
        ),
        (SYS_prctl, vec![prctl]),
        // The request number is matched on its low 32 bits: the kernel ignores the rest.
        (
            SYS_ioctl,
            vec![Deny::OneOf {
                arg: 1,
                values: denied_ioctl_requests().to_vec(),
            }],
        ),
        // The command is an `unsigned int` to the kernel, as is `F_SETFL`'s flags argument.
        // `O_ASYNC` turns on signal-driven I/O, whose signal goes to the descriptor's owner: on
        // a terminal the kernel makes that the terminal's foreground process group.
        (
            SYS_fcntl,
            vec![
                Deny::OneOf {
                    arg: 1,
                    values: denied_fcntl_commands().to_vec(),
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

/// The deny rules for `p`: every syscall the plugin may not make, with the arguments that deny it.
pub fn deny_rules(p: Params) -> Result<Rules, BackendError> {
    let mut rules: Rules = always_denied().into_iter().map(|nr| (nr, vec![])).collect();
    for (nr, chain) in denied_by_argument(p)? {
        // An unconditional denial already covers every argument (a unit test keeps the two
        // lists apart, so no rule here is written for nothing).
        if rules.get(&nr).is_some_and(Vec::is_empty) {
            continue;
        }
        rules.insert(nr, chain);
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::testing::*;
    use crate::bpf::RET_ALLOW;

    /// A syscall is denied either outright or by its arguments, never both: a rule by argument
    /// for a syscall denied outright would be dead.
    #[test]
    fn no_syscall_is_denied_both_outright_and_by_argument() {
        let always = always_denied();
        let both: Vec<i64> = denied_by_argument(P)
            .expect("rules")
            .into_iter()
            .map(|(nr, _)| nr)
            .filter(|nr| always.contains(nr))
            .collect();
        assert_eq!(both, Vec::<i64>::new());
    }

    /// Routes to the same effect as a denied one: a private descriptor table after the fact,
    /// KSM for the whole process, a window size change (SIGWINCH to a process group).
    #[test]
    fn siblings_of_denied_routes_are_denied() {
        let unshare = u64::from(libc::CLOSE_RANGE_UNSHARE);
        assert_eq!(call(libc::SYS_close_range, [3, 3, unshare, 0, 0, 0]), EPERM);
        assert_eq!(call(libc::SYS_close_range, [3, 3, 0, 0, 0, 0]), RET_ALLOW);
        let merge = libc::PR_SET_MEMORY_MERGE as u64;
        assert_eq!(call(libc::SYS_prctl, [merge, 1, 0, 0, 0, 0]), EPERM);
        for req in [0x5414, 0x5414 | (1 << 32)] {
            assert_eq!(
                call(libc::SYS_ioctl, [0, req, 0, 0, 0, 0]),
                EPERM,
                "{req:#x}"
            );
        }
        assert_eq!(u64::from(denied_ioctl_requests()[2]), 0x5423, "TIOCSETD");
    }

    #[test]
    fn kernel_surface_is_denied() {
        for nr in [
            libc::SYS_io_uring_setup,
            libc::SYS_bpf,
            libc::SYS_socket,
            libc::SYS_socketpair,
            libc::SYS_unshare,
            libc::SYS_setns,
            libc::SYS_fork,
            libc::SYS_vfork,
            libc::SYS_execveat,
            libc::SYS_memfd_create,
            libc::SYS_mount,
            libc::SYS_fsopen,
            libc::SYS_chmod,
            libc::SYS_fchownat,
            libc::SYS_utimensat,
            libc::SYS_setxattr,
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_pidfd_open,
            libc::SYS_setsid,
            libc::SYS_setpgid,
            libc::SYS_keyctl,
            libc::SYS_perf_event_open,
            libc::SYS_userfaultfd,
            libc::SYS_capset,
            libc::SYS_setuid,
            libc::SYS_reboot,
            libc::SYS_kexec_load,
            libc::SYS_init_module,
            libc::SYS_swapon,
            libc::SYS_clock_settime,
            libc::SYS_shmat,
            libc::SYS_io_setup,
            libc::SYS_io_submit,
            libc::SYS_io_getevents,
            333, // io_pgetevents
            libc::SYS_io_destroy,
            libc::SYS_io_cancel,
            libc::SYS_inotify_init,
            libc::SYS_inotify_init1,
            libc::SYS_semget,
            libc::SYS_msgget,
            libc::SYS_mq_open,
            libc::SYS_pidfd_getfd,
            libc::SYS_pidfd_send_signal,
            libc::SYS_process_vm_writev,
            libc::SYS_kcmp,
            libc::SYS_sync,
            libc::SYS_memfd_secret,
            libc::SYS_add_key,
            libc::SYS_request_key,
            libc::SYS_setpriority,
            libc::SYS_ioprio_set,
            libc::SYS_sched_setattr,
            libc::SYS_setgroups,
        ] {
            assert_eq!(call(nr, [0; 6]), EPERM, "syscall {nr}");
        }
    }

    #[test]
    fn everyday_syscalls_are_allowed() {
        for nr in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_openat,
            libc::SYS_close,
            libc::SYS_futex,
            libc::SYS_exit_group,
            libc::SYS_rt_sigaction,
            libc::SYS_sched_getaffinity,
            libc::SYS_getrlimit,
            libc::SYS_rseq,
        ] {
            assert_eq!(call(nr, [0; 6]), RET_ALLOW, "syscall {nr}");
        }
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
        ] {
            let flags = go_thread | ns as u64;
            assert_eq!(call(libc::SYS_clone, [flags, 0, 0, 0, 0, 0]), EPERM);
        }
    }

    #[test]
    fn only_the_cookie_exec_passes() {
        assert_eq!(call(libc::SYS_execve, [1, 2, 3, P.cookie, 0, 0]), RET_ALLOW);
        assert_eq!(call(libc::SYS_execve, [1, 2, 3, 0, 0, 0]), EPERM);
        assert_eq!(
            call(libc::SYS_execve, [1, 2, 3, P.cookie ^ (1 << 40), 0, 0]),
            EPERM
        );
        assert_eq!(call(libc::SYS_execve, [1, 2, 3, P.cookie ^ 1, 0, 0]), EPERM);
    }

    #[test]
    fn signals_only_to_itself() {
        let me = u64::from(P.pid);
        assert_eq!(call(libc::SYS_kill, [me, 0, 0, 0, 0, 0]), RET_ALLOW);
        assert_eq!(call(libc::SYS_tgkill, [me, 77, 23, 0, 0, 0]), RET_ALLOW);
        for other in [0u64, 1, me + 1, u64::from(u32::MAX), u64::MAX] {
            for nr in [
                libc::SYS_kill,
                libc::SYS_tkill,
                libc::SYS_tgkill,
                libc::SYS_rt_sigqueueinfo,
                libc::SYS_rt_tgsigqueueinfo,
            ] {
                assert_eq!(call(nr, [other, me, 0, 0, 0, 0]), EPERM, "{nr} to {other}");
            }
        }
        assert_eq!(call(libc::SYS_prlimit64, [0, 7, 0, 1, 0, 0]), RET_ALLOW);
        assert_eq!(call(libc::SYS_prlimit64, [me, 7, 0, 1, 0, 0]), RET_ALLOW);
        assert_eq!(call(libc::SYS_prlimit64, [1, 7, 0, 1, 0, 0]), EPERM);
    }

    #[test]
    fn other_processes_cpu_clocks_are_denied() {
        let process_clock = |pid: i32| u64::from(((!pid) << 3 | 2) as u32);
        let thread_clock = |tid: i32| u64::from(((!tid) << 3 | 4 | 2) as u32);
        for nr in [
            libc::SYS_clock_gettime,
            libc::SYS_clock_getres,
            libc::SYS_clock_nanosleep,
            libc::SYS_timer_create,
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
        for nr in [libc::SYS_mmap, libc::SYS_mprotect, libc::SYS_pkey_mprotect] {
            assert_eq!(call(nr, [0, 4096, rw, 0x22, 0, 0]), RET_ALLOW);
            assert_eq!(call(nr, [0, 4096, rx, 0x22, 0, 0]), EPERM);
        }
        let huge = 0x22 | libc::MAP_HUGETLB as u64;
        assert_eq!(call(libc::SYS_mmap, [0, 1 << 21, rw, huge, 0, 0]), EPERM);
        let merge = libc::MADV_MERGEABLE as u64;
        assert_eq!(call(libc::SYS_madvise, [0, 4096, merge, 0, 0, 0]), EPERM);
        assert_eq!(
            call(libc::SYS_madvise, [0, 4096, merge | (1 << 32), 0, 0, 0]),
            EPERM
        );
        let dontneed = libc::MADV_DONTNEED as u64;
        assert_eq!(
            call(libc::SYS_madvise, [0, 4096, dontneed, 0, 0, 0]),
            RET_ALLOW
        );
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

    #[test]
    fn prctl_and_terminal_injection() {
        assert_eq!(
            call(
                libc::SYS_prctl,
                [libc::PR_SET_PDEATHSIG as u64, 0, 0, 0, 0, 0]
            ),
            EPERM
        );
        assert_eq!(
            call(
                libc::SYS_prctl,
                [libc::PR_SET_DUMPABLE as u64, 1, 0, 0, 0, 0]
            ),
            EPERM
        );
        assert_eq!(
            call(libc::SYS_prctl, [PR_SET_PTRACER, 1, 0, 0, 0, 0]),
            EPERM
        );
        assert_eq!(
            call(libc::SYS_prctl, [libc::PR_SET_MM as u64, 1, 0, 0, 0, 0]),
            EPERM
        );
        assert_eq!(
            call(libc::SYS_prctl, [libc::PR_SET_NAME as u64, 1, 0, 0, 0, 0]),
            RET_ALLOW
        );
        for cmd in [
            TIOCSTI,
            TIOCSTI | (1 << 32),
            TIOCLINUX,
            TIOCLINUX | (0xdead << 32),
        ] {
            assert_eq!(
                call(libc::SYS_ioctl, [0, cmd, 0, 0, 0, 0]),
                EPERM,
                "{cmd:#x}"
            );
        }
        assert_eq!(call(libc::SYS_ioctl, [0, 0x5401, 0, 0, 0, 0]), RET_ALLOW);
    }

    /// The `fcntl` commands and `ioctl` requests that set or use a signal target, and the inode
    /// attribute `ioctl`s, are denied whatever the high 32 bits of the argument hold (the kernel
    /// takes both as `unsigned int`); their read-only and everyday neighbours pass.
    #[test]
    fn signal_routes_and_inode_attributes_through_descriptors_are_denied() {
        let high = [0u64, 1 << 32, 0xdead_0000_0000, 0xffff_ffff_0000_0000];
        for cmd in denied_fcntl_commands() {
            for h in high {
                let args = [1, u64::from(cmd) | h, 4242, 0, 0, 0];
                assert_eq!(call(libc::SYS_fcntl, args), EPERM, "fcntl {cmd} | {h:#x}");
            }
        }
        for req in denied_ioctl_requests() {
            for h in high {
                let args = [1, u64::from(req) | h, 0, 0, 0, 0];
                assert_eq!(
                    call(libc::SYS_ioctl, args),
                    EPERM,
                    "ioctl {req:#x} | {h:#x}"
                );
            }
        }
        let o_async = libc::O_ASYNC as u64;
        let setfl = libc::F_SETFL as u64;
        for flags in [o_async, o_async | libc::O_NONBLOCK as u64, u64::MAX] {
            let args = [1, setfl, flags, 0, 0, 0];
            assert_eq!(call(libc::SYS_fcntl, args), EPERM, "F_SETFL {flags:#x}");
            let args = [1, setfl | (1 << 40), flags, 0, 0, 0];
            assert_eq!(
                call(libc::SYS_fcntl, args),
                EPERM,
                "F_SETFL(high) {flags:#x}"
            );
        }
        // What runtimes use: flags without O_ASYNC (high bits are dropped by the kernel), dup,
        // descriptor flags, reading the owner, the signal, the lease, pipe sizes, seals.
        let allowed_fcntl = [
            (libc::F_GETFL as u64, 0),
            (setfl, libc::O_NONBLOCK as u64),
            (setfl, o_async << 32),
            (setfl, 0),
            (libc::F_DUPFD as u64, 3),
            (libc::F_DUPFD_CLOEXEC as u64, 3),
            (libc::F_GETFD as u64, 0),
            (libc::F_SETFD as u64, libc::FD_CLOEXEC as u64),
            (libc::F_GETOWN as u64, 0),
            (16, 0), // F_GETOWN_EX
            (11, 0), // F_GETSIG
            (libc::F_GETLEASE as u64, 0),
            (libc::F_SETLK as u64, 0),
            (libc::F_OFD_SETLK as u64, 0),
            (libc::F_SETPIPE_SZ as u64, 1 << 16),
            (libc::F_GET_SEALS as u64, 0),
            (o_async, 0),
        ];
        for (cmd, arg) in allowed_fcntl {
            let args = [1, cmd, arg, 0, 0, 0];
            assert_eq!(
                call(libc::SYS_fcntl, args),
                RET_ALLOW,
                "fcntl {cmd} {arg:#x}"
            );
        }
        let allowed_ioctl = [
            libc::TCGETS,
            libc::TIOCGWINSZ,
            libc::TIOCGPGRP,
            libc::FIONREAD,
            libc::FIONBIO,
            libc::FIOCLEX,
            0x8903, // FIOGETOWN
            0x8904, // SIOCGPGRP
            libc::FS_IOC_GETFLAGS,
            0x801c_581f, // FS_IOC_FSGETXATTR
            libc::FS_IOC_GETVERSION,
        ];
        for req in allowed_ioctl {
            let args = [1, req, 0, 0, 0, 0];
            assert_eq!(call(libc::SYS_ioctl, args), RET_ALLOW, "ioctl {req:#x}");
        }
    }
}
