//! One run directory, examined and removed by the same rules wherever that happens:
//! `dot-discard`, `dot-launch recover`, and `dot-launch` removing its own run.
//!
//! [`inspect`] opens, checks, locks and reads a run (steps 1–6 of the crate's list) and says what
//! it is; [`RunFiles`] checks and removes one: everything under `stage/` (checked whole first,
//! then removed with every entry checked again), then the journal, then the directory.

use crate::tree::{self, check_entry, list, same, stat_at, Kind, Pass, Rules, Stop};
use crate::TxnError;
use nix::errno::Errno;
use nix::sys::stat::{fstat, FileStat};
use nix::unistd::{unlinkat, UnlinkatFlags};
use proto::journal::{classify_run, Journal, RunState, MAX_JOURNAL};
use proto::layout::{is_txid, JOURNAL_FILE, STAGE_DIR};
use proto::retained::State;
use std::ffi::{CStr, CString};
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::Path;
use sys::fs::open_dir_at;

/// `journal` as a C string.
pub const JOURNAL: &CStr = c"journal";
/// `stage` as a C string.
pub const STAGE: &CStr = c"stage";

/// Opens `txn/` (not through a symbolic link) and checks it is ours and not writable by others.
pub fn open_txn(path: &Path, uid: u32) -> Result<OwnedFd, TxnError> {
    let txn = match sys::fs::open_dir(path) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Err(TxnError::NoTxn { path: path.into() }),
        // The root itself is not a directory (a file given as `--root`).
        Err(Errno::ENOTDIR) if path.parent().is_some_and(|root| !root.is_dir()) => {
            return Err(TxnError::NoTxn { path: path.into() })
        }
        Err(Errno::ELOOP | Errno::ENOTDIR) => {
            return Err(TxnError::UnsafeTxn {
                path: path.into(),
                why: "it is a symbolic link or not a directory".into(),
            })
        }
        // Another user's private state: not ours to examine, let alone change.
        Err(Errno::EACCES) => {
            return Err(TxnError::UnsafeTxn {
                path: path.into(),
                why: "we may not open it (permission denied): it is not ours".into(),
            })
        }
        Err(source) => {
            return Err(TxnError::OpenTxn {
                path: path.into(),
                source,
            })
        }
    };
    let st = fstat(&txn).map_err(|source| TxnError::OpenTxn {
        path: path.into(),
        source,
    })?;
    if st.st_uid != uid {
        return Err(TxnError::UnsafeTxn {
            path: path.into(),
            why: format!("it is owned by uid {}, not {uid}", st.st_uid),
        });
    }
    if st.st_mode & 0o022 != 0 {
        return Err(TxnError::UnsafeTxn {
            path: path.into(),
            why: format!(
                "it is writable by group or others (mode {:o})",
                st.st_mode & 0o7777
            ),
        });
    }
    Ok(txn)
}

/// What [`inspect`] found at one entry of `txn/`.
#[derive(Debug)]
pub enum Inspection {
    /// It vanished before it could be examined (its run finished): nothing to report.
    Gone,
    /// It is left in place, in this state, for this reason.
    Retain(State, String),
    /// A run that obeys every rule, open and locked, in the state its journal says.
    Found(Box<Inspected>),
}

/// A run directory that passed [`inspect`]: open, locked (the lock lasts as long as `dir`).
#[derive(Debug)]
pub struct Inspected {
    pub txid: String,
    pub name: CString,
    /// The run directory, holding its exclusive lock.
    pub dir: File,
    pub dir_stat: FileStat,
    /// The journal's inode and what it says; `None` for an empty run directory (a removal that
    /// stopped after the journal, or a launch before its journal existed).
    pub journal: Option<(FileStat, Journal)>,
}

impl Inspected {
    /// The run's state; an empty run directory is ABANDONED.
    pub fn state(&self) -> RunState {
        self.journal
            .as_ref()
            .map(|(_, j)| j.state)
            .unwrap_or(RunState::Abandoned)
    }

    /// The run's files, to check or remove.
    pub fn files<'a>(&'a self, txn: &'a OwnedFd, uid: u32) -> RunFiles<'a> {
        RunFiles {
            txn,
            name: &self.name,
            dir: &self.dir,
            journal: self.journal.as_ref().map(|(st, _)| st),
            uid,
        }
    }
}

