//! The durable commit (`launch::commit::commit`: temp files made durable, durable PREPARED,
//! renames, target directory fsync, durable COMMITTED) against the unsynced floor: the same temp
//! files written and renamed into a fresh target with no sync of any kind.

use crate::stats::{summarize, Summary};
use crate::BenchError;
use launch::exec::RunLimits;
use launch::rundir::RunDir;
use proto::layout::Root;
use proto::limits::Limits;
use serde::{Deserialize, Serialize};
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitResult {
    pub files: usize,
    pub size: usize,
    pub durable: Summary,
    pub floor: Summary,
}

fn mkdir(path: &Path) -> Result<(), BenchError> {
    DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(path)
        .map_err(|e| BenchError::io("creating", path.display(), e))
}

/// `files` outputs of `size` bytes in `dir`, named `out-N.dat`.
fn make_outputs(dir: &Path, files: usize, size: usize) -> Result<Vec<String>, BenchError> {
    mkdir(dir)?;
    (0..files)
        .map(|i| {
            let name = format!("out-{i}.dat");
            let bytes: Vec<u8> = (0..size).map(|b| (b + i) as u8).collect();
            let path = dir.join(&name);
            std::fs::write(&path, bytes)
                .map_err(|e| BenchError::io("writing", path.display(), e))?;
            Ok(name)
        })
        .collect()
}

/// The floor: copy each output to a temp file in `target`, then rename each onto its name.
fn floor(src: &Path, target: &Path, names: &[String]) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut temps = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        buf.clear();
        File::open(src.join(name))?.read_to_end(&mut buf)?;
        let temp = format!(".floor-{i}.tmp");
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc_flags())
            .open(target.join(&temp))?;
        f.write_all(&buf)?;
        temps.push((temp, f));
    }
    for (name, (temp, _)) in names.iter().zip(&temps) {
        std::fs::rename(target.join(temp), target.join(name))?;
    }
    Ok(())
}

fn libc_flags() -> i32 {
    nix::libc::O_CLOEXEC | nix::libc::O_NOFOLLOW
}

fn limits(files: usize) -> RunLimits {
    let standard = Limits::STANDARD;
    let run = Limits {
        outputs: standard.outputs.max(files as u64),
        output_bytes: standard.output_bytes.max(1 << 30),
        cpu_seconds: Some(31),
        ..standard
    };
    let streams = launch::exec::StreamLimits {
        stderr: launch::exec::StderrMode::Discard,
        max_stdout: 1 << 20,
        max_stderr: 64 << 10,
        report_denials: false,
    };
    RunLimits::new(&run, streams)
}

fn durable_once(root: &Root, target: &Path, files: usize, size: usize) -> Result<f64, BenchError> {
    let mut run = RunDir::create(root).map_err(|e| BenchError::CommandFailed {
        command: "RunDir::create".into(),
        why: e.to_string(),
    })?;
    let out = run.stage().join("out");
    let names = make_outputs(&out, files, size)?;
    mkdir(target)?;
    let out_dir =
        std::fs::File::open(&out).map_err(|e| BenchError::io("opening", out.display(), e))?;
    let held = std::fs::canonicalize(target)
        .map_err(|e| BenchError::io("resolving", target.display(), e))
        .and_then(|abs| {
            launch::target::Target::open(&abs).map_err(|e| BenchError::CommandFailed {
                command: "Target::open".into(),
                why: e.to_string(),
            })
        })?;
    let start = Instant::now();
    let mut waited = false;
    let committed = launch::commit::commit(
        &mut run,
        &out_dir,
        &held,
        &names,
        &limits(files),
        &mut waited,
    );
    let us = start.elapsed().as_secs_f64() * 1e6;
    let failed = |why: String| BenchError::CommandFailed {
        command: "launch::commit::commit".into(),
        why,
    };
    match committed {
        Ok(out) if out.len() == files => {}
        Ok(out) => return Err(failed(format!("{} of {files} outputs", out.len()))),
        Err(e) => return Err(failed(format!("{e:?}"))),
    }
    run.remove().map_err(|e| failed(e.to_string()))?;
    Ok(us)
}

fn floor_once(scratch: &Path, target: &Path, files: usize, size: usize) -> Result<f64, BenchError> {
    let src = scratch.join("floor-src");
    let names = make_outputs(&src, files, size)?;
    mkdir(target)?;
    let start = Instant::now();
    floor(&src, target, &names)
        .map_err(|e| BenchError::io("floor commit into", target.display(), e))?;
    let us = start.elapsed().as_secs_f64() * 1e6;
    std::fs::remove_dir_all(&src).map_err(|e| BenchError::io("removing", src.display(), e))?;
    Ok(us)
}

/// `runs` durable commits and `runs` floor commits, alternating, each into a fresh directory.
pub fn bench(
    dir: &Path,
    files: usize,
    size: usize,
    runs: usize,
) -> Result<CommitResult, BenchError> {
    let root_dir = dir.join("root");
    mkdir(&root_dir.join("txn"))?;
    let root = Root::single(&root_dir);
    let (mut durable, mut floors) = (Vec::new(), Vec::new());
    let warmup = 2;
    for i in 0..runs + warmup {
        let targets: [PathBuf; 2] = [dir.join(format!("d{i}")), dir.join(format!("f{i}"))];
        let d = durable_once(&root, &targets[0], files, size)?;
        let f = floor_once(dir, &targets[1], files, size)?;
        if i >= warmup {
            durable.push(d);
            floors.push(f);
        }
        for t in &targets {
            std::fs::remove_dir_all(t).map_err(|e| BenchError::io("removing", t.display(), e))?;
        }
    }
    Ok(CommitResult {
        files,
        size,
        durable: summarize(&durable),
        floor: summarize(&floors),
    })
}
