//! docs/errors.md is the catalogue of every error kind. This test reads every `kind()` and
//! `exit_code()` mapping of the tools' sources and checks the catalogue against them: one row per
//! kind with the same exit code, no row for a kind the code does not have, and a test somewhere
//! that asserts the kind.
#![allow(clippy::unwrap_used)]

mod common;

use common::{repo_file, repo_root};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates whose errors reach a tool's stderr.
const CRATES: [&str; 9] = [
    "proto",
    "elf",
    "verify",
    "register",
    "launch",
    "sandbox",
    "reap",
    "discard",
    "journal-fmt",
];

fn rs_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            found.extend(rs_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            found.push(p);
        }
    }
    found.sort();
    found
}

/// The source with comments and the contents of string and char literals blanked (same length,
/// same offsets), so braces and keywords can be found by position.
fn mask(src: &str) -> Vec<u8> {
    let b = src.as_bytes();
    let mut m = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                m[i] = b' ';
                i += 1;
            }
        } else if rest.starts_with(b"r#\"") || rest.starts_with(b"r\"") {
            let hashes = rest[1..].iter().take_while(|c| **c == b'#').count();
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            i += 2 + hashes;
            while i < b.len() && !b[i..].starts_with(&close) {
                m[i] = b' ';
                i += 1;
            }
            i += close.len();
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                let step = if b[i] == b'\\' { 2 } else { 1 };
                let end = (i + step).min(b.len());
                m[i..end].fill(b' ');
                i += step;
            }
            i += 1;
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            m[i + 1] = b' ';
            i += 3;
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') && b.get(i + 3) == Some(&b'\'') {
            m[i + 1] = b' ';
            m[i + 2] = b' ';
            i += 4;
        } else {
            i += 1;
        }
    }
    m
}

