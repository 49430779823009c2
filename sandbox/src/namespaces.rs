//! The run's private view of the host. Every run gets new mount, PID, IPC, network, UTS and cgroup
//! namespaces (and, when not launched by root, the user namespace `identity` makes first), and
//! its stage — a private tmpfs — becomes the root of its view after `pivot_root`: no host path, no
//! host process, no host network interface, no host System V object exists for the plugin.
//!
//! A process enters a new PID namespace only through a fork, so a run is three processes:
//!
//! ```text
//! dot-launch ─ runner (the launcher's child, host namespaces: waits, then ends as the plugin did)
//!                └ init (pid 1 of the run: makes the private root, waits for the plugin)
//!                    └ plugin (pid 2: narrows itself, then executes the plugin)
//! ```
//!
//! The plugin is pid 2, not 1, so that signals reach it as they reach any process (the kernel
//! protects a namespace's init from signals it has no handler for, its own `kill` included). When
//! the plugin ends, init writes its wait status on a pipe and exits; the runner reads it and ends
//! the same way (the same exit code, or killed by the same signal), so the launcher sees the
//! plugin's own status. Each process has a parent-death signal (SIGKILL), and when init dies the
//! kernel kills everything left in its PID namespace: no member of a run outlives its runner.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};

/// The host name (and domain name) of every run's UTS namespace, instead of the host's.
pub const HOST_NAME: &std::ffi::CStr = c"dot";

/// The namespaces a run gets, as `/proc/self/ns` names them, for the report.
pub fn names(with_user: bool) -> Vec<String> {
    let mut v: Vec<String> = proto::probe::RUN_NAMESPACES
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    if with_user {
        v.push("user".to_owned());
    }
    v
}

/// Makes the mount, PID, IPC, network, UTS and cgroup namespaces (the caller is in its user
/// namespace already, or is root). The PID namespace is the one of the next child.
pub fn unshare_all() -> Result<(), (&'static str, io::Error)> {
    use nix::sched::{unshare, CloneFlags};
    unshare(
        CloneFlags::CLONE_NEWNS
            | CloneFlags::CLONE_NEWPID
            | CloneFlags::CLONE_NEWIPC
            | CloneFlags::CLONE_NEWNET
            | CloneFlags::CLONE_NEWUTS
            | CloneFlags::CLONE_NEWCGROUP,
    )
    .map_err(|e| {
        (
            "unshare(CLONE_NEWNS|CLONE_NEWPID|CLONE_NEWIPC|CLONE_NEWNET|CLONE_NEWUTS|CLONE_NEWCGROUP)",
            e.into(),
        )
    })
}

/// The pipe on which init hands the plugin's wait status to the runner.
pub struct StatusPipe {
    read: OwnedFd,
    write: OwnedFd,
}

impl StatusPipe {
    pub fn new() -> io::Result<StatusPipe> {
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        Ok(StatusPipe { read, write })
    }
}

/// Which process of the run this is after [`fork_init`].
pub enum Role {
    /// The runner: wait for init and end as the plugin did ([`mirror`]).
    Runner { init: u32, status: OwnedFd },
    /// Init, pid 1 of the run's PID namespace, holding the write end of the status pipe.
    Init { status: OwnedFd },
}

/// Forks init into the new PID namespace.
pub fn fork_init(pipe: StatusPipe) -> Result<Role, (&'static str, io::Error)> {
    match sys::namespace::fork_single_threaded().map_err(|e| ("fork of the run's init", e))? {
        sys::namespace::Forked::Parent { child } => {
            drop(pipe.write);
            Ok(Role::Runner {
                init: child,
                status: pipe.read,
            })
        }
        sys::namespace::Forked::Child => {
            drop(pipe.read);
            Ok(Role::Init { status: pipe.write })
        }
    }
}

