//! Every tool, every kind of argument, any bytes: a file path that is not UTF-8 works end to end
//! (a root, an executable, a document, an input file, a journal at such a path), and any other
//! argument that is not UTF-8 is a usage error (exit 2, one JSON error object on stderr). No tool
//! ever panics or aborts on an argument (exit 101 or 134).
#![allow(clippy::unwrap_used)]

mod common;

use common::tool;
use proto::{Containment, ErrorObject, Kind};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use testkit::{KeyPair, TempDir};

/// The bytes that stand for "not UTF-8" in every case: `x`, 0xFF, `y`.
const BAD: &[u8] = b"x\xffy";
/// How `BAD` reads once shown as text.
const SHOWN: &str = "x\u{FFFD}y";

fn os(b: &[u8]) -> OsString {
    OsStr::from_bytes(b).to_owned()
}

/// `dir/NAME` where NAME is `prefix` followed by the byte 0xFF.
fn odd(dir: &Path, prefix: &str) -> PathBuf {
    let mut name = prefix.as_bytes().to_vec();
    name.push(0xff);
    dir.join(OsStr::from_bytes(&name))
}

fn run(name: &str, args: Vec<OsString>) -> Output {
    let out = tool(name).args(&args).output().unwrap();
    assert!(
        !matches!(out.status.code(), Some(101 | 134) | None),
        "{name} {args:?} crashed: {out:?}"
    );
    out
}

