//! `RegisterError`: the verification refusals shared with `dot-verify`, plus the registry's own.

use cli::Next;
use proto::{ErrorObject, Kind, ToErrorObject};
use std::path::PathBuf;
use verify::VerifyError;

/// Why a `dot-register` command refused or failed. Nothing is written before every check passed.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    /// A check shared with `dot-verify` (root, entry, signature, publisher, executable).
    #[error(transparent)]
    Verify(#[from] VerifyError),
    #[error("plugin {name:?} is already registered; pass --replace to replace it")]
    EntryExists {
        name: String,
        path: PathBuf,
        next: Next,
    },
    #[error("plugin {name:?} is registered at version {registered}; {offered} is lower (rollback); pass --allow-downgrade to accept it")]
    Downgrade {
        name: String,
        path: PathBuf,
        registered: String,
        offered: String,
        next: Next,
    },
    #[error("{} is a local entry: `add` registers signed entries only; use `dot-register dev` in a development root", .path.display())]
    LocalEntryInAdd { path: PathBuf, next: Next },
    #[error("{} is a root without the DEV marker that already holds registrations ({}); a root with entries or publishers is not turned into a development root: make one in a new directory", .path.display(), .holds.join(", "))]
    RootNotDev {
        path: PathBuf,
        holds: Vec<String>,
        next: Next,
    },
    #[error("{} is not a development root (no DEV marker): `dev` registers local entries only there; {}", .path.display(), match .empty { true => "it holds no registrations, so `init --dev` makes it one", false => "it holds registrations, so it stays as it is: make the development root in a new directory" })]
    DevNeedsDevRoot {
        path: PathBuf,
        empty: bool,
        next: Next,
    },
    /// `not-static-elf` at registration, with how the executable's toolchain builds a static one.
    #[error("{} {source}; {hint}", .path.display())]
    NotStaticElf {
        path: PathBuf,
        source: verify::elf::ElfError,
        hint: String,
    },
    #[error("{} is neither an ELF executable nor a script (its first bytes are {start}, not \"\\x7fELF\" or \"#!\"): the kernel cannot execute it (\"Exec format error\"); a script's first line names its interpreter, e.g. #!/bin/sh", .path.display())]
    UnknownFormat { path: PathBuf, start: String },
    /// `mask`/`unmask` while `DOT_ROOT` names a root: the launches of this environment read that
    /// root, which no mask of the system layers affects.
    #[error("DOT_ROOT is set ({}): dot-launch and dot-verify here read that root, and a mask applies only to the system layers, which they do not read while it is set; to {command} {name:?} in the system layers all the same, name them with --sysroot (/ for this machine's), or unset DOT_ROOT", .root.display())]
    MaskUnderDotRoot {
        command: &'static str,
        name: String,
        root: PathBuf,
        next: Next,
    },
    #[error("--input {spec:?}: {reason}")]
    InputSpec { spec: String, reason: String },
    #[error("--version {value:?} is not a semantic version: {reason}")]
    VersionSpec { value: String, reason: String },
    #[error("key {key_id} of publisher {id:?} is revoked and is not added again")]
    KeyWasRevoked {
        id: String,
        key_id: String,
        path: PathBuf,
    },
    #[error("replacing {name:?} widens what it may do ({}); {}", .changes.describe(), consent_hint(.given))]
    ChangesNeedConsent {
        name: String,
        path: PathBuf,
        changes: Box<proto::trust::Changes>,
        given: Option<String>,
        next: Next,
    },
    #[error("a new key for publisher {id:?} needs --transition (a statement signed by a currently valid key of the publisher: `dot-register publisher transition` prints it) or the owner's --force-by-owner")]
    TransitionMissing { id: String, next: Next },
    #[error("transition statement {}: {why}", .path.display())]
    TransitionInvalid { path: PathBuf, why: String },
    #[error("{0}")]
    Usage(String),
    #[error("publisher {id:?} has no key {key_id}")]
    KeyUnknown {
        id: String,
        key_id: String,
        path: PathBuf,
    },
}

