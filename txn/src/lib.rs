//! The transaction store: everything about a run directory `txn/TXID/` and its target that more
//! than one tool does, in one place. `dot-launch` (its own run, `recover`), `dot-discard` and
//! `dot-journal-fmt` are front-ends over it.
//!
//! - [`run`]: `txn/` opened and checked ([`run::open_txn`]); one run examined — name, owner,
//!   modes, its lock taken before its journal is read, the journal classified
//!   ([`run::inspect`]) — and removed by descriptors, the journal last ([`run::RunFiles`]);
//! - [`rundir`]: a launcher's own run directory: created and locked, its journal appended (BEGIN
//!   made durable before a target is touched, a torn tail cut before an append), removed;
//! - [`tree`]: the walk that checks and removes a stage at any depth with a bounded number of
//!   descriptors;
//! - [`open_target`]: a run's target directory, checked to be the one the run began in;
//! - [`TargetTemps`]: the temp files a run left in its target;
//! - [`lock`]: the per-target commit lock (an `flock` on the held target directory);
//! - [`pending`]: a PREPARED run pending in a target, which refuses launches there;
//! - [`rollforward`]: the checks that let `recover` finish a PREPARED run, or say why not;
//! - [`hooks`]: the failpoints and injected errors of the test builds.
//!
//! The journal's format and the pure classifier stay in `proto::journal` (data only), and so does
//! what a tool reports of a run it leaves in place (`proto::retained`). The store builds no command
//! line: the `next` of a retained run or of a missing root is the front-ends' (`cli::next`).
#![forbid(unsafe_code)]

pub mod hooks;
pub mod lock;
pub mod pending;
pub mod rollforward;
pub mod run;
pub mod rundir;
pub mod tree;

use nix::errno::Errno;
use nix::unistd::{unlinkat, UnlinkatFlags};
use proto::journal::TargetId;
use proto::{ErrorObject, ToErrorObject};
use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use tree::{check_entry, list, stat_at, Kind, Rules, Stop};

/// Why a tool could not look at the runs at all (`txn/` itself).
#[derive(Debug, thiserror::Error)]
pub enum TxnError {
    #[error("{path} does not exist: not a platform root")]
    NoTxn { path: PathBuf },
    #[error("refusing {path}: {why}")]
    UnsafeTxn { path: PathBuf, why: String },
    #[error("could not open {path}: {source}")]
    OpenTxn { path: PathBuf, source: Errno },
    #[error("could not list {path}: {source}")]
    ListTxn { path: PathBuf, source: Errno },
    #[error("could not sync {path}: {source}")]
    SyncTxn { path: PathBuf, source: Errno },
}

impl ToErrorObject for TxnError {
    fn kind(&self) -> proto::Kind {
        match self {
            TxnError::NoTxn { .. } => proto::Kind::NotARoot,
            TxnError::UnsafeTxn { .. } => proto::Kind::UnsafeTxn,
            TxnError::OpenTxn { .. } | TxnError::ListTxn { .. } | TxnError::SyncTxn { .. } => {
                proto::Kind::Io
            }
        }
    }

    fn to_error_object(&self) -> ErrorObject {
        let obj = ErrorObject::new(self.kind(), self.to_string());
        match self {
            TxnError::NoTxn { path }
            | TxnError::UnsafeTxn { path, .. }
            | TxnError::OpenTxn { path, .. }
            | TxnError::ListTxn { path, .. }
            | TxnError::SyncTxn { path, .. } => obj.path(path),
        }
    }
}

impl TxnError {
    /// For `NoTxn`: the root, when it does not exist at all (nothing there yet), which `init` can
    /// make: the front-end's `next`.
    pub fn missing_root(&self) -> Option<&Path> {
        match self {
            TxnError::NoTxn { path } => {
                let root = path.parent().unwrap_or(path);
                std::fs::symlink_metadata(root).is_err().then_some(root)
            }
            _ => None,
        }
    }
}

/// Why a run's target directory could not be held ([`open_target`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetError {
    /// The path no longer names the directory the run began in: it was renamed away, replaced
    /// (by another directory, a symbolic link, a file), or was reached through a bind mount that
    /// is gone. What the run wrote there (its temp files) may be wherever that directory went.
    Moved(String),
    /// Nothing is at the path, and the journal does not record the directory's identity (it
    /// was written before identities were recorded): nothing more is known.
    Missing,
    /// An error of the host (I/O, a permission): another pass may get past it.
    Host(String),
}

