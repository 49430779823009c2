//! Descriptor-relative inspection and removal of a tree of any depth and width with a bounded
//! number of descriptors. Every lookup is relative to an open directory and never follows a
//! symbolic link; nothing resolves a path from the root again after the top was opened.
//!
//! The walk holds one directory open at a time (plus one short-lived descriptor to list it): it
//! descends with `openat(dir, name, O_NOFOLLOW|O_DIRECTORY)` and climbs back with
//! `openat(dir, "..")`, checking that every parent it reaches is the ancestor it left (same device
//! and inode, from a stack of ancestors). Memory grows with the depth and with the subdirectories
//! still to visit, never with the files: those are checked (and removed) while the directory is
//! listed.

use nix::dir::Dir;
use nix::errno::Errno;
use nix::fcntl::AtFlags;
use nix::sys::stat::{fstat, fstatat, FileStat};
use nix::unistd::{unlinkat, UnlinkatFlags};
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, OwnedFd};
use sys::fs::open_dir_at;

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`.
pub fn stat_at(dir: impl AsFd, name: &CStr) -> nix::Result<FileStat> {
    fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW)
}

/// The names in `dir` (without `.` and `..`), sorted, read through a fresh descriptor so no
/// directory offset is shared. Stops after `cap` names.
pub fn list(dir: impl AsFd, cap: usize) -> nix::Result<Vec<CString>> {
    let mut names = Vec::new();
    each_name(dir, |name| {
        names.push(name.to_owned());
        Ok(names.len() < cap)
    })?;
    names.sort();
    Ok(names)
}

/// Calls `f` with each name in `dir` (without `.` and `..`), read through a fresh descriptor,
/// until it returns `Ok(false)` or an error.
fn each_name<E: From<Errno>>(
    dir: impl AsFd,
    mut f: impl FnMut(&CStr) -> Result<bool, E>,
) -> Result<(), E> {
    let fresh = open_dir_at(dir, c".")?;
    let mut d = Dir::from_fd(fresh)?;
    for entry in d.iter() {
        let entry = entry?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        if !f(name)? {
            break;
        }
    }
    Ok(())
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

/// The same inode?
pub fn same(a: &FileStat, b: &FileStat) -> bool {
    (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
}

/// What every entry that may be removed must be: owned by `uid`, on the device `dev` (the run
/// directory's) and, for a directory a walk enters, on the mount `mnt` (the run directory's,
/// [`mount_id`]): a mount point is never entered, a bind mount of a directory of the same
/// filesystem (same device, another mount) included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    pub uid: u32,
    pub dev: u64,
    /// The mount every directory walked must be on; `None` where no directory is entered (the
    /// temp files in a target).
    pub mnt: Option<u64>,
}

/// The id of the mount the open file `fd` is on (`sys::fs::mount_id`).
pub fn mount_id(fd: impl AsFd) -> std::io::Result<u64> {
    sys::fs::mount_id(fd.as_fd())
}

/// Checks that the open directory `fd` (`rel` in messages) is on the mount `rules.mnt`.
pub fn check_mount(fd: impl AsFd, rel: &str, rules: &Rules) -> Result<(), Stop> {
    let Some(mnt) = rules.mnt else {
        return Ok(());
    };
    let now = mount_id(fd).map_err(|e| Stop::Changed(format!("{rel}: its mount id: {e}")))?;
    if now != mnt {
        return Err(Stop::Rule(format!(
            "{rel} is a mount point (mount {now}, not the run's {mnt}): a removal never enters it"
        )));
    }
    Ok(())
}

/// Checks a file that is read or taken over by name (a journal, a temp file in a target): a
/// directory or a regular file with one link, ours, on `rules.dev`, neither setuid nor setgid.
pub fn check_entry(st: &FileStat, rel: &str, rules: &Rules) -> Result<Kind, String> {
    let kind = removable(st, rel, rules)?;
    if kind == Kind::Symlink {
        return Err(format!("{rel} is a {}", kind.word()));
    }
    if kind == Kind::File && st.st_nlink > 1 {
        return Err(format!("linked: {rel} has {} hard links", st.st_nlink));
    }
    Ok(kind)
}

/// Checks an entry under a stage before it is removed: our own directory, regular file or
/// symbolic link (removed as a name: never followed, and a hard-linked file keeps its other
/// names), on the run's filesystem, neither setuid nor setgid. Never removed: a fifo, socket or
/// device, a setuid or setgid file, anything owned by someone else, anything on another
/// filesystem.
pub fn removable(st: &FileStat, rel: &str, rules: &Rules) -> Result<Kind, String> {
    let kind = Kind::of(st);
    if !matches!(kind, Kind::File | Kind::Dir | Kind::Symlink) {
        return Err(format!("{rel} is a {}", kind.word()));
    }
    if st.st_dev != rules.dev {
        return Err(format!("{rel} is on another filesystem (a mount point)"));
    }
    if st.st_uid != rules.uid {
        return Err(format!(
            "{rel} is owned by uid {}, not {}",
            st.st_uid, rules.uid
        ));
    }
    if st.st_mode & SET_ID != 0 {
        return Err(format!(
            "{rel} has the setuid or setgid bit (mode {:o})",
            st.st_mode & 0o7777
        ));
    }
    Ok(kind)
}

/// What a walk does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Check every entry; change nothing.
    Check,
    /// Check every entry again right before removing it; remove everything under the top (the top
    /// itself stays).
    Remove,
}

/// Why a walk stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// An entry breaks the rules ([`removable`], [`check_entry`]): it is the operator's, not ours
    /// to remove.
    Rule(String),
    /// Something changed during the walk or a call failed; the same walk later may finish.
    Changed(String),
}

impl Stop {
    /// A failed call on `what`. A call the host failed or refused (an I/O error, a read-only
    /// filesystem, a permission) says nothing about the run: it keeps the state its journal
    /// says, and the same pass again gets past it once the host allows ([`Stop::Changed`]).
    /// Only EBUSY is about an entry: a mount point, which a removal never takes ([`Stop::Rule`]).
    pub fn errno(e: Errno, what: impl std::fmt::Display) -> Stop {
        match e {
            Errno::EBUSY => Stop::Rule(format!(
                "{what}: {e} (a mount point: a removal never takes one; unmount it)"
            )),
            _ => Stop::Changed(format!("{what}: {e}")),
        }
    }
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Rule(why) | Stop::Changed(why) => f.write_str(why),
        }
    }
}

/// One directory on the way down: its name in its parent, its identity, the subdirectories in it
/// still to visit.
struct Frame {
    name: CString,
    stat: FileStat,
    pending: Vec<CString>,
}

/// The path of `name` below the frames, for messages: `rel/a/b/name`, shortened in the middle
/// when deep.
fn path_of(rel: &str, frames: &[Frame], name: Option<&CStr>) -> String {
    let names: Vec<String> = frames
        .iter()
        .skip(1)
        .map(|f| f.name.to_string_lossy().into_owned())
        .chain(name.map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let shown = if names.len() > 12 {
        format!(
            "{}/…({} levels)…/{}",
            names[..4].join("/"),
            names.len() - 8,
            names[names.len() - 4..].join("/")
        )
    } else {
        names.join("/")
    };
    match (rel.is_empty(), shown.is_empty()) {
        (_, true) => rel.to_owned(),
        (true, false) => shown,
        (false, false) => format!("{rel}/{shown}"),
    }
}

/// Lists the directory `dir` of the frame path `frames`: checks every entry; in a remove pass,
/// removes each regular file at once. Returns the subdirectories to visit and the number of
/// entries listed.
fn scan(
    dir: &OwnedFd,
    rel: &str,
    frames: &[Frame],
    rules: &Rules,
    pass: Pass,
) -> Result<(Vec<CString>, u64), Stop> {
    let mut subdirs = Vec::new();
    let mut count = 0u64;
    let mut visit = |name: &CStr| -> Result<bool, Stop> {
        count += 1;
        let path = || path_of(rel, frames, Some(name));
        let st = match stat_at(dir, name) {
            Ok(st) => st,
            Err(e) => return Err(Stop::errno(e, path())),
        };
        match removable(&st, &path(), rules).map_err(Stop::Rule)? {
            Kind::Dir => subdirs.push(name.to_owned()),
            _ if pass == Pass::Remove => {
                crate::hooks::failpoint("remove-entry");
                unlinkat(dir, name, UnlinkatFlags::NoRemoveDir)
                    .map_err(|e| Stop::errno(e, format!("could not remove {}", path())))?;
            }
            _ => {}
        }
        Ok(true)
    };
    each_name(dir, |name| visit(name).map_err(WalkError::Stop))
        .map_err(|e| e.into_stop(|| path_of(rel, frames, None)))?;
    Ok((subdirs, count))
}

/// An error while listing: the walk's own, or the listing call's.
enum WalkError {
    Stop(Stop),
    Errno(Errno),
}

impl From<Errno> for WalkError {
    fn from(e: Errno) -> Self {
        WalkError::Errno(e)
    }
}

impl WalkError {
    fn into_stop(self, path: impl FnOnce() -> String) -> Stop {
        match self {
            WalkError::Stop(s) => s,
            WalkError::Errno(e) => Stop::errno(e, path()),
        }
    }
}

/// Walks everything under the open directory `top` (named `rel` in messages), depth first, with a
/// bounded number of descriptors whatever the depth. [`Pass::Check`] checks every entry with
/// [`removable`]; [`Pass::Remove`] checks each again right before removing it and removes
/// everything under `top` (files as they are listed, each directory once it is empty), leaving
/// `top` itself. Stops at the first entry that breaks a rule or changed under it. Returns the
/// number of entries seen.
pub fn walk(top: &impl AsFd, rel: &str, rules: &Rules, pass: Pass) -> Result<u64, Stop> {
    let changed = |what: String| Stop::Changed(what);
    let mut cur = open_dir_at(top, c".").map_err(|e| changed(format!("{rel}: {e}")))?;
    let stat = fstat(&cur).map_err(|e| changed(format!("{rel}: {e}")))?;
    check_mount(&cur, rel, rules)?;
    let mut frames = vec![Frame {
        name: CString::default(),
        stat,
        pending: Vec::new(),
    }];
    let (first, mut seen) = scan(&cur, rel, &frames, rules, pass)?;
    if let Some(f) = frames.last_mut() {
        f.pending = first;
    }
    loop {
        let next = frames.last_mut().and_then(|f| f.pending.pop());
        if let Some(sub) = next {
            // Down into `sub`: still the directory the listing saw, opened without following.
            let path = path_of(rel, &frames, Some(&sub));
            let st = stat_at(&cur, &sub).map_err(|e| changed(format!("{path}: {e}")))?;
            if removable(&st, &path, rules).map_err(Stop::Rule)? != Kind::Dir {
                return Err(changed(format!("{path} changed during the walk")));
            }
            let fd = open_dir_at(&cur, sub.as_c_str()).map_err(|e| Stop::errno(e, &path))?;
            let held = fstat(&fd).map_err(|e| changed(format!("{path}: {e}")))?;
            if !same(&held, &st) {
                return Err(changed(format!("{path} changed during the walk")));
            }
            // A bind mount of a directory of this filesystem shows this device: its mount id
            // tells it apart, before anything in it is listed or removed.
            check_mount(&fd, &path, rules)?;
            frames.push(Frame {
                name: sub,
                stat: held,
                pending: Vec::new(),
            });
            let (found, count) = scan(&fd, rel, &frames, rules, pass)?;
            seen += count;
            if let Some(f) = frames.last_mut() {
                f.pending = found;
            }
            cur = fd;
            continue;
        }
        // This directory is done: climb to its parent, which must be the ancestor we left.
        if frames.len() == 1 {
            return Ok(seen);
        }
        let path = path_of(rel, &frames, None);
        let Some(done) = frames.pop() else {
            return Ok(seen);
        };
        let parent = open_dir_at(&cur, c"..").map_err(|e| changed(format!("{path}/..: {e}")))?;
        let pst = fstat(&parent).map_err(|e| changed(format!("{path}/..: {e}")))?;
        if !frames.last().is_some_and(|f| same(&f.stat, &pst)) {
            return Err(changed(format!("{path} was moved during the walk")));
        }
        if pass == Pass::Remove {
            let now = stat_at(&parent, &done.name).map_err(|e| changed(format!("{path}: {e}")))?;
            if !same(&now, &done.stat) {
                return Err(changed(format!("{path} was replaced during the walk")));
            }
            crate::hooks::failpoint("remove-entry");
            unlinkat(&parent, done.name.as_c_str(), UnlinkatFlags::RemoveDir).map_err(
                |e| match e {
                    Errno::ENOTEMPTY | Errno::EEXIST => {
                        changed(format!("a new entry appeared in {path} during the walk"))
                    }
                    e => Stop::errno(e, format!("could not remove {path}")),
                },
            )?;
        }
        cur = parent;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::fcntl::OFlag;
    use nix::sys::stat::Mode;
    use std::fs;

    fn open(path: &std::path::Path) -> OwnedFd {
        sys::fs::open_dir(path).expect("open dir")
    }

    fn rules(path: &std::path::Path) -> Rules {
        let st = nix::sys::stat::stat(path).expect("stat");
        Rules {
            uid: nix::unistd::geteuid().as_raw(),
            dev: st.st_dev,
            mnt: Some(mount_id(open(path)).expect("mount id")),
        }
    }

    #[test]
    fn a_check_changes_nothing_and_a_removal_empties_the_top_without_following_links() {
        let tmp = testkit::TempDir::new();
        let s = tmp.join("s");
        let outside = tmp.join("outside");
        fs::create_dir_all(s.join("a/b")).expect("mkdir");
        fs::create_dir_all(s.join("c")).expect("mkdir");
        fs::create_dir_all(outside.join("kept")).expect("mkdir");
        fs::write(s.join("a/b/f"), b"x").expect("write");
        fs::write(s.join("top"), b"t").expect("write");
        fs::write(outside.join("data"), b"d").expect("write");
        std::os::unix::fs::symlink(&outside, s.join("a/dirlink")).expect("symlink");
        std::os::unix::fs::symlink(outside.join("data"), s.join("c/filelink")).expect("symlink");
        fs::hard_link(outside.join("data"), s.join("c/hard")).expect("link");
        let fd = open(&s);
        let r = rules(&s);
        let before = testkit::tree_snapshot(&s);
        assert_eq!(walk(&fd, "stage", &r, Pass::Check), Ok(8));
        assert_eq!(testkit::tree_snapshot(&s), before);
        assert_eq!(walk(&fd, "stage", &r, Pass::Remove), Ok(8));
        assert_eq!(fs::read_dir(&s).expect("ls").count(), 0, "top stays, empty");
        assert_eq!(fs::read(outside.join("data")).expect("read"), b"d");
        assert!(outside.join("kept").is_dir(), "a link is never followed");
    }

    #[test]
    fn a_journal_or_temp_is_checked_strictly() {
        let tmp = testkit::TempDir::new();
        let r = rules(tmp.path());
        fs::write(tmp.join("f"), b"x").expect("write");
        fs::hard_link(tmp.join("f"), tmp.join("g")).expect("link");
        std::os::unix::fs::symlink(tmp.join("f"), tmp.join("l")).expect("symlink");
        let st = |n: &str| nix::sys::stat::lstat(&tmp.join(n)).expect("lstat");
        assert_eq!(
            check_entry(&st("g"), "g", &r),
            Err("linked: g has 2 hard links".into())
        );
        assert_eq!(
            check_entry(&st("l"), "l", &r),
            Err("l is a symbolic link".into())
        );
        assert_eq!(removable(&st("g"), "g", &r), Ok(Kind::File));
        assert_eq!(removable(&st("l"), "l", &r), Ok(Kind::Symlink));
    }

    #[test]
    fn any_entry_that_breaks_a_rule_stops_the_walk_with_its_path() {
        let tmp = testkit::TempDir::new();
        let s = tmp.join("s");
        fs::create_dir_all(s.join("a/b")).expect("mkdir");
        fs::write(s.join("a/b/f"), b"x").expect("write");
        nix::unistd::mkfifo(&s.join("a/b/fifo"), Mode::from_bits_truncate(0o600)).expect("fifo");
        let fd = open(&s);
        let r = rules(&s);
        let before = testkit::tree_snapshot(&s);
        let err = walk(&fd, "stage", &r, Pass::Check).expect_err("a fifo");
        assert_eq!(err, Stop::Rule("stage/a/b/fifo is a fifo".into()));
        assert_eq!(testkit::tree_snapshot(&s), before);
        assert_eq!(
            walk(&fd, "stage", &r, Pass::Remove),
            Err(Stop::Rule("stage/a/b/fifo is a fifo".into())),
            "a removal stops at it too"
        );
        // Another device: a file seen with another st_dev is refused.
        let other = Rules {
            dev: r.dev.wrapping_add(1),
            ..r
        };
        fs::remove_file(s.join("a/b/fifo")).expect("rm");
        assert!(matches!(
            walk(&fd, "stage", &other, Pass::Check),
            Err(Stop::Rule(why)) if why.contains("another filesystem")
        ));
    }

    #[test]
    fn a_bind_mount_of_the_same_filesystem_is_never_entered_nor_emptied() {
        // The mounted directory shows the stage's device: only its mount id tells it apart.
        let tmp = testkit::TempDir::new();
        let s = tmp.join("s");
        let precious = tmp.join("precious");
        fs::create_dir_all(precious.join("sub")).expect("mkdir");
        fs::write(precious.join("data.txt"), b"keep").expect("write");
        fs::write(precious.join("sub/more.txt"), b"keep too").expect("write");
        fs::create_dir_all(s.join("out")).expect("mkdir");
        fs::write(s.join("out/f"), b"x").expect("write");
        let bind = testkit::mount::Bind::mount(&precious, &s.join("out/mnt"));
        let fd = open(&s);
        let r = rules(&s);
        assert_eq!(
            nix::sys::stat::stat(&s.join("out/mnt"))
                .expect("stat")
                .st_dev,
            r.dev,
            "a bind mount of the same filesystem: same device"
        );
        for pass in [Pass::Check, Pass::Remove] {
            match walk(&fd, "stage", &r, pass) {
                Err(Stop::Rule(why)) => assert!(
                    why.starts_with("stage/out/mnt is a mount point"),
                    "{pass:?}: {why}"
                ),
                other => panic!("{pass:?}: {other:?}"),
            }
        }
        assert_eq!(fs::read(precious.join("data.txt")).expect("kept"), b"keep");
        assert_eq!(
            fs::read(precious.join("sub/more.txt")).expect("kept"),
            b"keep too"
        );
        drop(bind);
        assert!(walk(&fd, "stage", &r, Pass::Remove).is_ok());
        assert_eq!(fs::read(precious.join("data.txt")).expect("read"), b"keep");
    }

    #[test]
    fn a_mount_point_that_cannot_be_unlinked_stops_the_removal_as_a_rule() {
        assert!(matches!(
            Stop::errno(Errno::EBUSY, "could not remove stage/out/f"),
            Stop::Rule(why) if why.contains("a mount point")
        ));
        // The host's refusals keep the run's state: another pass gets past them.
        for e in [
            Errno::EIO,
            Errno::EROFS,
            Errno::EACCES,
            Errno::EPERM,
            Errno::ENOSPC,
        ] {
            assert!(matches!(Stop::errno(e, "x"), Stop::Changed(_)), "{e}");
        }
    }

    #[test]
    fn depth_needs_no_more_descriptors() {
        // 3,000 levels through relative mkdirat: deeper than any path the kernel resolves at once.
        let tmp = testkit::TempDir::new();
        let s = tmp.join("s");
        fs::create_dir(&s).expect("mkdir");
        let mut cur = open(&s);
        for _ in 0..3000 {
            nix::sys::stat::mkdirat(&cur, c"d", Mode::from_bits_truncate(0o700)).expect("mkdirat");
            cur = open_dir_at(&cur, c"d").expect("open");
        }
        let leaf = nix::fcntl::openat(
            &cur,
            c"f",
            OFlag::O_CREAT | OFlag::O_WRONLY | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o600),
        )
        .expect("create");
        drop((leaf, cur));
        let fd = open(&s);
        let r = rules(&s);
        // Descriptors of this process open on something below the stage (a removed directory
        // reads "…/s/d (deleted)"). Not a count of all descriptors: other tests of this binary
        // open and close theirs meanwhile.
        let below = || {
            fs::read_dir("/proc/self/fd")
                .expect("fds")
                .filter_map(|e| fs::read_link(e.expect("fd").path()).ok())
                .filter(|t| t.starts_with(&s) && *t != s)
                .collect::<Vec<_>>()
        };
        assert_eq!(below(), Vec::<std::path::PathBuf>::new());
        assert_eq!(walk(&fd, "stage", &r, Pass::Check), Ok(3001));
        assert_eq!(walk(&fd, "stage", &r, Pass::Remove), Ok(3001));
        assert_eq!(
            below(),
            Vec::<std::path::PathBuf>::new(),
            "no descriptor left open"
        );
        assert_eq!(fs::read_dir(&s).expect("ls").count(), 0);
    }

    #[test]
    fn deep_paths_are_shortened_in_messages() {
        let st = nix::sys::stat::stat(std::path::Path::new("/")).expect("stat /");
        let frames: Vec<Frame> = (0..20)
            .map(|i| Frame {
                name: CString::new(format!("d{i}")).expect("name"),
                stat: st,
                pending: Vec::new(),
            })
            .collect();
        assert_eq!(path_of("stage", &frames[..3], Some(c"x")), "stage/d1/d2/x");
        assert_eq!(path_of("stage", &frames[..1], None), "stage");
        assert_eq!(
            path_of("stage", &frames, Some(c"x")),
            "stage/d1/d2/d3/d4/…(12 levels)…/d17/d18/d19/x"
        );
    }
}
