//! `VerifyError`: every check that can fail, named after the step, with its kind and exit code.
//!
//! The kinds are shared by `dot-verify`, `dot-register` and `dot-launch`, so the same refusal reads
//! the same whichever tool met it.

use crate::elf::ElfError;
use cli::Next;
use proto::entry::EntryError;
use proto::publisher::PublisherError;
use proto::{ErrorObject, Kind, NameError, Sha256, ToErrorObject};
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a file, signature, root or entry was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    BadName(NameError),
    #[error("no registry entry {name:?} {}", .searched.as_deref().unwrap_or("in this root"))]
    EntryMissing {
        name: String,
        path: PathBuf,
        next: Next,
        /// Where the name was looked for, when not in one root: the system layers, each named.
        searched: Option<String>,
    },
    /// No `next`: a mask is the administrator's decision, which only the administrator
    /// reverses (`dot-register unmask`, docs/registry.md).
    #[error("{name:?} is masked by the admin layer ({}){}; unmasking it is the administrator's decision", .path.display(), masked(.masks))]
    EntryMasked {
        name: String,
        path: PathBuf,
        /// The layers whose entries of the name the mask hides.
        masks: Vec<proto::layers::Layer>,
    },
    #[error("{} is not a valid entry: {source}", Shown(.path, "the entry built from the options"))]
    EntryMalformed { path: PathBuf, source: EntryError },
    #[error("{} names the plugin {found:?}, not {expected:?}", .path.display())]
    EntryNameMismatch {
        path: PathBuf,
        expected: String,
        found: String,
    },
    #[error("{} is not a platform root: {what}", .path.display())]
    RootMissing {
        path: PathBuf,
        root: PathBuf,
        what: String,
        /// The command that makes the root.
        next: Next,
    },
    #[error("{} is not safe to trust: {reason}", .path.display())]
    RootUnsafe { path: PathBuf, reason: String },
    #[error("{} is owned by uid {owner}: only its owner changes this registry (we are uid {uid})", .path.display())]
    RegistryReadOnly { path: PathBuf, owner: u32, uid: u32 },
    #[error("the entry is signed but {} is missing", .path.display())]
    SignatureMissing { path: PathBuf },
    #[error("signature {}: {reason}", Shown(.path, FILE))]
    SignatureInvalid { path: PathBuf, reason: String },
    #[error("publisher {id:?} is not in the trust store")]
    PublisherUnknown {
        id: String,
        path: PathBuf,
        root: PathBuf,
    },
    #[error("{} is not a valid publisher record: {source}", .path.display())]
    PublisherMalformed {
        path: PathBuf,
        source: PublisherError,
    },
    #[error("publisher {id:?} is revoked: {reason}")]
    PublisherRevoked {
        id: String,
        path: PathBuf,
        reason: String,
    },
    #[error("key {key_id} of publisher {id:?} is revoked: {reason}")]
    KeyRevoked {
        id: String,
        key_id: String,
        path: PathBuf,
        reason: String,
    },
    #[error("{0}")]
    ThresholdNotMet(Box<Shortfall>),
    #[error("entry {name:?} requires audit, but publisher {id:?} is at level verified ({}): its entries run only under process", .path.display())]
    LevelNeedsProcess {
        name: String,
        id: String,
        /// The publisher record that sets the level.
        path: PathBuf,
        /// The registry that record is in.
        root: PathBuf,
    },
    #[error("{0}")]
    NameNotDelegated(Box<Undelegated>),
    #[error("{} is a local entry, accepted only in a development root (no DEV marker here)", .path.display())]
    LocalEntryNotDev { path: PathBuf },
    #[error("{} is a symbolic link", Shown(.path, FILE))]
    ExeSymlink { path: PathBuf },
    #[error("{} is a {kind}, not a regular file", Shown(.path, FILE))]
    ExeNotRegular { path: PathBuf, kind: &'static str },
    #[error("{} {what}: a document given on the command line must be a regular file", .path.display())]
    DocumentNotRegular { path: PathBuf, what: String },
    #[error("{} does not exist", .path.display())]
    FileMissing { path: PathBuf },
    #[error("{} has the setuid or setgid bit (mode {mode:o})", Shown(.path, FILE))]
    ExeSetid { path: PathBuf, mode: u32 },
    #[error("{} is owned by uid {uid} with mode {mode:o}: it must be ours or root's and not group- or world-writable", Shown(.path, FILE))]
    ExeUnsafeOwner { path: PathBuf, uid: u32, mode: u32 },
    #[error("{} is {found} bytes, the entry says {expected}", Shown(.path, FILE))]
    SizeMismatch {
        path: PathBuf,
        expected: u64,
        found: u64,
    },
    #[error("{} has sha256 {found}, the entry says {expected}", Shown(.path, FILE))]
    DigestMismatch {
        path: PathBuf,
        expected: Sha256,
        found: Sha256,
    },
    #[error("pinned copy {} changed after registration: {what}", .path.display())]
    StoreTampered {
        path: PathBuf,
        what: String,
        /// None in the vendor layer, whose files are its package's.
        next: Option<Next>,
    },
    #[error("{} {source}", Shown(.path, FILE))]
    NotStaticElf { path: PathBuf, source: ElfError },
    #[error("{} {source}", Shown(.path, FILE))]
    Runtime {
        path: PathBuf,
        source: Box<crate::elf::RuntimeError>,
    },
    #[error("{} cannot be executed from a sealed copy: {source}{}", Shown(.path, FILE), seal_hint(.source))]
    ExecSealUnavailable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a minisign public key file: {reason}", Shown(.path, FILE))]
    PubkeyMalformed { path: PathBuf, reason: String },
    /// No `next`: a deny is a decision of whoever keeps the registry, never undone from the
    /// refusal it causes.
    #[error("{field} {value} is on the root's deny list: {reason}; only whoever keeps the registry lifts a deny")]
    Denied {
        path: PathBuf,
        field: &'static str,
        value: String,
        reason: String,
        root: PathBuf,
    },
    /// `deny add --key ID` whose key no trust store in reach lists: its bytes are unknown.
    #[error("no trust store in reach ({} or a system layer) lists a key {key_id}, so its bytes are unknown; a deny of the id alone would not hold against the same key listed under another id (a minisign key id is covered by no signature): deny the key itself with --pubkey FILE, its public key file", .path.display())]
    KeyBytesUnknown { key_id: String, path: PathBuf },
    #[error("{} is not a valid trust document: {source}", .path.display())]
    TrustMalformed {
        path: PathBuf,
        source: proto::trust::TrustDocError,
    },
    #[error("the signature by key {key_id} carries no trusted timestamp, which is required because {why}")]
    SignatureTimeMissing { key_id: String, why: &'static str },
    #[error("key {key_id} of publisher {id:?} was not valid at the signature's time {at} (valid from {} until {})", Bound(.not_before), Bound(.not_after))]
    KeyNotValidAt {
        id: String,
        key_id: String,
        at: u64,
        not_before: Option<u64>,
        not_after: Option<u64>,
    },
    #[error("the signature by key {key_id} claims to be made at {at}, more than {skew} s after this machine's time {now}: a signature from the future would never grow old")]
    SignatureTimeFuture {
        key_id: String,
        at: u64,
        now: u64,
        skew: u64,
    },
    #[error("the signature by key {key_id} was made at {at}, older than the root's maximum signature age of {max_age} s")]
    SignatureTooOld {
        key_id: String,
        at: u64,
        max_age: u64,
    },
    #[error("entry {name:?} expired at {expires}")]
    EntryExpired {
        path: PathBuf,
        name: String,
        expires: u64,
    },
    #[error("{} is at least {size} bytes, over the root's {field} of {limit}", Shown(.path, FILE))]
    TooLarge {
        path: PathBuf,
        field: &'static str,
        size: u64,
        limit: u64,
        root: PathBuf,
    },
    #[error("{} is an audit executable whose dependencies are not pinned ({source}); only the root's owner can accept that, with --allow-dynamic at registration", Shown(.path, FILE))]
    DynamicNotGranted {
        path: PathBuf,
        source: ElfError,
        next: Next,
    },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The layers a mask hides, for a message.
fn masked(layers: &[proto::layers::Layer]) -> String {
    match layers {
        [] => "; no layer has an entry of that name".to_owned(),
        ls => {
            let names: Vec<&str> = ls.iter().map(|l| l.as_str()).collect();
            format!("; it hides the {} entry", names.join(" and "))
        }
    }
}

/// Why an entry's signatures do not meet its publisher's threshold (`threshold-not-met`).
#[derive(Debug, thiserror::Error)]
#[error("entry {name:?} needs signatures by {needed} distinct keys of publisher {id:?} ({}); {} counted{}{}", .record.display(), .counted.len(), listed(.counted), not_counted(.uncounted))]
pub struct Shortfall {
    /// The entry's (first) signature file.
    pub path: PathBuf,
    pub id: String,
    pub name: String,
    pub needed: u32,
    /// The keys whose signatures counted.
    pub counted: Vec<String>,
    /// Why each other signature did not count.
    pub uncounted: Vec<String>,
    /// The publisher record that sets the threshold.
    pub record: PathBuf,
    /// Registering the entry again with one more signature (set by the caller).
    pub next: Option<Next>,
}

/// Why a publisher may not sign a name (`name-not-delegated`).
#[derive(Debug, thiserror::Error)]
#[error("publisher {id:?} may not sign {name:?}: {}", delegation(.claimed_by, .globs, .path))]
pub struct Undelegated {
    pub name: String,
    pub id: String,
    /// The other publisher that pins the name, when that is why.
    pub claimed_by: Option<String>,
    /// The pins that do not admit the name (the publisher's own, or `claimed_by`'s).
    pub globs: Vec<String>,
    /// The publisher record holding those pins.
    pub path: PathBuf,
    /// The registry that record is in.
    pub root: PathBuf,
}

/// ` (KEY, KEY)` for a message, or nothing.
fn listed(keys: &[String]) -> String {
    match keys {
        [] => String::new(),
        ks => format!(" ({})", ks.join(", ")),
    }
}

/// `; not counted: …` for a message, or nothing.
fn not_counted(why: &[String]) -> String {
    match why {
        [] => String::new(),
        w => format!("; not counted: {}", w.join("; ")),
    }
}

/// Why a name is not the publisher's to sign, for a message.
fn delegation(claimed_by: &Option<String>, globs: &[String], path: &Path) -> String {
    match claimed_by {
        Some(other) => format!(
            "the name is pinned to publisher {other:?} ({}: {})",
            path.display(),
            globs.join(", ")
        ),
        None => format!(
            "its names are pinned to {} ({})",
            globs.join(", "),
            path.display()
        ),
    }
}

/// What an operator can do when executable memfds are refused.
fn seal_hint(e: &std::io::Error) -> &'static str {
    use nix::errno::Errno;
    match e.raw_os_error().map(Errno::from_raw) {
        Some(Errno::EACCES | Errno::EPERM) => {
            " (this host forbids executable memfds: sysctl vm.memfd_noexec is 2; set it to 0 or 1)"
        }
        _ => "",
    }
}

/// An optional time bound for a message.
struct Bound<'a>(&'a Option<u64>);

