//! `dot-canary`: a plugin that tries one named escape per request and reports what happened.
//!
//! It reads the plugin request (one JSON line) on stdin, performs the escape named by the input
//! `probe` (one of `proto::canary::PROBES`, the one list of probes: `dot-sandbox probe --prove`
//! and the test suite run that list, and the dispatch below matches every probe of it), writes
//! `out/result.json` = `{"probe": NAME, "outcome": OUTCOME}` and prints the protocol response. OUTCOME is `ok` (the escape worked), `none` (nothing was found to use), or
//! `errno:NAME` (the kernel refused). A denial by signal kills it; the caller sees the signal.
//!
//! `dot-canary --proof NAME` is what the exec probes execute when an exec succeeds: it records
//! `ok` for NAME. `dot-canary --reexec` executes itself again at once, without arguments, with
//! every signal at its default but SIGPIPE ignored: what a Rust runner hands a plugin unless it
//! resets them (Rust ignores SIGPIPE at start, and an ignored signal stays ignored across
//! `execve`). The harness runs it unconfined to show the `signal-dispositions` probe detects it.
//!
//! The signal dispositions and mask this program was executed with are recorded before Rust's
//! runtime starts (a function in `.init_array`), since that runtime changes SIGPIPE's.
//!
//! This is the one crate besides `sys` with `unsafe`: its job is raw syscalls. Every block carries
//! a `// SAFETY:` comment; nix's safe wrappers are used where they exist.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

use nix::unistd::Pid;
use proto::canary::{CanaryResult, Probe};
use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};

/// Signals ignored (`SIG_IGN`) when this program was executed: bit `n - 1` for signal `n`.
static IGNORED_AT_EXEC: AtomicU64 = AtomicU64::new(0);
/// Signals blocked when this program was executed, likewise.
static BLOCKED_AT_EXEC: AtomicU64 = AtomicU64::new(0);

/// Runs before Rust's runtime (which sets SIGPIPE to `SIG_IGN`): C runtime start-up calls every
/// function in `.init_array` before `main`. Only raw syscalls, no allocation.
extern "C" fn record_signals_at_exec() {
    let mut ignored = 0u64;
    for sig in 1..=sys::confine::MAX_SIGNAL {
        if sys::confine::signal_ignored(sig).unwrap_or(false) {
            ignored |= 1 << (sig - 1);
        }
    }
    IGNORED_AT_EXEC.store(ignored, Ordering::SeqCst);
    BLOCKED_AT_EXEC.store(
        sys::confine::signal_mask().unwrap_or(u64::MAX),
        Ordering::SeqCst,
    );
}

// A pointer to a function taking and returning nothing, placed where the C runtime expects its
// start-up functions; the function only reads signal state and stores two integers.
#[used]
#[link_section = ".init_array"]
static RECORD_SIGNALS_AT_EXEC: extern "C" fn() = record_signals_at_exec;

const USAGE: &str = "\
Usage: dot-canary                 read one plugin request on stdin, try the escape named by input `probe`
       dot-canary --proof NAME    record `ok` for NAME (what an exec probe executes)
       dot-canary --reexec        execute itself again with SIGPIPE ignored
       dot-canary --version | -V | --help | -h

A test plugin that dot-sandbox probe --prove runs under the real policy; not a command for people.
See dot-canary(1).
";

fn main() -> ExitCode {
    // Every argument it takes is text (`--proof NAME`): one that is not UTF-8 is a usage error.
    let Ok(args) = std::env::args_os()
        .map(std::ffi::OsString::into_string)
        .collect::<Result<Vec<String>, _>>()
    else {
        let err = proto::ErrorObject::new(proto::Kind::Usage, "an argument is not valid UTF-8");
        let _ = writeln!(io::stderr(), "{}", err.to_line());
        return ExitCode::from(2);
    };
    if args.get(1).map(String::as_str) == Some("--proof") {
        let name = args.get(2).cloned().unwrap_or_default();
        return finish(&name, "ok");
    }
    if args.get(1).map(String::as_str) == Some("--reexec") {
        // Exactly what a Rust runner that resets nothing hands over, whatever this process
        // inherited: every signal at its default but SIGPIPE, which Rust's runtime ignores.
        use nix::sys::signal::{signal, SigHandler, Signal};
        let _ = sys::confine::default_signals();
        // SAFETY: ignoring a signal installs no handler code.
        let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigIgn) };
        let argv = cstrings(&["dot-canary"]);
        let env: [&CStr; 0] = [];
        let err = nix::unistd::execve(c"/proc/self/exe", &argv, &env);
        let _ = writeln!(io::stderr(), "canary: re-executing itself: {err:?}");
        return ExitCode::from(2);
    }
    match args.get(1).map(String::as_str) {
        None => {}
        Some("--help" | "-h") => {
            let _ = write!(io::stdout(), "{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some("--version" | "-V") => {
            let _ = writeln!(io::stdout(), "dot-canary {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Some(other) => {
            let err = proto::ErrorObject::new(
                proto::Kind::Usage,
                format!("unknown argument {other:?}; see dot-canary --help"),
            );
            let _ = writeln!(io::stderr(), "{}", err.to_line());
            return ExitCode::from(2);
        }
    }
    let mut line = String::new();
    if io::stdin().lock().take_line(&mut line).is_err() {
        return ExitCode::from(2);
    }
    let request: proto::protocol::Request = match serde_json::from_str(line.trim_end()) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(io::stderr(), "canary: bad request: {e}");
            return ExitCode::from(2);
        }
    };
    let inputs = request.inputs;
    let name = inputs.get("probe").cloned().unwrap_or_default();
    let probe = Probe::from_name(&name);
    let outcome = match probe {
        Some(p) => run(p, &inputs),
        None => format!("unknown-probe:{name}"),
    };
    let code = finish(&name, &outcome);
    if probe == Some(Probe::SigioSigkill) && outcome == "ok" {
        // The signal goes out when the reader drains the pipe: stay until it has.
        wait_until_stdout_drained();
    }
    code
}

trait TakeLine {
    fn take_line(&mut self, buf: &mut String) -> io::Result<usize>;
}

impl<R: BufRead> TakeLine for R {
    /// One line, at most 64 KiB (a pty delivers the request line by line, without EOF).
    fn take_line(&mut self, buf: &mut String) -> io::Result<usize> {
        io::Read::take(self, 64 * 1024).read_line(buf)
    }
}

fn finish(name: &str, outcome: &str) -> ExitCode {
    let _ = fs::create_dir("out");
    let body = serde_json::to_vec(&CanaryResult {
        probe: name.to_owned(),
        outcome: outcome.to_owned(),
    })
    .unwrap_or_default();
    if let Err(e) = fs::write("out/result.json", body) {
        let _ = writeln!(io::stderr(), "canary: writing out/result.json: {e}");
        return ExitCode::from(3);
    }
    let mut out = io::stdout().lock();
    let _ = writeln!(
        out,
        r#"{{"protocol":"1.0","status":"ok","outputs":["result.json"]}}"#
    );
    let _ = out.flush();
    ExitCode::SUCCESS
}

/// `ok`, or `errno:NAME`.
fn res<T>(r: io::Result<T>) -> String {
    match r {
        Ok(_) => "ok".to_owned(),
        Err(e) => errno_name(e.raw_os_error().unwrap_or(0)),
    }
}

fn errno_name(n: i32) -> String {
    format!("errno:{:?}", nix::errno::Errno::from_raw(n))
}

fn nix_res<T>(r: nix::Result<T>) -> String {
    res(r.map_err(io::Error::from))
}

/// A raw syscall's return value as `io::Result`.
fn sys_res(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn ppid() -> Pid {
    nix::unistd::getppid()
}

/// The file outside the stage the harness set up (input `outside`, an absolute path; its directory
/// is writable by everyone, so only the confinement stands in the way).
fn victim(inputs: &BTreeMap<String, String>) -> std::path::PathBuf {
    inputs
        .get("outside")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "../victim".into())
}

/// `name` beside the victim, outside the stage.
fn outside(inputs: &BTreeMap<String, String>, name: &str) -> std::path::PathBuf {
    victim(inputs).with_file_name(name)
}

