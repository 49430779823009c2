//! The run directory `txn/TXID/`: created private, locked for its whole life, journaled, and
//! removed by the same rules `dot-discard` keeps (`crate::run`): everything but the journal
//! first, the journal last, the directory after, with a bounded number of descriptors whatever
//! the plugin left in the stage.
//!
//! Its launcher ends it exactly once: [`RunDir::remove`] (or `remove_with`) for a run that
//! failed before PREPARED or committed, or by dropping it (the lock released, the directory kept)
//! for a run `dot-launch recover` must finish. A removal that fails is reported ([`NotRemoved`]),
//! which a `Drop` could not do: so the end is a call, not a destructor.

use crate::hooks::inject;
use crate::run::{open_txn, Inspected, RunFiles, JOURNAL};
use crate::tree::Stop;
use proto::journal::{Record, RecordKind};
use proto::layout::{Root, JOURNAL_FILE, STAGE_DIR};
use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A live, locked run directory.
#[derive(Debug)]
pub struct RunDir {
    pub txid: String,
    pub path: PathBuf,
    /// The directory itself, opened read-only and holding the exclusive flock.
    lock: File,
    journal: File,
    next_seq: u64,
}

/// A run directory that could not be removed: it stays for the operator, and the launch says so
/// (`cleanup-retained`), never silently.
#[derive(Debug)]
pub struct NotRemoved {
    pub txid: String,
    pub path: PathBuf,
    /// Why: a rule the run breaks (the operator's to resolve), or a change or failure that a
    /// later `dot-discard` or `recover` may get past.
    pub stop: Stop,
}

impl std::fmt::Display for NotRemoved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the run directory {} is retained: {}",
            self.path.display(),
            self.stop
        )
    }
}

/// Why a run directory step failed.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// A call failed at `step` on `path`.
    #[error("{step}: {path}: {source}")]
    Io {
        step: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// `create` failed with `cause` and the directory it made could not be removed again.
    #[error("{cause}; {retained}")]
    Retained {
        retained: NotRemoved,
        cause: Box<RunDirError>,
    },
}

