//! `dot-register init`.
#![allow(clippy::unwrap_used)]

use assert_cmd::cargo::cargo_bin_cmd;
use proto::layout::{Root, REGISTRY_DIRS, STATE_DIRS};
use proto::Kind;
use register::report::InitReport;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Output;
use testkit::TempDir;

fn init(root: &std::path::Path, dev: bool) -> Output {
    let mut cmd = cargo_bin_cmd!("dot-register");
    cmd.args(["init", "--root"]).arg(root);
    if dev {
        cmd.arg("--dev");
    }
    cmd.output().unwrap()
}

#[test]
fn creates_the_layout_with_private_modes() {
    let d = TempDir::new();
    let root = Root::single(d.join("root"));
    let report: InitReport = testkit::assert_ok(&init(root.path(), false));
    assert!(!report.dev);
    assert_eq!(
        report.created.len(),
        1 + REGISTRY_DIRS.len() + STATE_DIRS.len()
    );
    assert_eq!(report.state, None);
    for dir in std::iter::once(root.path().to_path_buf())
        .chain(REGISTRY_DIRS.iter().map(|x| root.path().join(x)))
        .chain(STATE_DIRS.iter().map(|x| root.path().join(x)))
    {
        let m = fs::symlink_metadata(&dir).unwrap();
        assert!(m.is_dir(), "{}", dir.display());
        assert_eq!(m.mode() & 0o7777, 0o700, "{}", dir.display());
    }
    assert!(!root.dev_marker().exists());
    assert!(!verify::root::check_root(&root).unwrap().dev);
}

#[test]
fn state_makes_the_state_part_apart_from_the_registry() {
    let d = TempDir::new();
    let root = Root::split(d.join("reg"), d.join("state"));
    let out = cargo_bin_cmd!("dot-register")
        .args(["init", "--root"])
        .arg(root.path())
        .arg("--state")
        .arg(root.state())
        .output()
        .unwrap();
    let report: InitReport = testkit::assert_ok(&out);
    assert_eq!(report.state, Some(root.state().display().to_string()));
    assert_eq!(
        report.created.len(),
        2 + REGISTRY_DIRS.len() + STATE_DIRS.len()
    );
    assert!(!root.path().join("txn").exists(), "no runs in the registry");
    for dir in [root.state().to_path_buf(), root.txn()] {
        let m = fs::symlink_metadata(&dir).unwrap();
        assert_eq!(m.mode() & 0o7777, 0o700, "{}", dir.display());
    }
    verify::root::check_root(&root).unwrap();
    verify::root::check_state(&root).unwrap();
    // The registry alone passes the registry check; a second init changes nothing.
    verify::root::check_root(&Root::split(root.path(), d.join("elsewhere"))).unwrap();
    let before = testkit::tree_snapshot(d.path());
    let again: InitReport = testkit::assert_ok(
        &cargo_bin_cmd!("dot-register")
            .args(["init", "--root"])
            .arg(root.path())
            .arg("--state")
            .arg(root.state())
            .output()
            .unwrap(),
    );
    assert!(again.created.is_empty());
    assert_eq!(before, testkit::tree_snapshot(d.path()));
}

#[test]
fn is_idempotent_on_a_valid_root() {
    let d = TempDir::new();
    let root = d.join("root");
    testkit::assert_ok::<InitReport>(&init(&root, true));
    let before = testkit::tree_snapshot(&root);
    let report: InitReport = testkit::assert_ok(&init(&root, false));
    assert!(report.dev, "an existing development root stays one");
    assert!(report.created.is_empty());
    let report: InitReport = testkit::assert_ok(&init(&root, true));
    assert!(report.created.is_empty());
    assert_eq!(before, testkit::tree_snapshot(&root));
}