/// An error of the host (EIO, out of memory or descriptors) rather than something about the run:
/// another pass may get past it.
fn transient(e: Errno) -> bool {
    !matches!(
        e,
        Errno::ENOENT
            | Errno::ENOTDIR
            | Errno::ELOOP
            | Errno::EACCES
            | Errno::EPERM
            | Errno::EROFS
            | Errno::EINVAL
    )
}

/// Retains with the reason, as UNREADABLE when an I/O error of the host is why.
fn failed(e: Errno, why: String) -> Inspection {
    if transient(e) {
        Inspection::Retain(
            State::Unreadable,
            format!("{why} (an I/O error: another pass may get past it)"),
        )
    } else {
        Inspection::Retain(State::Unrecognized, why)
    }
}

/// Examines the entry `name` of `txn/` for a tool that may act on it; the first step that fails
/// retains it with the reason:
/// 1. the name is a transaction id;
/// 2. it opens with `O_DIRECTORY|O_NOFOLLOW`, is owned by `uid` and has no group or other bits;
/// 3. its lock (flock, exclusive, non-blocking, on the open directory) can be taken (else LIVE),
///    and it is still the directory linked at `name` (else it is gone);
/// 4. `journal` is our regular file, one link, not group/other-writable, at most 4 MiB — or there
///    is no journal and nothing else either (an empty run directory);
/// 5. the journal, read with [`classify_run`], is not UNRECOGNIZED (which also checks that BEGIN
///    names this run and PREPARED only this run's temp files and one-component names).
///
/// A journal that holds no complete record (empty, or a torn first line) is ABANDONED whatever
/// the stage holds: a launcher makes BEGIN durable before it creates anything in a target, so a
/// run without a record touched no target (a power cut can keep the run directory, a 0-byte
/// journal and a copied input while BEGIN's bytes are lost). Its stage is removed by the same
/// rules as any other.
pub fn inspect(txn: &OwnedFd, name: &CStr, uid: u32) -> Inspection {
    let txid = name.to_string_lossy().into_owned();
    let (dir, dir_stat) = match open_run(txn, name, &txid, uid) {
        Ok(opened) => opened,
        Err(not) => return not,
    };
    match dir.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Inspection::Retain(
                State::Live,
                "locked (live): its dot-launch holds the run's lock".into(),
            )
        }
        Err(std::fs::TryLockError::Error(e)) => {
            let errno = Errno::from_raw(e.raw_os_error().unwrap_or(0));
            return failed(errno, format!("cannot take the lock: {e}"));
        }
    }
    // Its launcher may have removed it and let go of the lock between our open and our lock:
    // only a name that is not there, or that names another directory now, means that. A look
    // that failed (EIO) says nothing about the run, which is still there to be examined again.
    match stat_at(txn, name) {
        Ok(st) if same(&st, &dir_stat) => {}
        Ok(_) | Err(Errno::ENOENT) => return Inspection::Gone,
        Err(e) => return failed(e, format!("cannot look it up again after its lock: {e}")),
    }
    let journal = match run_journal(&dir, &dir_stat, &txid, uid) {
        Ok(journal) => journal,
        Err(not) => return not,
    };
    if let Some((_, j)) = &journal {
        if j.state == RunState::Unrecognized {
            let why = j
                .problem
                .clone()
                .unwrap_or_else(|| "the journal is not recognized".into());
            return Inspection::Retain(State::Unrecognized, why);
        }
    }
    Inspection::Found(Box::new(Inspected {
        txid,
        name: name.to_owned(),
        dir,
        dir_stat,
        journal,
    }))
}

