//! `dot-discard`: deletes the ABANDONED run directories under `ROOT/txn/` and nothing else.
//!
//! For each entry of `txn/`, in name order, a run is deleted only if every step holds; the first
//! step that fails retains it with a reason:
//! 1. [`run::inspect`]: its name is a transaction id; it opens with `O_DIRECTORY|O_NOFOLLOW`, is
//!    owned by us and has no group or other bits; its lock (flock, exclusive, non-blocking, on the
//!    open directory) can be taken — `dot-launch` holds it for the run's whole life, so a lock we
//!    cannot take is a live run — and is kept until the run is gone; `journal` is our own regular
//!    file, one link, not group/other-writable, at most 4 MiB, and
//!    [`proto::journal::classify_run`] does not call it UNRECOGNIZED; a journal without a record
//!    comes with nothing but the layout a launcher makes before BEGIN;
//! 2. the journal says ABANDONED (PREPARED and COMMITTED are `dot-launch recover`'s); a run
//!    directory with nothing in it at all is ABANDONED too;
//! 3. every `.dot-TXID-N.tmp` in the target BEGIN names is our regular file with one link;
//! 4. [`run::RunFiles::check`]: the directory holds only `journal` and, optionally, `stage/`;
//!    `stage/` (walked through descriptors, at any depth and width, with a bounded number of
//!    them, never following a symbolic link or entering another filesystem) holds only our own
//!    directories, regular files and symbolic links, none setuid or setgid;
//! 5. removal goes through the open descriptors, checking each entry again right before it goes:
//!    `stage/`, then the temp files, then `journal`, then the run directory; `txn/` is fsynced
//!    once at the end.
//!
//! With `--dry-run` nothing is removed: the report lists what would be.
#![forbid(unsafe_code)]

pub mod hooks;
pub mod run;
pub mod tree;

use nix::errno::Errno;
use nix::unistd::{unlinkat, UnlinkatFlags};
use proto::cli::Output;
use proto::journal::{Record, RunState};
use proto::layout::Root;
use proto::{ErrorObject, ExitCode, Next, ToErrorObject};
use run::{open_txn, Inspection};
use serde::{Deserialize, Serialize};
use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use tree::{check_entry, list, stat_at, Kind, Rules, Stop};

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
    /// The command that takes it further, where one exists (quoted for POSIX `sh`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// `next` as an argument vector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_argv: Option<Vec<String>>,
}

impl Retained {
    /// A retained run and the command that takes it further, if there is one.
    pub fn new(txid: &str, state: State, reason: String, next: Option<Next>) -> Retained {
        Retained {
            txid: txid.to_owned(),
            state,
            reason,
            next_argv: next.as_ref().and_then(Next::argv),
            next: next.as_ref().map(Next::text),
        }
    }
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
    fn kind(&self) -> proto::Kind {
        match self {
            DiscardError::NoTxn { .. } => proto::Kind::NotARoot,
            DiscardError::UnsafeTxn { .. } => proto::Kind::UnsafeTxn,
            DiscardError::OpenTxn { .. }
            | DiscardError::ListTxn { .. }
            | DiscardError::SyncTxn { .. } => proto::Kind::Io,
        }
    }

    fn to_error_object(&self) -> ErrorObject {
        let obj = ErrorObject::new(self.kind(), self.to_string());
        match self {
            DiscardError::NoTxn { path } => {
                // `init` makes a root only where nothing is yet.
                let root = path.parent().unwrap_or(path);
                match std::fs::symlink_metadata(root) {
                    Err(_) => obj.path(path).next(&proto::next::init_root(root)),
                    Ok(_) => obj.path(path),
                }
            }
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
    /// the state directory whose txn/ holds the runs (default: the root itself)
    #[argh(option, from_str_fn(proto::cli::path))]
    pub state: Option<PathBuf>,
    /// remove nothing; list what would be removed
    #[argh(switch)]
    pub dry_run: bool,
}

/// `dot-discard`'s entry point.
pub fn run(args: Args) -> Result<Output, DiscardError> {
    let report = discard(&Root::from_args(args.root, args.state), args.dry_run)?;
    let done = format!(
        "dot-discard finished: {} discarded{}, {} retained",
        report.discarded.len(),
        if report.dry_run { " (dry run)" } else { "" },
        report.retained.len()
    );
    let out = Output::json(&report).done(done, None, None);
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
        match ctx.examine(&txn, &name, &txid, dry_run) {
            Verdict::Gone => {}
            Verdict::Retain(r) => report.retained.push(r),
            Verdict::Discarded => {
                removed |= !dry_run;
                report.discarded.push(txid);
            }
        }
    }
    if removed {
        nix::unistd::fsync(&txn).map_err(|source| DiscardError::SyncTxn { path, source })?;
    }
    Ok(report)
}

struct Ctx<'a> {
    root: &'a Root,
    uid: u32,
}

enum Verdict {
    /// The entry vanished before it could be examined (its run finished): nothing to report.
    Gone,
    Retain(Retained),
    /// Removed (with `dry_run`: would be removed).
    Discarded,
}

