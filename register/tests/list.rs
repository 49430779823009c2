//! `dot-register list` over entries that share a store file: each distinct store file is digested
//! once per list, and every entry's `valid` and `problem` are what `verify_entry` gives it alone —
//! a tampered store file included, reported for every entry that uses it.
#![allow(clippy::unwrap_used)]

mod common;

use common::reg;
use proto::layout::Root;
use proto::{Kind, Name, ToErrorObject};
use register::report::ListItem;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use testkit::TempDir;
use verify::batch::Check;

/// A DEV root with `n` process entries `e00`… of the static `hello` (one store file), registered
/// by `dot-register dev`.
fn root_of(dir: &TempDir, n: usize) -> Root {
    let root = Root::single(dir.join("root"));
    let r = root.path().to_str().unwrap().to_owned();
    testkit::assert_ok::<register::report::InitReport>(&reg(["init", "--dev", "--root", &r]));
    let exe = testkit::static_fixture("hello");
    for i in 0..n {
        let name = format!("e{i:02}");
        let out = reg([
            "dev",
            "--root",
            &r,
            "--name",
            &name,
            "--containment",
            "process",
            "--exe",
            exe.to_str().unwrap(),
        ]);
        testkit::assert_ok::<register::report::AddReport>(&out);
    }
    root
}

fn list(root: &Root) -> Vec<ListItem> {
    testkit::assert_ok(&reg(["list", "--root", root.path().to_str().unwrap()]))
}

/// Each item's verdict is the one `verify_entry` gives its entry alone.
fn assert_same_as_alone(root: &Root, items: &[ListItem]) {
    for item in items {
        let alone = verify::entry::verify_entry(root, &Name::new(&item.name).unwrap());
        assert_eq!(item.valid, alone.is_ok(), "{}", item.name);
        // The tool names the other tools beside it; the library, bare.
        let problem = item.problem.clone().map(|mut p| {
            p.next = testkit::bare(p.next.as_deref());
            p
        });
        assert_eq!(
            problem,
            alone.err().map(|e| e.to_error_object()),
            "{}",
            item.name
        );
    }
}

#[test]
fn entries_sharing_a_store_file_are_digested_once_with_their_own_verdicts() {
    let dir = TempDir::new();
    let root = root_of(&dir, 8);
    let items = list(&root);
    assert_eq!(items.len(), 8);
    assert_same_as_alone(&root, &items);
    for item in &items {
        assert!(item.valid, "{item:?}");
        assert_eq!(item.checks.len(), 7, "{item:?}");
        assert_eq!(
            (item.checks[2], item.checks[6]),
            (Check::Local, Check::StaticElf)
        );
        let digest = item.digest.as_ref().expect("digested");
        assert_eq!(digest.read_for, "e00", "{}", item.name);
        let sha = item.sha256.unwrap();
        assert_eq!(digest.store, root.store_file(&sha).display().to_string());
    }
}

#[test]
fn a_tampered_store_file_is_every_sharing_entrys_problem() {
    let dir = TempDir::new();
    let root = root_of(&dir, 8);
    let sha = list(&root)[0].sha256.unwrap();
    let store = root.store_file(&sha);
    let mut bytes = fs::read(&store).unwrap();
    bytes[100] ^= 1;
    fs::set_permissions(&store, fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(&store, &bytes).unwrap();
    fs::set_permissions(&store, fs::Permissions::from_mode(0o555)).unwrap();
    let items = list(&root);
    assert_eq!(items.len(), 8);
    for item in &items {
        let problem = item.problem.as_ref().unwrap_or_else(|| panic!("{item:?}"));
        testkit::assert_kind!(problem, Kind::StoreTampered, "{}", item.name);
        assert!(!item.valid && item.checks.is_empty(), "{item:?}");
    }
    assert_same_as_alone(&root, &items);
}

#[test]
fn a_malformed_policy_is_every_entrys_problem() {
    let dir = TempDir::new();
    let root = root_of(&dir, 3);
    fs::write(root.policy(), b"{\"schema\":1,\"bogus\":true}").unwrap();
    fs::set_permissions(root.policy(), fs::Permissions::from_mode(0o600)).unwrap();
    let items = list(&root);
    assert_eq!(items.len(), 3);
    for item in &items {
        let problem = item.problem.as_ref().unwrap_or_else(|| panic!("{item:?}"));
        testkit::assert_kind!(problem, Kind::TrustMalformed, "{}", item.name);
        assert!(item.digest.is_none() && item.checks.is_empty(), "{item:?}");
    }
    assert_same_as_alone(&root, &items);
}
