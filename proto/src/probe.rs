//! What a kernel offers `process` containment, and the decision whether it can be enforced there.
//! `probe::probe` asks the kernel ([`KernelFacts`]); [`Probe::new`] decides. `dot-sandbox
//! probe` prints the result, and `dot-launch` refuses a `process` entry with its [`Probe::why_not`]
//! before it creates or spawns anything.

use crate::runner::IdentityKind;
use serde::{Deserialize, Serialize};

/// The lowest Landlock ABI `process` accepts.
pub const REQUIRED_LANDLOCK_ABI: u32 = 3;

/// The inode number of the initial PID namespace (`/proc/self/ns/pid` there), fixed by the kernel
/// (`PROC_PID_INIT_INO`, include/linux/proc_ns.h).
pub const PROC_PID_INIT_INO: u64 = 0xEFFF_FFFC;

/// What the kernel and this process's credentials say, as queried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelFacts {
    /// `uname -r`.
    pub kernel_release: String,
    /// The kernel's Landlock ABI version (0: none).
    pub landlock_abi: u32,
    /// seccomp filter mode with the kill-process and errno actions.
    pub seccomp: bool,
    /// `PR_SET_NO_NEW_PRIVS` is known to the kernel.
    pub no_new_privs: bool,
    /// The identity a run launched by this process gets.
    pub identity: IdentityKind,
    /// The switches that can forbid creating a user namespace.
    pub user_namespaces: UserNamespaceSwitches,
    /// This process holds `CAP_SYS_ADMIN` (in its own user namespace).
    pub cap_sys_admin: bool,
    /// This process is in the host's (the initial) PID namespace, where a pid is unique on the
    /// host: the per-run uid is the runner's pid ([`PROC_PID_INIT_INO`]).
    pub host_pid_namespace: bool,
    /// The namespaces a run needs that this kernel cannot give: a kind it was built without
    /// (no `/proc/self/ns/NAME`), or one whose `user.max_NAME_namespaces` is 0.
    pub namespaces_missing: Vec<String>,
}

/// The namespaces every `process` run gets of its own, as `/proc/self/ns` names them (the user
/// namespace too when the run is not launched by root: `IdentityKind::UserNamespace`). The cgroup
/// namespace keeps the host's cgroup paths out of a script's `/proc/self/cgroup`.
pub const RUN_NAMESPACES: [&str; 6] = ["mnt", "pid", "ipc", "net", "uts", "cgroup"];

/// The sysctls that can forbid an unprivileged user namespace, each `None` when this kernel does
/// not have it: `/proc/sys/user/max_user_namespaces`, Debian's
/// `/proc/sys/kernel/unprivileged_userns_clone` and Ubuntu's
/// `/proc/sys/kernel/apparmor_restrict_unprivileged_userns`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserNamespaceSwitches {
    pub max_user_namespaces: Option<u64>,
    pub unprivileged_userns_clone: Option<u64>,
    pub apparmor_restrict_unprivileged_userns: Option<u64>,
}

impl UserNamespaceSwitches {
    /// The switch that forbids this process a user namespace of its own, if one does: none may be
    /// made at all (`max_user_namespaces` 0), or only with `CAP_SYS_ADMIN` (the other two set).
    /// Conservative: a process confined by an AppArmor profile that allows user namespaces is
    /// still counted as refused under Ubuntu's switch.
    pub fn forbidding(&self, cap_sys_admin: bool) -> Option<String> {
        if self.max_user_namespaces == Some(0) {
            return Some("user.max_user_namespaces = 0".to_owned());
        }
        if cap_sys_admin {
            return None;
        }
        if self.unprivileged_userns_clone == Some(0) {
            return Some("kernel.unprivileged_userns_clone = 0".to_owned());
        }
        match self.apparmor_restrict_unprivileged_userns {
            Some(v) if v != 0 => Some(format!(
                "kernel.apparmor_restrict_unprivileged_userns = {v}"
            )),
            _ => None,
        }
    }
}

fn yes() -> bool {
    true
}

/// What this kernel offers, and whether `process` containment can be enforced here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// `uname -r`.
    pub kernel_release: String,
    /// The architecture this build runs on.
    pub arch: String,
    /// The kernel's Landlock ABI version (0: none).
    pub landlock_abi: u32,
    /// seccomp filter mode with the kill-process and errno actions.
    pub seccomp: bool,
    /// `PR_SET_NO_NEW_PRIVS` is known to the kernel.
    pub no_new_privs: bool,
    /// The identity a run gets here: `per-run-uid` (launched by root of the initial user
    /// namespace) or `user-namespace` (anyone else).
    pub identity: IdentityKind,
    /// This launcher is in the host's PID namespace (where the per-run uid is unique).
    #[serde(default = "yes")]
    pub host_pid_namespace: bool,
    /// This user can create a user namespace.
    pub user_namespaces: bool,
    /// The switch that forbids it, when `user_namespaces` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_namespaces_off: Option<String>,
    /// The namespaces a run gets of its own (mount, PID, IPC, network, UTS) can all be made.
    #[serde(default)]
    pub namespaces: bool,
    /// The ones that cannot, when `namespaces` is false.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces_missing: Vec<String>,
    /// `process` containment can be enforced here.
    pub process_enforceable: bool,
    /// Why not, when it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

