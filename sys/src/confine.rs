//! The kernel calls `dot-sandbox` makes to confine itself before it executes a plugin: inherited
//! descriptors, parent-death signal, capabilities and securebits, `no_new_privs`, the Landlock ABI
//! and seccomp's actions (what the `probe` crate asks the kernel), seccomp installation,
//! default signal dispositions and an empty signal mask for the plugin, close-on-exec for every
//! inherited descriptor, and the final `execveat` that carries the seccomp cookie. One syscall per
//! function, each converted at once to `io::Result`.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn check_long(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Descriptors 3..64 already claimed by `claim_inherited_fd`, one bit each.
static CLAIMED: AtomicU64 = AtomicU64::new(0);

/// Takes ownership of descriptor `n` (3 ≤ n < 64) that this process inherited at exec.
///
/// Call it at start-up, before the process opens anything itself: the number must name a
/// descriptor the parent placed there on purpose. Each number can be claimed once; a second claim,
/// a number out of range or a closed descriptor is an error (`EBADF`), so two owners never exist.
pub fn claim_inherited_fd(n: i32) -> io::Result<OwnedFd> {
    if !(3..64).contains(&n) {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    let bit = 1u64 << n;
    if CLAIMED.fetch_or(bit, Ordering::SeqCst) & bit != 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: F_GETFD takes only integer arguments; it tells whether `n` is an open descriptor.
    if let Err(e) = check(unsafe { libc::fcntl(n, libc::F_GETFD) }) {
        CLAIMED.fetch_and(!bit, Ordering::SeqCst);
        return Err(e);
    }
    // SAFETY: `n` is open (checked above) and was inherited, not opened by this process; the
    // CLAIMED bit guarantees that no other OwnedFd for it is ever created through this function.
    Ok(unsafe { OwnedFd::from_raw_fd(n) })
}

/// `prctl(PR_SET_PDEATHSIG, SIGKILL)`: die with the parent. The setting survives `execve`.
pub fn set_parent_death_kill() -> io::Result<()> {
    // SAFETY: PR_SET_PDEATHSIG takes only integer arguments and touches no memory of ours.
    check(unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    })
    .map(drop)
}

/// The parent's process id (1, or a subreaper's, once the real parent is gone).
pub fn parent_pid() -> u32 {
    nix::unistd::getppid().as_raw() as u32
}

/// Sets one resource limit, soft `soft`, hard `hard`.
pub fn set_rlimit(resource: nix::sys::resource::Resource, soft: u64, hard: u64) -> io::Result<()> {
    nix::sys::resource::setrlimit(resource, soft, hard).map_err(io::Error::from)
}

/// The securebits that make uid 0 ordinary, each with its lock bit: no capabilities from being
/// root at exec, no fixup on uid changes, keep-caps off and locked, no ambient raise.
pub const LOCKED_SECUREBITS: u64 = (libc::SECBIT_NOROOT
    | libc::SECBIT_NOROOT_LOCKED
    | libc::SECBIT_NO_SETUID_FIXUP
    | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
    | libc::SECBIT_KEEP_CAPS_LOCKED
    | libc::SECBIT_NO_CAP_AMBIENT_RAISE
    | libc::SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) as u64;

/// `prctl(PR_SET_SECUREBITS, bits)` (needs CAP_SETPCAP).
pub fn set_securebits(bits: u64) -> io::Result<()> {
    // SAFETY: PR_SET_SECUREBITS takes only integer arguments and touches no memory of ours.
    check(unsafe { libc::prctl(libc::PR_SET_SECUREBITS, bits as libc::c_ulong, 0, 0, 0) }).map(drop)
}

/// `prctl(PR_GET_SECUREBITS)`.
pub fn securebits() -> io::Result<u64> {
    // SAFETY: PR_GET_SECUREBITS takes only integer arguments and touches no memory of ours.
    check(unsafe { libc::prctl(libc::PR_GET_SECUREBITS, 0, 0, 0, 0) }).map(|b| b as u64)
}

/// `prctl(PR_CAPBSET_DROP, cap)`: `Err(EINVAL)` once `cap` is past the kernel's last capability.
pub fn drop_bounding_cap(cap: u32) -> io::Result<()> {
    // SAFETY: PR_CAPBSET_DROP takes only integer arguments and touches no memory of ours.
    check(unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) }).map(drop)
}