fn input_u64(inputs: &BTreeMap<String, String>, key: &str) -> u64 {
    inputs.get(key).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Performs `probe` and returns its outcome. One arm per probe of `proto::canary`: the match is
/// exhaustive, so the list and what the canary does cannot drift apart.
fn run(probe: Probe, inputs: &BTreeMap<String, String>) -> String {
    let name = probe.name();
    match probe {
        Probe::ReadEtcPasswd => res(fs::read("/etc/passwd")),
        Probe::ReadProcSelfStatus => res(fs::read("/proc/self/status")),
        Probe::ReadParentEnviron => res(fs::read(format!("/proc/{}/environ", ppid()))),
        Probe::CreateDevShm => res(create_dev_shm()),
        Probe::WriteProcSelfMem => res(OpenOptions::new().write(true).open("/proc/self/mem")),
        Probe::OPathOpenat => res(o_path_openat()),
        Probe::WriteOutside => res(OpenOptions::new().write(true).open(victim(inputs))),
        Probe::CreateOutside => res(OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(outside(inputs, "created"))),
        Probe::RenameOutside => res(fs::rename(
            victim(inputs),
            outside(inputs, "victim-renamed"),
        )),
        Probe::UnlinkOutside => res(fs::remove_file(victim(inputs))),
        Probe::LinkOutside => res(fs::hard_link(victim(inputs), outside(inputs, "linked"))),
        Probe::TruncateOutside => nix_res(nix::unistd::truncate(&victim(inputs), 0)),
        Probe::SymlinkInStage => res(std::os::unix::fs::symlink("/etc/passwd", "sym")),
        Probe::MkfifoInStage => nix_res(nix::unistd::mkfifo(
            "fifo",
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )),
        Probe::RenameAcrossStageDirs => res(fs::create_dir_all("sub")
            .and_then(|()| fs::write("sub/a", b"a"))
            .and_then(|()| fs::rename("sub/a", "moved"))),
        Probe::WriteOwnBinary => res(OpenOptions::new().write(true).open("/proc/self/exe")),
        Probe::TruncateOwnBinary => nix_res(nix::unistd::truncate("/proc/self/exe", 0)),
        Probe::StatHostPath => res(fs::metadata("/etc/shadow")),
        Probe::ListProc => res(fs::read_dir("/proc")),
        Probe::SysClassNet => res(fs::read_dir("/sys/class/net")),
        Probe::OtherPids => other_pids(),
        Probe::HostName => host_name(),
        Probe::GetpgidInit => res(sys_res(
            // SAFETY: integer argument only.
            unsafe { libc::syscall(libc::SYS_getpgid, 1) },
        )),
        Probe::GetpriorityUser => res(sys_res(
            // SAFETY: integer arguments only: every process of its own uid.
            unsafe { libc::syscall(libc::SYS_getpriority, libc::PRIO_USER, 0) },
        )),
        Probe::IoprioGetUser => res(sys_res(
            // SAFETY: integer arguments only (IOPRIO_WHO_USER = 3, its own uid).
            unsafe { libc::syscall(libc::SYS_ioprio_get, 3, 0) },
        )),
        Probe::Sysinfo => {
            // SAFETY: an all-zero sysinfo is a valid value of the plain C struct.
            let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
            // SAFETY: sysinfo writes only `info`.
            res(sys_res(unsafe {
                libc::syscall(libc::SYS_sysinfo, &mut info)
            }))
        }
        Probe::LandlockCreateRuleset => res(sys_res(
            // SAFETY: no ruleset attribute (NULL, 0) with the version flag: the ABI is asked.
            unsafe {
                libc::syscall(
                    libc::SYS_landlock_create_ruleset,
                    std::ptr::null::<libc::c_void>(),
                    0,
                    1,
                )
            },
        )),
        Probe::SeccompSyscall => {
            let mut action = libc::SECCOMP_RET_LOG;
            // SAFETY: SECCOMP_GET_ACTION_AVAIL reads the u32 `action` only.
            res(sys_res(unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_GET_ACTION_AVAIL,
                    0,
                    &mut action as *mut u32,
                )
            }))
        }
        Probe::PrctlSetSeccomp => res(sys_res(
            // SAFETY: a NULL program: the kernel refuses it (EFAULT) when the call gets that far.
            unsafe {
                libc::syscall(
                    libc::SYS_prctl,
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    std::ptr::null::<libc::c_void>(),
                )
            },
        )),
        Probe::SetMempolicy => res(sys_res(
            // SAFETY: MPOL_DEFAULT with no node mask (NULL, 0).
            unsafe {
                libc::syscall(
                    libc::SYS_set_mempolicy,
                    0,
                    std::ptr::null::<libc::c_ulong>(),
                    0,
                )
            },
        )),
        Probe::TimerCreate => timer_create(),
        Probe::UnassignedSyscall => res(sys_res(
            // SAFETY: a number no kernel assigned (x86-64 leaves 336-423 free): nothing runs.
            unsafe { libc::syscall(400) },
        )),
        Probe::FsetpipeSz => fsetpipe_sz(),
        Probe::Chmod => res(stage_file().and_then(|()| {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions("f", fs::Permissions::from_mode(0o777))
        })),
        Probe::Chown => {
            res(stage_file().and_then(|()| std::os::unix::fs::chown("f", Some(1), Some(1))))
        }
        Probe::Utimensat => res(stage_file().and_then(|()| {
            File::options()
                .write(true)
                .open("f")?
                .set_modified(std::time::UNIX_EPOCH)
        })),
        Probe::Setxattr => res(stage_file().and_then(|()| setxattr(c"f", c"user.dot", b"1"))),
        Probe::ExecBinSh => exec_bin_sh(name),
        Probe::ExecStageFile => exec_stage_file(name),
        Probe::ExecProcSelfExe => exec_self(name),
        Probe::Execveat => execveat_self(name),
        Probe::MemfdExec => memfd_exec(name),
        Probe::SocketInet => res(socket(libc::AF_INET, libc::SOCK_STREAM, 0)),
        Probe::SocketInet6 => res(socket(libc::AF_INET6, libc::SOCK_STREAM, 0)),
        Probe::SocketUnix => res(socket(libc::AF_UNIX, libc::SOCK_STREAM, 0)),
        Probe::SocketNetlink => res(socket(libc::AF_NETLINK, libc::SOCK_RAW, 0)),
        Probe::SocketPacket => res(socket(
            libc::AF_PACKET,
            libc::SOCK_RAW,
            i32::from((libc::ETH_P_ALL as u16).to_be()),
        )),
        Probe::SocketMptcp => res(socket(
            libc::AF_INET,
            libc::SOCK_STREAM,
            libc::IPPROTO_MPTCP,
        )),
        Probe::Socketpair => res(std::os::unix::net::UnixStream::pair()),
        Probe::ConnectTcpLoopback => {
            let port = input_u64(inputs, "port") as u16;
            res(std::net::TcpStream::connect(("127.0.0.1", port)))
        }
        Probe::ConnectAbstractUnix => {
            use std::os::linux::net::SocketAddrExt;
            let name = inputs.get("abstract").cloned().unwrap_or_default();
            res(
                std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
                    .and_then(|a| std::os::unix::net::UnixStream::connect_addr(&a)),
            )
        }
        Probe::SysvShm => res(sysv_shm()),
        Probe::SysvSem => res(sysv_sem()),
        Probe::SysvMsg => res(sysv_msg()),
        Probe::PosixMq => res(posix_mq()),
        Probe::UnshareUser => nix_res(nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWUSER)),
        Probe::UnshareMount => nix_res(nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)),
        Probe::UnshareNet => nix_res(nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)),
        Probe::Setns => setns(),
        Probe::CloneNewuser => res(clone_process(
            libc::CLONE_NEWUSER as u64 | libc::SIGCHLD as u64,
        )),
        Probe::CloneThreadNewuser => res(clone_thread_newuser()),
        Probe::CloneThreadOwnFiles => res(clone_thread_own_files()),
        Probe::CloseRangeUnshare => res(close_range_unshare()),
        Probe::CloneProcess => res(clone_process(libc::SIGCHLD as u64)),
        Probe::Fork => res(fork()),
        Probe::Vfork => res(vfork()),
        Probe::Clone3 => res(clone3()),
        Probe::Setsid => nix_res(nix::unistd::setsid()),
        Probe::Setpgid => nix_res(nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0))),
        Probe::KillParent => nix_res(nix::sys::signal::kill(ppid(), None)),
        Probe::KillAll => nix_res(nix::sys::signal::kill(Pid::from_raw(-1), None)),
        Probe::KillGroup => nix_res(nix::sys::signal::kill(Pid::from_raw(0), None)),
        Probe::KillInit => nix_res(nix::sys::signal::kill(Pid::from_raw(1), None)),
        Probe::TgkillParent => res(tgkill(ppid().as_raw(), ppid().as_raw())),
        Probe::TkillParent => res(tkill(ppid().as_raw())),
        Probe::SigqueueParent => res(sigqueue(ppid().as_raw())),
        Probe::PidfdOpenParent => res(pidfd_open(ppid().as_raw())),
        Probe::PtraceAttachParent => nix_res(nix::sys::ptrace::seize(
            ppid(),
            nix::sys::ptrace::Options::empty(),
        )),
        Probe::PtraceTraceme => nix_res(nix::sys::ptrace::traceme()),
        Probe::ProcessVmReadvParent => res(process_vm_readv_parent()),
        Probe::ProcessVmWritevSelf => res(process_vm_writev_self()),
        Probe::PidfdGetfdParent => res(pidfd_getfd_parent()),
        Probe::PidfdSendSignalParent => res(pidfd_send_signal_parent()),
        Probe::KcmpParent => res(kcmp_parent()),
        Probe::CpuClockParent => res(cpu_clock_parent()),
        Probe::PrlimitParent => res(prlimit_read(ppid().as_raw())),
        Probe::SetpriorityParent => res(setpriority_parent()),
        Probe::IoprioSetParent => res(ioprio_set_parent()),
        Probe::SchedSetaffinityParent => res(sched_setaffinity_parent()),
        Probe::Mount => mount(),
        Probe::Chroot => nix_res(nix::unistd::chroot(".")),
        Probe::Fsopen => res(owned(
            // SAFETY: the name is NUL-terminated and static; the descriptor is owned at once.
            unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), 1u32) }, // FSOPEN_CLOEXEC
        )),
        Probe::MmapExec => res(mmap(4096, libc::PROT_READ | libc::PROT_EXEC, 0).map(unmap(4096))),
        Probe::MmapExecStageFile => res(map_stage_file(libc::PROT_READ | libc::PROT_EXEC)),
        Probe::MmapWxStageFile => res(map_stage_file(
            libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
        )),
        Probe::MprotectExec => res(mprotect_exec(false)),
        Probe::PkeyMprotectExec => res(mprotect_exec(true)),
        Probe::PersonalityReadImpliesExec => res(personality(0x0040_0000)),
        Probe::IoUringSetup => res(io_uring_setup()),
        Probe::Bpf => res(bpf_map_create()),
        Probe::Keyctl => res(keyctl_session()),
        Probe::PerfEventOpen => res(perf_event_open()),
        Probe::Userfaultfd => res(userfaultfd()),
        Probe::FanotifyInit => res(owned(
            // SAFETY: integer arguments only (FAN_CLOEXEC | FAN_CLASS_NOTIF, O_RDONLY).
            unsafe { libc::syscall(libc::SYS_fanotify_init, 1u32, libc::O_RDONLY) },
        )),
        Probe::NameToHandleAt => res(stage_file().and_then(|()| name_to_handle())),
        Probe::ModifyLdt => res(modify_ldt_read()),
        Probe::Syslog => res(sys_res(
            // SAFETY: SYSLOG_ACTION_SIZE_BUFFER (10) reads no buffer.
            unsafe { libc::syscall(libc::SYS_syslog, 10, std::ptr::null_mut::<u8>(), 0) },
        )),
        // SAFETY: sync takes no argument.
        Probe::Sync => res(sys_res(unsafe { libc::syscall(libc::SYS_sync) })),
        Probe::DevUserfaultfd => res(File::open("/dev/userfaultfd")),
        Probe::AioSetup => res(aio_setup()),
        Probe::InotifyInit => res(owned(
            // SAFETY: integer argument only; the descriptor is owned at once.
            unsafe { libc::inotify_init1(libc::IN_CLOEXEC) } as libc::c_long,
        )),
        Probe::Int80 => res(int80_getpid()),
        Probe::X32 => res(x32_getpid()),
        Probe::MmapHugetlb => res(mmap(
            2 << 20,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_HUGETLB,
        )
        .map(unmap(2 << 20))),
        Probe::MadviseMergeable => res(madvise_mergeable()),
        Probe::PrctlMemoryMerge => res(prctl_memory_merge()),
        Probe::PrctlPdeathsig => res(prctl_pdeathsig_zero()),
        Probe::FsetownParent => res(set_owner(1, ppid().as_raw())),
        Probe::FsetownInit => res(set_owner(1, 1)),
        Probe::FsetownExParent => res(set_owner_ex(1, ppid().as_raw())),
        Probe::Fsetsig => res(fcntl_int(1, F_SETSIG, libc::SIGKILL)),
        Probe::OAsync => res(o_async(1)),
        Probe::Fioasync => res(fioasync(1)),
        Probe::Fsetlease => res(lease()),
        Probe::Flock => res(flock_stage_file()),
        Probe::Fnotify => res(dnotify()),
        Probe::Fiosetown => res(socket_owner(FIOSETOWN)),
        Probe::Siocspgrp => res(socket_owner(SIOCSPGRP)),
        Probe::Tiocsctty => res(tiocsctty()),
        Probe::Tiocspgrp => res(tiocspgrp()),
        Probe::Tiocsig => res(tiocsig()),
        Probe::SigioSigkill => res(sigio_sigkill(inputs.get("victim").map(String::as_str))),
        Probe::FsIocSetflags => res(stage_file().and_then(|()| setflags())),
        Probe::FsIocFssetxattr => res(stage_file().and_then(|()| fssetxattr())),
        Probe::SignalDispositions => signal_dispositions(),
        Probe::Argv0 => argv0(),
        Probe::WriteExecData => res(write_exec_data()),
        Probe::Tiocsti => res(tiocsti(libc::TIOCSTI)),
        Probe::TiocstiHighBits => res(tiocsti(libc::TIOCSTI | (1 << 32))),
        Probe::Tiocsetd => res(tiocsetd()),
        Probe::SetrlimitRaiseHard => res(raise_hard_nofile()),
        Probe::Capabilities => capabilities(),
        Probe::SetuidSelf => res(sys_res(
            // SAFETY: integer argument only: the uid it already has.
            unsafe { libc::syscall(libc::SYS_setuid, libc::getuid()) },
        )),
        Probe::Setgroups => res(sys_res(
            // SAFETY: an empty list: the pointer is not read.
            unsafe { libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()) },
        )),
        Probe::InheritedFd => inherited_fd(),
        Probe::Nofile => res(open_many(input_u64(inputs, "nofile"))),
        Probe::Fsize => res(write_past(input_u64(inputs, "fsize"))),
        Probe::AddressSpace => {
            let len = input_u64(inputs, "as") as usize + 1;
            let prot = libc::PROT_READ | libc::PROT_WRITE;
            res(mmap(len, prot, libc::MAP_NORESERVE).map(unmap(len)))
        }
        Probe::Cpu => spin(input_u64(inputs, "cpu") + 1),
        Probe::WriteInStage => res(fs::write("out/written.txt", b"written\n")),
        Probe::RenameInStage => res(fs::write("a", b"a").and_then(|()| fs::rename("a", "b"))),
        Probe::Threads => res(threads()),
        Probe::KillSelf => nix_res(nix::sys::signal::kill(nix::unistd::getpid(), None)),
        Probe::TgkillOwnThread => res(tgkill_own_thread()),
    }
}