impl Probe {
    /// The probe these facts make, decided.
    pub fn new(facts: KernelFacts) -> Probe {
        let off = facts.user_namespaces.forbidding(facts.cap_sys_admin);
        Probe {
            kernel_release: facts.kernel_release,
            arch: std::env::consts::ARCH.to_owned(),
            landlock_abi: facts.landlock_abi,
            seccomp: facts.seccomp,
            no_new_privs: facts.no_new_privs,
            identity: facts.identity,
            host_pid_namespace: facts.host_pid_namespace,
            user_namespaces: off.is_none(),
            user_namespaces_off: off,
            namespaces: facts.namespaces_missing.is_empty(),
            namespaces_missing: facts.namespaces_missing,
            process_enforceable: false,
            why_not: None,
        }
        .decided()
    }

    /// This probe as a kernel with Landlock ABI `min(cap, this kernel's)` would answer it (the
    /// `--landlock-abi` test and diagnostic knob; `None` changes nothing).
    pub fn capped(mut self, cap: Option<u32>) -> Probe {
        if let Some(cap) = cap {
            self.landlock_abi = self.landlock_abi.min(cap);
        }
        self.decided()
    }

    fn decided(mut self) -> Probe {
        self.why_not = why_not(&self);
        self.process_enforceable = self.why_not.is_none();
        self
    }
}