/// The offset just after the bracket matching the open bracket at `open`.
fn matching(m: &[u8], open: usize) -> usize {
    let mut depth = 0i32;
    for (i, c) in m.iter().enumerate().skip(open) {
        match c {
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced brackets");
}

fn find(m: &[u8], from: usize, to: usize, pat: &str) -> Option<usize> {
    m[from..to]
        .windows(pat.len())
        .position(|w| w == pat.as_bytes())
        .map(|p| from + p)
}

/// One match arm: the variants its pattern names (`_` for the wildcard) and its expression.
struct Arm {
    variants: Vec<String>,
    rhs: String,
}

/// The arms of the first `match self { … }` inside `body` (offsets into `src`/`m`).
fn arms(src: &str, m: &[u8], body: (usize, usize)) -> Vec<Arm> {
    let at = find(m, body.0, body.1, "match self").expect("the mapping is a `match self`");
    let open = find(m, at, body.1, "{").unwrap();
    let end = matching(m, open) - 1;
    let mut arms = Vec::new();
    let mut i = open + 1;
    while i < end {
        let arrow = match find(m, i, end, "=>") {
            Some(a) => a,
            None => break,
        };
        let pattern = String::from_utf8_lossy(&m[i..arrow]).into_owned();
        let mut j = arrow + 2;
        while m[j].is_ascii_whitespace() {
            j += 1;
        }
        let rhs_end = if m[j] == b'{' {
            matching(m, j)
        } else {
            let mut k = j;
            let mut depth = 0;
            while k < end {
                match m[k] {
                    b'{' | b'(' | b'[' => depth += 1,
                    b'}' | b')' | b']' => depth -= 1,
                    b',' if depth == 0 => break,
                    _ => {}
                }
                k += 1;
            }
            k
        };
        let rhs = src[j..rhs_end]
            .trim()
            .trim_matches(['{', '}'])
            .trim()
            .to_owned();
        let variants = if pattern.trim() == "_" {
            vec!["_".to_owned()]
        } else {
            pattern
                .split("::")
                .skip(1)
                .map(|s| {
                    s.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect()
                })
                .collect()
        };
        arms.push(Arm { variants, rhs });
        i = rhs_end;
        while i < end && (m[i].is_ascii_whitespace() || m[i] == b',') {
            i += 1;
        }
    }
    arms
}

/// The body of `fn NAME(&self)` within `block`.
fn fn_body(m: &[u8], block: (usize, usize), name: &str) -> (usize, usize) {
    let at = find(m, block.0, block.1, &format!("fn {name}(&self)"))
        .unwrap_or_else(|| panic!("fn {name} in the impl"));
    let open = find(m, at, block.1, "{").unwrap();
    (open, matching(m, open))
}

fn exit_number(rhs: &str) -> Option<u8> {
    let name = rhs.split("ExitCode::").nth(1)?;
    let name: String = name.chars().take_while(|c| c.is_alphanumeric()).collect();
    Some(match name.as_str() {
        "Refused" => 1,
        "Usage" => 2,
        "PluginFailed" => 3,
        "Retained" => 4,
        "System" => 5,
        other => panic!("unknown exit code {other}"),
    })
}

/// The first string literal in `s`.
fn literal(s: &str) -> Option<String> {
    let start = s.find('"')? + 1;
    let len = s[start..].find('"')?;
    Some(s[start..start + len].to_owned())
}

/// Every kind the tools can print, with its exit code and where it is mapped.
fn source_kinds() -> BTreeMap<String, (u8, String)> {
    let mut kinds: BTreeMap<String, (u8, String)> = BTreeMap::new();
    let mut add = |kind: String, code: u8, at: String| {
        if let Some((old, old_at)) = kinds.get(&kind) {
            assert_eq!(
                *old, code,
                "kind {kind} has exit {old} in {old_at} but {code} in {at}"
            );
        } else {
            kinds.insert(kind, (code, at));
        }
    };
    let mut dynamic_code = None;
    for krate in CRATES {
        for file in rs_files(&repo_root().join(krate).join("src")) {
            let src = std::fs::read_to_string(&file).unwrap();
            let m = mask(&src);
            let at = file
                .strip_prefix(repo_root())
                .unwrap()
                .display()
                .to_string();
            let mut from = 0;
            while let Some(i) = find(&m, from, m.len(), "impl ToErrorObject for ") {
                let open = find(&m, i, m.len(), "{").unwrap();
                let block = (open, matching(&m, open));
                from = block.1;
                let kind_arms = arms(&src, &m, fn_body(&m, block, "kind"));
                let exit_arms = arms(&src, &m, fn_body(&m, block, "exit_code"));
                let code_of = |v: &str| -> Option<u8> {
                    let arm = exit_arms
                        .iter()
                        .find(|a| a.variants.iter().any(|x| x == v))
                        .or_else(|| exit_arms.iter().find(|a| a.variants == ["_"]))
                        .unwrap_or_else(|| panic!("{at}: no exit code for {v}"));
                    exit_number(&arm.rhs)
                };
                for arm in &kind_arms {
                    if arm.rhs.ends_with(".kind()") {
                        continue; // another type's mapping, read on its own
                    }
                    for v in &arm.variants {
                        let code = code_of(v);
                        match literal(&arm.rhs) {
                            Some(kind) if arm.rhs.starts_with('"') => {
                                let code = code.unwrap_or_else(|| {
                                    panic!("{at}: {kind} has a delegated exit code")
                                });
                                add(kind, code, at.clone());
                            }
                            _ => {
                                assert!(dynamic_code.is_none(), "{at}: a second dynamic kind");
                                dynamic_code = Some(code.expect("a concrete exit code"));
                            }
                        }
                    }
                }
            }
        }
    }
    // The one dynamic mapping: dot-launch's plugin failures, whose kind is the literal passed to
    // `plugin_failure(result, KIND, …)` or set as `over_limit = Some(KIND)`.
    let code = dynamic_code.expect("dot-launch's plugin failures");
    let mut plugin_kinds = BTreeSet::new();
    for file in rs_files(&repo_root().join("launch/src")) {
        let src = std::fs::read_to_string(&file).unwrap();
        let m = mask(&src);
        let mut from = 0;
        while let Some(i) = find(&m, from, m.len(), "plugin_failure(") {
            let open = i + "plugin_failure".len();
            let close = matching(&m, open);
            from = close;
            let args = &src[open + 1..close - 1];
            let mut depth = 0;
            let second = args
                .split(|c| {
                    match c {
                        '(' | '{' | '[' => depth += 1,
                        ')' | '}' | ']' => depth -= 1,
                        _ => {}
                    }
                    c == ',' && depth == 0
                })
                .nth(1)
                .unwrap_or_default()
                .trim();
            if second.starts_with('"') {
                plugin_kinds.insert(literal(second).unwrap());
            }
        }
        for part in src.split("over_limit = Some(").skip(1) {
            plugin_kinds.insert(literal(part).expect("a literal limit kind"));
        }
    }
    assert!(
        plugin_kinds.len() >= 8,
        "plugin failure kinds found: {plugin_kinds:?}"
    );
    for k in plugin_kinds {
        add(k, code, "launch/src (plugin failures)".into());
    }
    // argh's usage errors, made in proto::cli.
    let cli = repo_file("proto/src/cli.rs");
    assert!(cli.contains("ErrorObject::new(\"usage\"") && cli.contains("ExitCode::Usage"));
    add("usage".into(), 2, "proto/src/cli.rs".into());
    kinds
}

/// (kind, exit) of every row of docs/errors.md's catalogue.
fn catalogue() -> Vec<(String, u8)> {
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
            let kind = cells[1].trim_matches('`').to_owned();
            let exit = cells[2]
                .parse()
                .unwrap_or_else(|_| panic!("row {kind}: exit {:?} is not a number", cells[2]));
            (kind, exit)
        })
        .collect()
}

