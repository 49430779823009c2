//! The run's own identity. `RLIMIT_NPROC` bounds the tasks (processes and threads) of a *user*, and
//! the kernel never applies it to the global uid 0; so a bound on one run's tasks needs a user that
//! is that run's alone:
//!
//! * launched by root (uid 0 of the initial user namespace): the plugin runs as the per-run uid
//!   [`RUN_UID_BASE`] + the runner's pid, gid the same, no supplementary groups. Live pids of the
//!   host's PID namespace are unique and a pid is reused only once every task that carried it is
//!   reaped, so no two live runs share a uid (a runner in another PID namespace, as in a
//!   container, refuses: its pids are not the host's); no account or file uses that range. Uid 0 without capabilities still owns
//!   most of the system's files; this uid owns none.
//! * launched by anyone else (or by root inside another user namespace): the runner enters a new
//!   user namespace, mapping its uid and gid to themselves (the run's other namespaces are made
//!   inside it).
//!   The task count of a user namespace starts at one, so the limit counts this run alone. Hosts
//!   that forbid unprivileged user namespaces cannot bound the tasks: `process` refuses there.
//!
//! Cgroups are not used: the bound is the same with or without a delegated cgroup.

use proto::runner::IdentityKind;
use std::io;

/// The first per-run uid (and gid): `0x7F000000`. The range is [`RUN_UID_BASE`] to
/// [`RUN_UID_BASE`] + [`PID_LIMIT`] - 1 (2130706432–2134900735): below the ids some tools read as
/// negative, above systemd's container ranges, apart from its foreign range (0x7FFF0000).
pub const RUN_UID_BASE: u32 = 0x7F00_0000;
/// The kernel's highest possible pid + 1 on 64-bit (`PID_MAX_LIMIT`, 2^22).
pub const PID_LIMIT: u32 = 1 << 22;

/// Which identity this runner gives its plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Root of the initial user namespace: switch to this uid and gid.
    PerRunUid { id: u32 },
    /// Anyone else: a new user namespace mapping `uid` and `gid` to themselves.
    UserNamespace { uid: u32, gid: u32 },
}

impl Plan {
    /// The plugin's uid and gid, as seen from the launcher.
    pub fn ids(self) -> (u32, u32) {
        match self {
            Plan::PerRunUid { id } => (id, id),
            Plan::UserNamespace { uid, gid } => (uid, gid),
        }
    }

    pub fn kind(self) -> IdentityKind {
        match self {
            Plan::PerRunUid { .. } => IdentityKind::PerRunUid,
            Plan::UserNamespace { .. } => IdentityKind::UserNamespace,
        }
    }
}

/// The per-run uid for a runner with pid `pid`.
pub fn run_uid(pid: u32) -> Option<u32> {
    (pid < PID_LIMIT).then(|| RUN_UID_BASE + pid)
}

/// Decides the identity for this process (the rule is `IdentityKind::for_runner`, which the kernel
/// probe applies too).
pub fn plan() -> io::Result<Plan> {
    let euid = nix::unistd::geteuid().as_raw();
    let uid_map = std::fs::read_to_string("/proc/self/uid_map")?;
    if IdentityKind::for_runner(euid, &uid_map) == IdentityKind::PerRunUid {
        // The pid is unique on the host only in the host's PID namespace.
        if !probe::host_pid_namespace() {
            return Err(io::Error::other(
                "the per-run uid is the runner's pid, and this runner is not in the host's PID \
                 namespace: two runs could share a uid",
            ));
        }
        let pid = std::process::id();
        let id = run_uid(pid).ok_or_else(|| {
            io::Error::other(format!("pid {pid} is above the kernel's pid limit"))
        })?;
        Ok(Plan::PerRunUid { id })
    } else {
        Ok(Plan::UserNamespace {
            uid: euid,
            gid: nix::unistd::getegid().as_raw(),
        })
    }
}

/// Enters a new user namespace with `uid` and `gid` mapped to themselves and supplementary groups
/// denied; the run's other namespaces (`namespaces`) are made in it next. Must run while the
/// process is single-threaded.
pub fn enter_user_namespace(uid: u32, gid: u32) -> Result<(), (&'static str, io::Error)> {
    use nix::sched::{unshare, CloneFlags};
    unshare(CloneFlags::CLONE_NEWUSER).map_err(|e| ("unshare(CLONE_NEWUSER)", e.into()))?;
    std::fs::write("/proc/self/setgroups", "deny").map_err(|e| ("setgroups deny", e))?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1\n")).map_err(|e| ("uid_map", e))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1\n")).map_err(|e| ("gid_map", e))?;
    Ok(())
}

/// Switches every uid and gid to `id` and drops the supplementary groups (needs CAP_SETUID and
/// CAP_SETGID, so before the capabilities are cleared).
pub fn become_run_uid(id: u32) -> Result<(), (&'static str, io::Error)> {
    use nix::unistd::{setgroups, setresgid, setresuid, Gid, Uid};
    setgroups(&[]).map_err(|e| ("setgroups", e.into()))?;
    let g = Gid::from_raw(id);
    setresgid(g, g, g).map_err(|e| ("setresgid", e.into()))?;
    let u = Uid::from_raw(id);
    setresuid(u, u, u).map_err(|e| ("setresuid", e.into()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_run_uids_are_unique_per_pid_and_stay_in_their_range() {
        assert_eq!(run_uid(1), Some(RUN_UID_BASE + 1));
        let last = run_uid(PID_LIMIT - 1).expect("the highest pid has a uid");
        assert_eq!(last, 0x7F3F_FFFF);
        assert_eq!(run_uid(PID_LIMIT), None);
        assert!(last < 0x7FFF_0000u32, "below systemd's foreign range");
        assert!(i32::try_from(last).is_ok(), "never negative as an int32");
    }
}
