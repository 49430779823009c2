//! Journal records and the pure state classifier shared by `dot-launch recover`, `dot-discard` and
//! `dot-journal-fmt`.
//!
//! A journal is JSON lines. Every record carries `v`, `seq`, `kind`, `at_ms` and a checksum `sum`:
//! the first 16 hex digits of the SHA-256 of the record's own bytes with the `,"sum":"…"` member
//! removed. The checksum is always the last member, so checking it needs no re-serialization: it is
//! computed over the exact bytes on disk. A record is exactly what [`Record::encode`] writes: it
//! begins with `{"kind":"` and ends with its checksum member. Any complete record anywhere in the
//! file counts as present; only a final fragment that holds no complete record is a torn write.

use crate::digest::{hex, Sha256};
use crate::entry::Containment;
use crate::layout::{is_plain_name, is_target_temp};
use crate::name::Name;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

/// The record version this code writes and reads.
pub const RECORD_VERSION: u32 = 1;
/// The largest journal the classifier reads; anything longer is UNRECOGNIZED.
pub const MAX_JOURNAL: usize = 4 * 1024 * 1024;
const SUM_KEY: &[u8] = b",\"sum\":\"";
/// How every record begins: the encoder writes the tag first.
const RECORD_START: &[u8] = b"{\"kind\":\"";
/// The checksum member's value and the closing `"}` after [`SUM_KEY`].
const SUM_TAIL: usize = 16 + 2;

/// One journal record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "SCREAMING_SNAKE_CASE", deny_unknown_fields)]
pub enum Record {
    /// The run exists; no target mutation is authorized.
    Begin {
        v: u32,
        seq: u64,
        at_ms: u64,
        txid: String,
        name: Name,
        version: String,
        sha256: Sha256,
        containment: Containment,
        pid: u32,
        /// Absolute path of the target directory; its temp files are `.dot-TXID-N.tmp`.
        target: String,
        /// The target directory's identity when the run began (absent in journals written before
        /// it was recorded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target_id: Option<TargetId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sum: Option<String>,
    },
    /// Temp files are durable in the target directory; renaming them into place is authorized.
    Prepared {
        v: u32,
        seq: u64,
        at_ms: u64,
        /// Absolute path of the target directory.
        target: String,
        /// BEGIN's `target_id`, when BEGIN has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target_id: Option<TargetId>,
        files: Vec<PreparedFile>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sum: Option<String>,
    },
    /// Every file is in place and the target directory is durable.
    Committed {
        v: u32,
        seq: u64,
        at_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sum: Option<String>,
    },
}

/// A directory's identity: its device and inode numbers (`st_dev`, `st_ino`). BEGIN and PREPARED
/// record the target directory's, so a tool acting on the run later can tell whether the target's
/// path still names the directory the run wrote its temp files in (not one renamed away, replaced,
/// or reached through a bind mount that is gone).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetId {
    pub dev: u64,
    pub ino: u64,
}

impl std::fmt::Display for TargetId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "device {} inode {}", self.dev, self.ino)
    }
}

/// One output file of a PREPARED record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreparedFile {
    /// Final name in the target directory (one path component).
    pub name: String,
    /// Temp file name in the target directory, renamed onto `name`.
    pub temp: String,
    pub size: u64,
    pub sha256: Sha256,
    /// Digest of the file `name` replaces, or `None` when it did not exist.
    pub old: Option<Sha256>,
}

/// The kind of a record, for display.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RecordKind {
    Begin,
    Prepared,
    Committed,
}

impl Record {
    pub fn seq(&self) -> u64 {
        match self {
            Record::Begin { seq, .. }
            | Record::Prepared { seq, .. }
            | Record::Committed { seq, .. } => *seq,
        }
    }

    pub fn at_ms(&self) -> u64 {
        match self {
            Record::Begin { at_ms, .. }
            | Record::Prepared { at_ms, .. }
            | Record::Committed { at_ms, .. } => *at_ms,
        }
    }

    pub fn kind(&self) -> RecordKind {
        match self {
            Record::Begin { .. } => RecordKind::Begin,
            Record::Prepared { .. } => RecordKind::Prepared,
            Record::Committed { .. } => RecordKind::Committed,
        }
    }

    fn version(&self) -> u32 {
        match self {
            Record::Begin { v, .. } | Record::Prepared { v, .. } | Record::Committed { v, .. } => {
                *v
            }
        }
    }

