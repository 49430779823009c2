//! Asserting error kinds, and the record of which kinds the suites asserted.
//!
//! docs/errors.md promises a test for every kind. The promise is checked on what the tests did,
//! not on what their source says: every assertion of an error's kind goes through this module
//! ([`assert_refused`], [`assert_kind!`](crate::assert_kind), [`assert_typed`]), and an assertion
//! that holds records its kind. When `DOT_KINDS_SEEN` names a directory, each test process
//! appends the kinds it saw asserted there, one JSON line each, in a file of its own
//! (`PID.kinds`); the `next` commands those errors carried (`PID.next`); and the kinds whose
//! `next` the replay suite ran (`PID.replayed`). `make test` empties that directory, runs the
//! whole suite, then runs the ignored tests of tests/tests/errors_catalogue.rs: every [`Kind`]
//! must have been recorded, and every `next` seen must follow `cli::next`'s rules and be of a
//! kind the replay suite ran. A kind compared by hand (`obj.error == Kind::X`), named in a
//! comment or in a string is not recorded: only an assertion that passed is.

use proto::result::Warning;
use proto::{ErrorObject, Kind, ToErrorObject};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

/// The environment variable naming the directory of the record.
pub const SEEN_DIR_VAR: &str = "DOT_KINDS_SEEN";

/// Something that carries an error kind: an error object, or a result's warning.
pub trait Kinded: std::fmt::Debug {
    fn kind_of(&self) -> Kind;
    /// Its `next` command, if it has one.
    fn next_of(&self) -> Option<SeenNext>;
}

impl Kinded for ErrorObject {
    fn kind_of(&self) -> Kind {
        self.error
    }
    fn next_of(&self) -> Option<SeenNext> {
        SeenNext::of(self.error, &self.next, &self.next_argv)
    }
}

impl<T: Kinded + ?Sized> Kinded for &T {
    fn kind_of(&self) -> Kind {
        (**self).kind_of()
    }
    fn next_of(&self) -> Option<SeenNext> {
        (**self).next_of()
    }
}

impl Kinded for Warning {
    fn kind_of(&self) -> Kind {
        self.kind
    }
    fn next_of(&self) -> Option<SeenNext> {
        SeenNext::of(self.kind, &self.next, &self.next_argv)
    }
}

/// A `next` command an asserted error carried: recorded beside the kinds (`PID.next`, one JSON
/// object per line) so that the check after the suite can hold every one of them to the rules of
/// `cli::next` and to the replay suite (tests/tests/next_replay.rs).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct SeenNext {
    pub kind: Kind,
    pub next: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_argv: Option<Vec<String>>,
}

impl SeenNext {
    fn of(kind: Kind, next: &Option<String>, argv: &Option<Vec<String>>) -> Option<SeenNext> {
        Some(SeenNext {
            kind,
            next: next.clone()?,
            next_argv: argv.clone(),
        })
    }
}

/// Asserts that `obj` (an error object or a warning) is of `kind`, and records the kind.
/// `assert_kind!(obj, Kind::X)` or with a context message, `assert_kind!(obj, Kind::X, "{n}")`.
#[macro_export]
macro_rules! assert_kind {
    ($obj:expr, $kind:expr $(,)?) => {
        $crate::kinds::check(&$obj, $kind, format_args!(""))
    };
    ($obj:expr, $kind:expr, $($context:tt)+) => {
        $crate::kinds::check(&$obj, $kind, format_args!($($context)+))
    };
}

/// What [`assert_kind!`](crate::assert_kind) calls.
#[track_caller]
pub fn check<T: Kinded + ?Sized>(obj: &T, kind: Kind, context: std::fmt::Arguments<'_>) {
    assert_eq!(obj.kind_of(), kind, "{context} {obj:?}");
    record(kind);
    if let Some(next) = obj.next_of() {
        record_next(&next);
    }
}

