//! Is this directory a platform root we may trust? Owner, modes and layout.

use crate::error::VerifyError;
use cli::Next;
use proto::layout::{Root, REGISTRY_DIRS, STATE_DIRS};
use std::fs::Metadata;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

/// What the root check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RootInfo {
    /// The `DEV` marker is present: local entries are accepted.
    pub dev: bool,
}

/// The effective uid of this process.
pub fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Checks the registry: its directory and every registry layout directory exist, are real
/// directories (the layout directories are not symbolic links), are owned by root or by our
/// effective uid and are not group- or world-writable ([`check_shared`]). A `DEV` marker, if
/// present, must be such a regular file. The state part is not looked at: the tools that use it
/// check it with [`ensure_state`] or [`check_state`] (so a registry of root's, even one that is
/// a single root with its `txn/`, can be read by every user).
pub fn check_root(root: &Root) -> Result<RootInfo, VerifyError> {
    let dir = root.path();
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(absent(root)),
        Err(e) => return Err(VerifyError::io(dir, e)),
    };
    if !meta.is_dir() {
        // `init` would refuse this path too: the root must go somewhere else.
        return Err(VerifyError::RootMissing {
            path: dir.to_path_buf(),
            root: dir.to_path_buf(),
            what: format!(
                "it is a {}, not a directory; choose another directory for the root",
                sys::fs::file_kind(&meta)
            ),
            next: Next::cmd("dot-register")
                .args(["init", "--root"])
                .raw("DIR"),
        });
    }
    check_shared(dir, &meta)?;
    for d in REGISTRY_DIRS {
        check_layout_dir(root, &dir.join(d), d, check_shared)?;
    }
    let marker = root.dev_marker();
    let dev = match std::fs::symlink_metadata(&marker) {
        Ok(m) => {
            if !m.file_type().is_file() {
                return Err(VerifyError::RootUnsafe {
                    path: marker,
                    reason: format!("the DEV marker is a {}", sys::fs::file_kind(&m)),
                });
            }
            check_shared(&marker, &m)?;
            true
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(VerifyError::io(&marker, e)),
    };
    Ok(RootInfo { dev })
}

/// Checks the root for a change by `dot-register`: [`check_root`], and the registry directory is
/// ours (a registry owned by root is read by everyone and changed only by root).
pub fn check_root_writable(root: &Root) -> Result<RootInfo, VerifyError> {
    check_not_roots(root)?;
    let info = check_root(root)?;
    let dir = root.path();
    let meta = std::fs::metadata(dir).map_err(|e| VerifyError::io(dir, e))?;
    check_private(dir, &meta)?;
    Ok(info)
}

/// `registry-read-only` when the registry directory exists and is root's but we are not root:
/// what `dot-register` says before any other check (the registry may be sound; it is just not
/// ours to change).
pub fn check_not_roots(root: &Root) -> Result<(), VerifyError> {
    let dir = root.path();
    let me = euid();
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() && m.uid() == 0 && me != 0 => Err(VerifyError::RegistryReadOnly {
            path: dir.to_path_buf(),
            owner: 0,
            uid: me,
        }),
        _ => Ok(()),
    }
}

/// Checks the state part: the state directory and `txn/` exist, are real directories (`txn/` is
/// not a symbolic link), are owned by our effective uid and are not group- or world-writable
/// ([`check_private`]).
pub fn check_state(root: &Root) -> Result<(), VerifyError> {
    let dir = root.state();
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(absent_state(root)),
        Err(e) => return Err(VerifyError::io(dir, e)),
    };
    if !meta.is_dir() {
        return Err(VerifyError::RootUnsafe {
            path: dir.to_path_buf(),
            reason: format!(
                "the state directory is a {}, not a directory",
                sys::fs::file_kind(&meta)
            ),
        });
    }
    check_private(dir, &meta).map_err(|e| state_error(root, e))?;
    for d in STATE_DIRS {
        check_layout_dir(root, &dir.join(d), d, check_private).map_err(|e| state_error(root, e))?;
    }
    Ok(())
}

