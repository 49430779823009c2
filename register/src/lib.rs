//! `dot-register`: create a platform root, manage its trust store, register signed plugins (and
//! local ones in a development root), remove and list them.
//!
//! Every writing command checks everything first and writes only then; writers of one root are
//! serialized by an exclusive `flock` on its `plugins.d` directory. Registry and trust files are
//! written atomically (temp file, fsync, rename, fsync directory); an executable is pinned by
//! copying exactly the bytes that were digested into `store/sha256/HEX`, mode 0555, never rewritten.
#![forbid(unsafe_code)]

pub mod args;
pub mod author;
pub mod deny;
pub mod error;
pub mod init;
pub mod install;
pub mod layers;
pub mod list;
pub mod policy;
pub mod publisher;
pub mod report;

pub use args::Args;
pub use error::RegisterError;

use args::{Command, DenyCommand, EntryCommand, PolicyCommand, PublisherCommand};
use cli::Output;
use proto::layout::Root;
use proto::trust::AuditRecord;
use proto::Name;
use std::path::Path;
use verify::VerifyError;

/// A document to sign, printed byte for byte (its JSON is UTF-8 text).
fn document(bytes: &[u8]) -> Output {
    Output::text(String::from_utf8_lossy(bytes).into_owned())
}

/// Runs one `dot-register` command.
pub fn run(args: Args) -> Result<Output, RegisterError> {
    match args.command {
        Command::Init(a) => Ok(Output::json(&init::init(
            &Root::from_args(a.root, a.state),
            a.dev,
            a.layer,
        )?)),
        Command::Publisher(p) => match p.command {
            PublisherCommand::Add(a) => {
                let id = name(&a.id)?;
                let bounds = publisher::Bounds {
                    not_before: a.not_before,
                    not_after: a.not_after,
                };
                Ok(Output::json(&publisher::add(
                    &Root::single(a.root),
                    &id,
                    &a.pubkey,
                    bounds,
                    crate::Staging::from_switch(a.staging),
                    a.level,
                    &a.names,
                )?))
            }
            PublisherCommand::Threshold(a) => {
                let id = name(&a.id)?;
                Ok(Output::json(&publisher::threshold(
                    &Root::single(a.root),
                    &id,
                    a.signatures,
                )?))
            }
            PublisherCommand::Level(a) => {
                let id = name(&a.id)?;
                Ok(Output::json(&publisher::level(
                    &Root::single(a.root),
                    &id,
                    a.level,
                )?))
            }
            PublisherCommand::Names(a) => {
                let id = name(&a.id)?;
                Ok(Output::json(&publisher::names(
                    &Root::single(a.root),
                    &id,
                    &a.names,
                )?))
            }
            PublisherCommand::Rotate(a) => {
                let id = name(&a.id)?;
                Ok(Output::json(&publisher::rotate(
                    &Root::single(&a.root),
                    &id,
                    &a,
                )?))
            }
            PublisherCommand::Revoke(a) => {
                let id = name(&a.id)?;
                let root = Root::single(a.root);
                Ok(Output::json(&publisher::revoke(
                    &root,
                    &id,
                    &a.reason,
                    a.key.as_deref(),
                )?))
            }
            PublisherCommand::List(a) => Ok(Output::json(&publisher::list(&Root::single(a.root))?)),
            PublisherCommand::Transition(a) => Ok(document(&author::transition(&a)?.to_bytes())),
        },
        Command::Add(a) => Ok(Output::json(&install::add(&a)?)),
        Command::Dev(a) => Ok(Output::json(&install::dev(&a)?)),
        Command::Remove(a) => {
            let n = name(&a.name)?;
            Ok(Output::json(&install::remove(&Root::single(a.root), &n)?))
        }
        Command::List(a) => match (a.root, a.sysroot) {
            (Some(root), None) => Ok(Output::json(&list::list(&Root::single(root))?)),
            (None, sysroot) => Ok(Output::json(&layers::list(&layers::system(sysroot))?)),
            (Some(_), Some(_)) => Err(RegisterError::Usage(
                "--sysroot moves the system layers; it cannot go with --root".into(),
            )),
        },
        Command::Mask(a) => {
            let n = name(&a.name)?;
            not_under_dot_root("mask", &n, a.sysroot.as_deref())?;
            Ok(Output::json(&layers::mask(&layers::system(a.sysroot), &n)?))
        }
        Command::Unmask(a) => {
            let n = name(&a.name)?;
            not_under_dot_root("unmask", &n, a.sysroot.as_deref())?;
            Ok(Output::json(&layers::unmask(
                &layers::system(a.sysroot),
                &n,
            )?))
        }
        Command::Deny(d) => match d.command {
            DenyCommand::Add(a) => {
                let root = Root::single(a.root);
                let t = deny::Target::from_options(
                    &root,
                    a.sha256.as_deref(),
                    a.key.as_deref(),
                    a.pubkey.as_deref(),
                )?;
                Ok(Output::json(&deny::add(&root, &t, &a.reason)?))
            }
            DenyCommand::Remove(a) => {
                let root = Root::single(a.root);
                let t = deny::Target::from_options(
                    &root,
                    a.sha256.as_deref(),
                    a.key.as_deref(),
                    a.pubkey.as_deref(),
                )?;
                Ok(Output::json(&deny::remove(&root, &t)?))
            }
            DenyCommand::List(a) => Ok(Output::json(&deny::list(&Root::single(a.root))?)),
        },
        Command::Entry(e) => match e.command {
            EntryCommand::New(a) => Ok(document(&author::entry_new(&a)?.to_bytes())),
        },
        Command::Policy(p) => match p.command {
            PolicyCommand::Set(a) => Ok(Output::json(&policy::set(&Root::single(&a.root), &a)?)),
            PolicyCommand::Show(a) => Ok(Output::json(&policy::show(&Root::single(a.root))?)),
        },
    }
}