fn stage_file() -> io::Result<()> {
    fs::write("f", b"f")
}

fn setxattr(path: &CStr, name: &CStr, value: &[u8]) -> io::Result<()> {
    // SAFETY: path and name are NUL-terminated; value is a live slice of the given length.
    let ret = unsafe {
        libc::setxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    sys_res(ret as libc::c_long).map(drop)
}

/// The shell commands that stand in for the canary when an exec of `/bin/sh` succeeds.
fn proof_script(name: &str) -> String {
    format!(
        "printf '{{\"probe\":\"{name}\",\"outcome\":\"ok\"}}' > out/result.json && \
         printf '{{\"protocol\":\"1.0\",\"status\":\"ok\",\"outputs\":[\"result.json\"]}}\\n'"
    )
}

fn cstrings(v: &[&str]) -> Vec<CString> {
    v.iter().filter_map(|s| CString::new(*s).ok()).collect()
}

fn exec_bin_sh(name: &str) -> String {
    let script = proof_script(name);
    let argv = cstrings(&["sh", "-c", &script]);
    let env: [&CStr; 0] = [];
    nix_res(nix::unistd::execve(c"/bin/sh", &argv, &env))
}

fn exec_stage_file(name: &str) -> String {
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open("run.sh")
        .and_then(|mut f| write!(f, "#!/bin/sh\n{}\n", proof_script(name)));
    if let Err(e) = written {
        return res::<()>(Err(e));
    }
    let argv = cstrings(&["run.sh"]);
    let env: [&CStr; 0] = [];
    nix_res(nix::unistd::execve(c"./run.sh", &argv, &env))
}

fn exec_self(name: &str) -> String {
    let argv = cstrings(&["dot-canary", "--proof", name]);
    let env: [&CStr; 0] = [];
    nix_res(nix::unistd::execve(c"/proc/self/exe", &argv, &env))
}

fn raw_execveat(dirfd: i32, path: &CStr, argv: &[CString], flags: i32) -> io::Result<()> {
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    // SAFETY: path and the argv strings are NUL-terminated and alive; both pointer arrays are
    // NULL-terminated and alive for the call; on success it does not return.
    sys_res(unsafe {
        libc::syscall(
            libc::SYS_execveat,
            dirfd,
            path.as_ptr(),
            ptrs.as_ptr(),
            envp.as_ptr(),
            flags,
        )
    })
    .map(drop)
}

fn execveat_self(name: &str) -> String {
    let argv = cstrings(&["dot-canary", "--proof", name]);
    res(raw_execveat(libc::AT_FDCWD, c"/proc/self/exe", &argv, 0))
}

fn memfd_exec(name: &str) -> String {
    let fd = match nix::sys::memfd::memfd_create(c"canary", nix::sys::memfd::MFdFlags::MFD_CLOEXEC)
    {
        Ok(fd) => fd,
        Err(e) => return nix_res::<()>(Err(e)),
    };
    let copied =
        fs::read("/proc/self/exe").and_then(|bytes| File::from(fd.try_clone()?).write_all(&bytes));
    if let Err(e) = copied {
        return res::<()>(Err(e));
    }
    let argv = cstrings(&["dot-canary", "--proof", name]);
    res(raw_execveat(
        fd.as_raw_fd(),
        c"",
        &argv,
        libc::AT_EMPTY_PATH,
    ))
}

fn owned(ret: libc::c_long) -> io::Result<OwnedFd> {
    let fd = sys_res(ret)?;
    // SAFETY: the kernel just returned `fd` as a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn socket(domain: i32, ty: i32, proto: i32) -> io::Result<OwnedFd> {
    // SAFETY: socket takes only integer arguments.
    owned(unsafe { libc::socket(domain, ty | libc::SOCK_CLOEXEC, proto) } as libc::c_long)
}

fn sysv_shm() -> io::Result<()> {
    // SAFETY: shmget takes only integer arguments.
    let id = sys_res(
        unsafe { libc::shmget(libc::IPC_PRIVATE, 4096, libc::IPC_CREAT | 0o600) } as libc::c_long,
    )?;
    // SAFETY: IPC_RMID on the segment just created; the buffer argument is unused (NULL).
    unsafe { libc::shmctl(id as i32, libc::IPC_RMID, std::ptr::null_mut()) };
    Ok(())
}

/// A System V semaphore set of its own (removed at once): the host's IPC namespace.
fn sysv_sem() -> io::Result<()> {
    // SAFETY: semget takes only integer arguments.
    let id = sys_res(
        unsafe { libc::semget(libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600) } as libc::c_long,
    )?;
    // SAFETY: IPC_RMID on the set just created takes no further argument.
    unsafe { libc::semctl(id as i32, 0, libc::IPC_RMID) };
    Ok(())
}

/// A System V message queue of its own (removed at once).
fn sysv_msg() -> io::Result<()> {
    // SAFETY: msgget takes only integer arguments.
    let id = sys_res(
        unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600) } as libc::c_long,
    )?;
    // SAFETY: IPC_RMID on the queue just created; the buffer argument is unused (NULL).
    unsafe { libc::msgctl(id as i32, libc::IPC_RMID, std::ptr::null_mut()) };
    Ok(())
}

