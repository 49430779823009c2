//! Every kind of `next` the tools print, run as printed (`sh -c NEXT`), and checked to do what its
//! error says: the refused launch then runs with the same inputs and target, the refused
//! registration then registers what was asked (inputs kept), the missing root then exists.
//!
//! The paths carry a space, a quote, a `$` and a `;` (and, for one root, a byte that is not
//! UTF-8): a `next` that is not quoted for `sh` fails here. Each replay that holds records its kind
//! (`testkit::kinds::record_replayed`); after the whole suite, `make test` checks that every kind
//! any test saw with a `next` was replayed here (tests/tests/errors_catalogue.rs).
#![allow(clippy::unwrap_used)]

mod common;

use common::{bin_dir, makefile_tools, tool};
use proto::{Entry, ErrorObject, Kind};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use testkit::{assert_refused, workspace_bin, KeyPair, TempDir};

/// A name no `sh` word may be left unquoted with.
const ODD: &str = "odd dir 'q' $HOME;x";

/// `PATH` for a replay: the system's only. The tools ran by their path, so a `next` naming a dot
/// tool names it beside them (`cli::next::set_program`); a bare `dot-register` would be 127.
const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// `PATH` for the replay of an error built without a tool's `main` (a library's typed error,
/// `testkit::assert_typed`), whose `next` names a tool bare: the built tools first.
fn path_env() -> OsString {
    let mut p = bin_dir().into_os_string();
    p.push(":");
    p.push(SYSTEM_PATH);
    p
}

/// Runs `next` with `sh -c`, exactly as printed, in `cwd`, with the system's `PATH`.
fn sh(next: &str, cwd: &Path) -> Output {
    sh_with(next, cwd, SYSTEM_PATH.into())
}

/// [`sh`] with `path` as `PATH`.
fn sh_with(next: &str, cwd: &Path, path: OsString) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(next)
        .current_dir(cwd)
        .env("PATH", path)
        .env_remove("DOT_FAILPOINT")
        .env_remove("DOT_INJECT")
        .env_remove("DOT_PRETEND_LANDLOCK_ABI")
        .output()
        .unwrap()
}

/// Holds `e`'s `next` to the rules of `cli::next` and runs it as printed.
fn replay(e: &ErrorObject, cwd: &Path) -> Output {
    sh(checked_next(e), cwd)
}

/// [`replay`] of a library's typed error (no `main` placed the tools): the built tools on `PATH`.
fn replay_typed(e: &ErrorObject, cwd: &Path) -> Output {
    sh_with(checked_next(e), cwd, path_env())
}

/// `e`'s `next`, held to the rules of `cli::next`.
fn checked_next(e: &ErrorObject) -> &str {
    let next = e
        .next
        .as_deref()
        .unwrap_or_else(|| panic!("no next: {e:?}"));
    match &e.next_argv {
        Some(argv) => {
            let os: Vec<OsString> = argv.iter().map(Into::into).collect();
            assert_eq!(cli::next::join(&os), next, "next_argv is next");
        }
        None => assert!(
            is_template(next) || next.contains("$(printf"),
            "no next_argv, yet no placeholder, `&&` or byte escape: {next}"
        ),
    }
    next
}

/// A `next` with placeholders comes with a message that says what each one is.
fn says_what_to_supply(e: &ErrorObject, placeholder: &str) {
    let what = e
        .message
        .split("; in next, ")
        .nth(1)
        .unwrap_or_else(|| panic!("the message does not say what to supply: {e:?}"));
    assert!(what.starts_with(placeholder), "{e:?}");
}

/// A `next` with a placeholder in capitals or a `&&` (`cli::next::RAW_WORDS`).
fn is_template(next: &str) -> bool {
    next.split(' ').any(|w| cli::next::RAW_WORDS.contains(&w))
}

/// Runs a template `next` as printed but for its placeholders, each replaced by the quoted path.
fn replay_filled(e: &ErrorObject, fills: &[(&str, &Path)], cwd: &Path) -> Output {
    let mut next = e.next.clone().unwrap_or_else(|| panic!("no next: {e:?}"));
    assert!(
        e.next_argv.is_none() && is_template(&next),
        "a template: {e:?}"
    );
    for (word, path) in fills {
        let quoted = cli::next::quote(path.as_os_str());
        let words: Vec<String> = next
            .split(' ')
            .map(|w| {
                if w == *word {
                    quoted.clone()
                } else {
                    w.to_owned()
                }
            })
            .collect();
        assert_ne!(words.join(" "), next, "{word} is a placeholder of {next}");
        next = words.join(" ");
    }
    sh(&next, cwd)
}

