//! Descriptor-relative inspection and removal of a run directory's contents. Every lookup is
//! relative to an open directory and never follows a symbolic link; nothing resolves a path from
//! the root again after the run directory was opened.

use nix::dir::Dir;
use nix::fcntl::{openat, AtFlags, OFlag};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode};
use nix::unistd::{unlinkat, UnlinkatFlags};
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, OwnedFd};

/// The deepest directory nesting accepted under `stage/`.
pub const MAX_DEPTH: usize = 32;
/// The most entries accepted under `stage/`, all levels together.
pub const MAX_ENTRIES: usize = 100_000;

/// `O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC`.
pub fn dir_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

/// Opens the directory `name` in `dir`, never through a symbolic link.
pub fn open_dir_at(dir: impl AsFd, name: &CStr) -> nix::Result<OwnedFd> {
    openat(dir, name, dir_flags(), Mode::empty())
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`.
pub fn stat_at(dir: impl AsFd, name: &CStr) -> nix::Result<FileStat> {
    fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW)
}

/// The names in `dir` (without `.` and `..`), sorted, read through a fresh descriptor so no
/// directory offset is shared. Stops after `cap` names.
pub fn list(dir: impl AsFd, cap: usize) -> nix::Result<Vec<CString>> {
    let fresh = openat(dir, c".", dir_flags(), Mode::empty())?;
    let mut d = Dir::from_fd(fresh)?;
    let mut names = Vec::new();
    for entry in d.iter() {
        let entry = entry?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        names.push(name.to_owned());
        if names.len() >= cap {
            break;
        }
    }
    names.sort();
    Ok(names)
}

/// The type of a file, from its mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Fifo,
    Socket,
    BlockDevice,
    CharDevice,
    Unknown,
}

impl Kind {
    pub fn of(st: &FileStat) -> Kind {
        use nix::libc::{S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, S_IFSOCK};
        match st.st_mode & S_IFMT {
            S_IFREG => Kind::File,
            S_IFDIR => Kind::Dir,
            S_IFLNK => Kind::Symlink,
            S_IFIFO => Kind::Fifo,
            S_IFSOCK => Kind::Socket,
            S_IFBLK => Kind::BlockDevice,
            S_IFCHR => Kind::CharDevice,
            _ => Kind::Unknown,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Kind::File => "regular file",
            Kind::Dir => "directory",
            Kind::Symlink => "symbolic link",
            Kind::Fifo => "fifo",
            Kind::Socket => "socket",
            Kind::BlockDevice => "block device",
            Kind::CharDevice => "character device",
            Kind::Unknown => "file of unknown type",
        }
    }
}

/// The setuid and setgid bits.
pub const SET_ID: u32 = 0o6000;

/// The same inode as `st`?
pub fn same(a: &FileStat, b: &FileStat) -> bool {
    (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
}

/// One entry under `stage/` that passed the checks.
#[derive(Debug)]
pub struct Node {
    pub name: CString,
    /// Path relative to the run directory, for messages.
    pub rel: String,
    pub dev: u64,
    pub ino: u64,
    /// The checked entries of a directory; `None` for a regular file.
    pub children: Option<Vec<Node>>,
}

/// Checks one entry's type, owner, links and mode: only our own regular files (one link) and
/// directories, neither setuid nor setgid.
pub fn check_entry(st: &FileStat, rel: &str, uid: u32) -> Result<Kind, String> {
    let kind = Kind::of(st);
    if !matches!(kind, Kind::File | Kind::Dir) {
        return Err(format!("{rel} is a {}", kind.word()));
    }
    if st.st_uid != uid {
        return Err(format!("{rel} is owned by uid {}, not {uid}", st.st_uid));
    }
    if kind == Kind::File && st.st_nlink > 1 {
        return Err(format!("linked: {rel} has {} hard links", st.st_nlink));
    }
    if st.st_mode & SET_ID != 0 {
        return Err(format!(
            "{rel} has the setuid or setgid bit (mode {:o})",
            st.st_mode & 0o7777
        ));
    }
    Ok(kind)
}

/// Checks every entry under the open directory `dir` (at `rel`, `depth` levels below `stage/`),
/// spending one unit of `budget` per entry.
pub fn check_tree(
    dir: &OwnedFd,
    rel: &str,
    depth: usize,
    budget: &mut usize,
    uid: u32,
) -> Result<Vec<Node>, String> {
    let names = list(dir, budget.saturating_add(1)).map_err(|e| format!("{rel}: {e}"))?;
    if names.len() > *budget {
        return Err(format!("stage/ holds more than {MAX_ENTRIES} entries"));
    }
    *budget -= names.len();
    let mut nodes = Vec::with_capacity(names.len());
    for name in names {
        let rel = join(rel, &name);
        let st = stat_at(dir, &name).map_err(|e| format!("{rel}: {e} during the check"))?;
        let kind = check_entry(&st, &rel, uid)?;
        let children = if kind == Kind::Dir {
            if depth + 1 > MAX_DEPTH {
                return Err(format!(
                    "stage/ is nested deeper than {MAX_DEPTH} levels at {rel}"
                ));
            }
            let sub = open_dir_at(dir, &name).map_err(|e| format!("{rel}: {e}"))?;
            let held = fstat(&sub).map_err(|e| format!("{rel}: {e}"))?;
            if !same(&held, &st) {
                return Err(format!("{rel} changed during the check"));
            }
            Some(check_tree(&sub, &rel, depth + 1, budget, uid)?)
        } else {
            None
        };
        nodes.push(Node {
            name,
            rel,
            dev: st.st_dev,
            ino: st.st_ino,
            children,
        });
    }
    Ok(nodes)
}

/// Removes exactly the checked `nodes` from the open directory `dir`, depth first. Stops at the
/// first entry that is not the one checked (a new name, a replaced inode) or that cannot be removed.
pub fn remove_tree(dir: &OwnedFd, rel: &str, nodes: &[Node]) -> Result<(), String> {
    let names = list(dir, nodes.len().saturating_add(1)).map_err(|e| format!("{rel}: {e}"))?;
    expect_names(rel, &names, nodes.iter().map(|n| n.name.as_c_str()))?;
    for node in nodes {
        let st = stat_at(dir, &node.name).map_err(|e| format!("{}: {e}", node.rel))?;
        if (st.st_dev, st.st_ino) != (node.dev, node.ino) {
            return Err(format!("{} was replaced during discard", node.rel));
        }
        match &node.children {
            Some(children) => {
                let sub = open_dir_at(dir, &node.name).map_err(|e| format!("{}: {e}", node.rel))?;
                let held = fstat(&sub).map_err(|e| format!("{}: {e}", node.rel))?;
                if !same(&held, &st) {
                    return Err(format!("{} was replaced during discard", node.rel));
                }
                remove_tree(&sub, &node.rel, children)?;
                unlinkat(dir, node.name.as_c_str(), UnlinkatFlags::RemoveDir)
            }
            None => unlinkat(dir, node.name.as_c_str(), UnlinkatFlags::NoRemoveDir),
        }
        .map_err(|e| format!("could not remove {}: {e}", node.rel))?;
    }
    Ok(())
}

/// `rel/name`, or `name` at the top (`rel` empty).
pub fn join(rel: &str, name: &CStr) -> String {
    if rel.is_empty() {
        name.to_string_lossy().into_owned()
    } else {
        format!("{rel}/{}", name.to_string_lossy())
    }
}

/// `found` must be exactly `expected`; both sorted.
pub fn expect_names<'a>(
    rel: &str,
    found: &[CString],
    expected: impl Iterator<Item = &'a CStr>,
) -> Result<(), String> {
    let mut expected = expected.peekable();
    let mut found = found.iter().peekable();
    loop {
        let appeared = |f: &CString| format!("{} appeared during discard", join(rel, f));
        let vanished = |e: &CStr| format!("{} vanished during discard", join(rel, e));
        match (found.peek(), expected.peek()) {
            (None, None) => return Ok(()),
            (Some(f), None) => return Err(appeared(f)),
            (None, Some(e)) => return Err(vanished(e)),
            (Some(f), Some(e)) => match f.as_c_str().cmp(e) {
                std::cmp::Ordering::Equal => {
                    found.next();
                    expected.next();
                }
                std::cmp::Ordering::Less => return Err(appeared(f)),
                std::cmp::Ordering::Greater => return Err(vanished(e)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn open(path: &std::path::Path) -> OwnedFd {
        nix::fcntl::open(path, dir_flags(), Mode::empty()).expect("open dir")
    }

    #[test]
    fn removal_stops_at_anything_that_was_not_checked() {
        let tmp = testkit::TempDir::new();
        let s = tmp.join("s");
        fs::create_dir_all(s.join("a/b")).expect("mkdir");
        fs::write(s.join("a/b/f"), b"x").expect("write");
        fs::write(s.join("top"), b"t").expect("write");
        let uid = nix::unistd::geteuid().as_raw();
        let fd = open(&s);
        let check = |fd: &OwnedFd| {
            let mut budget = MAX_ENTRIES;
            let nodes = check_tree(fd, "stage", 0, &mut budget, uid).expect("checks");
            assert_eq!(budget, MAX_ENTRIES - 4);
            nodes
        };

        // A name that appeared after the check: nothing in that directory is removed.
        let nodes = check(&fd);
        fs::write(s.join("a/b/new"), b"y").expect("write");
        assert_eq!(
            remove_tree(&fd, "stage", &nodes),
            Err("stage/a/b/new appeared during discard".into())
        );
        assert!(s.join("a/b/f").exists());
        fs::remove_file(s.join("a/b/new")).expect("rm");

        // A file replaced (another inode under the same name) after the check.
        let nodes = check(&fd);
        fs::write(s.join("a/b/f2"), b"z").expect("write");
        fs::rename(s.join("a/b/f2"), s.join("a/b/f")).expect("rename");
        assert_eq!(
            remove_tree(&fd, "stage", &nodes),
            Err("stage/a/b/f was replaced during discard".into())
        );

        // Unchanged: everything under it goes, the directory itself stays.
        let nodes = check(&fd);
        assert_eq!(remove_tree(&fd, "stage", &nodes), Ok(()));
        assert_eq!(fs::read_dir(&s).expect("ls").count(), 0);
    }

    #[test]
    fn the_budget_bounds_the_walk() {
        let tmp = testkit::TempDir::new();
        for i in 0..5 {
            fs::write(tmp.join(format!("f{i}")), b"").expect("write");
        }
        let mut budget = 4;
        let uid = nix::unistd::geteuid().as_raw();
        let err = check_tree(&open(tmp.path()), "stage", 0, &mut budget, uid).expect_err("over");
        assert!(err.contains("more than 100000 entries"), "{err}");
    }
}
