//! `dot-launch recover`: rolls PREPARED runs forward idempotently; finishes the cleanup of COMMITTED
//! runs; never touches ABANDONED or UNRECOGNIZED ones.
//!
//! It fails closed exactly like `dot-discard`, through the same code: `txn/` is checked
//! (`txn::run::open_txn`), and every run is examined by `txn::run::inspect` (ownership,
//! modes, the lock taken before the journal is read, the journal read by `classify_run`, which
//! also checks that BEGIN names this run and PREPARED only this run's temp files and one-component
//! names in BEGIN's target) and removed by `txn::run::RunFiles` (nothing that is not our own
//! plain file or directory is ever removed; the journal last). Anything else is retained with its
//! reason; a run that vanishes during the pass is skipped.

use crate::error::LaunchError;
use crate::rundir::{now_ms, RunDir};
use proto::journal::{Record, RunState, RECORD_VERSION};
use proto::layout::{is_txid, Root};
use proto::retained::{Retained, State};
use serde::{Deserialize, Serialize};
use std::ffi::{CStr, CString};
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use txn::rollforward::Blocked;
use txn::run::{inspect, open_txn, Inspected, Inspection};
use txn::tree::{list, stat_at, Stop};
use txn::TxnError;

/// What recover did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecoverReport {
    /// PREPARED runs rolled forward to COMMITTED (and removed, unless `skipped` says otherwise).
    pub recovered: Vec<String>,
    /// COMMITTED runs whose directory was removed.
    pub cleaned: Vec<String>,
    /// Runs left alone, each with its state, why, and the command that takes it further where
    /// one exists (the same entries `dot-discard` reports).
    pub skipped: Vec<Retained>,
    /// PREPARED runs that could not be rolled forward: retained for the operator.
    pub conflicts: Vec<Conflict>,
    /// PREPARED runs given up (`recover --abandon TXID`): their temp files and directory removed,
    /// the target left as it was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub abandoned: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conflict {
    pub txid: String,
    pub file: String,
    pub reason: String,
    /// The way out when the operator accepts the target as it is: `recover --abandon TXID`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_argv: Option<Vec<String>>,
}

impl RecoverReport {
    /// Anything left that needs the operator: a conflict, or a run retained for any reason but
    /// being ABANDONED (`dot-discard`'s) or LIVE (its launcher's).
    pub fn needs_operator(&self) -> bool {
        !self.conflicts.is_empty()
            || self
                .skipped
                .iter()
                .any(|s| !matches!(s.state, State::Abandoned | State::Live))
    }
}

/// Recovers one run (`txid`) or every run under `ROOT/txn/`.
pub fn recover(root: &Root, txid: Option<&str>) -> Result<RecoverReport, LaunchError> {
    let uid = nix::unistd::geteuid().as_raw();
    let path = root.txn();
    let txn = open_txn(&path, uid)?;
    let names: Vec<CString> = match txid {
        Some(t) => {
            let name = CString::new(t).ok().filter(|_| is_txid(t));
            let missing = |path: PathBuf| LaunchError::NoSuchRun {
                txid: t.to_owned(),
                path,
            };
            let Some(n) = name else {
                return Err(missing(path));
            };
            // Only a run that is not there is `no-such-run`; an error asking (EIO) is the host's.
            match stat_at(&txn, &n) {
                Ok(_) => vec![n],
                Err(nix::errno::Errno::ENOENT) => return Err(missing(path)),
                Err(e) => {
                    return Err(LaunchError::io(
                        "looking up the run",
                        path.join(t),
                        e.into(),
                    ))
                }
            }
        }
        None => list(&txn, usize::MAX).map_err(|source| TxnError::ListTxn {
            path: path.clone(),
            source,
        })?,
    };
    let pass = Pass {
        root,
        txn: &txn,
        uid,
    };
    let mut report = RecoverReport::default();
    let mut removed = false;
    let mut cancelled = Ok(());
    for name in names {
        // A signal stops the pass between two runs, never inside one.
        crate::hooks::pause_at("recover-next");
        cancelled = crate::cancel::check(crate::cancel::During::Recover);
        if cancelled.is_err() {
            break;
        }
        removed |= pass.one(&name, &mut report);
    }
    if removed {
        nix::unistd::fsync(&txn).map_err(|source| TxnError::SyncTxn { path, source })?;
    }
    cancelled.map(|()| report)
}

