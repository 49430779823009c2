//! `dot-verify`: the command line over this library.

use crate::doctor;
use crate::entry;
use crate::error::VerifyError;
use crate::layers::{self, Answer, Registry};
use crate::signature;
use argh::FromArgs;
use cli::Output;
use proto::error::ExitCode;
use proto::layers::Layer;
use proto::{Containment, InputDecl, Name, Sha256, Trust};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Digests of open files, minisign signature checks, and the full check of a registry entry
/// (exactly what dot-launch checks before it spawns), and a doctor for a whole root. Prints JSON on
/// stdout; on failure one error object on stderr and exit 1 (refused), 2 (malformed input) or 5
/// (I/O); `doctor` exits 1 with its report on stdout when it has findings.
#[derive(FromArgs, Debug)]
pub struct Args {
    #[argh(subcommand)]
    pub command: Command,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum Command {
    Digest(DigestArgs),
    Signature(SignatureArgs),
    Entry(EntryArgs),
    Doctor(DoctorArgs),
}

/// SHA-256 and size of each FILE, as JSON lines (one object per file and line:
/// {"path","sha256","size"}). Symbolic links, non-regular files and setuid/setgid files are
/// refused.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "digest")]
pub struct DigestArgs {
    /// the files to digest
    #[argh(positional, greedy, from_str_fn(cli::path))]
    pub files: Vec<PathBuf>,
}

/// Check a minisign signature (prehashed or legacy) of FILE; prints {"key_id","trusted_comment"}.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "signature")]
pub struct SignatureArgs {
    /// the public key file, as `minisign -G` writes it
    #[argh(option, from_str_fn(cli::path))]
    pub pubkey: PathBuf,
    /// the detached signature (FILE.minisig)
    #[argh(option, from_str_fn(cli::path))]
    pub signature: PathBuf,
    /// the signed file
    #[argh(positional, from_str_fn(cli::path))]
    pub file: PathBuf,
}

/// Verify registry entry NAME of the root exactly as dot-launch does before spawning: schema,
/// trust, pinned copy's size and digest on the opened file, static ELF for `process`. Without
/// --root, NAME is looked up in the system layers (admin over vendor, an admin mask refusing) and
/// the report says which layer answered and which entry it overrides.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "entry")]
pub struct EntryArgs {
    /// the platform root (default: the system layers)
    #[argh(option, from_str_fn(cli::path))]
    pub root: Option<PathBuf>,
    /// without --root: the directory the system layers are under (as dpkg --root), for a scratch
    /// tree
    #[argh(option, from_str_fn(cli::path))]
    pub sysroot: Option<PathBuf>,
    /// the plugin name
    #[argh(positional)]
    pub name: String,
}

/// Verify every entry of the root (default: of the system layers, as `entry` reads them) as
/// `entry` does and report what comes due within N days: an
/// entry's `expires`, a signing key's `not_after`, a signature reaching the policy's maximum age,
/// any publisher key's `not_after`. Exit 0 when every entry is valid and nothing is due; exit 1
/// otherwise, with the report on stdout all the same.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "doctor")]
pub struct DoctorArgs {
    /// the platform root (default: the system layers, as `entry` reads them)
    #[argh(option, from_str_fn(cli::path))]
    pub root: Option<PathBuf>,
    /// without --root: the directory the system layers are under (as dpkg --root), for a scratch
    /// tree
    #[argh(option, from_str_fn(cli::path))]
    pub sysroot: Option<PathBuf>,
    /// the warning window in days (default: the policy's expiry_warning_days)
    #[argh(option)]
    pub warn_days: Option<u64>,
}

/// One line of `dot-verify digest`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DigestLine {
    /// The path as given; a byte that is not UTF-8 shows as U+FFFD (JSON text cannot carry it).
    pub path: String,
    /// Only for a path that is not UTF-8: the path quoted for POSIX `sh` as `next` quotes it
    /// (each such byte as `"$(printf '\NNN')"`), which the shell turns back into its bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_sh: Option<String>,
    pub sha256: Sha256,
    pub size: u64,
}

/// The output of `dot-verify signature`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignatureReport {
    pub key_id: String,
    pub trusted_comment: String,
}

/// The output of `dot-verify entry`: the verified entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntryReport {
    pub name: Name,
    pub version: semver::Version,
    pub publisher: Option<Name>,
    pub trust: Trust,
    /// The publisher's level the entry was accepted at (signed entries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<proto::publisher::Level>,
    /// The distinct keys whose signatures counted toward the publisher's threshold (signed
    /// entries).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub key_ids: Vec<String>,
    pub sha256: Sha256,
    pub size: u64,
    pub containment: Containment,
    pub protocol: String,
    pub inputs: Vec<InputDecl>,
    /// The entry's signed expiry (unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<u64>,
    /// `pinned` (static ELF) or `unpinned` (granted `--allow-dynamic`).
    pub dependencies: proto::trust::Dependencies,
    /// The limits a launch of it gets (its declared limits over their preset, or the standard
    /// preset), before the invoker lowers any.
    pub limits: proto::limits::Limits,
    /// The registry that answered: `root` (`--root`), or the system layer `vendor` or `admin`.
    pub layer: Layer,
    /// The registry directory the entry was read from.
    pub registry: PathBuf,
    /// The lower layer whose entry of the name this one overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overrides: Option<Layer>,
}

