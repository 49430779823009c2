//! `dot-journal-fmt`: read, validate and print run journals for people (`--json` for machines).
//!
//! Every line of a journal is shown, never hidden: each record (time, seq, kind, key fields), each
//! bad line (bad checksum, unknown record) with its line number, a torn tail with its length, and
//! the run's state as [`proto::journal::classify`] decides it. The tool only reports: it exits 0
//! whenever it could read every journal it was given.
#![forbid(unsafe_code)]

pub mod audit;

use cli::Next;
use cli::Output;
use proto::journal::{classify, Journal, Line, Record, RunState, MAX_JOURNAL};
use proto::layout::{is_txid, Root, JOURNAL_FILE};
use proto::{ErrorObject, Kind, ToErrorObject};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// `dot-journal-fmt`: print run journals, one line per record, and each run's state. Bad lines and
/// torn tails are shown, never hidden.
#[derive(argh::FromArgs, Debug)]
pub struct Args {
    /// print JSON lines instead of text: one JSON object per journal (or audit record) per line
    #[argh(switch)]
    pub json: bool,
    /// print the launch audit log, STATE/audit.log (needs --root or --state), instead of run
    /// journals; a malformed line is an error
    #[argh(switch)]
    pub audit: bool,
    /// format every run under ROOT/txn/, in txid order
    #[argh(option, from_str_fn(cli::path))]
    pub root: Option<PathBuf>,
    /// the state directory holding txn/ and audit.log, when it is apart from the root (it
    /// replaces --root: only the state is read)
    #[argh(option, from_str_fn(cli::path))]
    pub state: Option<PathBuf>,
    /// journal files to format (instead of --root); - reads one journal from stdin
    #[argh(positional, from_str_fn(cli::path))]
    pub journals: Vec<PathBuf>,
}

/// One journal, as `--json` prints it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalReport {
    /// The journal's path.
    pub journal: String,
    /// The run's transaction id: its directory's name, or else the BEGIN record's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txid: Option<String>,
    pub state: RunState,
    /// Why the state is UNRECOGNIZED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The valid records, in order.
    pub records: Vec<Record>,
    /// The complete lines that are not records.
    pub bad_lines: Vec<BadLine>,
    /// Length of a last line without its newline (a torn write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torn_tail_bytes: Option<usize>,
}

/// A complete line that is not a record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BadLine {
    /// 1-based line number.
    pub line_no: usize,
    pub error: String,
    pub bytes: usize,
}