/// Makes the state part of a root whose state is apart from its registry, where it is missing:
/// the state directory (its parent must exist; with `parents`, missing parents are made too, as
/// for a default state directory) and `txn/`, each 0700. An existing directory is never changed
/// (its mode is not loosened nor tightened): it must pass [`check_state`]. A single root's state
/// is its own directory, made by `dot-register init`: it is only checked.
pub fn ensure_state(root: &Root, parents: bool) -> Result<(), VerifyError> {
    let Some(dir) = root.separate_state() else {
        return check_state(root);
    };
    let made = |p: &Path, r: std::io::Result<()>| match r {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(absent_state(root)),
        Err(e) => Err(VerifyError::io(p, e)),
    };
    if std::fs::symlink_metadata(dir).is_err() {
        let mut b = std::fs::DirBuilder::new();
        b.mode(0o700).recursive(parents);
        made(dir, b.create(dir))?;
    }
    // The directory itself first: nothing inside another user's state is looked at.
    let meta = std::fs::metadata(dir).map_err(|e| VerifyError::io(dir, e))?;
    if meta.is_dir() {
        check_private(dir, &meta).map_err(|e| state_error(root, e))?;
        for d in STATE_DIRS {
            let p = dir.join(d);
            if std::fs::symlink_metadata(&p).is_err() {
                made(&p, std::fs::DirBuilder::new().mode(0o700).create(&p))?;
            }
        }
    }
    check_state(root)
}

/// One layout directory: present, a real directory, and passing `rule`.
fn check_layout_dir(
    root: &Root,
    p: &Path,
    d: &str,
    rule: fn(&Path, &Metadata) -> Result<(), VerifyError>,
) -> Result<(), VerifyError> {
    let meta = match std::fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(missing(root, p, &format!("{d}/ is missing")))
        }
        Err(e) => return Err(VerifyError::io(p, e)),
    };
    if !meta.file_type().is_dir() {
        return Err(VerifyError::RootUnsafe {
            path: p.to_path_buf(),
            reason: format!("{d} is a {}, not a directory", sys::fs::file_kind(&meta)),
        });
    }
    rule(p, &meta)
}

/// Owned by our effective uid and not group- or world-writable: the rule for the state part, and
/// for everything of a root that `dot-register` changes.
pub fn check_private(path: &Path, meta: &Metadata) -> Result<(), VerifyError> {
    let me = euid();
    if meta.uid() != me {
        return Err(VerifyError::RootUnsafe {
            path: path.to_path_buf(),
            reason: format!("owned by uid {}, not by us (uid {me})", meta.uid()),
        });
    }
    not_writable_by_others(path, meta)
}

/// Owned by root or by our effective uid and not group- or world-writable: the rule for what a
/// tool reads from the registry (a system registry is root's and read by every user).
pub fn check_shared(path: &Path, meta: &Metadata) -> Result<(), VerifyError> {
    let me = euid();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(VerifyError::RootUnsafe {
            path: path.to_path_buf(),
            reason: format!(
                "owned by uid {}, neither by root nor by us (uid {me})",
                meta.uid()
            ),
        });
    }
    not_writable_by_others(path, meta)
}

fn not_writable_by_others(path: &Path, meta: &Metadata) -> Result<(), VerifyError> {
    if meta.mode() & 0o022 != 0 {
        return Err(VerifyError::RootUnsafe {
            path: path.to_path_buf(),
            reason: format!(
                "mode {:o} is group- or world-writable",
                meta.mode() & 0o7777
            ),
        });
    }
    Ok(())
}

/// A state directory apart from the registry is named as such in the reason.
fn state_error(root: &Root, e: VerifyError) -> VerifyError {
    match e {
        VerifyError::RootUnsafe { path, reason } if !root.is_single() => VerifyError::RootUnsafe {
            path,
            reason: format!("the state directory: {reason}"),
        },
        e => e,
    }
}

