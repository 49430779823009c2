//! The target directory: an existing directory that is neither inside the platform root nor holds
//! it. Both are decided by device and inode along each directory's chain of parents (`..`, opened
//! relative to the directory itself), never by comparing path strings, so symbolic links, `..` in
//! the argument and bind mounts of the root's own directories are all seen through.

use crate::error::LaunchError;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fstat, Mode};
use proto::journal::TargetId;
use proto::layout::{Root, REGISTRY_DIRS, STATE_DIRS};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

/// A directory's identity.
type Ident = (u64, u64);

/// The deepest chain of parents followed (a longer one is refused rather than walked forever).
const MAX_DEPTH: usize = 4096;

fn open_path(dir: Option<std::os::fd::BorrowedFd<'_>>, path: &Path) -> nix::Result<OwnedFd> {
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
    chain_of(&open_path(None, dir)?)
}

/// [`chain`] from an open directory: `..` opened relative to each one.
fn chain_of(dir: &impl AsFd) -> nix::Result<Vec<Ident>> {
    let mut fd = open_path(Some(dir.as_fd()), Path::new("."))?;
    let mut seen = vec![ident(&fd)?];
    while seen.len() < MAX_DEPTH {
        let up = open_path(Some(fd.as_fd()), Path::new(".."))?;
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

/// The target directory, checked and held open: every later step (the old files' digests, the
/// temp files, the renames, the fsyncs, the per-target lock) is relative to `dir`, so a parent
/// swapped for a symbolic link after the check changes nothing. `path` is what the journal records
/// (the directory as `dir` was opened: absolute, canonical, no symbolic link at any level), and
/// `id` its identity (device and inode), which BEGIN and PREPARED record with it, so a tool acting
/// on the run later can tell whether `path` still names this directory.
#[derive(Debug)]
pub struct Target {
    pub path: PathBuf,
    pub dir: std::fs::File,
    pub id: TargetId,
}

impl Target {
    /// Holds the directory at the canonical absolute `path` as [`check`] does, without the
    /// platform-root rules (for a caller that already knows them kept, as `make bench` does).
    pub fn open(path: &Path) -> Result<Target, LaunchError> {
        let dir = sys::fs::open_dir_nofollow(path)
            .map_err(|e| LaunchError::io("opening the target", path, e.into()))?;
        Target::held(path.to_path_buf(), dir.into())
    }

    /// The held directory `dir` at `path`, with its identity.
    fn held(path: PathBuf, dir: std::fs::File) -> Result<Target, LaunchError> {
        let st = fstat(&dir).map_err(|e| LaunchError::io("reading the target", &path, e.into()))?;
        Ok(Target {
            path,
            dir,
            id: TargetId {
                dev: st.st_dev,
                ino: st.st_ino,
            },
        })
    }
}

/// A host I/O error (`io`, exit 5) rather than something about the target the invoker named.
fn host_error(e: nix::errno::Errno) -> bool {
    use nix::errno::Errno;
    !matches!(
        e,
        Errno::ENOENT
            | Errno::ENOTDIR
            | Errno::ELOOP
            | Errno::EACCES
            | Errno::EPERM
            | Errno::ENAMETOOLONG
            | Errno::EINVAL
    )
}

/// Checks `target` and holds it open: it must exist, be a directory, and lie neither inside
/// any of `roots` (any directory of its layout, reached however) nor above one. The path is made
/// absolute and canonical, then opened one component at a time without following a link
/// (`sys::fs::open_dir_nofollow`), and the checks of parents are made from that descriptor —
/// once, whatever the number of roots: each root is then held against the same chain, in order
/// (the first that refuses is the error).
/// An I/O error of the host on the way is `io`, not `target-invalid`.
pub fn check(target: &Path, roots: &[Root]) -> Result<Target, LaunchError> {
    let invalid = |path: &Path, why: String| LaunchError::Target {
        path: path.to_path_buf(),
        why,
    };
    let failed = |path: &Path, step: &'static str, e: std::io::Error| match e.raw_os_error() {
        Some(n) if host_error(nix::errno::Errno::from_raw(n)) => {
            LaunchError::io(step, path.to_path_buf(), e)
        }
        _ => invalid(path, e.to_string()),
    };
    // Not UTF-8 is refused before whether it exists is asked: making it would not help.
    let named = std::path::absolute(target).unwrap_or_else(|_| target.to_path_buf());
    if named.to_str().is_none() {
        return Err(invalid(
            &named,
            "is not valid UTF-8, and the journal must name the target exactly".into(),
        ));
    }
    let abs =
        std::fs::canonicalize(target).map_err(|e| failed(target, "resolving the target", e))?;
    // The PREPARED record names the target as text: a path that is not UTF-8 could not be
    // recovered after an interruption.
    let Some(text) = abs.to_str() else {
        return Err(invalid(
            &abs,
            "is not valid UTF-8, and the journal must name the target exactly".into(),
        ));
    };
    // The journal's target is shown to people (dot-journal-fmt, the reports): a character that
    // rewrites what they read (a newline forging a line, an escape sequence) is refused, as it is
    // in output names.
    if let Some(c) = crate::names::unsafe_char(text) {
        return Err(invalid(
            &abs,
            format!(
                "holds the control or formatting character U+{:04X}: the journal names the \
                 target to people, who must read it as it is",
                u32::from(c)
            ),
        ));
    }
    let dir = match sys::fs::open_dir_nofollow(&abs) {
        Ok(fd) => std::fs::File::from(fd),
        Err(nix::errno::Errno::ENOTDIR) if !abs.is_dir() => {
            return Err(invalid(&abs, "is not a directory".into()))
        }
        Err(e) => return Err(failed(&abs, "opening the target", e.into())),
    };
    let parents = chain_of(&dir).map_err(|e| {
        if host_error(e) {
            LaunchError::io("walking the target's parents", &abs, e.into())
        } else {
            invalid(&abs, format!("walking its parents: {e}"))
        }
    })?;
    for root in roots {
        held_against(&parents, root).map_err(|why| invalid(&abs, why))?;
    }
    Target::held(abs, dir)
}

/// Why the target whose chain of parents is `parents` (itself first) may not be used with `root`:
/// it is inside one of its directories, or above one.
fn held_against(parents: &[Ident], root: &Root) -> Result<(), String> {
    let inside = root_dirs(root);
    if parents.iter().any(|id| inside.contains(id)) {
        return Err(format!(
            "is inside the platform root {}: a plugin's outputs could replace the registry, the trust store or the audit log",
            root.path().display()
        ));
    }
    // The root is checked by the verification that ran before, so its chain can be walked.
    for dir in std::iter::once(root.path()).chain(root.separate_state()) {
        if let Ok(above) = chain(dir) {
            if parents.first().is_some_and(|t| above.contains(t)) {
                return Err(format!(
                    "holds the platform root {}: outputs are committed next to it",
                    dir.display()
                ));
            }
        }
    }
    Ok(())
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