/// `mask`/`unmask` refuse while `DOT_ROOT` names a root and no `--sysroot` was given: the
/// launches of that environment read the root `DOT_ROOT` names, which a mask of the system layers
/// does not affect, so the mask would silently do nothing for them. `--sysroot` names the system
/// layers outright (as for every tool, it ignores `DOT_ROOT`); the refusal's `next` is the same
/// command with `--sysroot /`, this machine's layers.
fn not_under_dot_root(
    command: &'static str,
    name: &Name,
    sysroot: Option<&std::path::Path>,
) -> Result<(), RegisterError> {
    let root = std::env::var_os(cli::ROOT_VAR).filter(|v| !v.is_empty());
    match (root, sysroot) {
        (Some(root), None) => Err(RegisterError::MaskUnderDotRoot {
            command,
            name: name.to_string(),
            root: root.into(),
            next: cli::Next::again(
                vec![cli::next::Opt::with("--sysroot", "/")],
                vec![],
                cli::Next::cmd("dot-register").args([command, name.as_str()]),
            ),
        }),
        _ => Ok(()),
    }
}

/// Validates a name given on the command line.
pub fn name(s: &str) -> Result<Name, RegisterError> {
    Name::new(s).map_err(|e| VerifyError::BadName(e).into())
}

/// The exclusive writer lock of a root: `flock(LOCK_EX)` on its `plugins.d` directory, held until
/// dropped. Blocks while another writer holds it.
#[derive(Debug)]
pub struct WriterLock {
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl WriterLock {
    pub fn take(root: &Root) -> Result<WriterLock, RegisterError> {
        let dir = root.plugins();
        let f = std::fs::File::open(&dir).map_err(|e| VerifyError::io(&dir, e))?;
        let lock = nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, errno)| VerifyError::io(&dir, errno.into()))?;
        Ok(WriterLock { _lock: lock })
    }
}

/// Reads an input file given on the command line (entry, signature, public key, statement): a
/// regular file (not a link), at most `limit` bytes (one more byte is read so an oversized document
/// is seen as such).
pub fn read_input_limited(path: &Path, limit: u64) -> Result<Vec<u8>, RegisterError> {
    let (bytes, _) = sys::fs::read_regular(path, limit.saturating_add(1))
        .map_err(|e| VerifyError::from_open_document(path, e))?;
    Ok(bytes)
}