impl RegisterError {
    /// A refusal of the static-ELF rule of the executable `file`, told with how to build a static
    /// one (`verify::elf::static_build_hint`); any other error as it is.
    pub fn with_build_hint(self, file: &std::fs::File) -> RegisterError {
        match self {
            RegisterError::Verify(VerifyError::NotStaticElf { path, source }) => {
                match verify::elf::static_build_hint(file, &source) {
                    Some(hint) => RegisterError::NotStaticElf { path, source, hint },
                    None => VerifyError::NotStaticElf { path, source }.into(),
                }
            }
            // A script or dynamic program at process without a runtime: the build hint, and the
            // runtime that would let it run as it is.
            RegisterError::Verify(VerifyError::Runtime { path, source }) => match *source {
                verify::elf::RuntimeError::Static(e) => {
                    match verify::elf::static_build_hint(file, &e) {
                        Some(hint) => RegisterError::NotStaticElf {
                            path,
                            source: e,
                            hint: format!(
                                "{hint}; or, to run it as it is, declare the read-only directory \
                                 its interpreter and libraries come from with --runtime DIR"
                            ),
                        },
                        None => VerifyError::Runtime {
                            path,
                            source: Box::new(verify::elf::RuntimeError::Static(e)),
                        }
                        .into(),
                    }
                }
                other => VerifyError::Runtime {
                    path,
                    source: Box::new(other),
                }
                .into(),
            },
            e => e,
        }
    }
}

fn consent_hint(given: &Option<String>) -> String {
    match given {
        Some(g) => format!("--accept-changes {g} names a different change"),
        None => {
            "pass --accept-changes with the printed sha256 to consent to exactly this".to_owned()
        }
    }
}

impl ToErrorObject for RegisterError {
    fn kind(&self) -> Kind {
        match self {
            RegisterError::Verify(e) => e.kind(),
            RegisterError::NotStaticElf { source, .. } => source.kind(),
            RegisterError::UnknownFormat { .. } => Kind::ExeUnknownFormat,
            RegisterError::EntryExists { .. } => Kind::EntryExists,
            RegisterError::Downgrade { .. } => Kind::Downgrade,
            RegisterError::LocalEntryInAdd { .. } => Kind::LocalEntryInAdd,
            RegisterError::RootNotDev { .. } => Kind::RootNotDev,
            RegisterError::DevNeedsDevRoot { .. } => Kind::LocalEntryNotDev,
            RegisterError::InputSpec { .. } | RegisterError::VersionSpec { .. } => {
                Kind::EntryMalformed
            }
            RegisterError::KeyWasRevoked { .. } => Kind::KeyRevoked,
            RegisterError::KeyUnknown { .. } => Kind::KeyUnknown,
            RegisterError::ChangesNeedConsent { .. } => Kind::ChangesNeedConsent,
            RegisterError::TransitionMissing { .. } => Kind::TransitionMissing,
            RegisterError::TransitionInvalid { .. } => Kind::TransitionInvalid,
            RegisterError::Usage(_) | RegisterError::MaskUnderDotRoot { .. } => Kind::Usage,
        }
    }

    fn to_error_object(&self) -> ErrorObject {
        let obj = ErrorObject::new(self.kind(), self.to_string());
        match self {
            RegisterError::Verify(e) => e.to_error_object(),
            RegisterError::NotStaticElf { path, .. } => obj.path(path).field("containment"),
            RegisterError::UnknownFormat { path, start } => obj.path(path).value(start.clone()),
            RegisterError::EntryExists { name, path, next } => {
                obj.path(path).value(name.clone()).next(next)
            }
            RegisterError::Downgrade {
                path,
                offered,
                next,
                ..
            } => obj
                .path(path)
                .field("version")
                .value(offered.clone())
                .next(next),
            RegisterError::LocalEntryInAdd { path, next } => {
                obj.path(path).field("trust").value("local").next(next)
            }
            RegisterError::RootNotDev { path, next, .. }
            | RegisterError::DevNeedsDevRoot { path, next, .. } => obj.path(path).next(next),
            RegisterError::InputSpec { spec, .. } => obj.field("inputs").value(spec.clone()),
            RegisterError::VersionSpec { value, .. } => obj.field("version").value(value.clone()),
            RegisterError::ChangesNeedConsent {
                path,
                changes,
                next,
                ..
            } => ErrorObject {
                changes: Some(changes.clone()),
                ..obj.path(path).value(changes.token()).next(next)
            },
            RegisterError::TransitionMissing { next, .. } => obj.next_to_fill(
                next,
                "FILE.minisig is the signature of the transition statement, by a current key of the publisher",
            ),
            RegisterError::TransitionInvalid { path, .. } => obj.path(path),
            RegisterError::Usage(_) => obj,
            RegisterError::MaskUnderDotRoot { root, next, .. } => {
                obj.field("DOT_ROOT").path(root).next(next)
            }
            RegisterError::KeyWasRevoked { key_id, path, .. }
            | RegisterError::KeyUnknown { key_id, path, .. } => {
                obj.path(path).value(key_id.clone())
            }
        }
    }
}