/// One journal read from stdin (`-`): at most the classifier's limit and one byte more, so an
/// oversized one is classified as such.
fn read_stdin() -> Result<Formatted, FmtError> {
    let failed = |source| FmtError::Read {
        path: PathBuf::from("-"),
        source,
    };
    let mut stdin = io::stdin().lock();
    let mut bytes = Vec::new();
    (&mut stdin)
        .take(MAX_JOURNAL as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    // An oversized journal is reported with its real size: the rest is counted, not kept.
    let rest = if bytes.len() > MAX_JOURNAL {
        io::copy(&mut stdin, &mut io::sink()).map_err(failed)?
    } else {
        0
    };
    let journal = classify_sized(&bytes, bytes.len() as u64 + rest);
    let txid = match journal.begin() {
        Some(Record::Begin { txid, .. }) => Some(txid.clone()),
        _ => None,
    };
    Ok(Formatted {
        path: PathBuf::from("-"),
        txid,
        journal,
    })
}

/// [`classify`] of a journal's first bytes, `bytes`, when the whole journal is `size` bytes: one
/// over the classifier's limit is UNRECOGNIZED with its real size (only one byte more than the
/// limit is ever read).
fn classify_sized(bytes: &[u8], size: u64) -> Journal {
    if size > MAX_JOURNAL as u64 {
        return unrecognized(format!("journal is {size} bytes, over {MAX_JOURNAL}"));
    }
    classify(bytes)
}

/// Why journals could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FmtError {
    #[error("{0}")]
    Usage(&'static str),
    #[error("{path} does not exist")]
    NoJournal { path: PathBuf },
    #[error("{path} is a {what}, not a journal file")]
    NotAJournal { path: PathBuf, what: &'static str },
    #[error("{path} does not exist: not a platform root")]
    NoTxn { path: PathBuf, next: Next },
    #[error("could not read {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("could not list {path}: {source}")]
    ListTxn { path: PathBuf, source: io::Error },
    #[error("{path} line {line_no} is not an audit record: {why}")]
    AuditMalformed {
        path: PathBuf,
        line_no: usize,
        why: String,
    },
}

impl ToErrorObject for FmtError {
    fn kind(&self) -> Kind {
        match self {
            FmtError::Usage(_) => Kind::Usage,
            FmtError::NoJournal { .. } => Kind::NoJournal,
            FmtError::NotAJournal { .. } => Kind::NotAJournal,
            FmtError::NoTxn { .. } => Kind::NotARoot,
            FmtError::Read { .. } | FmtError::ListTxn { .. } => Kind::Io,
            FmtError::AuditMalformed { .. } => Kind::AuditLogMalformed,
        }
    }

    fn to_error_object(&self) -> ErrorObject {
        let obj = ErrorObject::new(self.kind(), self.to_string());
        match self {
            FmtError::Usage(_) => obj.next(&Next::cmd("dot-journal-fmt").arg("--help")),
            FmtError::NoTxn { path, next } => obj.path(path).next(next),
            FmtError::NoJournal { path }
            | FmtError::NotAJournal { path, .. }
            | FmtError::Read { path, .. }
            | FmtError::ListTxn { path, .. } => obj.path(path),
            FmtError::AuditMalformed { path, line_no, .. } => {
                obj.path(path).value(line_no.to_string())
            }
        }
    }
}

/// One journal read and classified.
#[derive(Debug)]
pub struct Formatted {
    pub path: PathBuf,
    pub txid: Option<String>,
    pub journal: Journal,
}

impl Formatted {
    /// The `--json` object.
    pub fn report(&self) -> JournalReport {
        JournalReport {
            journal: self.path.display().to_string(),
            txid: self.txid.clone(),
            state: self.journal.state,
            problem: self.journal.problem.clone(),
            records: self.journal.records().cloned().collect(),
            bad_lines: self
                .journal
                .lines
                .iter()
                .filter_map(|l| match l {
                    Line::Bad {
                        line_no,
                        error,
                        bytes,
                    } => Some(BadLine {
                        line_no: *line_no,
                        error: error.to_string(),
                        bytes: *bytes,
                    }),
                    Line::Record(_) => None,
                })
                .collect(),
            torn_tail_bytes: self.journal.torn_tail,
        }
    }

    /// The text for people: a heading, one line per journal line, the state. Every line is
    /// shown with what a terminal would act on escaped (`cli::visible`): a journal's strings (a
    /// target's path, a version, a problem quoting the bytes) are any text its writer chose, and
    /// a line break or an escape sequence in one must not forge a line of its own.
    pub fn text(&self) -> String {
        let mut lines = Vec::with_capacity(self.journal.lines.len() + 3);
        let mut heading = format!("journal {}", self.path.display());
        if let Some(txid) = &self.txid {
            let _ = write!(heading, " (run {txid})");
        }
        lines.push(heading);
        for line in &self.journal.lines {
            match line {
                Line::Record(r) => {
                    let line = format!(
                        "  {}  #{:<2} {:<9} {}",
                        iso8601_utc(r.at_ms()),
                        r.seq(),
                        kind_word(r),
                        key_fields(r)
                    );
                    lines.push(line.trim_end().to_owned());
                }
                Line::Bad {
                    line_no,
                    error,
                    bytes,
                } => lines.push(format!(
                    "  line {line_no}: BAD LINE ({bytes} bytes): {error}"
                )),
            }
        }
        if let Some(n) = self.journal.torn_tail {
            lines.push(format!(
                "  torn tail: {n} bytes without a newline (not a record)"
            ));
        }
        let mut state = format!("  state: {}", self.journal.state);
        if let Some(p) = &self.journal.problem {
            let _ = write!(state, " ({p})");
        }
        lines.push(state);
        let mut s = String::new();
        for line in &lines {
            s.push_str(&cli::visible(line));
            s.push('\n');
        }
        s
    }
}

fn kind_word(r: &Record) -> &'static str {
    match r {
        Record::Begin { .. } => "BEGIN",
        Record::Prepared { .. } => "PREPARED",
        Record::Committed { .. } => "COMMITTED",
    }
}

/// The fields a person looks for first.
fn key_fields(r: &Record) -> String {
    match r {
        Record::Begin {
            name,
            version,
            sha256,
            containment,
            pid,
            ..
        } => {
            let hex = sha256.to_hex();
            format!(
                "{name} {version} sha256 {} {containment} pid {pid}",
                &hex[..12]
            )
        }
        Record::Prepared { target, files, .. } => format!(
            "target {target}, {} file{}",
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        ),
        Record::Committed { .. } => String::new(),
    }
}

/// `at_ms` (milliseconds since the Unix epoch) as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn iso8601_utc(at_ms: u64) -> String {
    let ms = at_ms % 1000;
    let secs = at_ms / 1000;
    let (days, day_secs) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        day_secs / 3600,
        day_secs / 60 % 60,
        day_secs % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// `dot-journal-fmt`'s entry point.
pub fn run(args: Args) -> Result<Output, FmtError> {
    // Only the state part is read: its directory is the root's unless --state names another.
    // A root from DOT_ROOT (cli) gives way to journal files named on the command line.
    let root = (args.journals.is_empty() || cli::env_root().is_none())
        .then_some(args.root.as_ref())
        .flatten();
    let state = args.state.as_ref().or(root);
    if args.audit {
        let (Some(root), true) = (state, args.journals.is_empty()) else {
            return Err(FmtError::Usage(
                "--audit needs --root DIR (or --state DIR) and no journal files",
            ));
        };
        let mut out = String::new();
        let log = audit::read(&Root::single(root))?;
        for r in &log.records {
            if args.json {
                out.push_str(&String::from_utf8_lossy(&r.to_line()));
            } else {
                out.push_str(&audit::text(r));
            }
        }
        if !args.json {
            for (line_no, bytes) in &log.torn {
                let _ = writeln!(
                    out,
                    "line {line_no}: torn write, {bytes} bytes, not a record"
                );
            }
        }
        return Ok(Output::text(out));
    }
    let formatted = match (state, args.journals.is_empty()) {
        (Some(root), true) => {
            let runs = read_root(&Root::single(root))?;
            // JSON is one line per run: none is no line. A person is told.
            if runs.is_empty() && !args.json {
                let txn = Root::single(root).txn();
                return Ok(Output::text(format!("no runs in {}\n", txn.display())));
            }
            runs
        }
        (None, false) => args
            .journals
            .iter()
            .map(|p| read_file(p))
            .collect::<Result<_, _>>()?,
        (Some(_), false) => {
            return Err(FmtError::Usage(
                "give either --root (or --state) or journal files, not both",
            ))
        }
        (None, true) => {
            return Err(FmtError::Usage(
                "give --root DIR (or --state DIR) or journal files",
            ))
        }
    };
    let mut out = String::new();
    for (i, f) in formatted.iter().enumerate() {
        if args.json {
            out.push_str(&serde_json::to_string(&f.report()).unwrap_or_default());
            out.push('\n');
        } else {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(&f.text());
        }
    }
    Ok(Output::text(out))
}

/// Reads one journal named on the command line.
pub fn read_file(path: &Path) -> Result<Formatted, FmtError> {
    if path == Path::new("-") {
        return read_stdin();
    }
    let (bytes, size) = match read_journal(path, false)? {
        Ok(read) => read,
        Err(what) => {
            return Err(FmtError::NotAJournal {
                path: path.into(),
                what,
            })
        }
    };
    let journal = classify_sized(&bytes, size);
    let dir_txid = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .filter(|n| is_txid(n))
        .map(str::to_owned);
    let txid = dir_txid.or_else(|| match journal.begin() {
        Some(Record::Begin { txid, .. }) => Some(txid.clone()),
        _ => None,
    });
    Ok(Formatted {
        path: path.into(),
        txid,
        journal,
    })
}

/// Reads every run's journal under `root`'s `txn/`, in name order, classified by the rules
/// `dot-discard` and `dot-launch recover` examine a run with (`txn::run::peek`: the name, the run
/// directory's owner and mode, the journal's type, owner, links, mode and size), so a run they
/// would call UNRECOGNIZED is shown so, with their reason. Every entry of `txn/` is listed: one
/// that is not a run is shown as UNRECOGNIZED with the reason, and the listing carries on. An
/// entry that vanishes while it is read is left out.
pub fn read_root(root: &Root) -> Result<Vec<Formatted>, FmtError> {
    let txn = root.txn();
    let dir = match sys::fs::open_dir(&txn) {
        Ok(fd) => fd,
        Err(nix::errno::Errno::ENOENT | nix::errno::Errno::ENOTDIR) => return Err(no_txn(root)),
        Err(e) => {
            return Err(FmtError::ListTxn {
                path: txn,
                source: e.into(),
            })
        }
    };
    let names = txn::tree::list(&dir, usize::MAX).map_err(|e| FmtError::ListTxn {
        path: txn.clone(),
        source: e.into(),
    })?;
    let uid = nix::unistd::geteuid().as_raw();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let shown = name.to_string_lossy().into_owned();
        let txid = Some(shown.clone()).filter(|n| is_txid(n));
        let path = txn
            .join(std::ffi::OsStr::from_bytes(name.as_bytes()))
            .join(JOURNAL_FILE);
        let journal = match txn::run::peek(&dir, &name, uid) {
            txn::run::Peek::Gone => continue,
            txn::run::Peek::Retain(_, problem) => unrecognized(problem),
            txn::run::Peek::Journal(j) => j,
        };
        out.push(Formatted {
            path,
            txid,
            journal,
        });
    }
    Ok(out)
}

