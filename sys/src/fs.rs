//! Safe open of executables, inputs, documents and directories; bounded reads; random bytes;
//! atomic, durable writes.

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use std::ffi::CStr;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why a path could not be opened as a plain regular file.
#[derive(Debug)]
pub enum OpenError {
    /// The final component is a symbolic link (`O_NOFOLLOW` refused it).
    Symlink,
    /// Not a regular file; carries the kind seen.
    NotRegular(&'static str),
    /// The set-user-ID or set-group-ID bit is set.
    SetId(u32),
    /// Any other I/O error (missing, permission, …).
    Io(io::Error),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Symlink => f.write_str("is a symbolic link"),
            OpenError::NotRegular(kind) => write!(f, "is a {kind}, not a regular file"),
            OpenError::SetId(mode) => write!(f, "has the setuid or setgid bit (mode {mode:o})"),
            OpenError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for OpenError {}

/// The flags of every read-only open of a file here: `O_RDONLY|O_CLOEXEC|O_NOCTTY`, and
/// `O_NONBLOCK` so a FIFO cannot block the open (for a regular file it changes nothing).
fn read_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK | OFlag::O_NOCTTY
}

/// `O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC`: a directory, never through a symbolic link.
fn dir_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

/// Opens `path` read-only (`O_CLOEXEC|O_NOCTTY|O_NONBLOCK`), with `O_NOFOLLOW` unless
/// `follow_links`: the file as it is, whatever its type (the caller checks that on the descriptor).
pub fn open_read(path: &Path, follow_links: bool) -> io::Result<File> {
    let flags = if follow_links {
        read_flags()
    } else {
        read_flags() | OFlag::O_NOFOLLOW
    };
    nix::fcntl::open(path, flags, Mode::empty())
        .map(File::from)
        .map_err(io::Error::from)
}

/// [`open_read`] of `name` relative to the open directory `dir` (`openat`), never through a
/// symbolic link.
pub fn open_read_at<P: ?Sized + nix::NixPath>(dir: impl AsFd, name: &P) -> nix::Result<OwnedFd> {
    nix::fcntl::openat(dir, name, read_flags() | OFlag::O_NOFOLLOW, Mode::empty())
}

/// Opens the directory at `path` (`O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC`), never through a
/// symbolic link.
pub fn open_dir(path: &Path) -> nix::Result<OwnedFd> {
    nix::fcntl::open(path, dir_flags(), Mode::empty())
}

/// [`open_dir`] of `name` relative to the open directory `dir`.
pub fn open_dir_at<P: ?Sized + nix::NixPath>(dir: impl AsFd, name: &P) -> nix::Result<OwnedFd> {
    nix::fcntl::openat(dir, name, dir_flags(), Mode::empty())
}

/// Opens the directory at the absolute `path` one component at a time from `/`, each with
/// `O_DIRECTORY|O_NOFOLLOW` relative to the one before: no symbolic link is followed at any level
/// (`ELOOP` or `ENOTDIR` when one is met), so the directory opened is the one `path` names as
/// written, whatever its parents' links point at. `.` and `..` components are refused (`EINVAL`):
/// the path must be canonical.
pub fn open_dir_nofollow(path: &Path) -> nix::Result<OwnedFd> {
    use std::path::Component;
    let mut cur = open_dir(Path::new("/"))?;
    let mut components = path.components();
    if components.next() != Some(Component::RootDir) {
        return Err(nix::errno::Errno::EINVAL);
    }
    for c in components {
        match c {
            Component::Normal(name) => cur = open_dir_at(&cur, name)?,
            _ => return Err(nix::errno::Errno::EINVAL),
        }
    }
    Ok(cur)
}

/// Creates `name` in the open directory `dir` (`openat` with `O_CREAT|O_EXCL|O_WRONLY|O_NOFOLLOW|
/// O_CLOEXEC`, mode `mode`): never an existing file, never through a symbolic link, always in
/// that directory whatever became of its path.
pub fn create_new_at<P: ?Sized + nix::NixPath>(
    dir: impl AsFd,
    name: &P,
    mode: u32,
) -> io::Result<File> {
    nix::fcntl::openat(
        dir,
        name,
        OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_WRONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(mode),
    )
    .map(File::from)
    .map_err(io::Error::from)
}

/// Creates `path`, which must not exist, for writing with `mode` (`O_CREAT|O_EXCL|O_NOFOLLOW|
/// O_CLOEXEC`): never an existing file, never through a symbolic link.
pub fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(path)
}