pub use verify::trust::now;

/// Writes one file of the root at its `proto::layout` path, atomically (`sys::fs::atomic_write`
/// in the path's directory): mode 0600, or 0644 in a directory every user may read (a system
/// layer's, `is_layer`), so that what a layer publishes can be read by every launcher.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), RegisterError> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        let e = std::io::Error::from(std::io::ErrorKind::InvalidInput);
        return Err(VerifyError::io(path, e).into());
    };
    let meta = std::fs::metadata(dir).map_err(|e| VerifyError::io(dir, e))?;
    let mode = match readable_by_all(&meta) {
        true => 0o644,
        false => 0o600,
    };
    sys::fs::atomic_write(dir, name, bytes, mode).map_err(|e| VerifyError::io(path, e))?;
    Ok(())
}

fn readable_by_all(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.mode() & 0o005 == 0o005
}

/// Whether every user may read `root`'s registry directory (a system layer, made by
/// `init --layer`; docs/registry.md "System layers"): the documents written there are 0644.
pub fn is_layer(root: &Root) -> bool {
    std::fs::metadata(root.path()).is_ok_and(|m| m.is_dir() && readable_by_all(&m))
}

/// The check of a registry before `dot-register` reads it (`verify::root::check_root`).
pub fn check_registry(root: &Root) -> Result<verify::root::RootInfo, RegisterError> {
    Ok(verify::root::check_root(root)?)
}

/// The check of a registry before `dot-register` changes it (`verify::root::check_root_writable`:
/// it must be ours).
pub fn check_registry_writable(root: &Root) -> Result<verify::root::RootInfo, RegisterError> {
    let info = verify::root::check_root_writable(root)?;
    check_change_log(root)?;
    Ok(info)
}

/// The change log, if it exists, must be a regular file: checked before anything is written, so
/// that a FIFO (or any other file) in its place refuses the change whole instead of leaving it
/// written but unlogged. The append itself refuses one that appears later, without blocking.
fn check_change_log(root: &Root) -> Result<(), RegisterError> {
    let path = root.change_log();
    match sys::fs::check_log(&path) {
        Ok(()) => Ok(()),
        Err(e) => match sys::fs::not_regular(&e) {
            Some(kind) => Err(log_not_regular(&path, kind)),
            None => Err(VerifyError::io(&path, e).into()),
        },
    }
}

/// `root-unsafe` for a log that is not a regular file.
fn log_not_regular(path: &Path, kind: &str) -> RegisterError {
    VerifyError::RootUnsafe {
        path: path.to_path_buf(),
        reason: format!(
            "the log is a {kind}, not a plain regular file of the root's own; nothing is appended to it (remove it: the next change creates it)"
        ),
    }
    .into()
}

/// Whether a change is written for a package (`--staging`) or kept by the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Staging {
    /// A registry of the operator's: its change log and high-water versions are kept.
    No,
    /// A vendor layer staged under DESTDIR for a package: registry files only, no change log
    /// (`audit.log`) and no `trust/high-water.json` (one file cannot belong to two packages).
    Package,
}

impl Staging {
    pub fn from_switch(staging: bool) -> Staging {
        match staging {
            true => Staging::Package,
            false => Staging::No,
        }
    }
}

/// Appends one record to the registry's change log, `ROOT/audit.log` (one write, fdatasync;
/// `sys::fs::append_line`); nothing when staging for a package.
pub fn audit_staged(root: &Root, rec: &AuditRecord, staging: Staging) -> Result<(), RegisterError> {
    match staging {
        Staging::Package => Ok(()),
        Staging::No => audit(root, rec),
    }
}

/// Appends one record to the registry's change log, `ROOT/audit.log` (one write, fdatasync;
/// `sys::fs::append_line`).
pub fn audit(root: &Root, rec: &AuditRecord) -> Result<(), RegisterError> {
    let path = root.change_log();
    sys::fs::append_line(&path, &rec.to_line()).map_err(|e| match sys::fs::not_regular(&e) {
        Some(kind) => log_not_regular(&path, kind),
        None => VerifyError::io(&path, e).into(),
    })
}
