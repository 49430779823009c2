//! Rolling a PREPARED run forward: every file of the PREPARED record checked in the target
//! before anything changes — already in place, or still the old bytes with this run's temp file
//! holding the prepared ones — under the target's commit lock. Nothing is renamed unless every
//! file passes.
//!
//! Why a run is not rolled forward is one of three things, and each has its own way out
//! ([`Blocked`]): the target holds something the run did not prepare (a conflict: the operator's
//! decision, `recover --abandon` when that leaves the target as it was), the target's path no
//! longer names the directory the run wrote in (the operator must find it), or the host failed
//! (an I/O error, a read-only filesystem, a lock that could not be taken: the same `recover`
//! again once the host allows it). A host error is never reported as a conflict.

use crate::tree::{same, stat_at, Kind};
use crate::TargetError;
use nix::errno::Errno;
use proto::journal::{PreparedFile, TargetId};
use proto::Sha256;
use sha2::Digest as _;
use std::ffi::CString;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// What is left to do once every file was checked: the held, locked target directory, and the
/// files to rename there.
#[derive(Debug)]
pub struct Plan {
    pub dir: File,
    pub to_rename: Vec<PreparedFile>,
}

/// Why a PREPARED run was not rolled forward. Nothing was renamed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Blocked {
    /// The target holds something the run did not prepare at `file`: neither the prepared bytes,
    /// nor the old bytes with this run's temp file holding the prepared ones. `applied` lists the
    /// run's files already in place with bytes that differ from the old ones: giving the run up
    /// would leave those in the target beside the others' old bytes.
    Conflict {
        file: String,
        reason: String,
        applied: Vec<String>,
    },
    /// The target's path no longer names the directory the run wrote its temp files in.
    Moved(String),
    /// An error of the host (I/O, a read-only filesystem, a permission, the lock): nothing was
    /// changed, and the same pass again may get past it.
    Host(String),
    /// A cancelling signal ended the wait for the target's lock.
    Cancelled(String),
}

impl Blocked {
    fn host(what: impl std::fmt::Display, e: impl std::fmt::Display) -> Blocked {
        Blocked::Host(format!("{what}: {e}"))
    }
}

/// The SHA-256 of `file`'s contents, read in positioned chunks.
fn digest(file: &File) -> std::io::Result<Sha256> {
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut at = 0u64;
    loop {
        let n = file.read_at(&mut buf, at)?;
        if n == 0 {
            let mut out = [0u8; 32];
            out.copy_from_slice(&h.finalize());
            return Ok(Sha256(out));
        }
        h.update(&buf[..n]);
        at += n as u64;
    }
}

/// What is at `name` in the target directory `dir` (`target` for messages), never following a
/// symbolic link: `Ok(None)` absent, `Ok(Some(digest))` a regular file without setuid/setgid.
/// With `own`, the file must also be a temp file this run could have written: owned by that uid,
/// with one link. Anything else there is `Err(Ok(why))` (what the target holds: a conflict); a
/// call that failed is `Err(Err(Blocked::Host))`.
fn digest_at(
    dir: &File,
    target: &Path,
    name: &str,
    own: Option<u32>,
) -> Result<Option<Sha256>, Result<String, Blocked>> {
    let path = target.join(name);
    let shown = path.display();
    let host = |e: &dyn std::fmt::Display| Err(Blocked::host(&shown, e));
    let cname = CString::new(name).map_err(|e| Ok(format!("{shown}: {e}")))?;
    let st = match stat_at(dir, &cname) {
        Ok(st) => st,
        Err(Errno::ENOENT) => return Ok(None),
        Err(e) => return Err(host(&e)),
    };
    if Kind::of(&st) != Kind::File {
        return Err(Ok(format!(
            "{shown} is a {}, not a regular file",
            Kind::of(&st).word()
        )));
    }
    if let Some(uid) = own {
        if st.st_uid != uid || st.st_nlink != 1 {
            return Err(Ok(format!(
                "{shown} is not a temp file of this run (owned by uid {}, {} links)",
                st.st_uid, st.st_nlink
            )));
        }
    }
    let file = sys::fs::open_read_at(dir, cname.as_c_str())
        .map(File::from)
        .map_err(|e| host(&e))?;
    let held = nix::sys::stat::fstat(&file).map_err(|e| host(&e))?;
    if !same(&held, &st) {
        return Err(host(&"it changed while it was read"));
    }
    let meta = file.metadata().map_err(|e| host(&e))?;
    sys::fs::check_regular(&meta).map_err(|e| Ok(format!("{shown} {e}")))?;
    digest(&file).map(Some).map_err(|e| host(&e))
}

/// One file of a PREPARED record as the target holds it now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The digest at `name` (`None`: absent).
    pub current: Option<Sha256>,
    /// The digest of this run's temp file (`None`: absent).
    pub temp: Option<Sha256>,
}

impl Found {
    /// `name` holds the prepared bytes, and they are not the old ones: the run changed it.
    pub fn applied(&self, f: &PreparedFile) -> bool {
        self.current == Some(f.sha256) && f.old != Some(f.sha256)
    }
}

