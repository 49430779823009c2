//! Committing a successful run's outputs: validate, write temp files in the target directory and
//! make them durable, append a durable PREPARED, rename each into place, make the target directory
//! durable, append COMMITTED.

use crate::cancel::{self, During};
use crate::error::LaunchError;
use crate::exec::Limits;
use crate::hooks::failpoint;
use crate::rundir::{now_ms, RunDir};
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

fn validate(out_dir: &File, names: &[String], limits: &Limits) -> Result<Vec<Output>, CommitError> {
    if names.len() > limits.max_outputs {
        return Err(CommitError::Invalid(format!(
            "{} outputs, more than the limit of {}",
            names.len(),
            limits.max_outputs
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
                sys::fs::OpenError::Io(e) if out_of_descriptors(&e) => CommitError::Before(
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
        if total > limits.max_output_bytes {
            return Err(CommitError::Invalid(format!(
                "outputs exceed the limit of {} bytes",
                limits.max_output_bytes
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

/// The launcher itself ran out of descriptors (or the system did): its failure, not the plugin's.
fn out_of_descriptors(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(nix::libc::EMFILE | nix::libc::ENFILE)
    )
}

/// Digest of what is at `target/name` now: `None` when absent; a conflict when it is not a regular file.
fn old_digest(target: &Path, name: &str) -> Result<Option<Sha256>, CommitError> {
    let path = target.join(name);
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CommitError::Before(LaunchError::io(
            "reading the target",
            &path,
            e,
        ))),
        Ok(m) if !m.file_type().is_file() => Err(CommitError::Conflict(format!(
            "{} is a {}, not a regular file",
            path.display(),
            sys::fs::file_kind(&m)
        ))),
        Ok(_) => {
            let (f, _) = sys::fs::open_regular(&path).map_err(|e| match e {
                sys::fs::OpenError::Io(e) if out_of_descriptors(&e) => {
                    CommitError::Before(LaunchError::io("opening a target file", &path, e))
                }
                e => CommitError::Conflict(format!("{}: {e}", path.display())),
            })?;
            let (d, _) = verify::digest::digest_file(&f).map_err(|e| {
                CommitError::Before(LaunchError::io("hashing the target file", &path, e))
            })?;
            Ok(Some(d))
        }
    }
}

/// Copies `src` to a new temp file in `target`, hashing as it goes.
fn write_temp(
    target: &Path,
    temp: &str,
    src: &File,
    size: u64,
) -> Result<(File, Sha256), LaunchError> {
    let path = target.join(temp);
    let mut dst = sys::fs::create_new(&path, 0o644)
        .map_err(|e| LaunchError::io("creating a temp file in the target", &path, e))?;
    // The temp file is not in PREPARED yet, so nothing else would ever remove it: a failed copy
    // (ENOSPC, EFBIG, a changed output) removes its own partial temp file.
    copy_hashed(src, &mut dst, &path, size)
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&path);
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

/// Makes the temp files durable: one fsync each for a few, one syncfs for many.
fn sync_temps(target_dir: &File, temps: &[File], target: &Path) -> Result<(), LaunchError> {
    if temps.len() <= 8 {
        for f in temps {
            f.sync_data()
                .map_err(|e| LaunchError::io("syncing a temp file", target, e))?;
        }
        Ok(())
    } else {
        nix::unistd::syncfs(target_dir)
            .map_err(|e| LaunchError::io("syncfs on the target", target, e.into()))
    }
}

fn remove_temps(target: &Path, prepared: &[PreparedFile]) {
    for p in prepared {
        let _ = std::fs::remove_file(target.join(&p.temp));
    }
}

/// Commits the outputs named by the plugin's response, read from the open directory `out_dir` (the
/// stage's `out/`), into `target`.
pub fn commit(
    run: &mut RunDir,
    out_dir: &File,
    target: &Path,
    names: &[String],
    limits: &Limits,
) -> Result<Vec<OutputFile>, CommitError> {
    let outputs = validate(out_dir, names, limits)?;
    let target_dir = sys::fs::open_dir(target).map(File::from).map_err(|e| {
        CommitError::Before(LaunchError::io("opening the target", target, e.into()))
    })?;
    // BEGIN names the target: durable before the first temp file is created there.
    run.sync_intent().map_err(CommitError::Before)?;
    let mut prepared = Vec::with_capacity(outputs.len());
    let mut temps = Vec::with_capacity(outputs.len());
    let result = (|| {
        for (i, o) in outputs.into_iter().enumerate() {
            cancel::check(During::Commit).map_err(CommitError::Before)?;
            let old = old_digest(target, &o.name)?;
            let temp = proto::layout::target_temp(&run.txid, i);
            let (file, sha256) =
                write_temp(target, &temp, &o.file, o.size).map_err(CommitError::Before)?;
            prepared.push(PreparedFile {
                name: o.name,
                temp,
                size: o.size,
                sha256,
                old,
            });
            temps.push(file);
        }
        sync_temps(&target_dir, &temps, target).map_err(CommitError::Before)?;
        failpoint("after-temp");
        crate::hooks::pause_at("after-temp");
        // The last moment a signal cancels the run: from PREPARED on, the commit is finished.
        cancel::check(During::Commit).map_err(CommitError::Before)?;
        let record = Record::Prepared {
            v: RECORD_VERSION,
            seq: run.seq(),
            at_ms: now_ms(),
            target: target.display().to_string(),
            files: prepared.clone(),
            sum: None,
        };
        run.append(&record, true).map_err(CommitError::Before)
    })();
    if let Err(e) = result {
        remove_temps(target, &prepared);
        return Err(e);
    }
    failpoint("after-prepared");
    crate::hooks::pause_at("after-prepared");
    rename_all(&target_dir, target, &prepared).map_err(CommitError::After)?;
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
        Err(e) => Err(CommitError::Unrecorded(outputs, Box::new(e))),
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