/// Opens the target directory a run's journal names, one component at a time without following a
/// symbolic link, and, when the journal recorded its identity (`id`), checks that it is still
/// that directory (same device and inode).
pub fn open_target(target: &Path, id: Option<TargetId>) -> Result<OwnedFd, TargetError> {
    let shown = target.display();
    let dir = match sys::fs::open_dir_nofollow(target) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => {
            return match id {
                Some(id) => Err(TargetError::Moved(format!(
                    "the target {shown} does not exist any more (the run began in {id})"
                ))),
                None => Err(TargetError::Missing),
            }
        }
        Err(Errno::ELOOP | Errno::ENOTDIR) => {
            return Err(TargetError::Moved(format!(
                "the target {shown} is no longer a directory reached without a symbolic link \
                 (it, or a directory above it, is now a symbolic link or not a directory)"
            )))
        }
        Err(e) => return Err(TargetError::Host(format!("the target {shown}: {e}"))),
    };
    if let Some(id) = id {
        let st = nix::sys::stat::fstat(&dir)
            .map_err(|e| TargetError::Host(format!("the target {shown}: {e}")))?;
        let now = TargetId {
            dev: st.st_dev,
            ino: st.st_ino,
        };
        if now != id {
            return Err(TargetError::Moved(format!(
                "the target {shown} is not the directory the run began in: it is {now}, the run's \
                 was {id} (renamed or replaced since, or a bind mount that is gone)"
            )));
        }
    }
    Ok(dir)
}

/// What the operator must do for a run whose target moved: no tool finds the directory again.
pub fn moved_advice(why: &str, target: &Path, txid: &str) -> String {
    format!(
        "{why}; this run's temp files (.dot-{txid}-N.tmp) may be in that directory wherever it is \
         now, so no tool removes the run or acts on the target, and running one again will not \
         help: put the directory back at {}, then run the same command again; or remove those \
         temp files and txn/{txid} yourself",
        target.display()
    )
}

/// The temp files an ABANDONED run left in its target directory: exactly the names
/// `.dot-TXID-N.tmp` (N decimal), each our regular file with one link. The names carry the run's
/// random 128-bit id, so nothing else matches by chance.
#[derive(Debug)]
pub struct TargetTemps {
    target: PathBuf,
    dir: OwnedFd,
    rules: Rules,
    names: Vec<CString>,
}

impl TargetTemps {
    /// Finds and checks them in the target directory `target`, which must still be the directory
    /// `id` when the journal recorded it ([`open_target`]); `None` when the target is gone and
    /// the journal has no identity to say where it went (nothing to remove). A temp name that is
    /// anything but our own one-link regular file, or a target that is not the run's directory
    /// any more, retains the run with what the operator must do ([`Stop::Rule`]): dot-discard
    /// never removes it, so running dot-discard again would not help. An I/O error on the way
    /// is [`Stop::Changed`] (another pass may get past it).
    pub fn find(
        target: &Path,
        id: Option<TargetId>,
        txid: &str,
        uid: u32,
    ) -> Result<Option<TargetTemps>, Stop> {
        let failed = |e: Errno| Stop::errno(e, format!("target {}", target.display()));
        let dir = match open_target(target, id) {
            Ok(fd) => fd,
            Err(TargetError::Missing) => return Ok(None),
            Err(TargetError::Moved(why)) => {
                return Err(Stop::Rule(moved_advice(&why, target, txid)))
            }
            Err(TargetError::Host(why)) => return Err(Stop::Changed(why)),
        };
        let dev = nix::sys::stat::fstat(&dir).map_err(failed)?.st_dev;
        let mut names = list(&dir, usize::MAX).map_err(failed)?;
        names.retain(|n| proto::layout::is_target_temp(&n.to_string_lossy(), txid));
        let temps = TargetTemps {
            target: target.to_owned(),
            dir,
            rules: Rules {
                uid,
                dev,
                mnt: None,
            },
            names,
        };
        for name in &temps.names {
            temps.check(name).map_err(|stop| match stop {
                Stop::Changed(why) => Stop::Changed(why),
                Stop::Rule(why) => Stop::Rule(format!(
                    "{why}: it carries this run's temp name but is not a temp file the run wrote, \
                     so dot-discard removes neither it nor the run, and running it again will not \
                     help; inspect it, remove or move it yourself, then run dot-discard again"
                )),
            })?;
        }
        Ok(Some(temps))
    }

    /// One temp file: our regular file with one link, not setuid or setgid ([`Stop::Rule`]
    /// when not; [`Stop::Changed`] when it could not be looked at).
    fn check(&self, name: &CStr) -> Result<(), Stop> {
        let path = self.target.join(name.to_string_lossy().as_ref());
        let path = path.display().to_string();
        let st = stat_at(&self.dir, name).map_err(|e| Stop::errno(e, &path))?;
        match check_entry(&st, &path, &self.rules).map_err(Stop::Rule)? {
            Kind::File => Ok(()),
            other => Err(Stop::Rule(format!("{path} is a {}", other.word()))),
        }
    }

    /// The target directory, held open.
    pub fn dir(&self) -> &OwnedFd {
        &self.dir
    }

    /// Removes them, each checked again, then makes the target directory durable.
    pub fn remove(&self) -> Result<(), Stop> {
        for name in &self.names {
            self.check(name)
                .map_err(|stop| Stop::Changed(stop.to_string()))?;
            hooks::failpoint("remove-temp");
            unlinkat(&self.dir, name.as_c_str(), UnlinkatFlags::NoRemoveDir).map_err(|e| {
                let path = self.target.join(name.to_string_lossy().as_ref());
                Stop::errno(e, format!("could not remove {}", path.display()))
            })?;
        }
        if !self.names.is_empty() {
            nix::unistd::fsync(&self.dir)
                .map_err(|e| Stop::Changed(format!("target {}: {e}", self.target.display())))?;
        }
        Ok(())
    }
}