/// Steps 1 and 2 of [`inspect`]: the name is a transaction id, and it opens as a directory of
/// `uid`'s without group or other permission bits.
fn open_run(
    txn: &OwnedFd,
    name: &CStr,
    txid: &str,
    uid: u32,
) -> Result<(File, FileStat), Inspection> {
    use State::Unrecognized;
    let retain = |state, why: String| Err(Inspection::Retain(state, why));
    if !is_txid(txid) {
        return retain(Unrecognized, "not a transaction id".into());
    }
    let fd = match open_dir_at(txn, name) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Err(Inspection::Gone),
        Err(e @ (Errno::ELOOP | Errno::ENOTDIR)) => {
            let what = stat_at(txn, name)
                .map(|st| Kind::of(&st).word())
                .unwrap_or(e.desc());
            return retain(Unrecognized, format!("is a {what}, not a directory"));
        }
        Err(e) => return Err(failed(e, format!("cannot open: {e}"))),
    };
    let dir = File::from(fd);
    let dir_stat = match fstat(&dir) {
        Ok(st) => st,
        Err(e) => return Err(failed(e, format!("cannot stat: {e}"))),
    };
    if dir_stat.st_uid != uid {
        return retain(
            Unrecognized,
            format!(
                "the run directory is owned by uid {}, not {uid}",
                dir_stat.st_uid
            ),
        );
    }
    if dir_stat.st_mode & 0o077 != 0 {
        return retain(
            Unrecognized,
            format!(
                "the run directory gives access to group or others (mode {:o})",
                dir_stat.st_mode & 0o7777
            ),
        );
    }
    Ok((dir, dir_stat))
}

/// Steps 4 and 5 of [`inspect`] (the journal classified, UNRECOGNIZED included; `None` for an
/// empty run directory).
fn run_journal(
    dir: &File,
    dir_stat: &FileStat,
    txid: &str,
    uid: u32,
) -> Result<Option<(FileStat, Journal)>, Inspection> {
    let rules = Rules {
        uid,
        dev: dir_stat.st_dev,
        mnt: None,
    };
    match read_journal(dir, &rules) {
        Ok(Some((st, bytes))) => Ok(Some((st, classify_run(&bytes, txid)))),
        Ok(None) => match list(dir, 1) {
            Ok(names) if names.is_empty() => Ok(None),
            Ok(_) => Err(Inspection::Retain(State::Unrecognized, "no journal".into())),
            Err(e) => Err(failed(e, format!("cannot list: {e}"))),
        },
        Err((Some(e), why)) => Err(failed(e, why)),
        Err((None, why)) => Err(Inspection::Retain(State::Unrecognized, why)),
    }
}

/// Why a journal was not read: the errno when an I/O error of the host is why, and the reason.
type NotRead = (Option<Errno>, String);

/// Reads `journal` after checking it: our regular file, one link, not writable by group or
/// others, no larger than the classifier reads. `None`: there is no journal.
fn read_journal(dir: &File, rules: &Rules) -> Result<Option<(FileStat, Vec<u8>)>, NotRead> {
    let rule = |why: String| (None, why);
    let io = |e: Errno| (Some(e), format!("{JOURNAL_FILE}: {e}"));
    let st = match stat_at(dir, JOURNAL) {
        Ok(st) => st,
        Err(Errno::ENOENT) => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    match check_entry(&st, JOURNAL_FILE, rules).map_err(rule)? {
        Kind::File => {}
        other => return Err(rule(format!("{JOURNAL_FILE} is a {}", other.word()))),
    }
    if st.st_mode & 0o022 != 0 {
        return Err(rule(format!(
            "{JOURNAL_FILE} is writable by group or others (mode {:o})",
            st.st_mode & 0o7777
        )));
    }
    if u64::try_from(st.st_size).unwrap_or(u64::MAX) > MAX_JOURNAL as u64 {
        return Err(rule(format!(
            "{JOURNAL_FILE} is {} bytes, over {MAX_JOURNAL}",
            st.st_size
        )));
    }
    let fd = sys::fs::open_read_at(dir, JOURNAL).map_err(io)?;
    let file = File::from(fd);
    let held = fstat(&file).map_err(io)?;
    if !same(&held, &st) {
        return Err(rule(format!("{JOURNAL_FILE} changed during the check")));
    }
    let bytes = sys::fs::read_at_most(&file, MAX_JOURNAL as u64 + 1)
        .map_err(|e| io(Errno::from_raw(e.raw_os_error().unwrap_or(libc_eio()))))?;
    Ok(Some((st, bytes)))
}

/// EIO, for a read error without an errno.
fn libc_eio() -> i32 {
    Errno::EIO as i32
}

/// The files of one run directory `name` of `txn/`, held open (and locked) as `dir`: what
/// [`RunFiles::check`] checks and [`RunFiles::remove`] removes.
#[derive(Debug)]
pub struct RunFiles<'a> {
    pub txn: &'a OwnedFd,
    pub name: &'a CStr,
    pub dir: &'a File,
    /// The journal's inode, when the run has one: the one removed last.
    pub journal: Option<&'a FileStat>,
    /// Whose files may be removed.
    pub uid: u32,
}