/// Asserts a replay exited 0; records that `kind`'s `next` did what it says.
fn replayed(out: &Output, kind: Kind, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{kind}: {what}\nstdout {}\nstderr {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    testkit::kinds::record_replayed(kind);
}

fn ok(out: Output, what: &str) -> Output {
    common::ok(out, what)
}

/// A scratch directory with an odd subdirectory, a DEV root in it, and a target there.
struct Odd {
    _dir: TempDir,
    base: PathBuf,
    root: PathBuf,
    target: PathBuf,
}

impl Odd {
    fn new() -> Odd {
        let dir = TempDir::new();
        let base = dir.join(ODD);
        std::fs::create_dir(&base).unwrap();
        let root = base.join("the root");
        let target = base.join("out 'dir'");
        std::fs::create_dir(&target).unwrap();
        common::init_dev_root(&root);
        Odd {
            _dir: dir,
            base,
            root,
            target,
        }
    }

    fn register(&self) -> Command {
        let mut c = tool("dot-register");
        c.current_dir(&self.base);
        c
    }

    fn dev(&self, name: &str, exe: &Path, containment: &str, extra: &[&str]) -> Output {
        self.register()
            .args(["dev", "--root"])
            .arg(&self.root)
            .args(["--name", name, "--exe"])
            .arg(exe)
            .args(["--containment", containment])
            .args(extra)
            .output()
            .unwrap()
    }

    fn launch(&self, name: &str, args: &[&str]) -> Command {
        let mut c = tool("dot-launch");
        c.current_dir(&self.base)
            .arg("--root")
            .arg(&self.root)
            .arg(name)
            .args(args);
        c
    }

    fn entry(&self, name: &str) -> Entry {
        let bytes =
            std::fs::read(self.root.join("plugins.d").join(format!("{name}.json"))).unwrap();
        Entry::parse(&bytes).unwrap()
    }

    fn inputs(&self, name: &str) -> Vec<String> {
        self.entry(name)
            .inputs
            .iter()
            .map(|i| format!("{}:{}:{}", i.name, i.kind, i.required))
            .collect()
    }

    fn hello_txt(&self) -> String {
        std::fs::read_to_string(self.target.join("hello.txt")).unwrap()
    }
}

#[test]
fn consent_is_the_same_launch_with_every_argument_and_the_flag() {
    let o = Odd::new();
    ok(
        o.dev(
            "hello",
            &workspace_bin("hello"),
            "audit",
            &["--input", "name:string:optional"],
        ),
        "dev",
    );
    let launch = |extra: &[&str]| {
        let mut c = o.launch("hello", &["--input", "name=kept 'it'"]);
        c.arg("--target").arg(&o.target).args(extra);
        c.output().unwrap()
    };
    let e = assert_refused(&launch(&[]), 1, Kind::ConsentMissing);
    let out = replay(&e, &o.base);
    replayed(&out, Kind::ConsentMissing, "the launch runs");
    assert_eq!(
        o.hello_txt(),
        "hello, kept 'it'\n",
        "with the input it was given"
    );

    // An audit entry launched with --require-process-sandbox: giving up the sandbox the invoker
    // required is theirs to decide, so no command is offered.
    std::fs::remove_file(o.target.join("hello.txt")).unwrap();
    for given in [
        &["--require-process-sandbox"][..],
        &["--require-process-sandbox", "--allow-audit-plugin"][..],
    ] {
        let e = assert_refused(&launch(given), 1, Kind::ConsentMismatch);
        assert_eq!(
            (e.next.as_deref(), e.next_argv.as_ref()),
            (None, None),
            "{given:?}: {e:?}"
        );
        assert!(e.message.contains("no command is offered"), "{e:?}");
    }
    assert!(!o.target.join("hello.txt").exists(), "nothing ran");

    // A process entry launched with --allow-audit-plugin: the stricter flag is offered.
    ok(
        o.dev(
            "hello-p",
            &workspace_bin("hello"),
            "process",
            &["--input", "name:string:optional"],
        ),
        "dev process",
    );
    let out = o
        .launch(
            "hello-p",
            &["--input", "name=kept 'it'", "--allow-audit-plugin"],
        )
        .arg("--target")
        .arg(&o.target)
        .output()
        .unwrap();
    let e = assert_refused(&out, 1, Kind::ConsentMismatch);
    let next = e.next.as_deref().unwrap();
    assert!(
        !next.contains("--allow-audit-plugin") && next.ends_with("--require-process-sandbox"),
        "{e:?}"
    );
    let out = replay(&e, &o.base);
    replayed(
        &out,
        Kind::ConsentMismatch,
        "the launch runs with the stricter flag only",
    );
    let r: proto::result::RunResult = testkit::decode_json(&out.stdout);
    assert_eq!(r.containment, proto::Containment::Process);
    assert_eq!(o.hello_txt(), "hello, kept 'it'\n");
}

#[test]
fn entry_exists_then_changes_need_consent_keep_the_inputs_and_name_the_same_change() {
    let o = Odd::new();
    let hello = workspace_bin("hello");
    ok(o.dev("hello", &hello, "audit", &[]), "dev");
    // Registering it again with an input: the name is taken.
    let out = o.dev(
        "hello",
        &hello,
        "audit",
        &["--input", "name:string:optional"],
    );
    let e = assert_refused(&out, 1, Kind::EntryExists);
    // Following `next` is the same command with --replace: the input is kept, so the widening
    // (a new input) needs consent, and its `next` names that change.
    let out = replay(&e, &o.base);
    let e = assert_refused(&out, 1, Kind::ChangesNeedConsent);
    testkit::kinds::record_replayed(Kind::EntryExists);
    let changes = e.changes.as_ref().expect("the change");
    let added: Vec<&str> = changes
        .inputs_added
        .iter()
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(added, ["name"], "{changes:?}");
    let out = replay(&e, &o.base);
    replayed(
        &out,
        Kind::ChangesNeedConsent,
        "the replacement with consent",
    );
    assert_eq!(o.inputs("hello"), vec!["name:string:false".to_owned()]);

    // A stale token is replaced, not repeated.
    let out = o.dev(
        "hello",
        &hello,
        "audit",
        &[
            "--input",
            "name:string:optional",
            "--input",
            "path:file",
            "--replace",
            "--accept-changes",
            "sha256:0000",
        ],
    );
    let e = assert_refused(&out, 1, Kind::ChangesNeedConsent);
    assert_eq!(
        e.next
            .as_deref()
            .unwrap()
            .matches("--accept-changes")
            .count(),
        1
    );
    ok(replay(&e, &o.base), "accept with the right token");
    assert_eq!(
        o.inputs("hello"),
        vec!["name:string:false".to_owned(), "path:file:true".to_owned()]
    );
}

#[test]
fn a_script_without_allow_dynamic_is_registered_by_its_next() {
    let o = Odd::new();
    let script = testkit::write_exe(&o.base, "greet 'x'.sh", testkit::SCRIPT, 0o755);
    let out = o.dev("greet", &script, "audit", &["--input", "who:string"]);
    let e = assert_refused(&out, 1, Kind::DynamicNotGranted);
    let out = replay(&e, &o.base);
    replayed(&out, Kind::DynamicNotGranted, "registered with the grant");
    assert_eq!(o.inputs("greet"), vec!["who:string:true".to_owned()]);
    // The launch-time refusal (the grant gone) names a command that needs no file of yours: the
    // registered entry again from its own pinned copy.
    std::fs::remove_file(o.root.join("plugins.d").join("greet.json.grant")).unwrap();
    let out = o
        .launch(
            "greet",
            &["--allow-audit-plugin", "--input", "who=x", "--target"],
        )
        .arg(&o.target)
        .output()
        .unwrap();
    let e = assert_refused(&out, 1, Kind::DynamicNotGranted);
    ok(replay(&e, &o.base), "re-granted");
    ok(
        o.launch(
            "greet",
            &["--allow-audit-plugin", "--input", "who=x", "--target"],
        )
        .arg(&o.target)
        .output()
        .unwrap(),
        "the launch after the grant",
    );
}

#[test]
fn a_limit_above_the_entry_is_lowered_to_it_and_the_launch_runs() {
    let o = Odd::new();
    ok(
        o.dev(
            "hello",
            &workspace_bin("hello"),
            "audit",
            &["--input", "name:string:optional", "--deadline-ms", "5000"],
        ),
        "dev",
    );
    let out = o
        .launch(
            "hello",
            &[
                "--allow-audit-plugin",
                "--input",
                "name=kept 'it'",
                "--deadline-ms",
                "60000",
                "--target",
            ],
        )
        .arg(&o.target)
        .output()
        .unwrap();
    let e = assert_refused(&out, 2, Kind::LimitAboveEntry);
    let out = replay(&e, &o.base);
    replayed(
        &out,
        Kind::LimitAboveEntry,
        "the launch runs at the entry's deadline",
    );
    let r: proto::result::RunResult = testkit::decode_json(&out.stdout);
    assert_eq!(r.limits.map(|l| l.deadline_ms), Some(5000));
    assert_eq!(o.hello_txt(), "hello, kept 'it'\n", "with its input");
}

#[test]
fn a_missing_target_is_made_by_its_next() {
    let o = Odd::new();
    ok(o.dev("hello", &workspace_bin("hello"), "audit", &[]), "dev");
    let missing = o.base.join("new $target");
    let launch = || {
        o.launch("hello", &["--allow-audit-plugin", "--target"])
            .arg(&missing)
            .output()
            .unwrap()
    };
    let e = assert_refused(&launch(), 2, Kind::TargetInvalid);
    let out = replay(&e, &o.base);
    replayed(&out, Kind::TargetInvalid, "the target made");
    ok(launch(), "the launch into it");
    assert!(missing.join("hello.txt").is_file());
}

#[test]
fn a_missing_root_is_made_by_its_next_whatever_its_path() {
    let dir = TempDir::new();
    let base = dir.join(ODD);
    std::fs::create_dir(&base).unwrap();
    let mut not_utf8 = base.clone().into_os_string().into_vec();
    not_utf8.extend_from_slice(b"/root \xff\xfe");
    for (root, template) in [
        (base.join("a root"), false),
        (base.join("no parent").join("r"), true),
        (PathBuf::from(OsString::from_vec(not_utf8)), false),
    ] {
        let out = tool("dot-launch")
            .arg("--root")
            .arg(&root)
            .arg("hello")
            .output()
            .unwrap();
        let e = assert_refused(&out, 1, Kind::RootMissing);
        assert_eq!(
            e.next_argv.is_none(),
            template || root.to_str().is_none(),
            "{e:?}"
        );
        let out = replay(&e, &base);
        replayed(&out, Kind::RootMissing, "the root made");
        ok(
            tool("dot-register")
                .arg("list")
                .arg("--root")
                .arg(&root)
                .output()
                .unwrap(),
            "the new root is a root",
        );
    }
    // A file where the root should be: the directory is yours to choose (DIR).
    let file = base.join("a file");
    std::fs::write(&file, b"").unwrap();
    let out = tool("dot-launch")
        .arg("--root")
        .arg(&file)
        .arg("hello")
        .output()
        .unwrap();
    let e = assert_refused(&out, 1, Kind::RootMissing);
    let elsewhere = base.join("elsewhere");
    ok(replay_filled(&e, &[("DIR", &elsewhere)], &base), "init DIR");
    assert!(elsewhere.join("plugins.d").is_dir());
}

#[test]
fn not_a_root_is_made_a_root_by_its_next() {
    let dir = TempDir::new();
    let base = dir.join(ODD);
    std::fs::create_dir(&base).unwrap();
    for tool_name in ["dot-journal-fmt", "dot-discard"] {
        let root = base.join(format!("for {tool_name}"));
        let run = || tool(tool_name).arg("--root").arg(&root).output().unwrap();
        let e = assert_refused(&run(), 2, Kind::NotARoot);
        let out = replay(&e, &base);
        replayed(&out, Kind::NotARoot, "init");
        ok(run(), "the tool on the new root");
    }
}

#[test]
fn a_missing_entry_is_registered_by_its_next() {
    let o = Odd::new();
    let out = o
        .launch("hello", &["--require-process-sandbox"])
        .output()
        .unwrap();
    let e = assert_refused(&out, 1, Kind::EntryMissing);
    says_what_to_supply(&e, "FILE is the plugin's executable");
    let out = replay_filled(&e, &[("FILE", &workspace_bin("hello"))], &o.base);
    replayed(&out, Kind::EntryMissing, "registered");
    ok(
        tool("dot-verify")
            .args(["entry", "--root"])
            .arg(&o.root)
            .arg("hello")
            .output()
            .unwrap(),
        "verify",
    );
    // `remove` of a name that is not there: the list of what is.
    let out = o
        .register()
        .args(["remove", "--root"])
        .arg(&o.root)
        .args(["--name", "nothing"])
        .output()
        .unwrap();
    let e = assert_refused(&out, 1, Kind::EntryMissing);
    let out = ok(replay(&e, &o.base), "list");
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"hello\""));
}