    fn strip_sum(&mut self) {
        match self {
            Record::Begin { sum, .. }
            | Record::Prepared { sum, .. }
            | Record::Committed { sum, .. } => *sum = None,
        }
    }

    /// Encodes the record as one journal line, checksum last, newline included.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = self.clone();
        body.strip_sum();
        let mut line = serde_json::to_vec(&body).unwrap_or_default();
        let sum = checksum(&line);
        line.pop(); // the closing brace
        line.extend_from_slice(SUM_KEY);
        line.extend_from_slice(sum.as_bytes());
        line.extend_from_slice(b"\"}\n");
        line
    }

    /// Decodes one complete line (without its newline), checking the checksum on the exact bytes.
    /// The line must begin as the encoder begins every record, with `{"kind":"`.
    pub fn decode(line: &[u8]) -> Result<Record, LineError> {
        if !line.starts_with(RECORD_START) {
            return Err(LineError::Unknown(
                "a record begins with {\"kind\":\"".into(),
            ));
        }
        let at = find_last(line, SUM_KEY).ok_or(LineError::NoChecksum)?;
        let mut body = line[..at].to_vec();
        body.push(b'}');
        let stated = &line[at + SUM_KEY.len()..];
        let stated = stated.strip_suffix(b"\"}").ok_or(LineError::NoChecksum)?;
        if stated != checksum(&body).as_bytes() {
            return Err(LineError::BadChecksum);
        }
        let rec: Record =
            serde_json::from_slice(line).map_err(|e| LineError::Unknown(e.to_string()))?;
        if rec.version() != RECORD_VERSION {
            return Err(LineError::Unknown(format!(
                "record version {} is not {RECORD_VERSION}",
                rec.version()
            )));
        }
        Ok(rec)
    }
}

/// The complete records inside `fragment`, a final piece of a journal without its newline, in
/// order. Each checksum member followed by 16 digits and `"}` closes a candidate, which begins at
/// the last `{"kind":"` after the previous checksum member: a record holds exactly one checksum
/// member (inside a string every quote is escaped), so no byte is part of two candidates and the
/// search is linear in the fragment's length.
fn records_in(fragment: &[u8]) -> Vec<RecordKind> {
    let mut found = Vec::new();
    let mut floor = 0;
    while let Some(rel) = find_first(&fragment[floor..], SUM_KEY) {
        let at = floor + rel;
        let start = find_last(&fragment[floor..at], RECORD_START).map(|s| floor + s);
        let end = at + SUM_KEY.len() + SUM_TAIL;
        if let Some(line) = start.and_then(|s| fragment.get(s..end)) {
            if let Ok(r) = Record::decode(line) {
                found.push(r.kind());
            }
        }
        floor = at + 1;
    }
    found
}

fn checksum(body: &[u8]) -> String {
    hex(&sha2::Sha256::digest(body)[..8])
}

fn find_last(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

fn find_first(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Why a complete line is not a record.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("no checksum member")]
    NoChecksum,
    #[error("checksum does not match the record's bytes")]
    BadChecksum,
    #[error("not a record this version knows: {0}")]
    Unknown(String),
}

/// The state of a run directory, as the table of docs/journal.md (and docs/design.md) defines it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RunState {
    /// No target mutation was authorized: `dot-discard` may delete it.
    Abandoned,
    /// A durable PREPARED without COMMITTED: `dot-launch recover` rolls it forward.
    Prepared,
    /// Committed: only cleanup remains.
    Committed,
    /// Anything else: retained for the operator.
    Unrecognized,
}

impl std::fmt::Display for RunState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RunState::Abandoned => "ABANDONED",
            RunState::Prepared => "PREPARED",
            RunState::Committed => "COMMITTED",
            RunState::Unrecognized => "UNRECOGNIZED",
        })
    }
}

/// One line of a journal as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    Record(Record),
    Bad {
        line_no: usize,
        error: LineError,
        bytes: usize,
    },
}

/// A journal read and classified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Journal {
    pub lines: Vec<Line>,
    /// Length of a last line without its newline (a torn write), if any.
    pub torn_tail: Option<usize>,
    pub state: RunState,
    /// Why the state is UNRECOGNIZED.
    pub problem: Option<String>,
}

impl Journal {
    /// The records, in order (bad lines skipped).
    pub fn records(&self) -> impl Iterator<Item = &Record> {
        self.lines.iter().filter_map(|l| match l {
            Line::Record(r) => Some(r),
            Line::Bad { .. } => None,
        })
    }

