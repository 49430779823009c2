//! `dot-discard`: deletes the ABANDONED run directories under `ROOT/txn/` and nothing else.
//!
//! For each entry of `txn/`, in name order, a run is deleted only if every step holds; the first
//! step that fails retains it with a reason:
//! 1. its name is a transaction id;
//! 2. it opens with `O_DIRECTORY|O_NOFOLLOW`, is owned by us and has no group or other bits;
//! 3. its lock (flock, exclusive, non-blocking, on the open directory) can be taken: `dot-launch`
//!    holds it for the run's whole life, so a lock we cannot take is a live run. It is kept until
//!    the run is gone;
//! 4. `journal` is our own regular file, one link, not group/other-writable, at most 4 MiB, and
//!    [`proto::journal::classify`] says ABANDONED (PREPARED and COMMITTED are `dot-launch recover`'s);
//! 5. the directory holds only `journal` and, optionally, `stage/`; `stage/` (walked through
//!    descriptors, never following a symbolic link, at most 32 levels and 100,000 entries) holds
//!    only our own directories and regular files with one link, none setuid or setgid;
//! 6. removal goes through the open descriptors, checking each entry is the one checked: `stage/`
//!    depth first, then `journal`, then the run directory; `txn/` is fsynced once at the end.
//!
//! With `--dry-run` nothing is removed: the report lists what would be.
#![forbid(unsafe_code)]

pub mod tree;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use nix::sys::stat::{fstat, FileStat};
use nix::unistd::{unlinkat, UnlinkatFlags};
use proto::cli::Output;
use proto::journal::{classify, RunState, MAX_JOURNAL};
use proto::layout::{is_txid, Root, JOURNAL_FILE, STAGE_DIR};
use proto::{ErrorObject, ExitCode, ToErrorObject};
use serde::{Deserialize, Serialize};
use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use tree::{list, open_dir_at, same, stat_at, Kind, Node};

/// What `dot-discard` did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// Runs removed (with `dry_run`: runs that would be removed), in name order.
    pub discarded: Vec<String>,
    /// Runs left in place, each with the reason.
    pub retained: Vec<Retained>,
    pub dry_run: bool,
}

/// One run left in place.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Retained {
    /// The entry's name under `txn/` (not always a valid transaction id).
    pub txid: String,
    pub state: State,
    pub reason: String,
    /// The command that takes it further, where one exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// The state a retained run was found in: the journal's state, or `LIVE` for a run whose
/// `dot-launch` still holds its lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum State {
    /// ABANDONED, but its removal stopped because something changed under it.
    Abandoned,
    Prepared,
    Committed,
    Unrecognized,
    /// Its lock is held.
    Live,
}

impl From<RunState> for State {
    fn from(s: RunState) -> State {
        match s {
            RunState::Abandoned => State::Abandoned,
            RunState::Prepared => State::Prepared,
            RunState::Committed => State::Committed,
            RunState::Unrecognized => State::Unrecognized,
        }
    }
}

/// Why `dot-discard` could not look at the runs at all.
#[derive(Debug, thiserror::Error)]
pub enum DiscardError {
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

impl ToErrorObject for DiscardError {
    fn kind(&self) -> &'static str {
        match self {
            DiscardError::NoTxn { .. } => "not-a-root",
            DiscardError::UnsafeTxn { .. } => "unsafe-txn",
            DiscardError::OpenTxn { .. }
            | DiscardError::ListTxn { .. }
            | DiscardError::SyncTxn { .. } => "io",
        }
    }

    fn exit_code(&self) -> ExitCode {
        match self {
            DiscardError::NoTxn { .. } => ExitCode::Usage,
            DiscardError::UnsafeTxn { .. } => ExitCode::Refused,
            _ => ExitCode::System,
        }
    }

    fn to_error_object(&self) -> ErrorObject {
        let obj = ErrorObject::new(self.kind(), self.to_string());
        match self {
            DiscardError::NoTxn { path } => obj.path(path).next(format!(
                "dot-register init --root {}",
                path.parent().unwrap_or(path).display()
            )),
            DiscardError::UnsafeTxn { path, .. }
            | DiscardError::OpenTxn { path, .. }
            | DiscardError::ListTxn { path, .. }
            | DiscardError::SyncTxn { path, .. } => obj.path(path),
        }
    }
}

