//! The man pages: one per installed tool in one shape, every option `--help` prints is documented,
//! and `mandoc -T lint` and `groff -ww` render every page without a warning.
#![allow(clippy::unwrap_used)]

mod common;

use common::{bin_dir, makefile_tools, repo_file, repo_root, require_program, tool};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

/// The sections of every section-1 page, in this order.
const SECTIONS: [&str; 10] = [
    "NAME",
    "SYNOPSIS",
    "DESCRIPTION",
    "OPTIONS",
    "STDIN/STDOUT",
    "FILE DESCRIPTORS",
    "EXIT STATUS",
    "FILES",
    "SECURITY",
    "SEE ALSO",
];

/// Tools with an argh command line (`dot-canary` has no `--help`; its page documents `--proof`).
const ARGH_TOOLS: [&str; 7] = [
    "dot-verify",
    "dot-register",
    "dot-launch",
    "dot-sandbox",
    "dot-reap",
    "dot-discard",
    "dot-journal-fmt",
];

fn pages() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo_root().join("man"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// A page's text with roff's escaped hyphen (`\-`) read as `-`.
fn page_text(name: &str) -> String {
    repo_file(&format!("man/{name}")).replace("\\-", "-")
}

/// The `.SH` headings of a page, quotes removed.
fn sections(page: &str) -> Vec<String> {
    page.lines()
        .filter_map(|l| l.strip_prefix(".SH "))
        .map(|h| h.trim().trim_matches('"').to_owned())
        .collect()
}

/// The options and subcommands `argv --help` lists: (`--name`s, subcommand names).
fn help(argv: &[&str]) -> (Vec<String>, Vec<String>) {
    let out = tool(argv[0])
        .args(&argv[1..])
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{argv:?} --help");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut options = Vec::new();
    let mut commands = Vec::new();
    let mut section = "";
    for line in text.lines() {
        if !line.starts_with(' ') {
            section = line.trim_end_matches(':');
            continue;
        }
        // An entry starts two spaces in; its continuation lines are indented further.
        let Some(entry) = line.strip_prefix("  ").filter(|l| !l.starts_with(' ')) else {
            continue;
        };
        let word = entry.split([' ', ',']).next().unwrap_or_default();
        match section {
            "Options" if word.starts_with("--") && word != "--help" => {
                options.push(word.to_owned())
            }
            "Commands" if !word.is_empty() => commands.push(word.to_owned()),
            _ => {}
        }
    }
    (options, commands)
}

/// `argv` and every subcommand chain under it (`dot-register publisher revoke`), each with the
/// options its `--help` lists.
fn walk(argv: Vec<&str>) -> Vec<(String, Vec<String>)> {
    let (options, commands) = help(&argv);
    let mut found = vec![(argv.join(" "), options)];
    for c in &commands {
        let mut sub = argv.clone();
        sub.push(c);
        found.extend(walk(sub));
    }
    found
}

/// Every option of `tool` and its subcommands, with the command that lists it.
fn all_options(tool: &str) -> Vec<(String, String)> {
    walk(vec![tool])
        .into_iter()
        .flat_map(|(chain, options)| options.into_iter().map(move |o| (chain.clone(), o)))
        .collect()
}

#[test]
fn every_installed_tool_has_a_page_and_every_page_a_tool() {
    let tools: BTreeSet<String> = makefile_tools().iter().map(|t| format!("{t}.1")).collect();
    let mut with_dot7 = tools.clone();
    with_dot7.insert("dot.7".to_owned());
    let pages: BTreeSet<String> = pages()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(pages, with_dot7);
    for t in ARGH_TOOLS {
        assert!(tools.contains(&format!("{t}.1")), "{t} is installed");
        assert!(bin_dir().join(t).is_file());
    }
}

#[test]
fn every_section_1_page_has_the_same_sections_in_the_same_order() {
    for p in pages()
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "1"))
    {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let text = page_text(&name);
        assert_eq!(sections(&text), SECTIONS, "{name}");
        let tool = name.trim_end_matches(".1");
        let th = text.lines().next().unwrap();
        assert!(
            th.starts_with(&format!(".TH {} 1 ", tool.to_uppercase())),
            "{name}: {th}"
        );
        assert!(
            text.contains(&format!("\n{tool} - ")),
            "{name}: NAME is `{tool} \\- what it does`"
        );
    }
    let dot7 = sections(&page_text("dot.7"));
    for s in [
        "PLATFORM ROOT",
        "REGISTRY ENTRY",
        "PROTOCOL",
        "JOURNAL STATES",
        "CONTAINMENT LEVELS",
        "NOT PROMISED",
    ] {
        assert!(dot7.iter().any(|h| h == s), "dot(7) has {s}: {dot7:?}");
    }
}