/// A POSIX message queue with a name of its own (unlinked at once). The raw call takes the name
/// without the leading slash the C library adds.
fn posix_mq() -> io::Result<()> {
    let name =
        CString::new(format!("dot-canary-{}", std::process::id())).map_err(io::Error::other)?;
    // SAFETY: name is NUL-terminated and alive; a NULL attribute pointer asks for the defaults.
    let fd = owned(unsafe {
        libc::syscall(
            libc::SYS_mq_open,
            name.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_CLOEXEC,
            0o600,
            std::ptr::null::<libc::c_void>(),
        )
    })?;
    drop(fd);
    // SAFETY: name is NUL-terminated and alive.
    unsafe { libc::syscall(libc::SYS_mq_unlink, name.as_ptr()) };
    Ok(())
}

/// A file of its own on `/dev/shm` (removed at once): memory outside the stage's size.
fn create_dev_shm() -> io::Result<()> {
    let path = format!("/dev/shm/dot-canary-{}", std::process::id());
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    fs::remove_file(&path)
}

fn setns() -> String {
    use nix::sched::CloneFlags;
    // Confined, /proc is out of reach: stdin stands in for a namespace descriptor, so the call
    // itself is still made.
    match File::open("/proc/self/ns/net") {
        Ok(ns) => nix_res(nix::sched::setns(&ns, CloneFlags::CLONE_NEWNET)),
        Err(_) => nix_res(nix::sched::setns(io::stdin(), CloneFlags::CLONE_NEWNET)),
    }
}

/// Waits for a child created by one of the process probes.
fn reap(pid: libc::c_long) -> io::Result<()> {
    nix::sys::wait::waitpid(Pid::from_raw(pid as i32), None)
        .map(drop)
        .map_err(io::Error::from)
}

fn child_exit() -> ! {
    // SAFETY: _exit ends the child at once, running nothing of the parent's state.
    unsafe { libc::_exit(0) }
}

fn clone_process(flags: u64) -> io::Result<()> {
    // SAFETY: clone without CLONE_VM and a NULL stack behaves like fork: the child gets a copy of
    // this address space and only calls _exit.
    let pid =
        sys_res(unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) })?;
    if pid == 0 {
        child_exit();
    }
    reap(pid)
}

fn clone_thread_newuser() -> io::Result<()> {
    let flags =
        (libc::CLONE_NEWUSER | libc::CLONE_THREAD | libc::CLONE_SIGHAND | libc::CLONE_VM) as u64;
    // SAFETY: the kernel refuses CLONE_NEWUSER together with CLONE_THREAD (EINVAL) and the filter
    // refuses it first, so no thread sharing this stack is ever created. Should one be, it only
    // calls _exit.
    let pid =
        sys_res(unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) })?;
    if pid == 0 {
        child_exit();
    }
    Ok(())
}

extern "C" fn own_files_thread(_: *mut libc::c_void) -> libc::c_int {
    // SAFETY: ends this thread only (not the group), touching nothing of the process's state.
    unsafe { libc::syscall(libc::SYS_exit, 0) };
    0
}

/// A thread (same thread group and memory) without `CLONE_FILES`: it gets a copy of the
/// descriptor table, a table the NOFILE limit bounds separately.
fn clone_thread_own_files() -> io::Result<()> {
    let mut stack = vec![0u8; 64 * 1024];
    // SAFETY: the top of a live, 16-byte aligned buffer; the stack grows down from it.
    let top = unsafe { stack.as_mut_ptr().add(stack.len()) };
    let top = (top as usize & !15) as *mut libc::c_void;
    let tid = std::sync::atomic::AtomicI32::new(1);
    let flags = libc::CLONE_VM
        | libc::CLONE_FS
        | libc::CLONE_SIGHAND
        | libc::CLONE_THREAD
        | libc::CLONE_SYSVSEM
        | libc::CLONE_CHILD_CLEARTID;
    // SAFETY: the thread runs `own_files_thread` on `stack`, which only makes the exit syscall;
    // the kernel clears `tid` (alive until the thread is gone, waited for below) when it exits.
    let ret = unsafe {
        libc::clone(
            own_files_thread,
            top,
            flags,
            std::ptr::null_mut(),
            std::ptr::null_mut::<libc::pid_t>(),
            std::ptr::null_mut::<libc::c_void>(),
            tid.as_ptr(),
        )
    };
    sys_res(ret as libc::c_long)?;
    // The stack stays alive until the kernel has cleared the word at the thread's exit.
    while tid.load(Ordering::SeqCst) != 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    drop(stack);
    Ok(())
}

fn fork() -> io::Result<()> {
    // SAFETY: the child only calls _exit (async-signal-safe).
    match unsafe { nix::unistd::fork() }.map_err(io::Error::from)? {
        nix::unistd::ForkResult::Child => child_exit(),
        nix::unistd::ForkResult::Parent { child } => reap(child.as_raw() as libc::c_long),
    }
}

