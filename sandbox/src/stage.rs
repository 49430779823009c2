//! The plugin's working directory: a private tmpfs that is mounted nowhere, bounded in bytes
//! (`size=`) and inodes (`nr_inodes=`), `nosuid,nodev,noexec`, mode 0700, owned by the plugin's
//! identity. It holds `in/` (copies of the inputs `dot-launch` placed in the on-disk stage, the
//! runner's working directory when it starts; for a run without file inputs that is the run
//! directory, which has no `in/`) and an empty `out/`. The runner hands a descriptor of
//! its root to `dot-launch` with the report, so the launcher reads the outputs through it after the
//! plugin is gone; when the last descriptor closes the filesystem and everything in it vanishes —
//! there is nothing on disk for the plugin to fill or for anyone to clean up.

use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;
use proto::runner::StageBound;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// One input file, opened in the on-disk stage before the runner changes identity.
#[derive(Debug)]
pub struct Input {
    pub name: CString,
    pub file: File,
}

/// The most inputs the runner copies (the launcher places one per declared file input).
pub const MAX_INPUTS: usize = 256;

/// Opens every entry of `in/` in the directory `base` (the working directory when `None`): regular
/// files only, no links followed.
pub fn open_inputs(base: Option<std::os::fd::BorrowedFd<'_>>) -> io::Result<Vec<Input>> {
    let at = base.unwrap_or(nix::fcntl::AT_FDCWD);
    let dir = match sys::fs::open_dir_at(at, "in") {
        Ok(d) => d,
        Err(nix::errno::Errno::ENOENT) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut inputs = Vec::new();
    let listing = nix::dir::Dir::from_fd(dir)?;
    let dir_fd = listing.as_fd().try_clone_to_owned()?;
    for entry in listing {
        let entry = entry?;
        let bytes = entry.file_name().to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        if inputs.len() >= MAX_INPUTS {
            return Err(io::Error::other(format!("more than {MAX_INPUTS} inputs")));
        }
        let name = entry.file_name().to_owned();
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(bytes));
        let (file, _) = sys::fs::open_regular_at(dir_fd.as_fd(), path)
            .map_err(|e| io::Error::other(format!("in/{}: {e}", name.to_string_lossy())))?;
        inputs.push(Input { name, file });
    }
    Ok(inputs)
}

/// Creates the tmpfs: `bound` bytes and inodes, root mode 0700 owned by `owner` (uid, gid) when
/// given (else by the caller's identity).
pub fn create(bound: StageBound, owner: Option<(u32, u32)>) -> io::Result<OwnedFd> {
    let text = |v: u64| CString::new(v.to_string()).map_err(io::Error::other);
    let (size, inodes) = (text(bound.bytes)?, text(bound.inodes)?);
    let mut options = vec![
        (c"size", size.as_c_str()),
        (c"nr_inodes", inodes.as_c_str()),
        (c"mode", c"0700"),
    ];
    let ids;
    if let Some((uid, gid)) = owner {
        ids = (text(u64::from(uid))?, text(u64::from(gid))?);
        options.push((c"uid", ids.0.as_c_str()));
        options.push((c"gid", ids.1.as_c_str()));
    }
    use sys::confine::{MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID};
    sys::confine::detached_tmpfs(
        &options,
        MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
    )
}

/// Fills the stage as its owner: `in/` with a copy (mode 0600) of every input, an empty `out/`.
pub fn fill(root: &OwnedFd, inputs: Vec<Input>) -> io::Result<()> {
    let private = Mode::from_bits_truncate(0o700);
    nix::sys::stat::mkdirat(root, "in", private)?;
    nix::sys::stat::mkdirat(root, "out", private)?;
    let dir = openat(
        root,
        "in",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    for mut input in inputs {
        let fd = openat(
            dir.as_fd(),
            input.name.as_c_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o600),
        )?;
        let mut copy = File::from(fd);
        io::copy(&mut input.file, &mut copy)?;
    }
    Ok(())
}
