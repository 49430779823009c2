//! Committing a successful run's outputs: validate, write temp files in the target directory and
//! make them durable, append a durable PREPARED, rename each into place, make the target directory
//! durable, append COMMITTED.

use crate::cancel::{self, During};
use crate::error::LaunchError;
use crate::exec::RunLimits;
use crate::hooks::failpoint;
use crate::rundir::{now_ms, RunDir};
use crate::target::Target;
use proto::journal::{PreparedFile, Record, RECORD_VERSION};
use proto::result::OutputFile;
use proto::Sha256;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Why the outputs cannot be committed (the run then fails with nothing committed).
#[derive(Debug)]
pub enum CommitError {
    /// The plugin's outputs break a rule: kind `outputs-invalid`.
    Invalid(String),
    /// The target cannot take them (a name is a directory or a symlink there): `target-conflict`.
    Conflict(String),
    /// A PREPARED run of this state, not finished, names the same target: `target-pending`.
    Pending(String),
    /// I/O before PREPARED: nothing changed in the target.
    Before(LaunchError),
    /// I/O after PREPARED: the run is retained for `dot-launch recover`.
    After(LaunchError),
    /// Every file is in place and the target directory durable, but COMMITTED could not be
    /// appended: the outputs are committed; the run stays PREPARED for `dot-launch recover`.
    Unrecorded(Vec<OutputFile>, Box<LaunchError>),
}

/// One validated output, opened in the stage.
struct Output {
    name: String,
    file: File,
    size: u64,
}

/// Why `name` is not a single plain file name, if it is not one: empty, longer than 255 bytes,
/// `.` or `..`, a `/` or NUL, our own temp prefix `.dot-`, or a character that rewrites what a
/// person reads (`names::unsafe_char`).
fn output_name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name == "." || name == ".." {
        return Some("is not a file name".into());
    }
    if name.len() > 255 {
        return Some(format!("is {} bytes, over 255", name.len()));
    }
    if name.bytes().any(|b| b == b'/' || b == 0) {
        return Some("is not a single path component".into());
    }
    if name.starts_with(".dot-") {
        return Some("starts with .dot-, the prefix of dot's temp files".into());
    }
    crate::names::unsafe_char(name).map(|c| {
        format!(
            "holds the control or formatting character U+{:04X}",
            u32::from(c)
        )
    })
}