/// `dot-launch recover --root R --abandon TXID`.
fn abandon_command(root: &Root, txid: &str) -> cli::Next {
    cli::Next::cmd("dot-launch")
        .arg("recover")
        .root(root)
        .arg("--abandon")
        .arg(txid)
}

/// `recover --abandon TXID`: gives up the PREPARED run `txid` (what the operator chooses for a
/// run recover cannot roll forward): under the target's commit lock, its temp files still in the
/// target (`.dot-TXID-N.tmp`, each our own regular file with one link) are removed, then the run
/// directory, by the rules `dot-discard` keeps. The target keeps what it holds now, so it refuses
/// while any of the run's files is already in place with its new bytes (giving the run up then
/// would leave the target mixed, some files new and others old): that run stays a conflict
/// without `next`, and the reason says what makes it whole. It also refuses a target whose path
/// no longer names the run's directory (its temp files may be there), and retains the run with
/// `next` this command again when the host failed. A run in any other state is recovered as
/// `recover TXID` would.
pub fn abandon(root: &Root, txid: &str) -> Result<RecoverReport, LaunchError> {
    let uid = nix::unistd::geteuid().as_raw();
    let path = root.txn();
    let txn = open_txn(&path, uid)?;
    let missing = || LaunchError::NoSuchRun {
        txid: txid.to_owned(),
        path: path.clone(),
    };
    let name = CString::new(txid)
        .ok()
        .filter(|_| is_txid(txid))
        .ok_or_else(missing)?;
    let run = match inspect(&txn, &name, uid) {
        Inspection::Gone => return Err(missing()),
        Inspection::Found(run) if run.state() == RunState::Prepared => run,
        Inspection::Found(run) => {
            drop(run);
            return recover(root, Some(txid));
        }
        Inspection::Retain(..) => return recover(root, Some(txid)),
    };
    let mut report = RecoverReport::default();
    let Some(Record::Prepared {
        target,
        target_id,
        files,
        ..
    }) = run
        .journal
        .as_ref()
        .and_then(|(_, j)| j.prepared())
        .cloned()
    else {
        return Err(missing());
    };
    let target = PathBuf::from(target);
    let stuck = |report: &mut RecoverReport, reason: String| {
        report.conflicts.push(Conflict {
            txid: txid.to_owned(),
            file: String::new(),
            reason,
            next: None,
            next_argv: None,
        })
    };
    let again = |report: &mut RecoverReport, why: String| {
        report.skipped.push(cli::next::retained(
            txid,
            State::Prepared,
            format!("{why} (an error of the host: nothing was removed; the same command again may get past it)"),
            Some(abandon_command(root, txid)),
        ))
    };
    let temps = match txn::TargetTemps::find(&target, target_id, txid, uid) {
        Ok(t) => t,
        Err(Stop::Rule(why)) => {
            stuck(&mut report, why);
            return Ok(report);
        }
        Err(Stop::Changed(why)) => {
            again(&mut report, why);
            return Ok(report);
        }
    };
    let lock = match temps.as_ref().map(|t| t.dir().try_clone().map(File::from)) {
        Some(Ok(dir)) => {
            crate::commit::lock_target(&dir, &target, crate::cancel::During::Recover)?;
            Some(dir)
        }
        Some(Err(e)) => return Err(LaunchError::io("holding the target", &target, e)),
        None => None,
    };
    // Under the lock, so no recover renames meanwhile: which of the run's files are in place.
    if let Some(dir) = &lock {
        let applied = match txn::rollforward::survey(dir, &target, &files, uid) {
            Ok(found) => txn::rollforward::applied(&files, &found),
            Err(Blocked::Conflict { applied, .. }) => applied,
            Err(Blocked::Host(why) | Blocked::Moved(why) | Blocked::Cancelled(why)) => {
                again(&mut report, why);
                return Ok(report);
            }
        };
        if !applied.is_empty() {
            stuck(&mut report, mixed(root, txid, &applied));
            return Ok(report);
        }
    }
    let removal = run.files(&txn, uid).remove(|| match &temps {
        Some(t) => t.remove(),
        None => Ok(()),
    });
    drop(lock);
    match removal {
        Ok(()) => {
            report.abandoned.push(txid.to_owned());
            nix::unistd::fsync(&txn).map_err(|source| TxnError::SyncTxn { path, source })?;
        }
        Err(Stop::Rule(why)) => stuck(
            &mut report,
            format!("its removal stopped, the target as it was: {why}"),
        ),
        Err(Stop::Changed(why)) => report.skipped.push(cli::next::retained(
            txid,
            State::Prepared,
            format!("its removal stopped, the target as it was: {why}"),
            Some(abandon_command(root, txid)),
        )),
    }
    Ok(report)
}