/// The first reason `process` cannot be enforced with these facts, if any.
pub fn why_not(p: &Probe) -> Option<String> {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return Some(format!(
            "process containment is built only for Linux x86-64, this is {} {}",
            std::env::consts::OS,
            p.arch
        ));
    }
    if p.landlock_abi < REQUIRED_LANDLOCK_ABI {
        return Some(format!(
            "Landlock ABI {} is below the required {REQUIRED_LANDLOCK_ABI}",
            p.landlock_abi
        ));
    }
    if !p.seccomp {
        return Some("seccomp filters (kill-process and errno actions) are not available".into());
    }
    if !p.no_new_privs {
        return Some("no_new_privs is not available".into());
    }
    if !p.namespaces_missing.is_empty() {
        return Some(format!(
            "a run gets mount, PID, IPC, network, UTS and cgroup namespaces of its own, and this kernel \
             cannot make: {}",
            p.namespaces_missing.join(", ")
        ));
    }
    if p.identity == IdentityKind::PerRunUid && !p.host_pid_namespace {
        return Some(
            "root's run takes the per-run uid 0x7F000000 + the runner's pid, unique on the host only \
             in the host's PID namespace, and this launcher runs in another one (a container): \
             two runs could share a uid and its task limit. Run dot-launch in the host's PID \
             namespace, or as a user other than root (a run then gets a user namespace of its own)"
                .into(),
        );
    }
    if p.identity == IdentityKind::UserNamespace && !p.user_namespaces {
        return Some(format!(
            "a run launched by anyone but root needs a user namespace of its own, and {} forbids \
             this user one: a run's tasks cannot be bounded",
            p.user_namespaces_off.as_deref().unwrap_or("the kernel")
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> KernelFacts {
        KernelFacts {
            kernel_release: "6.18".into(),
            landlock_abi: 7,
            seccomp: true,
            no_new_privs: true,
            identity: IdentityKind::PerRunUid,
            user_namespaces: UserNamespaceSwitches {
                max_user_namespaces: Some(96362),
                unprivileged_userns_clone: None,
                apparmor_restrict_unprivileged_userns: None,
            },
            cap_sys_admin: true,
            host_pid_namespace: true,
            namespaces_missing: vec![],
        }
    }

    #[test]
    fn root_outside_the_hosts_pid_namespace_refuses_and_anyone_else_does_not() {
        let contained = Probe::new(KernelFacts {
            host_pid_namespace: false,
            ..facts()
        });
        assert!(!contained.process_enforceable);
        let why = contained.why_not.expect("refused");
        assert!(why.contains("host's PID namespace"), "{why}");
        let user = Probe::new(KernelFacts {
            host_pid_namespace: false,
            ..user()
        });
        assert!(user.process_enforceable, "{:?}", user.why_not);
    }

    #[test]
    fn a_kernel_without_a_namespace_refuses() {
        let p = Probe::new(KernelFacts {
            namespaces_missing: vec!["net (user.max_net_namespaces = 0)".into()],
            ..facts()
        });
        assert!(!p.namespaces && !p.process_enforceable);
        let why = p.why_not.expect("refused");
        assert!(why.contains("net (user.max_net_namespaces = 0)"), "{why}");
        assert!(Probe::new(facts()).namespaces);
    }

    /// A user who is not root, without capabilities.
    fn user() -> KernelFacts {
        KernelFacts {
            identity: IdentityKind::UserNamespace,
            cap_sys_admin: false,
            ..facts()
        }
    }

    fn switches(max: u64, clone: Option<u64>, apparmor: Option<u64>) -> UserNamespaceSwitches {
        UserNamespaceSwitches {
            max_user_namespaces: Some(max),
            unprivileged_userns_clone: clone,
            apparmor_restrict_unprivileged_userns: apparmor,
        }
    }

    #[test]
    fn landlock_below_3_or_no_seccomp_refuses() {
        let good = Probe::new(facts());
        assert_eq!(good.why_not, None);
        assert!(good.process_enforceable);
        let old = Probe::new(KernelFacts {
            landlock_abi: 2,
            ..facts()
        });
        assert!(old.why_not.is_some_and(|w| w.contains("Landlock ABI 2")));
        assert!(!old.process_enforceable);
        let no_seccomp = Probe::new(KernelFacts {
            seccomp: false,
            ..facts()
        });
        assert!(no_seccomp.why_not.is_some_and(|w| w.contains("seccomp")));
    }

    #[test]
    fn a_lowered_abi_is_decided_again_and_never_raised() {
        let p = Probe::new(facts());
        assert_eq!(p.clone().capped(None), p);
        assert_eq!(p.clone().capped(Some(9)).landlock_abi, 7);
        let four = p.clone().capped(Some(4));
        assert_eq!((four.landlock_abi, four.process_enforceable), (4, true));
        let two = p.capped(Some(2));
        assert_eq!((two.landlock_abi, two.process_enforceable), (2, false));
        assert!(two.why_not.is_some_and(|w| w.contains("Landlock ABI 2")));
    }

    #[test]
    fn a_user_without_user_namespaces_cannot_have_its_tasks_bounded() {
        for (s, switch) in [
            (switches(0, None, None), "user.max_user_namespaces = 0"),
            (
                switches(100, Some(0), None),
                "kernel.unprivileged_userns_clone = 0",
            ),
            (
                switches(100, None, Some(1)),
                "kernel.apparmor_restrict_unprivileged_userns = 1",
            ),
        ] {
            let p = Probe::new(KernelFacts {
                user_namespaces: s,
                ..user()
            });
            assert!(!p.user_namespaces, "{s:?}");
            assert_eq!(p.user_namespaces_off.as_deref(), Some(switch));
            assert!(!p.process_enforceable, "{s:?}");
            let why = p.why_not.expect("refused");
            assert!(why.contains(switch), "{why}");
            assert!(why.contains("tasks cannot be bounded"), "{why}");
        }
    }

    #[test]
    fn user_namespaces_that_are_allowed_or_not_needed_do_not_refuse() {
        // Allowed: every switch on, or absent.
        for s in [switches(100, Some(1), Some(0)), switches(100, None, None)] {
            let p = Probe::new(KernelFacts {
                user_namespaces: s,
                ..user()
            });
            assert!(p.user_namespaces && p.process_enforceable, "{p:?}");
        }
        // Not needed: root of the initial user namespace gets a per-run uid, whatever the
        // switches say (the probe still reports them).
        let root = Probe::new(KernelFacts {
            user_namespaces: switches(0, Some(0), Some(1)),
            cap_sys_admin: false,
            ..facts()
        });
        assert!(!root.user_namespaces);
        assert!(root.process_enforceable, "{root:?}");
        // CAP_SYS_ADMIN lifts the two switches that ask for it, never a zero maximum.
        let admin = |s| {
            Probe::new(KernelFacts {
                user_namespaces: s,
                cap_sys_admin: true,
                ..user()
            })
        };
        assert!(admin(switches(100, Some(0), Some(1))).process_enforceable);
        assert!(!admin(switches(0, None, None)).process_enforceable);
    }

    #[test]
    fn probe_round_trips_strictly() {
        let p = Probe::new(user());
        let text = serde_json::to_string(&p).expect("serialize");
        assert!(text.contains(
            r#""identity":"user-namespace","host_pid_namespace":true,"user_namespaces":true"#
        ));
        assert_eq!(serde_json::from_str::<Probe>(&text).ok(), Some(p));
        assert!(
            serde_json::from_str::<Probe>(&text.replace("\"arch\"", "\"extra\":1,\"arch\""))
                .is_err()
        );
    }
}