/// Opens `path` read-only with `O_NOFOLLOW|O_CLOEXEC` (and `O_NONBLOCK`, so a FIFO cannot block the
/// open) and checks, on the opened descriptor, that it is a regular file without setuid/setgid.
/// Returns the file and its metadata from `fstat`.
pub fn open_regular(path: &Path) -> Result<(File, Metadata), OpenError> {
    let file = open_read(path, false).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => OpenError::Symlink,
        _ => OpenError::Io(e),
    })?;
    checked_regular(file)
}

/// [`open_regular`] of `name` relative to the open directory `dir` (`openat`, same flags and
/// checks): the name is resolved in that directory, whatever happened to its path since.
pub fn open_regular_at(
    dir: std::os::fd::BorrowedFd<'_>,
    name: &Path,
) -> Result<(File, Metadata), OpenError> {
    let fd = open_read_at(dir, name).map_err(|e| match e {
        nix::errno::Errno::ELOOP => OpenError::Symlink,
        e => OpenError::Io(e.into()),
    })?;
    checked_regular(File::from(fd))
}

/// Reads at most `max` bytes from `r` (a caller that must tell an oversized file from one of
/// exactly its limit passes the limit plus one).
pub fn read_at_most(r: impl io::Read, max: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    r.take(max).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// [`open_regular`], then at most `max` bytes of it, read into a buffer sized from its length:
/// a regular file named by the caller, read whole up to a bound. Read errors are `OpenError::Io`.
pub fn read_regular(path: &Path, max: u64) -> Result<(Vec<u8>, Metadata), OpenError> {
    let (file, meta) = open_regular(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len().min(max)).unwrap_or(0));
    file.take(max)
        .read_to_end(&mut bytes)
        .map_err(OpenError::Io)?;
    Ok((bytes, meta))
}

