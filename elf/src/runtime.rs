//! What `process` can run with a declared runtime (`--runtime DIR`): besides a static ELF, a script
//! whose `#!` interpreter lies in a runtime directory, or a dynamically linked ELF whose interpreter
//! (`PT_INTERP`) and every shared library it needs (`DT_NEEDED`, found as the dynamic loader would:
//! `DT_RUNPATH`/`DT_RPATH`, then the system directories) resolve inside the runtime directories.
//! Paths are resolved on the host, symbolic links followed, before the run's private root exists;
//! in that root only the runtime directories exist, so anything outside them could not load there
//! anyway: the check says so before the run, with the name that failed.
//!
//! The plugin's own segments follow the rule of the static case (no segment both writable and
//! executable, `PT_GNU_STACK` without execute, no text relocations): the loader maps the program
//! as the kernel would. Its libraries are the host's files, not pinned — but nobody but root or
//! the invoker may be able to change them: each runtime directory is named by a path of real
//! directories (no symbolic link at any level), and it, every directory on its path and every
//! directory and file from it down to the interpreter and each library is owned by root or the
//! invoker and writable by no one else (a sticky directory on the way to a runtime, as `/tmp`,
//! lets only the owner of an entry replace it, and is allowed there). What a program opens from
//! its runtime at run time beyond those (a script's modules) is not checked: docs/security.md.

use crate::{check_static_elf, ElfError, ElfFacts};
use goblin::elf::dynamic::{DF_TEXTREL, DT_FLAGS, DT_TEXTREL};
use proto::entry::RuntimeDir;
use proto::{Kind, ToErrorObject};
use std::fs::File;
use std::path::{Path, PathBuf};

/// The largest script line or ELF file read to decide (a plugin, an interpreter, a library).
const MAX_ELF: u64 = 512 << 20;
/// The longest `#!` line the kernel reads (`BINPRM_BUF_SIZE`).
const MAX_SHEBANG: usize = 256;
/// The most libraries followed, all levels together.
const MAX_LIBRARIES: usize = 512;
/// Where the dynamic loader looks after the run paths (x86-64 Debian and most others).
const SYSTEM_DIRS: &[&str] = &[
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
];

/// What a plugin is, for the runner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Program {
    /// A static ELF: all that runs is pinned.
    Static(ElfFacts),
    /// A dynamically linked ELF: its interpreter and libraries (as resolved on the host).
    Dynamic {
        interpreter: PathBuf,
        libraries: Vec<PathBuf>,
    },
    /// A script: its interpreter (as resolved on the host).
    Script { interpreter: PathBuf },
}

impl Program {
    /// `static`, `dynamic` or `script` (what reports and docs call it).
    pub fn word(&self) -> &'static str {
        match self {
            Program::Static(_) => "static",
            Program::Dynamic { .. } => "dynamic",
            Program::Script { .. } => "script",
        }
    }
}

/// How far to follow: the plugin's own interpreter and libraries (the runner, on every launch), or
/// every library of those too (registration and `dot-verify`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depth {
    Plugin,
    All,
}

/// Why a plugin cannot run with its runtime.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// Not a static ELF, and no runtime declared: what the static rule said.
    #[error("{0} (a script or dynamic program needs --runtime DIR at process)")]
    Static(ElfError),
    /// The plugin's own headers break the rule.
    #[error("{0}")]
    Elf(ElfError),
    #[error("{what} {path} is not inside the runtime directories ({runtime}): it resolves to {resolved}")]
    Outside {
        what: &'static str,
        path: String,
        resolved: String,
        runtime: String,
    },
    #[error("{what} {name} is not found{searched}")]
    NotFound {
        what: &'static str,
        name: String,
        searched: String,
    },
    #[error("runtime directory {dir} is not a directory: {reason}")]
    BadDir { dir: String, reason: String },
    /// Not a place a runtime may be: a filesystem of the kernel's (`/proc`, `/sys`, …), outside the
    /// host trees the root's policy allows, or holding the platform root.
    #[error("runtime directory {dir} {reason}")]
    NotAllowed { dir: String, reason: String },
    /// Someone but root and the invoker could change what the run executes from its runtime.
    #[error("{what} {path} {reason}: anyone who can change it chooses what the plugin runs")]
    Unsafe {
        what: &'static str,
        path: String,
        reason: String,
    },
    #[error("script interpreter line {line:?}: {reason}")]
    Shebang { line: String, reason: &'static str },
    #[error("{what} {path} could not be read: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
}

impl ToErrorObject for RuntimeError {
    fn kind(&self) -> Kind {
        match self {
            RuntimeError::Static(e) | RuntimeError::Elf(e) => e.kind(),
            RuntimeError::Io { .. } => Kind::Io,
            RuntimeError::Unsafe { .. } => Kind::RuntimeUnsafe,
            RuntimeError::NotAllowed { .. } => Kind::RuntimeNotAllowed,
            _ => Kind::RuntimeUnresolved,
        }
    }