impl EntryReport {
    /// The report of `v`, answered by `a`.
    pub fn new(v: &entry::Verified, a: &Answer) -> Self {
        let e = &v.entry;
        EntryReport {
            name: e.name.clone(),
            version: e.version.clone(),
            publisher: e.publisher.clone(),
            trust: e.trust,
            level: v.level,
            key_ids: v.key_ids.clone(),
            sha256: e.sha256,
            size: e.size,
            containment: e.containment,
            protocol: e.protocol.clone(),
            inputs: e.inputs.clone(),
            expires: e.expires,
            dependencies: v.dependencies,
            limits: e.run_limits(),
            layer: a.layer,
            registry: a.root.path().to_path_buf(),
            overrides: a.overrides,
        }
    }
}

/// Runs one `dot-verify` command.
pub fn run(args: Args) -> Result<Output, VerifyError> {
    match args.command {
        Command::Digest(a) => digest(&a.files),
        Command::Signature(a) => check_signature(&a),
        Command::Entry(a) => {
            let name = Name::new(&a.name).map_err(VerifyError::BadName)?;
            let reg = Registry::from_args(a.root, a.sysroot).ok_or_else(|| {
                VerifyError::Usage(
                    "--sysroot moves the system layers; it cannot go with --root".into(),
                )
            })?;
            refuse_reserved(&reg, &name)?;
            let (v, answer) = layers::verify_named(&reg, &name)?;
            Ok(Output::json(&EntryReport::new(&v, &answer)))
        }
        Command::Doctor(a) => {
            let reg = Registry::from_args(a.root, a.sysroot).ok_or_else(|| {
                VerifyError::Usage(
                    "--sysroot moves the system layers; it cannot go with --root".into(),
                )
            })?;
            let report = match reg {
                Registry::Root(root) => doctor::doctor(&root, a.warn_days)?,
                Registry::System(sys) => doctor::doctor_system(&sys, a.warn_days)?,
            };
            let code = match report.ok {
                true => ExitCode::Success,
                false => ExitCode::Refused,
            };
            Ok(Output::json(&report).with_code(code))
        }
    }
}

/// A reserved name (`recover`, a `dot-launch` subcommand) is never an entry's: refused as the
/// entry would be (`entry-malformed`, field `name`), not looked up, so that no command offering
/// to register it follows.
fn refuse_reserved(reg: &Registry, name: &Name) -> Result<(), VerifyError> {
    if !proto::entry::RESERVED_PLUGIN_NAMES.contains(&name.as_str()) {
        return Ok(());
    }
    let path = match reg {
        Registry::Root(root) => root.entry(name),
        Registry::System(sys) => proto::layout::Root::single(&sys.admin).entry(name),
    };
    Err(VerifyError::EntryMalformed {
        path,
        source: proto::entry::EntryError::Invalid {
            field: "name",
            value: name.to_string(),
            message: format!(
                "{:?} is reserved (a dot-launch subcommand); no plugin can be registered under it",
                name.as_str()
            ),
        },
    })
}

fn digest(files: &[PathBuf]) -> Result<Output, VerifyError> {
    let mut out = String::new();
    for path in files {
        let (file, _meta) =
            sys::fs::open_regular(path).map_err(|e| VerifyError::from_open(path, e))?;
        let (sha256, size) =
            crate::digest::digest_mapped(&file).map_err(|e| VerifyError::io(path, e))?;
        let line = DigestLine {
            path: path.display().to_string(),
            path_sh: path
                .to_str()
                .is_none()
                .then(|| cli::next::quote(path.as_os_str())),
            sha256,
            size,
        };
        out.push_str(&serde_json::to_string(&line).unwrap_or_default());
        out.push('\n');
    }
    Ok(Output::text(out))
}

fn check_signature(a: &SignatureArgs) -> Result<Output, VerifyError> {
    let pk_bytes = read_small(&a.pubkey)?;
    let (_, b64) = signature::parse_public_key_file(&a.pubkey, &pk_bytes)?;
    let sig = read_small(&a.signature)?;
    let (data, _) = sys::fs::read_regular(&a.file, u64::MAX)
        .map_err(|e| VerifyError::from_open_document(&a.file, e))?;
    let info = signature::verify_detached(&b64, &sig, &data).map_err(|e| match e {
        VerifyError::PubkeyMalformed { .. } => e.with_path(&a.pubkey),
        other => other.with_path(&a.signature),
    })?;
    Ok(Output::json(&SignatureReport {
        key_id: info.key_id,
        trusted_comment: info.trusted_comment,
    }))
}

/// A key or signature file: a regular file, at most 64 KiB read.
fn read_small(path: &Path) -> Result<Vec<u8>, VerifyError> {
    let (bytes, _) = sys::fs::read_regular(path, proto::strict::MAX_DOCUMENT as u64)
        .map_err(|e| VerifyError::from_open_document(path, e))?;
    Ok(bytes)
}
