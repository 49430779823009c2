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
    /// Finds and checks them; `None` when the target is gone (nothing to remove). A temp name
    /// that is anything but our own one-link regular file retains the run, with what the operator
    /// must do: dot-discard never removes it, so running dot-discard again would not help.
    /// An I/O error on the way is [`Stop::Changed`] (another pass may get past it); a name that
    /// is not a temp file the run wrote is [`Stop::Rule`].
    pub fn find(target: &Path, txid: &str, uid: u32) -> Result<Option<TargetTemps>, Stop> {
        let failed = |e: Errno| Stop::errno(e, format!("target {}", target.display()));
        let dir = match sys::fs::open_dir_nofollow(target) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(None),
            Err(e) => return Err(failed(e)),
        };
        let dev = nix::sys::stat::fstat(&dir).map_err(failed)?.st_dev;
        let mut names = list(&dir, usize::MAX).map_err(failed)?;
        names.retain(|n| proto::layout::is_target_temp(&n.to_string_lossy(), txid));
        let temps = TargetTemps {
            target: target.to_owned(),
            dir,
            rules: Rules { uid, dev },
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