    fn to_error_object(&self) -> proto::ErrorObject {
        let obj = proto::ErrorObject::new(self.kind(), self.to_string());
        match self {
            RuntimeError::Outside { path, .. } => obj.field("runtime").value(path.clone()),
            RuntimeError::NotFound { name, .. } => obj.field("runtime").value(name.clone()),
            RuntimeError::BadDir { dir, .. } => obj.field("runtime").value(dir.clone()),
            RuntimeError::Unsafe { path, .. } => obj.field("runtime").value(path.clone()),
            RuntimeError::NotAllowed { dir, .. } => obj.field("runtime").value(dir.clone()),
            RuntimeError::Shebang { line, .. } => obj.field("interpreter").value(line.clone()),
            _ => obj,
        }
    }
}

/// Decides what the open `plugin` is and checks it can run with `runtime` (none: only a static
/// ELF can).
pub fn check_program(
    plugin: &File,
    runtime: &[RuntimeDir],
    depth: Depth,
) -> Result<Program, RuntimeError> {
    let err = match check_static_elf(plugin) {
        Ok(facts) => return Ok(Program::Static(facts)),
        Err(e) => e,
    };
    if runtime.is_empty() {
        return Err(RuntimeError::Static(err));
    }
    let dirs = runtime_dirs(runtime)?;
    match err {
        ElfError::Script => {
            let interpreter = shebang(plugin)?;
            let resolved = inside(&dirs, "interpreter", &interpreter)?;
            if depth == Depth::All {
                let file = open("interpreter", &resolved)?;
                match check_static_elf(&file) {
                    Ok(_) => {}
                    Err(ElfError::Interpreter | ElfError::Needed) => {
                        dynamic(&file, &dirs, depth)?;
                    }
                    Err(ElfError::Script) => {
                        return Err(RuntimeError::Shebang {
                            line: interpreter.display().to_string(),
                            reason: "the interpreter is itself a script",
                        })
                    }
                    Err(e) => return Err(RuntimeError::Elf(e)),
                }
            }
            Ok(Program::Script {
                interpreter: resolved,
            })
        }
        ElfError::Interpreter | ElfError::Needed => {
            let (interpreter, libraries) = dynamic(plugin, &dirs, depth)?;
            Ok(Program::Dynamic {
                interpreter,
                libraries,
            })
        }
        other => Err(RuntimeError::Elf(other)),
    }
}

/// The runtime directories, each named by a path of real directories that only root or the
/// invoker can change ([`check_dir_path`]).
fn runtime_dirs(runtime: &[RuntimeDir]) -> Result<Vec<PathBuf>, RuntimeError> {
    runtime
        .iter()
        .map(|d| {
            let path = PathBuf::from(d.as_str());
            check_dir_path(&path)?;
            Ok(path)
        })
        .collect()
}

/// Whether `uid` may own what a run executes: root, or the user checking it.
fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == nix::unistd::geteuid().as_raw()
}

/// Why `meta` (of `path`) lets someone but root and the invoker change it, if it does.
/// `sticky_ok`: a sticky directory writable by others is allowed (a directory on the way).
fn unsafe_because(meta: &std::fs::Metadata, sticky_ok: bool) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    // A link's own mode means nothing, and only who may write its directory can replace it.
    if meta.file_type().is_symlink() {
        return None;
    }
    if !trusted_owner(meta.uid()) {
        return Some(format!("is owned by uid {}", meta.uid()));
    }
    let mode = meta.mode() & 0o7777;
    let sticky = mode & 0o1000 != 0 && meta.is_dir();
    if mode & 0o022 != 0 && !(sticky_ok && sticky) {
        return Some(format!(
            "is writable by its group or others (mode {mode:o})"
        ));
    }
    None
}

/// A declared runtime directory: every component of its (absolute) path, itself included, a real
/// directory — no symbolic link — owned by root or the invoker and writable by no one else (a
/// sticky directory on the way excepted).
fn check_dir_path(dir: &Path) -> Result<(), RuntimeError> {
    let bad = |reason: String| RuntimeError::BadDir {
        dir: dir.display().to_string(),
        reason,
    };
    let mut at = PathBuf::from("/");
    let parts: Vec<_> = dir.components().skip(1).collect();
    for i in 0..=parts.len() {
        if i > 0 {
            at.push(parts[i - 1]);
        }
        let meta =
            std::fs::symlink_metadata(&at).map_err(|e| bad(format!("{}: {e}", at.display())))?;
        if meta.file_type().is_symlink() {
            return Err(bad(format!(
                "{} is a symbolic link: name the directory it leads to",
                at.display()
            )));
        }
        if !meta.is_dir() {
            return Err(bad(format!("{} is not a directory", at.display())));
        }
        if let Some(reason) = unsafe_because(&meta, i < parts.len()) {
            return Err(RuntimeError::Unsafe {
                what: if i < parts.len() {
                    "the directory"
                } else {
                    "runtime directory"
                },
                path: at.display().to_string(),
                reason,
            });
        }
    }
    if let Some(kind) = kernel_filesystem(dir)? {
        return Err(RuntimeError::NotAllowed {
            dir: dir.display().to_string(),
            reason: format!("is a {kind} filesystem: the kernel's view of the host, not a runtime"),
        });
    }
    Ok(())
}

