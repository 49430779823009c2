//! What a launch may write and name: a target inside the platform root (or holding it) is refused
//! before anything runs, however it is reached; output and input names that carry control or
//! formatting characters are refused; committed outputs get a stated mode; a runner that cannot be
//! executed is refused before the launch is recorded as allowed.

#![allow(clippy::unwrap_used)]

mod common;

use common::{failure, result, tool, Env};
use proto::Kind;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use testkit::mount::Bind;
use testkit::{tree_snapshot, workspace_bin, TempDir};

/// A launch of the fixture (audit) into `target` that would write one output `name`.
fn named_output_into(env: &Env, target: &Path, name: &str) -> std::process::Output {
    common::launch_into(
        &env.root,
        "fixture",
        target,
        &[
            "--allow-audit-plugin",
            "--input",
            "mode=named-output",
            "--input",
            &format!("name={name}"),
            "--input",
            "a=forged\n",
        ],
    )
    .output()
    .unwrap()
}

/// The registry part of the root, which no refused launch may change.
fn registry(env: &Env) -> Vec<std::collections::BTreeMap<std::path::PathBuf, testkit::NodeFacts>> {
    ["plugins.d", "store", "trust"]
        .iter()
        .map(|d| tree_snapshot(&env.root.join(d)))
        .collect()
}

fn assert_target_refused(env: &Env, target: &Path, output: &str) {
    let before = registry(env);
    let log_before = std::fs::read(env.root.join("audit.log")).unwrap_or_default();
    let err = failure(&named_output_into(env, target, output), 2);
    testkit::assert_kind!(err, Kind::TargetInvalid, "{}: {err:?}", target.display());
    assert_eq!(err.field.as_deref(), Some("target"));
    assert_eq!(env.runs(), Vec::<String>::new(), "nothing was started");
    assert_eq!(registry(env), before, "the registry is unchanged");
    let log = std::fs::read(env.root.join("audit.log")).unwrap();
    assert!(
        log.starts_with(&log_before),
        "the audit log was only appended to"
    );
    assert!(
        !log.windows(6).any(|w| w == b"forged"),
        "the plugin's bytes never reached the audit log"
    );
}

#[test]
fn a_target_inside_the_root_is_refused_for_every_registry_directory() {
    let env = Env::new();
    for (dir, output) in [
        ("", "audit.log"),
        ("plugins.d", "fixture.json"),
        ("trust", "policy.json"),
        ("trust/publishers", "acme.json"),
        ("store/sha256", "x"),
        ("store", "x"),
        ("txn", "x"),
    ] {
        assert_target_refused(&env, &env.root.join(dir), output);
    }
}

#[test]
fn a_target_reaching_the_root_through_a_link_dots_or_a_bind_mount_is_refused() {
    let env = Env::new();
    let link = env.dir.join("link-to-trust");
    std::os::unix::fs::symlink(env.root.join("trust"), &link).unwrap();
    assert_target_refused(&env, &link, "policy.json");
    let dotted = env.target.join("../root/plugins.d");
    assert_target_refused(&env, &dotted, "fixture.json");
    let elsewhere = TempDir::new();
    let bound = Bind::mount(&env.root.join("trust"), &elsewhere.join("mnt"));
    assert_target_refused(&env, &elsewhere.join("mnt"), "policy.json");
    drop(bound);
}

#[test]
fn a_target_that_holds_the_root_is_refused() {
    let env = Env::new();
    assert_target_refused(&env, &env.dir.join("."), "root");
    assert_target_refused(&env, Path::new("/"), "x");
}

#[test]
fn a_target_beside_the_root_is_fine() {
    let env = Env::new();
    let out = named_output_into(&env, &env.target, "audit.log");
    let r = result(&out);
    assert_eq!(r.outputs.len(), 1);
    assert_eq!(
        std::fs::read(env.target.join("audit.log")).unwrap(),
        b"forged\n"
    );
}

#[test]
fn output_names_with_control_or_reordering_characters_are_refused() {
    let env = Env::new();
    for name in [
        "new\nline.txt",
        "\u{1b}[2Jclear.txt",
        "invoice\u{202E}fdp.exe",
        "tab\there",
        "bell\u{7}",
    ] {
        let err = failure(&named_output_into(&env, &env.target, name), 3);
        testkit::assert_kind!(err, Kind::OutputsInvalid, "{name:?}");
        assert!(
            err.message.contains("control or formatting character"),
            "{name:?}: {}",
            err.message
        );
        assert_eq!(env.target_files(), Vec::<String>::new(), "{name:?}");
    }
}

