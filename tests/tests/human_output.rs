//! What a person reads: the human error line (a terminal, or `--human`) shows every character a
//! terminal would act on escaped, whoever wrote the text (a plugin's message, its stderr, a file's
//! name); with `--stderr tail` the tail follows the error line, escaped the same way.

#![allow(clippy::unwrap_used)]

mod common;

use common::{tool, Env};

/// Stderr as text, after checking it holds no control character but line breaks.
fn inert(stderr: &[u8]) -> String {
    let text = String::from_utf8(stderr.to_vec()).unwrap();
    let bad: Vec<char> = text
        .chars()
        .filter(|c| (c.is_control() && *c != '\n') || ('\u{2028}'..='\u{2069}').contains(c))
        .collect();
    assert!(bad.is_empty(), "{bad:?} reached the terminal: {text:?}");
    text
}

#[test]
fn a_plugins_message_reaches_the_human_line_escaped() {
    let env = Env::new();
    let out = env.fixture("hostile-text", &[], &["--human"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let text = inert(&out.stderr);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.starts_with(
            "dot-launch: plugin-error: bad\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2J\\u{9b}31m\\u{202e}txt"
        ),
        "{text}"
    );
    // JSON keeps the message as the plugin wrote it, escaped by JSON's own rules.
    let out = env.fixture("hostile-text", &[], &["--json"]);
    let e = common::failure(&out, 3);
    testkit::assert_kind!(e, proto::Kind::PluginError);
    assert!(e.message.starts_with("bad\x1b]52;c;"), "{}", e.message);
}

#[test]
fn the_stderr_tail_follows_the_human_line() {
    let env = Env::new();
    let out = env.fixture("explain-fail", &[], &["--stderr", "tail", "--human"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let text = inert(&out.stderr);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "dot-launch: plugin-error: the input was not a poem (exit status 4)",
            "dot-launch: the plugin's stderr ended with (39 bytes):",
            "| debug line 0",
            "| debug line 1",
            "| debug line 2",
        ],
        "{text}"
    );
    let out = env.fixture("hostile-text", &[], &["--stderr", "tail", "--human"]);
    let text = inert(&out.stderr);
    let tail: Vec<&str> = text.lines().skip(2).collect();
    assert_eq!(
        tail,
        [
            "| before\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2J\\x1b[Hafter",
            "| \\u{202e}gnp.exe\\u{9b}31m",
        ],
        "{text}"
    );
}

#[test]
fn a_file_name_reaches_the_human_line_escaped() {
    let dir = testkit::TempDir::new();
    let root = dir.join("root\x1b[2J\u{202e}");
    let out = tool("dot-verify")
        .args(["entry", "--human", "--root"])
        .arg(&root)
        .arg("hello")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = inert(&out.stderr);
    assert!(text.contains("root\\x1b[2J\\u{202e}"), "{text}");
    assert!(text.starts_with("dot-verify: root-missing: "), "{text}");
}

/// What `cmd` writes to a terminal on `stream` (the other output piped): its output, the text.
fn on_terminal(mut cmd: std::process::Command, stream: &str) -> (std::process::Output, String) {
    use std::process::Stdio;
    let pty = nix::pty::openpty(None, None).unwrap();
    let slave = || Stdio::from(std::fs::File::from(pty.slave.try_clone().unwrap()));
    match stream {
        "stderr" => cmd.stdout(Stdio::piped()).stderr(slave()),
        _ => cmd.stdout(slave()).stderr(Stdio::piped()),
    };
    let child = cmd.spawn().unwrap();
    drop(cmd);
    drop(pty.slave);
    let master = pty.master;
    let reader = std::thread::spawn(move || common::read_terminal(master));
    let out = child.wait_with_output().unwrap();
    (out, reader.join().unwrap())
}

/// No byte a terminal acts on but its own line ends (the terminal adds CR to each LF).
fn terminal_inert(text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|c| (c.is_control() && !['\n', '\r'].contains(c)) || *c == '\u{202e}')
        .collect();
    assert!(bad.is_empty(), "{bad:?} reached the terminal: {text:?}");
}

#[test]
fn a_plugins_stderr_passed_to_a_terminal_is_shown_escaped() {
    let env = Env::new();
    let cmd = env.fixture_command("hostile-text", &[], &["--stderr", "pass"]);
    let (out, text) = on_terminal(cmd, "stderr");
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    terminal_inert(&text);
    assert!(
        text.contains("before\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2J\\x1b[Hafter"),
        "{text:?}"
    );
    assert!(text.contains("\\u{202e}gnp.exe\\u{9b}31m"), "{text:?}");
    // To a pipe, the bytes pass as they are (a program reads them).
    let out = env.fixture("hostile-text", &[], &["--stderr", "pass"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("before\x1b]52;c;"),
        "{out:?}"
    );
}

#[test]
fn stdout_on_a_terminal_shows_a_files_text_escaped() {
    let dir = testkit::TempDir::new();
    let file = testkit::write_exe(dir.path(), "name\u{202e}txt.exe\u{9b}2J", b"x", 0o644);
    let mut cmd = tool("dot-verify");
    cmd.arg("digest").arg(&file);
    let (out, text) = on_terminal(cmd, "stdout");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    terminal_inert(&text);
    assert!(text.contains("name\\u{202e}txt.exe\\u{9b}2J"), "{text:?}");
    // To a pipe: the JSON as it is.
    let out = tool("dot-verify")
        .arg("digest")
        .arg(&file)
        .output()
        .unwrap();
    let line: verify::cli::DigestLine = testkit::decode_json(&out.stdout);
    assert_eq!(line.path, file.display().to_string());
}

#[test]
fn an_entry_files_field_reaches_the_human_line_escaped() {
    let env = Env::new();
    // An entry whose unknown field's name holds a screen clear and a bidi override.
    std::fs::write(
        env.root.join("plugins.d/hello.json"),
        "{\"schema\":1,\"x\\u001b[2J\\u202ey\":1}",
    )
    .unwrap();
    let out = tool("dot-verify")
        .args(["entry", "--human", "--root"])
        .arg(&env.root)
        .arg("hello")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let text = inert(&out.stderr);
    assert!(text.starts_with("dot-verify: entry-malformed: "), "{text}");
    assert!(text.contains("x\\x1b[2J\\u{202e}y"), "{text}");
}
