//! The platform root's layout (docs/design.md "The platform root", docs/registry.md). Pure path
//! arithmetic, no I/O.

use crate::digest::Sha256;
use crate::name::Name;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

pub const DEV_MARKER: &str = "DEV";
pub const PLUGINS_DIR: &str = "plugins.d";
pub const STORE_DIR: &str = "store/sha256";
pub const PUBLISHERS_DIR: &str = "trust/publishers";
pub const TXN_DIR: &str = "txn";
pub const JOURNAL_FILE: &str = "journal";
pub const STAGE_DIR: &str = "stage";
pub const DENY_FILE: &str = "trust/deny.json";
pub const POLICY_FILE: &str = "trust/policy.json";
pub const HIGH_WATER_FILE: &str = "trust/high-water.json";
pub const AUDIT_LOG: &str = "audit.log";

/// The directories of a root's registry part, in creation order.
pub const REGISTRY_DIRS: [&str; 5] = [PLUGINS_DIR, "store", STORE_DIR, "trust", PUBLISHERS_DIR];

/// The directories of a root's state part (inside the state directory), in creation order.
pub const STATE_DIRS: [&str; 1] = [TXN_DIR];

/// The state directory of uid 0 when neither `--root` nor `--state` names one.
pub const SYSTEM_STATE_DIR: &str = match option_env!("DOT_SYSTEM_STATE_DIR") {
    Some(d) => d,
    None => "/var/lib/dot",
};

/// Paths inside one platform root: its *registry* part (entries, store, trust store, policy, deny
/// list, high-water versions, the registry's change log) and its *state* part (`txn/` and the
/// launch audit log). A single directory holds both ([`Root::single`], today's layout); `--state`
/// puts the state part elsewhere ([`Root::split`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    registry: PathBuf,
    state: PathBuf,
}

impl Root {
    /// One directory holding the registry and the state.
    pub fn single(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        Root {
            registry: dir.clone(),
            state: dir,
        }
    }

    /// The registry in `registry`, the state in `state`.
    pub fn split(registry: impl Into<PathBuf>, state: impl Into<PathBuf>) -> Self {
        Root {
            registry: registry.into(),
            state: state.into(),
        }
    }

    /// `--root DIR [--state STATE]`: without `--state`, the state is `DIR` itself.
    pub fn from_args(root: impl Into<PathBuf>, state: Option<impl Into<PathBuf>>) -> Self {
        let root = root.into();
        match state {
            Some(s) => Root::split(root, s),
            None => Root::single(root),
        }
    }

    /// The registry directory (of a single root: the root).
    pub fn path(&self) -> &Path {
        &self.registry
    }

    /// The state directory (of a single root: the root).
    pub fn state(&self) -> &Path {
        &self.state
    }

    /// Registry and state are the same directory (they are compared as given, not resolved).
    pub fn is_single(&self) -> bool {
        self.registry == self.state
    }

    /// The state directory when it is not the registry's: what `--state` was given.
    pub fn separate_state(&self) -> Option<&Path> {
        (!self.is_single()).then_some(self.state.as_path())
    }

    pub fn dev_marker(&self) -> PathBuf {
        self.registry.join(DEV_MARKER)
    }

    pub fn plugins(&self) -> PathBuf {
        self.registry.join(PLUGINS_DIR)
    }

    pub fn entry(&self, name: &Name) -> PathBuf {
        self.plugins().join(format!("{name}.json"))
    }

    pub fn entry_sig(&self, name: &Name) -> PathBuf {
        self.plugins().join(format!("{name}.json.minisig"))
    }

    /// The entry's `i`-th signature (from 0): `NAME.json.minisig`, then `NAME.json.2.minisig`,
    /// `NAME.json.3.minisig` … (docs/registry.md "Signatures").
    pub fn entry_sig_n(&self, name: &Name, i: usize) -> PathBuf {
        match i {
            0 => self.entry_sig(name),
            n => self
                .plugins()
                .join(format!("{name}.json.{}.minisig", n + 1)),
        }
    }

    /// The owner's grant for the entry `name` (`--allow-dynamic`).
    pub fn entry_grant(&self, name: &Name) -> PathBuf {
        self.plugins().join(format!("{name}.json.grant"))
    }

    pub fn trust(&self) -> PathBuf {
        self.registry.join("trust")
    }

    pub fn deny_list(&self) -> PathBuf {
        self.registry.join(DENY_FILE)
    }

    pub fn policy(&self) -> PathBuf {
        self.registry.join(POLICY_FILE)
    }

    pub fn high_water(&self) -> PathBuf {
        self.registry.join(HIGH_WATER_FILE)
    }

    /// The launch audit log (state part): one line per launch decision.
    pub fn audit_log(&self) -> PathBuf {
        self.state.join(AUDIT_LOG)
    }

    /// The registry's change log: one line per `dot-register` change. In a single root it is
    /// the same file as [`Root::audit_log`].
    pub fn change_log(&self) -> PathBuf {
        self.registry.join(AUDIT_LOG)
    }

    pub fn store(&self) -> PathBuf {
        self.registry.join(STORE_DIR)
    }

    pub fn store_file(&self, digest: &Sha256) -> PathBuf {
        self.store().join(digest.to_hex())
    }

    pub fn publishers(&self) -> PathBuf {
        self.registry.join(PUBLISHERS_DIR)
    }

    pub fn publisher(&self, id: &Name) -> PathBuf {
        self.publishers().join(format!("{id}.json"))
    }

