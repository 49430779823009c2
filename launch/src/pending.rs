//! A target with a PREPARED run pending: a run of this state whose journal holds a durable
//! PREPARED naming the target and no COMMITTED (its launcher died, or the COMMITTED append
//! failed). A launch into that target is refused (`target-pending`, exit 4, `next` the `recover`
//! that finishes the run) until it is resolved, so a later commit never lands between the pending
//! run's renames and `recover` never meets a target it cannot roll forward.
//!
//! Checked twice: before anything is spawned (nothing runs in vain), and at the commit under the
//! target's lock (authoritative: a run that becomes pending meanwhile is found there). A run
//! whose lock is held is live (committing, or being recovered) and is not pending. Only runs
//! of this launch's own `txn/` are seen; another state directory's runs are its owner's.

use crate::target::Target;
use proto::journal::{classify_run, Record, RunState, MAX_JOURNAL};
use proto::layout::{is_txid, JOURNAL_FILE};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The first run under `txn` (other than `own`) that is PREPARED into `target`, by its
/// directory's identity or its path. A run that cannot be read is passed over: this check adds a
/// refusal, it never removes one of `recover`'s or `dot-discard`'s.
pub fn find(txn: &Path, own: Option<&str>, target: &Target) -> Option<String> {
    let held = target.dir.metadata().ok()?;
    let mut names: Vec<String> = std::fs::read_dir(txn)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_txid(n) && Some(n.as_str()) != own)
        .collect();
    names.sort();
    names.into_iter().find(|txid| {
        let Some(named) = prepared_target(&txn.join(txid), txid) else {
            return false;
        };
        Path::new(&named) == target.path
            || nix::sys::stat::stat(Path::new(&named))
                .is_ok_and(|st| (st.st_dev, st.st_ino) == (held.dev(), held.ino()))
    })
}

/// The target of the run directory `dir` when its journal says PREPARED and no launcher holds
/// its lock (a live run between its PREPARED and its COMMITTED is committing, not pending: it
/// holds the target's commit lock, which a launch waits for).
fn prepared_target(dir: &Path, txid: &str) -> Option<String> {
    let fd = std::fs::File::from(sys::fs::open_dir(dir).ok()?);
    let journal = sys::fs::open_read_at(&fd, JOURNAL_FILE).ok()?;
    let file = std::fs::File::from(journal);
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let bytes = sys::fs::read_at_most(&file, MAX_JOURNAL as u64 + 1).ok()?;
    let journal = classify_run(&bytes, txid);
    if journal.state != RunState::Prepared {
        return None;
    }
    let target = match journal.prepared() {
        Some(Record::Prepared { target, .. }) => target.clone(),
        _ => return None,
    };
    // Taken and let go at once; a lock held (its launcher, or a recover finishing it) is live.
    fd.try_lock().ok().map(|()| target)
}
