//! Is this directory a platform root we may trust? Owner, modes and layout.

use crate::error::VerifyError;
use proto::layout::{Root, ROOT_DIRS};
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
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(missing(root, dir, "it does not exist"))
        }
        Err(e) => return Err(VerifyError::io(dir, e)),
    };
    if !meta.is_dir() {
        return Err(missing(root, dir, "it is not a directory"));
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
