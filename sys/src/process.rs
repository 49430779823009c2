//! Process plumbing for the launcher: child subreaper, and spawning a child with exact descriptor
//! placement and a parent-death signal.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// Makes the calling process a child subreaper: orphaned descendants are reparented to it, so they
/// cannot hide from its process-group sampling and it reaps them itself.
pub fn set_child_subreaper() -> io::Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(io::Error::from)
}

/// Spawns `cmd` so that, in the child, each `(fd, n)` of `moves` sits on descriptor `n` without
/// close-on-exec, every other descriptor above 2 is closed at exec (whatever we inherited), no
/// signal is blocked, the parent-death signal is SIGKILL, and the child exits at once if the
/// parent is already gone.
pub fn spawn_with_fds(cmd: &mut Command, moves: &[(BorrowedFd<'_>, i32)]) -> io::Result<Child> {
    let placement = Placement::lift(moves)?;
    let plan = placement.plan.clone();
    let first_free = placement.first_free;
    let parent = std::process::id() as libc::pid_t;
    let hook = move || -> io::Result<()> {
        // The signals the launcher blocks for itself (`signal::Receiver`) are not the child's:
        // it starts with an empty mask, as std does not make one.
        nix::sys::signal::pthread_sigmask(
            nix::sys::signal::SigmaskHow::SIG_SETMASK,
            Some(&nix::sys::signal::SigSet::empty()),
            None,
        )?;
        arm_and_place(parent, &plan, first_free)
    };
    // SAFETY: the hook runs in the forked child before exec and only makes async-signal-safe
    // syscalls (sigprocmask, prctl, getppid, dup2, close_range or fcntl, getrlimit); it allocates
    // nothing (the plan vector was built before fork).
    unsafe { cmd.pre_exec(hook) };
    let child = cmd.spawn();
    drop(placement);
    child
}

/// Descriptors to place in a child: the `(source, target)` plan, and the first number above the
/// targets. A source numbered at or below a target is duplicated above them all first, so no
/// `dup2` in the child can overwrite a source that a later move still needs (and a source already
/// on its own target, whose `dup2` would keep close-on-exec, is placed from its duplicate); the
/// others are placed as they are, which keeps a launcher with a small descriptor limit working.
pub(crate) struct Placement {
    _lifted: Vec<OwnedFd>,
    pub plan: Vec<(RawFd, RawFd)>,
    pub first_free: u32,
}

impl Placement {
    pub(crate) fn lift(moves: &[(BorrowedFd<'_>, i32)]) -> io::Result<Placement> {
        let above = moves.iter().map(|&(_, n)| n + 1).max().unwrap_or(3).max(3);
        let first_free =
            u32::try_from(above).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let mut lifted = Vec::new();
        let mut plan = Vec::with_capacity(moves.len());
        for &(fd, n) in moves {
            if fd.as_raw_fd() < above {
                let up = dup_above(fd, above)?;
                plan.push((up.as_raw_fd(), n));
                lifted.push(up);
            } else {
                plan.push((fd.as_raw_fd(), n));
            }
        }
        Ok(Placement {
            _lifted: lifted,
            plan,
            first_free,
        })
    }
}

/// In a new child, before its exec: the parent-death signal armed (and the child gone at once if
/// the parent `parent` already is), each `(source, target)` of `plan` placed, and every other
/// descriptor above 2 closed at exec — those between the targets and all from `first_free` up —
/// so descriptors inherited without close-on-exec (a jobserver, a caller's leak) never reach
/// the program. System calls only, no allocation.
pub(crate) fn arm_and_place(
    parent: libc::pid_t,
    plan: &[(RawFd, RawFd)],
    first_free: u32,
) -> io::Result<()> {
    child_set_pdeathsig(parent)?;
    for &(src, dst) in plan {
        child_dup2(src, dst)?;
    }
    for n in 3..i32::try_from(first_free).unwrap_or(i32::MAX) {
        if !plan.iter().any(|&(_, dst)| dst == n) {
            crate::confine::set_cloexec_raw(n)?;
        }
    }
    crate::confine::cloexec_from(first_free)
}

/// Duplicates `fd` onto the lowest free descriptor number ≥ `min`, close-on-exec.
fn dup_above(fd: BorrowedFd<'_>, min: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC on a descriptor the borrow keeps open; integer arguments only.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, min) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` was just returned by the kernel as a fresh descriptor that nothing else owns.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(new) })
}

fn child_set_pdeathsig(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: PR_SET_PDEATHSIG takes only integer arguments and touches no memory of ours.
    if unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: getppid has no arguments and cannot fail.
    if unsafe { libc::getppid() } != parent {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

fn child_dup2(src: RawFd, dst: RawFd) -> io::Result<()> {
    // SAFETY: dup2 on descriptors the parent lifted and holds open across the fork; the new
    // descriptor has close-on-exec clear, which is what the exec needs.
    if unsafe { libc::dup2(src, dst) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Opens a pidfd for `pid`: pollable (readable once the process exits) without reaping it, so the
/// launcher can wait for its child with a deadline while the child's pgid stays reserved.
pub fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: pidfd_open takes a pid and flags (integers) and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: the kernel just returned `fd` as a fresh close-on-exec descriptor nobody else owns.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// What a process that exited used, as `wait4(2)` reports it: CPU time of every thread (and of
/// the children it waited for), and its peak resident set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExitUsage {
    /// User CPU time, microseconds.
    pub user_us: u64,
    /// System CPU time, microseconds.
    pub system_us: u64,
    /// `ru_maxrss`: the largest resident set of the process over its life, KiB (an exec keeps
    /// the high-water mark of the image it replaced).
    pub max_rss_kib: u64,
}

/// The usage of our child `pid`, which has exited (or is about to): waits for it with
/// `waitid(P_PID, pid, WEXITED | WNOWAIT)` and its `rusage` argument, which leaves the child a
/// zombie for its real wait (its pid, and so its process group's id, stays reserved).
pub fn exit_usage(pid: i32) -> io::Result<ExitUsage> {
    // SAFETY: an all-zero siginfo_t and rusage are valid values of these plain C structs.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: the raw waitid syscall (whose fifth argument, the rusage, the libc wrapper does
        // not offer) writes only into `info` and `usage`, both live and of the kernel's layout.
        let r = unsafe {
            libc::syscall(
                libc::SYS_waitid,
                libc::P_PID,
                pid,
                &mut info as *mut libc::siginfo_t,
                libc::WEXITED | libc::WNOWAIT,
                &mut usage as *mut libc::rusage,
            )
        };
        if r == 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let us = |t: libc::timeval| {
        u64::try_from(t.tv_sec)
            .unwrap_or(0)
            .saturating_mul(1_000_000)
            .saturating_add(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    Ok(ExitUsage {
        user_us: us(usage.ru_utime),
        system_us: us(usage.ru_stime),
        max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
    })
}

/// Sends `data` on the unix socket `sock` with `fd` attached (`SCM_RIGHTS`), in one `sendmsg`.
pub fn send_with_fd(sock: BorrowedFd<'_>, data: &[u8], fd: BorrowedFd<'_>) -> io::Result<usize> {
    use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
    let fds = [fd.as_raw_fd()];
    let cmsg = [ControlMessage::ScmRights(&fds)];
    let iov = [std::io::IoSlice::new(data)];
    sendmsg::<()>(sock.as_raw_fd(), &iov, &cmsg, MsgFlags::MSG_NOSIGNAL, None)
        .map_err(io::Error::from)
}

/// Receives up to `buf.len()` bytes from the unix socket `sock` (`recvmsg`, `MSG_CMSG_CLOEXEC`),
/// with the descriptors attached to them (`SCM_RIGHTS`), each owned from here on.
/// `Ok((0, _))` at end of stream; `WouldBlock` when a non-blocking socket has nothing yet.
pub fn recv_with_fds(sock: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
    let mut space = nix::cmsg_space!([RawFd; 4]);
    let mut iov = [std::io::IoSliceMut::new(buf)];
    let msg = recvmsg::<()>(
        sock.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .map_err(io::Error::from)?;
    let mut fds = Vec::new();
    for cmsg in msg.cmsgs().map_err(io::Error::from)? {
        if let ControlMessageOwned::ScmRights(raw) = cmsg {
            for fd in raw {
                // SAFETY: the kernel installed `fd` in this process for this message; nothing
                // else knows the number, so this is its only owner.
                fds.push(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
            }
        }
    }
    Ok((msg.bytes, fds))
}
