//! On a terminal, a run past about a second shows a live line on stderr (elapsed against the
//! deadline, bytes received), erased before the result; stdout carries only the result, and
//! without a terminal nothing of the line appears.

#![allow(clippy::unwrap_used)]

mod common;

use common::Env;
use std::process::Stdio;

#[test]
fn a_long_run_on_a_terminal_shows_a_live_line_on_stderr_only() {
    let env = Env::new();
    let pty = nix::pty::openpty(None, None).unwrap();
    let mut cmd = env.fixture_command("sleep", &[], &["--deadline-ms", "1700"]);
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::from(std::fs::File::from(pty.slave)));
    let child = cmd.spawn().unwrap();
    drop(cmd);
    let master = pty.master;
    let reader = std::thread::spawn(move || common::read_terminal(master));
    let out = child.wait_with_output().unwrap();
    let terminal = reader.join().unwrap();
    assert_eq!(out.status.code(), Some(3), "the deadline ends the run");
    assert!(out.stdout.is_empty(), "nothing on stdout: {:?}", out.stdout);
    assert!(
        terminal.contains("dot-launch: fixture running 1.") && terminal.contains(" s of 1.7 s, "),
        "{terminal:?}"
    );
    // Erased before the error line (a readable one, on a terminal), which stands alone on its line.
    let last = terminal.rsplit("\r\x1b[K").next().unwrap();
    assert!(last.starts_with("dot-launch: deadline: "), "{last:?}");
}

#[test]
fn without_a_terminal_there_is_no_live_line() {
    let env = Env::new();
    let out = env.fixture("sleep", &[], &["--deadline-ms", "1500"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("running"), "{err}");
    assert_eq!(err.lines().count(), 1);
}
