//! `sys::spawn`: what a child started without `fork` gets, observed from outside (its `/proc`
//! entries) while it sleeps, and what a failed start reports.

use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use sys::spawn::{spawn, Child, Exec};

fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL")
}

fn start(
    program: &str,
    argv: &[&str],
    dir: &Path,
    moves: &[(std::os::fd::BorrowedFd<'_>, i32)],
) -> std::io::Result<Child> {
    let argv: Vec<CString> = argv.iter().map(|a| c(a)).collect();
    let dir = CString::new(dir.as_os_str().as_bytes()).expect("no NUL");
    spawn(&Exec {
        program: &c(program),
        argv: &argv,
        dir: &dir,
        moves,
        env: &[],
        elsewhere: false,
    })
}

fn status_field(pid: u32, field: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .expect("field")
        .trim()
        .to_owned()
}

/// Process group of `pid` (the fifth field of its stat, after the name).
fn pgrp(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let (_, rest) = stat.rsplit_once(')').expect("stat shape");
    rest.split_whitespace()
        .nth(2)
        .expect("pgrp")
        .parse()
        .expect("number")
}

/// Kills and reaps the child.
fn end(mut child: Child) {
    // SAFETY: kill with integer arguments on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().expect("reaped");
}

#[test]
fn the_child_gets_exactly_the_environment_given() {
    let argv = [c("sleep"), c("30")];
    let env = [c("RUST_BACKTRACE=1"), c("EMPTY="), c("A=b=c")];
    let child = spawn(&Exec {
        program: &c("/bin/sleep"),
        argv: &argv,
        dir: c"/",
        moves: &[],
        env: &env,
        elsewhere: false,
    })
    .expect("spawn");
    let pid = child.id();
    // The kernel records where the environment is once the new program's stack is set up, a
    // moment after the exec's point of no return: look once the task is named after `sleep`.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::fs::read_to_string(format!("/proc/{pid}/comm")).expect("comm") != "sleep\n"
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let mut environ = Vec::new();
    while environ.is_empty() && std::time::Instant::now() < deadline {
        environ = std::fs::read(format!("/proc/{pid}/environ")).expect("environ");
    }
    assert_eq!(environ, b"RUST_BACKTRACE=1\0EMPTY=\0A=b=c\0", "{environ:?}");
    end(child);
}

#[test]
fn the_child_gets_exactly_its_descriptors_cwd_group_and_default_signals() {
    let dir = std::env::temp_dir();
    let placed = std::fs::File::open("/dev/null").expect("open");
    // A descriptor this process holds without close-on-exec must not reach the child.
    let leaked = std::fs::File::open("/dev/zero").expect("open");
    // SAFETY: F_SETFD with an integer on a descriptor `leaked` keeps open.
    let cleared = unsafe { libc::fcntl(leaked.as_raw_fd(), libc::F_SETFD, 0) };
    assert_eq!(cleared, 0);
    // Signals the parent ignores and blocks are not the child's.
    // SAFETY: SIG_IGN for SIGUSR1, no handler code installed.
    unsafe { libc::signal(libc::SIGUSR1, libc::SIG_IGN) };
    let mut usr2 = nix::sys::signal::SigSet::empty();
    usr2.add(nix::sys::signal::Signal::SIGUSR2);
    nix::sys::signal::pthread_sigmask(nix::sys::signal::SigmaskHow::SIG_BLOCK, Some(&usr2), None)
        .expect("block");

    let child = start("/bin/sleep", &["sleep", "30"], &dir, &[(placed.as_fd(), 5)]).expect("spawn");
    let pid = child.id();
    // The launching thread resumes once the child is past the point of no return of its exec;
    // the kernel closes the close-on-exec descriptors a moment later, before it renames the task
    // after its program: look once the name is `sleep`.
    let fds = |pid: u32| -> Vec<i32> {
        let mut fds: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .expect("fd dir")
            .map(|e| {
                e.expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .parse()
                    .expect("number")
            })
            .collect();
        fds.sort();
        fds
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::fs::read_to_string(format!("/proc/{pid}/comm")).expect("comm") != "sleep\n"
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // The kernel may rename the task before it has closed the close-on-exec descriptors: one that
    // stays open is still there when the deadline passes.
    let mut got = fds(pid);
    while got != [0, 1, 2, 5] && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
        got = fds(pid);
    }
    assert_eq!(got, [0, 1, 2, 5], "placed descriptors only");
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/fd/5")).expect("link"),
        Path::new("/dev/null")
    );
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/cwd")).expect("cwd"),
        dir.canonicalize().expect("canonical")
    );
    assert_eq!(pgrp(pid), pid, "a process group of its own");
    assert_eq!(status_field(pid, "SigBlk:"), "0000000000000000");
    assert_eq!(
        status_field(pid, "SigIgn:"),
        "0000000000000000",
        "SIGPIPE and SIGUSR1 too"
    );
    let environ = std::fs::read(format!("/proc/{pid}/environ")).expect("environ");
    assert!(environ.is_empty(), "an empty environment: {environ:?}");
    end(child);
    nix::sys::signal::pthread_sigmask(nix::sys::signal::SigmaskHow::SIG_UNBLOCK, Some(&usr2), None)
        .expect("unblock");
}

#[test]
fn pipes_carry_stdin_and_stdout_and_wait_keeps_the_status() {
    let mut child = start(
        "/bin/sh",
        &["sh", "-c", "read x; echo \"got $x\"; exit 7"],
        Path::new("/"),
        &[],
    )
    .expect("spawn");
    use std::io::Write;
    child
        .stdin
        .as_mut()
        .expect("stdin")
        .write_all(b"hello\n")
        .expect("write");
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read");
    assert_eq!(out, "got hello\n");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(7));
    assert_eq!(
        child.wait().expect("again").code(),
        Some(7),
        "the status is kept"
    );
}

#[test]
fn a_failed_exec_is_its_errno_and_leaves_no_child() {
    let err = start("/nonexistent/program", &["x"], Path::new("/"), &[]).expect_err("no program");
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    let err = start("/bin/sh", &["sh"], Path::new("/nonexistent/dir"), &[]).expect_err("no dir");
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
}

/// A child started elsewhere (on another CPU than its parent's, where there is one) may run on
/// every CPU its parent may once it has executed its program.
#[test]
fn a_child_started_elsewhere_gets_every_cpu_back() {
    let argv = [c("sleep"), c("30")];
    let mut child = spawn(&Exec {
        program: &c("/bin/sleep"),
        argv: &argv,
        dir: c"/",
        moves: &[],
        env: &[],
        elsewhere: true,
    })
    .expect("spawn");
    let theirs = status_field(child.id(), "Cpus_allowed_list");
    let mine = status_field(std::process::id(), "Cpus_allowed_list");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = child.wait();
    assert_eq!(theirs, mine);
}
