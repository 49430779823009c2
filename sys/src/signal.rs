//! Signals received synchronously: a set of signals blocked in every thread and read from a
//! `signalfd`, polled with the rest of a caller's descriptors; and the end of a process that was
//! cancelled by one of them, by that signal itself.

use nix::sys::signal::{SigHandler, SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use std::io;
use std::os::fd::{AsFd, BorrowedFd};

/// Signals blocked for the whole process and received on a descriptor (non-blocking,
/// close-on-exec). Blocked signals are inherited by threads created later, so this is made before
/// any thread. A child inherits the mask across fork and exec too: `spawn::spawn` and
/// `process::spawn_with_fds` empty it in the child, so what is blocked here never reaches a plugin.
#[derive(Debug)]
pub struct Receiver {
    fd: SignalFd,
}

impl Receiver {
    /// Blocks `signals` in the calling thread and returns the descriptor they are read from. A
    /// signal the process ignores (inherited `SIG_IGN`, e.g. `nohup` and SIGHUP) stays ignored: the
    /// kernel discards it before it could be read.
    pub fn block(signals: &[Signal]) -> io::Result<Receiver> {
        let mut set = SigSet::empty();
        for s in signals {
            set.add(*s);
        }
        nix::sys::signal::sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), None)?;
        let fd = SignalFd::with_flags(&set, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)?;
        Ok(Receiver { fd })
    }

    /// The next signal received, if one is pending; never waits.
    pub fn take(&self) -> io::Result<Option<Signal>> {
        match self.fd.read_signal() {
            Ok(Some(info)) => Ok(Signal::try_from(info.ssi_signo as i32).ok()),
            Ok(None) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

impl AsFd for Receiver {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Ends the process by `signal` with its default disposition (for SIGTERM, SIGINT and SIGHUP:
/// termination), as a shell expects of a program the signal cancelled: its parent sees the
/// process killed by that signal (`$?` is 128 + its number), so a shell loop or `make` stops too.
/// Only `signal` is unblocked; any other blocked signal stays pending. Returns only if the process
/// still lives (it cannot, for those three): a tool's `main` then exits with 128 + the signal's
/// number.
pub fn die_by(signal: Signal) {
    // SAFETY: SIG_DFL installs no handler of ours: no code runs in signal context.
    let _ = unsafe { nix::sys::signal::signal(signal, SigHandler::SigDfl) };
    let _ = nix::sys::signal::raise(signal);
    let mut only = SigSet::empty();
    only.add(signal);
    let _ = nix::sys::signal::sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&only), None);
}

/// Gives SIGCHLD its default disposition. A process started with SIGCHLD ignored (a parent's
/// `SIG_IGN` survives exec) has its children reaped by the kernel the moment they end: `waitpid`
/// then fails with `ECHILD`, and the exit status of a plugin is lost. A tool that waits for its
/// children calls this first, before it starts any.
pub fn default_child_signal() -> io::Result<()> {
    // SAFETY: SIG_DFL installs no handler of ours: no code runs in signal context.
    unsafe { nix::sys::signal::signal(Signal::SIGCHLD, SigHandler::SigDfl) }?;
    Ok(())
}