#[test]
fn dev_writes_the_marker() {
    let d = TempDir::new();
    let root = Root::single(d.join("root"));
    let report: InitReport = testkit::assert_ok(&init(root.path(), true));
    assert!(report.dev);
    let m = fs::symlink_metadata(root.dev_marker()).unwrap();
    assert!(m.is_file());
    assert_eq!(m.mode() & 0o777, 0o600);
}

#[test]
fn completes_a_root_with_a_missing_layout_directory() {
    let d = TempDir::new();
    let root = Root::single(d.join("root"));
    testkit::assert_ok::<InitReport>(&init(root.path(), false));
    fs::remove_dir(root.txn()).unwrap();
    let report: InitReport = testkit::assert_ok(&init(root.path(), false));
    assert_eq!(report.created, vec![root.txn().display().to_string()]);
}

#[test]
fn refuses_to_turn_a_root_with_registrations_into_a_dev_root() {
    let d = TempDir::new();
    let root = d.join("root");
    testkit::assert_ok::<InitReport>(&init(&root, false));
    for held in ["plugins.d/hello.json", "trust/publishers/acme.json"] {
        fs::write(root.join(held), b"{}").unwrap();
        let before = testkit::tree_snapshot(&root);
        let e = testkit::assert_refused(&init(&root, true), 1, Kind::RootNotDev);
        assert_eq!(before, testkit::tree_snapshot(&root));
        assert!(
            e.message.contains(&root.join(held).display().to_string()),
            "names what it holds: {}",
            e.message
        );
        assert_eq!(
            testkit::bare(e.next.as_deref()).as_deref(),
            Some("dot-register init --root DIR --dev")
        );
        fs::remove_file(root.join(held)).unwrap();
    }
}

#[test]
fn an_empty_root_becomes_a_dev_root() {
    let d = TempDir::new();
    let root = Root::single(d.join("root"));
    testkit::assert_ok::<InitReport>(&init(root.path(), false));
    let report: InitReport = testkit::assert_ok(&init(root.path(), true));
    assert!(report.dev);
    assert_eq!(
        report.created,
        vec![root.dev_marker().display().to_string()]
    );
    let m = fs::symlink_metadata(root.dev_marker()).unwrap();
    assert_eq!((m.is_file(), m.mode() & 0o777), (true, 0o600));
}

#[test]
fn refuses_group_writable_root() {
    let d = TempDir::new();
    let root = d.join("root");
    fs::create_dir(&root).unwrap();
    fs::set_permissions(&root, fs::Permissions::from_mode(0o770)).unwrap();
    let before = testkit::tree_snapshot(&root);
    testkit::assert_refused(&init(&root, false), 1, Kind::RootUnsafe);
    assert_eq!(before, testkit::tree_snapshot(&root));
}

#[test]
fn refuses_world_writable_layout_directory() {
    let d = TempDir::new();
    let root = Root::single(d.join("root"));
    testkit::assert_ok::<InitReport>(&init(root.path(), false));
    fs::set_permissions(root.store(), fs::Permissions::from_mode(0o777)).unwrap();
    let before = testkit::tree_snapshot(root.path());
    testkit::assert_refused(&init(root.path(), false), 1, Kind::RootUnsafe);
    assert_eq!(before, testkit::tree_snapshot(root.path()));
}

#[test]
fn refuses_root_owned_by_another_user() {
    let d = TempDir::new();
    let root = d.join("root");
    fs::create_dir(&root).unwrap();
    fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&root, Some(65534), Some(65534)).unwrap();
    let before = testkit::tree_snapshot(&root);
    testkit::assert_refused(&init(&root, false), 1, Kind::RootUnsafe);
    assert_eq!(before, testkit::tree_snapshot(&root));
}

#[test]
fn refuses_symlinked_layout_directory() {
    let d = TempDir::new();
    let root = d.join("root");
    fs::create_dir(&root).unwrap();
    fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).unwrap();
    fs::create_dir(d.join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(d.join("elsewhere"), root.join("plugins.d")).unwrap();
    let before = testkit::tree_snapshot(&root);
    testkit::assert_refused(&init(&root, false), 1, Kind::RootUnsafe);
    assert_eq!(before, testkit::tree_snapshot(&root));
}