#[test]
fn input_keys_with_control_characters_are_a_usage_error() {
    let env = Env::new();
    for key in ["na\u{1b}me", "na\nme", "\u{202E}name"] {
        let out = env
            .launch(
                "fixture",
                &["--allow-audit-plugin", "--input", &format!("{key}=x")],
            )
            .output()
            .unwrap();
        let err = failure(&out, 2);
        testkit::assert_kind!(err, Kind::InputSyntax, "{key:?}");
        assert!(
            !out.stderr.contains(&0x1b) && !out.stderr[..out.stderr.len() - 1].contains(&b'\n'),
            "the error line carries no raw control character: {:?}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(env.runs(), Vec::<String>::new());
    }
}

/// Runs dot-launch under `umask` (through sh, which sets it before exec).
fn launch_with_umask(env: &Env, umask: &str) -> std::process::Output {
    let launch = common::launch_into(
        &env.root,
        "hello",
        &env.target,
        &["--allow-audit-plugin", "--input", "name=mode"],
    );
    let mut c = std::process::Command::new("sh");
    c.arg("-c")
        .arg(format!("umask {umask}; exec \"$0\" \"$@\""))
        .arg(launch.get_program())
        .args(launch.get_args());
    c.output().unwrap()
}

#[test]
fn committed_outputs_are_0644_less_the_umask_and_owned_by_the_launcher() {
    let env = Env::new();
    for (umask, mode) in [
        ("022", 0o644),
        ("077", 0o600),
        ("027", 0o640),
        ("000", 0o644),
    ] {
        let out = launch_with_umask(&env, umask);
        assert_eq!(result(&out).outputs.len(), 1);
        let meta = std::fs::metadata(env.target.join("hello.txt")).unwrap();
        assert_eq!(meta.mode() & 0o7777, mode, "umask {umask}");
        assert_eq!(meta.uid(), nix::unistd::geteuid().as_raw());
    }
}

#[test]
fn a_runner_that_cannot_be_executed_is_refused_before_the_launch_is_allowed() {
    let env = Env::new();
    env.register("hello-p", &workspace_bin("hello"), "process", &["name"]);
    let dir = TempDir::new();
    let launch = dir.join("dot-launch");
    testkit::copy_exe(&workspace_bin("dot-launch"), &launch);
    let runner = dir.join("dot-sandbox");
    testkit::copy_exe(&workspace_bin("dot-sandbox"), &runner);
    std::fs::set_permissions(&runner, PermissionsExt::from_mode(0o644)).unwrap();
    let out = env
        .launch_via(&launch, "hello-p", &["--require-process-sandbox"])
        .output()
        .unwrap();
    let err = failure(&out, 1);
    testkit::assert_kind!(err, Kind::SandboxUnusable);
    assert!(
        err.message.contains("cannot be executed"),
        "{}",
        err.message
    );
    assert_eq!(env.runs(), Vec::<String>::new());
    // The audit log records the refusal, not an allowed launch.
    let log = tool("dot-journal-fmt")
        .args(["--audit", "--json", "--root"])
        .arg(&env.root)
        .output()
        .unwrap();
    let last: serde_json::Value = testkit::decode_json_lines(&log.stdout)
        .pop()
        .expect("an audit line");
    assert_eq!(last["outcome"], "refused", "{last}");
    assert_eq!(last["kind"], "sandbox-unusable", "{last}");
}

/// A `--target` whose path is not UTF-8 is refused for that, whether it exists or not: no
/// `mkdir -p` is offered for a directory that would be refused once made.
#[test]
fn a_target_that_is_not_utf8_is_refused_before_it_is_looked_for() {
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    for exists in [false, true] {
        let target = env.dir.join(std::ffi::OsStr::from_bytes(&[
            b't',
            b'0' + u8::from(exists),
            0xff,
        ]));
        if exists {
            std::fs::create_dir(&target).unwrap();
        }
        let out = common::launch_into(&env.root, "hello", &target, &["--allow-audit-plugin"])
            .output()
            .unwrap();
        let err = failure(&out, 2);
        testkit::assert_kind!(err, Kind::TargetInvalid, "exists: {exists}");
        assert!(err.message.contains("not valid UTF-8"), "{err:?}");
        assert_eq!((err.next, err.next_argv), (None, None), "exists: {exists}");
        assert_eq!(target.exists(), exists, "nothing made");
        assert_eq!(env.runs(), Vec::<String>::new(), "nothing was started");
    }
}