extern "C" fn vfork_child(_: *mut libc::c_void) -> libc::c_int {
    child_exit()
}

/// vfork semantics (shared memory, parent suspended until the child exits) through
/// `clone(CLONE_VM|CLONE_VFORK)` on a stack of its own: the `vfork` syscall itself cannot be made
/// safely from Rust, and the filter refuses both (the policy's unit tests cover `vfork` by number).
fn vfork() -> io::Result<()> {
    let mut stack = vec![0u8; 64 * 1024];
    // SAFETY: the top of a live, 16-byte aligned buffer; the stack grows down from it.
    let top = unsafe { stack.as_mut_ptr().add(stack.len()) };
    let top = (top as usize & !15) as *mut libc::c_void;
    let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
    // SAFETY: the child runs `vfork_child` on `stack` (alive until the parent resumes, which
    // CLONE_VFORK makes wait for the child's exit) and only calls _exit.
    let pid = unsafe { libc::clone(vfork_child, top, flags, std::ptr::null_mut()) };
    sys_res(pid as libc::c_long).and_then(reap)
}

fn clone3() -> io::Result<()> {
    // struct clone_args: flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls.
    let mut args = [0u64; 8];
    args[4] = libc::SIGCHLD as u64;
    // SAFETY: the kernel reads `args` (64 bytes, alive); with no CLONE_VM the child gets a copy of
    // this address space and only calls _exit.
    let pid = sys_res(unsafe {
        libc::syscall(
            libc::SYS_clone3,
            args.as_ptr(),
            std::mem::size_of_val(&args),
        )
    })?;
    if pid == 0 {
        child_exit();
    }
    reap(pid)
}

fn tgkill(tgid: i32, tid: i32) -> io::Result<()> {
    // SAFETY: integer arguments only; signal 0 checks permission and delivers nothing.
    sys_res(unsafe { libc::syscall(libc::SYS_tgkill, tgid, tid, 0) }).map(drop)
}

fn tkill(tid: i32) -> io::Result<()> {
    // SAFETY: integer arguments only; signal 0 checks permission and delivers nothing.
    sys_res(unsafe { libc::syscall(libc::SYS_tkill, tid, 0) }).map(drop)
}

fn sigqueue(pid: i32) -> io::Result<()> {
    // A siginfo with si_code = SI_QUEUE (-1), as sigqueue(3) sends it.
    let mut info = [0i32; 32];
    info[2] = -1;
    // SAFETY: the kernel reads 128 bytes of siginfo from `info`, alive for the call; signal 0
    // checks permission and delivers nothing.
    sys_res(unsafe { libc::syscall(libc::SYS_rt_sigqueueinfo, pid, 0, info.as_ptr()) }).map(drop)
}

fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: integer arguments only.
    owned(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) })
}

fn process_vm_readv_parent() -> io::Result<usize> {
    use nix::sys::uio::RemoteIoVec;
    let base = fs::read_to_string(format!("/proc/{}/maps", ppid()))
        .ok()
        .and_then(|m| {
            let first = m.lines().next()?.split('-').next()?.to_owned();
            usize::from_str_radix(&first, 16).ok()
        })
        .unwrap_or(0x1000);
    let mut buf = [0u8; 8];
    nix::sys::uio::process_vm_readv(
        ppid(),
        &mut [io::IoSliceMut::new(&mut buf)],
        &[RemoteIoVec { base, len: 8 }],
    )
    .map_err(io::Error::from)
}

/// Writes 8 bytes into its own memory through `process_vm_writev`.
fn process_vm_writev_self() -> io::Result<usize> {
    use nix::sys::uio::RemoteIoVec;
    let target = [0u8; 8];
    let remote = RemoteIoVec {
        base: target.as_ptr() as usize,
        len: target.len(),
    };
    let n = nix::sys::uio::process_vm_writev(
        nix::unistd::getpid(),
        &[io::IoSlice::new(b"written!")],
        &[remote],
    )
    .map_err(io::Error::from)?;
    std::hint::black_box(&target);
    Ok(n)
}

/// A pidfd of the parent, or none where `pidfd_open` is refused: then standard input stands in
/// for one, so the call under test is still made (a pipe is not a pidfd: the kernel would say
/// `EBADF`, the filter says `EPERM` first).
fn parent_pidfd() -> Option<OwnedFd> {
    pidfd_open(ppid().as_raw()).ok()
}

/// Takes a duplicate of the parent's standard input.
fn pidfd_getfd_parent() -> io::Result<OwnedFd> {
    let pidfd = parent_pidfd();
    let raw = pidfd.as_ref().map_or(0, AsRawFd::as_raw_fd);
    // SAFETY: integer arguments only; the descriptor returned is owned at once.
    owned(unsafe { libc::syscall(libc::SYS_pidfd_getfd, raw, 0, 0) })
}

/// Signal 0 to the parent through a pidfd.
fn pidfd_send_signal_parent() -> io::Result<()> {
    let pidfd = parent_pidfd();
    let raw = pidfd.as_ref().map_or(0, AsRawFd::as_raw_fd);
    let null = std::ptr::null::<libc::siginfo_t>();
    // SAFETY: a NULL siginfo is allowed; signal 0 checks permission and delivers nothing.
    sys_res(unsafe { libc::syscall(libc::SYS_pidfd_send_signal, raw, 0, null, 0) }).map(drop)
}

/// Compares its descriptor 0 with the parent's (`KCMP_FILE`).
fn kcmp_parent() -> io::Result<()> {
    let me = nix::unistd::getpid().as_raw();
    // SAFETY: integer arguments only.
    sys_res(unsafe { libc::syscall(libc::SYS_kcmp, me, ppid().as_raw(), 0, 0, 0) }).map(drop)
}

/// The parent's nice value, set to what it is.
fn setpriority_parent() -> io::Result<()> {
    let pid = ppid().as_raw() as libc::id_t;
    nix::errno::Errno::clear();
    // SAFETY: integer arguments only.
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, pid) };
    if nice == -1 && nix::errno::Errno::last_raw() != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: integer arguments only.
    sys_res(unsafe { libc::setpriority(libc::PRIO_PROCESS, pid, nice) } as libc::c_long).map(drop)
}

/// The parent's I/O priority, set to what it is (IOPRIO_WHO_PROCESS = 1).
fn ioprio_set_parent() -> io::Result<()> {
    let pid = ppid().as_raw();
    // SAFETY: integer arguments only.
    let prio = sys_res(unsafe { libc::syscall(libc::SYS_ioprio_get, 1, pid) }).unwrap_or(0);
    // SAFETY: integer arguments only.
    sys_res(unsafe { libc::syscall(libc::SYS_ioprio_set, 1, pid, prio) }).map(drop)
}

/// The parent's CPU affinity, set to what it is.
fn sched_setaffinity_parent() -> io::Result<()> {
    use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
    let mask = sched_getaffinity(ppid()).unwrap_or_else(|_| {
        let mut all = CpuSet::new();
        let _ = all.set(0);
        all
    });
    sched_setaffinity(ppid(), &mask).map_err(io::Error::from)
}

/// A file handle for the stage file `f`.
fn name_to_handle() -> io::Result<()> {
    // struct file_handle: handle_bytes (u32), handle_type (i32), then up to MAX_HANDLE_SZ (128).
    let mut handle = [0u32; 2 + 32];
    handle[0] = 128;
    let mut mount_id: libc::c_int = 0;
    // SAFETY: the path is NUL-terminated; the kernel writes at most handle[0] bytes after the
    // 8-byte header of `handle` and one int into `mount_id`, all alive for the call.
    sys_res(unsafe {
        libc::syscall(
            libc::SYS_name_to_handle_at,
            libc::AT_FDCWD,
            c"f".as_ptr(),
            handle.as_mut_ptr(),
            &mut mount_id as *mut libc::c_int,
            0,
        )
    })
    .map(drop)
}

