//! A target with a PREPARED run pending (docs/journal.md, "One commit at a time per target"): a run of this state whose journal holds a durable
//! PREPARED naming the target and no COMMITTED (its launcher died, or the COMMITTED append
//! failed). A launch into that target is refused (`target-pending`, exit 4, `next` the `recover`
//! that finishes the run) until it is resolved, so a later commit never lands between the pending
//! run's renames and `recover` never meets a target it cannot roll forward.
//!
//! Checked twice: before anything is spawned (nothing runs in vain), and at the commit under the
//! target's lock (authoritative: a run that becomes pending meanwhile is found there, whoever
//! holds its run lock). Only runs
//! of this launch's own `txn/` are seen; another state directory's runs are its owner's.

use proto::journal::{classify_run, Record, RunState, MAX_JOURNAL};
use proto::layout::{is_txid, JOURNAL_FILE};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The first run under `txn` (other than `own`) that is PREPARED into the target directory held
/// as `dir` (named `path`), by the directory's identity or its path. A run that cannot be read is
/// passed over: this check adds a refusal, it never removes one of `recover`'s or `dot-discard`'s.
///
/// `locked`: the caller holds the target's commit lock. Then every PREPARED run into the target is
/// pending, whoever holds its run lock: a launcher can only be between PREPARED and COMMITTED
/// while it holds the target's lock, so a run lock held now is a `recover` (waiting for the
/// target's lock to finish it) or a `dot-discard` looking at it. Without the target's lock (the
/// check before the plugin is spawned), a run whose lock is held is passed over: it may be a live
/// launcher committing, which the commit will wait for.
pub fn find(
    txn: &Path,
    own: Option<&str>,
    path: &Path,
    dir: &std::fs::File,
    locked: bool,
) -> Option<String> {
    let held = dir.metadata().ok()?;
    let mut names: Vec<String> = std::fs::read_dir(txn)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_txid(n) && Some(n.as_str()) != own)
        .collect();
    names.sort();
    names.into_iter().find(|txid| {
        let Some(named) = prepared_target(&txn.join(txid), txid, locked) else {
            return false;
        };
        Path::new(&named) == path
            || nix::sys::stat::stat(Path::new(&named))
                .is_ok_and(|st| (st.st_dev, st.st_ino) == (held.dev(), held.ino()))
    })
}

/// The target of the run directory `dir` when its journal says PREPARED (and, unless `locked`,
/// no one holds its lock).
fn prepared_target(dir: &Path, txid: &str, locked: bool) -> Option<String> {
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
    if locked {
        return Some(target);
    }
    // Taken and let go at once; a lock held may be a live launcher's.
    fd.try_lock().ok().map(|()| target)
}
