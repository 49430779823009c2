//! `dot-launch recover`: rolls PREPARED runs forward idempotently; finishes the cleanup of COMMITTED
//! runs; never touches ABANDONED or UNRECOGNIZED ones.

use crate::error::LaunchError;
use crate::rundir::{now_ms, open_dir, RunDir};
use proto::journal::{classify, PreparedFile, Record, RunState, MAX_JOURNAL, RECORD_VERSION};
use proto::layout::{is_txid, Root};
use proto::Sha256;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::Path;

/// What recover did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecoverReport {
    /// PREPARED runs rolled forward to COMMITTED and removed.
    pub recovered: Vec<String>,
    /// COMMITTED runs whose directory was removed.
    pub cleaned: Vec<String>,
    /// Runs left alone, with why.
    pub skipped: Vec<Skipped>,
    /// PREPARED runs that could not be rolled forward: retained for the operator.
    pub conflicts: Vec<Conflict>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skipped {
    pub txid: String,
    pub state: String,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conflict {
    pub txid: String,
    pub file: String,
    pub reason: String,
}

impl RecoverReport {
    /// Anything left that needs the operator.
    pub fn needs_operator(&self) -> bool {
        !self.conflicts.is_empty()
            || self
                .skipped
                .iter()
                .any(|s| s.state == RunState::Unrecognized.to_string())
    }
}

/// Recovers one run (`txid`) or every run under `ROOT/txn/`.
pub fn recover(root: &Root, txid: Option<&str>) -> Result<RecoverReport, LaunchError> {
    let mut report = RecoverReport::default();
    let txids: Vec<String> = match txid {
        Some(t) => {
            if !is_txid(t) || std::fs::symlink_metadata(root.run_dir(t)).is_err() {
                return Err(LaunchError::NoSuchRun {
                    txid: t.to_owned(),
                    path: root.txn(),
                });
            }
            vec![t.to_owned()]
        }
        None => {
            let txn = root.txn();
            let mut v: Vec<String> = std::fs::read_dir(&txn)
                .map_err(|e| LaunchError::io("listing runs", &txn, e))?
                .filter_map(|e| e.ok().and_then(|e| e.file_name().into_string().ok()))
                .filter(|n| is_txid(n))
                .collect();
            v.sort();
            v
        }
    };
    for t in txids {
        recover_one(root, &t, &mut report)?;
    }
    Ok(report)
}

fn read_journal(root: &Root, txid: &str) -> Result<Vec<u8>, LaunchError> {
    let path = root.journal(txid);
    let (f, _) = sys::fs::open_regular(&path).map_err(|e| {
        LaunchError::io(
            "opening the journal",
            &path,
            std::io::Error::other(e.to_string()),
        )
    })?;
    let mut bytes = Vec::new();
    f.take(MAX_JOURNAL as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| LaunchError::io("reading the journal", &path, e))?;
    Ok(bytes)
}

fn recover_one(root: &Root, txid: &str, report: &mut RecoverReport) -> Result<(), LaunchError> {
    let skip = |state: &str, reason: String| Skipped {
        txid: txid.to_owned(),
        state: state.to_owned(),
        reason,
    };
    if std::fs::symlink_metadata(root.run_dir(txid)).is_ok_and(|m| !m.is_dir()) {
        report
            .skipped
            .push(skip("UNRECOGNIZED", "not a directory".into()));
        return Ok(());
    }
    let bytes = match read_journal(root, txid) {
        Ok(b) => b,
        Err(e) => {
            report.skipped.push(skip("UNRECOGNIZED", e.to_string()));
            return Ok(());
        }
    };
    let journal = classify(&bytes);
    let records = journal.records().count() as u64;
    let Some(mut run) = RunDir::reopen(root, txid, records)? else {
        report
            .skipped
            .push(skip("LIVE", "its dot-launch holds the run's lock".into()));
        return Ok(());
    };
    // Re-read under the lock: the journal may have moved on before we took it.
    let journal = classify(&read_journal(root, txid)?);
    match journal.state {
        RunState::Abandoned => {
            report.skipped.push(skip(
                "ABANDONED",
                "nothing was authorized; dot-discard removes it".into(),
            ));
        }
        RunState::Unrecognized => {
            let why = journal
                .problem
                .clone()
                .unwrap_or_else(|| "unrecognized journal".into());
            report.skipped.push(skip("UNRECOGNIZED", why));
        }
        RunState::Committed => {
            run.remove()?;
            report.cleaned.push(txid.to_owned());
        }
        RunState::Prepared => {
            let Some(Record::Prepared { target, files, .. }) = journal.prepared().cloned() else {
                report.skipped.push(skip(
                    "UNRECOGNIZED",
                    "PREPARED state without its record".into(),
                ));
                return Ok(());
            };
            let target = Path::new(&target);
            match roll_forward(target, &files) {
                Ok(()) => {
                    let rec = Record::Committed {
                        v: RECORD_VERSION,
                        seq: journal.records().count() as u64,
                        at_ms: now_ms(),
                        sum: None,
                    };
                    run.append(&rec, true)?;
                    run.remove()?;
                    report.recovered.push(txid.to_owned());
                }
                Err((file, reason)) => report.conflicts.push(Conflict {
                    txid: txid.to_owned(),
                    file,
                    reason,
                }),
            }
        }
    }
    Ok(())
}

/// What is at `dir/name`: `Ok(None)` absent, `Ok(Some(digest))` a regular file, `Err` anything else.
fn digest_at(dir: &Path, name: &str) -> Result<Option<Sha256>, String> {
    let path = dir.join(name);
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
        Ok(_) => {
            let (f, _) =
                sys::fs::open_regular(&path).map_err(|e| format!("{} {e}", path.display()))?;
            verify::digest::digest_file(&f)
                .map(|(d, _)| Some(d))
                .map_err(|e| format!("{}: {e}", path.display()))
        }
    }
}