/// `N` random bytes from the kernel (`getrandom`, blocking until its pool is ready).
pub fn random_bytes<const N: usize>() -> io::Result<[u8; N]> {
    let mut buf = [0u8; N];
    let mut filled = 0;
    while filled < N {
        let rest = &mut buf[filled..];
        // SAFETY: getrandom writes at most `rest.len()` bytes into `rest`, which is alive and
        // writable for that length.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        match n {
            n if n > 0 => filled += n as usize,
            0 => return Err(io::Error::from_raw_os_error(libc::EAGAIN)),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(buf)
}

fn checked_regular(file: File) -> Result<(File, Metadata), OpenError> {
    let meta = file.metadata().map_err(OpenError::Io)?;
    check_regular(&meta)?;
    // The descriptor stays O_NONBLOCK; for a regular file that changes nothing.
    Ok((file, meta))
}

/// Regular file, no setuid/setgid.
pub fn check_regular(meta: &Metadata) -> Result<(), OpenError> {
    let ft = meta.file_type();
    if !ft.is_file() {
        return Err(OpenError::NotRegular(file_kind(meta)));
    }
    if meta.mode() & (libc::S_ISUID | libc::S_ISGID) != 0 {
        return Err(OpenError::SetId(meta.mode() & 0o7777));
    }
    Ok(())
}

/// A word for the type of a file, for messages.
pub fn file_kind(meta: &Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let ft = meta.file_type();
    if ft.is_file() {
        "regular file"
    } else if ft.is_dir() {
        "directory"
    } else if ft.is_symlink() {
        "symbolic link"
    } else if ft.is_fifo() {
        "fifo"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_block_device() {
        "block device"
    } else if ft.is_char_device() {
        "character device"
    } else {
        "special file"
    }
}

/// fsyncs a directory so the names created, renamed or removed in it are durable.
pub fn fsync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Creates `dir` with mode 0700 if missing (the parent must exist).
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// A unique temp name in the same directory as `path`'s final component.
pub fn temp_name(name: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(".{name}.tmp-{}-{n}", std::process::id())
}

/// Writes `bytes` to `dir/name` atomically: a temp file in the same directory (created exclusively,
/// mode `mode`), fsync, rename over `name`, fsync the directory. A reader sees the old file or the new
/// one, never a part.
pub fn atomic_write(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> io::Result<PathBuf> {
    let tmp = dir.join(temp_name(name));
    let dest = dir.join(name);
    let result = (|| {
        let mut f = create_new(&tmp, mode)?;
        f.write_all(bytes)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.sync_all()?;
        std::fs::rename(&tmp, &dest)?;
        fsync_dir(dir)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map(|()| dest)
}

/// Appends `line` to the log at `path` durably: opened `O_RDWR|O_APPEND|O_CREAT|O_NOFOLLOW|
/// O_CLOEXEC` (created with mode 0600), the whole line in ONE `write` (so concurrent appenders never
/// interleave within a line; a short write is an error), then `fdatasync`. When the file was just
/// created its directory is fsynced too, so the name is durable. The file is never rewritten.
///
/// The file must be a regular file (a symbolic link, a directory, a fifo, a device or a socket is
/// refused, [`not_regular`]); the layout's other rules ([`log_problem`]: one link, owner, mode)
/// are its caller's to check with [`check_log`] before the change it logs.
pub fn append_line(path: &Path, line: &[u8]) -> io::Result<()> {
    append_checked(path, line, Strict::TypeOnly)?.sync()
}

/// What [`append_line_unsynced`] refused a file for: not a plain regular file of its own (carries
/// the kind seen: `fifo`, `symbolic link`, `directory`, `hard-linked file`, ...).
#[derive(Debug)]
pub struct NotRegular(pub &'static str);

impl std::fmt::Display for NotRegular {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "is a {}, not a regular file", self.0)
    }
}

impl std::error::Error for NotRegular {}

fn not_regular_error(kind: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, NotRegular(kind))
}

/// The kind of file [`append_line`] or [`append_line_unsynced`] found in the place of a regular
/// file, when that is why `e` was returned.
pub fn not_regular(e: &io::Error) -> Option<&'static str> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<NotRegular>())
        .map(|n| n.0)
}

/// A line appended with one `write` whose durability is still to come: [`Appended::sync`] makes
/// it durable (`fdatasync`, and an fsync of the directory when the file was created).
#[derive(Debug)]
#[must_use = "the line is not durable until `sync` returns"]
pub struct Appended {
    file: File,
    created_in: Option<PathBuf>,
}

impl Appended {
    /// `fdatasync` the file; fsync its directory when the append created it.
    pub fn sync(self) -> io::Result<()> {
        self.file.sync_data()?;
        match self.created_in {
            Some(dir) => fsync_dir(&dir),
            None => Ok(()),
        }
    }
}

/// The first half of [`append_line`]: open (creating it 0600 if needed, never following a
/// symlink) and append `line` with one `O_APPEND` write; the caller must [`Appended::sync`].
///
/// The open is `O_NONBLOCK` and the descriptor must then be a regular file: a FIFO (with or without
/// a reader), a device or a socket in the log's place is refused at once, never waited on; so is
/// a symbolic link, a directory, and a regular file with more than one link, owned by another
/// user (root aside) or writable by group or others ([`log_problem`]; [`not_regular`] tells these
/// errors apart from an I/O error, and names what was found).
pub fn append_line_unsynced(path: &Path, line: &[u8]) -> io::Result<Appended> {
    append_checked(path, line, Strict::Layout)
}

/// How much of [`log_problem`] an append holds the file to.
#[derive(Clone, Copy)]
enum Strict {
    /// Every rule of [`log_problem`].
    Layout,
    /// Only that it is a regular file: [`append_line`]'s callers check the rest before the change
    /// they log (a refusal after it would leave the change made and unlogged).
    TypeOnly,
}

/// What a log file of the layout (`audit.log`) must be, as every other file of it: a regular file
/// (not a fifo, device, socket, directory or symbolic link), with one link (a second name makes
/// every line land in a file elsewhere too), ours or root's, writable by nobody else. `Some(what
/// it is)` when it is not.
pub fn log_problem(meta: &Metadata) -> Option<&'static str> {
    if !meta.file_type().is_file() {
        return Some(file_kind(meta));
    }
    if meta.nlink() != 1 {
        return Some("hard-linked file");
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me && meta.uid() != 0 {
        return Some("file owned by another user");
    }
    if meta.mode() & 0o022 != 0 {
        return Some("file writable by group or others");
    }
    None
}

/// Checks the log at `path`, if it exists, by [`log_problem`] without opening it (never following
/// a symbolic link): for a tool that must refuse before it changes what it logs. An error
/// [`not_regular`] names says what was found.
pub fn check_log(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => match log_problem(&meta) {
            Some(kind) => Err(not_regular_error(kind)),
            None => Ok(()),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// [`append_line_unsynced`] holding the file to `strict`.
fn append_checked(path: &Path, line: &[u8], strict: Strict) -> io::Result<Appended> {
    let open = |create: bool| {
        OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(create)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
    };
    let opened = match open(false) {
        Ok(f) => Ok((f, false)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => match open(true) {
            Ok(f) => Ok((f, true)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => open(false).map(|f| (f, false)),
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    let (mut f, created) = match opened {
        Ok(o) => o,
        // A FIFO without a reader or a socket (ENXIO), a symbolic link (O_NOFOLLOW: ELOOP), a
        // directory (EISDIR): what is there is not a file to append to.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENXIO | libc::ELOOP | libc::EISDIR)
            ) =>
        {
            match std::fs::symlink_metadata(path) {
                Ok(m) if !m.file_type().is_file() => return Err(not_regular_error(file_kind(&m))),
                _ => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    let meta = f.metadata()?;
    let problem = match strict {
        Strict::Layout => log_problem(&meta),
        Strict::TypeOnly => (!meta.file_type().is_file()).then(|| file_kind(&meta)),
    };
    if let Some(kind) = problem {
        return Err(not_regular_error(kind));
    }
    // For a regular file O_NONBLOCK changes nothing; cleared all the same, so the one write
    // below behaves exactly as before.
    nix::fcntl::fcntl(&f, nix::fcntl::FcntlArg::F_SETFL(OFlag::O_APPEND))?;
    // A line cut short before (ENOSPC, a crash) has no newline: this line starts on a line of its
    // own, so the cut one stays a torn fragment a reader can tell from a record.
    let torn = match meta.len() {
        0 => false,
        len => {
            let mut last = [0u8; 1];
            std::os::unix::fs::FileExt::read_at(&f, &mut last, len - 1).unwrap_or(0) == 1
                && last[0] != b'\n'
        }
    };
    let mut bytes = Vec::with_capacity(line.len() + 1);
    if torn {
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(line);
    let line = bytes.as_slice();
    let n = f.write(line)?;
    if n != line.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("short append: {n} of {} bytes", line.len()),
        ));
    }
    let created_in = created
        .then(|| path.parent().filter(|d| !d.as_os_str().is_empty()))
        .flatten()
        .map(Path::to_path_buf);
    Ok(Appended {
        file: f,
        created_in,
    })
}

/// `MFD_EXEC` (Linux 6.3): the memfd may be executed even where `vm.memfd_noexec` makes new
/// memfds non-executable by default. Older kernels reject the flag (`EINVAL`); their memfds are
/// executable anyway.
const MFD_EXEC: libc::c_uint = 0x0010;

/// The seals that freeze a memfd for good: no write, no shrink, no grow, no further seal changes.
const FROZEN: libc::c_int =
    libc::F_SEAL_WRITE | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;

/// A new, empty memfd for an executable copy (`MFD_CLOEXEC|MFD_ALLOW_SEALING|MFD_EXEC`), to be
/// filled by the caller and then [`freeze`]d. Until it is frozen only this process must be able to
/// write it, so the process is first made non-dumpable (`PR_SET_DUMPABLE` 0): its descriptors
/// (`/proc/PID/fd/N`, `pidfd_getfd`) are then out of reach of anything without `CAP_SYS_PTRACE`,
/// same-user processes included. `EACCES` means the host forbids executable memfds
/// (`vm.memfd_noexec = 2`).
pub fn exec_memfd(name: &CStr) -> io::Result<File> {
    nix::sys::prctl::set_dumpable(false).map_err(io::Error::from)?;
    memfd_create_exec(name).map(File::from)
}

/// Freezes a memfd made by [`exec_memfd`]: mode 0555 (readable and executable by everyone, a
/// per-run uid runs it; writable by no one), sealed with `F_SEAL_WRITE|F_SEAL_SHRINK|F_SEAL_GROW|
/// F_SEAL_SEAL` so that no descriptor anywhere can change it any more, offset back at 0.
///
/// `F_SEAL_WRITE` is refused with `EBUSY` while the kernel still holds an extra reference on one of
/// the memfd's pages (the kernel drains its per-CPU page batches and waits a little before giving
/// up, which a loaded machine can outlast: seen once in a few hundred launches while another
/// process rewrote files in a loop). Nothing else can hold the memfd — it is this process's own,
/// unmapped, and the process is not dumpable — so the seal is asked again a few times, with
/// growing pauses (at most about 0.3 s in all), before the `EBUSY` is returned.
pub fn freeze(file: &mut File) -> io::Result<()> {
    nix::sys::stat::fchmod(&*file, nix::sys::stat::Mode::from_bits_truncate(0o555))?;
    let fd = OwnedFd::from(file.try_clone()?);
    let mut pause = std::time::Duration::from_millis(5);
    let mut retries = 0;
    loop {
        match add_seals(&fd, FROZEN) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && retries < FREEZE_RETRIES => {
                std::thread::sleep(pause);
                pause *= 2;
                retries += 1;
            }
            other => break other?,
        }
    }
    io::Seek::rewind(file)?;
    Ok(())
}

/// How many times [`freeze`] asks again after `EBUSY` (pauses of 5, 10, 20, 40, 80 and 160 ms).
const FREEZE_RETRIES: usize = 6;

/// `F_SETSIG` (not in every libc's headers).
const F_SETSIG: libc::c_int = 10;

/// Takes a read lease on `file` (opened read-only): until [`release_lease`], an `open` of the file
/// for writing and a `truncate` by anyone block (for at most [`lease_break_time`], after which the
/// kernel breaks the lease), and the lease is refused (`EAGAIN`) while anyone has the file open for
/// writing, mapped writable included. Together with the kernel's refusal to write a file that is
/// being executed (`ETXTBSY`), a lease held from the digest until the `execve` has happened means
/// the bytes executed are the bytes digested. Only the file's owner (or a holder of `CAP_LEASE`)
/// can take one; `EINVAL` where the filesystem or `fs.leases-enable` says no.
///
/// The break notice goes out as `SIGURG` (ignored by default) and to no one: the signal is set
/// before the lease, the owner cleared after it, so an opener can never kill the holder.
pub fn read_lease(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: F_SETSIG takes only integer arguments on a descriptor the borrow keeps open.
    if unsafe { libc::fcntl(fd, F_SETSIG, libc::SIGURG) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: F_SETLEASE takes only integer arguments on a descriptor the borrow keeps open.
    if unsafe { libc::fcntl(fd, libc::F_SETLEASE, libc::F_RDLCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: F_SETOWN takes only integer arguments; owner 0 means no signal is sent.
    if unsafe { libc::fcntl(fd, libc::F_SETOWN, 0) } < 0 {
        let e = io::Error::last_os_error();
        let _ = release_lease(file);
        return Err(e);
    }
    Ok(())
}

/// Gives up the lease [`read_lease`] took (`F_SETLEASE F_UNLCK`).
pub fn release_lease(file: &File) -> io::Result<()> {
    // SAFETY: F_SETLEASE takes only integer arguments on a descriptor the borrow keeps open.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether the read lease on `file` is held with no break pending (`F_GETLEASE` is `F_RDLCK`).
pub fn lease_held(file: &File) -> bool {
    // SAFETY: F_GETLEASE takes only integer arguments on a descriptor the borrow keeps open.
    (unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLEASE) }) == libc::F_RDLCK
}

/// The shortest lease break time under which [`map_leased`] maps a file: a writer that starts
/// breaking the lease the moment after the check still waits this long, and the mapping is read
/// within milliseconds.
pub const MAP_LEASED_MIN_BREAK: std::time::Duration = std::time::Duration::from_secs(1);

/// A read-only private mapping of a whole leased file ([`map_leased`]), unmapped when dropped.
#[derive(Debug)]
pub struct LeasedMapping<'a> {
    ptr: std::ptr::NonNull<libc::c_void>,
    len: usize,
    _file: std::marker::PhantomData<&'a File>,
}

impl LeasedMapping<'_> {
    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes of the file for as long as `self` lives, and
        // `map_leased` mapped it only while a read lease kept every writer (and truncation) out,
        // for at least MAP_LEASED_MIN_BREAK after any break of it starts.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<u8>(), self.len) }
    }
}

impl Drop for LeasedMapping<'_> {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the range `map_leased` mapped; no slice of it outlives `self`.
        unsafe { libc::munmap(self.ptr.as_ptr(), self.len) };
    }
}

/// Maps `file` read-only, whole, to read it without copying it — only while this process holds
/// a read lease on it ([`read_lease`], no break pending) and the kernel's lease break time is at
/// least [`MAP_LEASED_MIN_BREAK`]: then nobody can write or truncate the file until the lease is
/// released or that time has passed since a writer asked, so the mapped bytes cannot change and
/// reading them cannot fault past the end. `None` when those conditions do not hold (the caller
/// reads the file instead) or the file is empty. The mapping is meant to be read at once (a
/// digest), not kept. A disk error while its pages are read in ends the process with `SIGBUS`
/// where a read would have returned `EIO`.
pub fn map_leased(file: &File) -> io::Result<Option<LeasedMapping<'_>>> {
    if !lease_held(file) || lease_break_time() < MAP_LEASED_MIN_BREAK {
        return Ok(None);
    }
    let len = usize::try_from(file.metadata()?.len())
        .map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    if len == 0 {
        return Ok(None);
    }
    // SAFETY: a new private read-only mapping of `len` bytes of an open file; the kernel picks
    // the address, nothing of ours is overwritten. Its soundness while it lives is the lease's
    // (see the function's documentation).
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let ptr =
        std::ptr::NonNull::new(ptr).ok_or_else(|| io::Error::from_raw_os_error(libc::EFAULT))?;
    Ok(Some(LeasedMapping {
        ptr,
        len,
        _file: std::marker::PhantomData,
    }))
}

/// [`map_leased`] for the `len` bytes of `file` at `offset` (a multiple of the page size; the range
/// must lie within the file), the pages read in at once (`MAP_POPULATE`): a window of a file
/// digested a window at a time, each checked against the lease just before it is mapped, so a
/// lease break can only start while one window is hashed — milliseconds, against the break time of
/// at least [`MAP_LEASED_MIN_BREAK`]. `None` under the same conditions as [`map_leased`], or for an
/// empty range.
pub fn map_leased_range(
    file: &File,
    offset: u64,
    len: usize,
) -> io::Result<Option<LeasedMapping<'_>>> {
    if !lease_held(file) || lease_break_time() < MAP_LEASED_MIN_BREAK || len == 0 {
        return Ok(None);
    }
    let end = offset.checked_add(len as u64);
    if end.is_none_or(|end| end > file.metadata().map_or(0, |m| m.len())) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let offset =
        libc::off_t::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    // SAFETY: a new private read-only mapping of `len` bytes of an open file at `offset`; the kernel
    // picks the address, nothing of ours is overwritten. Its soundness while it lives is the
    // lease's (see `map_leased`), and the range was checked to lie within the file.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_POPULATE,
            file.as_raw_fd(),
            offset,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let ptr =
        std::ptr::NonNull::new(ptr).ok_or_else(|| io::Error::from_raw_os_error(libc::EFAULT))?;
    Ok(Some(LeasedMapping {
        ptr,
        len,
        _file: std::marker::PhantomData,
    }))
}

/// How long the kernel lets a lease holder keep a would-be writer waiting before it breaks the
/// lease by force (`/proc/sys/fs/lease-break-time`, 45 s by default). Read once per process: a
/// launch asks twice (before it maps the leased file, and when it decides whether the lease is
/// still young enough to execute under) and lives for as long as one run.
pub fn lease_break_time() -> std::time::Duration {
    static SECS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let secs = *SECS.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/fs/lease-break-time")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(45)
    });
    std::time::Duration::from_secs(secs)
}

