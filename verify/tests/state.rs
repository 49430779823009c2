//! The state part of a root: made private on first use (with its parents for a default state),
//! never changed once it exists, and refused when it is not ours alone.
#![allow(clippy::unwrap_used)]

use proto::layout::Root;
use proto::Kind;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use testkit::TempDir;
use verify::root::{check_state, ensure_state};

fn mode_of(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

#[test]
fn a_default_state_is_made_with_its_parents_all_private() {
    let d = TempDir::new();
    let home = d.join("home");
    fs::create_dir(&home).unwrap();
    fs::set_permissions(&home, fs::Permissions::from_mode(0o755)).unwrap();
    let state = proto::layout::default_state(1000, None, Some(home.as_os_str())).unwrap();
    let root = Root::split(d.join("registry"), &state);
    ensure_state(&root, true).unwrap();
    for p in [
        home.join(".local"),
        home.join(".local/state"),
        state.clone(),
        state.join("txn"),
    ] {
        assert_eq!(mode_of(&p), 0o700, "{}", p.display());
    }
    assert_eq!(mode_of(&home), 0o755, "an existing parent is never changed");
    // Again: nothing changes, even a mode the owner chose.
    fs::set_permissions(&state, fs::Permissions::from_mode(0o750)).unwrap();
    ensure_state(&root, true).unwrap();
    assert_eq!(mode_of(&state), 0o750);
}

#[test]
fn a_named_state_is_made_only_inside_an_existing_parent() {
    let d = TempDir::new();
    let root = Root::split(d.join("registry"), d.join("a/b/state"));
    let e = testkit::assert_typed(&ensure_state(&root, false).unwrap_err(), Kind::RootMissing);
    assert_eq!(
        e.next.as_deref(),
        Some(
            format!(
                "dot-register init --root {} --state {}",
                root.path().display(),
                root.state().display()
            )
            .as_str()
        )
    );
    assert!(!d.join("a").exists());
}

#[test]
fn a_state_others_can_write_or_another_user_owns_is_refused_and_left_alone() {
    let d = TempDir::new();
    let state = d.join("state");
    let root = Root::split(d.join("registry"), &state);
    ensure_state(&root, false).unwrap();
    fs::set_permissions(&state, fs::Permissions::from_mode(0o770)).unwrap();
    let e = testkit::assert_typed(&ensure_state(&root, false).unwrap_err(), Kind::RootUnsafe);
    assert!(e.message.contains("the state directory"), "{}", e.message);
    assert_eq!(mode_of(&state), 0o770, "never tightened either");
    fs::set_permissions(&state, fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&state, Some(65534), None).unwrap();
    let e = testkit::assert_typed(&check_state(&root).unwrap_err(), Kind::RootUnsafe);
    assert!(e.message.contains("owned by uid 65534"), "{}", e.message);
    // A link where txn/ belongs is not followed.
    std::os::unix::fs::chown(&state, Some(0), None).unwrap();
    fs::remove_dir(state.join("txn")).unwrap();
    std::os::unix::fs::symlink(d.path(), state.join("txn")).unwrap();
    testkit::assert_typed(&ensure_state(&root, false).unwrap_err(), Kind::RootUnsafe);
}
