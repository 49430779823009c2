//! Starting the plugin (or the runner) the cheap way: `clone(CLONE_VM | CLONE_VFORK)`, the child
//! sharing the launcher's memory until its `execve`, as `posix_spawn` does. A `fork` copies the
//! launcher's page tables and the exec then tears the copy down again, both on the launch's
//! critical path; here neither happens, and the child still gets everything `spawn_with_fds`
//! gives one (`process::spawn_with_fds`, whose rules this keeps), which `posix_spawn` cannot:
//! its descriptors placed at exact numbers, every other descriptor closed at exec, the
//! parent-death signal armed (and the parent checked to be alive), a working directory, a process
//! group of its own, every signal disposition default and no signal blocked, and an environment
//! of exactly the variables given (none unless some are).
//!
//! The child runs on a stack of its own inside the launcher's memory while the launching thread
//! waits; it makes system calls only (no allocation, no lock, nothing that can panic), and all
//! signals stay blocked until every handler is reset, so no handler of the launcher can run in it.
//! A step that fails stores its errno where the launcher reads it once the child is gone.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};

/// What [`spawn`] runs.
#[derive(Debug)]
pub struct Exec<'a> {
    /// The program's path (`/proc/self/fd/N` in the launcher).
    pub program: &'a CStr,
    /// `argv`, `argv[0]` first.
    pub argv: &'a [CString],
    /// The child's working directory.
    pub dir: &'a CStr,
    /// Descriptors the child gets at exact numbers (above 2: 0–2 are its pipes).
    pub moves: &'a [(BorrowedFd<'a>, i32)],
    /// The child's whole environment, `NAME=VALUE` each (empty: none at all).
    pub env: &'a [CString],
    /// Start the child on another CPU than the caller's, when it may use one ([`Elsewhere`]).
    pub elsewhere: bool,
}

/// Where a child that must run beside its parent starts: a child executed here starts on its
/// parent's CPU and, on the machines measured (a two-CPU VM), keeps it — the parent, woken at the
/// exec, waited for the child's own first millisecond of work while the other CPU stayed idle. So
/// the child narrows its affinity to the other CPUs before its exec, and the parent gives it back
/// whole right after: the child then runs where it started, and every CPU stays allowed.
#[derive(Clone, Copy)]
struct Elsewhere {
    /// The caller's affinity, given back to the child after its exec.
    all: libc::cpu_set_t,
    /// It without the caller's current CPU, which the child takes before its exec.
    others: libc::cpu_set_t,
}

impl Elsewhere {
    /// `None` when the caller may run on one CPU only (or its affinity cannot be read).
    fn here() -> Option<Elsewhere> {
        // SAFETY: an all-zero cpu_set_t is a valid (empty) set.
        let mut all: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: the kernel writes at most `size` bytes into `all`, which is that large.
        if unsafe { libc::sched_getaffinity(0, size, &mut all) } != 0 {
            return None;
        }
        // SAFETY: sched_getcpu takes no arguments.
        let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).ok()?;
        let mut others = all;
        // SAFETY: `cpu` is below CPU_SETSIZE (the kernel's number of the CPU this thread is on).
        unsafe { libc::CPU_CLR(cpu, &mut others) };
        // SAFETY: CPU_COUNT reads the set only.
        (unsafe { libc::CPU_COUNT(&others) } > 0).then_some(Elsewhere { all, others })
    }
}

/// A child started by [`spawn`], which the caller is the parent of: its pid, the parent's ends of
/// its standard streams, and its status once waited for.
#[derive(Debug)]
pub struct Child {
    pid: libc::pid_t,
    status: Option<ExitStatus>,
    pub stdin: Option<File>,
    pub stdout: Option<File>,
    pub stderr: Option<File>,
}

impl Child {
    /// The child's pid (and process group id).
    pub fn id(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// Closes its stdin, waits for it to exit and reaps it; later calls return the same status.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        drop(self.stdin.take());
        let raw = wait_pid(self.pid)?;
        let status = ExitStatus::from_raw(raw);
        self.status = Some(status);
        Ok(status)
    }
}

/// Starts `e` with three pipes as its stdin, stdout and stderr (close-on-exec on the parent's
/// side), in a new process group, and returns once it has executed its program, or with the
/// errno of the step that failed (the child then gone and reaped).
pub fn spawn(e: &Exec<'_>) -> io::Result<Child> {
    let (stdin_r, stdin_w) = pipe()?;
    let (stdout_r, stdout_w) = pipe()?;
    let (stderr_r, stderr_w) = pipe()?;
    let mut moves = vec![
        (stdin_r.as_fd(), 0),
        (stdout_w.as_fd(), 1),
        (stderr_w.as_fd(), 2),
    ];
    moves.extend(e.moves.iter().copied());
    let placement = crate::process::Placement::lift(&moves)?;
    let mut argv: Vec<*const libc::c_char> = e.argv.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut envp: Vec<*const libc::c_char> = e.env.iter().map(|v| v.as_ptr()).collect();
    envp.push(std::ptr::null());
    let plan = Plan {
        program: e.program.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        dir: e.dir.as_ptr(),
        placed: &placement.plan,
        first_free: placement.first_free,
        parent: std::process::id() as libc::pid_t,
        cpus: None,
        failed: AtomicI32::new(0),
    };
    let elsewhere = e.elsewhere.then(Elsewhere::here).flatten();
    let plan = Plan {
        cpus: elsewhere.map(|c| c.others),
        ..plan
    };
    let pid = clone_vfork(&plan)?;
    if let Some(c) = elsewhere {
        // SAFETY: the kernel reads `size` bytes of `c.all`; `pid` is our child (or gone: ESRCH).
        let _ =
            unsafe { libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &c.all) };
    }
    let failed = plan.failed.load(Ordering::Acquire);
    // The child has its copies (or is gone): the lifted duplicates and the child's ends of the
    // pipes close here.
    drop(placement);
    if failed != 0 {
        let _ = wait_pid(pid);
        return Err(io::Error::from_raw_os_error(failed));
    }
    Ok(Child {
        pid,
        status: None,
        stdin: Some(File::from(stdin_w)),
        stdout: Some(File::from(stdout_r)),
        stderr: Some(File::from(stderr_r)),
    })
}