/// `dot-discard`: delete the ABANDONED runs of a platform root, retaining (and saying why) every
/// run it cannot prove abandoned. Exit 4 when anything was retained.
#[derive(argh::FromArgs, Debug)]
pub struct Args {
    /// the platform root
    #[argh(option, from_str_fn(proto::cli::path))]
    pub root: PathBuf,
    /// remove nothing; list what would be removed
    #[argh(switch)]
    pub dry_run: bool,
}

/// `dot-discard`'s entry point.
pub fn run(args: Args) -> Result<Output, DiscardError> {
    let report = discard(&Root::new(args.root), args.dry_run)?;
    let out = Output::json(&report);
    Ok(if report.retained.is_empty() {
        out
    } else {
        out.with_code(ExitCode::Retained)
    })
}

/// Deletes (or, with `dry_run`, lists) the ABANDONED runs under `root`'s `txn/`.
pub fn discard(root: &Root, dry_run: bool) -> Result<Report, DiscardError> {
    let path = root.txn();
    let uid = nix::unistd::geteuid().as_raw();
    let txn = open_txn(&path, uid)?;
    let names = list(&txn, usize::MAX).map_err(|source| DiscardError::ListTxn {
        path: path.clone(),
        source,
    })?;
    let ctx = Ctx { root, uid };
    let mut report = Report {
        discarded: Vec::new(),
        retained: Vec::new(),
        dry_run,
    };
    let mut removed = false;
    for name in names {
        let txid = name.to_string_lossy().into_owned();
        match ctx.examine(&txn, &name, &txid) {
            Verdict::Gone => {}
            Verdict::Retain(r) => report.retained.push(r),
            Verdict::Discard(run) if dry_run => {
                drop(run);
                report.discarded.push(txid);
            }
            Verdict::Discard(run) => match run.remove(&txn, &name) {
                Ok(()) => {
                    removed = true;
                    report.discarded.push(txid);
                }
                Err(why) => report.retained.push(Retained {
                    next: Some(ctx.again()),
                    txid,
                    state: State::Abandoned,
                    reason: format!("removal stopped: {why}"),
                }),
            },
        }
    }
    if removed {
        nix::unistd::fsync(&txn).map_err(|source| DiscardError::SyncTxn { path, source })?;
    }
    Ok(report)
}

/// Opens `txn/` (not through a symbolic link) and checks it is ours and not writable by others.
fn open_txn(path: &Path, uid: u32) -> Result<OwnedFd, DiscardError> {
    let txn = match nix::fcntl::open(path, tree::dir_flags(), nix::sys::stat::Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Err(DiscardError::NoTxn { path: path.into() }),
        Err(Errno::ELOOP | Errno::ENOTDIR) => {
            return Err(DiscardError::UnsafeTxn {
                path: path.into(),
                why: "it is a symbolic link or not a directory".into(),
            })
        }
        Err(source) => {
            return Err(DiscardError::OpenTxn {
                path: path.into(),
                source,
            })
        }
    };
    let st = fstat(&txn).map_err(|source| DiscardError::OpenTxn {
        path: path.into(),
        source,
    })?;
    if st.st_uid != uid {
        return Err(DiscardError::UnsafeTxn {
            path: path.into(),
            why: format!("it is owned by uid {}, not {uid}", st.st_uid),
        });
    }
    if st.st_mode & 0o022 != 0 {
        return Err(DiscardError::UnsafeTxn {
            path: path.into(),
            why: format!(
                "it is writable by group or others (mode {:o})",
                st.st_mode & 0o7777
            ),
        });
    }
    Ok(txn)
}

struct Ctx<'a> {
    root: &'a Root,
    uid: u32,
}

enum Verdict {
    /// The entry vanished before it could be examined (its run finished): nothing to report.
    Gone,
    Retain(Retained),
    Discard(Box<Run>),
}

