//! Fixture executables, entries, publishers and platform roots, made by hand as the tools make
//! them.

use crate::KeyPair;
use proto::layout::{Root, REGISTRY_DIRS, STATE_DIRS};
use proto::{Containment, Entry, InputDecl, InputKind, Name, Sha256, Trust};
use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `dir/name` with `mode` and returns the path.
pub fn write_exe(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, bytes).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
    p
}

/// Files that are not regular files, made in `dir`: a directory, a fifo, `/dev/null` and a symbolic
/// link to `real`, each with the words a message uses for it.
pub fn odd_files(dir: &Path, real: &Path) -> Vec<(PathBuf, &'static str)> {
    let d = dir.join("dir");
    fs::create_dir(&d).unwrap();
    let fifo = dir.join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", fifo.display());
    let link = dir.join("link");
    std::os::unix::fs::symlink(real, &link).unwrap();
    vec![
        (d, "is a directory"),
        (fifo, "is a fifo"),
        (PathBuf::from("/dev/null"), "is a character device"),
        (link, "is a symbolic link"),
    ]
}

/// A shell script: never a static ELF.
pub const SCRIPT: &[u8] =
    b"#!/bin/sh\necho '{\"protocol\":\"1.0\",\"status\":\"ok\",\"outputs\":[]}'\n";

/// A valid entry for the executable at `exe` (its sha256 and size): version 1.0.0, protocol
/// `>=1.0, <2`, one optional string input `name`. `publisher` `Some` makes a signed entry, `None`
/// a local one.
pub fn entry_for(
    name: &str,
    exe: &Path,
    containment: Containment,
    publisher: Option<&str>,
) -> Entry {
    let bytes = fs::read(exe).unwrap_or_else(|e| panic!("read {}: {e}", exe.display()));
    entry_for_bytes(name, &bytes, containment, publisher)
}

/// `entry_for` for executable bytes in memory.
pub fn entry_for_bytes(
    name: &str,
    exe: &[u8],
    containment: Containment,
    publisher: Option<&str>,
) -> Entry {
    Entry {
        schema: proto::entry::ENTRY_SCHEMA,
        name: Name::new(name).unwrap(),
        version: semver::Version::new(1, 0, 0),
        trust: if publisher.is_some() {
            Trust::Signed
        } else {
            Trust::Local
        },
        publisher: publisher.map(|p| Name::new(p).unwrap()),
        sha256: Sha256::of(exe),
        size: exe.len() as u64,
        protocol: ">=1.0, <2".to_owned(),
        inputs: vec![InputDecl {
            name: Name::new("name").unwrap(),
            kind: InputKind::String,
            required: false,
        }],
        containment,
        expires: None,
        limits: None,
        runtime: Vec::new(),
        env: Vec::new(),
    }
}

/// Creates a platform root at `dir` by hand (what `dot-register init` makes): the layout
/// directories with mode 0700, and the DEV marker when `dev`.
pub fn make_root(dir: &Path, dev: bool) -> Root {
    let root = Root::single(dir);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .unwrap();
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).unwrap();
    for d in REGISTRY_DIRS.iter().chain(&STATE_DIRS) {
        let p = dir.join(d);
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&p)
            .unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o700)).unwrap();
    }
    if dev {
        fs::write(root.dev_marker(), b"").unwrap();
        fs::set_permissions(root.dev_marker(), fs::Permissions::from_mode(0o600)).unwrap();
    }
    root
}

/// The publisher record trusting `keys` (none revoked).
pub fn publisher_record(id: &str, keys: &[&KeyPair]) -> proto::Publisher {
    proto::Publisher {
        schema: proto::publisher::PUBLISHER_SCHEMA,
        id: Name::new(id).unwrap(),
        added_at: 1,
        keys: keys
            .iter()
            .map(|k| proto::PublisherKey {
                key_id: k.key_id(),
                public_key: k.public_key_b64(),
                added_at: 1,
                not_before: None,
                not_after: None,
                revoked: None,
            })
            .collect(),
        revoked: None,
        threshold: 1,
        level: proto::publisher::Level::Trusted,
        names: Vec::new(),
    }
}

/// Writes `trust/publishers/ID.json` by hand (what `dot-register publisher add` makes).
pub fn install_publisher(root: &Root, publisher: &proto::Publisher) -> PathBuf {
    let p = root.publisher(&publisher.id);
    fs::write(&p, publisher.to_bytes()).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// Installs an entry by hand (what `dot-register add`/`dev` makes): `plugins.d/NAME.json` with
/// exactly `entry_bytes`, `NAME.json.minisig` when `sig` is given, the pinned copy of `exe_bytes`
/// at `store/sha256/HEX` (HEX from the entry) with mode 0500, and for an `audit` entry the owner's
/// `--allow-dynamic` grant (`NAME.json.grant`), since fixture bytes are rarely a static ELF.
pub fn install_entry(
    root: &Root,
    name: &str,
    entry_bytes: &[u8],
    sig: Option<&[u8]>,
    exe_bytes: &[u8],
) {
    let name = Name::new(name).unwrap();
    let entry = Entry::parse(entry_bytes).expect("install_entry: entry parses");
    fs::write(root.entry(&name), entry_bytes).unwrap();
    fs::set_permissions(root.entry(&name), fs::Permissions::from_mode(0o600)).unwrap();
    if let Some(sig) = sig {
        fs::write(root.entry_sig(&name), sig).unwrap();
        fs::set_permissions(root.entry_sig(&name), fs::Permissions::from_mode(0o600)).unwrap();
    }
    if entry.containment == Containment::Audit {
        install_grant(root, &entry);
    }
    let store = root.store_file(&entry.sha256);
    if !store.exists() {
        fs::write(&store, exe_bytes).unwrap();
        fs::set_permissions(&store, fs::Permissions::from_mode(0o555)).unwrap();
    }
}

/// Writes the owner's `--allow-dynamic` grant for `entry` by hand (`plugins.d/NAME.json.grant`).
pub fn install_grant(root: &Root, entry: &Entry) -> PathBuf {
    let p = root.entry_grant(&entry.name);
    let grant = proto::trust::Grant {
        schema: proto::trust::TRUST_SCHEMA,
        name: entry.name.clone(),
        sha256: entry.sha256,
        allow_dynamic_at: 1,
    };
    fs::write(&p, grant.to_bytes()).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
    p
}
