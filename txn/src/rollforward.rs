//! Rolling a PREPARED run forward: every file of the PREPARED record checked in the target
//! before anything changes — already in place, or still the old bytes with this run's temp file
//! holding the prepared ones — under the target's commit lock. A conflict changes nothing.

use crate::tree::{same, stat_at, Kind};
use proto::journal::PreparedFile;
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
/// symbolic link: `Ok(None)` absent, `Ok(Some(digest))` a regular file without setuid/setgid,
/// `Err` anything else. With `own`, the file must also be a temp file this run could have written:
/// owned by that uid, with one link.
fn digest_at(
    dir: &File,
    target: &Path,
    name: &str,
    own: Option<u32>,
) -> Result<Option<Sha256>, String> {
    let path = target.join(name);
    let cname = CString::new(name).map_err(|e| format!("{}: {e}", path.display()))?;
    let st = match stat_at(dir, &cname) {
        Ok(st) => st,
        Err(nix::errno::Errno::ENOENT) => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    if Kind::of(&st) != Kind::File {
        return Err(format!(
            "{} is a {}, not a regular file",
            path.display(),
            Kind::of(&st).word()
        ));
    }
    if let Some(uid) = own {
        if st.st_uid != uid || st.st_nlink != 1 {
            return Err(format!(
                "{} is not a temp file of this run (owned by uid {}, {} links)",
                path.display(),
                st.st_uid,
                st.st_nlink
            ));
        }
    }
    let file = sys::fs::open_read_at(dir, cname.as_c_str())
        .map(File::from)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let held = nix::sys::stat::fstat(&file).map_err(|e| format!("{}: {e}", path.display()))?;
    if !same(&held, &st) {
        return Err(format!("{} changed while it was read", path.display()));
    }
    let meta = file
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    sys::fs::check_regular(&meta).map_err(|e| format!("{} {e}", path.display()))?;
    digest(&file)
        .map(Some)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Each file must be either already in place (target has the prepared digest) or renameable (temp
/// has the prepared digest and the target still holds the old bytes). Checks every file before
/// renaming any, so a conflict changes nothing. Every name is looked up in the target directory
/// opened once; the names were checked to be single components and this run's temp files.
///
/// The target is opened one component at a time without following a link
/// (`sys::fs::open_dir_nofollow`: the directory the journal names, not one a swapped parent
/// points at) and its commit lock taken (`commit::lock_target`); the directory comes back with
/// the lock held, with the files still to rename (the caller renames them, then fsyncs the
/// directory, then appends COMMITTED before it lets the lock go).
pub fn roll_forward(
    target: &Path,
    files: &[PreparedFile],
    uid: u32,
    cancelled: impl FnMut() -> Result<(), String>,
) -> Result<Plan, (String, String)> {
    let dir = sys::fs::open_dir_nofollow(target)
        .map(File::from)
        .map_err(|e| {
            (
                String::new(),
                format!("{}: {}", target.display(), std::io::Error::from(e)),
            )
        })?;
    crate::lock::lock_target(&dir, cancelled).map_err(|e| match e {
        crate::lock::LockError::Io(e) => (String::new(), format!("locking the target: {e}")),
        crate::lock::LockError::Cancelled(why) => (String::new(), why),
    })?;
    let mut to_rename = Vec::new();
    let mut stale_temps = Vec::new();
    for f in files {
        let conflict = |why: String| (f.name.clone(), why);
        let current = digest_at(&dir, target, &f.name, None).map_err(conflict)?;
        let temp = digest_at(&dir, target, &f.temp, Some(uid)).map_err(conflict)?;
        if current == Some(f.sha256) {
            // Already in place. A temp file still holding the prepared bytes means the target
            // already had them (old == new) and the rename never happened: it is ours to remove.
            if temp == Some(f.sha256) {
                stale_temps.push(f.temp.clone());
            }
            continue;
        }
        if temp != Some(f.sha256) {
            return Err(conflict(format!(
                "the target holds neither the prepared bytes nor can they be restored: temp file {} is {}",
                f.temp,
                if temp.is_none() { "missing" } else { "changed" }
            )));
        }
        if current != f.old {
            return Err(conflict(format!(
                "{} changed since the run prepared it (neither the old bytes nor the prepared ones)",
                target.join(&f.name).display()
            )));
        }
        to_rename.push(f.clone());
    }
    for temp in stale_temps {
        nix::unistd::unlinkat(&dir, temp.as_str(), nix::unistd::UnlinkatFlags::NoRemoveDir)
            .map_err(|e| (temp.clone(), format!("removing the stale temp file: {e}")))?;
    }
    // The renames (if any) and the removals are made durable by the caller's directory fsync.
    Ok(Plan { dir, to_rename })
}
