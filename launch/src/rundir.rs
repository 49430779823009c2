//! A launch's end of its run directory (`txn::rundir::RunDir`, the store's): exactly once, in one
//! place (`run::launch`): [`End::abandon`] for a run that failed before PREPARED,
//! [`End::finish`] for a committed one, or by dropping it (the lock released, the directory kept)
//! for a run `dot-launch recover` must finish. A removal that fails is reported
//! (`cleanup-retained`), never silently.

use crate::error::LaunchError;
use proto::result::{RunResult, Warning};
pub use txn::rundir::{new_txid, now_ms, NotRemoved, RunDir, RunDirError};

/// How a launch ends its run directory.
pub trait End {
    /// Ends a run that failed before PREPARED (nothing in any target changed): its directory is
    /// removed and `err` comes back. When the directory cannot be removed, the failure comes back
    /// as `cleanup-retained` (exit 4) carrying the run directory and why, never silently.
    fn abandon(self, err: LaunchError) -> LaunchError;

    /// Ends a committed run: its directory is removed (`txn/` synced with `sync_txn`). When it
    /// cannot be, the run is still committed: the result carries a `cleanup-retained` warning
    /// (and exits 4), never an error that hides the commit.
    fn finish(self, sync_txn: bool, result: &mut RunResult);
}

impl End for RunDir {
    fn abandon(self, err: LaunchError) -> LaunchError {
        match self.remove() {
            Ok(()) => err,
            Err(retained) => LaunchError::CleanupRetained {
                retained,
                cause: Some(Box::new(err)),
            },
        }
    }

    fn finish(self, sync_txn: bool, result: &mut RunResult) {
        if let Err(retained) = self.remove_with(sync_txn) {
            result
                .warnings
                .push(Warning::of(&LaunchError::CleanupRetained {
                    retained,
                    cause: None,
                }));
        }
    }
}

impl From<RunDirError> for LaunchError {
    fn from(e: RunDirError) -> LaunchError {
        match e {
            RunDirError::Io { step, path, source } => LaunchError::Io { step, path, source },
            RunDirError::Retained { retained, cause } => LaunchError::CleanupRetained {
                retained,
                cause: Some(Box::new(LaunchError::from(*cause))),
            },
        }
    }
}