/// `prctl(PR_CAPBSET_READ, cap)`: whether `cap` is still in the bounding set.
pub fn bounding_has(cap: u32) -> io::Result<bool> {
    // SAFETY: PR_CAPBSET_READ takes only integer arguments and touches no memory of ours.
    check(unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong, 0, 0, 0) })
        .map(|r| r == 1)
}

/// `prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)`.
pub fn clear_ambient_caps() -> io::Result<()> {
    // SAFETY: PR_CAP_AMBIENT_CLEAR_ALL takes only integer arguments and touches no memory of ours.
    check(unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        )
    })
    .map(drop)
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `capset` with empty effective, permitted and inheritable sets for the calling thread.
pub fn clear_capability_sets() -> io::Result<()> {
    let header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData::default(); 2];
    // SAFETY: capset reads one header and two data structs (version 3), both alive and sized as
    // the kernel expects for the duration of the call.
    check_long(unsafe {
        libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr())
    })
    .map(drop)
}

/// The calling thread's (effective, permitted, inheritable) capability sets, 64 bits each.
pub fn capability_sets() -> io::Result<(u64, u64, u64)> {
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget writes at most two data structs (version 3) into `data` and may update the
    // header's version; both are alive and writable for the duration of the call.
    check_long(unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut CapHeader,
            data.as_mut_ptr(),
        )
    })?;
    let join = |lo: u32, hi: u32| u64::from(lo) | (u64::from(hi) << 32);
    Ok((
        join(data[0].effective, data[1].effective),
        join(data[0].permitted, data[1].permitted),
        join(data[0].inheritable, data[1].inheritable),
    ))
}

/// `prctl(PR_SET_NO_NEW_PRIVS, 1)`.
pub fn set_no_new_privs() -> io::Result<()> {
    // SAFETY: PR_SET_NO_NEW_PRIVS takes only integer arguments and touches no memory of ours.
    check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }).map(drop)
}

/// `prctl(PR_GET_NO_NEW_PRIVS)`: `Err` if the kernel does not know the flag.
pub fn no_new_privs() -> io::Result<bool> {
    // SAFETY: PR_GET_NO_NEW_PRIVS takes only integer arguments and touches no memory of ours.
    check(unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) }).map(|r| r == 1)
}

/// The kernel's Landlock ABI version: `landlock_create_ruleset(NULL, 0, VERSION)`. `Err(ENOSYS)`
/// when Landlock is not built in, `Err(EOPNOTSUPP)` when it is disabled.
pub fn landlock_abi_version() -> io::Result<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a NULL attribute pointer, size 0 and the VERSION flag the kernel reads no
    // memory and returns a number.
    check_long(unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    })
    .map(|v| v as u32)
}

/// `seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &action)`: whether filter mode and `action` are supported.
pub fn seccomp_action_available(action: u32) -> io::Result<bool> {
    const SECCOMP_GET_ACTION_AVAIL: libc::c_uint = 2;
    // SAFETY: the kernel reads one u32 from `action`, which is alive for the call.
    match check_long(unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_GET_ACTION_AVAIL,
            0u32,
            &action as *const u32,
        )
    }) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(false),
        Err(e) => Err(e),
    }
}

/// One classic BPF instruction, laid out as the kernel's `struct sock_filter`.
pub type SockFilter = libc::sock_filter;

/// Installs `program` as a seccomp filter on the calling thread
/// (`seccomp(SECCOMP_SET_MODE_FILTER, 0, &prog)`). `no_new_privs` must already be set.
pub fn install_seccomp_filter(program: &[SockFilter]) -> io::Result<()> {
    let len =
        u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?;
    let prog = libc::sock_fprog {
        len,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: the kernel copies `len` instructions from `filter`, which points into `program`,
    // alive and unmodified for the duration of the call; it writes nothing back.
    check_long(unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0u32,
            &prog as *const libc::sock_fprog,
        )
    })
    .map(drop)
}

/// [`install_seccomp_filter`] with `SECCOMP_FILTER_FLAG_NEW_LISTENER`: the filter's
/// `SECCOMP_RET_USER_NOTIF` returns are sent, the calling thread blocked, to the returned
/// listener, whose holder answers each ([`seccomp_notif_recv`], [`seccomp_notif_errno`]).
pub fn install_seccomp_filter_with_listener(program: &[SockFilter]) -> io::Result<OwnedFd> {
    let len =
        u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?;
    let prog = libc::sock_fprog {
        len,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: as in `install_seccomp_filter`; with this flag the kernel returns a new descriptor,
    // which we take ownership of once it is known to be one.
    let fd = check_long(unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER as u32,
            &prog as *const libc::sock_fprog,
        )
    })?;
    let fd = i32::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: the kernel just returned this descriptor to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A copy of descriptor `fd` of the process `pidfd` refers to (`pidfd_getfd`), close-on-exec.