fn validate(
    out_dir: &File,
    names: &[String],
    limits: &RunLimits,
) -> Result<Vec<Output>, CommitError> {
    if names.len() as u64 > limits.run.outputs {
        return Err(CommitError::Invalid(format!(
            "{} outputs, more than the limit of {}",
            names.len(),
            limits.run.outputs
        )));
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut total = 0u64;
    let mut outputs = Vec::with_capacity(names.len());
    for name in names {
        if let Some(why) = output_name_problem(name) {
            return Err(CommitError::Invalid(format!("output name {name:?} {why}")));
        }
        if !seen.insert(name.as_str()) {
            return Err(CommitError::Invalid(format!(
                "output {name:?} is listed twice"
            )));
        }
        let (file, meta) =
            sys::fs::open_regular_at(out_dir.as_fd(), Path::new(name)).map_err(|e| match e {
                sys::fs::OpenError::Io(e) if host_error(&e) => CommitError::Before(
                    LaunchError::io("opening an output", format!("out/{name}"), e),
                ),
                e => CommitError::Invalid(format!("output out/{name} {e}")),
            })?;
        if meta.nlink() != 1 {
            return Err(CommitError::Invalid(format!(
                "output out/{name} has {} links",
                meta.nlink()
            )));
        }
        total += meta.len();
        if total > limits.run.output_bytes {
            return Err(CommitError::Invalid(format!(
                "outputs exceed the limit of {} bytes",
                limits.run.output_bytes
            )));
        }
        outputs.push(Output {
            name: name.clone(),
            file,
            size: meta.len(),
        });
    }
    Ok(outputs)
}

/// An error of the host (an I/O error, the launcher out of descriptors or memory), not something
/// a plugin or the target's owner arranged: only a missing name, a link, a non-directory, a name
/// too long or a permission is about the file itself.
fn host_error(e: &std::io::Error) -> bool {
    use nix::libc;
    !matches!(
        e.raw_os_error(),
        Some(
            libc::ENOENT
                | libc::ENOTDIR
                | libc::ELOOP
                | libc::ENAMETOOLONG
                | libc::EACCES
                | libc::EPERM
        )
    )
}

/// Digest of what is at `name` in the target directory `dir` now: `None` when absent; a conflict
/// when it is not a regular file, or when it is larger than `cap` (the entry's output-bytes
/// limit: an old file is never read further than a run may write). The digest stops at a
/// cancelling signal.
fn old_digest(
    dir: &File,
    target: &Path,
    name: &str,
    cap: u64,
) -> Result<Option<Sha256>, CommitError> {
    let path = target.join(name);
    let st = match nix::sys::stat::fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
        Err(nix::errno::Errno::ENOENT) => return Ok(None),
        Err(e) => {
            return Err(CommitError::Before(LaunchError::io(
                "reading the target",
                &path,
                e.into(),
            )))
        }
        Ok(st) => st,
    };
    let kind = st.st_mode & nix::libc::S_IFMT;
    if kind != nix::libc::S_IFREG {
        return Err(CommitError::Conflict(format!(
            "{} is a {}, not a regular file",
            path.display(),
            kind_word(kind)
        )));
    }
    let (f, meta) =
        sys::fs::open_regular_at(dir.as_fd(), Path::new(name)).map_err(|e| match e {
            sys::fs::OpenError::Io(e) if host_error(&e) => {
                CommitError::Before(LaunchError::io("opening a target file", &path, e))
            }
            e => CommitError::Conflict(format!("{}: {e}", path.display())),
        })?;
    if meta.len() > cap {
        return Err(CommitError::Conflict(format!(
            "{} is {} bytes, more than the entry's output limit of {cap} bytes: an old file is \
             digested only up to that size, so it is not replaced",
            path.display(),
            meta.len()
        )));
    }
    let mut cancelled = false;
    let digested = verify::digest::digest_file_with(&f, |_| {
        if cancel::received().is_some() {
            cancelled = true;
            return Err(std::io::Error::from(std::io::ErrorKind::Interrupted));
        }
        Ok(())
    });
    if cancelled {
        cancel::check(During::Commit).map_err(CommitError::Before)?;
    }
    let (d, read) = digested
        .map_err(|e| CommitError::Before(LaunchError::io("hashing the target file", &path, e)))?;
    if read > cap {
        return Err(CommitError::Conflict(format!(
            "{} grew past the entry's output limit of {cap} bytes while it was digested",
            path.display()
        )));
    }
    Ok(Some(d))
}

fn kind_word(kind: u32) -> &'static str {
    match kind {
        nix::libc::S_IFDIR => "directory",
        nix::libc::S_IFLNK => "symbolic link",
        nix::libc::S_IFIFO => "fifo",
        nix::libc::S_IFSOCK => "socket",
        nix::libc::S_IFCHR | nix::libc::S_IFBLK => "device",
        _ => "special file",
    }
}

/// Copies `src` to a new temp file `temp` in the target directory `dir`, hashing as it goes.
fn write_temp(
    dir: &File,
    target: &Path,
    temp: &str,
    src: &File,
    size: u64,
) -> Result<(File, Sha256), LaunchError> {
    let path = target.join(temp);
    let mut dst = sys::fs::create_new_at(dir, temp, 0o644)
        .map_err(|e| LaunchError::io("creating a temp file in the target", &path, e))?;
    // The temp file is not in PREPARED yet, so nothing else would ever remove it: a failed copy
    // (ENOSPC, EFBIG, a changed output) removes its own partial temp file.
    copy_hashed(src, &mut dst, &path, size)
        .inspect_err(|_| {
            let _ = nix::unistd::unlinkat(dir, temp, nix::unistd::UnlinkatFlags::NoRemoveDir);
        })
        .map(|sha256| (dst, sha256))
}

