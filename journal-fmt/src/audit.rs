//! `dot-journal-fmt --audit --root R`: `ROOT/audit.log` for people (`--json`: one record per line
//! for machines). Every line must be a valid record or a torn write: the first that is neither
//! stops the tool with `audit-log-malformed` naming its line number (fail closed: a log that
//! cannot be read whole is not shown in part).
//!
//! A torn write is an append cut short (ENOSPC, a crash): the last line without its newline, or
//! a line that is JSON ending before its object does (the appender starts the next record on a
//! line of its own when the log does not end in a newline, `sys::fs::append_line`). It is not a
//! record; the text form shows it as one line (`line N: torn write, B bytes, not a record`),
//! `--json` leaves it out.

use crate::{iso8601_utc, FmtError};
use proto::layout::Root;
use proto::trust::{AuditOutcome, AuditRecord};
use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader};

/// What the audit log holds: its records, and the torn writes met on the way.
#[derive(Debug, Default)]
pub struct Log {
    pub records: Vec<AuditRecord>,
    /// (line number, bytes) of each torn write.
    pub torn: Vec<(usize, usize)>,
}

/// Whether `body` is a JSON text cut short: it ends before its value does.
fn cut_short(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body).is_err_and(|e| e.is_eof())
}

/// Reads and validates every record of the root's audit log (absent log: no records).
pub fn read(root: &Root) -> Result<Log, FmtError> {
    let path = root.audit_log();
    let file = match sys::fs::open_read(&path, false) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Log::default()),
        Err(source) => return Err(FmtError::Read { path, source }),
    };
    let meta = file.metadata().map_err(|source| FmtError::Read {
        path: path.clone(),
        source,
    })?;
    if !meta.is_file() {
        return Err(FmtError::NotAJournal {
            path,
            what: "special file",
        });
    }
    let mut out = Log::default();
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    for line_no in 1.. {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|source| FmtError::Read {
                path: path.clone(),
                source,
            })?;
        if n == 0 {
            break;
        }
        let bad = |why: String| FmtError::AuditMalformed {
            path: path.clone(),
            line_no,
            why,
        };
        let Some(body) = line.strip_suffix(b"\n") else {
            out.torn.push((line_no, line.len()));
            break;
        };
        match AuditRecord::parse_line(body) {
            Ok(r) => out.records.push(r),
            Err(_) if cut_short(body) => out.torn.push((line_no, body.len())),
            Err(e) => return Err(bad(e.to_string())),
        }
    }
    Ok(out)
}

/// One line for people: time, action, outcome (and kind), subject, overrides, detail.
pub fn text(r: &AuditRecord) -> String {
    let action = serde_json::to_value(r.action)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let mut s = format!("{}  {action:<16}", iso8601_utc(r.at.saturating_mul(1000)));
    match (r.outcome, &r.kind) {
        (AuditOutcome::Allowed, _) => s.push_str(" allowed"),
        (AuditOutcome::Refused, Some(k)) => {
            let _ = write!(s, " REFUSED {k}");
        }
        (AuditOutcome::Refused, None) => s.push_str(" REFUSED"),
    }
    for (label, v) in [
        ("name", r.name.clone()),
        ("version", r.version.clone()),
        ("publisher", r.publisher.clone()),
        ("key", r.key_id.clone()),
        ("sha256", r.sha256.map(|d| d.to_hex()[..12].to_owned())),
    ] {
        if let Some(v) = v {
            let _ = write!(s, " {label} {v}");
        }
    }
    if !r.overrides.is_empty() {
        let _ = write!(s, " overrides [{}]", r.overrides.join(", "));
    }
    if let Some(d) = &r.detail {
        let _ = write!(s, " -- {d}");
    }
    s.push('\n');
    s
}