/// A run proven ABANDONED, still open and locked.
struct Run {
    /// The run directory, holding its lock; dropping it releases the lock.
    dir: Flock<File>,
    dir_stat: FileStat,
    journal: FileStat,
    /// `stage/` and its checked contents, if present.
    stage: Option<(FileStat, Vec<Node>)>,
    /// The run's id and the target directory its BEGIN record names: temp files the run may have
    /// written there before PREPARED (`.dot-TXID-N.tmp`) are removed with it.
    temps: Option<(String, String)>,
}

impl Ctx<'_> {
    fn retain(&self, txid: &str, state: State, reason: impl Into<String>) -> Verdict {
        let next = match state {
            State::Prepared | State::Committed => Some(format!(
                "dot-launch recover --root {} {txid}",
                self.root.path().display()
            )),
            State::Abandoned => Some(self.again()),
            State::Unrecognized | State::Live => None,
        };
        Verdict::Retain(Retained {
            txid: txid.to_owned(),
            state,
            reason: reason.into(),
            next,
        })
    }

    fn again(&self) -> String {
        format!("dot-discard --root {}", self.root.path().display())
    }

    fn examine(&self, txn: &OwnedFd, name: &CStr, txid: &str) -> Verdict {
        use State::Unrecognized;
        if !is_txid(txid) {
            return self.retain(txid, Unrecognized, "not a transaction id");
        }
        // 2. Open, owner, mode.
        let fd = match open_dir_at(txn, name) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Verdict::Gone,
            Err(e @ (Errno::ELOOP | Errno::ENOTDIR)) => {
                let what = stat_at(txn, name)
                    .map(|st| Kind::of(&st).word())
                    .unwrap_or(e.desc());
                return self.retain(txid, Unrecognized, format!("is a {what}, not a directory"));
            }
            Err(e) => return self.retain(txid, Unrecognized, format!("cannot open: {e}")),
        };
        let dir = File::from(fd);
        let dir_stat = match fstat(&dir) {
            Ok(st) => st,
            Err(e) => return self.retain(txid, Unrecognized, format!("cannot stat: {e}")),
        };
        if dir_stat.st_uid != self.uid {
            return self.retain(
                txid,
                Unrecognized,
                format!(
                    "the run directory is owned by uid {}, not {}",
                    dir_stat.st_uid, self.uid
                ),
            );
        }
        if dir_stat.st_mode & 0o077 != 0 {
            return self.retain(
                txid,
                Unrecognized,
                format!(
                    "the run directory gives access to group or others (mode {:o})",
                    dir_stat.st_mode & 0o7777
                ),
            );
        }
        // 3. The lock (flock, as dot-launch takes it); kept by `Run` until the run is gone.
        let dir = match Flock::lock(dir, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => locked,
            Err((_, Errno::EWOULDBLOCK)) => {
                return self.retain(
                    txid,
                    State::Live,
                    "locked (live): its dot-launch holds the run's lock",
                )
            }
            Err((_, e)) => {
                return self.retain(txid, Unrecognized, format!("cannot take the lock: {e}"))
            }
        };
        // 4. The journal.
        let (journal, bytes) = match self.read_journal(&dir) {
            Ok(j) => j,
            Err(why) => return self.retain(txid, Unrecognized, why),
        };
        let classified = classify(&bytes);
        if classified.state != RunState::Abandoned {
            let reason = match classified.state {
                RunState::Prepared => {
                    "PREPARED: target changes are authorized and not finished; recover rolls them forward".into()
                }
                RunState::Committed => {
                    "COMMITTED: the run committed but its cleanup did not finish; recover finishes it".into()
                }
                _ => classified
                    .problem
                    .unwrap_or_else(|| "the journal is not recognized".into()),
            };
            return self.retain(txid, classified.state.into(), reason);
        }
        // 5. The closed set of names and types.
        let names = match list(&*dir, 3) {
            Ok(n) => n,
            Err(e) => return self.retain(txid, Unrecognized, format!("cannot list: {e}")),
        };
        if let Some(extra) = names.iter().find(|n| {
            n.as_bytes() != JOURNAL_FILE.as_bytes() && n.as_bytes() != STAGE_DIR.as_bytes()
        }) {
            return self.retain(
                txid,
                Unrecognized,
                format!(
                    "unexpected entry {} in the run directory",
                    extra.to_string_lossy()
                ),
            );
        }
        let stage = if names.iter().any(|n| n.as_bytes() == STAGE_DIR.as_bytes()) {
            match self.check_stage(&dir) {
                Ok(s) => Some(s),
                Err(why) => return self.retain(txid, Unrecognized, why),
            }
        } else {
            None
        };
        let temps = match classified.begin() {
            Some(proto::journal::Record::Begin { target, .. }) => {
                Some((txid.to_owned(), target.clone()))
            }
            _ => None,
        };
        Verdict::Discard(Box::new(Run {
            dir,
            dir_stat,
            journal,
            stage,
            temps,
        }))
    }

    /// Reads `journal` after checking it: our regular file, one link, not writable by group or
    /// others, no larger than the classifier reads.
    fn read_journal(&self, dir: &File) -> Result<(FileStat, Vec<u8>), String> {
        let name = c_name(JOURNAL_FILE);
        let st = match stat_at(dir, &name) {
            Ok(st) => st,
            Err(Errno::ENOENT) => return Err("no journal".into()),
            Err(e) => return Err(format!("journal: {e}")),
        };
        tree::check_entry(&st, JOURNAL_FILE, self.uid).and_then(|kind| match kind {
            Kind::File => Ok(()),
            other => Err(format!("{JOURNAL_FILE} is a {}", other.word())),
        })?;
        if st.st_mode & 0o022 != 0 {
            return Err(format!(
                "{JOURNAL_FILE} is writable by group or others (mode {:o})",
                st.st_mode & 0o7777
            ));
        }
        if u64::try_from(st.st_size).unwrap_or(u64::MAX) > MAX_JOURNAL as u64 {
            return Err(format!(
                "{JOURNAL_FILE} is {} bytes, over {MAX_JOURNAL}",
                st.st_size
            ));
        }
        let flags = nix::fcntl::OFlag::O_RDONLY
            | nix::fcntl::OFlag::O_NOFOLLOW
            | nix::fcntl::OFlag::O_NONBLOCK
            | nix::fcntl::OFlag::O_CLOEXEC;
        let fd = nix::fcntl::openat(dir, name.as_c_str(), flags, nix::sys::stat::Mode::empty())
            .map_err(|e| format!("{JOURNAL_FILE}: {e}"))?;
        let file = File::from(fd);
        let held = fstat(&file).map_err(|e| format!("{JOURNAL_FILE}: {e}"))?;
        if !same(&held, &st) {
            return Err(format!("{JOURNAL_FILE} changed during the check"));
        }
        let mut bytes = Vec::new();
        file.take(MAX_JOURNAL as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{JOURNAL_FILE}: {e}"))?;
        Ok((st, bytes))
    }

    /// Checks `stage/` and everything under it.
    fn check_stage(&self, dir: &File) -> Result<(FileStat, Vec<Node>), String> {
        let name = c_name(STAGE_DIR);
        let st = stat_at(dir, &name).map_err(|e| format!("{STAGE_DIR}: {e}"))?;
        match tree::check_entry(&st, STAGE_DIR, self.uid)? {
            Kind::Dir => {}
            other => return Err(format!("{STAGE_DIR} is a {}", other.word())),
        }
        let fd = open_dir_at(dir, &name).map_err(|e| format!("{STAGE_DIR}: {e}"))?;
        let held = fstat(&fd).map_err(|e| format!("{STAGE_DIR}: {e}"))?;
        if !same(&held, &st) {
            return Err(format!("{STAGE_DIR} changed during the check"));
        }
        let mut budget = tree::MAX_ENTRIES;
        let nodes = tree::check_tree(&fd, STAGE_DIR, 0, &mut budget, self.uid)?;
        Ok((st, nodes))
    }
}