/// A mask is the administrator's decision: the refusal names no command that reverses it.
#[test]
fn a_masked_name_offers_no_unmask() {
    let o = Odd::new();
    let sysroot = o.base.join("sys root");
    let layers = proto::layers::SystemLayers::new(Some(&sysroot));
    std::fs::create_dir_all(layers.admin.parent().unwrap()).unwrap();
    let verify = || {
        tool("dot-verify")
            .args(["entry", "hello", "--sysroot"])
            .arg(&sysroot)
            .output()
            .unwrap()
    };
    ok(
        tool("dot-register")
            .args(["mask", "hello", "--sysroot"])
            .arg(&sysroot)
            .output()
            .unwrap(),
        "mask",
    );
    let e = assert_refused(&verify(), 1, Kind::EntryMasked);
    assert_eq!(
        (e.next.as_deref(), e.next_argv.as_ref()),
        (None, None),
        "{e:?}"
    );
    assert!(e.message.contains("administrator's decision"), "{e:?}");
    assert!(proto::layers::mask_path(&layers.admin, &proto::Name::new("hello").unwrap()).exists());
}

#[test]
fn a_tampered_pinned_copy_is_replaced_by_its_next() {
    let o = Odd::new();
    let hello = workspace_bin("hello");
    ok(
        o.dev(
            "hello",
            &hello,
            "audit",
            &["--input", "name:string:optional"],
        ),
        "dev",
    );
    let entry = o.entry("hello");
    let store = o.root.join("store/sha256").join(entry.sha256.to_hex());
    std::fs::write(&store, b"not the plugin").unwrap();
    let out = o
        .launch("hello", &["--allow-audit-plugin", "--target"])
        .arg(&o.target)
        .output()
        .unwrap();
    let e = assert_refused(&out, 1, Kind::StoreTampered);
    says_what_to_supply(&e, "FILE is the plugin's executable");
    let out = replay_filled(&e, &[("FILE", &hello)], &o.base);
    replayed(
        &out,
        Kind::StoreTampered,
        "the copy removed and pinned again",
    );
    assert_eq!(o.inputs("hello"), vec!["name:string:false".to_owned()]);
    ok(
        o.launch(
            "hello",
            &["--allow-audit-plugin", "--input", "name=again", "--target"],
        )
        .arg(&o.target)
        .output()
        .unwrap(),
        "the launch",
    );
    assert_eq!(o.hello_txt(), "hello, again\n");
}