/// Each file must be either already in place (target has the prepared digest) or renameable (temp
/// has the prepared digest and the target still holds the old bytes). Checks every file before
/// renaming any, so a conflict changes nothing.
fn roll_forward(target: &Path, files: &[PreparedFile]) -> Result<(), (String, String)> {
    let mut to_rename = Vec::new();
    let mut stale_temps = Vec::new();
    for f in files {
        let conflict = |why: String| (f.name.clone(), why);
        let current = digest_at(target, &f.name).map_err(conflict)?;
        let temp = digest_at(target, &f.temp).map_err(conflict)?;
        if current == Some(f.sha256) {
            // Already in place. A temp file still holding the prepared bytes means the target
            // already had them (old == new) and the rename never happened: it is ours to remove.
            if temp == Some(f.sha256) {
                stale_temps.push(f.temp.clone());
            }
            continue;
        }
        if temp != Some(f.sha256) {
            return Err(conflict(format!(
                "the target holds neither the prepared bytes nor can they be restored: temp file {} is {}",
                f.temp,
                if temp.is_none() { "missing" } else { "changed" }
            )));
        }
        if current != f.old {
            return Err(conflict(format!(
                "{} changed since the run prepared it (neither the old bytes nor the prepared ones)",
                target.join(&f.name).display()
            )));
        }
        to_rename.push(f.clone());
    }
    let dir =
        open_dir(target).map_err(|e| (String::new(), format!("{}: {e}", target.display())))?;
    for temp in stale_temps {
        nix::unistd::unlinkat(&dir, temp.as_str(), nix::unistd::UnlinkatFlags::NoRemoveDir)
            .map_err(|e| (temp.clone(), format!("removing the stale temp file: {e}")))?;
    }
    // The renames (if any) and the removals are made durable by rename_all's directory fsync.
    crate::commit::rename_all(&dir, target, &to_rename).map_err(|e| (String::new(), e.to_string()))
}