/// Needs ptrace access to that process.
pub fn pidfd_getfd(pidfd: BorrowedFd<'_>, fd: i32) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with integer arguments; the result is a new descriptor or -1.
    let got =
        check_long(unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0u32) })?;
    let got = i32::try_from(got).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: the kernel just returned this descriptor to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(got) })
}

/// One system call a seccomp filter sent to its listener: its id (to answer it by) and number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeccompNotif {
    pub id: u64,
    pub nr: i32,
}

/// Takes the next notification from `listener` (`SECCOMP_IOCTL_NOTIF_RECV`; blocks until one
/// comes unless the descriptor is non-blocking).
pub fn seccomp_notif_recv(listener: BorrowedFd<'_>) -> io::Result<SeccompNotif> {
    // SAFETY: `seccomp_notif` is plain integers; all-zero is the state the kernel requires.
    let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: the ioctl writes one `seccomp_notif` into `n`, which is exactly that size.
    check(unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV,
            &mut n as *mut libc::seccomp_notif,
        )
    })?;
    Ok(SeccompNotif {
        id: n.id,
        nr: n.data.nr,
    })
}

/// Answers notification `id` on `listener`: the system call fails with `errno`, not made
/// (`SECCOMP_IOCTL_NOTIF_SEND`). `ENOENT`: the caller is gone (killed meanwhile).
pub fn seccomp_notif_errno(listener: BorrowedFd<'_>, id: u64, errno: i32) -> io::Result<()> {
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: -errno,
        flags: 0,
    };
    // SAFETY: the ioctl reads one `seccomp_notif_resp` from `resp`, which is exactly that size.
    check(unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            &mut resp as *mut libc::seccomp_notif_resp,
        )
    })
    .map(drop)
}

/// The highest signal number on Linux (`_NSIG - 1`): 1..=31 classic, 32..=64 real-time.
pub const MAX_SIGNAL: i32 = 64;

/// The kernel's `struct sigaction` on x86-64 (handler, flags, restorer, mask), not libc's, whose
/// layout differs and whose wrapper refuses the signals libc keeps for itself.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct KernelSigaction {
    handler: usize,
    flags: u64,
    restorer: usize,
    mask: u64,
}

/// `rt_sigaction(sig, {SIG_DFL}, NULL)`: the default disposition for `sig`. `execve` resets
/// caught signals to default by itself but keeps ignored ones ignored, so this is what undoes an
/// ignore (Rust ignores SIGPIPE at start) before an exec. `Err(EINVAL)` for SIGKILL, SIGSTOP and
/// numbers outside 1..=64.
pub fn set_default_signal_action(sig: i32) -> io::Result<()> {
    set_signal_handler(sig, libc::SIG_DFL)
}

/// `rt_sigaction(sig, {handler}, NULL)` with no flags and an empty mask; `handler` is `SIG_DFL` or
/// `SIG_IGN` (never a function: nothing here installs code to run on a signal).
fn set_signal_handler(sig: i32, handler: libc::sighandler_t) -> io::Result<()> {
    let act = KernelSigaction {
        handler,
        ..KernelSigaction::default()
    };
    // SAFETY: the kernel reads one struct of the size given (8-byte mask) from `act`, alive for
    // the call, and writes nothing back (old action NULL); the handler is SIG_DFL or SIG_IGN.
    check_long(unsafe {
        libc::syscall(
            libc::SYS_rt_sigaction,
            sig,
            &act as *const KernelSigaction,
            std::ptr::null_mut::<KernelSigaction>(),
            8usize,
        )
    })
    .map(drop)
}

/// Whether `sig` is ignored (`SIG_IGN`) in this process: `rt_sigaction(sig, NULL, &old)`.
pub fn signal_ignored(sig: i32) -> io::Result<bool> {
    let mut old = KernelSigaction::default();
    // SAFETY: with a NULL new action the kernel only writes the current one into `old`, alive and
    // sized as the call says (8-byte mask).
    check_long(unsafe {
        libc::syscall(
            libc::SYS_rt_sigaction,
            sig,
            std::ptr::null::<KernelSigaction>(),
            &mut old as *mut KernelSigaction,
            8usize,
        )
    })?;
    Ok(old.handler == libc::SIG_IGN)
}