fn ok(name: &str, args: Vec<OsString>) -> Output {
    let shown = format!("{args:?}");
    let out = run(name, args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name} {shown}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Exit 2, nothing on stdout, exactly one error object on stderr.
fn exit_2(name: &str, args: Vec<OsString>) -> ErrorObject {
    let shown = format!("{args:?}");
    let out = run(name, args);
    assert_eq!(out.status.code(), Some(2), "{name} {shown}: {out:?}");
    assert!(out.stdout.is_empty(), "{name} {shown}");
    testkit::decode_error(&out.stderr)
}

/// A usage error that names the argument that is not UTF-8.
fn usage(name: &str, args: Vec<OsString>) {
    let shown = format!("{args:?}");
    let err = exit_2(name, args);
    testkit::assert_kind!(err, Kind::Usage, "{name} {shown}: {err:?}");
    assert!(
        err.value.as_deref() == Some(SHOWN) || err.message.contains(SHOWN),
        "{name} {shown}: the error names the argument: {err:?}"
    );
}

/// Converts a list of `&str`, `&Path` and `OsString` items to arguments.
macro_rules! args {
    ($($a:expr),* $(,)?) => {
        vec![$(OsString::from(AsRef::<OsStr>::as_ref(&$a))),*]
    };
}

/// A development root and a signed root, both at paths that are not UTF-8, with `hello`
/// registered in the first (from a copy at such a path too) and `files` (a file input).
struct Odd {
    /// Removed with everything in it when the test ends.
    _dir: TempDir,
    base: PathBuf,
    root: PathBuf,
    exe: PathBuf,
    target: PathBuf,
}

impl Odd {
    fn new() -> Odd {
        let dir = TempDir::new();
        let base = odd(dir.path(), "base");
        std::fs::create_dir(&base).unwrap();
        let root = odd(&base, "root");
        let exe = odd(&base, "hello");
        testkit::copy_exe(&testkit::workspace_bin("hello"), &exe);
        let target = dir.join("target");
        std::fs::create_dir(&target).unwrap();
        ok("dot-register", args!["init", "--dev", "--root", root]);
        for (name, input) in [("hello", "name:string:optional"), ("files", "data:file")] {
            ok(
                "dot-register",
                args![
                    "dev",
                    "--root",
                    root,
                    "--name",
                    name,
                    "--exe",
                    exe,
                    "--containment",
                    "audit",
                    "--input",
                    input
                ],
            );
        }
        Odd {
            _dir: dir,
            base,
            root,
            exe,
            target,
        }
    }

    /// `dot-launch --root ROOT hello --allow-audit-plugin --target TARGET` and `extra`.
    fn launch_hello(&self, target: &Path, extra: Vec<OsString>) -> Vec<OsString> {
        let mut a = args![
            "--root",
            self.root,
            "hello",
            "--allow-audit-plugin",
            "--target",
            target
        ];
        a.extend(extra);
        a
    }
}

#[test]
fn paths_that_are_not_utf8_work_in_every_tool() {
    let o = Odd::new();
    let (root, base, target) = (&o.root, &o.base, &o.target);
    for sub in [
        &["list"][..],
        &["policy", "show"],
        &["deny", "list"],
        &["publisher", "list"],
    ] {
        let mut a = args![];
        a.extend(sub.iter().map(OsString::from));
        a.extend(args!["--root", root]);
        ok("dot-register", a);
    }
    ok("dot-verify", args!["entry", "--root", root, "hello"]);
    ok("dot-verify", args!["doctor", "--root", root]);
    let digest = ok("dot-verify", args!["digest", o.exe]);
    assert!(String::from_utf8_lossy(&digest.stdout).contains(&format!("hello{}", '\u{FFFD}')));

    // A launch from the root, with a file input and a request document at such paths.
    let launch = |extra: Vec<OsString>| {
        let mut a = args!["--root", root, "--allow-audit-plugin", "--target", target];
        a.extend(extra);
        ok("dot-launch", a)
    };
    launch(args!["hello", "--input", "name=odd"]);
    assert_eq!(
        std::fs::read_to_string(target.join("hello.txt")).unwrap(),
        "hello, odd\n"
    );
    let input = odd(base, "input");
    std::fs::write(&input, b"data").unwrap();
    let mut pair = b"data=".to_vec();
    pair.extend_from_slice(input.as_os_str().as_bytes());
    launch(args!["files", "--input-file", os(&pair)]);
    let request = odd(base, "request");
    std::fs::write(
        &request,
        br#"{"protocol":"1.0","plugin":"hello","inputs":{"name":"request"}}"#,
    )
    .unwrap();
    launch(args!["hello", "--request", request]);
    assert_eq!(
        std::fs::read_to_string(target.join("hello.txt")).unwrap(),
        "hello, request\n"
    );
    ok("dot-launch", args!["--root", root, "recover"]);
    ok("dot-discard", args!["--root", root]);
    ok("dot-journal-fmt", args!["--root", root]);
    let journal = odd(base, "journal");
    std::fs::write(
        &journal,
        testkit::journal::encode(&testkit::journal::records(testkit::journal::TXID)),
    )
    .unwrap();
    let shown = ok("dot-journal-fmt", args!["--json", journal]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("COMMITTED"));
    ok(
        "dot-register",
        args!["remove", "--root", root, "--name", "files"],
    );
}

#[test]
fn a_signed_root_and_its_documents_work_at_paths_that_are_not_utf8() {
    let o = Odd::new();
    let base = &o.base;
    let signed = odd(base, "signed");
    ok("dot-register", args!["init", "--root", signed]);
    let key = KeyPair::generate();
    let pk = odd(base, "key");
    std::fs::write(&pk, key.public_key_file()).unwrap();
    ok(
        "dot-register",
        args![
            "publisher",
            "add",
            "--root",
            signed,
            "--id",
            "acme",
            "--pubkey",
            pk
        ],
    );
    let entry = odd(base, "entry");
    let e = testkit::entry_for("hello", &o.exe, Containment::Audit, Some("acme"));
    std::fs::write(&entry, e.to_bytes()).unwrap();
    let sig = key.sign_file(&entry, true);
    ok(
        "dot-verify",
        args!["signature", "--pubkey", pk, "--signature", sig, entry],
    );
    ok(
        "dot-register",
        args![
            "add",
            "--root",
            signed,
            "--entry",
            entry,
            "--signature",
            sig,
            "--exe",
            o.exe
        ],
    );
    ok("dot-verify", args!["entry", "--root", signed, "hello"]);
    // A new key with a transition statement (and its signature) at such paths, then one more by
    // the owner's decision.
    let next = KeyPair::generate();
    let next_pk = odd(base, "next");
    std::fs::write(&next_pk, next.public_key_file()).unwrap();
    let (stmt, stmt_sig) = key.transition_to("acme", &next);
    let statement = odd(base, "statement");
    std::fs::write(&statement, stmt).unwrap();
    let mut sig_path = statement.as_os_str().to_owned();
    sig_path.push(".minisig");
    std::fs::write(&sig_path, stmt_sig).unwrap();
    let third = odd(base, "third");
    std::fs::write(&third, KeyPair::generate().public_key_file()).unwrap();
    for (pk, how) in [
        (next_pk, args!["--transition", sig_path]),
        (third, args!["--force-by-owner"]),
    ] {
        let mut a = args![
            "publisher",
            "rotate",
            "--root",
            signed,
            "--id",
            "acme",
            "--pubkey",
            pk
        ];
        a.extend(how);
        ok("dot-register", a);
    }
}

#[test]
fn a_target_that_is_not_utf8_is_refused_before_anything_runs() {
    // The PREPARED record names the target as JSON text: such a target could not be recovered.
    let o = Odd::new();
    let target = odd(&o.base, "target");
    std::fs::create_dir(&target).unwrap();
    let err = exit_2("dot-launch", o.launch_hello(&target, args![]));
    testkit::assert_kind!(err, Kind::TargetInvalid);
    assert_eq!(err.field.as_deref(), Some("target"));
    assert!(err.path.unwrap().contains('\u{FFFD}'));
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(o.root.join("txn")).unwrap().count(), 0);
}