impl RunDirError {
    fn io(step: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> RunDirError {
        RunDirError::Io {
            step,
            path: path.into(),
            source,
        }
    }
}

/// A fresh transaction id: 32 lowercase hex digits from the kernel's random source.
pub fn new_txid() -> Result<String, RunDirError> {
    let b: [u8; 16] = sys::fs::random_bytes()
        .map_err(|e| RunDirError::io("getting random bytes", "getrandom", e))?;
    Ok(proto::digest::hex(&b))
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

impl RunDir {
    /// Creates `txn/TXID/` (0700), takes its lock, checks it is still the linked directory (a
    /// concurrent `dot-discard` may have removed it, empty, between mkdir and lock: then it starts
    /// over with a new TXID) and creates the journal. If anything after the mkdir fails, the directory is removed again (it is
    /// empty); if even that fails, the error says the directory is retained.
    pub fn create(root: &Root) -> Result<RunDir, RunDirError> {
        for _ in 0..8 {
            let txid = new_txid()?;
            let path = root.run_dir(&txid);
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&path)
                .map_err(|e| RunDirError::io("creating the run directory", &path, e))?;
            let lock = match Self::lock_new(&path) {
                Ok(Some(lock)) => lock,
                Ok(None) => continue,
                Err(e) => return Err(Self::unmake(&txid, &path, e)),
            };
            let jpath = path.join(JOURNAL_FILE);
            let journal = inject("create-journal")
                .and_then(|()| sys::fs::create_new(&jpath, 0o600))
                .map_err(|e| RunDirError::io("creating the journal", &jpath, e));
            match journal {
                Ok(journal) => {
                    return Ok(RunDir {
                        txid,
                        path,
                        lock,
                        journal,
                        next_seq: 0,
                    })
                }
                Err(e) => return Err(Self::unmake(&txid, &path, e)),
            }
        }
        Err(RunDirError::io(
            "creating the run directory",
            root.txn(),
            std::io::Error::other("the new run directory kept disappearing"),
        ))
    }

    /// Opens and locks the new directory at `path`; `None` when it is no longer the one linked
    /// there (`dot-discard` removes an empty run directory it can lock: this one, before its
    /// launcher held the lock).
    fn lock_new(path: &Path) -> Result<Option<File>, RunDirError> {
        let lock = match sys::fs::open_dir(path).map(File::from) {
            Ok(lock) => lock,
            Err(nix::errno::Errno::ENOENT) => return Ok(None),
            Err(e) => return Err(RunDirError::io("opening the run directory", path, e.into())),
        };
        lock.lock()
            .map_err(|e| RunDirError::io("locking the run directory", path, e))?;
        let held = lock
            .metadata()
            .map_err(|e| RunDirError::io("stat run directory", path, e))?;
        let linked =
            std::fs::symlink_metadata(path).map(|m| m.ino() == held.ino() && m.dev() == held.dev());
        Ok(matches!(linked, Ok(true)).then_some(lock))
    }

    /// Removes the (empty) directory `create` made before it failed with `err`.
    fn unmake(txid: &str, path: &Path, err: RunDirError) -> RunDirError {
        match std::fs::remove_dir(path) {
            Ok(()) => err,
            Err(e) => RunDirError::Retained {
                retained: NotRemoved {
                    txid: txid.to_owned(),
                    path: path.to_owned(),
                    stop: Stop::Changed(format!("could not remove it: {e}")),
                },
                cause: Box::new(err),
            },
        }
    }

    /// Takes over a run `dot-launch recover` inspected (open, locked, journaled): the journal is
    /// opened for append (the inode inspected) and `next_seq` continues after its records.
    pub fn adopt(root: &Root, run: Inspected) -> Result<RunDir, RunDirError> {
        let path = root.run_dir(&run.txid);
        let jpath = path.join(JOURNAL_FILE);
        let Some((inspected, journal)) = &run.journal else {
            return Err(RunDirError::io(
                "opening the journal",
                &jpath,
                std::io::Error::from(std::io::ErrorKind::NotFound),
            ));
        };
        let flags = nix::fcntl::OFlag::O_WRONLY
            | nix::fcntl::OFlag::O_APPEND
            | nix::fcntl::OFlag::O_NOFOLLOW
            | nix::fcntl::OFlag::O_CLOEXEC;
        let file = nix::fcntl::openat(&run.dir, JOURNAL, flags, nix::sys::stat::Mode::empty())
            .map(File::from)
            .map_err(|e| RunDirError::io("opening the journal", &jpath, e.into()))?;
        let held = file
            .metadata()
            .map_err(|e| RunDirError::io("opening the journal", &jpath, e))?;
        if (held.dev(), held.ino()) != (inspected.st_dev, inspected.st_ino) {
            return Err(RunDirError::io(
                "opening the journal",
                &jpath,
                std::io::Error::other("the journal was replaced after it was read"),
            ));
        }
        // A torn last line (an append cut short: ENOSPC, a crash) is not a record: it is cut off
        // before anything is appended, so the next record starts a line of its own and the
        // journal reads as the records it holds.
        if let Some(torn) = journal.torn_tail {
            let whole = held.len().saturating_sub(torn as u64);
            file.set_len(whole)
                .and_then(|()| file.sync_data())
                .map_err(|e| RunDirError::io("cutting the journal's torn tail", &jpath, e))?;
        }
        Ok(RunDir {
            next_seq: journal.records().count() as u64,
            txid: run.txid,
            path,
            lock: run.dir,
            journal: file,
        })
    }

    pub fn stage(&self) -> PathBuf {
        self.path.join(STAGE_DIR)
    }

    /// The next record's sequence number.
    pub fn seq(&self) -> u64 {
        self.next_seq
    }

    /// Appends one record; with `durable`, fsyncs the journal before returning.
    pub fn append(&mut self, record: &Record, durable: bool) -> Result<(), RunDirError> {
        let jpath = self.path.join(JOURNAL_FILE);
        let step = match record.kind() {
            RecordKind::Begin => "append-begin",
            RecordKind::Prepared => "append-prepared",
            RecordKind::Committed => "append-committed",
        };
        inject(step)
            .and_then(|()| self.journal.write_all(&record.encode()))
            .map_err(|e| RunDirError::io("appending to the journal", &jpath, e))?;
        if durable {
            self.journal
                .sync_data()
                .map_err(|e| RunDirError::io("syncing the journal", &jpath, e))?;
        }
        self.next_seq += 1;
        Ok(())
    }

    /// Makes the journal so far durable, with its name and the run directory's: the journal, the
    /// run directory and `txn/` are fsynced. Called before the first temp file is created in the
    /// target, so a run that touched a target is always found with its BEGIN (which names that
    /// target) after a crash, and its temp files can be removed.
    pub fn sync_intent(&mut self) -> Result<(), RunDirError> {
        let jpath = self.path.join(JOURNAL_FILE);
        self.journal
            .sync_data()
            .map_err(|e| RunDirError::io("syncing the journal", &jpath, e))?;
        self.lock
            .sync_all()
            .map_err(|e| RunDirError::io("syncing the run directory", &self.path, e))?;
        let txn = self.txn();
        sys::fs::fsync_dir(&txn).map_err(|e| RunDirError::io("syncing txn/", &txn, e))
    }

    /// The `txn/` directory this run is in.
    pub fn txn(&self) -> PathBuf {
        self.path.parent().map(PathBuf::from).unwrap_or_default()
    }

    /// Removes the whole run directory (it is ours and locked), then makes `txn/` durable.
    pub fn remove(self) -> Result<(), NotRemoved> {
        self.remove_with(true)
    }

    /// Removes the whole run directory by `dot-discard`'s rules ([`RunFiles`]):
    /// everything under `stage/` is checked first and nothing is removed if anything breaks a rule
    /// (a symbolic link, fifo, socket, device, setuid or setgid, hard-linked or foreign-owned
    /// file, another filesystem); then `stage/`, the journal last, the directory after. With
    /// `sync_txn`, `txn/` is then made durable. A run whose journal holds only BEGIN may skip
    /// that sync: should the removal be lost in a crash, the directory comes back ABANDONED,
    /// which is what it was anyway.
    pub fn remove_with(self, sync_txn: bool) -> Result<(), NotRemoved> {
        let not_removed = |why: String| NotRemoved {
            txid: self.txid.clone(),
            path: self.path.clone(),
            stop: Stop::Changed(why),
        };
        let uid = euid();
        let txn_path = self.txn();
        let txn = open_txn(&txn_path, uid).map_err(|e| not_removed(e.to_string()))?;
        let name = CString::new(self.txid.as_str()).map_err(|e| not_removed(e.to_string()))?;
        let journal = nix::sys::stat::fstat(&self.journal)
            .map_err(|e| not_removed(format!("{JOURNAL_FILE}: {e}")))?;
        let files = RunFiles {
            txn: &txn,
            name: &name,
            dir: &self.lock,
            journal: Some(&journal),
            uid,
        };
        files.remove(|| Ok(())).map_err(|stop| NotRemoved {
            txid: self.txid.clone(),
            path: self.path.clone(),
            stop,
        })?;
        if !sync_txn {
            return Ok(());
        }
        nix::unistd::fsync(&txn)
            .map_err(|e| not_removed(format!("removed, but syncing txn/ failed: {e}")))
    }
}
