//! What this kernel and this process offer `process` containment: the facts read from the kernel
//! (`sys::confine`'s queries) and from `/proc`, decided by `proto::probe`. `dot-sandbox probe`
//! prints [`probe`]; `dot-launch` decides with [`decision_probe`] and refuses `process` with its
//! `why_not`. Reads only: no side effect on the calling process.
#![forbid(unsafe_code)]

use sys::confine::{capability_sets, landlock_abi_version, no_new_privs, seccomp_action_available};

/// What this kernel and this process offer `process` containment, decided by `proto::probe`.
pub fn probe() -> proto::probe::Probe {
    proto::probe::Probe::new(kernel_facts())
}

/// The queries behind [`probe`]: the Landlock ABI, seccomp's filter actions, `no_new_privs`, the
/// identity a run gets (effective uid and `/proc/self/uid_map`), the user-namespace switches and
/// whether this process holds `CAP_SYS_ADMIN`.
pub fn kernel_facts() -> proto::probe::KernelFacts {
    let mut facts = decision_facts();
    facts.kernel_release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    if facts.identity == proto::runner::IdentityKind::PerRunUid {
        facts.user_namespaces = user_namespace_switches();
    }
    facts
}

/// [`probe`] as a launch decides with it (`proto::probe::why_not`): only the facts the decision
/// reads. The kernel release is left empty, and the user-namespace switches are read only for the
/// identity that needs a user namespace (a per-run uid does not: the switches are left unread,
/// as on a kernel without them). `dot-sandbox probe` reports everything ([`probe`]).
pub fn decision_probe() -> proto::probe::Probe {
    proto::probe::Probe::new(decision_facts())
}

fn decision_facts() -> proto::probe::KernelFacts {
    use proto::probe::{KernelFacts, UserNamespaceSwitches};
    const CAP_SYS_ADMIN: u32 = 21;
    let uid_map = std::fs::read_to_string("/proc/self/uid_map").unwrap_or_default();
    let identity =
        proto::runner::IdentityKind::for_runner(nix::unistd::geteuid().as_raw(), &uid_map);
    KernelFacts {
        kernel_release: String::new(),
        landlock_abi: landlock_abi_version().unwrap_or(0),
        seccomp: [libc::SECCOMP_RET_KILL_PROCESS, libc::SECCOMP_RET_ERRNO]
            .into_iter()
            .all(|a| seccomp_action_available(a).unwrap_or(false)),
        no_new_privs: no_new_privs().is_ok(),
        identity,
        user_namespaces: match identity {
            proto::runner::IdentityKind::UserNamespace => user_namespace_switches(),
            proto::runner::IdentityKind::PerRunUid => UserNamespaceSwitches::default(),
        },
        cap_sys_admin: capability_sets().is_ok_and(|(eff, _, _)| eff & (1 << CAP_SYS_ADMIN) != 0),
        host_pid_namespace: host_pid_namespace(),
        namespaces_missing: namespaces_missing(),
    }
}

/// The namespaces of `proto::probe::RUN_NAMESPACES` this kernel cannot make: built without (no
/// `/proc/self/ns/NAME`), or `user.max_NAME_namespaces` set to 0.
fn namespaces_missing() -> Vec<String> {
    proto::probe::RUN_NAMESPACES
        .iter()
        .filter_map(|ns| {
            if std::fs::symlink_metadata(format!("/proc/self/ns/{ns}")).is_err() {
                return Some(format!("{ns} (not built into this kernel)"));
            }
            let max = format!("/proc/sys/user/max_{ns}_namespaces");
            (sysctl(&max) == Some(0)).then(|| format!("{ns} (user.max_{ns}_namespaces = 0)"))
        })
        .collect()
}

fn user_namespace_switches() -> proto::probe::UserNamespaceSwitches {
    proto::probe::UserNamespaceSwitches {
        max_user_namespaces: sysctl("/proc/sys/user/max_user_namespaces"),
        unprivileged_userns_clone: sysctl("/proc/sys/kernel/unprivileged_userns_clone"),
        apparmor_restrict_unprivileged_userns: sysctl(
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        ),
    }
}

/// Whether this process is in the host's PID namespace (`/proc/self/ns/pid` is the initial one).
pub fn host_pid_namespace() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").is_ok_and(|m| m.ino() == proto::probe::PROC_PID_INIT_INO)
}

/// A numeric sysctl, `None` when this kernel has no such file (or it is not a number).
fn sysctl(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}