/// The kernel filesystem `dir` is on, if it is one (`proto::entry::KERNEL_FILESYSTEMS`).
fn kernel_filesystem(dir: &Path) -> Result<Option<&'static str>, RuntimeError> {
    let fs = nix::sys::statfs::statfs(dir).map_err(|e| RuntimeError::BadDir {
        dir: dir.display().to_string(),
        reason: format!("statfs: {e}"),
    })?;
    Ok(proto::entry::kernel_filesystem(fs.filesystem_type().0))
}

/// A file the run executes or maps from its runtime (`resolved`, inside `dir`): it and every
/// directory from `dir` down to it owned by root or the invoker and writable by no one else.
fn check_held(dir: &Path, what: &'static str, resolved: &Path) -> Result<(), RuntimeError> {
    let mut at = resolved.to_path_buf();
    loop {
        let meta = std::fs::symlink_metadata(&at).map_err(|source| RuntimeError::Io {
            what,
            path: at.display().to_string(),
            source,
        })?;
        if let Some(reason) = unsafe_because(&meta, false) {
            return Err(RuntimeError::Unsafe {
                what: if at == resolved {
                    what
                } else {
                    "the directory"
                },
                path: at.display().to_string(),
                reason,
            });
        }
        if at == dir || !at.pop() || !at.starts_with(dir) {
            return Ok(());
        }
    }
}

/// `path` resolved (links followed), if it exists and lies inside one of `dirs` (as the host
/// resolves them), and only root or the invoker can change it ([`check_held`]).
fn inside(dirs: &[PathBuf], what: &'static str, path: &Path) -> Result<PathBuf, RuntimeError> {
    let resolved = std::fs::canonicalize(path).map_err(|_| RuntimeError::NotFound {
        what,
        name: path.display().to_string(),
        searched: String::new(),
    })?;
    // The directory the path is named in, when that is inside a runtime too: whoever could write
    // it could replace a link there that leads to the file resolved.
    if let (Some(dir), Some(named_in)) = (dirs.iter().find(|d| path.starts_with(d)), path.parent())
    {
        check_held(dir, "the directory", named_in)?;
    }
    // The directories are real paths already (`check_dir_path`: no symbolic link, normalized).
    if let Some(dir) = dirs.iter().find(|d| resolved.starts_with(d)) {
        check_held(dir, what, &resolved)?;
        Ok(resolved)
    } else {
        Err(RuntimeError::Outside {
            what,
            path: path.display().to_string(),
            resolved: resolved.display().to_string(),
            runtime: dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })
    }
}

/// The interpreter a script's `#!` line names: an absolute path, and not `env` (which would look
/// its program up in `PATH` and execute it: the run has neither).
fn shebang(plugin: &File) -> Result<PathBuf, RuntimeError> {
    let mut head = vec![0u8; MAX_SHEBANG];
    let n = read_prefix(plugin, &mut head).map_err(|source| RuntimeError::Io {
        what: "script",
        path: "the plugin".into(),
        source,
    })?;
    let head = &head[..n];
    let line_end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    let line = String::from_utf8_lossy(&head[2..line_end])
        .trim()
        .to_owned();
    let bad = |reason| RuntimeError::Shebang {
        line: line.clone(),
        reason,
    };
    let interpreter = line
        .split_whitespace()
        .next()
        .ok_or_else(|| bad("no interpreter"))?;
    if !interpreter.starts_with('/') {
        return Err(bad("the interpreter must be an absolute path"));
    }
    if Path::new(interpreter)
        .file_name()
        .is_some_and(|f| f == "env")
    {
        return Err(bad(
            "env looks its program up in PATH and executes it, which a run can do neither of: name the interpreter itself (e.g. #!/usr/bin/python3)",
        ));
    }
    Ok(PathBuf::from(interpreter))
}

fn read_prefix(file: &File, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], done as u64)? {
            0 => break,
            n => done += n,
        }
    }
    Ok(done)
}