/// The state directory does not exist. A single root's is the root (`init` makes it); a separate
/// one is made by `dot-launch` on first use, inside an existing parent, or by `init --state`.
fn absent_state(root: &Root) -> VerifyError {
    if root.is_single() {
        return absent(root);
    }
    let dir = root.state();
    VerifyError::RootMissing {
        path: dir.to_path_buf(),
        root: root.path().to_path_buf(),
        what: "the state directory cannot be made: its parent does not exist".to_owned(),
        next: Next::cmd("dot-register").arg("init").root(root),
    }
}

fn missing(root: &Root, path: &Path, what: &str) -> VerifyError {
    let registry_dir = REGISTRY_DIRS.iter().any(|d| path == root.path().join(d));
    VerifyError::RootMissing {
        path: path.to_path_buf(),
        root: root.path().to_path_buf(),
        what: what.to_owned(),
        // A registry directory missing from a system layer: the layer is completed as one.
        next: match registry_dir && is_layer_dir(root.path()) {
            true => init_layer_cmd(root.path()),
            false => Next::cmd("dot-register").arg("init").root(root),
        },
    }
}

/// The root does not exist. `init` makes it only inside an existing directory, so when the parent
/// is missing too, the command makes that first. A system layer's directory (the admin or vendor
/// layer this build reads) is made as a layer (`init --layer`), never as a private root.
fn absent(root: &Root) -> VerifyError {
    let dir = root.path();
    let layer = is_layer_dir(dir) && root.is_single();
    let init = match layer {
        true => init_layer_cmd(dir),
        false => cli::next::init_root(dir),
    };
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    let (what, next) = match parent {
        Some(p) if !p.is_dir() => (
            format!("neither it nor its parent {} exists", p.display()),
            Next::cmd("mkdir").arg("-p").arg(p).then(init),
        ),
        _ => ("it does not exist".to_owned(), init),
    };
    let what = match layer {
        true => format!("{what} (it is a system layer: `init --layer` makes it)"),
        false => what,
    };
    VerifyError::RootMissing {
        path: dir.to_path_buf(),
        root: dir.to_path_buf(),
        what,
        next,
    }
}

/// Whether `dir` is a system layer: one of the layer directories this build reads, or an existing
/// directory every user may read (what `init --layer` makes; a private root is 0700).
fn is_layer_dir(dir: &Path) -> bool {
    let builtin = proto::layers::SystemLayers::new(None);
    if dir == builtin.admin || dir == builtin.vendor {
        return true;
    }
    std::fs::metadata(dir).is_ok_and(|m| m.is_dir() && m.mode() & 0o005 == 0o005)
}

/// `dot-register init --layer --root DIR`.
fn init_layer_cmd(dir: &Path) -> Next {
    Next::cmd("dot-register")
        .args(["init", "--layer", "--root"])
        .arg(dir)
}

/// `dot-register init --layer --root DIR`, after `mkdir -p` of its parent when that is missing:
/// what makes a missing system layer.
pub fn init_layer(dir: &Path) -> Next {
    match dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(p) if !p.is_dir() => Next::cmd("mkdir")
            .arg("-p")
            .arg(p)
            .then(init_layer_cmd(dir)),
        _ => init_layer_cmd(dir),
    }
}

/// The stems of the `*.json` files in a layout directory (`plugins.d`, `trust/publishers`),
/// sorted. Temp files of an interrupted write start with '.' and never end in ".json"; names
/// that are not UTF-8 are skipped.
pub fn json_stems(dir: &Path) -> Result<Vec<String>, VerifyError> {
    stems(dir, ".json")
}

/// The stems of the files of `dir` whose names end in `suffix`, sorted; names that are not UTF-8
/// are skipped.
pub fn stems(dir: &Path, suffix: &str) -> Result<Vec<String>, VerifyError> {
    let mut stems = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| VerifyError::io(dir, e))? {
        let e = e.map_err(|e| VerifyError::io(dir, e))?;
        let file = e.file_name();
        if let Some(stem) = file.to_str().and_then(|f| f.strip_suffix(suffix)) {
            stems.push(stem.to_owned());
        }
    }
    stems.sort();
    Ok(stems)
}