#[test]
fn every_option_that_help_lists_is_in_the_tools_page() {
    let mut checked = 0;
    for t in ARGH_TOOLS {
        let page = page_text(&format!("{t}.1"));
        let options = all_options(t);
        for (command, option) in &options {
            let documented = page.match_indices(option.as_str()).any(|(i, _)| {
                let next = page[i + option.len()..].chars().next();
                !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
            });
            assert!(
                documented,
                "`{command} --help` lists {option}, which man/{t}.1 does not document"
            );
            checked += 1;
        }
    }
    // The parser found the options (a --help format change must not make this pass vacuously).
    assert!(checked >= 30, "only {checked} options found");
    let launch: Vec<String> = all_options("dot-launch")
        .into_iter()
        .map(|(_, o)| o)
        .collect();
    assert!(launch.contains(&"--require-process-sandbox".to_owned()));
    let register: Vec<String> = all_options("dot-register")
        .into_iter()
        .map(|(c, o)| format!("{c} {o}"))
        .collect();
    assert!(register.contains(&"dot-register publisher revoke --key".to_owned()));
}

/// The options every tool takes (`cli::common_options`) are on every page too.
#[test]
fn every_page_documents_the_common_options() {
    for t in ARGH_TOOLS {
        let page = page_text(&format!("{t}.1"));
        for option in [
            "--json",
            "--human",
            "--help \", \" -h",
            "--version \", \" -V",
        ] {
            assert!(page.contains(option), "man/{t}.1 documents {option}");
        }
    }
}

#[test]
fn every_subcommand_is_in_the_synopsis_of_its_page() {
    for t in ARGH_TOOLS {
        let page = page_text(&format!("{t}.1"));
        let synopsis = page
            .split(".SH SYNOPSIS")
            .nth(1)
            .and_then(|s| s.split(".SH ").next())
            .expect("a SYNOPSIS section");
        let words: Vec<&str> = synopsis
            .lines()
            .filter(|l| l.starts_with(".B "))
            .map(|l| l.trim_start_matches(".B ").trim())
            .collect();
        for (chain, _) in walk(vec![t]) {
            let leaf = chain.split(' ').count() > 1;
            assert!(
                !leaf || words.iter().any(|w| w.starts_with(&chain)),
                "man/{t}.1's SYNOPSIS has no `{chain}`"
            );
        }
    }
}

#[test]
fn every_page_renders_without_a_warning() {
    require_program("mandoc", "mandoc");
    require_program("groff", "groff-base");
    for p in pages() {
        let lint = Command::new("mandoc")
            .args(["-T", "lint"])
            .arg(&p)
            .output()
            .unwrap();
        assert!(
            lint.status.success() && lint.stdout.is_empty() && lint.stderr.is_empty(),
            "mandoc -T lint {}: {}{}",
            p.display(),
            String::from_utf8_lossy(&lint.stdout),
            String::from_utf8_lossy(&lint.stderr)
        );
        let groff = Command::new("groff")
            .args(["-ww", "-man", "-z"])
            .arg(&p)
            .output()
            .unwrap();
        assert!(
            groff.status.success() && groff.stderr.is_empty(),
            "groff -ww -man -z {}: {}",
            p.display(),
            String::from_utf8_lossy(&groff.stderr)
        );
    }
}