/// Copies `src` into `dst` with the `verify` library's digest (`digest_file_with`): `dst` receives
/// exactly the bytes digested.
fn copy_hashed(src: &File, dst: &mut File, path: &Path, size: u64) -> Result<Sha256, LaunchError> {
    let mut writing_failed = false;
    let (sha256, copied) = verify::digest::digest_file_with(src, |chunk| {
        dst.write_all(chunk).inspect_err(|_| writing_failed = true)
    })
    .map_err(|e| {
        let step = if writing_failed {
            "writing a temp file in the target"
        } else {
            "reading an output"
        };
        LaunchError::io(step, path, e)
    })?;
    if copied != size {
        return Err(LaunchError::io(
            "copying an output",
            path,
            std::io::Error::other(format!(
                "output changed size while copied ({size} -> {copied})"
            )),
        ));
    }
    Ok(sha256)
}

/// Makes the temp files durable, their names too: one fsync each and one of the target
/// directory for a few, one syncfs for many.
fn sync_temps(target_dir: &File, temps: &[File], target: &Path) -> Result<(), LaunchError> {
    if temps.len() <= 8 {
        for f in temps {
            f.sync_data()
                .map_err(|e| LaunchError::io("syncing a temp file", target, e))?;
        }
        target_dir
            .sync_all()
            .map_err(|e| LaunchError::io("syncing the target directory", target, e))
    } else {
        nix::unistd::syncfs(target_dir)
            .map_err(|e| LaunchError::io("syncfs on the target", target, e.into()))
    }
}

