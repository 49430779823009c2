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
//! 3. the target BEGIN names is still the directory the run began in (`target_id`, when the
//!    journal recorded it: a target renamed away, replaced or reached through a bind mount that is
//!    gone may hold the run's temp files, so the run is retained without `next`), and every
//!    `.dot-TXID-N.tmp` in it is our regular file with one link;
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

use cli::Output;
use proto::journal::RunState;
use proto::layout::Root;
pub use proto::retained::{Retained, State};
use proto::{ExitCode, ToErrorObject};
use serde::{Deserialize, Serialize};
use std::ffi::CStr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use txn::run::{self, open_txn, Inspection};
use txn::tree::{list, Stop};
pub use txn::{TargetTemps, TxnError};

/// Why `dot-discard` could not look at the runs at all: the store's [`TxnError`], with the command
/// that makes a root where there is none.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct DiscardError(#[from] pub TxnError);

impl ToErrorObject for DiscardError {
    fn kind(&self) -> proto::Kind {
        self.0.kind()
    }
    fn to_error_object(&self) -> proto::ErrorObject {
        cli::next::or_init_root(self.0.to_error_object(), self.0.missing_root())
    }
}

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

/// `dot-discard`: delete the ABANDONED runs of a platform root, retaining (and saying why) every
/// run it cannot prove abandoned. Exit 4 when anything was retained.
#[derive(argh::FromArgs, Debug)]
pub struct Args {
    /// the platform root
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
    /// the state directory whose txn/ holds the runs (default: the root itself)
    #[argh(option, from_str_fn(cli::path))]
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
    let names = list(&txn, usize::MAX).map_err(|source| TxnError::ListTxn {
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
        nix::unistd::fsync(&txn).map_err(|source| TxnError::SyncTxn { path, source })?;
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

impl Ctx<'_> {
    fn retain(&self, txid: &str, state: State, reason: impl Into<String>) -> Verdict {
        Verdict::Retain(cli::next::retained(
            txid,
            state,
            reason.into(),
            cli::next::for_retained(self.root, txid, state),
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
                // recover finishes it only if its directory can be removed: a stage holding what
                // removal never deletes (a fifo an audit plugin left) is the operator's first, and
                // pointing at recover then would be a command that changes nothing.
                return match run.files(txn, self.uid).check() {
                    Ok(_) | Err(Stop::Changed(_)) => self.retain(
                        txid,
                        State::Committed,
                        "COMMITTED: the run committed but its cleanup did not finish; recover finishes it",
                    ),
                    Err(Stop::Rule(why)) => Verdict::Retain(cli::next::retained(
                        txid,
                        State::Committed,
                        format!(
                            "COMMITTED, but its directory cannot be removed: {why}; remove or \
                             move that yourself, then `dot-launch recover` finishes the cleanup"
                        ),
                        None,
                    )),
                };
            }
            RunState::Unrecognized => {
                return self.retain(txid, State::Unrecognized, "the journal is not recognized")
            }
        }
        // The temp files the run may have written in its target before PREPARED.
        let temps = match run.journal.as_ref().and_then(|(_, j)| j.target()) {
            Some((target, id)) => match TargetTemps::find(Path::new(target), id, txid, self.uid) {
                Ok(temps) => temps,
                Err(Stop::Rule(why)) => {
                    return Verdict::Retain(cli::next::retained(txid, State::Abandoned, why, None))
                }
                Err(Stop::Changed(why)) => {
                    return self.retain(
                        txid,
                        State::Abandoned,
                        format!("{why} (it may pass: run dot-discard again)"),
                    )
                }
            },
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
    /// (UNRECOGNIZED); one that changed during the removal or met an error of the host (EIO, a
    /// read-only filesystem, a permission) is still what its journal says, ABANDONED, and
    /// another `dot-discard` finishes it once the host allows.
    fn stopped(&self, txid: &str, stop: Stop) -> Verdict {
        match stop {
            Stop::Rule(why) => self.retain(txid, State::Unrecognized, why),
            Stop::Changed(why) => self.retain(
                txid,
                State::Abandoned,
                format!("removal stopped: {why} (it may pass: run dot-discard again)"),
            ),
        }
    }
}