/// A deny is a decision of whoever keeps the registry: the refusal names no `deny remove`.
#[test]
fn a_denied_digest_offers_no_way_around_the_deny() {
    let o = Odd::new();
    ok(o.dev("hello", &workspace_bin("hello"), "audit", &[]), "dev");
    let sha = o.entry("hello").sha256.to_hex();
    ok(
        o.register()
            .args(["deny", "add", "--root"])
            .arg(&o.root)
            .args(["--sha256", &sha, "--reason", "a test"])
            .output()
            .unwrap(),
        "deny",
    );
    let launch = || {
        o.launch("hello", &["--allow-audit-plugin", "--target"])
            .arg(&o.target)
            .output()
            .unwrap()
    };
    let e = assert_refused(&launch(), 1, Kind::Denied);
    assert_eq!(
        (e.next.as_deref(), e.next_argv.as_ref()),
        (None, None),
        "{e:?}"
    );
    assert_eq!(e.value.as_deref(), Some(sha.as_str()));
    assert_refused(&launch(), 1, Kind::Denied);
}

/// The policy's limits are the registry keeper's: a size over one names no command raising it.
#[test]
fn a_size_over_the_policy_offers_no_way_around_the_policy() {
    let o = Odd::new();
    ok(
        o.register()
            .args(["policy", "set", "--root"])
            .arg(&o.root)
            .args(["--max-exe-bytes", "4096"])
            .output()
            .unwrap(),
        "policy",
    );
    let hello = workspace_bin("hello");
    let e = assert_refused(&o.dev("hello", &hello, "audit", &[]), 1, Kind::TooLarge);
    assert_eq!(
        (e.next.as_deref(), e.next_argv.as_ref()),
        (None, None),
        "{e:?}"
    );
    assert_eq!(e.field.as_deref(), Some("max_exe_bytes"), "{e:?}");
}

#[test]
fn no_such_run_points_at_the_runs_there_are() {
    let o = Odd::new();
    let out = tool("dot-launch")
        .args(["recover", "--root"])
        .arg(&o.root)
        .arg("0123456789abcdef0123456789abcdef")
        .output()
        .unwrap();
    let e = assert_refused(&out, 2, Kind::NoSuchRun);
    let out = replay(&e, &o.base);
    replayed(&out, Kind::NoSuchRun, "journal-fmt on the root");
}

#[test]
fn a_run_left_for_recover_is_finished_by_its_next() {
    let o = Odd::new();
    ok(o.dev("hello", &workspace_bin("hello"), "audit", &[]), "dev");
    let out = o
        .launch("hello", &["--allow-audit-plugin", "--target"])
        .arg(&o.target)
        .env("DOT_INJECT", "append-committed")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let result: proto::result::RunResult = testkit::decode_json(&out.stdout);
    let w = &result.warnings[0];
    testkit::assert_kind!(w, Kind::RunRetained);
    let e = ErrorObject {
        next: w.next.clone(),
        next_argv: w.next_argv.clone(),
        ..ErrorObject::new(w.kind, w.message.clone())
    };
    let out = replay(&e, &o.base);
    replayed(&out, Kind::RunRetained, "recover");
    assert_eq!(common::names(&o.root.join("txn")), Vec::<String>::new());
}

#[test]
fn a_target_with_a_pending_run_is_freed_by_its_next() {
    let o = Odd::new();
    ok(o.dev("hello", &workspace_bin("hello"), "audit", &[]), "dev");
    // COMMITTED not written: the run stays PREPARED in the target, which refuses the next launch.
    let out = o
        .launch("hello", &["--allow-audit-plugin", "--target"])
        .arg(&o.target)
        .env("DOT_INJECT", "append-committed")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let launch_again = || {
        o.launch("hello", &["--allow-audit-plugin", "--target"])
            .arg(&o.target)
            .output()
            .unwrap()
    };
    let e = testkit::assert_refused(&launch_again(), 4, Kind::TargetPending);
    let out = replay(&e, &o.base);
    replayed(&out, Kind::TargetPending, "recover");
    ok(launch_again(), "the launch after recover");
    assert_eq!(common::names(&o.root.join("txn")), Vec::<String>::new());
}

#[test]
fn usage_points_at_the_help_of_the_program_as_run() {
    for t in makefile_tools() {
        if t == "dot-canary" {
            continue; // a plugin, not a command with options (its own test checks --help)
        }
        let out = tool(&t).arg("--no-such-option").output().unwrap();
        let e = assert_refused(&out, 2, Kind::Usage);
        let out = replay(&e, Path::new("/"));
        replayed(&out, Kind::Usage, &t);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{t}"
        );
    }
}