/// The command that takes a run retained in `state` further, where one exists.
pub fn next_for(root: &Root, txid: &str, state: State) -> Option<Next> {
    match state {
        State::Prepared | State::Committed => Some(proto::next::recover_run(root, txid)),
        State::Abandoned => Some(Next::cmd("dot-discard").root(root)),
        State::Unrecognized | State::Live => None,
    }
}

impl Ctx<'_> {
    fn retain(&self, txid: &str, state: State, reason: impl Into<String>) -> Verdict {
        Verdict::Retain(Retained::new(
            txid,
            state,
            reason.into(),
            next_for(self.root, txid, state),
        ))
    }

    fn examine(&self, txn: &OwnedFd, name: &CStr, txid: &str, dry_run: bool) -> Verdict {
        let run = match run::inspect(txn, name, self.uid) {
            Inspection::Gone => return Verdict::Gone,
            Inspection::Retain(state, why) => return self.retain(txid, state, why),
            Inspection::Found(run) => run,
        };
        match run.state() {
            RunState::Abandoned => {}
            RunState::Prepared => {
                return self.retain(
                    txid,
                    State::Prepared,
                    "PREPARED: target changes are authorized and not finished; recover rolls them forward",
                )
            }
            RunState::Committed => {
                return self.retain(
                    txid,
                    State::Committed,
                    "COMMITTED: the run committed but its cleanup did not finish; recover finishes it",
                )
            }
            RunState::Unrecognized => {
                return self.retain(txid, State::Unrecognized, "the journal is not recognized")
            }
        }
        // The temp files the run may have written in its target before PREPARED.
        let temps = match run.journal.as_ref().and_then(|(_, j)| j.begin()) {
            Some(Record::Begin { target, .. }) => {
                match TargetTemps::find(Path::new(target), txid, self.uid) {
                    Ok(temps) => temps,
                    Err(why) => {
                        return Verdict::Retain(Retained::new(txid, State::Abandoned, why, None))
                    }
                }
            }
            _ => None,
        };
        let files = run.files(txn, self.uid);
        if dry_run {
            return match files.check() {
                Ok(_) => Verdict::Discarded,
                Err(stop) => self.stopped(txid, stop),
            };
        }
        // `remove` checks the whole run first and removes nothing if anything breaks a rule.
        let removal = files.remove(|| match &temps {
            Some(t) => t.remove(),
            None => Ok(()),
        });
        match removal {
            Ok(()) => Verdict::Discarded,
            Err(stop) => self.stopped(txid, stop),
        }
    }

    /// A run whose check or removal stopped: one that breaks a rule is the operator's
    /// (UNRECOGNIZED); one that changed during the removal or met an error is still what its
    /// journal says, and another `dot-discard` may finish it.
    fn stopped(&self, txid: &str, stop: Stop) -> Verdict {
        match stop {
            Stop::Rule(why) => self.retain(txid, State::Unrecognized, why),
            Stop::Changed(why) => {
                self.retain(txid, State::Abandoned, format!("removal stopped: {why}"))
            }
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
    pub fn find(target: &Path, txid: &str, uid: u32) -> Result<Option<TargetTemps>, String> {
        let dir = match sys::fs::open_dir_nofollow(target) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(None),
            Err(e) => return Err(format!("target {}: {e}", target.display())),
        };
        let dev = nix::sys::stat::fstat(&dir)
            .map_err(|e| format!("target {}: {e}", target.display()))?
            .st_dev;
        let mut names =
            list(&dir, usize::MAX).map_err(|e| format!("target {}: {e}", target.display()))?;
        names.retain(|n| proto::layout::is_target_temp(&n.to_string_lossy(), txid));
        let temps = TargetTemps {
            target: target.to_owned(),
            dir,
            rules: Rules { uid, dev },
            names,
        };
        for name in &temps.names {
            temps.check(name).map_err(|why| {
                format!(
                    "{why}: it carries this run's temp name but is not a temp file the run wrote, \
                     so dot-discard removes neither it nor the run, and running it again will not \
                     help; inspect it, remove or move it yourself, then run dot-discard again"
                )
            })?;
        }
        Ok(Some(temps))
    }

    /// One temp file: our regular file with one link, not setuid or setgid.
    fn check(&self, name: &CStr) -> Result<(), String> {
        let path = self.target.join(name.to_string_lossy().as_ref());
        let path = path.display().to_string();
        let st = stat_at(&self.dir, name).map_err(|e| format!("{path}: {e}"))?;
        match check_entry(&st, &path, &self.rules)? {
            Kind::File => Ok(()),
            other => Err(format!("{path} is a {}", other.word())),
        }
    }

    /// The target directory, held open.
    pub fn dir(&self) -> &OwnedFd {
        &self.dir
    }

    /// Removes them, each checked again, then makes the target directory durable.
    pub fn remove(&self) -> Result<(), Stop> {
        for name in &self.names {
            self.check(name).map_err(Stop::Changed)?;
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
