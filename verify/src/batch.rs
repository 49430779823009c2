//! Many entries of one root verified in one call (`dot-verify doctor`, `dot-register list`): each
//! exactly as [`entry::verify_entry`] verifies it, with the root checked and the trust inputs loaded
//! once, and each distinct pinned copy digested once.
//!
//! The first entry that reaches a store file pins and digests it as a launch would (a read lease on
//! the file, or a sealed private copy); the pinned file is kept for the rest of the call
//! ([`Pins`]). A later entry whose store file is that same inode, to be pinned the same way, gets
//! the kept file and its digest instead of a new pass over the bytes, and compares that digest
//! with its own entry's. Sound, not only cheaper: a sealed copy cannot change, and a leased file
//! cannot be written while the lease is held — the kept one is used only while its lease is held
//! with no break pending, else the file is pinned and digested again. Every other check (the entry
//! file, deny list, trust, expiry, the store file's owner, mode and size, the static-ELF rule or
//! the grant) runs for every entry, so results and errors are those `verify_entry` gives, a
//! tampered store file included: every entry naming it reports it.
//!
//! For reports only: a launch verifies its one entry with `verify_entry`.

use crate::entry::{self, Pinned, Verified};
use crate::error::VerifyError;
use crate::root::{self, RootInfo};
use crate::trust::TrustContext;
use proto::layout::Root;
use proto::{Name, Sha256};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::{File, Metadata};
use std::os::unix::fs::MetadataExt;

/// One check an entry passed, in the order `verify_entry` makes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// `plugins.d/NAME.json`: a private regular file within the size limit, a valid entry named
    /// NAME.
    Entry,
    /// The deny list: neither the entry file's digest, the executable's nor the signing key.
    DenyList,
    /// A signature by a valid key of the named publisher over the entry file.
    Signature,
    /// A local entry, in a development root.
    Local,
    /// The entry's signed `expires` is ahead.
    Expiry,
    /// The pinned copy: a regular file of ours or root's, not group/world-writable, of the size
    /// the entry says.
    StoreFile,
    /// The pinned copy's SHA-256 is the entry's (see [`DigestSource`] for how it was had).
    Digest,
    /// The static-ELF rule.
    StaticElf,
    /// Not a static ELF (`audit`): the owner's `--allow-dynamic` grant.
    Grant,
}

/// How an entry's store file was digested in this call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DigestSource {
    /// The store file (`ROOT/store/sha256/HEX`).
    pub store: String,
    /// The entry the file was read and hashed for: this one, or an earlier one of this call whose
    /// pinned file (the same inode, still leased or a sealed copy) this entry's check reused.
    pub read_for: String,
}

/// What one entry's verification covered.
#[derive(Debug)]
pub struct Outcome {
    pub verified: Result<Verified, VerifyError>,
    /// When the entry's store file was pinned and digested (whether or not it matched).
    pub digest: Option<DigestSource>,
}

impl Outcome {
    /// The checks a valid entry passed, in order (empty for an invalid one: its error says where
    /// it stopped).
    pub fn checks(&self) -> Vec<Check> {
        let Ok(v) = &self.verified else {
            return Vec::new();
        };
        let trust = match v.key_id {
            Some(_) => Check::Signature,
            None => Check::Local,
        };
        let exe = match v.elf {
            Some(_) => Check::StaticElf,
            None => Check::Grant,
        };
        vec![
            Check::Entry,
            Check::DenyList,
            trust,
            Check::Expiry,
            Check::StoreFile,
            Check::Digest,
            exe,
        ]
    }
}

/// The entries of one root, verified one after another (see the module documentation).
#[derive(Debug)]
pub struct Batch<'r> {
    root: &'r Root,
    info: RootInfo,
    ctx: TrustContext,
    pins: Pins,
}