/// The runner's side: every descriptor it holds besides `status` is closed by the caller (so the
/// launcher sees end-of-file on the plugin's pipes and report when the plugin's side closes them);
/// waits for init, reads the plugin's wait status and ends with it — the same exit code, or the
/// same signal (core dumps off). When init ended without one (it failed before the plugin ran, and
/// reported why), ends as init did.
pub fn mirror(init: u32, status: OwnedFd) -> ! {
    let mut raw = [0u8; 4];
    let got = File::from(status).read_exact(&mut raw).is_ok();
    let init_status = loop {
        match sys::namespace::wait_any() {
            Ok((pid, s)) if pid == init => break Some(s),
            Ok(_) => continue,
            Err(_) => break None,
        }
    };
    let status = if got {
        i32::from_ne_bytes(raw)
    } else {
        init_status.unwrap_or(1 << 8)
    };
    end_as(status)
}

/// Ends this process as a process with wait status `status` ended.
fn end_as(status: i32) -> ! {
    use nix::sys::wait::WaitStatus;
    let pid = nix::unistd::Pid::this();
    match WaitStatus::from_raw(pid, status) {
        Ok(WaitStatus::Exited(_, code)) => sys::namespace::exit_now(code),
        Ok(WaitStatus::Signaled(_, signal, _)) => {
            // No core dump of the runner, not even to a host's `core_pattern` pipe handler.
            let _ = nix::sys::prctl::set_dumpable(false);
            sys::signal::die_by(signal);
            sys::namespace::exit_now(128 + signal as i32)
        }
        _ => sys::namespace::exit_now(1),
    }
}

/// Init's first step: a parent-death signal, and a check that the runner is still there (its
/// pid is not visible from here; the status pipe's read end is, through the runner).
pub fn init_parent_death(status: &OwnedFd) -> io::Result<()> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    sys::confine::set_parent_death_kill()?;
    let mut fds = [PollFd::new(status.as_fd(), PollFlags::POLLOUT)];
    poll(&mut fds, PollTimeout::ZERO)?;
    let gone = fds[0]
        .revents()
        .is_some_and(|r| r.intersects(PollFlags::POLLERR | PollFlags::POLLHUP));
    if gone {
        return Err(io::Error::other("the runner is already gone"));
    }
    Ok(())
}

/// Init makes the run's root: mounts private, the host name the run's own, the stage's tmpfs
/// attached on the working directory; each runtime directory bound read-only at its own path in it
/// (with the host's top-level links into them, such as a merged `/usr`'s `/lib64 -> usr/lib64`),
/// and for a script a procfs of the run's PID namespace with `/dev/fd` (its interpreter reads it
/// through `/dev/fd/4`); then `pivot_root` onto it, the host's tree detached, `/` the working
/// directory.
pub fn private_root(
    stage: &OwnedFd,
    runtime: &[proto::RuntimeDir],
    script: bool,
) -> Result<(), (&'static str, io::Error)> {
    use sys::namespace as ns;
    ns::make_mounts_private().map_err(|e| ("making every mount private", e))?;
    ns::set_host_name(HOST_NAME).map_err(|e| ("setting the run's host name", e))?;
    ns::attach_mount(stage.as_fd(), c".").map_err(|e| ("attaching the stage", e))?;
    nix::unistd::fchdir(stage).map_err(|e| ("entering the stage", e.into()))?;
    for dir in runtime {
        bind_runtime(dir).map_err(|e| ("binding a runtime directory", e))?;
    }
    if !runtime.is_empty() {
        link_into_runtime(runtime).map_err(|e| ("linking into a runtime directory", e))?;
    }
    if script {
        script_proc().map_err(|e| ("mounting the run's /proc", e))?;
    }
    ns::pivot_root_here().map_err(|e| ("pivot_root onto the stage", e))?;
    ns::detach_old_root().map_err(|e| ("detaching the host's tree", e))?;
    nix::unistd::chdir("/").map_err(|e| ("entering the new root", e.into()))?;
    Ok(())
}

/// Makes `dir`'s path inside the stage (the working directory) and binds the host's `dir` there,
/// read-only.
fn bind_runtime(dir: &proto::RuntimeDir) -> io::Result<()> {
    let inside = dir.as_str().trim_start_matches('/');
    make_dirs(inside)?;
    let host = std::ffi::CString::new(dir.as_str()).map_err(io::Error::other)?;
    let tree = sys::namespace::read_only_bind(&host)?;
    let at = std::ffi::CString::new(inside).map_err(io::Error::other)?;
    sys::namespace::attach_mount(tree.as_fd(), &at)
}

