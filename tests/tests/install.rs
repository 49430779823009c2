//! `make install` into a temporary DESTDIR: the layout (dot-canary in LIBEXECDIR/dot, out of PATH;
//! no binary keeps a `.comment` section), a process-containment launch and `probe --prove` by the
//! installed tools with no PATH to find anything through, and `make uninstall` leaving no file.
#![allow(clippy::unwrap_used)]

mod common;

use common::{bin_dir, failure, repo_root, require_program, result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use testkit::TempDir;

/// The binaries the Makefile installs, the runner and the canary among them.
fn makefile_tools() -> Vec<String> {
    let tools = common::makefile_tools();
    assert!(tools.contains(&"dot-sandbox".to_owned()) && tools.contains(&"dot-canary".to_owned()));
    tools
}

fn make(target: &str, destdir: &Path) {
    let out = Command::new("make")
        .arg("-C")
        .arg(repo_root())
        .arg("--no-print-directory")
        .arg(target)
        .arg("PREFIX=/usr")
        .arg(format!("DESTDIR={}", destdir.display()))
        .arg("PROFILE=debug")
        .arg(format!("BUILT={}", bin_dir().display()))
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "make {target} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every non-directory under `dir`, relative to it.
fn files_under(dir: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                found.insert(e.path().strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    found
}

/// Whether the ELF file at `path` has a `.comment` section (`objdump -h`).
fn has_comment_section(path: &Path) -> bool {
    require_program("objdump", "binutils");
    let out = Command::new("objdump")
        .arg("-h")
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "objdump -h {}: {out:?}",
        path.display()
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .any(|w| w == ".comment")
}

/// The installed tool `name`, run with an empty environment but for a PATH that holds nothing.
/// The installed bash completion knows every tool on PATH, and completes subcommands and options
/// from the tools' own help: `dot-launch --rep` is `--report-denials`, `dot-register publisher ro`
/// is `rotate`, `dot-verify doc` is `doctor`, and `dot-register policy set --inp` is nothing.
fn completes(dir: &Path) {
    let script = dir.join("dot-launch");
    let probe = r#"
        source "$1" || exit 9
        ask() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _dot_complete; echo "${COMPREPLY[*]}"; }
        ask dot-launch --rep
        ask dot-register publisher ro
        ask dot-verify doc
        ask dot-register policy set --inp
        complete -p | grep -c _dot_complete
    "#;
    let out = Command::new("bash")
        .args(["-c", probe, "bash"])
        .arg(&script)
        .output()
        .expect("bash");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    // An option named in a description (`policy set --sensitive-input`: "dot-launch
    // --input-file refuses") is not offered: `policy set --inp` completes to nothing.
    assert_eq!(
        lines.get(..4),
        Some(&["--report-denials", "rotate", "doctor", ""][..]),
        "{text}"
    );
    let tools = makefile_tools().len() - common::makefile_libexec_tools().len();
    assert_eq!(
        lines.get(4).copied(),
        Some(tools.to_string().as_str()),
        "every tool on PATH completes: {text}"
    );
}

/// Every relative link of the installed Markdown pages under `docdir` names an installed file.
fn links_hold(docdir: &Path) {
    let mut pages = vec![docdir.join("README.md")];
    for e in std::fs::read_dir(docdir.join("docs")).unwrap() {
        pages.push(e.unwrap().path());
    }
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        for link in text.split("](").skip(1) {
            let Some(target) = link.split(')').next() else {
                continue;
            };
            let file = target.split('#').next().unwrap_or_default();
            if file.is_empty() || file.contains("://") || file.starts_with("mailto:") {
                continue;
            }
            let at = page.parent().unwrap().join(file);
            assert!(
                at.exists(),
                "{}: the link {target} names nothing installed",
                page.display()
            );
        }
    }
}

fn installed(bindir: &Path, name: &str) -> Command {
    let mut c = Command::new(bindir.join(name));
    c.env_clear().env("PATH", "/nonexistent");
    c
}

#[test]
fn install_layout_launch_from_the_installed_tree_and_uninstall_leaves_no_file() {
    require_program("make", "make");
    let tmp = TempDir::new();
    let destdir = tmp.join("pkg");
    // Nothing is written outside DESTDIR: not the generated completion beside the binaries.
    let stale = bin_dir().join("dot.bash");
    let _ = std::fs::remove_file(&stale);
    make("install", &destdir);
    assert!(!stale.exists(), "install wrote {}", stale.display());

    // The layout: every tool in BINDIR, a page per tool in man1, dot.7, the docs.
    let usr = destdir.join("usr");
    let bindir = usr.join("bin");
    let mut expected = BTreeSet::new();
    let libexec = common::makefile_libexec_tools();
    assert_eq!(libexec, ["dot-canary"], "the canary is kept out of PATH");
    for t in makefile_tools() {
        match libexec.contains(&t) {
            true => expected.insert(PathBuf::from(format!("usr/libexec/dot/{t}"))),
            false => {
                expected.insert(PathBuf::from(format!(
                    "usr/share/bash-completion/completions/{t}"
                )));
                expected.insert(PathBuf::from(format!("usr/bin/{t}")))
            }
        };
        expected.insert(PathBuf::from(format!("usr/share/man/man1/{t}.1")));
    }
    expected.insert(PathBuf::from("usr/share/man/man7/dot.7"));
    expected.insert(PathBuf::from("usr/share/doc/dot/README.md"));
    expected.insert(PathBuf::from("usr/share/doc/dot/BENCHMARKS.md"));
    // The Makefile's SUB_DOCS: docs/*.md (docs/architecture.json is the drawing's data, not a
    // page), under docs/ as in the source tree.
    for doc in std::fs::read_dir(repo_root().join("docs")).unwrap() {
        let name = doc.unwrap().file_name();
        if Path::new(&name).extension().is_some_and(|e| e == "md") {
            expected.insert(Path::new("usr/share/doc/dot/docs").join(name));
        }
    }
    assert_eq!(files_under(&destdir), expected);
    links_hold(&usr.join("share/doc/dot"));
    completes(&usr.join("share/bash-completion/completions"));
    for t in makefile_tools() {
        use std::os::unix::fs::PermissionsExt;
        let path = match libexec.contains(&t) {
            true => usr.join("libexec/dot").join(&t),
            false => bindir.join(&t),
        };
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o755, "{t}");
        assert!(
            !has_comment_section(&path),
            "{} keeps .comment",
            path.display()
        );
    }
    // The installed runner finds the installed canary with nothing on PATH.
    let out = installed(&bindir, "dot-sandbox")
        .args(["probe", "--prove", "--only", "read-etc-passwd"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");

    // The installed tools run a process-contained plugin; nothing can come from PATH.
    let root = tmp.join("root");
    let target = tmp.join("out");
    std::fs::create_dir(&target).unwrap();
    let out = installed(&bindir, "dot-register")
        .args(["init", "--dev", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = installed(&bindir, "dot-register")
        .args(["dev", "--root"])
        .arg(&root)
        .args(["--name", "hello", "--containment", "process", "--exe"])
        .arg(bin_dir().join("hello"))
        .args(["--input", "name:string:optional"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let launch = |path: &Path| {
        installed(&bindir, "dot-launch")
            .env("PATH", path)
            .arg("--root")
            .arg(&root)
            .args(["hello", "--require-process-sandbox", "--input", "name=pkg"])
            .arg("--target")
            .arg(&target)
            .output()
            .unwrap()
    };
    let r = result(&launch(Path::new("/nonexistent")));
    assert_eq!(r.containment, Containment::Process);
    assert!(
        r.enforced.is_some(),
        "the installed runner confirmed what it enforced"
    );
    assert_eq!(
        std::fs::read_to_string(target.join("hello.txt")).unwrap(),
        "hello, pkg\n"
    );
    // Without the installed sibling, a dot-sandbox on PATH is not used: the launch refuses.
    std::fs::remove_file(bindir.join("dot-sandbox")).unwrap();
    let e = failure(&launch(&bin_dir()), 1);
    testkit::assert_kind!(e, Kind::SandboxUnusable);
    assert_eq!(
        e.path.as_deref(),
        Some(bindir.join("dot-sandbox").to_str().unwrap())
    );

    make("uninstall", &destdir);
    assert_eq!(
        files_under(&destdir),
        BTreeSet::new(),
        "uninstall removes every file"
    );
    assert!(
        !usr.join("share/doc/dot").exists(),
        "DOCDIR (and its docs/) is dot's own and goes"
    );
    assert!(
        usr.join("share/bash-completion/completions").is_dir(),
        "COMPLETIONSDIR is bash-completion's and stays"
    );
    assert!(bindir.is_dir(), "BINDIR is shared and stays");
    assert!(
        !usr.join("libexec/dot").exists(),
        "LIBEXECDIR/dot is dot's own and goes"
    );
}
use proto::{Containment, Kind};