#[test]
fn any_other_argument_that_is_not_utf8_is_a_usage_error_in_every_tool() {
    let o = Odd::new();
    let (root, exe) = (&o.root, &o.exe);
    let bad = os(BAD);
    let mut bad_pair = b"name=".to_vec();
    bad_pair.extend_from_slice(BAD);
    let mut bad_key = BAD.to_vec();
    bad_key.extend_from_slice(b"=/etc/hostname");
    let launch = |extra: Vec<OsString>| {
        let mut a = args!["--root", root, "--target", o.target];
        a.extend(extra);
        usage("dot-launch", a);
    };
    launch(args![bad, "--allow-audit-plugin"]);
    launch(args![
        "hello",
        "--allow-audit-plugin",
        "--input",
        os(&bad_pair)
    ]);
    launch(args![
        "hello",
        "--allow-audit-plugin",
        "--input-file",
        os(&bad_key)
    ]);
    launch(args!["hello", "--allow-audit-plugin", "--max-stdout", bad]);
    launch(args!["hello", "--allow-audit-plugin", "--deadline-ms", bad]);
    usage("dot-launch", args!["--root", root, "recover", bad]);

    usage("dot-verify", args!["entry", "--root", root, bad]);
    usage(
        "dot-verify",
        args!["doctor", "--root", root, "--warn-days", bad],
    );
    usage("dot-verify", args![bad]);

    let dev = |extra: Vec<OsString>, name: &OsStr| {
        let mut a = args!["dev", "--root", root, "--name", name, "--exe", exe];
        a.extend(extra);
        usage("dot-register", a);
    };
    dev(args!["--containment", "audit"], &bad);
    dev(args!["--containment", bad], OsStr::new("x"));
    for option in ["--version", "--protocol", "--input", "--accept-changes"] {
        dev(
            args!["--containment", "audit", option, bad],
            OsStr::new("x"),
        );
    }
    usage(
        "dot-register",
        args!["remove", "--root", root, "--name", bad],
    );
    usage(
        "dot-register",
        args![
            "publisher",
            "add",
            "--root",
            root,
            "--id",
            bad,
            "--pubkey",
            exe
        ],
    );
    usage(
        "dot-register",
        args![
            "publisher",
            "revoke",
            "--root",
            root,
            "--id",
            "acme",
            "--reason",
            bad
        ],
    );
    usage(
        "dot-register",
        args!["deny", "add", "--root", root, "--sha256", bad, "--reason", "r"],
    );
    usage(
        "dot-register",
        args!["policy", "set", "--root", root, "--max-entry-bytes", bad],
    );
    usage("dot-register", args![bad]);

    usage("dot-reap", args!["--pgid", bad]);
    usage("dot-reap", args!["--pgid", "4242", "--leader", bad]);
    usage(
        "dot-sandbox",
        args![
            "exec",
            "--report-fd",
            "5",
            "--memory-bytes",
            "1073741824",
            "--cpu-seconds",
            "1",
            "--file-bytes",
            "1",
            "--descriptors",
            "16",
            "--tasks",
            "16",
            "--stage-bytes",
            "16777216",
            "--stage-inodes",
            "64",
            "--argv0",
            "hello",
            bad
        ],
    );
    usage("dot-sandbox", args!["probe", "--only", bad]);
    usage("dot-discard", args!["--root", root, bad]);

    // The canary is a plugin, not a command-line tool, but it must not crash either.
    let err = exit_2("dot-canary", args!["--proof", bad]);
    testkit::assert_kind!(err, Kind::Usage);
}

#[test]
fn a_missing_path_that_is_not_utf8_is_reported_not_crashed_on() {
    let o = Odd::new();
    let missing = odd(&o.base, "missing");
    let err = exit_2("dot-journal-fmt", args![missing]);
    testkit::assert_kind!(err, Kind::NoJournal);
    assert!(err.path.unwrap().ends_with("missing\u{FFFD}"));
    let err = exit_2("dot-verify", args!["digest", missing]);
    testkit::assert_kind!(err, Kind::FileMissing);
    let err = exit_2("dot-discard", args!["--root", missing]);
    testkit::assert_kind!(err, Kind::NotARoot);
}

#[test]
fn max_stdout_over_one_gib_is_a_usage_error_not_a_plugin_failure() {
    let o = Odd::new();
    let launch = |limit: &str| o.launch_hello(&o.target, args!["--max-stdout", limit]);
    let err = exit_2("dot-launch", launch("18446744073709551615"));
    testkit::assert_kind!(err, Kind::Usage);
    assert!(err.message.contains("1073741824"), "{}", err.message);
    assert!(std::fs::read_dir(&o.target).unwrap().next().is_none());
    // The largest accepted limit runs the plugin as usual.
    ok("dot-launch", launch("1073741824"));
    assert!(o.target.join("hello.txt").is_file());
}
