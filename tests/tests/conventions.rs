//! The conventions people expect of a command-line tool: `--version` on every tool (dot-launch and
//! dot-sandbox also name the protocol and the seccomp policy), and errors as one readable line on
//! a terminal, JSON otherwise, `--json`/`--human` to choose.

#![allow(clippy::unwrap_used)]

mod common;

use common::{makefile_tools, tool};
use std::process::Stdio;

#[test]
fn every_tool_says_its_version() {
    for t in makefile_tools() {
        for flag in ["--version", "-V"] {
            let out = tool(&t).arg(flag).output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{t} {flag}");
            let text = String::from_utf8(out.stdout).unwrap();
            assert_eq!(text.lines().count(), 1, "{t}: {text}");
            assert!(text.starts_with(&format!("{t} 0.1.0")), "{text}");
        }
    }
    let sandbox = String::from_utf8(
        tool("dot-sandbox")
            .arg("--version")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(sandbox.contains("protocol 1.0"), "{sandbox}");
    let digest = sandbox
        .split("seccomp policy sha256:")
        .nth(1)
        .and_then(|d| d.get(..64))
        .expect("the policy digest");
    assert!(digest.bytes().all(|b| b.is_ascii_hexdigit()), "{sandbox}");
    // The allowed system calls by name, not only a digest.
    let names: Vec<&str> = sandbox
        .split("system calls: ")
        .nth(1)
        .expect("the allowed calls")
        .trim_end()
        .trim_end_matches(')')
        .split(' ')
        .collect();
    assert!(
        names.contains(&"read") && names.contains(&"execveat"),
        "{sandbox}"
    );
    assert!(
        !names.contains(&"socket") && !names.contains(&"execve"),
        "{sandbox}"
    );
    assert!(names.len() <= 140, "{sandbox}");
    let launch =
        String::from_utf8(tool("dot-launch").arg("--version").output().unwrap().stdout).unwrap();
    assert!(launch.contains("protocol 1.0"), "{launch}");
    assert!(launch.contains(digest), "the runner beside it: {launch}");
}

/// `--help` answers at once even when standard input stays open and silent (the canary, a plugin
/// that otherwise reads a request there, used to wait for one), and an unknown option is a usage
/// error rather than a request read.
#[test]
fn help_never_waits_on_stdin() {
    for (t, flag) in makefile_tools()
        .into_iter()
        .flat_map(|t| [(t.clone(), "--help"), (t, "-h")])
    {
        let mut child = tool(&t)
            .arg(flag)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let _held_open = child.stdin.take();
        let mut status = None;
        for _ in 0..600 {
            status = child.try_wait().unwrap();
            if status.is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        if status.is_none() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{t} {flag} still running after 30 s with stdin open");
        }
        assert_eq!(status.and_then(|s| s.code()), Some(0), "{t} {flag}");
        let mut text = String::new();
        std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut text).unwrap();
        assert!(text.contains(&t) || text.contains("Usage"), "{t}: {text}");
        // Every argh tool's help names the two error styles (`--json`, `--human`); the
        // canary's errors are always JSON.
        assert!(
            t == "dot-canary" || (text.contains("--json") && text.contains("--human")),
            "{t} {flag}: {text}"
        );
    }
    let out = tool("dot-canary")
        .arg("--bogus")
        .stdin(Stdio::piped())
        .output()
        .unwrap();
    testkit::assert_refused(&out, 2, proto::Kind::Usage);
}

/// dot-launch on a missing root, its stderr on a pty; what the terminal shows.
fn on_a_terminal(extra: &[&str]) -> String {
    let pty = nix::pty::openpty(None, None).unwrap();
    let mut c = tool("dot-launch");
    c.args(["--root", "/nonexistent/root", "hello"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::from(pty.slave)));
    let status = c.status().unwrap();
    drop(c);
    assert_eq!(status.code(), Some(1));
    common::read_terminal(pty.master).replace("\r\n", "\n")
}

#[test]
fn errors_are_a_readable_line_on_a_terminal_and_json_otherwise() {
    let human = on_a_terminal(&[]);
    assert!(
        human.starts_with("dot-launch: root-missing: /nonexistent/root is not a platform root"),
        "{human}"
    );
    // dot-launch ran by its path: dot-register is named beside it.
    let register = common::bin_dir().join("dot-register");
    assert!(
        human.contains(&format!(
            "(next: mkdir -p /nonexistent && {} init",
            register.display()
        )),
        "{human}"
    );
    assert_eq!(human.lines().count(), 1, "{human}");
    let forced = on_a_terminal(&["--json"]);
    let e: proto::ErrorObject = serde_json::from_str(forced.trim_end()).unwrap();
    testkit::assert_kind!(e, proto::Kind::RootMissing);

    let piped = tool("dot-launch")
        .args(["--root", "/nonexistent/root", "hello"])
        .output()
        .unwrap();
    testkit::assert_kind!(
        testkit::decode_error(&piped.stderr),
        proto::Kind::RootMissing
    );
    let asked = tool("dot-launch")
        .args(["--human", "--root", "/nonexistent/root", "hello"])
        .output()
        .unwrap();
    let text = String::from_utf8(asked.stderr).unwrap();
    assert!(text.starts_with("dot-launch: root-missing: "), "{text}");
    assert_eq!(
        asked.status.code(),
        Some(1),
        "the exit code does not depend on the style"
    );
}