impl fmt::Display for Bound<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(t) => write!(f, "{t}"),
            None => f.write_str("-"),
        }
    }
}

/// A path for a message, or what stands in for it when the caller has not said which file it was.
struct Shown<'a>(&'a PathBuf, &'static str);

/// The stand-in for a file checked on an open descriptor whose path the check did not know.
const FILE: &str = "the file";

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.as_os_str().is_empty() {
            f.write_str(self.1)
        } else {
            write!(f, "{}", self.0.display())
        }
    }
}

impl VerifyError {
    /// An I/O error about `path`.
    pub fn io(path: &Path, source: std::io::Error) -> VerifyError {
        VerifyError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// The same error about `path`, for checks made on an open file whose path the check did not
    /// know (`check_exe_file`). Errors that already name a file keep it.
    pub fn with_path(mut self, p: &Path) -> VerifyError {
        use VerifyError as E;
        match &mut self {
            E::ExeSymlink { path }
            | E::ExeNotRegular { path, .. }
            | E::ExeSetid { path, .. }
            | E::ExeUnsafeOwner { path, .. }
            | E::SizeMismatch { path, .. }
            | E::DigestMismatch { path, .. }
            | E::NotStaticElf { path, .. }
            | E::Runtime { path, .. }
            | E::ExecSealUnavailable { path, .. }
            | E::PubkeyMalformed { path, .. }
            | E::SignatureInvalid { path, .. }
            | E::TooLarge { path, .. }
            | E::DynamicNotGranted { path, .. }
            | E::Io { path, .. }
                if path.as_os_str().is_empty() =>
            {
                *path = p.to_path_buf();
            }
            E::ThresholdNotMet(s) if s.path.as_os_str().is_empty() => {
                s.path = p.to_path_buf();
            }
            _ => {}
        }
        self
    }

    /// The file the error is about, if any.
    pub fn path(&self) -> Option<&Path> {
        use VerifyError as E;
        let p = match self {
            E::BadName(_)
            | E::Usage(_)
            | E::SignatureTimeMissing { .. }
            | E::KeyNotValidAt { .. }
            | E::SignatureTimeFuture { .. }
            | E::SignatureTooOld { .. } => return None,
            E::ThresholdNotMet(s) => &s.path,
            E::NameNotDelegated(u) => &u.path,
            E::EntryMissing { path, .. }
            | E::EntryMasked { path, .. }
            | E::EntryMalformed { path, .. }
            | E::EntryNameMismatch { path, .. }
            | E::RootMissing { path, .. }
            | E::RootUnsafe { path, .. }
            | E::RegistryReadOnly { path, .. }
            | E::SignatureMissing { path }
            | E::SignatureInvalid { path, .. }
            | E::PublisherUnknown { path, .. }
            | E::PublisherMalformed { path, .. }
            | E::PublisherRevoked { path, .. }
            | E::KeyRevoked { path, .. }
            | E::LevelNeedsProcess { path, .. }
            | E::LocalEntryNotDev { path }
            | E::ExeSymlink { path }
            | E::ExeNotRegular { path, .. }
            | E::DocumentNotRegular { path, .. }
            | E::FileMissing { path }
            | E::ExeSetid { path, .. }
            | E::ExeUnsafeOwner { path, .. }
            | E::SizeMismatch { path, .. }
            | E::DigestMismatch { path, .. }
            | E::StoreTampered { path, .. }
            | E::NotStaticElf { path, .. }
            | E::Runtime { path, .. }
            | E::ExecSealUnavailable { path, .. }
            | E::PubkeyMalformed { path, .. }
            | E::Denied { path, .. }
            | E::TrustMalformed { path, .. }
            | E::KeyBytesUnknown { path, .. }
            | E::EntryExpired { path, .. }
            | E::TooLarge { path, .. }
            | E::DynamicNotGranted { path, .. }
            | E::Io { path, .. } => path,
        };
        (!p.as_os_str().is_empty()).then_some(p.as_path())
    }

    /// The error for a failed `sys::fs::open_regular` of an executable (or a file to digest).
    pub fn from_open(path: &Path, e: sys::fs::OpenError) -> VerifyError {
        use sys::fs::OpenError;
        let path = path.to_path_buf();
        match e {
            OpenError::Symlink => VerifyError::ExeSymlink { path },
            OpenError::NotRegular(kind) => VerifyError::ExeNotRegular { path, kind },
            OpenError::SetId(mode) => VerifyError::ExeSetid { path, mode },
            OpenError::Io(source) => VerifyError::from_io(&path, source),
        }
    }

    /// The error for a failed `sys::fs::open_regular` of a document named on the command line:
    /// an entry, a signature, a public key, a transition statement, a signed file.
    pub fn from_open_document(path: &Path, e: sys::fs::OpenError) -> VerifyError {
        use sys::fs::OpenError;
        match e {
            OpenError::Io(source) => VerifyError::from_io(path, source),
            other => VerifyError::DocumentNotRegular {
                path: path.to_path_buf(),
                what: other.to_string(),
            },
        }
    }

    /// An I/O error opening a file the caller named: a missing file is the caller's
    /// (`file-missing`), anything else the system's (`io`).
    fn from_io(path: &Path, source: std::io::Error) -> VerifyError {
        match source.kind() {
            std::io::ErrorKind::NotFound => VerifyError::FileMissing {
                path: path.to_path_buf(),
            },
            _ => VerifyError::io(path, source),
        }
    }
}

impl ToErrorObject for VerifyError {
    fn kind(&self) -> Kind {
        use VerifyError as E;
        match self {
            E::BadName(_) => Kind::BadName,
            E::Usage(_) => Kind::Usage,
            E::EntryMissing { .. } => Kind::EntryMissing,
            E::EntryMasked { .. } => Kind::EntryMasked,
            E::EntryMalformed { .. } => Kind::EntryMalformed,
            E::EntryNameMismatch { .. } => Kind::EntryNameMismatch,
            E::RootMissing { .. } => Kind::RootMissing,
            E::RootUnsafe { .. } => Kind::RootUnsafe,
            E::RegistryReadOnly { .. } => Kind::RegistryReadOnly,
            E::SignatureMissing { .. } => Kind::SignatureMissing,
            E::SignatureInvalid { .. } => Kind::SignatureInvalid,
            E::PublisherUnknown { .. } => Kind::PublisherUnknown,
            E::PublisherMalformed { .. } => Kind::PublisherMalformed,
            E::PublisherRevoked { .. } => Kind::PublisherRevoked,
            E::KeyRevoked { .. } => Kind::KeyRevoked,
            E::ThresholdNotMet(_) => Kind::ThresholdNotMet,
            E::LevelNeedsProcess { .. } => Kind::LevelNeedsProcess,
            E::NameNotDelegated(_) => Kind::NameNotDelegated,
            E::LocalEntryNotDev { .. } => Kind::LocalEntryNotDev,
            E::ExeSymlink { .. } => Kind::ExeSymlink,
            E::ExeNotRegular { .. } => Kind::ExeNotRegular,
            E::DocumentNotRegular { .. } => Kind::DocumentNotRegular,
            E::FileMissing { .. } => Kind::FileMissing,
            E::ExeSetid { .. } => Kind::ExeSetid,
            E::ExeUnsafeOwner { .. } => Kind::ExeUnsafeOwner,
            E::SizeMismatch { .. } => Kind::SizeMismatch,
            E::DigestMismatch { .. } => Kind::DigestMismatch,
            E::StoreTampered { .. } => Kind::StoreTampered,
            E::NotStaticElf { source, .. } => source.kind(),
            E::Runtime { source, .. } => source.kind(),
            E::ExecSealUnavailable { .. } => Kind::ExecSealUnavailable,
            E::PubkeyMalformed { .. } => Kind::PubkeyMalformed,
            E::Denied { .. } => Kind::Denied,
            E::TrustMalformed { .. } => Kind::TrustMalformed,
            E::SignatureTimeMissing { .. } => Kind::SignatureTimeMissing,
            E::KeyNotValidAt { .. } => Kind::KeyNotValid,
            E::SignatureTooOld { .. } => Kind::SignatureTooOld,
            E::SignatureTimeFuture { .. } => Kind::SignatureTimeFuture,
            E::KeyBytesUnknown { .. } => Kind::KeyUnknown,
            E::EntryExpired { .. } => Kind::EntryExpired,
            E::TooLarge { .. } => Kind::TooLarge,
            E::DynamicNotGranted { .. } => Kind::DynamicNotGranted,
            E::Io { .. } => Kind::Io,
        }
    }