/// `txn/` is missing: the command that makes the root, when `init` can make it at that path.
fn no_txn(root: &Root) -> FmtError {
    let dir = root.path();
    let next = match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => Next::cmd("dot-register")
            .args(["init", "--root"])
            .raw("DIR"),
        _ => cli::next::init_root(dir),
    };
    FmtError::NoTxn {
        path: root.txn(),
        next,
    }
}

fn unrecognized(problem: String) -> Journal {
    Journal {
        lines: Vec::new(),
        torn_tail: None,
        state: RunState::Unrecognized,
        problem: Some(problem),
    }
}

/// Reads a journal's bytes (at most one byte more than the classifier accepts) and its size.
/// `Ok(Err(what))`: not a regular file. With `no_follow`, a symbolic link is not followed.
type JournalRead = Result<(Vec<u8>, u64), &'static str>;

fn read_journal(path: &Path, no_follow: bool) -> Result<JournalRead, FmtError> {
    let file = match sys::fs::open_read(path, !no_follow) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(FmtError::NoJournal { path: path.into() })
        }
        Err(e) if no_follow && e.raw_os_error() == Some(libc::ELOOP) => {
            return Ok(Err("symbolic link"))
        }
        Err(source) => {
            return Err(FmtError::Read {
                path: path.into(),
                source,
            })
        }
    };
    let meta = file.metadata().map_err(|source| FmtError::Read {
        path: path.into(),
        source,
    })?;
    if !meta.is_file() {
        return Ok(Err(kind_of(&meta)));
    }
    let bytes =
        sys::fs::read_at_most(&file, MAX_JOURNAL as u64 + 1).map_err(|source| FmtError::Read {
            path: path.into(),
            source,
        })?;
    let size = meta.len().max(bytes.len() as u64);
    Ok(Ok((bytes, size)))
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let ft = meta.file_type();
    if ft.is_file() {
        "regular file"
    } else if ft.is_symlink() {
        "symbolic link"
    } else if ft.is_dir() {
        "directory"
    } else if ft.is_fifo() {
        "fifo"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "device"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_times_by_hand() {
        assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601_utc(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601_utc(1_764_000_000_123), "2025-11-24T16:00:00.123Z");
        assert_eq!(iso8601_utc(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(iso8601_utc(4_107_542_400_000), "2100-03-01T00:00:00.000Z");
    }
}
