//! `dot-register init`: create or check a platform root.
//!
//! 1. inspect what exists: the root and every layout directory must be real directories of ours,
//!    not group- or world-writable; an existing DEV marker must be a private regular file
//! 2. `--dev` on an existing root (it has `plugins.d`) without the DEV marker: refuse if it has
//!    registered anything (an entry in `plugins.d`, a publisher in `trust/publishers`); an
//!    empty root becomes a development root
//! 3. only then create what is missing: directories 0700, the DEV marker 0600
//!
//! With `--state DIR` the state part (`txn/`) is made in `DIR` (its parent must exist) instead of
//! in the root, under the same rules. With `--layer`, a system layer (docs/registry.md "System
//! layers"): the registry directories only, 0755, no state part, never a development root.

use crate::error::RegisterError;
use crate::report::InitReport;
use cli::Next;
use proto::layout::{Root, DEV_MARKER, REGISTRY_DIRS, STATE_DIRS};
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;
use verify::VerifyError;

/// Creates the root's missing parts, or checks an existing root. With `layer`, a system layer:
/// the registry directories only (no state part), mode 0755 so that every user can read what it
/// publishes, never a development root.
pub fn init(root: &Root, dev: bool, layer: bool) -> Result<InitReport, RegisterError> {
    if layer && (dev || !root.is_single()) {
        return Err(RegisterError::Usage(
            "--layer goes with neither --dev nor --state: a system layer is never a development root and holds no state"
                .into(),
        ));
    }
    let dir = root.path();
    // A registry of root's (a system registry) is read by everyone and changed only by root.
    verify::root::check_not_roots(root)?;
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
    for d in REGISTRY_DIRS {
        let p = dir.join(d);
        if !inspect_dir(&p, false)? {
            missing.push(p);
        }
    }
    let state = root.state();
    if !root.is_single() && !inspect_dir(state, true)? {
        missing.push(state.to_path_buf());
    }
    for d in STATE_DIRS.iter().filter(|_| !layer) {
        let p = state.join(d);
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
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => false,
        Err(e) => return Err(VerifyError::io(&marker, e).into()),
    };
    let existing = !missing.iter().any(|p| p == &root.plugins());
    if dev && existing && !has_marker {
        let holds = registered(root)?;
        if !holds.is_empty() {
            return Err(RegisterError::RootNotDev {
                path: dir.to_path_buf(),
                holds,
                next: dev_root_next(None),
            });
        }
    }

    // Everything is checked before anything is made: each directory to make goes inside one that
    // exists or is made before it.
    let again = InitFlags { dev, layer };
    for (i, p) in missing.iter().enumerate() {
        check_makeable(p, &missing[..i], root, again)?;
    }

    let mut created = Vec::new();
    let mode = if layer { 0o755 } else { 0o700 };
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
    if !layer {
        verify::root::check_state(root)?;
    }
    Ok(InitReport {
        root: dir.display().to_string(),
        state: root.separate_state().map(|s| s.display().to_string()),
        dev: info.dev,
        created,
    })
}

/// What a root has registered: the files of `plugins.d` (entries, signatures, grants) and of
/// `trust/publishers`, sorted. An existing root becomes a development root only while this is
/// empty: a root that holds signed entries or publishers is a production root, and local entries
/// never join it.
pub fn registered(root: &Root) -> Result<Vec<String>, RegisterError> {
    let mut holds = Vec::new();
    for dir in [root.plugins(), root.publishers()] {
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(e) => return Err(VerifyError::io(&dir, e).into()),
        };
        for e in entries {
            let e = e.map_err(|e| VerifyError::io(&dir, e))?;
            holds.push(dir.join(e.file_name()).display().to_string());
        }
    }
    holds.sort();
    Ok(holds)
}

/// The flags of `init` that say which kind of root it makes, kept by every command it offers.
#[derive(Clone, Copy, Debug)]
struct InitFlags {
    dev: bool,
    layer: bool,
}

impl InitFlags {
    /// `cmd` with `--dev` and `--layer` as they were given.
    fn on(self, cmd: Next) -> Next {
        cmd.flag_if(self.dev, "--dev")
            .flag_if(self.layer, "--layer")
    }
}

/// `p` can be made: it names something, and its parent is an existing directory or one of
/// `before` (made first). The command offered when it cannot is `init` again with the same
/// `flags`: it makes the same kind of root.
fn check_makeable(
    p: &Path,
    before: &[std::path::PathBuf],
    root: &Root,
    flags: InitFlags,
) -> Result<(), RegisterError> {
    let which = if p == root.path() {
        "--root"
    } else if root.separate_state() == Some(p) {
        "--state"
    } else {
        return Ok(());
    };
    if p.as_os_str().is_empty() {
        return Err(RegisterError::Usage(format!(
            "{which} is empty: name the directory to make"
        )));
    }
    let parent = match p.parent() {
        Some(d) if d.as_os_str().is_empty() => Path::new("."),
        Some(d) => d,
        None => return Ok(()),
    };
    if before.iter().any(|b| b == parent) {
        return Ok(());
    }
    match fs::metadata(parent) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(m) => Err(VerifyError::RootMissing {
            path: p.to_path_buf(),
            root: root.path().to_path_buf(),
            what: format!(
                "{which} cannot be made: its parent {} is a {}, not a directory",
                parent.display(),
                sys::fs::file_kind(&m)
            ),
            next: flags.on(Next::cmd("dot-register")
                .args(["init", "--root"])
                .raw("DIR")),
        }
        .into()),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(VerifyError::RootMissing {
            path: p.to_path_buf(),
            root: root.path().to_path_buf(),
            what: format!(
                "{which} cannot be made: its parent {} does not exist",
                parent.display()
            ),
            next: Next::cmd("mkdir")
                .arg("-p")
                .arg(parent)
                .then(flags.on(Next::cmd("dot-register").arg("init").root(root))),
        }
        .into()),
        Err(e) => Err(VerifyError::io(parent, e).into()),
    }
}

/// `dot-register init --root DIR --dev`: for `dir`, an existing root that holds nothing, or
/// (`None`) a new directory of the user's choosing (the placeholder `DIR`).
pub fn dev_root_next(dir: Option<&Path>) -> Next {
    let init = Next::cmd("dot-register").args(["init", "--root"]);
    match dir {
        Some(d) => init.arg(d),
        None => init.raw("DIR"),
    }
    .arg("--dev")
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
        // A parent that is a file: nothing is there; `check_makeable` says why it cannot be made.
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => Ok(false),
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
