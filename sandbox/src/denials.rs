//! `--denials-fd`: what the seccomp filter refused, counted outside the plugin.
//!
//! The plugin's process installs the filter with every `EPERM` return turned into
//! `SECCOMP_RET_USER_NOTIF` ([`notifying`]) and gets the filter's listener. It tells the run's init
//! the listener's descriptor number over a pipe (`write` is allowed), init takes a copy of it
//! (`pidfd_getfd`: init is the plugin's parent, unconfined) and says so on a second pipe, and only
//! then does the plugin's process close the listener and execute the plugin: the plugin never
//! holds it. Init answers every notification with `EPERM` — the refusal the plugin gets is the one
//! it would get without the flag — and writes one line per refusal (`proto::runner::denial_line`)
//! to the denials descriptor, which the launcher reads as the run goes (so the counts survive a
//! run that is killed). The `ENOSYS` returns (`clone3`, numbers above the policy's) and the kills
//! (another architecture, x32) are not notified.

use crate::bpf;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use sys::confine::SockFilter;

/// `program` with every `EPERM` return sent to the filter's listener instead.
pub fn notifying(program: &mut [SockFilter]) {
    for i in program.iter_mut() {
        if i.code == bpf::RET_K && i.k == bpf::RET_ERRNO | libc::EPERM as u32 {
            i.k = libc::SECCOMP_RET_USER_NOTIF;
        }
    }
}

/// The policy's digest of the notifying variant of the program for `runtime` (per-launch values
/// zero, as every policy digest): what `enforced.seccomp_policy_sha256` says of such a run.
pub fn policy_sha256(runtime: bool) -> Result<proto::Sha256, seccompiler::BackendError> {
    let (mut zero, _) = crate::seccomp::program_and_digest(crate::policy::Params {
        pid: 0,
        cookie: 0,
        runtime,
    })?;
    notifying(&mut zero);
    let mut bytes = Vec::with_capacity(zero.len() * 8);
    for i in &zero {
        bytes.extend(i.code.to_ne_bytes());
        bytes.push(i.jt);
        bytes.push(i.jf);
        bytes.extend(i.k.to_ne_bytes());
    }
    Ok(proto::Sha256::of(&bytes))
}

/// The two pipes between init and the plugin's process, made before the plugin's fork.
pub struct Handshake {
    /// The plugin writes the listener's descriptor number here; init reads it.
    number: (OwnedFd, OwnedFd),
    /// Init writes one byte here once it holds the listener (1) or cannot take it (0).
    taken: (OwnedFd, OwnedFd),
}

impl Handshake {
    pub fn new() -> io::Result<Handshake> {
        let flags = nix::fcntl::OFlag::O_CLOEXEC;
        Ok(Handshake {
            number: nix::unistd::pipe2(flags)?,
            taken: nix::unistd::pipe2(flags)?,
        })
    }

    /// Init's ends.
    pub fn init_side(self) -> InitSide {
        InitSide {
            number: File::from(self.number.0),
            taken: File::from(self.taken.1),
        }
    }

    /// The plugin process's ends.
    pub fn plugin_side(self) -> PluginSide {
        PluginSide {
            number: File::from(self.number.1),
            taken: File::from(self.taken.0),
        }
    }
}

pub struct PluginSide {
    number: File,
    taken: File,
}

pub struct InitSide {
    number: File,
    taken: File,
}

impl PluginSide {
    /// Hands `listener` to init and waits until init holds its own copy; then closes it (and the
    /// pipes). After seccomp: only `write`, `read` and `close`.
    pub fn hand_over(mut self, listener: OwnedFd) -> io::Result<()> {
        let fd = listener.as_raw_fd();
        self.number.write_all(&fd.to_ne_bytes())?;
        let mut taken = [0u8; 1];
        self.taken.read_exact(&mut taken)?;
        drop(listener);
        match taken[0] {
            1 => Ok(()),
            _ => Err(io::Error::other(
                "the run's init could not take the filter's listener",
            )),
        }
    }
}

impl InitSide {
    /// Takes the plugin's listener (`pidfd_getfd` through `plugin`, a pidfd of it). `None` when
    /// the plugin's process ended (or failed) before it had one.
    pub fn take(mut self, plugin: &OwnedFd) -> Option<OwnedFd> {
        let mut raw = [0u8; 4];
        self.number.read_exact(&mut raw).ok()?;
        let got = sys::confine::pidfd_getfd(plugin.as_fd(), i32::from_ne_bytes(raw)).ok();
        let _ = self.taken.write_all(&[u8::from(got.is_some())]);
        got
    }
}

/// Init's loop while the plugin runs: every notification on `listener` answered with `EPERM` and
/// written to `out` as one line, until `plugin` (a pidfd) says the plugin has ended.
pub fn answer_until_exit(listener: &OwnedFd, plugin: &OwnedFd, out: &mut File) {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    loop {
        let mut fds = [
            PollFd::new(listener.as_fd(), PollFlags::POLLIN),
            PollFd::new(plugin.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return,
        }
        let notified = fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLIN));
        let ended = fds[1].any().unwrap_or(true);
        if notified {
            if let Ok(n) = sys::confine::seccomp_notif_recv(listener.as_fd()) {
                // ENOENT: the caller was killed meanwhile; nothing to answer.
                let _ = sys::confine::seccomp_notif_errno(listener.as_fd(), n.id, libc::EPERM);
                let _ = out.write_all(proto::runner::denial_line(n.nr, name(n.nr)).as_bytes());
            }
            continue;
        }
        if ended {
            return;
        }
    }
}

/// The x86-64 name of system call `nr`.
pub fn name(nr: i32) -> &'static str {
    usize::try_from(nr)
        .ok()
        .and_then(syscalls::Sysno::new)
        .map_or("unknown", |s| s.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the `EPERM` returns change: the program's length, jumps and every other return stay.
    #[test]
    fn only_the_eperm_returns_are_notified() {
        let params = crate::policy::Params {
            pid: 1,
            cookie: 2,
            runtime: false,
        };
        let (plain, _) = crate::seccomp::program_and_digest(params).expect("program");
        let mut notified = plain.clone();
        notifying(&mut notified);
        assert_eq!(plain.len(), notified.len());
        let eperm = bpf::RET_ERRNO | libc::EPERM as u32;
        let mut swapped = 0;
        for (a, b) in plain.iter().zip(&notified) {
            assert_eq!((a.code, a.jt, a.jf), (b.code, b.jt, b.jf));
            if a.code == bpf::RET_K && a.k == eperm {
                assert_eq!(b.k, libc::SECCOMP_RET_USER_NOTIF);
                swapped += 1;
            } else {
                assert_eq!(a.k, b.k);
            }
        }
        assert!(swapped > 0);
        assert!(!notified
            .iter()
            .any(|i| i.code == bpf::RET_K && i.k == eperm));
    }

    #[test]
    fn names_come_from_the_x86_64_table() {
        assert_eq!(name(41), "socket");
        assert_eq!(name(0), "read");
        assert_eq!(name(-1), "unknown");
        assert_eq!(name(100_000), "unknown");
    }
}
