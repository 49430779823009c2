//! The launch decision in `ROOT/audit.log`: one line per launch, allowed or refused, and the
//! thread that makes an allowed launch's line durable while the run proceeds.

use crate::decide::Decided;
use crate::LaunchError;
use proto::layout::Root;
use proto::{Kind, Name, ToErrorObject};
use std::path::PathBuf;

/// Appends the launch decision to `ROOT/audit.log` with one write. A refusal is made durable
/// (fdatasync) at once. An allowed launch gets its line back unsynced: [`AuditSync`] makes it
/// durable on a second thread while the run proceeds, and the run waits for it before it can make
/// anything durable (PREPARED) or report a result. Not written when the root itself was refused
/// (missing or unsafe: nothing in it is trusted, so nothing is written into it). An allowed launch
/// whose record cannot be written does not run; a refusal stays the refusal.
pub(crate) fn record_decision(
    root: &Root,
    name: &Name,
    decision: &Result<Decided, LaunchError>,
) -> Result<Option<AuditSync>, LaunchError> {
    use proto::trust::{AuditAction, AuditOutcome, AuditRecord};
    let now = verify::trust::now();
    let rec = match decision {
        Ok(d) => {
            let e = &d.verified.entry;
            let mut rec = AuditRecord::new(now, AuditAction::Launch, AuditOutcome::Allowed);
            rec.version = Some(e.version.to_string());
            rec.publisher = e.publisher.as_ref().map(|p| p.to_string());
            rec.key_id = d.verified.key_id.clone();
            if d.verified.key_ids.len() > 1 {
                rec.key_ids = d.verified.key_ids.clone();
            }
            rec.level = d.verified.level;
            rec.sha256 = Some(e.sha256);
            rec
        }
        Err(e) if matches!(e.kind(), Kind::RootMissing | Kind::RootUnsafe) => return Ok(None),
        Err(e) => {
            let mut rec = AuditRecord::new(now, AuditAction::Launch, AuditOutcome::Refused);
            rec.kind = Some(e.kind());
            rec.detail = Some(e.to_string());
            rec
        }
    };
    let rec = AuditRecord {
        name: Some(name.to_string()),
        ..rec
    };
    let path = root.audit_log();
    let appended = sys::fs::append_line_unsynced(&path, &rec.to_line());
    match (appended, decision) {
        (Ok(line), Ok(_)) => AuditSync::start(line, path).map(Some),
        (Err(e), Ok(_)) => match sys::fs::not_regular(&e) {
            Some(kind) => Err(verify::VerifyError::RootUnsafe {
                path,
                reason: format!(
                    "the audit log is a {kind}, not a plain regular file of the root's own; nothing is appended to it and nothing runs (remove it: the next launch creates it)"
                ),
            }
            .into()),
            None => Err(LaunchError::io("appending to the audit log", path, e)),
        },
        (Ok(line), Err(_)) => {
            let _ = line.sync();
            Ok(None)
        }
        (Err(_), Err(_)) => Ok(None),
    }
}

/// The allowed launch's audit line being made durable on its own thread (fdatasync takes about as
/// long as a process start here, so it overlaps the run instead of preceding it). `wait` joins it;
/// dropping it joins too, so no path out of `launch` leaves the line undurable.
pub(crate) struct AuditSync {
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    path: PathBuf,
}

impl AuditSync {
    fn start(line: sys::fs::Appended, path: PathBuf) -> Result<AuditSync, LaunchError> {
        let thread = std::thread::Builder::new()
            .name("audit-sync".into())
            .spawn(move || line.sync())
            .map_err(|e| LaunchError::io("starting the audit log sync", &path, e))?;
        Ok(AuditSync {
            thread: Some(thread),
            path,
        })
    }

    /// Waits until the line is durable.
    pub(crate) fn wait(&mut self) -> Result<(), LaunchError> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        let result = thread
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the audit log sync thread panicked")));
        result.map_err(|e| LaunchError::io("syncing the audit log", &self.path, e))
    }
}

impl Drop for AuditSync {
    fn drop(&mut self) {
        let _ = self.wait();
    }
}