/// Why giving up a run whose files `applied` are in place is refused, and what makes the target
/// whole again.
fn mixed(root: &Root, txid: &str, applied: &[String]) -> String {
    format!(
        "{} already hold{} this run's new bytes: giving the run up would leave the target mixed, \
         some files new and others old, so `recover --abandon` refuses. Make the target whole \
         yourself: restore the old contents of those files (remove the ones that did not exist \
         before), then run `{}`; or give every other file of the run its prepared bytes, then run \
         `{}`",
        applied.join(", "),
        if applied.len() == 1 { "s" } else { "" },
        abandon_command(root, txid).text(),
        cli::next::recover_run(root, txid).text(),
    )
}

struct Pass<'a> {
    root: &'a Root,
    txn: &'a OwnedFd,
    uid: u32,
}

impl Pass<'_> {
    fn skip(&self, report: &mut RecoverReport, txid: &str, state: State, reason: String) {
        // An I/O error stopped the examination: the same recover again may get past it.
        let next = match state {
            State::Unreadable => Some(cli::next::recover_run(self.root, txid)),
            _ => cli::next::for_retained(self.root, txid, state),
        };
        report
            .skipped
            .push(cli::next::retained(txid, state, reason, next));
    }

    /// A PREPARED run the host kept recover from finishing (an I/O error, a read-only
    /// filesystem, a lock, a cancelling signal): it is still PREPARED, nothing of it was undone,
    /// and the same `recover` again finishes it once the host allows.
    fn host_error(&self, report: &mut RecoverReport, txid: &str, why: String) {
        report.skipped.push(cli::next::retained(
            txid,
            State::Prepared,
            format!(
                "PREPARED, not finished: {why} (an error of the host, not a conflict: the same \
                 recover again may get past it)"
            ),
            Some(cli::next::recover_run(self.root, txid)),
        ));
    }

    /// A run whose removal stopped after its outcome was settled (COMMITTED): a broken rule is
    /// the operator's (no command helps); anything else, a later recover may finish.
    fn not_removed(&self, report: &mut RecoverReport, txid: &str, stop: Stop) {
        let next = match &stop {
            Stop::Rule(_) => None,
            Stop::Changed(_) => cli::next::for_retained(self.root, txid, State::Committed),
        };
        report.skipped.push(cli::next::retained(
            txid,
            State::Committed,
            format!("COMMITTED, but its directory was not removed: {stop}"),
            next,
        ));
    }

    /// Recovers the run `name`; returns whether a run directory was removed.
    fn one(&self, name: &CStr, report: &mut RecoverReport) -> bool {
        let txid = name.to_string_lossy().into_owned();
        let run = match inspect(self.txn, name, self.uid) {
            Inspection::Gone => return false,
            Inspection::Retain(state, why) => {
                self.skip(report, &txid, state, why);
                return false;
            }
            Inspection::Found(run) => run,
        };
        match run.state() {
            RunState::Abandoned => {
                self.skip(
                    report,
                    &txid,
                    State::Abandoned,
                    "nothing was authorized; dot-discard removes it".into(),
                );
                false
            }
            RunState::Unrecognized => {
                self.skip(
                    report,
                    &txid,
                    State::Unrecognized,
                    "the journal is not recognized".into(),
                );
                false
            }
            RunState::Committed => match run.files(self.txn, self.uid).remove(|| Ok(())) {
                Ok(()) => {
                    report.cleaned.push(txid);
                    true
                }
                Err(stop) => {
                    self.not_removed(report, &txid, stop);
                    false
                }
            },
            RunState::Prepared => self.roll_forward(*run, report),
        }
    }

    /// Rolls a PREPARED run forward, appends COMMITTED and removes it.
    fn roll_forward(&self, run: Inspected, report: &mut RecoverReport) -> bool {
        let txid = run.txid.clone();
        let prepared = run
            .journal
            .as_ref()
            .and_then(|(_, j)| j.prepared().cloned());
        let Some(Record::Prepared {
            target,
            target_id,
            files,
            ..
        }) = prepared
        else {
            self.skip(
                report,
                &txid,
                State::Unrecognized,
                "PREPARED state without its record".into(),
            );
            return false;
        };
        let way_out = abandon_command(self.root, &txid);
        // The target's commit lock is held from the checks until COMMITTED is appended, so a
        // launch into the target waits and then sees the run finished.
        let cancelled =
            || crate::cancel::check(crate::cancel::During::Recover).map_err(|e| e.to_string());
        let target = Path::new(&target);
        let plan =
            match txn::rollforward::roll_forward(target, target_id, &files, self.uid, cancelled) {
                Ok(plan) => plan,
                Err(Blocked::Conflict {
                    file,
                    reason,
                    applied,
                }) => {
                    // `--abandon` is the way out only where it leaves the target as it was before
                    // the run: no file of the run in place.
                    let (reason, next) = if applied.is_empty() {
                        (reason, Some(&way_out))
                    } else {
                        (
                            format!("{reason}; {}", mixed(self.root, &txid, &applied)),
                            None,
                        )
                    };
                    report.conflicts.push(Conflict {
                        txid: txid.clone(),
                        file,
                        reason,
                        next: next.map(cli::Next::text),
                        next_argv: next.and_then(cli::Next::argv),
                    });
                    return false;
                }
                Err(Blocked::Moved(why)) => {
                    let reason = txn::moved_advice(&why, target, &txid);
                    report
                        .skipped
                        .push(cli::next::retained(&txid, State::Prepared, reason, None));
                    return false;
                }
                Err(Blocked::Host(why) | Blocked::Cancelled(why)) => {
                    self.host_error(report, &txid, why);
                    return false;
                }
            };
        if let Err(e) = crate::commit::rename_all(&plan.dir, target, &plan.to_rename) {
            self.host_error(report, &txid, e.to_string());
            return false;
        }
        let _locked = plan.dir;
        let mut dir = match RunDir::adopt(self.root, run) {
            Ok(d) => d,
            Err(e) => {
                self.host_error(report, &txid, e.to_string());
                return false;
            }
        };
        let rec = Record::Committed {
            v: RECORD_VERSION,
            seq: dir.seq(),
            at_ms: now_ms(),
            sum: None,
        };
        if let Err(e) = dir.append(&rec, true) {
            self.host_error(report, &txid, e.to_string());
            return false;
        }
        report.recovered.push(txid.clone());
        match dir.remove_with(false) {
            Ok(()) => true,
            Err(not) => {
                self.not_removed(report, &txid, not.stop);
                false
            }
        }
    }
}