fn open(what: &'static str, path: &Path) -> Result<File, RuntimeError> {
    File::open(path).map_err(|source| RuntimeError::Io {
        what,
        path: path.display().to_string(),
        source,
    })
}

/// The whole file (at most [`MAX_ELF`] bytes), by positioned reads from offset 0.
fn read_all(what: &'static str, path: &str, file: &File) -> Result<Vec<u8>, RuntimeError> {
    use std::os::unix::fs::FileExt;
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = file
            .read_at(&mut chunk, bytes.len() as u64)
            .map_err(|source| RuntimeError::Io {
                what,
                path: path.to_owned(),
                source,
            })?;
        if n == 0 {
            return Ok(bytes);
        }
        bytes.extend_from_slice(&chunk[..n]);
        if bytes.len() as u64 > MAX_ELF {
            return Err(RuntimeError::Elf(ElfError::Malformed(format!(
                "{what} {path} is larger than {MAX_ELF} bytes"
            ))));
        }
    }
}

/// The program's interpreter and libraries, resolved inside `dirs` (with [`Depth::All`], the
/// libraries' own too), after checking the program's segments.
fn dynamic(
    file: &File,
    dirs: &[PathBuf],
    depth: Depth,
) -> Result<(PathBuf, Vec<PathBuf>), RuntimeError> {
    let bytes = read_all("program", "the plugin", file)?;
    let elf = goblin::elf::Elf::parse(&bytes)
        .map_err(|e| RuntimeError::Elf(ElfError::Malformed(e.to_string())))?;
    check_segments(&elf)?;
    let interp = elf.interpreter.ok_or_else(|| RuntimeError::NotFound {
        what: "interpreter",
        name: "(PT_INTERP)".into(),
        searched: " in the program headers".into(),
    })?;
    let interpreter = inside(dirs, "interpreter", Path::new(interp))?;
    let mut libraries = Vec::new();
    let mut queue: Vec<(String, Vec<String>)> = elf
        .libraries
        .iter()
        .map(|l| (l.to_string(), run_paths(&elf)))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    while let Some((name, paths)) = queue.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if seen.len() > MAX_LIBRARIES {
            return Err(RuntimeError::Elf(ElfError::Malformed(format!(
                "more than {MAX_LIBRARIES} shared libraries"
            ))));
        }
        let path = find_library(&name, &paths)?;
        let resolved = inside(dirs, "library", &path)?;
        if depth == Depth::All {
            let lib = open("library", &resolved)?;
            let bytes = read_all("library", &resolved.display().to_string(), &lib)?;
            let lib_elf = goblin::elf::Elf::parse(&bytes).map_err(|e| RuntimeError::Io {
                what: "library",
                path: resolved.display().to_string(),
                source: std::io::Error::other(e.to_string()),
            })?;
            let paths = run_paths(&lib_elf);
            for l in &lib_elf.libraries {
                queue.push((l.to_string(), paths.clone()));
            }
        }
        libraries.push(resolved);
    }
    Ok((interpreter, libraries))
}

/// `DT_RUNPATH` (or, without one, `DT_RPATH`) directories, `$ORIGIN` ones left out (a plugin run
/// from its descriptor has no origin).
fn run_paths(elf: &goblin::elf::Elf<'_>) -> Vec<String> {
    let list = if elf.runpaths.is_empty() {
        &elf.rpaths
    } else {
        &elf.runpaths
    };
    list.iter()
        .flat_map(|p| p.split(':'))
        .filter(|p| p.starts_with('/') && !p.contains("$ORIGIN"))
        .map(str::to_owned)
        .collect()
}

/// Where the loader would find library `name`: a path as it is, else the first run path or
/// system directory that holds it.
fn find_library(name: &str, paths: &[String]) -> Result<PathBuf, RuntimeError> {
    if name.contains('/') {
        return Ok(PathBuf::from(name));
    }
    let dirs: Vec<&str> = paths
        .iter()
        .map(String::as_str)
        .chain(SYSTEM_DIRS.iter().copied())
        .collect();
    dirs.iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| RuntimeError::NotFound {
            what: "library",
            name: name.to_owned(),
            searched: format!(" in {}", dirs.join(", ")),
        })
}

/// The program's own segments by the static rule's segment checks (`crate::check_segments`), and
/// no text relocations.
fn check_segments(elf: &goblin::elf::Elf<'_>) -> Result<(), RuntimeError> {
    crate::check_segments(&elf.program_headers).map_err(RuntimeError::Elf)?;
    if let Some(d) = &elf.dynamic {
        for dy in &d.dyns {
            if dy.d_tag == DT_TEXTREL || (dy.d_tag == DT_FLAGS && dy.d_val & DF_TEXTREL != 0) {
                return Err(RuntimeError::Elf(ElfError::TextRel));
            }
        }
    }
    Ok(())
}