/// Which step of [`sealed_copy`] failed.
#[derive(Debug)]
pub enum SealError {
    /// `memfd_create` refused: `EACCES` means the host forbids executable memfds
    /// (`vm.memfd_noexec = 2`).
    Create(io::Error),
    /// Copying the bytes failed; `UnexpectedEof` when the source held fewer bytes than asked for.
    Copy(io::Error),
    /// The seals could not be added.
    Seal(io::Error),
}

impl std::fmt::Display for SealError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SealError::Create(e) => write!(f, "creating a memfd failed: {e}"),
            SealError::Copy(e) => write!(f, "copying into the memfd failed: {e}"),
            SealError::Seal(e) => write!(f, "sealing the memfd failed: {e}"),
        }
    }
}

impl std::error::Error for SealError {}

/// A private, executable, frozen copy of the first `len` bytes of `src` ([`exec_memfd`] filled
/// with `sendfile`, then [`freeze`]). Whatever happens to `src` afterwards (rewritten in place,
/// truncated, replaced), the copy keeps the bytes it was frozen with.
pub fn sealed_copy(src: &File, len: u64, name: &CStr) -> Result<File, SealError> {
    let mut memfd = exec_memfd(name).map_err(SealError::Create)?;
    copy_exactly(src, &memfd, len).map_err(SealError::Copy)?;
    freeze(&mut memfd).map_err(SealError::Seal)?;
    Ok(memfd)
}