impl<'r> Batch<'r> {
    /// Checks the root and loads its trust inputs, as `verify_entry` does first.
    pub fn new(root: &'r Root) -> Result<Batch<'r>, VerifyError> {
        let info = root::check_root(root)?;
        let ctx = TrustContext::load(root)?;
        Ok(Batch {
            root,
            info,
            ctx,
            pins: Pins::default(),
        })
    }

    /// The trust inputs every entry is checked against.
    pub fn ctx(&self) -> &TrustContext {
        &self.ctx
    }

    /// Verifies the entry `name` (an invalid name is refused as `verify_entry` would).
    pub fn verify(&self, name: &str) -> Outcome {
        *self.pins.current.borrow_mut() = Some((name.to_owned(), None));
        let verified = Name::new(name).map_err(VerifyError::BadName).and_then(|n| {
            entry::verify_checked_with(self.root, self.info, &self.ctx, &n, &self.pins)
        });
        let digest = self.pins.current.borrow_mut().take().and_then(|(_, d)| d);
        Outcome { verified, digest }
    }
}

/// Pinned store files kept for one call, by inode and by how they were to be pinned; and what the
/// entry being verified now got from them.
#[derive(Debug, Default)]
pub(crate) struct Pins {
    kept: RefCell<HashMap<PinKey, Kept>>,
    /// The bytes of the sealed copies in `kept`.
    sealed_bytes: std::cell::Cell<u64>,
    /// The entry being verified, and how its store file was digested.
    current: RefCell<Option<(String, Option<DigestSource>)>>,
    /// When a leased copy is digested (a batch: always now).
    pub(crate) digest: crate::entry::Digest,
}

/// A store file's device and inode, and whether a lease was asked for (else a sealed copy).
type PinKey = (u64, u64, bool);

/// At most this many pins are kept (each holds a descriptor; the soft `RLIMIT_NOFILE` is often
/// 1,024), and sealed copies (each holds its bytes in memory) of at most `MAX_KEPT_SEALED_BYTES`
/// in all. An entry whose store file is not kept is pinned and digested as `verify_entry` does.
const MAX_KEPT: usize = 256;
const MAX_KEPT_SEALED_BYTES: u64 = 64 << 20;

#[derive(Debug)]
struct Kept {
    file: File,
    meta: Metadata,
    digested: (Sha256, u64),
    pinned: Pinned,
    read_for: String,
}

/// What `entry::pin` returns: the file that runs, its metadata, its digest and how it is pinned.
pub(crate) type PinnedFile = (File, Metadata, (Sha256, u64), Pinned);

impl Pins {
    /// No pins kept, a leased copy digested when `digest` says (one entry's verification).
    pub(crate) fn digesting(digest: crate::entry::Digest) -> Pins {
        Pins {
            digest,
            ..Pins::default()
        }
    }

    /// The kept pin of the store file `store` (its metadata `meta`, at `path`), pinned with a lease
    /// when `lease`, if it is still sound to use: a sealed copy, or a lease still held with no
    /// break pending. `store_meta` is the fresh open's metadata (what a leased result carries).
    pub(crate) fn get(
        &self,
        store_meta: &Metadata,
        path: &std::path::Path,
        lease: bool,
    ) -> Option<PinnedFile> {
        let key = (store_meta.dev(), store_meta.ino(), lease);
        let mut kept = self.kept.borrow_mut();
        let k = kept.get(&key)?;
        if let Pinned::Leased { .. } = k.pinned {
            if !sys::fs::lease_held(&k.file) {
                kept.remove(&key);
                return None;
            }
        }
        let file = k.file.try_clone().ok()?;
        let meta = match k.pinned {
            Pinned::Leased { .. } => store_meta.clone(),
            Pinned::Sealed => k.meta.clone(),
        };
        self.note(path, &k.read_for);
        Some((file, meta, k.digested, k.pinned))
    }

    /// Keeps what the store file (metadata `store_meta`, at `path`) was just pinned as.
    pub(crate) fn keep(
        &self,
        store_meta: &Metadata,
        path: &std::path::Path,
        lease: bool,
        p: &PinnedFile,
    ) {
        let read_for = match &*self.current.borrow() {
            Some((name, _)) => name.clone(),
            None => return,
        };
        self.note(path, &read_for);
        let sealed = match p.3 {
            Pinned::Sealed => p.1.len(),
            Pinned::Leased { .. } => 0,
        };
        let mut kept = self.kept.borrow_mut();
        let bytes = self.sealed_bytes.get().saturating_add(sealed);
        if kept.len() >= MAX_KEPT || bytes > MAX_KEPT_SEALED_BYTES {
            return;
        }
        let Ok(file) = p.0.try_clone() else {
            return;
        };
        self.sealed_bytes.set(bytes);
        let key = (store_meta.dev(), store_meta.ino(), lease);
        kept.insert(
            key,
            Kept {
                file,
                meta: p.1.clone(),
                digested: p.2,
                pinned: p.3,
                read_for,
            },
        );
    }

    fn note(&self, path: &std::path::Path, read_for: &str) {
        if let Some((_, digest)) = &mut *self.current.borrow_mut() {
            *digest = Some(DigestSource {
                store: path.display().to_string(),
                read_for: read_for.to_owned(),
            });
        }
    }
}