#[test]
fn a_state_directory_that_cannot_be_made_is_refused_before_anything_is_made() {
    let d = TempDir::new();
    let root = d.join("new");
    let missing = d.join("nonexistent").join("x");
    let mut cmd = cargo_bin_cmd!("dot-register");
    cmd.args(["init", "--root"])
        .arg(&root)
        .arg("--state")
        .arg(&missing);
    let e = testkit::assert_refused(&cmd.output().unwrap(), 1, Kind::RootMissing);
    assert_eq!(e.path.as_deref(), missing.to_str());
    assert!(
        e.message
            .contains(&d.join("nonexistent").display().to_string()),
        "names the missing parent: {}",
        e.message
    );
    assert!(!root.exists(), "nothing made");
    // An empty --state names nothing: a usage error, and nothing made.
    let mut cmd = cargo_bin_cmd!("dot-register");
    cmd.args(["init", "--root"])
        .arg(&root)
        .args(["--state", ""]);
    let e = testkit::assert_refused(&cmd.output().unwrap(), 2, Kind::Usage);
    assert!(e.message.contains("--state is empty"), "{}", e.message);
    assert!(!root.exists(), "nothing made");
    // A root whose parent is missing: the same, for --root.
    let deep = d.join("no").join("root");
    let e = testkit::assert_refused(&init(&deep, false), 1, Kind::RootMissing);
    assert!(e.message.contains("does not exist"), "{}", e.message);
    assert!(!d.join("no").exists());
}

#[test]
fn an_audit_log_that_is_a_fifo_refuses_a_change_before_it_is_written() {
    let d = TempDir::new();
    let root = Root::single(d.join("root"));
    testkit::assert_ok::<InitReport>(&init(root.path(), true));
    nix::unistd::mkfifo(
        &root.change_log(),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let exe = testkit::write_exe(d.path(), "p.sh", testkit::SCRIPT, 0o755);
    let before = testkit::tree_snapshot(root.path());
    let out = cargo_bin_cmd!("dot-register")
        .args(["dev", "--root"])
        .arg(root.path())
        .args([
            "--name",
            "hello",
            "--containment",
            "audit",
            "--allow-dynamic",
            "--exe",
        ])
        .arg(&exe)
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 1, Kind::RootUnsafe);
    assert_eq!(e.path.as_deref(), root.change_log().to_str());
    assert!(e.message.contains("fifo"), "{}", e.message);
    assert_eq!(
        before,
        testkit::tree_snapshot(root.path()),
        "nothing written"
    );
}

/// A system layer (made by `init --layer`, readable by every user) that lost a registry directory
/// is completed as a layer: the refusal's `next` is `init --layer`, which `init` without it would
/// refuse (a layer is never made a private root).
#[test]
fn a_layer_missing_a_directory_is_completed_as_a_layer() {
    let d = TempDir::new();
    let layer = d.join("layer");
    let mut cmd = cargo_bin_cmd!("dot-register");
    testkit::assert_ok::<InitReport>(
        &cmd.args(["init", "--layer", "--root"])
            .arg(&layer)
            .output()
            .unwrap(),
    );
    fs::remove_dir(layer.join("plugins.d")).unwrap();
    let out = cargo_bin_cmd!("dot-register")
        .args(["list", "--root"])
        .arg(&layer)
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 1, Kind::RootMissing);
    let argv = e.next_argv.expect("one command");
    assert_eq!(
        argv[1..],
        ["init", "--layer", "--root", layer.to_str().unwrap()].map(String::from),
    );
    let mut redo = cargo_bin_cmd!("dot-register");
    testkit::assert_ok::<InitReport>(&redo.args(&argv[1..]).output().unwrap());
    assert_eq!(
        fs::metadata(layer.join("plugins.d")).unwrap().mode() & 0o777,
        0o755
    );
}
