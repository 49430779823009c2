//! Is this directory a platform root we may trust? Owner, modes and layout.

use crate::error::VerifyError;
use proto::layout::{Root, ROOT_DIRS};
use proto::Next;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
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

/// Checks the root directory and every layout directory: each exists, is a real directory (the
/// layout directories are not symbolic links), is owned by our effective uid and is not group- or
/// world-writable. A `DEV` marker, if present, must be a regular file of ours.
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
    check_private(dir, &meta)?;
    for d in ROOT_DIRS {
        let p = dir.join(d);
        let meta = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(missing(root, &p, &format!("{d}/ is missing")))
            }
            Err(e) => return Err(VerifyError::io(&p, e)),
        };
        if !meta.file_type().is_dir() {
            return Err(VerifyError::RootUnsafe {
                path: p,
                reason: format!("{d} is a {}, not a directory", sys::fs::file_kind(&meta)),
            });
        }
        check_private(&p, &meta)?;
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
            check_private(&marker, &m)?;
            true
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(VerifyError::io(&marker, e)),
    };
    Ok(RootInfo { dev })
}

/// Owned by our effective uid and not group- or world-writable.
pub fn check_private(path: &Path, meta: &Metadata) -> Result<(), VerifyError> {
    let me = euid();
    if meta.uid() != me {
        return Err(VerifyError::RootUnsafe {
            path: path.to_path_buf(),
            reason: format!("owned by uid {}, not by us (uid {me})", meta.uid()),
        });
    }
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

fn missing(root: &Root, path: &Path, what: &str) -> VerifyError {
    VerifyError::RootMissing {
        path: path.to_path_buf(),
        root: root.path().to_path_buf(),
        what: what.to_owned(),
        next: proto::next::init_root(root.path()),
    }
}

/// The root does not exist. `init` makes it only inside an existing directory, so when the parent
/// is missing too, the command makes that first.
fn absent(root: &Root) -> VerifyError {
    let dir = root.path();
    let init = proto::next::init_root(dir);
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    let (what, next) = match parent {
        Some(p) if !p.is_dir() => (
            format!("neither it nor its parent {} exists", p.display()),
            Next::cmd("mkdir").arg("-p").arg(p).then(init),
        ),
        _ => ("it does not exist".to_owned(), init),
    };
    VerifyError::RootMissing {
        path: dir.to_path_buf(),
        root: dir.to_path_buf(),
        what,
        next,
    }
}

/// The stems of the `*.json` files in a layout directory (`plugins.d`, `trust/publishers`),
/// sorted. Temp files of an interrupted write start with '.' and never end in ".json"; names
/// that are not UTF-8 are skipped.
pub fn json_stems(dir: &Path) -> Result<Vec<String>, VerifyError> {
    let mut stems = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| VerifyError::io(dir, e))? {
        let e = e.map_err(|e| VerifyError::io(dir, e))?;
        let file = e.file_name();
        if let Some(stem) = file.to_str().and_then(|f| f.strip_suffix(".json")) {
            stems.push(stem.to_owned());
        }
    }
    stems.sort();
    Ok(stems)
}
