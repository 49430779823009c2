//! Cancellation: SIGTERM, SIGINT and SIGHUP received synchronously.
//!
//! `dot-launch` arms it first thing ([`arm`], before any thread and any run directory): the three
//! signals are blocked in the whole process and read from a `signalfd` (`sys::signal::Receiver`).
//! A run looks at that descriptor at fixed points — after the decision, while the stage is
//! filled, just before the spawn, in the supervisor's poll with the plugin's pipes and the
//! deadline, before the commit and before PREPARED — and a signal found there ends the run as a
//! failure before PREPARED ends it: the group terminated and reaped, the temp files and the run
//! directory removed, one `cancelled` error. Nothing looks at it while a run directory is being
//! removed or once PREPARED is durable, so a second signal never leaves a half-removed run or
//! half a target: it waits, blocked, until the process ends. `recover` looks between runs.
//!
//! `main` disarms it before the process ends ([`disarm`]: the descriptor closed, the signals still
//! blocked, so one arriving then is not acted on).
//!
//! A library caller that did not arm it gets none of this: [`check`] never fails and the
//! supervisor polls no extra descriptor; its signals are its own.

use crate::LaunchError;
use nix::sys::signal::Signal;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The signals that cancel a launch.
pub const SIGNALS: [Signal; 3] = [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP];

/// The receiver, while armed.
static RECEIVER: Mutex<Option<sys::signal::Receiver>> = Mutex::new(None);
/// The first signal received (its number), 0 until one is.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

/// Where a run was when it was cancelled (the message says what that left).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum During {
    /// Verification and the decision: nothing was created.
    Decision,
    /// The run directory and the stage: removed, nothing ran.
    Stage,
    /// The plugin ran: its group was ended and reaped.
    Plugin,
    /// The outputs were being judged or written as temp files: removed with the run.
    Commit,
    /// `recover`, between two runs.
    Recover,
}

impl std::fmt::Display for During {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            During::Decision => "before the run started; nothing was created",
            During::Stage => {
                "before the plugin started; the run directory was removed, nothing in the target changed"
            }
            During::Plugin => {
                "while the plugin ran; its process group was ended, the run directory removed, nothing in the target changed"
            }
            During::Commit => {
                "before its outputs were prepared; the temp files and the run directory were removed, nothing in the target changed"
            }
            During::Recover => {
                "between two runs; the runs it had reached are recovered, the others are as they were (recover again)"
            }
        })
    }
}

fn lock() -> MutexGuard<'static, Option<sys::signal::Receiver>> {
    RECEIVER.lock().unwrap_or_else(|e| e.into_inner())
}

/// Blocks the cancelling signals and starts receiving them. Call it before any thread starts;
/// calling it again changes nothing.
pub fn arm() -> Result<(), LaunchError> {
    let mut r = lock();
    if r.is_none() {
        *r =
            Some(sys::signal::Receiver::block(&SIGNALS).map_err(|e| {
                LaunchError::io("blocking SIGTERM, SIGINT and SIGHUP", "signalfd", e)
            })?);
    }
    Ok(())
}

/// Closes the descriptor, when the launch is over (the process is about to end). The signals
/// stay blocked: one that comes now is not acted on.
pub fn disarm() {
    lock().take();
}

/// The receiver held for a while (the supervisor's loop): its descriptor to poll, and what it
/// received. [`received`] and [`check`] must not be called while it is held.
#[derive(Debug)]
pub struct Watch(MutexGuard<'static, Option<sys::signal::Receiver>>);

/// Holds the receiver until the [`Watch`] is dropped.
pub fn watch() -> Watch {
    Watch(lock())
}

impl Watch {
    /// The descriptor to poll for a signal, when armed.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.0.as_ref().map(|r| r.as_fd())
    }

    /// The signal that cancelled this process, if one has been received.
    pub fn received(&self) -> Option<Signal> {
        take(self.0.as_ref())
    }
}

/// The first cancelling signal, reading what `r` has pending if none was read before.
fn take(r: Option<&sys::signal::Receiver>) -> Option<Signal> {
    if let Some(r) = r {
        if CAUGHT.load(Ordering::SeqCst) == 0 {
            if let Ok(Some(s)) = r.take() {
                CAUGHT.store(s as i32, Ordering::SeqCst);
            }
        }
    }
    Signal::try_from(CAUGHT.load(Ordering::SeqCst)).ok()
}

/// The signal that cancelled this process, if one has been received (reads what is pending).
pub fn received() -> Option<Signal> {
    take(lock().as_ref())
}

/// `Err(cancelled)` once a cancelling signal has been received.
pub fn check(during: During) -> Result<(), LaunchError> {
    match received() {
        Some(signal) => Err(LaunchError::Cancelled { signal, during }),
        None => Ok(()),
    }
}