#[test]
fn containment_refusals_point_at_the_probe() {
    let o = Odd::new();
    ok(
        o.dev("hello", &workspace_bin("hello"), "process", &[]),
        "dev",
    );
    let out = o
        .launch("hello", &["--require-process-sandbox", "--target"])
        .arg(&o.target)
        .env("DOT_PRETEND_LANDLOCK_ABI", "2")
        .output()
        .unwrap();
    let e = assert_refused(&out, 1, Kind::ProcessUnsupported);
    let out = replay(&e, &o.base);
    replayed(&out, Kind::ProcessUnsupported, "probe");
    let probe: serde_json::Value = testkit::decode_json(&out.stdout);
    assert!(probe.get("landlock_abi").is_some(), "{probe}");
    // The runner's own refusals of the same class name the same command.
    for (err, kind) in [
        (
            sandbox::ExecError::LandlockUnsupported { abi: 2 },
            Kind::LandlockUnsupported,
        ),
        (
            sandbox::ExecError::LandlockNotEnforced {
                status: "not-enforced".into(),
            },
            Kind::LandlockNotEnforced,
        ),
        (
            sandbox::ExecError::UnsupportedPlatform,
            Kind::UnsupportedPlatform,
        ),
        (
            sandbox::ExecError::Namespaces {
                step: "pivot_root onto the stage",
                source: std::io::Error::from_raw_os_error(1),
            },
            Kind::Namespaces,
        ),
    ] {
        let e = testkit::assert_typed(&err, kind);
        replayed(&replay_typed(&e, &o.base), kind, "probe");
    }
}

#[test]
fn an_unknown_probe_points_at_the_whole_proof() {
    let out = tool("dot-sandbox")
        .args(["probe", "--prove", "--only", "no-such-probe"])
        .output()
        .unwrap();
    let e = assert_refused(&out, 2, Kind::UnknownProbe);
    let out = replay(&e, Path::new("/"));
    replayed(&out, Kind::UnknownProbe, "every probe");
}

#[test]
fn survivors_are_finished_by_reaping_the_group_again() {
    // A group that is really there: the printed command must end it.
    let mut child = Command::new("sleep");
    std::os::unix::process::CommandExt::process_group(&mut child, 0);
    let mut child = child.arg("1000").spawn().unwrap();
    let pgid = child.id() as i32;
    let e = testkit::assert_typed(
        &reap::ReapError::Survivors {
            pgid,
            samples: 50,
            survivors: vec![pgid],
        },
        Kind::ReapSurvivors,
    );
    let out = replay_typed(&e, Path::new("/"));
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "the group was killed"
    );
    replayed(&out, Kind::ReapSurvivors, "reaped");
}

/// The signed-entry refusals: an unknown publisher (its key file is yours), a downgrade, a new
/// key without a transition statement, a local entry given to `add`, a pinned copy that differs.
#[test]
fn signed_registration_refusals_are_resolved_by_their_next() {
    let o = Odd::new();
    let key = KeyPair::generate();
    let pk = key.pk_path(&o.base);
    let hello = workspace_bin("hello");
    let write_entry = |version: (u64, u64, u64), file: &str| -> PathBuf {
        let mut entry =
            testkit::entry_for("hello", &hello, proto::Containment::Audit, Some("acme"));
        entry.version = semver::Version::new(version.0, version.1, version.2);
        let path = o.base.join(file);
        std::fs::write(&path, entry.to_bytes()).unwrap();
        key.sign_file(&path, true);
        path
    };
    let add = |entry: &Path, extra: &[&str]| {
        let mut sig = entry.as_os_str().to_owned();
        sig.push(".minisig");
        o.register()
            .args(["add", "--root"])
            .arg(&o.root)
            .arg("--entry")
            .arg(entry)
            .arg("--signature")
            .arg(sig)
            .arg("--exe")
            .arg(&hello)
            .args(extra)
            .output()
            .unwrap()
    };
    let v12 = write_entry((1, 2, 0), "hello 1.2.json");
    let e = assert_refused(&add(&v12, &[]), 1, Kind::PublisherUnknown);
    says_what_to_supply(&e, "FILE is the publisher's minisign public key file");
    let out = replay_filled(&e, &[("FILE", &pk)], &o.base);
    replayed(&out, Kind::PublisherUnknown, "the publisher trusted");
    ok(add(&v12, &[]), "add 1.2.0");

    let v10 = write_entry((1, 0, 0), "hello 1.0.json");
    let e = assert_refused(&add(&v10, &["--replace"]), 1, Kind::Downgrade);
    let out = replay(&e, &o.base);
    replayed(&out, Kind::Downgrade, "the downgrade accepted");
    assert_eq!(o.entry("hello").version, semver::Version::new(1, 0, 0));

    // A second key for the publisher: a rotation, which needs a statement signed by the first.
    let new_key = KeyPair::generate();
    let new_pk = new_key.pk_path(&o.base);
    let out = o
        .register()
        .args(["publisher", "add", "--root"])
        .arg(&o.root)
        .args(["--id", "acme", "--pubkey"])
        .arg(&new_pk)
        .output()
        .unwrap();
    let e = assert_refused(&out, 1, Kind::TransitionMissing);
    says_what_to_supply(
        &e,
        "FILE.minisig is the signature of the transition statement",
    );
    let (stmt, sig) = key.transition_to("acme", &new_key);
    let stmt_path = o.base.join("rotation 'x'.json");
    std::fs::write(&stmt_path, stmt).unwrap();
    let sig_path = o.base.join("rotation 'x'.json.minisig");
    std::fs::write(&sig_path, sig).unwrap();
    let out = replay_filled(&e, &[("FILE.minisig", &sig_path)], &o.base);
    replayed(&out, Kind::TransitionMissing, "the key rotated");

    // The pinned copy differs from the entry: `rm` it, then the add goes through.
    let entry = o.entry("hello");
    let store = o.root.join("store/sha256").join(entry.sha256.to_hex());
    std::fs::write(&store, b"other bytes").unwrap();
    let again = ["--replace", "--allow-downgrade"];
    let e = assert_refused(&add(&v10, &again), 1, Kind::StoreTampered);
    ok(replay(&e, &o.base), "rm the bad copy");
    ok(add(&v10, &again), "add after the rm");

    // A local entry given to `add`: the `dev` command with everything it declares.
    let mut local = testkit::entry_for("local", &hello, proto::Containment::Audit, None);
    local.inputs.push(proto::InputDecl {
        name: proto::Name::new("when").unwrap(),
        kind: proto::InputKind::File,
        required: true,
    });
    let local_path = o.base.join("local.json");
    std::fs::write(&local_path, local.to_bytes()).unwrap();
    key.sign_file(&local_path, true);
    let e = assert_refused(&add(&local_path, &[]), 1, Kind::LocalEntryInAdd);
    let out = replay(&e, &o.base);
    replayed(&out, Kind::LocalEntryInAdd, "registered with dev");
    assert_eq!(
        o.inputs("local"),
        vec!["name:string:false".to_owned(), "when:file:true".to_owned()]
    );
}