/// `rt_sigprocmask(SIG_SETMASK, {}, NULL)`: block no signal. The mask survives `execve`.
pub fn clear_signal_mask() -> io::Result<()> {
    let empty: u64 = 0;
    // SAFETY: the kernel reads the 8-byte set from `empty`, alive for the call; old set NULL.
    check_long(unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &empty as *const u64,
            std::ptr::null_mut::<u64>(),
            8usize,
        )
    })
    .map(drop)
}

/// The calling thread's blocked signals, one bit per signal (bit `n - 1` for signal `n`).
pub fn signal_mask() -> io::Result<u64> {
    let mut set: u64 = 0;
    // SAFETY: with a NULL new set the kernel only writes the current mask (8 bytes) into `set`.
    check_long(unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_BLOCK,
            std::ptr::null::<u64>(),
            &mut set as *mut u64,
            8usize,
        )
    })?;
    Ok(set)
}

/// Every signal but SIGKILL and SIGSTOP back to its default disposition, and an empty mask: what
/// a process started from a fresh shell would get at exec.
pub fn default_signals() -> io::Result<()> {
    for sig in 1..=MAX_SIGNAL {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        set_default_signal_action(sig)?;
    }
    clear_signal_mask()
}

/// A random 64-bit value from the kernel (`getrandom`, blocking until the pool is ready).
pub fn random_u64() -> io::Result<u64> {
    crate::fs::random_bytes().map(u64::from_ne_bytes)
}

/// Marks every descriptor ≥ `first` close-on-exec:
/// `close_range(first, ~0, CLOSE_RANGE_CLOEXEC)`, or `fcntl` one by one on kernels without it.
pub fn cloexec_from(first: u32) -> io::Result<()> {
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag on descriptors; integer
    // arguments only.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if ret == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if !matches!(err.raw_os_error(), Some(libc::ENOSYS | libc::EINVAL)) {
        return Err(err);
    }
    let max = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map_err(io::Error::from)?
        .1;
    for fd in first as u64..max.min(1 << 20) {
        set_cloexec_raw(fd as RawFd)?;
    }
    Ok(())
}

/// Clears close-on-exec on `fd`: it stays open across the exec (a script's interpreter opens its
/// script through `/dev/fd/4`).
pub fn keep_across_exec(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: F_GETFD/F_SETFD take only integer arguments on an open descriptor.
    let flags = check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) })?;
    // SAFETY: as above.
    check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, flags & !libc::FD_CLOEXEC) })
        .map(drop)
}

/// Marks `fd` close-on-exec; a number that is not open is left alone.
pub(crate) fn set_cloexec_raw(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFD/F_SETFD take only integer arguments; a closed number gives EBADF.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags < 0 {
        return match io::Error::last_os_error().raw_os_error() {
            Some(libc::EBADF) => Ok(()),
            _ => Err(io::Error::last_os_error()),
        };
    }
    // SAFETY: as above, integer arguments only.
    check(unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) }).map(drop)
}

/// `execveat(fd, "", argv, envp, AT_EMPTY_PATH, cookie)` through the raw syscall: executes the
/// file open on `fd` itself (no path: the private root has no `/proc`), with `cookie` in the sixth
/// argument register, which `execveat` never reads, so a seccomp rule can tell this exec from any
/// other. The environment is exactly `envp` (`NAME=VALUE` strings). Returns only on failure.
pub fn execveat_with_cookie(
    fd: BorrowedFd<'_>,
    argv: &[&CStr],
    envp: &[&CStr],
    cookie: u64,
) -> io::Error {
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let mut env: Vec<*const libc::c_char> = envp.iter().map(|e| e.as_ptr()).collect();
    env.push(std::ptr::null());
    let envp = env;
    // SAFETY: `fd` is open, the empty path and every `argv` and `envp` string are NUL-terminated
    // and alive; `ptrs` and `envp` are NULL-terminated pointer arrays alive for the call. On success the call
    // does not return.
    unsafe {
        libc::syscall(
            libc::SYS_execveat,
            fd.as_raw_fd(),
            c"".as_ptr(),
            ptrs.as_ptr(),
            envp.as_ptr(),
            libc::AT_EMPTY_PATH,
            cookie,
        )
    };
    io::Error::last_os_error()
}

