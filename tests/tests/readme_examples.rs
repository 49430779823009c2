//! Runs every example the README marks with `<!-- example: NAME -->` verbatim (`bash -euo
//! pipefail`, `$B` the binaries, `$R` the root, a fresh working directory), and checks its exit code
//! and output, so the README cannot drift from the tools.
#![allow(clippy::unwrap_used)]

mod common;

use common::{bin_dir, repo_file, require_program, tool};
use proto::journal::Record;
use std::collections::BTreeSet;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;
use std::process::Command;
use testkit::journal;
use testkit::TempDir;

/// The run the prepared root holds as ABANDONED (BEGIN only).
const ABANDONED: &str = "00000000000000000000000000000001";
/// The run the prepared root holds as PREPARED: the most recent run that did not commit.
const PREPARED: &str = "00000000000000000000000000000002";

/// (name, code) of every `<!-- example: NAME -->` fenced ```sh block.
fn examples() -> Vec<(String, String)> {
    let readme = repo_file("README.md");
    let mut found = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .strip_prefix("<!-- example: ")
            .and_then(|l| l.strip_suffix(" -->"))
        else {
            continue;
        };
        assert_eq!(
            lines.next(),
            Some("```sh"),
            "example {name}: a ```sh block follows"
        );
        let code: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        found.push((name.to_owned(), code.join("\n") + "\n"));
    }
    found
}

/// How each example is set up and what it must print.
struct Expect {
    /// The root is created by the example itself (`$R` does not exist yet).
    fresh_root: bool,
    /// Lines stdout must contain, with `$R` replaced by the root's path.
    lines: &'static [&'static str],
}

fn expectation(name: &str) -> Expect {
    match name {
        "publisher-workflow" => Expect {
            fresh_root: true,
            lines: &[
                "hello 1.0.0",
                "hello 1.0.0 signed by acme",
                "committed",
                "hello, world",
            ],
        },
        "publisher-threshold" => Expect {
            fresh_root: true,
            lines: &[
                "threshold 2 of 3",
                "threshold-not-met",
                "hello signed by 2 keys of acme",
                "committed",
            ],
        },
        "key-rotation" => Expect {
            fresh_root: true,
            lines: &["2"],
        },
        "failing-entries" => Expect {
            fresh_root: false,
            lines: &["broken: store-tampered"],
        },
        "discard-after-review" => Expect {
            fresh_root: false,
            lines: &[
                "remove 00000000000000000000000000000001",
                "keep 00000000000000000000000000000002 PREPARED: $B/dot-launch recover --root $R 00000000000000000000000000000002",
                "true",
            ],
        },
        "last-failed-run" => Expect {
            fresh_root: false,
            lines: &[
                "journal $R/txn/00000000000000000000000000000002/journal (run 00000000000000000000000000000002)",
                "state: PREPARED",
            ],
        },
        "deny-a-build" => Expect {
            fresh_root: false,
            lines: &["denied", "deny-add allowed -", "launch refused denied"],
        },
        "why-refused" => Expect {
            fresh_root: false,
            // The command as typed, every argument kept, the consent flag added.
            lines: &[
                "consent-missing: $B/dot-launch --root $R hello --input name=world --target . --allow-audit-plugin",
            ],
        },
        other => panic!("README example {other:?} has no expectation in this test: add one"),
    }
}