/// Everything the child needs, built before the clone (the child allocates nothing).
struct Plan<'a> {
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    dir: *const libc::c_char,
    placed: &'a [(RawFd, RawFd)],
    first_free: u32,
    parent: libc::pid_t,
    /// The CPUs the child starts on, when not its parent's ([`Elsewhere`]).
    cpus: Option<libc::cpu_set_t>,
    /// The errno of the step that failed, 0 while none has.
    failed: AtomicI32,
}

/// The child's stack: enough for a few system calls.
const CHILD_STACK: usize = 64 * 1024;

/// Runs [`child`] with `plan` in a `CLONE_VM | CLONE_VFORK` child, all signals blocked around
/// the clone (the child resets every handler before it unblocks them). Returns the child's pid
/// once it has executed its program or exited.
fn clone_vfork(plan: &Plan<'_>) -> io::Result<libc::pid_t> {
    let mut stack = vec![0u8; CHILD_STACK];
    let all = nix::sys::signal::SigSet::all();
    let mut old = nix::sys::signal::SigSet::empty();
    nix::sys::signal::pthread_sigmask(
        nix::sys::signal::SigmaskHow::SIG_SETMASK,
        Some(&all),
        Some(&mut old),
    )?;
    // The stack grows down from its end, which clone wants 16-byte aligned.
    let top = stack.as_mut_ptr().wrapping_add(CHILD_STACK);
    let top = top.wrapping_sub(top as usize % 16);
    // SAFETY: `child` runs on `stack`, which outlives the call: with CLONE_VFORK this thread is
    // suspended until the child has executed its program or exited, and `plan` (passed as the
    // argument) and everything it points to stay alive and unmoved until then. The child only
    // makes system calls and writes `plan.failed` (an atomic).
    let pid = unsafe {
        libc::clone(
            child,
            top.cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (plan as *const Plan<'_>).cast_mut().cast(),
        )
    };
    let cloned = if pid < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(pid)
    };
    nix::sys::signal::pthread_sigmask(nix::sys::signal::SigmaskHow::SIG_SETMASK, Some(&old), None)?;
    drop(stack);
    cloned
}

/// The child: signal dispositions default and none blocked, parent-death signal, descriptors
/// placed, the rest close-on-exec, working directory, process group, exec. Returns (and so
/// exits) only when a step failed, its errno stored in `plan.failed`.
extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Plan` `clone_vfork` passed, alive until this child execs or exits.
    let plan = unsafe { &*(arg as *const Plan<'_>) };
    match child_steps(plan) {
        Ok(()) => 0,
        Err(errno) => {
            plan.failed.store(errno.max(1), Ordering::Release);
            127
        }
    }
}

fn child_steps(plan: &Plan<'_>) -> Result<(), i32> {
    let errno = || {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    // Every handler and ignored signal back to the default while all are still blocked (a
    // handler of the launcher must not run in this child, which shares its memory), then no
    // signal blocked.
    crate::confine::default_signals().map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    crate::process::arm_and_place(plan.parent, plan.placed, plan.first_free)
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    // SAFETY: `dir` is a NUL-terminated string the parent keeps alive; setpgid takes integers.
    if unsafe { libc::chdir(plan.dir) } != 0 || unsafe { libc::setpgid(0, 0) } != 0 {
        return Err(errno());
    }
    if let Some(cpus) = &plan.cpus {
        // Only where the child starts: a failure changes nothing else.
        // SAFETY: the kernel reads `size` bytes of `cpus`, part of the plan the parent keeps alive.
        let _ = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), cpus) };
    }
    // SAFETY: `program`, `argv` and `envp` are NUL-terminated strings and NULL-terminated arrays
    // of them that the parent keeps alive; execve returns only on failure.
    unsafe { libc::execve(plan.program, plan.argv, plan.envp) };
    Err(errno())
}

/// A pipe, both ends close-on-exec.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from)
}

/// Waits for our child `pid` and reaps it: its raw wait status.
fn wait_pid(pid: libc::pid_t) -> io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes only `status`.
        if unsafe { libc::waitpid(pid, &mut status, 0) } == pid {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
