//! A target with a PREPARED run pending (docs/journal.md, "One commit at a time per target"): a run of this state whose journal holds a durable
//! PREPARED naming the target and no COMMITTED (its launcher died, or the COMMITTED append
//! failed). A launch into that target is refused (`target-pending`, exit 4, `next` the `recover`
//! that finishes the run) until it is resolved, so a later commit never lands between the pending
//! run's renames and `recover` never meets a target it cannot roll forward.
//!
//! Checked twice: before anything is spawned (nothing runs in vain), and at the commit under the
//! target's lock (authoritative: a run that becomes pending meanwhile is found there, whoever
//! holds its run lock, and a run that cannot be read fails the commit). Only runs of this
//! launch's own `txn/` are seen; another state directory's runs are its owner's.

use nix::errno::Errno;
use proto::journal::{classify_run, RunState, TargetId, MAX_JOURNAL};
use proto::layout::{is_txid, JOURNAL_FILE};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A run (or `txn/` itself) the authoritative check could not read: the commit cannot know
/// whether a PREPARED run is pending in its target, so it fails (an error of the host).
#[derive(Debug)]
pub struct Unreadable {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// The first run under `txn` (other than `own`) that is PREPARED into the target directory held
/// as `dir` (named `path`): by its path, by the identity its journal recorded, or by what its
/// path names now. For the check before the plugin is spawned: a run that cannot be read is
/// passed over here (the check under the target's lock, [`find_locked`], is the one that fails
/// closed), and unless `locked`, so is a run whose lock is held (it may be a live launcher
/// committing, which the commit will wait for).
pub fn find(
    txn: &Path,
    own: Option<&str>,
    path: &Path,
    dir: &std::fs::File,
    locked: bool,
) -> Option<String> {
    scan(txn, own, path, dir, locked, &mut |_| Ok(()))
        .ok()
        .flatten()
}

/// [`find`] for a caller that holds the target's commit lock. Then every PREPARED run into the
/// target is pending, whoever holds its run lock: a launcher can only be between PREPARED and
/// COMMITTED while it holds the target's lock, so a run lock held now is a `recover` (waiting
/// for the target's lock to finish it) or a `dot-discard` looking at it. It fails closed: `txn/`
/// or a run directory that cannot be listed, opened or read (anything but a name that is not
/// there) is [`Unreadable`], never taken for "no pending run".
pub fn find_locked(
    txn: &Path,
    own: Option<&str>,
    path: &Path,
    dir: &std::fs::File,
) -> Result<Option<String>, Unreadable> {
    scan(txn, own, path, dir, true, &mut Err)
}

/// The check of [`find`] and [`find_locked`]; `unread` decides what a run that could not be read
/// does (passed over, or the error).
fn scan(
    txn: &Path,
    own: Option<&str>,
    path: &Path,
    dir: &std::fs::File,
    locked: bool,
    unread: &mut dyn FnMut(Unreadable) -> Result<(), Unreadable>,
) -> Result<Option<String>, Unreadable> {
    let held = dir.metadata().map_err(|source| Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    let held = TargetId {
        dev: held.dev(),
        ino: held.ino(),
    };
    let listing = |source| Unreadable {
        path: txn.to_path_buf(),
        source,
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(txn).map_err(listing)? {
        let entry = entry.map_err(listing)?;
        if let Some(n) = entry.file_name().to_str() {
            if is_txid(n) && Some(n) != own {
                names.push(n.to_owned());
            }
        }
    }
    names.sort();
    for txid in names {
        let run = txn.join(&txid);
        let (named, id) = match prepared_target(&run, &txid, locked) {
            Ok(Some(t)) => t,
            Ok(None) => continue,
            Err(e) => {
                unread(e)?;
                continue;
            }
        };
        let same_dir = Path::new(&named) == path
            || id == Some(held)
            || nix::sys::stat::stat(Path::new(&named))
                .is_ok_and(|st| (st.st_dev, st.st_ino) == (held.dev, held.ino));
        if same_dir {
            return Ok(Some(txid));
        }
    }
    Ok(None)
}

/// The target (and its recorded identity) of the run directory `dir` when its journal says
/// PREPARED (and, unless `locked`, no one holds its lock). A run directory or journal that is not
/// there, or is not a directory or a file (a symbolic link), is no pending run; one that could not
/// be opened or read (EIO, EACCES) is [`Unreadable`].
fn prepared_target(
    dir: &Path,
    txid: &str,
    locked: bool,
) -> Result<Option<(String, Option<TargetId>)>, Unreadable> {
    let unreadable = |path: PathBuf| {
        move |e: Errno| Unreadable {
            path,
            source: e.into(),
        }
    };
    // Not there (a run that just finished, one that never wrote a journal), or not a directory
    // or journal of a run at all (a file, a symbolic link: recover retains those, it never rolls
    // them forward), is no pending run.
    let fd = match sys::fs::open_dir(dir) {
        Ok(fd) => std::fs::File::from(fd),
        Err(Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP) => return Ok(None),
        Err(e) => return Err(unreadable(dir.to_path_buf())(e)),
    };
    let found = journal_prepared(&fd, dir, txid)?;
    if locked || found.is_none() {
        return Ok(found);
    }
    // A PREPARED read without the run's lock decides nothing: a launcher holds its lock from
    // before BEGIN until its run is gone, and may have committed, removed its run and let go
    // since. So the lock is taken (held: a live launcher, passed over), the run must still be
    // the directory linked at its name, and the journal is read again while the lock is held.
    // (Deciding on the first read, a launcher finishing in between was taken for pending.)
    match fd.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(Unreadable {
                path: dir.to_path_buf(),
                source: e,
            })
        }
    }
    match (fd.metadata(), std::fs::symlink_metadata(dir)) {
        (Ok(held), Ok(linked)) if (held.dev(), held.ino()) == (linked.dev(), linked.ino()) => {}
        _ => return Ok(None),
    }
    journal_prepared(&fd, dir, txid)
}

/// The target (and its recorded identity) named by the journal of the open run directory `fd`
/// (at `dir`) when the journal says PREPARED; a journal that is not there or not a file is none.
fn journal_prepared(
    fd: &std::fs::File,
    dir: &Path,
    txid: &str,
) -> Result<Option<(String, Option<TargetId>)>, Unreadable> {
    let journal_path = dir.join(JOURNAL_FILE);
    let journal = match sys::fs::open_read_at(fd, JOURNAL_FILE) {
        Ok(j) => std::fs::File::from(j),
        Err(Errno::ENOENT | Errno::ELOOP) => return Ok(None),
        Err(e) => {
            return Err(Unreadable {
                path: journal_path,
                source: e.into(),
            })
        }
    };
    let read = |source| Unreadable {
        path: journal_path.clone(),
        source,
    };
    if !journal.metadata().map_err(read)?.is_file() {
        return Ok(None);
    }
    let bytes = sys::fs::read_at_most(&journal, MAX_JOURNAL as u64 + 1).map_err(read)?;
    let journal = classify_run(&bytes, txid);
    if journal.state != RunState::Prepared {
        return Ok(None);
    }
    Ok(journal.target().map(|(target, id)| (target.to_owned(), id)))
}