/// `mkdir -p` relative to the working directory, each new directory 0755.
fn make_dirs(path: &str) -> io::Result<()> {
    let mut at = String::new();
    for part in path.split('/') {
        if !at.is_empty() {
            at.push('/');
        }
        at.push_str(part);
        match std::fs::create_dir(&at) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The host's top-level symbolic links (`/lib64`, `/bin`, … on a merged-`/usr` system) whose
/// target lies inside a runtime directory, made again with the same text in the stage: the
/// interpreter path a program names (`/lib64/ld-linux-x86-64.so.2`) then resolves as on the host.
fn link_into_runtime(runtime: &[proto::RuntimeDir]) -> io::Result<()> {
    for e in std::fs::read_dir("/")?.flatten() {
        let path = e.path();
        let Ok(text) = std::fs::read_link(&path) else {
            continue;
        };
        let Ok(real) = std::fs::canonicalize(&path) else {
            continue;
        };
        let name = e.file_name();
        if runtime.iter().any(|d| d.contains(&real)) && std::fs::symlink_metadata(&name).is_err() {
            std::os::unix::fs::symlink(&text, &name)?;
        }
    }
    Ok(())
}

/// A procfs of the run's own PID namespace on `proc` and `dev/fd -> /proc/self/fd`.
fn script_proc() -> io::Result<()> {
    make_dirs("proc")?;
    sys::namespace::mount_pid_proc(c"proc")?;
    make_dirs("dev")?;
    std::os::unix::fs::symlink("/proc/self/fd", "dev/fd")
}

/// Which process of the run this is after [`fork_plugin`].
pub enum Below {
    /// Init, with the plugin's pid (2).
    Init { plugin: u32 },
    /// The plugin, before it narrows itself and executes.
    Plugin,
}

/// Init forks the plugin.
pub fn fork_plugin() -> Result<Below, (&'static str, io::Error)> {
    match sys::namespace::fork_single_threaded().map_err(|e| ("fork of the plugin", e))? {
        sys::namespace::Forked::Parent { child } => Ok(Below::Init { plugin: child }),
        sys::namespace::Forked::Child => Ok(Below::Plugin),
    }
}

/// Init's last step (every other descriptor it held closed by the caller): wait for the plugin,
/// hand its wait status to the runner, exit. Anything else that ends here is reaped on the way
/// (nothing else can exist: the plugin cannot make processes).
pub fn init_wait(plugin: u32, status: OwnedFd) -> ! {
    let mut out = File::from(status);
    loop {
        match sys::namespace::wait_any() {
            Ok((pid, s)) if pid == plugin => {
                let _ = out.write_all(&s.to_ne_bytes());
                sys::namespace::exit_now(0)
            }
            Ok(_) => continue,
            Err(_) => sys::namespace::exit_now(1),
        }
    }
}

/// With `--denials-fd`: while the plugin runs, init takes the seccomp filter's listener from it
/// and answers every refusal (`crate::denials`), writing each to `out`; returns once the plugin
/// has ended (or could not hand the listener over), for [`init_wait`] to reap it.
pub fn init_answer_denials(plugin: u32, handshake: crate::denials::InitSide, mut out: File) {
    let Ok(pidfd) = sys::process::pidfd_open(plugin) else {
        return;
    };
    if let Some(listener) = handshake.take(&pidfd) {
        crate::denials::answer_until_exit(&listener, &pidfd, &mut out);
    }
}

/// The plugin's parent is init, pid 1 of the run (a parent-death signal set before this would
/// have been cleared by the identity change).
pub fn plugin_parent_is_init() -> bool {
    sys::confine::parent_pid() == 1
}

/// Closes descriptors 0, 1 and 2: the runner and init must not hold the plugin's pipes open.
pub fn close_standard_streams() {
    for fd in 0..3 {
        let _ = nix::unistd::close(fd);
    }
}