    /// The PREPARED record, if the journal holds one.
    pub fn prepared(&self) -> Option<&Record> {
        self.records().find(|r| r.kind() == RecordKind::Prepared)
    }

    /// The BEGIN record, if the journal holds one.
    pub fn begin(&self) -> Option<&Record> {
        self.records().find(|r| r.kind() == RecordKind::Begin)
    }

    /// The target directory the run names (BEGIN's) and, when recorded, its identity.
    pub fn target(&self) -> Option<(&str, Option<TargetId>)> {
        match self.begin() {
            Some(Record::Begin {
                target, target_id, ..
            }) => Some((target.as_str(), *target_id)),
            _ => None,
        }
    }

    /// Whether the journal holds no record at all: it is empty, or its only content is a torn
    /// first line.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// What a journal must also be to be the journal of the run directory `txid`: BEGIN names this
    /// run and an absolute target; PREPARED names the same target, and each of its files a `name`
    /// that is one plain path component (not a temp name) and a `temp` that is one of this run's
    /// temp files (`.dot-TXID-N.tmp`), no name and no temp twice. These are the only names a tool
    /// acting on the run ever touches in the target.
    pub fn check_run(&self, txid: &str) -> Result<(), String> {
        let (begin_target, begin_id) = match self.begin() {
            None => return Ok(()),
            Some(Record::Begin {
                txid: named,
                target,
                target_id,
                ..
            }) => {
                if named != txid {
                    return Err(format!(
                        "BEGIN names run {named:?}, not its directory {txid}"
                    ));
                }
                if !target.starts_with('/') {
                    return Err(format!("BEGIN's target {target:?} is not an absolute path"));
                }
                (target, target_id)
            }
            Some(_) => return Err("BEGIN is not a BEGIN record".into()),
        };
        let Some(Record::Prepared {
            target,
            target_id,
            files,
            ..
        }) = self.prepared()
        else {
            return Ok(());
        };
        if target != begin_target {
            return Err(format!(
                "PREPARED's target {target:?} is not BEGIN's {begin_target:?}"
            ));
        }
        if target_id != begin_id {
            return Err(format!(
                "PREPARED's target_id {target_id:?} is not BEGIN's {begin_id:?}"
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        let mut temps = std::collections::BTreeSet::new();
        for f in files {
            if !is_plain_name(&f.name) || f.name.starts_with(".dot-") {
                return Err(format!(
                    "PREPARED names {:?}, which is not one plain file name",
                    f.name
                ));
            }
            if !is_target_temp(&f.temp, txid) {
                return Err(format!(
                    "PREPARED's temp file {:?} is not one of this run's (.dot-{txid}-N.tmp)",
                    f.temp
                ));
            }
            if !names.insert(f.name.as_str()) || !temps.insert(f.temp.as_str()) {
                return Err(format!("PREPARED names {:?} or {:?} twice", f.name, f.temp));
            }
        }
        Ok(())
    }
}

/// Reads and classifies the journal of the run directory `txid`: [`classify`], then
/// [`Journal::check_run`]; a journal that breaks a run rule is UNRECOGNIZED. Every tool that acts
/// on a run (`dot-discard`, `dot-launch recover`) reads it this way.
pub fn classify_run(bytes: &[u8], txid: &str) -> Journal {
    let mut journal = classify(bytes);
    if journal.state != RunState::Unrecognized {
        if let Err(why) = journal.check_run(txid) {
            journal.state = RunState::Unrecognized;
            journal.problem = Some(why);
        }
    }
    journal
}

/// Reads and classifies a journal's bytes. Pure: never fails, never panics.
pub fn classify(bytes: &[u8]) -> Journal {
    let mut lines = Vec::new();
    let mut problem: Option<String> = None;
    if bytes.len() > MAX_JOURNAL {
        return Journal {
            lines,
            torn_tail: None,
            state: RunState::Unrecognized,
            problem: Some(format!(
                "journal is {} bytes, over {MAX_JOURNAL}",
                bytes.len()
            )),
        };
    }
    let mut rest = bytes;
    let mut line_no = 0;
    let mut torn_tail = None;
    while !rest.is_empty() {
        line_no += 1;
        match rest.iter().position(|&b| b == b'\n') {
            None => {
                // Only a fragment that holds no complete record is a torn write. A complete record
                // in it (one that lost its newline, or several run together) is present: the
                // journal cannot be read as if it were not there, so it fails closed.
                let inside = records_in(rest);
                if !inside.is_empty() {
                    problem.get_or_insert_with(|| {
                        format!(
                            "line {line_no}: the unterminated last line holds complete records {inside:?}"
                        )
                    });
                }
                torn_tail = Some(rest.len());
                break;
            }
            Some(nl) => {
                let line = &rest[..nl];
                rest = &rest[nl + 1..];
                match Record::decode(line) {
                    Ok(r) => lines.push(Line::Record(r)),
                    Err(error) => {
                        problem.get_or_insert_with(|| format!("line {line_no}: {error}"));
                        lines.push(Line::Bad {
                            line_no,
                            error,
                            bytes: line.len(),
                        });
                    }
                }
            }
        }
    }
    let state = match problem {
        Some(_) => RunState::Unrecognized,
        None => match sequence_state(&lines) {
            Ok(s) => s,
            Err(p) => {
                problem = Some(p);
                RunState::Unrecognized
            }
        },
    };
    Journal {
        lines,
        torn_tail,
        state,
        problem,
    }
}

/// The state a well-formed sequence of records stands for: BEGIN, then PREPARED, then COMMITTED,
/// with seq 0, 1, 2.
fn sequence_state(lines: &[Line]) -> Result<RunState, String> {
    const ORDER: [RecordKind; 3] = [
        RecordKind::Begin,
        RecordKind::Prepared,
        RecordKind::Committed,
    ];
    let mut n = 0usize;
    for line in lines {
        let Line::Record(r) = line else {
            return Err("bad line".into());
        };
        let Some(expected) = ORDER.get(n) else {
            return Err(format!("record {} after COMMITTED", n + 1));
        };
        if r.kind() != *expected {
            return Err(format!(
                "record {} is {:?}, expected {:?}",
                n + 1,
                r.kind(),
                expected
            ));
        }
        if r.seq() != n as u64 {
            return Err(format!(
                "record {} has seq {}, expected {n}",
                n + 1,
                r.seq()
            ));
        }
        n += 1;
    }
    Ok(match n {
        0 | 1 => RunState::Abandoned,
        2 => RunState::Prepared,
        _ => RunState::Committed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn begin() -> Record {
        Record::Begin {
            v: 1,
            seq: 0,
            at_ms: 1,
            txid: "t1".into(),
            name: Name::new("hello").expect("name"),
            version: "1.0.0".into(),
            sha256: Sha256::of(b"x"),
            containment: Containment::Audit,
            pid: 7,
            target: "/t".into(),
            target_id: None,
            sum: None,
        }
    }

    fn prepared() -> Record {
        Record::Prepared {
            v: 1,
            seq: 1,
            at_ms: 2,
            target: "/t".into(),
            target_id: None,
            files: vec![PreparedFile {
                name: "a".into(),
                temp: ".dot-tmp.a".into(),
                size: 1,
                sha256: Sha256::of(b"a"),
                old: None,
            }],
            sum: None,
        }
    }

    fn committed() -> Record {
        Record::Committed {
            v: 1,
            seq: 2,
            at_ms: 3,
            sum: None,
        }
    }

    fn journal(records: &[Record]) -> Vec<u8> {
        records.iter().flat_map(|r| r.encode()).collect()
    }

    #[test]
    fn round_trips_with_checksum() {
        for r in [begin(), prepared(), committed()] {
            let line = r.encode();
            let decoded = Record::decode(&line[..line.len() - 1]).expect("decodes");
            assert_eq!(decoded.kind(), r.kind());
            assert_eq!(decoded.seq(), r.seq());
        }
    }

    #[test]
    fn classifies_the_table() {
        assert_eq!(classify(b"").state, RunState::Abandoned);
        assert_eq!(classify(b"{\"v\":1,\"se").state, RunState::Abandoned);
        assert_eq!(classify(&journal(&[begin()])).state, RunState::Abandoned);
        let mut torn = journal(&[begin()]);
        let p = prepared().encode();
        torn.extend_from_slice(&p[..p.len() - 5]); // a prefix of PREPARED: torn
        let j = classify(&torn);
        assert_eq!(
            (j.state, j.torn_tail.is_some()),
            (RunState::Abandoned, true)
        );
        assert_eq!(
            classify(&journal(&[begin(), prepared()])).state,
            RunState::Prepared
        );
        assert_eq!(
            classify(&journal(&[begin(), prepared(), committed()])).state,
            RunState::Committed
        );
    }

    #[test]
    fn anything_odd_is_unrecognized() {
        let mut bad = journal(&[begin()]);
        let at = bad.iter().position(|&b| b == b'h').expect("has an h");
        bad[at] = b'j'; // "hello" -> "jello": checksum no longer matches
        assert_eq!(classify(&bad).state, RunState::Unrecognized);
        // out of order
        assert_eq!(
            classify(&journal(&[prepared()])).state,
            RunState::Unrecognized
        );
        // a complete record this version does not know
        let unknown = b"{\"v\":1,\"seq\":1,\"kind\":\"FROB\",\"sum\":\"0000000000000000\"}\n";
        let mut j = journal(&[begin()]);
        j.extend_from_slice(unknown);
        assert_eq!(classify(&j).state, RunState::Unrecognized);
        // an empty complete line
        assert_eq!(classify(b"\n").state, RunState::Unrecognized);
        // a whole PREPARED that lost only its newline is not a torn write
        let mut j = journal(&[begin(), prepared()]);
        j.pop();
        assert_eq!(classify(&j).state, RunState::Unrecognized);
    }

    #[test]
    fn a_complete_record_in_the_unterminated_tail_is_never_torn() {
        let p = prepared().encode();
        let c = committed().encode();
        // PREPARED lost its newline and a COMMITTED was torn after it, at every length: the
        // PREPARED record is present, so the run is never ABANDONED.
        for cut in 0..c.len() {
            let mut j = journal(&[begin()]);
            j.extend_from_slice(&p[..p.len() - 1]);
            j.extend_from_slice(&c[..cut]);
            let read = classify(&j);
            assert_eq!(read.state, RunState::Unrecognized, "cut {cut}");
            assert!(
                read.problem
                    .as_deref()
                    .is_some_and(|w| w.contains("Prepared")),
                "{:?}",
                read.problem
            );
        }
        // Garbage before a whole record in the tail does not hide it either.
        let mut j = journal(&[begin()]);
        j.extend_from_slice(b"xx{\"kind\":\"PREP");
        j.extend_from_slice(&p[..p.len() - 1]);
        assert_eq!(classify(&j).state, RunState::Unrecognized);
        // A record must begin as the encoder writes it.
        let line = committed().encode();
        let reordered = String::from_utf8(line[..line.len() - 1].to_vec())
            .expect("utf-8")
            .replacen(
                "{\"kind\":\"COMMITTED\",\"v\":1",
                "{\"v\":1,\"kind\":\"COMMITTED\"",
                1,
            );
        assert!(matches!(
            Record::decode(reordered.as_bytes()),
            Err(LineError::Unknown(_))
        ));
    }

    fn run_begin(txid: &str, target: &str) -> Record {
        match begin() {
            Record::Begin {
                v,
                seq,
                at_ms,
                name,
                version,
                sha256,
                containment,
                pid,
                ..
            } => Record::Begin {
                v,
                seq,
                at_ms,
                txid: txid.into(),
                name,
                version,
                sha256,
                containment,
                pid,
                target: target.into(),
                target_id: None,
                sum: None,
            },
            other => other,
        }
    }

    fn run_prepared(target: &str, files: &[(&str, &str)]) -> Record {
        Record::Prepared {
            v: 1,
            seq: 1,
            at_ms: 2,
            target: target.into(),
            target_id: None,
            files: files
                .iter()
                .map(|(name, temp)| PreparedFile {
                    name: (*name).into(),
                    temp: (*temp).into(),
                    size: 1,
                    sha256: Sha256::of(b"a"),
                    old: None,
                })
                .collect(),
            sum: None,
        }
    }

    #[test]
    fn a_run_journal_names_only_its_own_run_and_target() {
        let t = "0123456789abcdef0123456789abcdef";
        let other = "fedcba9876543210fedcba9876543210";
        let temp = crate::layout::target_temp(t, 0);
        let good = journal(&[run_begin(t, "/t"), run_prepared("/t", &[("a", &temp)])]);
        assert_eq!(classify_run(&good, t).state, RunState::Prepared);
        assert_eq!(
            classify_run(&journal(&[run_begin(t, "/t")]), t).state,
            RunState::Abandoned
        );
        let bad: Vec<(Vec<u8>, &str)> = vec![
            (journal(&[run_begin(other, "/t")]), "BEGIN names run"),
            (journal(&[run_begin(t, "t")]), "not an absolute path"),
            (
                journal(&[run_begin(t, "/t"), run_prepared("/u", &[("a", &temp)])]),
                "is not BEGIN's",
            ),
            (
                journal(&[run_begin(t, "/t"), run_prepared("/t", &[("../a", &temp)])]),
                "not one plain file name",
            ),
            (
                journal(&[run_begin(t, "/t"), run_prepared("/t", &[("..", &temp)])]),
                "not one plain file name",
            ),
            (
                journal(&[run_begin(t, "/t"), run_prepared("/t", &[(&temp, &temp)])]),
                "not one plain file name",
            ),
            (
                journal(&[run_begin(t, "/t"), run_prepared("/t", &[("a", "precious")])]),
                "not one of this run's",
            ),
            (
                journal(&[
                    run_begin(t, "/t"),
                    run_prepared("/t", &[("a", &crate::layout::target_temp(other, 0))]),
                ]),
                "not one of this run's",
            ),
            (
                journal(&[
                    run_begin(t, "/t"),
                    run_prepared("/t", &[("a", &temp), ("a", &temp)]),
                ]),
                "twice",
            ),
        ];
        for (bytes, why) in bad {
            let j = classify_run(&bytes, t);
            assert_eq!(j.state, RunState::Unrecognized, "{why}");
            assert!(
                j.problem.as_deref().is_some_and(|p| p.contains(why)),
                "{why}: {:?}",
                j.problem
            );
        }
    }

    fn with_id(mut r: Record, id: Option<TargetId>) -> Record {
        match &mut r {
            Record::Begin { target_id, .. } | Record::Prepared { target_id, .. } => *target_id = id,
            Record::Committed { .. } => {}
        }
        r
    }

    #[test]
    fn the_target_id_is_recorded_and_a_journal_without_it_still_reads() {
        let t = "0123456789abcdef0123456789abcdef";
        let temp = crate::layout::target_temp(t, 0);
        let id = TargetId { dev: 2049, ino: 77 };
        let begin = with_id(run_begin(t, "/t"), Some(id));
        let prepared = with_id(run_prepared("/t", &[("a", &temp)]), Some(id));
        let line = begin.encode();
        let text = String::from_utf8(line.clone()).expect("utf-8");
        assert!(
            text.contains(r#""target":"/t","target_id":{"dev":2049,"ino":77},"sum":"#),
            "{text}"
        );
        let j = classify_run(&journal(&[begin.clone(), prepared.clone()]), t);
        assert_eq!(j.state, RunState::Prepared, "{:?}", j.problem);
        assert_eq!(j.target(), Some(("/t", Some(id))));
        // A journal written before the identity was recorded: the same state, no identity.
        let old = journal(&[run_begin(t, "/t"), run_prepared("/t", &[("a", &temp)])]);
        assert!(!String::from_utf8_lossy(&old).contains("target_id"));
        let j = classify_run(&old, t);
        assert_eq!(j.state, RunState::Prepared);
        assert_eq!(j.target(), Some(("/t", None)));
        // PREPARED must name BEGIN's directory, identity included.
        for other in [None, Some(TargetId { dev: 2049, ino: 78 })] {
            let j = classify_run(
                &journal(&[begin.clone(), with_id(prepared.clone(), other)]),
                t,
            );
            assert_eq!(j.state, RunState::Unrecognized, "{other:?}");
            assert!(
                j.problem
                    .as_deref()
                    .is_some_and(|p| p.contains("target_id")),
                "{:?}",
                j.problem
            );
        }
    }

    #[test]
    fn every_prefix_and_single_byte_corruption_is_safe() {
        let full = journal(&[begin(), prepared(), committed()]);
        let two = journal(&[begin(), prepared()]);
        for cut in 0..=full.len() {
            let s = classify(&full[..cut]).state;
            if cut >= two.len() {
                assert_ne!(
                    s,
                    RunState::Abandoned,
                    "prefix {cut} holds an intact PREPARED"
                );
            }
        }
        for base in [&full, &two] {
            for i in 0..two.len() {
                for b in [0u8, b'\n', b'x', b'}', b'"', 0xff] {
                    let mut c = base.clone();
                    if c[i] == b {
                        continue;
                    }
                    c[i] = b;
                    assert_ne!(
                        classify(&c).state,
                        RunState::Abandoned,
                        "byte {i} set to {b}"
                    );
                }
            }
        }
    }
}