#[test]
fn thresholds_and_sensitive_inputs_are_resolved_by_their_next_levels_and_names_are_not() {
    let o = Odd::new();
    let keys = [
        KeyPair::generate(),
        KeyPair::generate(),
        KeyPair::generate(),
    ];
    let hello = workspace_bin("hello");
    let reg = |args: &[&std::ffi::OsStr]| {
        o.register()
            .args(&args[..2])
            .arg("--root")
            .arg(&o.root)
            .args(&args[2..])
            .output()
            .unwrap()
    };
    let os = |s: &str| std::ffi::OsString::from(s);
    let pks: Vec<PathBuf> = keys.iter().map(|k| k.pk_path(&o.base)).collect();
    ok(
        reg(&[
            &os("publisher"),
            &os("add"),
            &os("--id"),
            &os("acme"),
            &os("--pubkey"),
            pks[0].as_os_str(),
        ]),
        "publisher add",
    );
    for pk in &pks[1..] {
        ok(
            reg(&[
                &os("publisher"),
                &os("rotate"),
                &os("--id"),
                &os("acme"),
                &os("--force-by-owner"),
                &os("--pubkey"),
                pk.as_os_str(),
            ]),
            "publisher rotate",
        );
    }
    let threshold = |k: &str| {
        ok(
            reg(&[
                &os("publisher"),
                &os("threshold"),
                &os("--id"),
                &os("acme"),
                &os("--signatures"),
                &os(k),
            ]),
            "publisher threshold",
        )
    };
    threshold("2");
    let write_entry = |name: &str, file: &str| -> PathBuf {
        let entry = testkit::entry_for(name, &hello, proto::Containment::Audit, Some("acme"));
        let path = o.base.join(file);
        std::fs::write(&path, entry.to_bytes()).unwrap();
        path
    };
    let sign = |entry: &Path, k: usize, file: &str| -> PathBuf {
        let p = o.base.join(file);
        std::fs::write(&p, keys[k].sign(&std::fs::read(entry).unwrap(), true)).unwrap();
        p
    };
    let add = |entry: &Path, sigs: &[&Path]| {
        let mut c = o.register();
        c.args(["add", "--root"])
            .arg(&o.root)
            .arg("--entry")
            .arg(entry);
        for s in sigs {
            c.arg("--signature").arg(s);
        }
        c.arg("--exe").arg(&hello).output().unwrap()
    };
    let verify = || {
        tool("dot-verify")
            .args(["entry", "--root"])
            .arg(&o.root)
            .arg("hello")
            .output()
            .unwrap()
    };
    // One signature for a threshold of 2: the same add with a second signature.
    let e1 = write_entry("hello", "hello 'e'.json");
    let s0 = sign(&e1, 0, "hello 'e'.json.minisig");
    let e = assert_refused(&add(&e1, &[&s0]), 1, Kind::ThresholdNotMet);
    let s1 = sign(&e1, 1, "second $x.minisig");
    let out = replay_filled(&e, &[("FILE.minisig", &s1)], &o.base);
    replayed(
        &out,
        Kind::ThresholdNotMet,
        "registered with two signatures",
    );
    ok(verify(), "verifies with two");
    // Raised to 3: the registered entry again, with its two signatures and a third.
    threshold("3");
    let e = assert_refused(&verify(), 1, Kind::ThresholdNotMet);
    let s2 = sign(&e1, 2, "third.minisig");
    let out = replay_filled(&e, &[("FILE.minisig", &s2)], &o.base);
    replayed(&out, Kind::ThresholdNotMet, "registered again with three");
    ok(verify(), "verifies with three");
    threshold("1");
    // A verified publisher's audit entry: the level is the registry keeper's restriction, and the
    // refusal offers no command lowering it.
    ok(
        reg(&[
            &os("publisher"),
            &os("level"),
            &os("--id"),
            &os("acme"),
            &os("--level"),
            &os("verified"),
        ]),
        "publisher level",
    );
    let e = assert_refused(&verify(), 1, Kind::LevelNeedsProcess);
    assert_eq!(
        (e.next.as_deref(), e.next_argv.as_ref()),
        (None, None),
        "{e:?}"
    );
    // A name outside the publisher's pins: no command widening them either.
    ok(
        reg(&[
            &os("publisher"),
            &os("names"),
            &os("--id"),
            &os("acme"),
            &os("--names"),
            &os("hel*"),
        ]),
        "publisher names",
    );
    let e2 = write_entry("world", "world.json");
    let w0 = sign(&e2, 0, "world.json.minisig");
    let e = assert_refused(&add(&e2, &[&w0]), 1, Kind::NameNotDelegated);
    assert_eq!(
        (e.next.as_deref(), e.next_argv.as_ref()),
        (None, None),
        "{e:?}"
    );
    // A sensitive input file: the same launch, the input allowed by name.
    ok(
        o.dev("files", &hello, "audit", &["--input", "data:file"]),
        "dev files",
    );
    let ssh = o.base.join("home 'h'/.ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), b"not really").unwrap();
    let mut arg = std::ffi::OsString::from("data=");
    arg.push(ssh.join("id_rsa"));
    let out = o
        .launch("files", &["--allow-audit-plugin", "--target"])
        .arg(&o.target)
        .arg("--input-file")
        .arg(&arg)
        .output()
        .unwrap();
    let e = assert_refused(&out, 1, Kind::InputFileSensitive);
    let out = replay(&e, &o.base);
    replayed(
        &out,
        Kind::InputFileSensitive,
        "the launch with the allowance",
    );
    assert_eq!(o.hello_txt(), "hello, world\n");
}

/// What a plugin that fails says on stderr, in every case below: an odd line, as a plugin's own.
const SAID: &str = "said on stderr: 'q' $HOME;x";

#[test]
fn a_plugin_failure_shows_its_stderr_by_its_next() {
    let o = Odd::new();
    let fixture = workspace_bin("fixture-plugin");
    let inputs = [
        "--input",
        "mode:string",
        "--input",
        "size:string:optional",
        "--input",
        "say:string:optional",
    ];
    ok(o.dev("fx", &fixture, "audit", &inputs), "dev audit");
    ok(o.dev("fx-p", &fixture, "process", &inputs), "dev process");
    let audit = "--allow-audit-plugin";
    let process = "--require-process-sandbox";
    let cases: [(&str, &str, &str, &[&str], Kind); 10] = [
        ("fx", audit, "exit-3", &[], Kind::PluginExit),
        ("fx", audit, "signal", &[], Kind::PluginSignal),
        ("fx", audit, "not-json", &[], Kind::PluginProtocol),
        (
            "fx",
            audit,
            "sleep",
            &["--deadline-ms", "300"],
            Kind::Deadline,
        ),
        (
            "fx",
            audit,
            "big-stdout",
            &["--max-stdout", "1000"],
            Kind::StdoutLimit,
        ),
        (
            "fx",
            audit,
            "big-stderr",
            &["--max-stderr", "2000"],
            Kind::StderrLimit,
        ),
        ("fx", audit, "status-error", &[], Kind::PluginError),
        ("fx", audit, "bad-output-name", &[], Kind::OutputsInvalid),
        (
            "fx-p",
            process,
            "spin",
            &["--max-cpu-seconds", "1"],
            Kind::CpuLimit,
        ),
        (
            "fx-p",
            process,
            "big-output",
            &["--max-output-bytes", "4096", "--input", "size=10000"],
            Kind::FileSizeLimit,
        ),
    ];
    for (name, consent, mode, extra, kind) in cases {
        let out = o
            .launch(name, &[consent, "--input", &format!("mode={mode}")])
            .args(["--input", &format!("say={SAID}")])
            .args(extra)
            .arg("--target")
            .arg(&o.target)
            .output()
            .unwrap();
        let e = assert_refused(&out, 3, kind);
        let run = e.run.as_ref().expect("the run");
        assert_eq!(run.stderr_tail, None, "{kind}: discarded");
        let next = e.next.as_deref().unwrap_or_default();
        assert!(next.ends_with(" --stderr tail"), "{kind}: {next}");
        assert!(next.contains(&format!("mode={mode}")), "{kind}: {next}");
        // The same launch again: it fails the same way, and this time says what stderr held.
        let again = replay(&e, &o.base);
        let text = String::from_utf8_lossy(&again.stderr);
        let shown: ErrorObject = serde_json::from_str(text.lines().last().unwrap_or_default())
            .unwrap_or_else(|err| panic!("{kind}: {err}: {text}"));
        assert_eq!(again.status.code(), Some(3), "{kind}: {text}");
        testkit::assert_kind!(shown, kind, "the replay of {kind}");
        assert_eq!(shown.next, None, "{kind}: stderr is shown now");
        let tail = shown.run.and_then(|r| r.stderr_tail).unwrap_or_default();
        // Over the stderr limit the tail is stderr's last bytes read, which may be past the line.
        let said = match kind {
            Kind::StderrLimit => tail.contains("eeee"),
            _ => tail.starts_with(SAID),
        };
        assert!(said, "{kind}: {tail:?}");
        testkit::kinds::record_replayed(kind);
    }
    // Nothing to add when stderr is already shown.
    for shown in ["tail", "pass"] {
        let out = o
            .launch("fx", &[audit, "--input", "mode=exit-3", "--stderr", shown])
            .arg("--target")
            .arg(&o.target)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        let e: ErrorObject = serde_json::from_str(text.lines().last().unwrap_or_default()).unwrap();
        testkit::assert_kind!(e, Kind::PluginExit, "--stderr {shown}");
        assert_eq!(e.next, None, "--stderr {shown}");
    }
}

/// `dot-register dev` where there is no development root: every way it can fail points to one
/// that `dev` then accepts. A missing root: `init … --dev`; an empty production root: `init --dev`
/// on it; a root that holds registrations (and `init --dev` on it, `root-not-dev`): a new
/// directory, `DIR`.
#[test]
fn no_dev_root_is_a_dead_end() {
    let odd = Odd::new();
    let hello = workspace_bin("hello");
    let dev_in = |root: &Path| {
        odd.register()
            .args(["dev", "--root"])
            .arg(root)
            .args(["--name", "hello", "--containment", "audit", "--exe"])
            .arg(&hello)
            .output()
            .unwrap()
    };
    // Missing.
    let missing = odd.base.join("new root");
    let e = assert_refused(&dev_in(&missing), 1, Kind::RootMissing);
    replayed(
        &replay(&e, &odd.base),
        Kind::RootMissing,
        "the dev root made",
    );
    ok(dev_in(&missing), "dev in the root its next made");
    // Empty, without the DEV marker.
    let empty = odd.base.join("empty root");
    ok(
        tool("dot-register")
            .args(["init", "--root"])
            .arg(&empty)
            .output()
            .unwrap(),
        "init",
    );
    let e = assert_refused(&dev_in(&empty), 1, Kind::LocalEntryNotDev);
    assert!(e.next_argv.is_some(), "runnable as printed: {e:?}");
    replayed(
        &replay(&e, &odd.base),
        Kind::LocalEntryNotDev,
        "made a dev root",
    );
    ok(dev_in(&empty), "dev in the root made a dev root");
    // Holding a registration: `dev` and `init --dev` both point to a new directory.
    let held = odd.base.join("held root");
    ok(
        tool("dot-register")
            .args(["init", "--root"])
            .arg(&held)
            .output()
            .unwrap(),
        "init",
    );
    std::fs::write(held.join("plugins.d").join("other.json"), b"{}").unwrap();
    let e = assert_refused(&dev_in(&held), 1, Kind::LocalEntryNotDev);
    let fresh = odd.base.join("fresh 'dev'");
    replayed(
        &replay_filled(&e, &[("DIR", &fresh)], &odd.base),
        Kind::LocalEntryNotDev,
        "a dev root in a new directory",
    );
    ok(dev_in(&fresh), "dev in the new directory");
    let out = tool("dot-register")
        .args(["init", "--dev", "--root"])
        .arg(&held)
        .output()
        .unwrap();
    let e = assert_refused(&out, 1, Kind::RootNotDev);
    let other = odd.base.join("other dev");
    replayed(
        &replay_filled(&e, &[("DIR", &other)], &odd.base),
        Kind::RootNotDev,
        "a dev root in a new directory",
    );
    ok(dev_in(&other), "dev in the other directory");
}

/// `init --dev` or `init --layer` whose parent is missing: the `next` that makes the parent makes
/// the same kind of root, never a plain private one.
#[test]
fn a_missing_parent_is_made_and_the_same_kind_of_root_in_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new();
    let base = dir.join(ODD);
    std::fs::create_dir(&base).unwrap();
    for flag in ["--dev", "--layer"] {
        let root = base.join(format!("no parent {flag}")).join("r 'x'");
        let out = tool("dot-register")
            .args(["init", flag, "--root"])
            .arg(&root)
            .output()
            .unwrap();
        let e = assert_refused(&out, 1, Kind::RootMissing);
        let next = e.next.as_deref().unwrap();
        assert!(
            next.starts_with("mkdir -p ") && next.ends_with(flag),
            "{flag}: {e:?}"
        );
        replayed(&replay(&e, &base), Kind::RootMissing, "the parent and root");
        let mode = std::fs::metadata(&root).unwrap().permissions().mode() & 0o777;
        match flag {
            "--dev" => {
                assert!(proto::layout::Root::single(&root).dev_marker().is_file());
                assert_eq!(mode, 0o700);
            }
            _ => {
                assert_eq!(mode, 0o755, "a layer every user reads");
                assert!(!root.join("txn").exists(), "a layer holds no state");
            }
        }
    }
    // A parent that is a file: the directory is yours to choose, the kind of root stays.
    let file = base.join("a file");
    std::fs::write(&file, b"").unwrap();
    let out = tool("dot-register")
        .args(["init", "--dev", "--root"])
        .arg(file.join("r"))
        .output()
        .unwrap();
    let e = assert_refused(&out, 1, Kind::RootMissing);
    let elsewhere = base.join("elsewhere");
    ok(
        replay_filled(&e, &[("DIR", &elsewhere)], &base),
        "init DIR --dev",
    );
    assert!(proto::layout::Root::single(&elsewhere)
        .dev_marker()
        .is_file());
}

