//! The platform root's layout (docs/design.md "The platform root", docs/registry.md). Pure path
//! arithmetic, no I/O.

use crate::digest::Sha256;
use crate::name::Name;
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

/// The directories every root has, in creation order.
pub const ROOT_DIRS: [&str; 6] = [
    PLUGINS_DIR,
    "store",
    STORE_DIR,
    "trust",
    PUBLISHERS_DIR,
    TXN_DIR,
];

/// Paths inside one platform root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    pub dir: PathBuf,
}

impl Root {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Root { dir: dir.into() }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    pub fn dev_marker(&self) -> PathBuf {
        self.dir.join(DEV_MARKER)
    }

    pub fn plugins(&self) -> PathBuf {
        self.dir.join(PLUGINS_DIR)
    }

    pub fn entry(&self, name: &Name) -> PathBuf {
        self.plugins().join(format!("{name}.json"))
    }

    pub fn entry_sig(&self, name: &Name) -> PathBuf {
        self.plugins().join(format!("{name}.json.minisig"))
    }

    /// The owner's grant for the entry `name` (`--allow-dynamic`).
    pub fn entry_grant(&self, name: &Name) -> PathBuf {
        self.plugins().join(format!("{name}.json.grant"))
    }

    pub fn trust(&self) -> PathBuf {
        self.dir.join("trust")
    }

    pub fn deny_list(&self) -> PathBuf {
        self.dir.join(DENY_FILE)
    }

    pub fn policy(&self) -> PathBuf {
        self.dir.join(POLICY_FILE)
    }

    pub fn high_water(&self) -> PathBuf {
        self.dir.join(HIGH_WATER_FILE)
    }

    pub fn audit_log(&self) -> PathBuf {
        self.dir.join(AUDIT_LOG)
    }

    pub fn store(&self) -> PathBuf {
        self.dir.join(STORE_DIR)
    }

    pub fn store_file(&self, digest: &Sha256) -> PathBuf {
        self.store().join(digest.to_hex())
    }

    pub fn publishers(&self) -> PathBuf {
        self.dir.join(PUBLISHERS_DIR)
    }

    pub fn publisher(&self, id: &Name) -> PathBuf {
        self.publishers().join(format!("{id}.json"))
    }

    pub fn txn(&self) -> PathBuf {
        self.dir.join(TXN_DIR)
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
