//! The target directory: an existing directory that is neither inside the platform root nor holds
//! it. Both are decided by device and inode along each directory's chain of parents (`..`, opened
//! relative to the directory itself), never by comparing path strings, so symbolic links, `..` in
//! the argument and bind mounts of the root's own directories are all seen through.

use crate::error::LaunchError;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fstat, Mode};
use proto::layout::{Root, REGISTRY_DIRS, STATE_DIRS};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

/// A directory's identity.
type Ident = (u64, u64);

/// The deepest chain of parents followed (a longer one is refused rather than walked forever).
const MAX_DEPTH: usize = 4096;

fn open_path(dir: Option<&OwnedFd>, path: &Path) -> nix::Result<OwnedFd> {
    let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    match dir {
        Some(d) => openat(d, path, flags, Mode::empty()),
        None => nix::fcntl::open(path, flags, Mode::empty()),
    }
}

fn ident(fd: impl AsFd) -> nix::Result<Ident> {
    fstat(fd).map(|st| (st.st_dev, st.st_ino))
}

/// The identities of `dir` and of every directory above it, up to the filesystem root.
fn chain(dir: &Path) -> nix::Result<Vec<Ident>> {
    let mut fd = open_path(None, dir)?;
    let mut seen = vec![ident(&fd)?];
    while seen.len() < MAX_DEPTH {
        let up = open_path(Some(&fd), Path::new(".."))?;
        let id = ident(&up)?;
        if seen.last() == Some(&id) {
            return Ok(seen);
        }
        seen.push(id);
        fd = up;
    }
    Err(nix::errno::Errno::ELOOP)
}

/// The identities of the root (registry and state directories) and of every directory of its
/// layout that exists (`stat`, which follows a symbolic link as the open of [`chain`] does).
fn root_dirs(root: &Root) -> Vec<Ident> {
    let (reg, state) = (root.path(), root.state());
    [reg.to_path_buf(), state.to_path_buf()]
        .into_iter()
        .chain(REGISTRY_DIRS.iter().map(|d| reg.join(d)))
        .chain(STATE_DIRS.iter().map(|d| state.join(d)))
        .filter_map(|p| nix::sys::stat::stat(&p).ok())
        .map(|st| (st.st_dev, st.st_ino))
        .collect()
}

/// Checks `target` and returns it absolute: it must exist, be a directory, and lie neither inside
/// `root` (any directory of its layout, reached however) nor above it.
pub fn check(target: &Path, root: &Root) -> Result<PathBuf, LaunchError> {
    let invalid = |path: &Path, why: String| LaunchError::Target {
        path: path.to_path_buf(),
        why,
    };
    let abs = std::fs::canonicalize(target).map_err(|e| invalid(target, e.to_string()))?;
    let meta = std::fs::metadata(&abs).map_err(|e| invalid(&abs, e.to_string()))?;
    if !meta.is_dir() {
        return Err(invalid(&abs, "is not a directory".into()));
    }
    // The PREPARED record names the target as text: a path that is not UTF-8 could not be
    // recovered after an interruption.
    if abs.to_str().is_none() {
        return Err(invalid(
            &abs,
            "is not valid UTF-8, and the journal must name the target exactly".into(),
        ));
    }
    let parents = chain(&abs).map_err(|e| invalid(&abs, format!("walking its parents: {e}")))?;
    let inside = root_dirs(root);
    if parents.iter().any(|id| inside.contains(id)) {
        return Err(invalid(
            &abs,
            format!(
                "is inside the platform root {}: a plugin's outputs could replace the registry, the trust store or the audit log",
                root.path().display()
            ),
        ));
    }
    // The root is checked by the verification that ran before, so its chain can be walked.
    for dir in std::iter::once(root.path()).chain(root.separate_state()) {
        if let Ok(above) = chain(dir) {
            if above.contains(&parents[0]) {
                return Err(invalid(
                    &abs,
                    format!(
                        "holds the platform root {}: outputs are committed next to it",
                        dir.display()
                    ),
                ));
            }
        }
    }
    Ok(abs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_ends_at_the_filesystem_root() {
        let c = chain(Path::new("/usr/bin")).expect("chain");
        assert_eq!(c.len(), 3);
        assert_eq!(c.last(), chain(Path::new("/")).expect("/").first());
    }
}