/// Asserts a tool refused: exit `code` (which must be `kind`'s exit code), nothing on stdout, and
/// one error object of `kind` on stderr, which is returned for further checks. Records the kind.
#[track_caller]
pub fn assert_refused(out: &std::process::Output, code: i32, kind: Kind) -> ErrorObject {
    assert_eq!(
        i32::from(kind.exit_code().code()),
        code,
        "the test expects exit {code} for {kind}, which always exits {}",
        kind.exit_code().code()
    );
    let e = crate::assert_failed(out, code);
    check(&e, kind, format_args!("error kind:"));
    e
}

/// Asserts a tool was cancelled by `signal` (its name, `SIGTERM`; its number, `signo`): it ended
/// by that signal itself, printed nothing on stdout and one `cancelled` error object naming the
/// signal on stderr, which is returned. Records the kind.
#[track_caller]
pub fn assert_cancelled(out: &std::process::Output, signal: &str, signo: i32) -> ErrorObject {
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        (out.status.code(), out.status.signal()),
        (None, Some(signo)),
        "a cancelled tool ends by its signal; stdout {:?}, stderr {:?}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let e = crate::output::failure_error(out);
    check(&e, Kind::Cancelled, format_args!("error kind:"));
    assert_eq!(e.signal.as_deref(), Some(signal), "{e:?}");
    e
}

/// Asserts a typed error is of `kind` and so is its error object; records the kind and returns
/// the object.
#[track_caller]
pub fn assert_typed<E: ToErrorObject + std::fmt::Debug>(err: &E, kind: Kind) -> ErrorObject {
    assert_eq!(err.kind(), kind, "{err:?}");
    let obj = err.to_error_object();
    check(&obj, kind, format_args!("the error object of {err}:"));
    obj
}

/// Records that a test asserted `kind`, when `DOT_KINDS_SEEN` is set: once per kind and process.
fn record(kind: Kind) {
    static RECORDED: Mutex<BTreeSet<Kind>> = Mutex::new(BTreeSet::new());
    append_once(&RECORDED, &kind, "kinds");
}

/// Records a `next` seen on an asserted error, when `DOT_KINDS_SEEN` is set: once per process.
fn record_next(next: &SeenNext) {
    static RECORDED: Mutex<BTreeSet<SeenNext>> = Mutex::new(BTreeSet::new());
    append_once(&RECORDED, next, "next");
}

/// Records that the replay suite ran a `next` of `kind` as printed and saw it do what its error
/// said (`PID.replayed`), when `DOT_KINDS_SEEN` is set.
pub fn record_replayed(kind: Kind) {
    static RECORDED: Mutex<BTreeSet<Kind>> = Mutex::new(BTreeSet::new());
    append_once(&RECORDED, &kind, "replayed");
}

/// Appends `item` (one JSON line) to `PID.EXT` in the record directory, unless this process
/// already did.
fn append_once<T: Ord + Clone + serde::Serialize>(done: &Mutex<BTreeSet<T>>, item: &T, ext: &str) {
    let Some(dir) = std::env::var_os(SEEN_DIR_VAR) else {
        return;
    };
    let mut done = done.lock().unwrap_or_else(|e| e.into_inner());
    if !done.insert(item.clone()) {
        return;
    }
    let path = Path::new(&dir).join(format!("{}.{ext}", std::process::id()));
    let mut line = serde_json::to_string(item).unwrap();
    line.push('\n');
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .unwrap_or_else(|e| panic!("recording in {}: {e}", path.display()));
}

/// Every record of extension `ext` in `dir` (by any process), decoded.
pub fn records<T: serde::de::DeserializeOwned + Ord>(dir: &Path, ext: &str) -> BTreeSet<T> {
    let mut all = BTreeSet::new();
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading the record {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some(ext) {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        for line in text.lines() {
            all.insert(
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
            );
        }
    }
    all
}

/// Every kind recorded in `dir` (by any process).
pub fn seen(dir: &Path) -> BTreeSet<Kind> {
    records(dir, "kinds")
}