fn remove_temps(dir: &File, prepared: &[PreparedFile]) {
    for p in prepared {
        let _ = nix::unistd::unlinkat(
            dir,
            p.temp.as_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
    }
}

/// Takes the target's commit lock (`txn::lock`: an exclusive flock on the held target
/// directory, released when the descriptor closes or the process dies): one commit at a time per
/// target directory, whatever path each launch named it by. Waits while another holds it, ended
/// by a cancelling signal; returns whether it waited.
pub fn lock_target(dir: &File, target: &Path, during: During) -> Result<bool, LaunchError> {
    txn::lock::lock_target(dir, || cancel::check(during)).map_err(|e| match e {
        txn::lock::LockError::Io(e) => LaunchError::io("locking the target", target, e),
        txn::lock::LockError::Cancelled(e) => e,
    })
}

/// Commits the outputs named by the plugin's response, read from the open directory `out_dir` (the
/// stage's `out/`), into the held `target`: under its commit lock ([`lock_target`], `waited` says
/// whether the launch waited for it), refused while a PREPARED run of this state is pending there
/// ([`txn::pending::find_locked`]; a run it cannot read fails the commit as `io`).
pub fn commit(
    run: &mut RunDir,
    out_dir: &File,
    target: &Target,
    names: &[String],
    limits: &RunLimits,
    waited: &mut bool,
) -> Result<Vec<OutputFile>, CommitError> {
    let outputs = validate(out_dir, names, limits)?;
    let target_dir = &target.dir;
    let path = target.path.as_path();
    *waited = lock_target(target_dir, path, During::Commit).map_err(CommitError::Before)?;
    let committed = commit_locked(run, outputs, target, limits);
    // Released after COMMITTED (or the failure): the next commit there sees this run's end.
    let _ = target_dir.unlock();
    committed
}

fn commit_locked(
    run: &mut RunDir,
    outputs: Vec<Output>,
    target: &Target,
    limits: &RunLimits,
) -> Result<Vec<OutputFile>, CommitError> {
    let target_dir = &target.dir;
    let target_path = target.path.as_path();
    // Authoritative, under the target's lock: a run that cannot be read fails the commit (it
    // may be a pending run), never counts as none.
    match txn::pending::find_locked(&run.txn(), Some(&run.txid), &target.path, &target.dir) {
        Ok(None) => {}
        Ok(Some(txid)) => return Err(CommitError::Pending(txid)),
        Err(e) => {
            return Err(CommitError::Before(LaunchError::io(
                "reading the runs that may be pending in the target",
                e.path,
                e.source,
            )))
        }
    }
    // BEGIN names the target: durable before the first temp file is created there.
    run.sync_intent()
        .map_err(|e| CommitError::Before(e.into()))?;
    let mut prepared = Vec::with_capacity(outputs.len());
    let mut temps = Vec::with_capacity(outputs.len());
    let result = (|| {
        for (i, o) in outputs.into_iter().enumerate() {
            cancel::check(During::Commit).map_err(CommitError::Before)?;
            let old = old_digest(target_dir, target_path, &o.name, limits.run.output_bytes)?;
            let temp = proto::layout::target_temp(&run.txid, i);
            let (file, sha256) = write_temp(target_dir, target_path, &temp, &o.file, o.size)
                .map_err(CommitError::Before)?;
            prepared.push(PreparedFile {
                name: o.name,
                temp,
                size: o.size,
                sha256,
                old,
            });
            temps.push(file);
        }
        sync_temps(target_dir, &temps, target_path).map_err(CommitError::Before)?;
        failpoint("after-temp");
        crate::hooks::pause_at("after-temp");
        // The last moment a signal cancels the run: from PREPARED on, the commit is finished.
        cancel::check(During::Commit).map_err(CommitError::Before)?;
        let record = Record::Prepared {
            v: RECORD_VERSION,
            seq: run.seq(),
            at_ms: now_ms(),
            target: target_path.display().to_string(),
            target_id: Some(target.id),
            files: prepared.clone(),
            sum: None,
        };
        run.append(&record, true)
            .map_err(|e| CommitError::Before(e.into()))
    })();
    if let Err(e) = result {
        remove_temps(target_dir, &prepared);
        return Err(e);
    }
    failpoint("after-prepared");
    crate::hooks::pause_at("after-prepared");
    rename_all(target_dir, target_path, &prepared).map_err(CommitError::After)?;
    failpoint("before-committed");
    let record = Record::Committed {
        v: RECORD_VERSION,
        seq: run.seq(),
        at_ms: now_ms(),
        sum: None,
    };
    let outputs = prepared
        .into_iter()
        .map(|p| OutputFile {
            name: p.name,
            size: p.size,
            sha256: p.sha256,
        })
        .collect();
    match run.append(&record, true) {
        Ok(()) => Ok(outputs),
        Err(e) => Err(CommitError::Unrecorded(outputs, Box::new(e.into()))),
    }
}

/// Renames every temp file onto its name, then makes the target directory durable.
pub fn rename_all(
    target_dir: &File,
    target: &Path,
    files: &[PreparedFile],
) -> Result<(), LaunchError> {
    for (i, f) in files.iter().enumerate() {
        if i == 1 {
            failpoint("between-renames");
        }
        nix::fcntl::renameat(target_dir, f.temp.as_str(), target_dir, f.name.as_str())
            .map_err(|e| LaunchError::io("renaming into place", target.join(&f.name), e.into()))?;
    }
    target_dir
        .sync_all()
        .map_err(|e| LaunchError::io("syncing the target directory", target, e))
}

#[cfg(test)]
mod tests {
    use super::output_name_problem;

    #[test]
    fn an_output_name_is_one_plain_component_a_person_reads_as_written() {
        let long = "x".repeat(256);
        // (name, the start of why it is refused, or None when accepted)
        let cases: [(&str, Option<&str>); 16] = [
            ("hello.txt", None),
            ("a b", None),
            ("naïve.csv", None),
            ("..hidden", None),
            (&long[..255], None),
            ("", Some("is not a file name")),
            (".", Some("is not a file name")),
            ("..", Some("is not a file name")),
            (&long, Some("is 256 bytes, over 255")),
            ("a/b", Some("is not a single path component")),
            ("/etc", Some("is not a single path component")),
            ("a\0b", Some("is not a single path component")),
            (".dot-0-1.tmp", Some("starts with .dot-")),
            (
                "a\nb",
                Some("holds the control or formatting character U+000A"),
            ),
            (
                "evil\u{202E}txt",
                Some("holds the control or formatting character U+202E"),
            ),
            (
                "\u{1b}[31m",
                Some("holds the control or formatting character U+001B"),
            ),
        ];
        for (name, refused) in cases {
            match (output_name_problem(name), refused) {
                (None, None) => {}
                (Some(why), Some(start)) => assert!(why.starts_with(start), "{name:?}: {why}"),
                (got, expected) => panic!("{name:?}: {got:?}, expected {expected:?}"),
            }
        }
    }
}