impl RunFiles<'_> {
    /// Checks, changing nothing: `dir` is still the directory linked at `name`; it holds exactly
    /// `journal` (that inode; none when `journal` is `None`) and, optionally, `stage/`; everything
    /// under `stage/`, at any depth, passes [`tree::removable`]. Returns the rules the removal
    /// keeps to.
    pub fn check(&self) -> Result<Rules, Stop> {
        let changed = |what: String| Stop::Changed(what);
        let held = fstat(self.dir).map_err(|e| changed(format!("the run directory: {e}")))?;
        match stat_at(self.txn, self.name) {
            Ok(st) if same(&st, &held) => {}
            Ok(_) => return Err(changed("the run directory was replaced".into())),
            Err(e) => return Err(changed(format!("the run directory: {e}"))),
        }
        // A directory mounted at `txn/TXID` (a bind mount of the same filesystem shows its
        // device) is not a run directory: nothing in it is ours to remove.
        let mnt = tree::mount_id(self.dir)
            .map_err(|e| changed(format!("the run directory's mount id: {e}")))?;
        let txn_mnt =
            tree::mount_id(self.txn).map_err(|e| changed(format!("txn/'s mount id: {e}")))?;
        if mnt != txn_mnt {
            return Err(Stop::Rule(format!(
                "the run directory is a mount point (mount {mnt}, not txn/'s {txn_mnt})"
            )));
        }
        let rules = Rules {
            uid: self.uid,
            dev: held.st_dev,
            mnt: Some(mnt),
        };
        let names = list(self.dir, 3).map_err(|e| changed(format!("cannot list: {e}")))?;
        let mut has_journal = false;
        let mut has_stage = false;
        for n in &names {
            if n.as_c_str() == JOURNAL && self.journal.is_none() {
                return Err(changed(format!("{JOURNAL_FILE} appeared")));
            } else if n.as_c_str() == JOURNAL {
                has_journal = true;
            } else if n.as_c_str() == STAGE {
                has_stage = true;
            } else {
                return Err(Stop::Rule(format!(
                    "unexpected entry {} in the run directory",
                    n.to_string_lossy()
                )));
            }
        }
        if let Some(expected) = self.journal {
            if !has_journal {
                return Err(changed(format!("{JOURNAL_FILE} vanished")));
            }
            let now =
                stat_at(self.dir, JOURNAL).map_err(|e| changed(format!("{JOURNAL_FILE}: {e}")))?;
            if !same(&now, expected) {
                return Err(changed(format!("{JOURNAL_FILE} was replaced")));
            }
        }
        if has_stage {
            let stage = self.open_stage(&rules)?;
            tree::walk(&stage, STAGE_DIR, &rules, Pass::Check)?;
        }
        Ok(rules)
    }

    /// Opens `stage/` after checking it is our directory on the run's filesystem.
    fn open_stage(&self, rules: &Rules) -> Result<OwnedFd, Stop> {
        let changed = |e: Errno| Stop::errno(e, STAGE_DIR);
        let st = stat_at(self.dir, STAGE).map_err(changed)?;
        if check_entry(&st, STAGE_DIR, rules).map_err(Stop::Rule)? != Kind::Dir {
            return Err(Stop::Rule(format!("{STAGE_DIR} is not a directory")));
        }
        let fd = open_dir_at(self.dir, STAGE).map_err(changed)?;
        let held = fstat(&fd).map_err(changed)?;
        if !same(&held, &st) {
            return Err(Stop::Changed(format!(
                "{STAGE_DIR} changed during the check"
            )));
        }
        Ok(fd)
    }

    /// Checks the run whole ([`RunFiles::check`]: nothing is removed when anything breaks a
    /// rule), then removes it, the journal last: everything under `stage/` (each entry checked
    /// again right before its removal) and `stage/` itself, then `then` (what else goes with the
    /// run, e.g. its temp files in the target), then `journal`, then the directory. A removal
    /// that stops leaves a run whose journal still says what it said.
    pub fn remove(&self, then: impl FnOnce() -> Result<(), Stop>) -> Result<(), Stop> {
        let rules = self.check()?;
        let changed = |what: String| Stop::Changed(what);
        // Only a stage that is not there is skipped: an error asking (EIO) stops the removal
        // before the journal, never taken for "no stage".
        let has_stage = match stat_at(self.dir, STAGE) {
            Ok(_) => true,
            Err(Errno::ENOENT) => false,
            Err(e) => return Err(Stop::errno(e, STAGE_DIR)),
        };
        if has_stage {
            let stage = self.open_stage(&rules)?;
            let st = fstat(&stage).map_err(|e| changed(format!("{STAGE_DIR}: {e}")))?;
            tree::walk(&stage, STAGE_DIR, &rules, Pass::Remove)?;
            let now = stat_at(self.dir, STAGE).map_err(|e| changed(format!("{STAGE_DIR}: {e}")))?;
            if !same(&now, &st) {
                return Err(changed(format!("{STAGE_DIR} was replaced during removal")));
            }
            crate::hooks::failpoint("remove-entry");
            unlinkat(self.dir, STAGE, UnlinkatFlags::RemoveDir).map_err(|e| match e {
                Errno::ENOTEMPTY | Errno::EEXIST => changed(format!(
                    "a new entry appeared in {STAGE_DIR} during removal"
                )),
                e => Stop::errno(e, format!("could not remove {STAGE_DIR}")),
            })?;
        }
        then()?;
        crate::hooks::failpoint("before-journal");
        if let Some(expected) = self.journal {
            let now =
                stat_at(self.dir, JOURNAL).map_err(|e| changed(format!("{JOURNAL_FILE}: {e}")))?;
            if !same(&now, expected) {
                return Err(changed(format!(
                    "{JOURNAL_FILE} was replaced during removal"
                )));
            }
            unlinkat(self.dir, JOURNAL, UnlinkatFlags::NoRemoveDir)
                .map_err(|e| Stop::errno(e, format!("could not remove {JOURNAL_FILE}")))?;
        }
        crate::hooks::failpoint("before-rmdir");
        let held = fstat(self.dir).map_err(|e| changed(format!("the run directory: {e}")))?;
        let linked =
            stat_at(self.txn, self.name).map_err(|e| changed(format!("the run directory: {e}")))?;
        if !same(&linked, &held) {
            return Err(changed(
                "the run directory was replaced during removal".into(),
            ));
        }
        unlinkat(self.txn, self.name, UnlinkatFlags::RemoveDir).map_err(|e| match e {
            Errno::ENOTEMPTY | Errno::EEXIST => {
                changed("a new entry appeared in the run directory during removal".into())
            }
            e => Stop::errno(e, "could not remove the run directory"),
        })
    }
}