#[test]
fn the_catalogue_has_one_row_per_kind_with_its_exit_code() {
    let kinds = source_kinds();
    assert!(kinds.len() >= 80, "found {} kinds", kinds.len());
    let rows = catalogue();
    let mut seen = BTreeSet::new();
    for (kind, exit) in &rows {
        assert!(
            seen.insert(kind.clone()),
            "docs/errors.md: {kind} has two rows"
        );
        match kinds.get(kind) {
            Some((code, at)) => assert_eq!(
                exit, code,
                "docs/errors.md says {kind} exits {exit}; {at} maps it to {code}"
            ),
            None => panic!("docs/errors.md has a row for {kind}, which no tool reports"),
        }
    }
    let missing: Vec<&String> = kinds.keys().filter(|k| !seen.contains(*k)).collect();
    assert!(
        missing.is_empty(),
        "docs/errors.md has no row for {missing:?}"
    );
}

#[test]
fn every_kind_is_asserted_by_a_test() {
    let mut tests = String::new();
    for dir in std::fs::read_dir(repo_root()).unwrap() {
        let dir = dir.unwrap().path().join("tests");
        for f in rs_files(&dir) {
            if f.file_name().is_some_and(|n| n == "errors_catalogue.rs") {
                continue;
            }
            tests.push_str(&std::fs::read_to_string(&f).unwrap());
        }
    }
    // The kind's literal near (five lines either side) an assertion about an error.
    let lines: Vec<&str> = tests.lines().collect();
    let asserted = |kind: &str| {
        let lit = format!("\"{kind}\"");
        lines.iter().enumerate().any(|(i, l)| {
            l.contains(&lit)
                && lines[i.saturating_sub(5)..(i + 6).min(lines.len())]
                    .iter()
                    .any(|c| {
                        let c = c.to_lowercase();
                        ["assert", "refused", "failure(", "error", "kind"]
                            .iter()
                            .any(|w| c.contains(w))
                    })
        })
    };
    let untested: Vec<String> = source_kinds()
        .into_keys()
        .filter(|k| !asserted(k))
        .collect();
    assert!(
        untested.is_empty(),
        "no test file asserts these kinds: {untested:?}"
    );
}
