//! The runner's private view of the host: new namespaces, a fork into the new PID namespace, and
//! the private root (the stage's tmpfs attached, `pivot_root` onto it, the host's tree detached).
//! One syscall per function, each converted at once to `io::Result`.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Which side of a [`fork`] this process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forked {
    /// The new process.
    Child,
    /// The caller, with the child's pid (as the caller's PID namespace sees it).
    Parent { child: u32 },
}

/// `fork()`, for a process that has exactly one thread (the runner never starts another), so the
/// child's copy of every lock and allocator is consistent and it may run ordinary code.
pub fn fork_single_threaded() -> io::Result<Forked> {
    // SAFETY: fork takes no arguments. The caller is single-threaded (documented above), so no
    // other thread holds a lock or is halfway through an allocation when memory is copied.
    let pid = check(unsafe { libc::fork() })?;
    Ok(match pid {
        0 => Forked::Child,
        p => Forked::Parent {
            child: p.unsigned_abs(),
        },
    })
}

/// Every mount of this (new) mount namespace private: nothing done here propagates to the host's,
/// and `pivot_root` accepts the tree.
pub fn make_mounts_private() -> io::Result<()> {
    // SAFETY: the strings are NUL-terminated literals; a NULL source, type and data are allowed
    // for a propagation change.
    check(unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    })
    .map(drop)
}

const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x0000_0004;

/// Attaches the detached mount `mount` (from `fsmount` or `open_tree`) on the directory `at`
/// (relative to the working directory).
pub fn attach_mount(mount: BorrowedFd<'_>, at: &CStr) -> io::Result<()> {
    // SAFETY: `mount` is an open descriptor, the empty path and `at` are NUL-terminated and alive
    // for the call; the flags are integers.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            mount.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            at.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `pivot_root(".", ".")`: the working directory (a mount point) becomes the root, and the old
/// root is stacked on it until [`detach_old_root`].
pub fn pivot_root_here() -> io::Result<()> {
    // SAFETY: both paths are NUL-terminated literals.
    let ret = unsafe { libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Detaches the old root stacked on `.` by [`pivot_root_here`], with every mount beneath it: no
/// host path is reachable afterwards.
pub fn detach_old_root() -> io::Result<()> {
    // SAFETY: the path is a NUL-terminated literal; the flag is an integer.
    check(unsafe { libc::umount2(c".".as_ptr(), libc::MNT_DETACH) }).map(drop)
}

/// Sets this UTS namespace's host and domain name (the new namespace starts with the host's).
pub fn set_host_name(name: &CStr) -> io::Result<()> {
    let bytes = name.to_bytes();
    // SAFETY: `name` points to `bytes.len()` readable bytes for the call.
    check(unsafe { libc::sethostname(name.as_ptr(), bytes.len()) })?;
    // SAFETY: as above.
    check(unsafe { libc::setdomainname(name.as_ptr(), bytes.len()) }).map(drop)
}

/// Waits for any child and reaps it: its pid and raw wait status.
pub fn wait_any() -> io::Result<(u32, i32)> {
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes only `status`.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid > 0 {
            return Ok((pid.unsigned_abs(), status));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Ends this process at once with `code`, running nothing of its own (no atexit handler, no
/// buffered output flushed): what a waiter that mirrors another process's status needs.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit takes an integer and does not return.
    unsafe { libc::_exit(code) }
}

const OPEN_TREE_CLONE: libc::c_uint = 1;
const OPEN_TREE_CLOEXEC: libc::c_uint = libc::O_CLOEXEC as libc::c_uint;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOUNT_ATTR_RDONLY: u64 = 0x0000_0001;
const MOUNT_ATTR_NOSUID: u64 = 0x0000_0002;
const MOUNT_ATTR_NODEV: u64 = 0x0000_0004;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// A detached copy of the host directory `path` and every mount beneath it (`open_tree` with
/// `OPEN_TREE_CLONE`), made read-only, `nosuid` and `nodev` throughout (`mount_setattr`), ready
/// for [`attach_mount`].
pub fn read_only_bind(path: &CStr) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: `path` is NUL-terminated and alive for the call; the flags are integers.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            path.as_ptr(),
            OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = i32::try_from(ret).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: the kernel just returned `fd` as a fresh descriptor that nothing else owns.
    let tree = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `tree` is open, the empty path is a NUL-terminated literal, `attr` is a valid
    // `struct mount_attr` of the size passed, read by the kernel only.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(tree)
}

/// Mounts a new procfs instance on `at` (relative to the working directory), read-only,
/// `nosuid,nodev,noexec`, showing only the processes of this PID namespace (`subset=pid`: no
/// `/proc/sys`, no kernel files). Read-only because it lies beneath the stage, whose Landlock rule
/// grants writing: writable, `/proc/self/mem` would let a plugin write into its own executable
/// pages past their protections.
pub fn mount_pid_proc(at: &CStr) -> io::Result<()> {
    // SAFETY: every string is NUL-terminated and alive for the call; the data is a string of
    // options, as procfs takes them.
    check(unsafe {
        libc::mount(
            c"proc".as_ptr(),
            at.as_ptr(),
            c"proc".as_ptr(),
            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            c"subset=pid".as_ptr().cast(),
        )
    })
    .map(drop)
}
