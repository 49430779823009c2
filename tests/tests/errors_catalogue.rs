//! docs/errors.md is the catalogue of every error kind, and `proto::Kind` is the same catalogue as a
//! type: the kinds any installed tool can print, each with its one exit code (dot-bench, not
//! installed, has kinds of its own, `bench::BenchKind`, listed after the catalogue). This suite
//! holds the two together (one row per kind, with the kind's exit code; no row for anything else)
//! and checks that the test suites asserted every kind.
//!
//! "Asserted" is what the tests did, not what their source says: every assertion of an error's kind
//! goes through `testkit::kinds`, which records the kinds of the assertions that held when
//! `DOT_KINDS_SEEN` names a directory. `make test` empties that directory, runs the whole suite,
//! then runs the ignored test below on what was recorded.
#![allow(clippy::unwrap_used)]

mod common;

use common::repo_file;
use proto::Kind;
use std::collections::BTreeMap;

/// A row of the catalogue: its kind cell and its exit code cell.
#[derive(Debug)]
struct Row {
    kind: String,
    exit: String,
}

/// Every row of docs/errors.md's catalogue table, in order.
fn catalogue() -> Vec<Row> {
    let doc = repo_file("docs/errors.md");
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("The catalogue"))
        .expect("docs/errors.md has a section `## The catalogue`");
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            Row {
                kind: cells[1].trim_matches('`').to_owned(),
                exit: cells[2].to_owned(),
            }
        })
        .collect()
}

#[test]
fn the_catalogue_has_one_row_per_kind_with_its_exit_code() {
    let rows = catalogue();
    let mut by_kind: BTreeMap<Kind, &Row> = BTreeMap::new();
    for row in &rows {
        let kind: Kind = row
            .kind
            .parse()
            .unwrap_or_else(|e| panic!("docs/errors.md has a row for {e}, which no tool reports"));
        assert!(
            by_kind.insert(kind, row).is_none(),
            "docs/errors.md: {kind} has two rows"
        );
    }
    for &kind in Kind::ALL {
        let row = by_kind
            .get(&kind)
            .unwrap_or_else(|| panic!("docs/errors.md has no row for {kind}"));
        assert_eq!(
            row.exit,
            kind.exit_code().to_string(),
            "docs/errors.md's exit code for {kind}"
        );
    }
    assert_eq!(rows.len(), Kind::ALL.len());
}

#[test]
fn the_catalogue_is_in_the_order_of_the_kinds() {
    // One order for the page and the type, so a kind is found in the same place in both.
    let rows: Vec<String> = catalogue().into_iter().map(|r| r.kind).collect();
    let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(rows, kinds);
}

/// Run by `make test` after the whole suite (`DOT_KINDS_SEEN` names the directory the suite's
/// assertions recorded their kinds in): fails unless every kind was asserted by some test.
#[test]
#[ignore = "`make test` runs it after the whole suite, on the kinds the suite recorded"]
fn every_kind_was_asserted_by_the_suite() {
    let dir = std::env::var_os(testkit::kinds::SEEN_DIR_VAR).unwrap_or_else(|| {
        panic!(
            "{} must name the directory where the suite recorded the kinds it asserted: run `make test`",
            testkit::kinds::SEEN_DIR_VAR
        )
    });
    let seen = testkit::kinds::seen(std::path::Path::new(&dir));
    let missing: Vec<&str> = Kind::ALL
        .iter()
        .filter(|k| !seen.contains(k))
        .map(|k| k.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "no test asserted these kinds ({} of {} were): {missing:?}",
        seen.len(),
        Kind::ALL.len()
    );
}

/// Run by `make test` after the whole suite, on the `next` commands the suite's assertions saw
/// (`PID.next`) and the kinds the replay suite ran (`PID.replayed`, tests/tests/next_replay.rs):
/// every `next` follows docs/errors.md's rules (its `next_argv`, when present, is `next`; when
/// absent, `next` has a placeholder, a `&&` or a byte escape; the program is a dot tool or `mkdir`
/// or `rm`), and the replay suite ran a `next` of every kind one was seen with.
#[test]
#[ignore = "`make test` runs it after the whole suite, on the commands the suite recorded"]
fn every_next_seen_follows_the_rules_and_its_kind_was_replayed() {
    let dir = std::env::var_os(testkit::kinds::SEEN_DIR_VAR)
        .unwrap_or_else(|| panic!("run `make test` ({} unset)", testkit::kinds::SEEN_DIR_VAR));
    let dir = std::path::Path::new(&dir);
    let seen: std::collections::BTreeSet<testkit::kinds::SeenNext> =
        testkit::kinds::records(dir, "next");
    let replayed: std::collections::BTreeSet<Kind> = testkit::kinds::records(dir, "replayed");
    assert!(!seen.is_empty(), "the suite recorded no `next` at all");
    let mut unreplayed = std::collections::BTreeSet::new();
    for s in &seen {
        let program = match &s.next_argv {
            Some(argv) => {
                let os: Vec<std::ffi::OsString> = argv.iter().map(Into::into).collect();
                assert_eq!(cli::next::join(&os), s.next, "{s:?}");
                argv[0].clone()
            }
            None => {
                assert!(
                    s.next.split(' ').any(|w| cli::next::RAW_WORDS.contains(&w))
                        || s.next.contains("\"$(printf '\\"),
                    "no next_argv, yet nothing to fill in or decode: {s:?}"
                );
                s.next.split(' ').next().unwrap_or_default().to_owned()
            }
        };
        let base = program.rsplit('/').next().unwrap_or_default();
        assert!(
            base.starts_with("dot-") || ["mkdir", "rm"].contains(&base),
            "{base}: {s:?}"
        );
        if !replayed.contains(&s.kind) {
            unreplayed.insert(s.kind);
        }
    }
    assert!(
        unreplayed.is_empty(),
        "kinds seen with a `next` that tests/tests/next_replay.rs never ran: {unreplayed:?}"
    );
}