/// Mount attributes for [`detached_tmpfs`] (`MOUNT_ATTR_*`).
pub const MOUNT_ATTR_NOSUID: u64 = 0x0000_0002;
pub const MOUNT_ATTR_NODEV: u64 = 0x0000_0004;
pub const MOUNT_ATTR_NOEXEC: u64 = 0x0000_0008;

const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_SET_STRING: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;

fn owned_fd(ret: libc::c_long) -> io::Result<OwnedFd> {
    let fd = check_long(ret)?;
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: the kernel just returned `fd` as a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A new tmpfs that is mounted nowhere (the new mount API): `fsopen("tmpfs")`, one
/// `fsconfig(FSCONFIG_SET_STRING)` per option (`size`, `nr_inodes`, `mode`, `uid`, …), create, then
/// `fsmount` with `attrs` (`MOUNT_ATTR_*`). Only the returned descriptor of its root reaches it, and
/// it is gone once the last descriptor or working directory on it is. Needs `CAP_SYS_ADMIN` in the
/// user namespace that owns the caller's mount namespace.
pub fn detached_tmpfs(options: &[(&CStr, &CStr)], attrs: u64) -> io::Result<OwnedFd> {
    // SAFETY: the filesystem name is a NUL-terminated literal; flags are integers.
    let fs =
        owned_fd(unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) })?;
    for (key, value) in options {
        // SAFETY: `key` and `value` are NUL-terminated and alive for the call; the kernel copies
        // them; `fs` is open.
        check_long(unsafe {
            libc::syscall(
                libc::SYS_fsconfig,
                fs.as_raw_fd(),
                FSCONFIG_SET_STRING,
                key.as_ptr(),
                value.as_ptr(),
                0,
            )
        })?;
    }
    // SAFETY: FSCONFIG_CMD_CREATE takes no pointers (both NULL); `fs` is open.
    check_long(unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_void>(),
            0,
        )
    })?;
    // SAFETY: fsmount takes the open filesystem context and integer flags; it returns a new
    // descriptor or -1.
    owned_fd(unsafe { libc::syscall(libc::SYS_fsmount, fs.as_raw_fd(), FSMOUNT_CLOEXEC, attrs) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_refuses_low_closed_and_repeated_numbers() {
        assert!(claim_inherited_fd(2).is_err());
        assert!(claim_inherited_fd(64).is_err());
        assert_eq!(
            claim_inherited_fd(63)
                .map(drop)
                .map_err(|e| e.raw_os_error()),
            Err(Some(libc::EBADF))
        );
    }

    /// In a child (the test harness's threads keep their own masks and dispositions): ignore and
    /// block a few signals, reset, and read every one back.
    #[test]
    fn default_signals_undoes_ignores_and_blocks() {
        use nix::sys::signal::{sigprocmask, SigSet, SigmaskHow, Signal};
        use nix::sys::wait::{waitpid, WaitStatus};
        // SAFETY: fork; the child only makes raw syscalls (async-signal-safe) and then _exit.
        match unsafe { nix::unistd::fork() }.expect("fork") {
            nix::unistd::ForkResult::Child => {
                let mut set = SigSet::empty();
                set.add(Signal::SIGUSR1);
                set.add(Signal::SIGTERM);
                let before = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), None).is_ok()
                    && [libc::SIGPIPE, libc::SIGHUP, 40]
                        .iter()
                        .all(|&s| ignore(s) && signal_ignored(s).unwrap_or(false))
                    && signal_mask().unwrap_or(0) != 0;
                let after = default_signals().is_ok()
                    && (1..=MAX_SIGNAL).all(|s| !signal_ignored(s).unwrap_or(true))
                    && signal_mask().ok() == Some(0);
                // SAFETY: _exit ends the child at once.
                unsafe { libc::_exit(if before && after { 0 } else { 1 }) }
            }
            nix::unistd::ForkResult::Parent { child } => {
                assert_eq!(
                    waitpid(child, None).ok(),
                    Some(WaitStatus::Exited(child, 0))
                );
            }
        }
    }

    fn ignore(sig: i32) -> bool {
        set_signal_handler(sig, libc::SIG_IGN).is_ok()
    }

    #[test]
    fn landlock_and_seccomp_are_queryable() {
        assert_eq!(
            seccomp_action_available(libc::SECCOMP_RET_KILL_PROCESS).ok(),
            Some(true)
        );
        assert!(no_new_privs().is_ok());
    }
}