impl Run {
    /// Removes the run: `stage/` depth first, then `journal`, then the directory itself. The lock
    /// is held until the directory is gone.
    fn remove(self, txn: &OwnedFd, name: &CStr) -> Result<(), String> {
        let journal = c_name(JOURNAL_FILE);
        let stage = c_name(STAGE_DIR);
        let mut expected = vec![journal.as_c_str()];
        if self.stage.is_some() {
            expected.push(stage.as_c_str());
        }
        let names = list(&*self.dir, 3).map_err(|e| e.to_string())?;
        tree::expect_names("", &names, expected.into_iter())?;
        if let Some((st, nodes)) = &self.stage {
            let fd = open_dir_at(&*self.dir, &stage).map_err(|e| format!("{STAGE_DIR}: {e}"))?;
            let held = fstat(&fd).map_err(|e| format!("{STAGE_DIR}: {e}"))?;
            if !same(&held, st) {
                return Err(format!("{STAGE_DIR} was replaced during discard"));
            }
            tree::remove_tree(&fd, STAGE_DIR, nodes)?;
            unlinkat(&*self.dir, stage.as_c_str(), UnlinkatFlags::RemoveDir)
                .map_err(|e| format!("could not remove {STAGE_DIR}: {e}"))?;
        }
        if let Some((txid, target)) = &self.temps {
            remove_target_temps(Path::new(target), txid, self.dir_stat.st_uid)?;
        }
        // The journal goes last: a run interrupted before this point is still ABANDONED.
        let now = stat_at(&*self.dir, &journal).map_err(|e| format!("{JOURNAL_FILE}: {e}"))?;
        if !same(&now, &self.journal) {
            return Err(format!("{JOURNAL_FILE} was replaced during discard"));
        }
        unlinkat(&*self.dir, journal.as_c_str(), UnlinkatFlags::NoRemoveDir)
            .map_err(|e| format!("could not remove {JOURNAL_FILE}: {e}"))?;
        let linked = stat_at(txn, name).map_err(|e| format!("the run directory: {e}"))?;
        if !same(&linked, &self.dir_stat) {
            return Err("the run directory was replaced during discard".into());
        }
        unlinkat(txn, name, UnlinkatFlags::RemoveDir).map_err(|e| match e {
            Errno::ENOTEMPTY | Errno::EEXIST => {
                "a new entry appeared in the run directory during discard".to_owned()
            }
            e => format!("could not remove the run directory: {e}"),
        })
    }
}