/// A development root with `hello` (valid), `broken` (its pinned copy changed after
/// registration), an ABANDONED run and a later PREPARED run.
fn prepare_root(dir: &Path, root: &Path) {
    let register = |args: &[&str]| {
        let out = tool("dot-register").args(args).output().unwrap();
        assert!(out.status.success(), "dot-register {args:?}: {out:?}");
        out.stdout
    };
    let r = root.to_str().unwrap();
    let hello = bin_dir().join("hello");
    register(&["init", "--dev", "--root", r]);
    register(&[
        "dev",
        "--root",
        r,
        "--name",
        "hello",
        "--containment",
        "audit",
        "--input",
        "name:string:optional",
        "--exe",
        hello.to_str().unwrap(),
    ]);
    let other = dir.join("hello-other");
    let mut bytes = std::fs::read(&hello).unwrap();
    bytes.extend_from_slice(b"another build");
    std::fs::write(&other, &bytes).unwrap();
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o755)).unwrap();
    let added = register(&[
        "dev",
        "--root",
        r,
        "--name",
        "broken",
        "--containment",
        "audit",
        "--exe",
        other.to_str().unwrap(),
    ]);
    let added: serde_json::Value = serde_json::from_slice(&added).unwrap();
    let store = Path::new(added["store"].as_str().unwrap());
    std::fs::set_permissions(store, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut pinned = std::fs::read(store).unwrap();
    pinned[0] ^= 1;
    std::fs::write(store, pinned).unwrap();
    std::fs::set_permissions(store, std::fs::Permissions::from_mode(0o500)).unwrap();

    let later = |mut r: Record| {
        if let Record::Begin { at_ms, .. } | Record::Prepared { at_ms, .. } = &mut r {
            *at_ms += 60_000;
        }
        r
    };
    let runs = [
        (ABANDONED, journal::encode(&[journal::begin(ABANDONED)])),
        (
            PREPARED,
            journal::encode(&[
                later(journal::begin(PREPARED)),
                later(journal::prepared_for(PREPARED)),
            ]),
        ),
    ];
    for (txid, bytes) in runs {
        let run = root.join("txn").join(txid);
        std::fs::DirBuilder::new().mode(0o700).create(&run).unwrap();
        std::fs::write(run.join("journal"), bytes).unwrap();
        std::fs::set_permissions(run.join("journal"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
    }
}

#[test]
fn every_readme_example_runs_verbatim() {
    require_program("jq", "jq");
    require_program("minisign", "minisign");
    require_program("bash", "bash");
    let examples = examples();
    let names: BTreeSet<&str> = examples.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.len(), examples.len(), "example names are unique");
    assert!(
        names.len() >= 5,
        "the README's examples were found: {names:?}"
    );
    for (name, code) in &examples {
        let expect = expectation(name);
        let dir = TempDir::new();
        let work = dir.join("work");
        std::fs::create_dir(&work).unwrap();
        let root = dir.join("root");
        if !expect.fresh_root {
            prepare_root(dir.path(), &root);
        }
        let out = Command::new("bash")
            .args(["-euo", "pipefail", "-c", code])
            .current_dir(&work)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", dir.path())
            .env("B", bin_dir())
            .env("R", &root)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "example {name} failed\n--- code\n{code}--- stdout\n{stdout}--- stderr\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let printed: Vec<&str> = stdout.lines().map(str::trim).collect();
        for want in expect.lines {
            let want = want
                .replace("$R", root.to_str().unwrap())
                .replace("$B", bin_dir().to_str().unwrap());
            assert!(
                printed.contains(&want.as_str()),
                "example {name}: stdout has no line {want:?}\n{stdout}"
            );
        }
        if name == "last-failed-run" {
            the_last_failed_run_of_a_root_without_one(code);
        }
        if name == "publisher-workflow" {
            the_publisher_workflow_with_the_root_in_the_working_directory(code);
        }
        if name == "discard-after-review" {
            assert!(
                !root.join("txn").join(ABANDONED).exists(),
                "the abandoned run is gone"
            );
            assert!(
                root.join("txn").join(PREPARED).exists(),
                "the prepared run is kept"
            );
        }
    }
}

/// The `last-failed-run` example on a root whose runs all committed (here: none at all) says so
/// and succeeds, instead of handing `null` to `dot-journal-fmt`.
fn the_last_failed_run_of_a_root_without_one(code: &str) {
    let dir = TempDir::new();
    let work = dir.join("work");
    std::fs::create_dir(&work).unwrap();
    let root = dir.join("root");
    common::init_dev_root(&root);
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", code])
        .current_dir(&work)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", dir.path())
        .env("B", bin_dir())
        .env("R", &root)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "last-failed-run on a root without one: {out:?}"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "no run left uncommitted\n"
    );
}

/// The publisher workflow with `$R` inside the working directory (`R=$PWD/root`, as a newcomer
/// may set it): its launch's target does not hold the root, so it still commits.
fn the_publisher_workflow_with_the_root_in_the_working_directory(code: &str) {
    let dir = TempDir::new();
    let work = dir.join("work");
    std::fs::create_dir(&work).unwrap();
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", code])
        .current_dir(&work)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", dir.path())
        .env("B", bin_dir())
        .env("R", work.join("root"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("hello, world"));
}

/// The README says what `make demo` prints last, as the Makefile's `demo` recipe has it: the result
/// of its last launch (the entry it names) and then the file that launch wrote (its `name` input).
#[test]
fn the_readme_shows_what_make_demo_prints_last() {
    let makefile = repo_file("Makefile");
    let recipe: Vec<&str> = makefile
        .lines()
        .skip_while(|l| !l.starts_with("demo:"))
        .skip(1)
        .take_while(|l| l.starts_with('\t'))
        .collect();
    assert!(
        recipe.last().is_some_and(|l| l.contains("hello.txt")),
        "the recipe ends by showing the file: {recipe:?}"
    );
    let launch = recipe
        .iter()
        .rev()
        .find(|l| l.contains("/dot-launch "))
        .expect("a launch");
    let word_after = |marker: &str| {
        launch
            .split(marker)
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("{marker} in {launch}"))
            .to_owned()
    };
    let entry = word_after("--root $(DEMO_ROOT) ");
    let input = word_after("--input name=");
    let readme = repo_file("README.md");
    let block: Vec<&str> = readme
        .split("`make demo` prints")
        .nth(1)
        .and_then(|rest| rest.split("```text\n").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("the README's make demo block")
        .lines()
        .collect();
    let [.., result, file] = block[..] else {
        panic!("two lines at least: {block:?}");
    };
    assert_eq!(file, format!("demo/out/hello.txt: hello, {input}"));
    assert!(
        result.contains(&format!("\"name\":\"{entry}\"")),
        "{result}"
    );
}
