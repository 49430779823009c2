//! `dot-sandbox probe`: what this kernel can enforce, and whether `process` containment is
//! possible here. `dot-launch` calls [`probe`] to refuse a `process` entry before spawning.

use serde::{Deserialize, Serialize};

/// The lowest Landlock ABI `process` accepts.
pub const REQUIRED_LANDLOCK_ABI: u32 = 3;

/// What this kernel offers.
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
    /// `process` containment can be enforced here.
    pub process_enforceable: bool,
    /// Why not, when it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

/// Probes the running kernel (no side effects on this process).
pub fn probe() -> Probe {
    let kernel_release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let facts = kernel_facts();
    let mut p = Probe {
        kernel_release,
        arch: std::env::consts::ARCH.to_owned(),
        landlock_abi: facts.0,
        seccomp: facts.1,
        no_new_privs: facts.2,
        process_enforceable: false,
        why_not: None,
    };
    p.why_not = why_not(&p);
    p.process_enforceable = p.why_not.is_none();
    p
}

/// [`probe`] as a kernel with Landlock ABI `min(cap, this kernel's)` would answer it
/// (`dot-sandbox probe --landlock-abi N`, a test and diagnostic knob).
pub fn probe_capped(cap: Option<u32>) -> Probe {
    let mut p = probe();
    if let Some(cap) = cap {
        p.landlock_abi = p.landlock_abi.min(cap);
        p.why_not = why_not(&p);
        p.process_enforceable = p.why_not.is_none();
    }
    p
}

#[cfg(target_os = "linux")]
fn kernel_facts() -> (u32, bool, bool) {
    use sys::confine as c;
    let landlock = c::landlock_abi_version().unwrap_or(0);
    let seccomp = [libc::SECCOMP_RET_KILL_PROCESS, libc::SECCOMP_RET_ERRNO]
        .into_iter()
        .all(|a| c::seccomp_action_available(a).unwrap_or(false));
    (landlock, seccomp, c::no_new_privs().is_ok())
}

#[cfg(not(target_os = "linux"))]
fn kernel_facts() -> (u32, bool, bool) {
    (0, false, false)
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
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> Probe {
        Probe {
            kernel_release: "6.18".into(),
            arch: "x86_64".into(),
            landlock_abi: 7,
            seccomp: true,
            no_new_privs: true,
            process_enforceable: true,
            why_not: None,
        }
    }

    #[test]
    fn landlock_below_3_or_no_seccomp_refuses() {
        assert_eq!(why_not(&good()), None);
        let old = Probe {
            landlock_abi: 2,
            ..good()
        };
        assert!(why_not(&old).is_some_and(|w| w.contains("Landlock ABI 2")));
        let no_seccomp = Probe {
            seccomp: false,
            ..good()
        };
        assert!(why_not(&no_seccomp).is_some_and(|w| w.contains("seccomp")));
    }

    #[test]
    fn probe_round_trips_strictly() {
        let p = probe();
        let text = serde_json::to_string(&p).expect("serialize");
        assert_eq!(serde_json::from_str::<Probe>(&text).ok(), Some(p));
        assert!(
            serde_json::from_str::<Probe>(&text.replace("\"arch\"", "\"extra\":1,\"arch\""))
                .is_err()
        );
    }
}
