//! `dot-register init`: create or check a platform root.
//!
//! 1. inspect what exists: the root and every layout directory must be real directories of ours,
//!    not group- or world-writable; an existing DEV marker must be a private regular file
//! 2. `--dev` on an existing root (it has `plugins.d`) without the DEV marker: refuse
//! 3. only then create what is missing: directories 0700, the DEV marker 0600 (`--layer`: the
//!    registry directories only, 0755)

use crate::error::RegisterError;
use crate::report::InitReport;
use proto::layout::{Root, DEV_MARKER, ROOT_DIRS, TXN_DIR};
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;
use verify::VerifyError;

/// Creates the root's missing parts, or checks an existing root. With `layer`, a system layer
/// (docs/registry.md "System layers"): the registry directories only (no `txn/`), mode 0755 so that
/// every user can read what it publishes, never a development root.
pub fn init(root: &Root, dev: bool, layer: bool) -> Result<InitReport, RegisterError> {
    if layer && dev {
        return Err(RegisterError::Usage(
            "--layer and --dev exclude each other: a system layer is never a development root"
                .into(),
        ));
    }
    let dir = root.path();
    let mut missing = Vec::new();
    if !inspect_dir(dir, true)? {
        missing.push(dir.to_path_buf());
    } else if layer != crate::is_layer(root) {
        return Err(VerifyError::RootUnsafe {
            path: dir.to_path_buf(),
            reason: match layer {
                true => "it is a private root (not readable by every user), never made a layer",
                false => "it is a system layer (readable by every user); init it with --layer",
            }
            .to_owned(),
        }
        .into());
    }
    let mode = if layer { 0o755 } else { 0o700 };
    for d in ROOT_DIRS.iter().filter(|d| !layer || **d != TXN_DIR) {
        let p = dir.join(d);
        if !inspect_dir(&p, false)? {
            missing.push(p);
        }
    }
    let marker = root.dev_marker();
    let has_marker = match fs::symlink_metadata(&marker) {
        Ok(m) => {
            if !m.file_type().is_file() {
                return Err(VerifyError::RootUnsafe {
                    path: marker,
                    reason: format!("the DEV marker is a {}", sys::fs::file_kind(&m)),
                }
                .into());
            }
            verify::root::check_private(&marker, &m)?;
            true
        }
        Err(e) if e.kind() == ErrorKind::NotFound => false,
        Err(e) => return Err(VerifyError::io(&marker, e).into()),
    };
    let existing = !missing.iter().any(|p| p == &root.plugins());
    if dev && existing && !has_marker {
        return Err(RegisterError::RootNotDev {
            path: dir.to_path_buf(),
        });
    }

    let mut created = Vec::new();
    for p in &missing {
        make_dir(p, mode)?;
        created.push(p.display().to_string());
    }
    if dev && !has_marker {
        sys::fs::atomic_write(dir, DEV_MARKER, b"", 0o600)
            .map_err(|e| VerifyError::io(&marker, e))?;
        created.push(marker.display().to_string());
    }
    // What was made must pass the same check every other tool makes.
    let info = crate::check_registry(root)?;
    Ok(InitReport {
        root: dir.display().to_string(),
        dev: info.dev,
        created,
    })
}

/// `true` if `p` is an acceptable existing directory, `false` if it does not exist. The root itself
/// may be reached through a symbolic link (`follow`), as `verify::root::check_root` allows; layout
/// directories may not.
fn inspect_dir(p: &Path, follow: bool) -> Result<bool, RegisterError> {
    let meta = if follow {
        fs::metadata(p)
    } else {
        fs::symlink_metadata(p)
    };
    match meta {
        Ok(m) => {
            if !m.file_type().is_dir() {
                return Err(VerifyError::RootUnsafe {
                    path: p.to_path_buf(),
                    reason: format!("it is a {}, not a directory", sys::fs::file_kind(&m)),
                }
                .into());
            }
            verify::root::check_private(p, &m)?;
            Ok(true)
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(VerifyError::io(p, e).into()),
    }
}

fn make_dir(p: &Path, mode: u32) -> Result<(), RegisterError> {
    let io = |e| VerifyError::io(p, e);
    fs::DirBuilder::new().mode(mode).create(p).map_err(io)?;
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).map_err(io)?;
    let parent = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    sys::fs::fsync_dir(parent).map_err(|e| VerifyError::io(parent, e))?;
    Ok(())
}