/// Each file of `files` as the held target directory `dir` holds it: what is at its name and in
/// its temp file. `Err(Blocked::Conflict)` for a name or temp that is not a plain file the run
/// could have written; `Err(Blocked::Host)` for a call that failed.
pub fn survey(
    dir: &File,
    target: &Path,
    files: &[PreparedFile],
    uid: u32,
) -> Result<Vec<Found>, Blocked> {
    let mut found = Vec::with_capacity(files.len());
    let mut odd = None;
    for f in files {
        let current = digest_at(dir, target, &f.name, None);
        let temp = digest_at(dir, target, &f.temp, Some(uid));
        match (current, temp) {
            (Err(Err(host)), _) | (_, Err(Err(host))) => return Err(host),
            (Ok(current), Ok(temp)) => found.push(Found { current, temp }),
            (Err(Ok(why)), _) | (_, Err(Ok(why))) => {
                odd.get_or_insert((f.name.clone(), why));
                found.push(Found {
                    current: None,
                    temp: None,
                });
            }
        }
    }
    match odd {
        None => Ok(found),
        Some((file, reason)) => Err(Blocked::Conflict {
            file,
            reason,
            applied: applied(files, &found),
        }),
    }
}

/// The names of the files of `files` (surveyed as `found`) already in place with new bytes.
pub fn applied(files: &[PreparedFile], found: &[Found]) -> Vec<String> {
    files
        .iter()
        .zip(found)
        .filter(|(f, s)| s.applied(f))
        .map(|(f, _)| f.name.clone())
        .collect()
}

/// Opens the run's target directory as [`crate::open_target`] does, and takes its commit lock
/// (`cancelled` is asked while it waits).
pub fn hold_target(
    target: &Path,
    id: Option<TargetId>,
    cancelled: impl FnMut() -> Result<(), String>,
) -> Result<File, Blocked> {
    let dir = match crate::open_target(target, id) {
        Ok(fd) => File::from(fd),
        Err(TargetError::Moved(why)) => return Err(Blocked::Moved(why)),
        Err(TargetError::Missing) => {
            return Err(Blocked::Moved(format!(
                "the target {} does not exist any more",
                target.display()
            )))
        }
        Err(TargetError::Host(why)) => return Err(Blocked::Host(why)),
    };
    crate::lock::lock_target(&dir, cancelled).map_err(|e| match e {
        crate::lock::LockError::Io(e) => Blocked::host("locking the target", e),
        crate::lock::LockError::Cancelled(why) => Blocked::Cancelled(why),
    })?;
    Ok(dir)
}

/// Each file must be either already in place (target has the prepared digest) or renameable (temp
/// has the prepared digest and the target still holds the old bytes). Checks every file before
/// renaming any, so a conflict changes nothing. Every name is looked up in the target directory
/// opened once; the names were checked to be single components and this run's temp files.
///
/// The target is opened one component at a time without following a link and checked to be the
/// directory the run began in when the journal recorded its identity ([`hold_target`]), and its
/// commit lock is taken; the directory comes back with the lock held, with the files still to
/// rename (the caller renames them, then fsyncs the directory, then appends COMMITTED before it
/// lets the lock go).
pub fn roll_forward(
    target: &Path,
    id: Option<TargetId>,
    files: &[PreparedFile],
    uid: u32,
    cancelled: impl FnMut() -> Result<(), String>,
) -> Result<Plan, Blocked> {
    let dir = hold_target(target, id, cancelled)?;
    let found = survey(&dir, target, files, uid)?;
    let mut to_rename = Vec::new();
    let mut stale_temps = Vec::new();
    for (f, now) in files.iter().zip(&found) {
        let conflict = |reason: String| Blocked::Conflict {
            file: f.name.clone(),
            reason,
            applied: applied(files, &found),
        };
        if now.current == Some(f.sha256) {
            // Already in place. A temp file still holding the prepared bytes means the target
            // already had them (old == new) and the rename never happened: it is ours to remove.
            if now.temp == Some(f.sha256) {
                stale_temps.push(f.temp.clone());
            }
            continue;
        }
        if now.temp != Some(f.sha256) {
            return Err(conflict(format!(
                "the target holds neither the prepared bytes nor can they be restored: temp file {} is {}",
                f.temp,
                if now.temp.is_none() { "missing" } else { "changed" }
            )));
        }
        if now.current != f.old {
            return Err(conflict(format!(
                "{} changed since the run prepared it (neither the old bytes nor the prepared ones)",
                target.join(&f.name).display()
            )));
        }
        to_rename.push(f.clone());
    }
    for temp in stale_temps {
        nix::unistd::unlinkat(&dir, temp.as_str(), nix::unistd::UnlinkatFlags::NoRemoveDir)
            .map_err(|e| Blocked::host(format!("removing the stale temp file {temp}"), e))?;
    }
    // The renames (if any) and the removals are made durable by the caller's directory fsync.
    Ok(Plan { dir, to_rename })
}