    pub fn txn(&self) -> PathBuf {
        self.state.join(TXN_DIR)
    }

    pub fn run_dir(&self, txid: &str) -> PathBuf {
        self.txn().join(txid)
    }

    pub fn journal(&self, txid: &str) -> PathBuf {
        self.run_dir(txid).join(JOURNAL_FILE)
    }

    pub fn stage(&self, txid: &str) -> PathBuf {
        self.run_dir(txid).join(STAGE_DIR)
    }
}

/// The default state directory of `uid`: [`SYSTEM_STATE_DIR`] for uid 0, else
/// `$XDG_STATE_HOME/dot`, else `$HOME/.local/state/dot`. Relative or empty values are ignored
/// (the XDG base directory rule), so the state is never resolved against the current directory.
pub fn default_state(
    uid: u32,
    xdg_state_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Option<PathBuf> {
    if uid == 0 {
        return Some(PathBuf::from(SYSTEM_STATE_DIR));
    }
    fn absolute(v: Option<&OsStr>) -> Option<&Path> {
        v.map(Path::new).filter(|p| p.is_absolute())
    }
    if let Some(x) = absolute(xdg_state_home) {
        return Some(x.join("dot"));
    }
    absolute(home).map(|h| h.join(".local/state/dot"))
}

/// The name of a run's `i`-th temp file in its target directory: `.dot-TXID-I.tmp`. Written by
/// `dot-launch`'s commit, recognised by `dot-discard` with [`is_target_temp`].
pub fn target_temp(txid: &str, i: usize) -> String {
    format!(".dot-{txid}-{i}.tmp")
}

/// Whether `name` is one of run `txid`'s temp files (`.dot-TXID-N.tmp`, N decimal).
pub fn is_target_temp(name: &str, txid: &str) -> bool {
    name.strip_prefix(".dot-")
        .and_then(|r| r.strip_prefix(txid))
        .and_then(|r| r.strip_prefix('-'))
        .and_then(|r| r.strip_suffix(".tmp"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether `name` is one plain path component: not empty, at most 255 bytes, not `.` or `..`,
/// no `/` and no NUL. Only such names are ever joined to a directory taken from a journal.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && !name.bytes().any(|b| b == b'/' || b == 0)
}

/// A transaction id: 32 lowercase hex digits. Checked before it is used as a path component.
pub fn is_txid(s: &str) -> bool {
    s.len() == 32
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_root_holds_registry_and_state() {
        let r = Root::single("/r");
        assert!(r.is_single());
        assert_eq!(r.separate_state(), None);
        assert_eq!(r.txn(), Path::new("/r/txn"));
        assert_eq!(r.audit_log(), r.change_log());
        assert_eq!(r.plugins(), Path::new("/r/plugins.d"));
        assert_eq!(Root::from_args("/r", None::<PathBuf>), r);
    }

    #[test]
    fn a_split_root_keeps_runs_and_launch_log_in_the_state() {
        let r = Root::from_args("/reg", Some("/st"));
        assert_eq!(r.separate_state(), Some(Path::new("/st")));
        assert_eq!(r.txn(), Path::new("/st/txn"));
        assert_eq!(r.stage("t"), Path::new("/st/txn/t/stage"));
        assert_eq!(r.audit_log(), Path::new("/st/audit.log"));
        assert_eq!(r.change_log(), Path::new("/reg/audit.log"));
        assert_eq!(r.store(), Path::new("/reg/store/sha256"));
        assert_eq!(r.dev_marker(), Path::new("/reg/DEV"));
    }

    #[test]
    fn the_default_state_depends_on_the_user_and_never_on_the_cwd() {
        let os = |s: &'static str| Some(OsStr::new(s));
        assert_eq!(
            default_state(0, os("/x"), os("/root")),
            Some(PathBuf::from(SYSTEM_STATE_DIR))
        );
        assert_eq!(
            default_state(1000, os("/x/state"), os("/home/u")),
            Some(PathBuf::from("/x/state/dot"))
        );
        assert_eq!(
            default_state(1000, None, os("/home/u")),
            Some(PathBuf::from("/home/u/.local/state/dot"))
        );
        assert_eq!(
            default_state(1000, os("rel"), os("/home/u")),
            Some(PathBuf::from("/home/u/.local/state/dot"))
        );
        assert_eq!(
            default_state(1000, os(""), os("/home/u")),
            Some(PathBuf::from("/home/u/.local/state/dot"))
        );
        assert_eq!(default_state(1000, None, os("home")), None);
        assert_eq!(default_state(1000, None, None), None);
    }

    #[test]
    fn target_temps_are_recognised_only_for_their_run() {
        let (a, b) = (
            "0123456789abcdef0123456789abcdef",
            "fedcba9876543210fedcba9876543210",
        );
        assert_eq!(target_temp(a, 7), format!(".dot-{a}-7.tmp"));
        assert!(is_target_temp(&target_temp(a, 0), a));
        assert!(is_target_temp(&target_temp(a, 255), a));
        assert!(!is_target_temp(&target_temp(a, 0), b));
        for other in [
            format!(".dot-{a}-.tmp"),
            format!(".dot-{a}-1x.tmp"),
            format!(".dot-{a}-1.tmp.bak"),
            format!(".dot-{a}1.tmp"),
            format!("dot-{a}-1.tmp"),
        ] {
            assert!(!is_target_temp(&other, a), "{other}");
        }
    }
}