/// No `--root`, no `DOT_ROOT`, and no layer has the name: the refusal names each layer it
/// searched, and where the admin layer does not exist its `next` makes it as a layer (readable
/// by every user, as launches from the system layers need), not as a private root; then the
/// refusal offers the `add` into it.
#[test]
fn no_entry_in_the_system_layers_names_them_and_makes_the_admin_layer_a_layer() {
    use std::os::unix::fs::PermissionsExt;
    let o = Odd::new();
    let sysroot = o.base.join("sys root");
    let layers = proto::layers::SystemLayers::new(Some(&sysroot));
    let verify = || {
        tool("dot-verify")
            .args(["entry", "hello", "--sysroot"])
            .arg(&sysroot)
            .env_remove("DOT_ROOT")
            .output()
            .unwrap()
    };
    let e = assert_refused(&verify(), 1, Kind::EntryMissing);
    for dir in [&layers.vendor, &layers.admin] {
        assert!(
            e.message.contains(&dir.display().to_string()),
            "names {}: {e:?}",
            dir.display()
        );
    }
    assert!(!e.message.contains("in this root"), "{e:?}");
    let next = e.next.as_deref().unwrap();
    assert!(next.contains(" init --layer --root "), "{e:?}");
    replayed(
        &replay(&e, &o.base),
        Kind::EntryMissing,
        "the admin layer made",
    );
    let mode = std::fs::metadata(&layers.admin)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755, "a layer");
    // The layer there, the refusal offers registering the entry in it.
    let e = assert_refused(&verify(), 1, Kind::EntryMissing);
    says_what_to_supply(&e, "FILE is the plugin's executable");
    let next = e.next.as_deref().unwrap();
    assert!(
        next.contains(" add --root ") && next.contains(&cli::next::quote(layers.admin.as_os_str())),
        "{e:?}"
    );
}

/// A tool run through a link of another name (`/x/dot-launch2 -> …/dot-launch`): its `next`
/// names the sibling of the real executable, which exists, not one beside the link.
#[test]
fn a_tool_run_through_a_link_names_the_real_tools_siblings() {
    let dir = TempDir::new();
    let base = dir.join(ODD);
    let links = base.join("links");
    std::fs::create_dir_all(&links).unwrap();
    std::os::unix::fs::symlink(bin_dir().join("dot-launch"), links.join("dot-launch2")).unwrap();
    let root = base.join("a root");
    let out = Command::new(links.join("dot-launch2"))
        .arg("--root")
        .arg(&root)
        .arg("hello")
        .output()
        .unwrap();
    let e = assert_refused(&out, 1, Kind::RootMissing);
    let argv = e.next_argv.clone().expect("one command");
    let real = std::fs::canonicalize(bin_dir().join("dot-register")).unwrap();
    assert_eq!(Path::new(&argv[0]), real, "{e:?}");
    replayed(&replay(&e, &base), Kind::RootMissing, "the root made");
    assert!(root.join("plugins.d").is_dir());
}
