//! `DOT_ROOT`: the root of every tool that takes `--root`, when the command line gives neither
//! `--root` nor `--sysroot`; `--root` overrides it; `dot-launch --explain` says which named the
//! root; a tool or command without `--root` ignores it.

#![allow(clippy::unwrap_used)]

mod common;

use common::{init_dev_root, ok, tool};
use proto::explain::Explanation;
use testkit::{workspace_bin, TempDir};

#[test]
fn dot_root_names_the_root_of_every_tool_that_takes_one() {
    let dir = TempDir::new();
    let root = dir.join("root");
    let other = dir.join("other");
    let target = dir.join("out");
    std::fs::create_dir(&target).unwrap();
    init_dev_root(&root);
    init_dev_root(&other);
    let with_env = |name: &str| {
        let mut c = tool(name);
        c.env("DOT_ROOT", &root);
        c
    };
    // dot-register: a subcommand with a required --root.
    ok(
        with_env("dot-register")
            .args(["dev", "--name", "hello", "--containment", "audit", "--exe"])
            .arg(workspace_bin("hello"))
            .args(["--input", "name:string:optional"])
            .output()
            .unwrap(),
        "dev with DOT_ROOT",
    );
    assert!(root.join("plugins.d/hello.json").is_file());
    assert!(!other.join("plugins.d/hello.json").exists());
    // dot-verify entry and doctor: an optional --root.
    let r: verify::cli::EntryReport = testkit::assert_ok(
        &with_env("dot-verify")
            .args(["entry", "hello"])
            .output()
            .unwrap(),
    );
    assert_eq!(r.registry, root);
    let d: verify::doctor::DoctorReport =
        testkit::assert_ok(&with_env("dot-verify").arg("doctor").output().unwrap());
    assert_eq!(d.entries.len(), 1);
    // dot-launch, explained: the root and what named it.
    let launch = |extra: &[&std::ffi::OsStr]| {
        with_env("dot-launch")
            .args(extra)
            .args(["hello", "--allow-audit-plugin", "--explain", "--target"])
            .arg(&target)
            .output()
            .unwrap()
    };
    let x: Explanation = testkit::assert_ok(&launch(&[]));
    assert_eq!(x.registry.from, "DOT_ROOT");
    assert_eq!(x.registry.paths, [root.display().to_string()]);
    // --root overrides it.
    let out = launch(&["--root".as_ref(), other.as_os_str()]);
    let e = testkit::assert_refused(&out, 1, proto::Kind::EntryMissing);
    assert_eq!(
        e.path.as_deref(),
        other.join("plugins.d/hello.json").to_str()
    );
    // A run, then dot-journal-fmt and dot-discard read the same root.
    ok(
        with_env("dot-launch")
            .args([
                "hello",
                "--allow-audit-plugin",
                "--input",
                "name=env",
                "--target",
            ])
            .arg(&target)
            .output()
            .unwrap(),
        "launch with DOT_ROOT",
    );
    assert_eq!(
        std::fs::read_to_string(target.join("hello.txt")).unwrap(),
        "hello, env\n"
    );
    ok(
        with_env("dot-discard").output().unwrap(),
        "discard with DOT_ROOT",
    );
    let audit = ok(
        with_env("dot-journal-fmt").arg("--audit").output().unwrap(),
        "journal-fmt --audit with DOT_ROOT",
    );
    assert!(
        String::from_utf8_lossy(&audit.stdout).contains("hello"),
        "{audit:?}"
    );
    // A command without --root is unchanged by it, and so is --help.
    let digest = ok(
        with_env("dot-verify")
            .arg("digest")
            .arg(workspace_bin("hello"))
            .output()
            .unwrap(),
        "digest",
    );
    assert_eq!(String::from_utf8_lossy(&digest.stdout).lines().count(), 1);
    ok(
        with_env("dot-discard").arg("--help").output().unwrap(),
        "--help",
    );
}

/// `dot-journal-fmt FILE` with `DOT_ROOT` set formats the file: the root from the environment gives
/// way to journal files named on the command line (`--root` with files is still a usage error).
#[test]
fn dot_root_gives_way_to_journal_files() {
    let dir = TempDir::new();
    let root = dir.join("root");
    init_dev_root(&root);
    let journal = dir.join("journal");
    std::fs::write(&journal, b"").unwrap();
    let out = tool("dot-journal-fmt")
        .env("DOT_ROOT", &root)
        .arg(&journal)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(2), "not a usage error: {out:?}");
    let out = tool("dot-journal-fmt")
        .arg("--root")
        .arg(&root)
        .arg(&journal)
        .output()
        .unwrap();
    testkit::assert_refused(&out, 2, proto::Kind::Usage);
}

/// `dot-register mask` and `unmask` change the system layers, which launches in an environment with
/// `DOT_ROOT` do not read: with it set they refuse (usage), write nothing, and offer the same
/// command with `--sysroot /`, which names the system layers outright (as for every tool,
/// `--sysroot` ignores `DOT_ROOT`).
#[test]
fn mask_refuses_while_dot_root_names_a_root_unless_sysroot_names_the_layers() {
    let dir = TempDir::new();
    let root = dir.join("root");
    init_dev_root(&root);
    let sysroot = dir.join("sys");
    let layers = proto::layers::SystemLayers::new(Some(&sysroot));
    for command in ["mask", "unmask"] {
        let before = testkit::tree_snapshot(&root);
        let out = tool("dot-register")
            .env("DOT_ROOT", &root)
            .args([command, "hello"])
            .output()
            .unwrap();
        let e = testkit::assert_refused(&out, 2, proto::Kind::Usage);
        assert_eq!(e.field.as_deref(), Some("DOT_ROOT"), "{e:?}");
        assert!(e.message.contains("DOT_ROOT is set"), "{e:?}");
        let argv = e.next_argv.clone().expect("one command");
        assert_eq!(
            argv[1..],
            [command, "hello", "--sysroot", "/"].map(String::from),
            "{e:?}"
        );
        assert_eq!(before, testkit::tree_snapshot(&root), "nothing written");
    }
    assert!(!sysroot.exists());
    // --sysroot names the layers: the mask is made there, DOT_ROOT or not.
    ok(
        tool("dot-register")
            .env("DOT_ROOT", &root)
            .args(["mask", "hello", "--sysroot"])
            .arg(&sysroot)
            .output()
            .unwrap(),
        "mask --sysroot",
    );
    assert!(proto::layers::mask_path(&layers.admin, &proto::Name::new("hello").unwrap()).is_file());
}