/// What [`peek`] read of one entry of `txn/`, changing nothing and taking no lock.
#[derive(Debug)]
pub enum Peek {
    /// It vanished before it could be read.
    Gone,
    /// What a tool acting on it would retain it as, and why: it is not a run directory by the
    /// rules of [`inspect`] (a name, an owner, a mode, a journal that is not our one-link file of
    /// at most 4 MiB, ...), or it could not be read.
    Retain(State, String),
    /// The journal, classified as every tool acting on the run classifies it
    /// ([`classify_run`]: BEGIN must name this run, PREPARED only its own temp files); an empty
    /// run directory reads as an empty journal (ABANDONED), as [`inspect`] reads it.
    Journal(Journal),
}

/// Reads the entry `name` of the open `txn/` for a reader (`dot-journal-fmt`) by the steps of
/// [`inspect`] but the lock (the name, the run directory's owner and mode, the journal's type,
/// owner, links, mode and size, `classify_run`), so it shows what `dot-launch recover` and
/// `dot-discard` would find. No lock is taken: a reader never makes a launcher or a
/// `dot-discard` wait, nor sees a run as live.
pub fn peek(txn: &OwnedFd, name: &CStr, uid: u32) -> Peek {
    let txid = name.to_string_lossy().into_owned();
    let not = |i: Inspection| match i {
        Inspection::Retain(state, why) => Peek::Retain(state, why),
        Inspection::Gone | Inspection::Found(_) => Peek::Gone,
    };
    let (dir, dir_stat) = match open_run(txn, name, &txid, uid) {
        Ok(opened) => opened,
        Err(i) => return not(i),
    };
    match run_journal(&dir, &dir_stat, &txid, uid) {
        Ok(Some((_, journal))) => Peek::Journal(journal),
        Ok(None) => Peek::Journal(classify_run(b"", &txid)),
        Err(i) => not(i),
    }
}