/// A layout name as a C string (the layout names hold no NUL).
fn c_name(name: &str) -> CString {
    CString::new(name).unwrap_or_default()
}

/// Removes the temp files an ABANDONED run left in its target directory: exactly the names
/// `.dot-TXID-N.tmp` (N decimal), each a regular file of ours with one link. The names carry the
/// run's random 128-bit id, so nothing else can match. A missing target means there is nothing to do.
fn remove_target_temps(target: &Path, txid: &str, uid: u32) -> Result<(), String> {
    let fd = match nix::fcntl::open(target, tree::dir_flags(), nix::sys::stat::Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Ok(()),
        Err(e) => return Err(format!("target {}: {e}", target.display())),
    };
    let names = list(&fd, usize::MAX).map_err(|e| format!("target {}: {e}", target.display()))?;
    let mut removed = false;
    for name in names {
        let n = name.to_string_lossy();
        if !proto::layout::is_target_temp(&n, txid) {
            continue;
        }
        let st = stat_at(&fd, &name).map_err(|e| format!("{}/{n}: {e}", target.display()))?;
        if Kind::of(&st) != Kind::File || st.st_uid != uid || st.st_nlink != 1 {
            return Err(format!(
                "{}/{n} is not a temp file of this run (type, owner or links)",
                target.display()
            ));
        }
        unlinkat(&fd, name.as_c_str(), UnlinkatFlags::NoRemoveDir)
            .map_err(|e| format!("could not remove {}/{n}: {e}", target.display()))?;
        removed = true;
    }
    if removed {
        nix::unistd::fsync(&fd).map_err(|e| format!("target {}: {e}", target.display()))?;
    }
    Ok(())
}
