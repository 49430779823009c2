//! `dot-journal-fmt --audit --root R`: `ROOT/audit.log` for people (`--json`: one record per line
//! for machines). Every line must be a valid record: the first that is not stops the tool with
//! `audit-log-malformed` naming its line number (fail closed: a log that cannot be read whole is
//! not shown in part).

use crate::{iso8601_utc, FmtError};
use proto::layout::Root;
use proto::trust::{AuditOutcome, AuditRecord};
use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader};

/// Reads and validates every record of the root's audit log (absent log: no records).
pub fn read(root: &Root) -> Result<Vec<AuditRecord>, FmtError> {
    let path = root.audit_log();
    let file = match sys::fs::open_read(&path, false) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
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
    let mut out = Vec::new();
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
            return Err(bad("the last line has no newline (a torn write)".into()));
        };
        out.push(AuditRecord::parse_line(body).map_err(|e| bad(e.to_string()))?);
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