    fn to_error_object(&self) -> ErrorObject {
        use VerifyError as E;
        let mut obj = ErrorObject::new(self.kind(), self.to_string());
        if let Some(p) = self.path() {
            obj = obj.path(p);
        }
        match self {
            E::BadName(e) => {
                let value = match e {
                    NameError::Empty => String::new(),
                    NameError::TooLong(s)
                    | NameError::Dots(s)
                    | NameError::BadStart(s)
                    | NameError::BadChar { name: s, .. } => s.clone(),
                };
                obj.value(value)
            }
            E::Usage(_) => obj.next(&Next::cmd("dot-verify").arg("--help")),
            E::Runtime { source, .. } => {
                let inner = source.to_error_object();
                match (inner.field, inner.value) {
                    (Some(f), Some(v)) => obj.field(f).value(v),
                    _ => obj,
                }
            }
            E::EntryMissing { name, next, .. } => obj
                .value(name.clone())
                .next_to_fill(next, "FILE is the plugin's executable"),
            E::EntryMasked { name, .. } => obj.value(name.clone()),
            E::EntryMalformed { source, .. } => {
                if let Some(f) = source.field() {
                    obj = obj.field(f);
                }
                match source.value() {
                    Some(v) if !v.is_empty() => obj.value(v),
                    _ => obj,
                }
            }
            E::PublisherMalformed { source, .. } => match source.field() {
                Some(f) => obj.field(f),
                None => obj,
            },
            E::EntryNameMismatch { found, .. } => obj.field("name").value(found.clone()),
            E::RootMissing { next, .. } => obj.next(next),
            E::PublisherUnknown { id, root, .. } => obj.value(id.clone()).next_to_fill(
                &Next::cmd("dot-register")
                    .args(["publisher", "add", "--root"])
                    .arg(root)
                    .arg("--id")
                    .arg(id)
                    .arg("--pubkey")
                    .raw("FILE"),
                "FILE is the publisher's minisign public key file, from the publisher",
            ),
            E::PublisherRevoked { id, .. } => obj.value(id.clone()),
            E::KeyRevoked { key_id, .. } => obj.value(key_id.clone()),
            E::ThresholdNotMet(s) => {
                let obj = obj
                    .field("threshold")
                    .value(format!("{}/{}", s.counted.len(), s.needed));
                match &s.next {
                    Some(n) => obj.next(n),
                    None => obj,
                }
            }
            // No `next`: a publisher's level and name pins are the registry keeper's restrictions,
            // never lifted from the refusal they cause (docs/errors.md "`next`").
            E::LevelNeedsProcess { .. } => obj.field("level").value("verified"),
            E::NameNotDelegated(u) => obj.field("names").value(u.name.clone()),
            E::SizeMismatch { found, .. } => obj.field("size").value(found.to_string()),
            E::DigestMismatch { found, .. } => obj.field("sha256").value(found.to_hex()),
            E::StoreTampered { next: Some(n), .. } => obj.next_to_fill(
                n,
                "FILE is the plugin's executable as its publisher shipped it",
            ),
            E::DynamicNotGranted { next, .. } => obj.next(next),
            E::Denied { field, value, .. } => obj.field(*field).value(value.clone()),
            E::TrustMalformed { source, .. } => match source.field() {
                Some(f) => obj.field(f),
                None => obj,
            },
            E::SignatureTimeMissing { key_id, .. }
            | E::SignatureTooOld { key_id, .. }
            | E::SignatureTimeFuture { key_id, .. } => {
                obj.field("trusted_comment").value(key_id.clone())
            }
            E::KeyNotValidAt { key_id, .. } | E::KeyBytesUnknown { key_id, .. } => {
                obj.field("key_id").value(key_id.clone())
            }
            E::EntryExpired { expires, .. } => obj.field("expires").value(expires.to_string()),
            // No `next`: the policy's limits are the registry keeper's; raising one is a decision.
            E::TooLarge { field, size, .. } => obj.field(*field).value(size.to_string()),
            _ => obj,
        }
    }
}