/// Reads its local descriptor table (func 0).
fn modify_ldt_read() -> io::Result<()> {
    let mut buf = [0u8; 16];
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`, alive for the call.
    sys_res(unsafe { libc::syscall(libc::SYS_modify_ldt, 0, buf.as_mut_ptr(), buf.len()) })
        .map(drop)
}

/// Reads the parent's process CPU clock (`MAKE_PROCESS_CPUCLOCK(PPID, CPUCLOCK_SCHED)`).
fn cpu_clock_parent() -> io::Result<()> {
    let clock = (!ppid().as_raw() << 3) | 2;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: the kernel writes one timespec into `ts`, alive for the call.
    sys_res(unsafe {
        libc::syscall(
            libc::SYS_clock_gettime,
            clock,
            &mut ts as *mut libc::timespec,
        )
    })
    .map(drop)
}

fn prlimit_read(pid: i32) -> io::Result<()> {
    let mut old = [0u64; 2];
    // SAFETY: reads only (new limit NULL); the kernel writes two u64 into `old`, alive.
    sys_res(unsafe {
        libc::syscall(
            libc::SYS_prlimit64,
            pid,
            libc::RLIMIT_NOFILE,
            std::ptr::null::<u64>(),
            old.as_mut_ptr(),
        )
    })
    .map(drop)
}

fn mount() -> String {
    use nix::mount::{mount, umount, MsFlags};
    let _ = fs::create_dir("mnt");
    // Unconfined, keep the mount away from the host: a private mount namespace first.
    let private = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS).is_ok()
        && mount(
            None::<&str>,
            "/",
            None::<&str>,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            None::<&str>,
        )
        .is_ok();
    let r = mount(
        Some("none"),
        "mnt",
        Some("tmpfs"),
        MsFlags::empty(),
        None::<&str>,
    );
    if r.is_ok() && !private {
        let _ = umount("mnt");
    }
    nix_res(r)
}

/// A page of a file it writes in its stage, mapped private with `prot`.
fn map_stage_file(prot: i32) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open("mapped")?;
    f.set_len(4096)?;
    // SAFETY: a private mapping of one page of an open file at an address of the kernel's
    // choice; it overlaps nothing of ours and is unmapped at once.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            prot,
            libc::MAP_PRIVATE,
            f.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `p` is the one-page mapping made above.
    unsafe { libc::munmap(p, 4096) };
    Ok(())
}

fn mmap(len: usize, prot: i32, extra: i32) -> io::Result<usize> {
    // SAFETY: an anonymous private mapping at an address of the kernel's choice; it overlaps
    // nothing of ours.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(p as usize)
    }
}

fn unmap(len: usize) -> impl Fn(usize) {
    move |addr| {
        // SAFETY: `addr`/`len` is exactly a mapping this program created and no longer uses.
        unsafe { libc::munmap(addr as *mut libc::c_void, len) };
    }
}

fn mprotect_exec(pkey: bool) -> io::Result<()> {
    let addr = mmap(4096, libc::PROT_READ | libc::PROT_WRITE, 0)?;
    let rx = libc::PROT_READ | libc::PROT_EXEC;
    // SAFETY: changes the protection of our own fresh page only, which holds nothing.
    let ret = unsafe {
        if pkey {
            libc::syscall(libc::SYS_pkey_mprotect, addr, 4096usize, rx, -1)
        } else {
            libc::syscall(libc::SYS_mprotect, addr, 4096usize, rx)
        }
    };
    unmap(4096)(addr);
    sys_res(ret).map(drop)
}

fn personality(persona: u64) -> io::Result<()> {
    // SAFETY: integer argument only.
    sys_res(unsafe { libc::syscall(libc::SYS_personality, persona) }).map(drop)
}

/// One legacy AIO context (destroyed at once).
fn aio_setup() -> io::Result<()> {
    let mut ctx: libc::c_ulong = 0;
    // SAFETY: the kernel writes the context id into `ctx`, alive for the call.
    sys_res(unsafe { libc::syscall(libc::SYS_io_setup, 1u32, &mut ctx as *mut libc::c_ulong) })?;
    // SAFETY: destroys the context just created; integer argument only.
    unsafe { libc::syscall(libc::SYS_io_destroy, ctx) };
    Ok(())
}

/// `getpid` through the i386 entry (`int 0x80`, number 20): `ok` when it answers its pid.
fn int80_getpid() -> io::Result<()> {
    let ret: i64;
    // SAFETY: i386 getpid reads no argument and no memory; the 64-bit kernel's `int 0x80` entry
    // may clobber r8-r11, declared here, and returns in eax.
    unsafe {
        std::arch::asm!(
            "int 0x80",
            inlateout("rax") 20i64 => ret,
            out("rcx") _, out("rdx") _, out("r8") _, out("r9") _, out("r10") _, out("r11") _,
        );
    }
    let ret = i64::from(ret as i32);
    if ret < 0 {
        return Err(io::Error::from_raw_os_error((-ret) as i32));
    }
    if ret == i64::from(std::process::id()) {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(libc::EINVAL))
    }
}

/// `getpid` by its x32 number (`__X32_SYSCALL_BIT | 39`).
fn x32_getpid() -> io::Result<()> {
    // SAFETY: getpid takes no argument.
    sys_res(unsafe { libc::syscall(0x4000_0000 | libc::SYS_getpid) }).map(drop)
}

/// `/etc` opened with `O_PATH`, then `passwd` opened beneath it.
fn o_path_openat() -> io::Result<File> {
    let dir = owned(
        // SAFETY: the path is NUL-terminated and static; the descriptor is owned at once.
        unsafe {
            libc::open(
                c"/etc".as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        } as libc::c_long,
    )?;
    let fd = owned(
        // SAFETY: `dir` is open; the path is NUL-terminated and static.
        unsafe {
            libc::openat(
                dir.as_raw_fd(),
                c"passwd".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        } as libc::c_long,
    )?;
    Ok(File::from(fd))
}

/// Offers one anonymous page of its own to KSM.
fn madvise_mergeable() -> io::Result<()> {
    let addr = mmap(4096, libc::PROT_READ | libc::PROT_WRITE, 0)?;
    // SAFETY: the page was just mapped by this function and is unmapped right after.
    let r = sys_res(unsafe {
        libc::madvise(addr as *mut libc::c_void, 4096, libc::MADV_MERGEABLE) as libc::c_long
    });
    unmap(4096)(addr);
    r.map(drop)
}

/// Turns KSM on for the whole process (`PR_SET_MEMORY_MERGE`), then off again.
fn prctl_memory_merge() -> io::Result<()> {
    // SAFETY: PR_SET_MEMORY_MERGE takes only integer arguments and touches no memory of ours.
    sys_res(unsafe { libc::prctl(libc::PR_SET_MEMORY_MERGE, 1, 0, 0, 0) } as libc::c_long)?;
    // SAFETY: as above.
    sys_res(unsafe { libc::prctl(libc::PR_SET_MEMORY_MERGE, 0, 0, 0, 0) } as libc::c_long).map(drop)
}

/// Gives itself a descriptor table of its own (`close_range` with `CLOSE_RANGE_UNSHARE`, on a
/// range that holds no descriptor, so nothing is closed).
fn close_range_unshare() -> io::Result<()> {
    // SAFETY: close_range takes only integers; descriptors 1000..=1000 are none of ours.
    sys_res(unsafe {
        libc::syscall(
            libc::SYS_close_range,
            1000u32,
            1000u32,
            libc::CLOSE_RANGE_UNSHARE,
        )
    })
    .map(drop)
}

fn io_uring_setup() -> io::Result<OwnedFd> {
    let mut params = [0u8; 120];
    // SAFETY: the kernel reads and writes the 120-byte io_uring_params in `params`, alive.
    owned(unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, params.as_mut_ptr()) })
}

fn bpf_map_create() -> io::Result<OwnedFd> {
    // union bpf_attr for BPF_MAP_CREATE: map_type = ARRAY (2), key 4, value 4, one entry.
    let mut attr = [0u32; 32];
    attr[0] = 2;
    attr[1] = 4;
    attr[2] = 4;
    attr[3] = 1;
    // SAFETY: the kernel reads `size` bytes of `attr`, alive for the call.
    owned(unsafe {
        libc::syscall(
            libc::SYS_bpf,
            0,
            attr.as_ptr(),
            std::mem::size_of_val(&attr),
        )
    })
}

fn keyctl_session() -> io::Result<()> {
    const KEYCTL_GET_KEYRING_ID: i32 = 0;
    const KEY_SPEC_SESSION_KEYRING: i32 = -3;
    // SAFETY: integer arguments only.
    sys_res(unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_GET_KEYRING_ID,
            KEY_SPEC_SESSION_KEYRING,
            0,
        )
    })
    .map(drop)
}

fn perf_event_open() -> io::Result<OwnedFd> {
    // perf_event_attr: type = PERF_TYPE_SOFTWARE (1), size = 128, config = CPU clock (0).
    let mut attr = [0u64; 16];
    attr[0] = 1 | (128 << 32);
    // SAFETY: the kernel reads the 128-byte attribute in `attr`, alive for the call.
    owned(unsafe { libc::syscall(libc::SYS_perf_event_open, attr.as_ptr(), 0, -1, -1, 0) })
}

fn userfaultfd() -> io::Result<OwnedFd> {
    // SAFETY: integer argument only.
    owned(unsafe { libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC) })
}

fn prctl_pdeathsig_zero() -> io::Result<()> {
    // SAFETY: integer arguments only.
    sys_res(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, 0, 0, 0, 0) } as libc::c_long).map(drop)
}

fn tiocsti(request: u64) -> io::Result<()> {
    let c: u8 = b'\n';
    // SAFETY: TIOCSTI reads one byte from `c`, alive for the call.
    sys_res(unsafe { libc::syscall(libc::SYS_ioctl, 0, request, &c as *const u8) }).map(drop)
}

/// Sets its terminal's line discipline to the one it has (`TIOCGETD`, then `TIOCSETD`).
fn tiocsetd() -> io::Result<()> {
    let mut ldisc: libc::c_int = 0;
    // SAFETY: TIOCGETD writes one int into `ldisc`, alive for the call.
    sys_res(unsafe { libc::syscall(libc::SYS_ioctl, 0, libc::TIOCGETD, &mut ldisc as *mut i32) })?;
    // SAFETY: TIOCSETD reads one int from `ldisc`, alive for the call.
    sys_res(unsafe { libc::syscall(libc::SYS_ioctl, 0, libc::TIOCSETD, &ldisc as *const i32) })
        .map(drop)
}

/// `fcntl` commands and `ioctl` requests the libc crate does not name (uapi fcntl.h, sockios.h,
/// fs.h).
const F_SETSIG: i32 = 10;
const F_SETOWN_EX: i32 = 15;
const F_OWNER_PID: i32 = 1;
const FIOSETOWN: u64 = 0x8901;
const SIOCSPGRP: u64 = 0x8902;
const FS_IOC_FSGETXATTR: u64 = 0x801c_581f;
const FS_IOC_FSSETXATTR: u64 = 0x401c_5820;
const DN_CREATE: i32 = 4;

/// `fcntl(fd, cmd, arg)` with an integer argument.
fn fcntl_int(fd: i32, cmd: i32, arg: i32) -> io::Result<i32> {
    // SAFETY: an integer argument only; the commands used here touch no memory of ours.
    sys_res(unsafe { libc::fcntl(fd, cmd, arg) } as libc::c_long).map(|r| r as i32)
}

/// `ioctl(fd, request, &value)` with an `int` the kernel reads (or writes).
fn ioctl_int(fd: i32, request: u64, value: &mut i32) -> io::Result<()> {
    // SAFETY: the requests used here read or write one int at `value`, alive for the call.
    sys_res(unsafe { libc::syscall(libc::SYS_ioctl, fd, request, value as *mut i32) }).map(drop)
}

/// `F_SETOWN`: signal-driven I/O on `fd` would signal `pid`. Without `O_ASYNC` on the
/// descriptor nothing is ever sent.
fn set_owner(fd: i32, pid: i32) -> io::Result<()> {
    fcntl_int(fd, libc::F_SETOWN, pid).map(drop)
}

fn set_owner_ex(fd: i32, pid: i32) -> io::Result<()> {
    // struct f_owner_ex { int type; pid_t pid; }
    let owner: [i32; 2] = [F_OWNER_PID, pid];
    // SAFETY: F_SETOWN_EX reads one struct f_owner_ex (two ints) from `owner`, alive.
    sys_res(unsafe { libc::fcntl(fd, F_SETOWN_EX, owner.as_ptr()) } as libc::c_long).map(drop)
}

/// Sets `O_ASYNC` on `fd` and clears it again (no owner is set: nothing is signalled).
fn o_async(fd: i32) -> io::Result<()> {
    let flags = fcntl_int(fd, libc::F_GETFL, 0)?;
    fcntl_int(fd, libc::F_SETFL, flags | libc::O_ASYNC)?;
    fcntl_int(fd, libc::F_SETFL, flags).map(drop)
}

/// The `ioctl` form of `O_ASYNC`, on and off again.
fn fioasync(fd: i32) -> io::Result<()> {
    ioctl_int(fd, libc::FIOASYNC, &mut 1)?;
    ioctl_int(fd, libc::FIOASYNC, &mut 0)
}

/// A read lease on a file of its own (its break would signal the lease holder), then released.
fn lease() -> io::Result<()> {
    stage_file()?;
    let f = File::open("f")?;
    fcntl_int(f.as_raw_fd(), libc::F_SETLEASE, libc::F_RDLCK)?;
    fcntl_int(f.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK).map(drop)
}

/// A shared whole-file lock on a stage file, released again.
fn flock_stage_file() -> io::Result<()> {
    stage_file()?;
    let f = File::open("f")?;
    let locked = nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockSharedNonblock)
        .map_err(|(_, e)| io::Error::from(e))?;
    locked
        .unlock()
        .map(drop)
        .map_err(|(_, e)| io::Error::from(e))
}

/// dnotify on the stage (an entry created there would signal the descriptor's owner), removed
/// again before anything is created.
fn dnotify() -> io::Result<()> {
    let dir = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(".")?;
    fcntl_int(dir.as_raw_fd(), libc::F_NOTIFY, DN_CREATE)?;
    fcntl_int(dir.as_raw_fd(), libc::F_NOTIFY, 0).map(drop)
}

/// The socket owner `ioctl`s, on a socket of a fresh pair, naming the parent (no `O_ASYNC`:
/// nothing is sent). Where sockets are refused, on standard output instead, so the call is made.
fn socket_owner(request: u64) -> io::Result<()> {
    let mut parent = ppid().as_raw();
    match std::os::unix::net::UnixStream::pair() {
        Ok((a, _b)) => ioctl_int(a.as_raw_fd(), request, &mut parent),
        Err(_) => ioctl_int(1, request, &mut parent),
    }
}

/// Makes standard input (the harness's pseudo-terminal) the controlling terminal of a new
/// session. Confined, `setsid` is refused too; the `ioctl` is made either way.
fn tiocsctty() -> io::Result<()> {
    let _ = nix::unistd::setsid();
    // SAFETY: TIOCSCTTY takes an integer argument (0: do not steal).
    sys_res(unsafe { libc::syscall(libc::SYS_ioctl, 0, libc::TIOCSCTTY, 0) }).map(drop)
}

/// Makes its own process group the foreground group of its controlling terminal (which decides
/// who gets the terminal's SIGINT, SIGTSTP, SIGHUP, …).
fn tiocspgrp() -> io::Result<()> {
    let _ = tiocsctty();
    let mut pgrp = nix::unistd::getpgrp().as_raw();
    ioctl_int(0, libc::TIOCSPGRP, &mut pgrp)
}

/// `TIOCSIG` on a new pseudo-terminal master: SIGINT to the foreground group of its slave (which
/// has none: nobody receives it). Confined, `/dev/ptmx` cannot be opened; the call is then made
/// on standard input.
fn tiocsig() -> io::Result<()> {
    let fd = match OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open("/dev/ptmx")
    {
        Ok(master) => OwnedFd::from(master),
        Err(_) => {
            // SAFETY: TIOCSIG takes an integer argument (the signal).
            let r = unsafe { libc::syscall(libc::SYS_ioctl, 0, libc::TIOCSIG, libc::SIGINT) };
            return sys_res(r).map(drop);
        }
    };
    // SAFETY: as above, on the master just opened.
    sys_res(unsafe { libc::syscall(libc::SYS_ioctl, fd.as_raw_fd(), libc::TIOCSIG, libc::SIGINT) })
        .map(drop)
}

/// The whole signal-driven I/O route on standard output: owner `victim` (`parent`, a pid, or
/// itself when absent), signal SIGKILL, `O_ASYNC`. The kernel then sends SIGKILL to the victim
/// when the reader (the launcher) drains the pipe. Returns after setting it up.
fn sigio_sigkill(victim: Option<&str>) -> io::Result<()> {
    let pid = match victim {
        Some("parent") => ppid().as_raw(),
        Some(v) => v
            .parse()
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?,
        None => nix::unistd::getpid().as_raw(),
    };
    set_owner(1, pid)?;
    fcntl_int(1, F_SETSIG, libc::SIGKILL)?;
    let flags = fcntl_int(1, libc::F_GETFL, 0)?;
    fcntl_int(1, libc::F_SETFL, flags | libc::O_ASYNC).map(drop)
}

/// Waits (at most about 5 s) until what it wrote on standard output has been read, then a little
/// longer for the reader's signal to be sent.
fn wait_until_stdout_drained() {
    for _ in 0..5000 {
        let mut queued = 0;
        if ioctl_int(1, libc::FIONREAD, &mut queued).is_err() || queued == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
}

/// `FS_IOC_SETFLAGS` with the flags the file already has (no change, but the call is made).
fn setflags() -> io::Result<()> {
    let f = File::open("f")?;
    let mut flags = 0;
    ioctl_int(f.as_raw_fd(), libc::FS_IOC_GETFLAGS, &mut flags)?;
    ioctl_int(f.as_raw_fd(), libc::FS_IOC_SETFLAGS, &mut flags)
}

/// `FS_IOC_FSSETXATTR` with the attributes the file already has.
fn fssetxattr() -> io::Result<()> {
    let f = File::open("f")?;
    let mut attr = [0u8; 28]; // struct fsxattr
                              // SAFETY: FS_IOC_FSGETXATTR writes one 28-byte struct fsxattr into `attr`, alive.
    sys_res(unsafe {
        libc::syscall(
            libc::SYS_ioctl,
            f.as_raw_fd(),
            FS_IOC_FSGETXATTR,
            attr.as_mut_ptr(),
        )
    })?;
    // SAFETY: FS_IOC_FSSETXATTR reads the same struct from `attr`, alive.
    sys_res(unsafe {
        libc::syscall(
            libc::SYS_ioctl,
            f.as_raw_fd(),
            FS_IOC_FSSETXATTR,
            attr.as_ptr(),
        )
    })
    .map(drop)
}

/// `argv0:` and this program's `argv[0]`, or `args:` and the count when it was given more than
/// `argv[0]` (invalid UTF-8 replaced).
fn argv0() -> String {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match args.as_slice() {
        [argv0] => format!("argv0:{argv0}"),
        other => format!("args:{}", other.len()),
    }
}

/// `default` when every signal had its default disposition and none was blocked at exec; else
/// `ignored:NAMES` and/or `blocked:NAMES`.
fn signal_dispositions() -> String {
    let names = |bits: u64| -> String {
        (1..=sys::confine::MAX_SIGNAL)
            .filter(|s| bits & (1 << (s - 1)) != 0)
            .map(|s| {
                nix::sys::signal::Signal::try_from(s)
                    .map(|sig| sig.as_str().to_owned())
                    .unwrap_or_else(|_| format!("SIG{s}"))
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut parts = Vec::new();
    let ignored = IGNORED_AT_EXEC.load(Ordering::SeqCst);
    if ignored != 0 {
        parts.push(format!("ignored:{}", names(ignored)));
    }
    let blocked = BLOCKED_AT_EXEC.load(Ordering::SeqCst);
    if blocked != 0 {
        parts.push(format!("blocked:{}", names(blocked)));
    }
    if parts.is_empty() {
        "default".to_owned()
    } else {
        parts.join(";")
    }
}

/// A writable static array in the data segment; its bytes are machine code only when written.
static mut CODE: [u8; 16] = [0xcc; 16];

/// Writes `mov eax, 42; ret` into the data segment and calls it: `ok` only if that segment is
/// executable (an ELF whose writable segment also has PF_X); otherwise the call faults (SIGSEGV).
fn write_exec_data() -> io::Result<()> {
    const RET_42: [u8; 6] = [0xb8, 0x2a, 0x00, 0x00, 0x00, 0xc3];
    let code = std::ptr::addr_of_mut!(CODE).cast::<u8>();
    for (i, b) in RET_42.iter().enumerate() {
        // SAFETY: `code` points to the 16-byte static, i < 6; this single-threaded probe is its
        // only user.
        unsafe { code.add(i).write_volatile(*b) };
    }
    // SAFETY: the bytes just written are a complete function of the C ABI (no arguments, result
    // in eax). If the page is not executable, the call faults and the kernel ends the process.
    let f: extern "C" fn() -> i32 = unsafe { std::mem::transmute(code) };
    match f() {
        42 => Ok(()),
        _ => Err(io::Error::from_raw_os_error(libc::EIO)),
    }
}

fn raise_hard_nofile() -> io::Result<()> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    // Lowering is always allowed; raising it back needs CAP_SYS_RESOURCE.
    let lower = hard.saturating_sub(1);
    setrlimit(Resource::RLIMIT_NOFILE, soft.min(lower), lower)?;
    setrlimit(Resource::RLIMIT_NOFILE, soft.min(lower), hard).map_err(io::Error::from)
}

fn capabilities() -> String {
    let sets = sys::confine::capability_sets();
    let bounding = (0..64).any(|cap| sys::confine::bounding_has(cap).unwrap_or(false));
    match sets {
        Ok((0, 0, 0)) if !bounding => "none".to_owned(),
        Ok(_) => "ok".to_owned(),
        Err(e) => res::<()>(Err(e)),
    }
}

/// `ok` when any process other than itself and its parent exists for `sched_getaffinity`, which
/// takes any pid of its namespace.
fn other_pids() -> String {
    let me = std::process::id() as i32;
    let parent = ppid().as_raw();
    for pid in 1..=65_536 {
        if pid == me || pid == parent {
            continue;
        }
        let mut set = [0u64; 16];
        // SAFETY: sched_getaffinity writes at most `size_of_val(&set)` bytes into `set`.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_sched_getaffinity,
                pid,
                std::mem::size_of_val(&set),
                set.as_mut_ptr(),
            )
        };
        if ret >= 0 {
            return "ok".to_owned();
        }
    }
    "none".to_owned()
}

/// `none` when the host name is the run's own (`dot`), `ok` when it is any other (the host's).
fn host_name() -> String {
    match nix::sys::utsname::uname() {
        Ok(u) if u.nodename() == "dot" => "none".to_owned(),
        Ok(_) => "ok".to_owned(),
        Err(e) => nix_res::<()>(Err(e)),
    }
}

fn timer_create() -> String {
    let mut id: libc::timer_t = std::ptr::null_mut();
    // SAFETY: a NULL sigevent (SIGALRM on expiry, never armed here); the kernel writes `id`.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_timer_create,
            libc::CLOCK_MONOTONIC,
            std::ptr::null::<libc::sigevent>(),
            &mut id,
        )
    };
    res(sys_res(ret))
}

fn fsetpipe_sz() -> String {
    let (r, _w) = match nix::unistd::pipe() {
        Ok(p) => p,
        Err(e) => return nix_res::<()>(Err(e)),
    };
    use std::os::fd::AsRawFd;
    // SAFETY: integer arguments only, on a pipe this process owns.
    res(sys_res(
        unsafe { libc::fcntl(r.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) } as libc::c_long,
    ))
}

fn inherited_fd() -> String {
    for fd in 3..4096 {
        // SAFETY: F_GETFD takes only integer arguments; it reports whether `fd` is open.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0 {
            return "ok".to_owned();
        }
    }
    "none".to_owned()
}

fn open_many(n: u64) -> io::Result<()> {
    let mut held = Vec::new();
    for _ in 0..n {
        held.push(File::open(".")?);
    }
    Ok(())
}

fn write_past(limit: u64) -> io::Result<()> {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: ignoring SIGXFSZ installs no handler code; the write then fails with EFBIG.
    unsafe { signal(Signal::SIGXFSZ, SigHandler::SigIgn) }?;
    let mut f = File::create("big")?;
    let chunk = vec![0u8; 64 * 1024];
    let mut left = limit + 1;
    while left > 0 {
        let n = chunk.len().min(left as usize);
        f.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    drop(f);
    fs::remove_file("big")
}

fn spin(seconds: u64) -> String {
    use nix::time::{clock_gettime, ClockId};
    let mut x = 0u64;
    loop {
        for _ in 0..1_000_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        match clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID) {
            Ok(t) if t.tv_sec() as u64 >= seconds => return "ok".to_owned(),
            Ok(_) => {}
            Err(e) => return nix_res::<()>(Err(e)),
        }
    }
}

fn threads() -> io::Result<()> {
    let handles: Vec<_> = (0..4u64)
        .map(|i| std::thread::spawn(move || (0..100_000u64).fold(i, |a, b| a.wrapping_add(b))))
        .collect();
    for h in handles {
        h.join().map_err(|_| io::Error::other("thread panicked"))?;
    }
    Ok(())
}

fn tgkill_own_thread() -> io::Result<()> {
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        let _ = tid_tx.send(nix::unistd::gettid().as_raw());
        let _ = go_rx.recv();
    });
    let tid = tid_rx.recv().map_err(io::Error::other)?;
    let r = tgkill(nix::unistd::getpid().as_raw(), tid);
    let _ = go_tx.send(());
    h.join().map_err(|_| io::Error::other("thread panicked"))?;
    r
}
