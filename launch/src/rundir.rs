//! The run directory `txn/TXID/`: created private, locked for its whole life, journaled.

use crate::error::LaunchError;
use proto::journal::Record;
use proto::layout::{Root, JOURNAL_FILE, STAGE_DIR};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::PathBuf;

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

/// A fresh transaction id: 32 lowercase hex digits from the kernel's random source.
pub fn new_txid() -> Result<String, LaunchError> {
    let mut b = [0u8; 16];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| LaunchError::io("reading /dev/urandom", "/dev/urandom", e))?;
    Ok(proto::digest::hex(&b))
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Opens a directory read-only, never through a symlink.
pub fn open_dir(path: &std::path::Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_DIRECTORY | nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC)
        .open(path)
}

impl RunDir {
    /// Creates `txn/TXID/` (0700), takes its lock and checks it is still the linked directory (a
    /// concurrent `dot-discard` may have removed an empty one between mkdir and lock).
    pub fn create(root: &Root) -> Result<RunDir, LaunchError> {
        for _ in 0..8 {
            let txid = new_txid()?;
            let path = root.run_dir(&txid);
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&path)
                .map_err(|e| LaunchError::io("creating the run directory", &path, e))?;
            let lock = open_dir(&path)
                .map_err(|e| LaunchError::io("opening the run directory", &path, e))?;
            lock.lock()
                .map_err(|e| LaunchError::io("locking the run directory", &path, e))?;
            let held = lock
                .metadata()
                .map_err(|e| LaunchError::io("stat run directory", &path, e))?;
            let linked = std::fs::symlink_metadata(&path)
                .map(|m| m.ino() == held.ino() && m.dev() == held.dev());
            if !matches!(linked, Ok(true)) {
                continue;
            }
            let jpath = path.join(JOURNAL_FILE);
            let journal = OpenOptions::new()
                .append(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(nix::libc::O_CLOEXEC | nix::libc::O_NOFOLLOW)
                .open(&jpath)
                .map_err(|e| LaunchError::io("creating the journal", &jpath, e))?;
            return Ok(RunDir {
                txid,
                path,
                lock,
                journal,
                next_seq: 0,
            });
        }
        Err(LaunchError::io(
            "creating the run directory",
            root.txn(),
            std::io::Error::other("the new run directory kept disappearing"),
        ))
    }

    /// Reopens an existing run for recovery: the directory is locked (non-blocking) and the journal
    /// opened for append; `next_seq` continues after `records`.
    pub fn reopen(root: &Root, txid: &str, records: u64) -> Result<Option<RunDir>, LaunchError> {
        let path = root.run_dir(txid);
        let lock =
            open_dir(&path).map_err(|e| LaunchError::io("opening the run directory", &path, e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(LaunchError::io("locking the run directory", &path, e))
            }
        }
        let jpath = path.join(JOURNAL_FILE);
        let journal = OpenOptions::new()
            .append(true)
            .custom_flags(nix::libc::O_CLOEXEC | nix::libc::O_NOFOLLOW)
            .open(&jpath)
            .map_err(|e| LaunchError::io("opening the journal", &jpath, e))?;
        Ok(Some(RunDir {
            txid: txid.to_owned(),
            path,
            lock,
            journal,
            next_seq: records,
        }))
    }

    pub fn stage(&self) -> PathBuf {
        self.path.join(STAGE_DIR)
    }

    /// The next record's sequence number.
    pub fn seq(&self) -> u64 {
        self.next_seq
    }

    /// Appends one record; with `durable`, fsyncs the journal before returning.
    pub fn append(&mut self, record: &Record, durable: bool) -> Result<(), LaunchError> {
        let jpath = self.path.join(JOURNAL_FILE);
        self.journal
            .write_all(&record.encode())
            .map_err(|e| LaunchError::io("appending to the journal", &jpath, e))?;
        if durable {
            self.journal
                .sync_data()
                .map_err(|e| LaunchError::io("syncing the journal", &jpath, e))?;
        }
        self.next_seq += 1;
        Ok(())
    }

    /// Removes the whole run directory (it is ours and locked), then makes `txn/` durable.
    pub fn remove(self) -> Result<(), LaunchError> {
        self.remove_with(true)
    }

    /// Removes the whole run directory; with `sync_txn`, then makes `txn/` durable. A run whose
    /// journal holds only BEGIN may skip that sync: should the removal be lost in a crash, the
    /// directory comes back ABANDONED, which is what it was anyway.
    pub fn remove_with(self, sync_txn: bool) -> Result<(), LaunchError> {
        let txn = self.path.parent().map(PathBuf::from).unwrap_or_default();
        if remove_bare_layout(&self.path).is_err() {
            // Something more than the bare layout is there (inputs, outputs, files the plugin left).
            std::fs::remove_dir_all(&self.path)
                .map_err(|e| LaunchError::io("removing the run directory", &self.path, e))?;
        }
        drop(self.lock);
        if !sync_txn {
            return Ok(());
        }
        sys::fs::fsync_dir(&txn).map_err(|e| LaunchError::io("syncing txn/", &txn, e))
    }
}

/// Removes a run directory that holds exactly what every run has: the journal, `stage/in/` and
/// `stage/out/`, both empty. Five calls instead of a walk; fails (`ENOTEMPTY`) at the first
/// directory that holds anything more, leaving the rest for `remove_dir_all`.
fn remove_bare_layout(path: &std::path::Path) -> std::io::Result<()> {
    let stage = path.join(STAGE_DIR);
    std::fs::remove_file(path.join(JOURNAL_FILE))?;
    std::fs::remove_dir(stage.join("out"))?;
    std::fs::remove_dir(stage.join("in"))?;
    std::fs::remove_dir(&stage)?;
    std::fs::remove_dir(path)
}
