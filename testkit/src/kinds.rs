//! Asserting error kinds, and the record of which kinds the suites asserted.
//!
//! docs/errors.md promises a test for every kind. The promise is checked on what the tests did,
//! not on what their source says: every assertion of an error's kind goes through this module
//! ([`assert_refused`], [`assert_kind!`](crate::assert_kind), [`assert_typed`]), and an assertion
//! that holds records its kind. When `DOT_KINDS_SEEN` names a directory, each test process
//! appends the kinds it saw asserted there, one per line, in a file of its own (`PID.kinds`).
//! `make test` empties that directory, runs the whole suite, then runs the ignored test
//! `every_kind_was_asserted_by_the_suite` (tests/tests/errors_catalogue.rs), which fails unless
//! every [`Kind`] was recorded. A kind compared by hand (`obj.error == Kind::X`), named in a
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
}

impl Kinded for ErrorObject {
    fn kind_of(&self) -> Kind {
        self.error
    }
}

impl<T: Kinded + ?Sized> Kinded for &T {
    fn kind_of(&self) -> Kind {
        (**self).kind_of()
    }
}

impl Kinded for Warning {
    fn kind_of(&self) -> Kind {
        self.kind
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
    let Some(dir) = std::env::var_os(SEEN_DIR_VAR) else {
        return;
    };
    let mut recorded = RECORDED.lock().unwrap_or_else(|e| e.into_inner());
    if !recorded.insert(kind) {
        return;
    }
    let path = Path::new(&dir).join(format!("{}.kinds", std::process::id()));
    let line = format!("{kind}\n");
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .unwrap_or_else(|e| panic!("recording kind {kind} in {}: {e}", path.display()));
}

/// Every kind recorded in `dir` (by any process). Panics on a line that is not a kind.
pub fn seen(dir: &Path) -> BTreeSet<Kind> {
    let mut kinds = BTreeSet::new();
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading the record {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        for line in text.lines() {
            let kind = line
                .parse()
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            kinds.insert(kind);
        }
    }
    kinds
}
