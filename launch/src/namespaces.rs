//! A `process` run's network, IPC and UTS namespaces, made by a thread of the launcher while it
//! finishes its checks and digests the plugin (`proto::runner`, "The launcher's namespaces").
//!
//! Making a network namespace is most of what a run's namespaces cost (the kernel registers a
//! loopback device and every protocol's tables for it) and needs nothing of the run, so a launcher
//! that is root of the initial user namespace — whose runner makes no user namespace, which would
//! have to own them — starts it before the runner exists. The thread makes the three namespaces
//! for itself (`unshare` affects only the calling thread), opens them, sends them on the run's
//! report socket as the first message the runner reads, and ends; the launcher's own namespaces
//! never change. When they cannot be made, the message carries none and the runner makes every
//! namespace itself, and reports a failure as it always did.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::thread::JoinHandle;

/// The report socket of a run whose launcher makes the namespaces, and the thread making them.
#[derive(Debug)]
pub struct EarlyNamespaces {
    /// The launcher's end and the runner's end of the report socket.
    socket: Option<(OwnedFd, OwnedFd)>,
    thread: Option<JoinHandle<()>>,
}

impl EarlyNamespaces {
    /// Makes the run's report socket and starts the thread; `None` when either cannot be made
    /// (the run then makes its socket and its runner its namespaces, as without this).
    pub fn start() -> Option<EarlyNamespaces> {
        let (launcher, runner) = crate::exec::report_socket().ok()?;
        let sender = launcher.try_clone().ok()?;
        let thread = std::thread::Builder::new()
            .name("namespaces".to_owned())
            .spawn(move || send(sender.as_fd(), make().as_deref().unwrap_or(&[])))
            .ok()?;
        Some(EarlyNamespaces {
            socket: Some((launcher, runner)),
            thread: Some(thread),
        })
    }

    /// The report socket (the launcher's end, the runner's end), once.
    pub fn take_socket(&mut self) -> Option<(OwnedFd, OwnedFd)> {
        self.socket.take()
    }

    /// Waits until the namespaces are sent (or could not be): nothing may follow them on the
    /// socket before that.
    pub fn sent(&mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for EarlyNamespaces {
    fn drop(&mut self) {
        self.sent();
    }
}

/// On the calling thread only: new network, IPC and UTS namespaces, opened in the order of
/// `proto::runner::LAUNCHER_NAMESPACES`.
fn make() -> std::io::Result<Vec<OwnedFd>> {
    use nix::sched::{unshare, CloneFlags};
    unshare(CloneFlags::CLONE_NEWNET | CloneFlags::CLONE_NEWIPC | CloneFlags::CLONE_NEWUTS)?;
    proto::runner::LAUNCHER_NAMESPACES
        .iter()
        .map(|name| File::open(format!("/proc/thread-self/ns/{name}")).map(OwnedFd::from))
        .collect()
}

/// Sends the namespaces message (a runner that is gone already cannot take it: its report says
/// why it ended).
fn send(sock: BorrowedFd<'_>, namespaces: &[OwnedFd]) {
    let fds: Vec<BorrowedFd<'_>> = namespaces.iter().map(AsFd::as_fd).collect();
    let _ = sys::process::send_with_fds(sock, proto::runner::NAMESPACES_MESSAGE, &fds);
}