/// `sendfile` the first `len` bytes of `src` (from offset 0, not moving its offset) into `dst`.
fn copy_exactly(src: &File, dst: &File, len: u64) -> io::Result<()> {
    let mut offset: libc::off_t = 0;
    let total =
        libc::off_t::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    while offset < total {
        let want = usize::try_from(total - offset)
            .unwrap_or(usize::MAX)
            .min(1 << 30);
        match nix::sys::sendfile::sendfile(dst, src, Some(&mut offset), want) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the file ended after {offset} of {len} bytes"),
                ))
            }
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn memfd_create_exec(name: &CStr) -> io::Result<OwnedFd> {
    let base = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    match memfd_create(name, base | MFD_EXEC) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => memfd_create(name, base),
        other => other,
    }
}

fn memfd_create(name: &CStr, flags: libc::c_uint) -> io::Result<OwnedFd> {
    // SAFETY: `name` is NUL-terminated and alive for the call; flags are integers. The kernel
    // returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_memfd_create, name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: the kernel just returned `fd` as a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn add_seals(fd: &OwnedFd, seals: libc::c_int) -> io::Result<()> {
    // SAFETY: F_ADD_SEALS takes only integer arguments on a descriptor the borrow keeps open.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The seals on `file` (`F_GET_SEALS`): `Ok(0)` for a memfd without seals; `EINVAL` for a file
/// that cannot be sealed.
pub fn seals(file: &File) -> io::Result<libc::c_int> {
    // SAFETY: F_GET_SEALS takes only integer arguments on a descriptor the borrow keeps open.
    let s = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
    if s < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(s)
}

/// Whether `file` carries every seal [`sealed_copy`] sets.
pub fn is_frozen(file: &File) -> bool {
    seals(file).is_ok_and(|s| s & FROZEN == FROZEN)
}

/// The id of the mount the open file `fd` is on: a bind mount has a mount id of its own even
/// where it shows the same device and inode numbers as the directory it mounts. One `statx`
/// (`STATX_MNT_ID`, Linux 5.8); on an older kernel, `mnt_id` in `/proc/self/fdinfo/FD`.
pub fn mount_id(fd: BorrowedFd<'_>) -> io::Result<u64> {
    // SAFETY: an all-zero statx is a valid buffer for the kernel to fill.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: the path is a NUL-terminated literal, `stx` is a statx the kernel writes only;
    // `fd` is open for the whole call (borrowed).
    let ret = unsafe {
        libc::statx(
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_MNT_ID,
            &mut stx,
        )
    };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    if stx.stx_mask & libc::STATX_MNT_ID != 0 {
        return Ok(stx.stx_mnt_id);
    }
    std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd()))?
        .lines()
        .find_map(|l| l.strip_prefix("mnt_id:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ENODATA))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tempdir() -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("sys-fs-{}-{}", std::process::id(), temp_name("t")));
        std::fs::create_dir_all(&d).expect("tempdir");
        d
    }

    #[test]
    fn open_regular_refuses_symlink_dir_fifo_and_setuid() {
        let d = tempdir();
        let f = d.join("f");
        std::fs::write(&f, b"x").expect("write");
        std::os::unix::fs::symlink(&f, d.join("l")).expect("symlink");
        assert!(open_regular(&f).is_ok());
        assert!(matches!(
            open_regular(&d.join("l")),
            Err(OpenError::Symlink)
        ));
        assert!(matches!(
            open_regular(&d),
            Err(OpenError::NotRegular("directory"))
        ));
        nix::unistd::mkfifo(
            &d.join("p"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .expect("mkfifo");
        assert!(matches!(
            open_regular(&d.join("p")),
            Err(OpenError::NotRegular("fifo"))
        ));
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o4755)).expect("chmod");
        assert!(matches!(open_regular(&f), Err(OpenError::SetId(_))));
        std::fs::remove_dir_all(&d).expect("cleanup");
    }

    #[test]
    fn append_line_refuses_a_fifo_at_once_with_or_without_a_reader() {
        let d = tempdir();
        let fifo = d.join("audit.log");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600))
            .expect("mkfifo");
        // No reader: a blocking open would wait forever.
        let e = append_line(&fifo, b"x\n").expect_err("a fifo is refused");
        assert_eq!(not_regular(&e), Some("fifo"), "{e}");
        // A reader (opened without blocking): the open would succeed, the type refuses it.
        let reader = open_read(&fifo, false).expect("reader");
        let e = append_line(&fifo, b"x\n").expect_err("a fifo is refused");
        assert_eq!(not_regular(&e), Some("fifo"), "{e}");
        let mut buf = [0u8; 4];
        assert_eq!(
            std::io::Read::read(&mut &reader, &mut buf).expect("nothing written"),
            0
        );
        let e = append_line(Path::new("/dev/null"), b"x\n").expect_err("a device is refused");
        assert_eq!(not_regular(&e), Some("character device"), "{e}");
        std::fs::remove_dir_all(&d).expect("cleanup");
    }

    #[test]
    fn append_line_appends_creates_private_and_refuses_a_link() {
        let d = tempdir();
        let log = d.join("audit.log");
        append_line(&log, b"one\n").expect("create");
        append_line(&log, b"two\n").expect("append");
        assert_eq!(std::fs::read(&log).expect("read"), b"one\ntwo\n");
        assert_eq!(std::fs::metadata(&log).expect("meta").mode() & 0o777, 0o600);
        std::os::unix::fs::symlink(&log, d.join("link")).expect("symlink");
        let e = append_line(&d.join("link"), b"x\n").expect_err("a link is refused");
        assert_eq!(not_regular(&e), Some("symbolic link"), "{e}");
        std::fs::remove_dir_all(&d).expect("cleanup");
    }

    #[test]
    fn an_audit_log_that_is_not_a_plain_file_of_its_own_is_refused_and_left_unwritten() {
        let d = tempdir();
        let real = d.join("real.log");
        std::fs::write(&real, b"one\n").expect("write");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let link = d.join("link.log");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let dir = d.join("dir.log");
        std::fs::create_dir(&dir).expect("mkdir");
        let hard = d.join("hard.log");
        std::fs::hard_link(&real, &hard).expect("link");
        let open = d.join("open.log");
        std::fs::write(&open, b"one\n").expect("write");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        for (path, kind) in [
            (&link, "symbolic link"),
            (&dir, "directory"),
            (&hard, "hard-linked file"),
            (&open, "file writable by group or others"),
        ] {
            let e = append_line_unsynced(path, b"x\n").expect_err("refused");
            assert_eq!(not_regular(&e), Some(kind), "{}: {e}", path.display());
            let e = check_log(path).expect_err("refused");
            assert_eq!(not_regular(&e), Some(kind), "{}: {e}", path.display());
        }
        assert_eq!(
            std::fs::read(&real).expect("read"),
            b"one\n",
            "nothing appended"
        );
        assert_eq!(
            std::fs::read(&open).expect("read"),
            b"one\n",
            "nothing appended"
        );
        check_log(&d.join("absent.log")).expect("an absent log is made by the append");
        std::fs::remove_file(&hard).expect("rm");
        check_log(&real).expect("a plain private file");
        append_line_unsynced(&real, b"two\n")
            .expect("appended")
            .sync()
            .expect("sync");
        assert_eq!(std::fs::read(&real).expect("read"), b"one\ntwo\n");
        std::fs::remove_dir_all(&d).expect("cleanup");
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let d = tempdir();
        atomic_write(&d, "a.json", b"one", 0o600).expect("first");
        atomic_write(&d, "a.json", b"two", 0o600).expect("second");
        assert_eq!(std::fs::read(d.join("a.json")).expect("read"), b"two");
        let names: Vec<_> = std::fs::read_dir(&d)
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.json")]);
        assert_eq!(
            std::fs::metadata(d.join("a.json")).expect("meta").mode() & 0o777,
            0o600
        );
        std::fs::remove_dir_all(&d).expect("cleanup");
    }

    #[test]
    fn a_sealed_copy_keeps_its_bytes_whatever_happens_to_the_source() {
        let d = tempdir();
        let path = d.join("exe");
        std::fs::write(&path, b"#!/bin/sh\necho original\n").expect("write");
        let src = File::open(&path).expect("open");
        let copy = sealed_copy(&src, 24, c"t").expect("sealed copy");
        assert!(is_frozen(&copy));
        // Rewritten in place and truncated: the copy does not change.
        std::fs::write(&path, b"#!/bin/sh\necho REPLACED\n").expect("rewrite");
        std::fs::write(&path, b"x").expect("truncate");
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut &copy, &mut back).expect("read");
        assert_eq!(back, b"#!/bin/sh\necho original\n");
        // No descriptor can change it, not even one reopened for writing.
        let reopened = OpenOptions::new()
            .write(true)
            .open(format!("/proc/self/fd/{}", copy.as_raw_fd()));
        if let Ok(mut w) = reopened {
            let e = w.write_all(b"y").expect_err("sealed against writes");
            assert_eq!(e.raw_os_error(), Some(libc::EPERM));
        }
        assert_eq!(
            copy.set_len(1).map_err(|e| e.raw_os_error()),
            Err(Some(libc::EPERM))
        );
        // Asking for more than the source holds is an error, not a short copy.
        let short = sealed_copy(&File::open(&path).expect("open"), 24, c"t").expect_err("short");
        assert!(
            matches!(&short, SealError::Copy(e) if e.kind() == io::ErrorKind::UnexpectedEof),
            "{short}"
        );
        std::fs::remove_dir_all(&d).expect("cleanup");
    }

    #[test]
    fn a_read_lease_keeps_writers_out_until_released() {
        let d = tempdir();
        let path = d.join("leased");
        std::fs::write(&path, b"pinned").expect("write");
        let file = File::open(&path).expect("open");
        read_lease(&file).expect("lease");
        assert!(lease_held(&file));
        let writer = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path);
        assert_eq!(
            writer.map(drop).map_err(|e| e.raw_os_error()),
            Err(Some(libc::EAGAIN)),
            "a writer is kept out while the lease is held"
        );
        release_lease(&file).expect("release");
        let w = OpenOptions::new().write(true).open(&path).expect("writer");
        // With a writer open the lease is refused.
        let again = read_lease(&file).map_err(|e| e.raw_os_error());
        assert_eq!(again, Err(Some(libc::EAGAIN)));
        drop(w);
        assert!(lease_break_time() > std::time::Duration::ZERO);
        std::fs::remove_dir_all(&d).expect("cleanup");
    }
}
