//! Full verification of one registry entry: exactly what `dot-launch` checks before it spawns.
//!
//! 1. the root: owner, modes, layout (`root::check_root`)
//! 2. `plugins.d/NAME.json`: a private regular file within the policy's size, a valid entry named
//!    NAME; the deny list (`trust/deny.json`) before anything else: the entry file's digest, the
//!    executable's digest, the signing key id
//! 3. trust: `signed` — `NAME.json.minisig` made over the entry file's exact bytes by a non-revoked
//!    key of the named, non-revoked publisher in `trust/publishers/`, valid at the signature's
//!    trusted timestamp, not older than the policy's maximum age; `local` — only in a DEV root;
//!    then the entry's signed `expires`
//! 4. the pinned copy `store/sha256/HEX`: opened once (`O_NOFOLLOW`), a regular file without
//!    setuid/setgid, owned by us or root and not group/world-writable; then `check_exe_file` on
//!    that open file: size, digest, and the static-ELF rule for `process`; an `audit` executable
//!    that is not a static ELF needs the owner's `--allow-dynamic` grant (`NAME.json.grant`)
//!
//! The open file is returned: the caller executes that very descriptor.

use crate::elf::{self, ElfFacts};
use crate::error::VerifyError;
use crate::root::{self, euid};
use crate::signature::{self, SignatureInfo};
use crate::trust::{self, TrustContext};
use cli::Next;
use proto::layout::Root;
use proto::trust::{Dependencies, Limit};
use proto::{Containment, Entry, Name, Publisher, Sha256, Trust};
use std::fs::{File, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// An entry that passed every check, with its pinned executable open.
#[derive(Debug)]
pub struct Verified {
    pub entry: Entry,
    /// What runs, on which every check ran: the pinned copy under a read lease, or a sealed private
    /// copy of it (see `pinned`).
    pub exe: File,
    /// How `exe` is kept from changing until it is executed.
    pub pinned: Pinned,
    pub exe_path: PathBuf,
    /// The key that signed the entry (`None` for a local entry).
    pub key_id: Option<String>,
    /// Every key whose signature counted (empty for a local entry).
    pub key_ids: Vec<String>,
    /// The publisher's level (`None` for a local entry).
    pub level: Option<proto::publisher::Level>,
    /// The oldest trusted timestamp of the signatures that counted, when they carry one.
    pub signed_at: Option<u64>,
    /// The static-ELF facts (`Some` exactly when the executable is a static ELF).
    pub elf: Option<ElfFacts>,
    /// `unpinned` for a script or dynamic ELF accepted under the owner's `--allow-dynamic` grant.
    pub dependencies: Dependencies,
    /// The earliest `not_after` of the keys that counted (new signatures by it are refused from then on).
    pub key_not_after: Option<u64>,
    /// The root has the DEV marker.
    pub dev_root: bool,
    /// Set when the leased copy's digest was left for [`Verified::confirm_digest`]
    /// ([`Digest::AfterLease`]): what a mismatch then reports.
    pub unconfirmed: Option<Unconfirmed>,
}

/// When the pinned copy is digested.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Digest {
    /// Before verification returns, as every check.
    #[default]
    Now,
    /// For a leased executable: every other check now, the digest by
    /// [`Verified::confirm_digest`] — a launcher finishes its checks and starts a `process`
    /// runner first, and executes nothing before the digest is confirmed. A sealed copy is digested now whatever this says (the copy is made
    /// in the same pass).
    AfterLease,
}

/// What a leased copy whose digest was left for later is checked against, and how a mismatch is
/// reported.
#[derive(Clone, Debug)]
pub struct Unconfirmed {
    /// The `next` of the `store-tampered` a mismatch is.
    next: Next,
    /// The copy is the vendor layer's ([`in_vendor_layer`]).
    vendor: bool,
}

impl Unconfirmed {
    /// Digests `exe` and checks it against `entry`, the error as its layer reports it.
    fn check(&self, exe: &File, path: &Path, entry: &Entry) -> Result<(), VerifyError> {
        tampered_by_digest(exe, path, (entry.size, &entry.sha256), self.next.clone())
            .map_err(|e| self.in_its_layer(e))
    }

    fn in_its_layer(&self, e: VerifyError) -> VerifyError {
        match self.vendor {
            true => in_vendor_layer(e),
            false => e,
        }
    }

    /// The same, for a copy in the vendor layer.
    pub fn in_vendor_layer(self) -> Unconfirmed {
        Unconfirmed {
            vendor: true,
            ..self
        }
    }
}

/// A `store-tampered` of the vendor layer: its files are its package's, so reinstalling the
/// package restores the copy, and removing it by hand and registering there would write dpkg's
/// files. Any other error as it is.
pub fn in_vendor_layer(e: VerifyError) -> VerifyError {
    match e {
        VerifyError::StoreTampered { path, what, .. } => VerifyError::StoreTampered {
            what: format!(
                "{what}; the vendor layer's files are its package's: reinstall the package that ships it (dpkg -S {})",
                path.display()
            ),
            path,
            next: None,
        },
        other => other,
    }
}

/// How the bytes that will be executed are kept equal to the bytes digested, whoever else can write
/// the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pinned {
    /// `exe` is the store file, read-leased since `since` (`sys::fs::read_lease`): nobody can
    /// open it for writing until the lease is released, and nobody had it open for writing when
    /// it was taken. The launcher must execute it, and so make the kernel refuse writers
    /// (`ETXTBSY`), before the kernel may break the lease by force
    /// (`sys::fs::lease_break_time`), and release the lease after the `execve`. No copy is made.
    Leased { since: std::time::Instant },
    /// `exe` is a sealed private copy (`sys::fs::exec_memfd`, `freeze`): nothing can change it.
    /// Used for scripts (the interpreter reads them after its own `execve`) and wherever a lease
    /// cannot be taken (not the file's owner, a writer has it open, no leases on that filesystem).
    Sealed,
}

impl Verified {
    /// Turns a leased executable into a sealed private copy (`Pinned::Sealed`), the lease still
    /// held while the copy is made and checked against the entry's digest; then releases the
    /// lease. For a launch that could not execute it before the lease might be broken.
    pub fn seal_now(&mut self) -> Result<(), VerifyError> {
        if self.pinned == Pinned::Sealed {
            return Ok(());
        }
        let (copy, meta, (found, len)) = sealed_copy(&self.exe, &self.exe_path)?;
        if len != self.entry.size || meta.len() != len {
            return Err(size_mismatch(self.entry.size, len).with_path(&self.exe_path));
        }
        if found != self.entry.sha256 {
            return Err(VerifyError::DigestMismatch {
                path: self.exe_path.clone(),
                expected: self.entry.sha256,
                found,
            });
        }
        let _ = sys::fs::release_lease(&self.exe);
        self.exe = copy;
        self.pinned = Pinned::Sealed;
        self.unconfirmed = None;
        Ok(())
    }

    /// Whether the digest of the leased copy is still to be checked ([`Digest::AfterLease`]).
    pub fn digest_pending(&self) -> bool {
        self.unconfirmed.is_some()
    }

    /// Digests the leased copy (still under its lease) and checks it against the entry, as
    /// verification would have: `store-tampered` on a mismatch. Nothing to do when it was digested
    /// already.
    pub fn confirm_digest(&mut self) -> Result<(), VerifyError> {
        let Some(u) = self.unconfirmed.as_ref() else {
            return Ok(());
        };
        u.check(&self.exe, &self.exe_path, &self.entry)?;
        self.unconfirmed = None;
        Ok(())
    }
}

/// The entry's runtime directories are where the root's policy lets a runtime be
/// (`Policy::runtime_roots`: the root's owner decides which host trees a plugin may see, not the
/// publisher), and none holds the registry or its state (the plugin would see the store, the trust
/// store and other runs' stages).
pub fn check_runtime_allowed(
    root: &Root,
    policy: &proto::trust::Policy,
    entry: &Entry,
    entry_path: &Path,
) -> Result<(), VerifyError> {
    if entry.runtime.is_empty() {
        return Ok(());
    }
    let absolute = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let held = [absolute(root.path()), absolute(root.state())];
    for dir in &entry.runtime {
        let reason = if policy.runtime_root_of(dir).is_none() {
            let allowed: Vec<String> = policy.runtime_roots.iter().map(|r| r.to_string()).collect();
            Some(format!(
                "is not beneath a runtime root this root's policy allows ({}); which host trees a plugin may see is the root owner's decision (dot-register policy set --runtime-root DIR)",
                if allowed.is_empty() { "none".to_owned() } else { allowed.join(", ") }
            ))
        } else {
            held.iter().find(|p| p.starts_with(dir.as_str())).map(|p| {
                format!(
                    "holds the platform root {}: the plugin would see its store, trust and runs",
                    p.display()
                )
            })
        };
        if let Some(reason) = reason {
            return Err(VerifyError::Runtime {
                path: entry_path.to_path_buf(),
                source: Box::new(crate::elf::RuntimeError::NotAllowed {
                    dir: dir.to_string(),
                    reason,
                }),
            });
        }
    }
    Ok(())
}

/// `Err(store-tampered)` when `exe` does not have the `(size, sha256)` of its entry (read now).
fn tampered_by_digest(
    exe: &File,
    path: &Path,
    (size, sha256): (u64, &Sha256),
    next: Next,
) -> Result<(), VerifyError> {
    let (found, len) = crate::digest::digest_leased(exe).map_err(|e| VerifyError::io(path, e))?;
    let what = if len != size {
        format!("it is {len} bytes, the entry says {size}")
    } else if found != *sha256 {
        format!("its sha256 is {found}, the entry says {sha256}")
    } else {
        return Ok(());
    };
    Err(VerifyError::StoreTampered {
        path: path.to_path_buf(),
        what,
        next: Some(next),
    })
}

/// Runs every check on the entry `name` of `root` (see the module documentation).
pub fn verify_entry(root: &Root, name: &Name) -> Result<Verified, VerifyError> {
    let info = root::check_root(root)?;
    let ctx = TrustContext::load(root)?;
    verify_checked(root, info, &ctx, name)
}

/// `verify_entry` after the root check: `info` is what it found, `ctx` the trust decisions' inputs
/// (for a system layer, with the other layers' deny lists and revocations: `crate::layers`).
pub(crate) fn verify_checked(
    root: &Root,
    info: root::RootInfo,
    ctx: &TrustContext,
    name: &Name,
) -> Result<Verified, VerifyError> {
    verify_checked_with(root, info, ctx, name, &crate::batch::Pins::default())
}

/// `verify_checked`, a leased copy digested when `digest` says.
pub(crate) fn verify_checked_when(
    root: &Root,
    info: root::RootInfo,
    ctx: &TrustContext,
    name: &Name,
    digest: Digest,
) -> Result<Verified, VerifyError> {
    let pins = crate::batch::Pins::digesting(digest);
    verify_checked_with(root, info, ctx, name, &pins)
}

/// `verify_checked` reusing the store files `pins` kept pinned in this call (`crate::batch`).
pub(crate) fn verify_checked_with(
    root: &Root,
    info: root::RootInfo,
    ctx: &TrustContext,
    name: &Name,
    pins: &crate::batch::Pins,
) -> Result<Verified, VerifyError> {
    let entry_path = root.entry(name);
    let entry_bytes =
        read_doc_limited(&entry_path, ctx.policy.limit(Limit::Entry))?.ok_or_else(|| {
            VerifyError::EntryMissing {
                name: name.to_string(),
                path: entry_path.clone(),
                next: register_hint(root, name, info.dev),
                searched: None,
            }
        })?;
    ctx.check_size(root, &entry_path, Limit::Entry, entry_bytes.len() as u64)?;
    // The deny list comes first: the entry file's digest, the executable's, the signing key's id.
    ctx.check_digest(root, &Sha256::of(&entry_bytes))?;
    let entry = parse_entry(&entry_path, &entry_bytes)?;
    ctx.check_digest(root, &entry.sha256)?;
    let sig_path = root.entry_sig(name);
    let sigs = match entry.trust {
        Trust::Signed => Some(read_signatures(root, ctx, name)?),
        Trust::Local => None,
    };
    if entry.name != *name {
        return Err(VerifyError::EntryNameMismatch {
            path: entry_path,
            expected: name.to_string(),
            found: entry.name.to_string(),
        });
    }
    let (key_id, key_ids, level, signed_at, key_not_after) = match &sigs {
        Some(sigs) => {
            let checked =
                check_signed(root, ctx, &entry, &entry_bytes, sigs).map_err(|e| {
                    match e.with_path(&sig_path) {
                        VerifyError::ThresholdNotMet(mut s) => {
                            s.next = Some(threshold_hint(root, &entry, sigs.len()));
                            VerifyError::ThresholdNotMet(s)
                        }
                        other => other,
                    }
                })?;
            (
                Some(checked.info.key_id),
                checked.key_ids,
                Some(checked.level),
                checked.signed_at,
                checked.key_not_after,
            )
        }
        None => {
            if !info.dev {
                return Err(VerifyError::LocalEntryNotDev { path: entry_path });
            }
            (None, Vec::new(), None, None, None)
        }
    };
    ctx.check_expiry(&entry, &entry_path)?;
    check_runtime_allowed(root, &ctx.policy, &entry, &entry_path)?;
    let exe_path = root.store_file(&entry.sha256);
    ctx.check_size(root, &exe_path, Limit::Exe, entry.size)?;
    let tampered = |what: String| VerifyError::StoreTampered {
        path: exe_path.clone(),
        what,
        next: Some(reregister_hint(
            root,
            &entry,
            &exe_path,
            info.dev && entry.trust == Trust::Local,
        )),
    };
    let (exe, meta) = match sys::fs::open_regular(&exe_path) {
        Ok(ok) => ok,
        Err(sys::fs::OpenError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(tampered("the pinned copy is missing".to_owned()))
        }
        Err(e) => return Err(VerifyError::from_open(&exe_path, e)),
    };
    check_exe_owner(&meta).map_err(|e| e.with_path(&exe_path))?;
    if meta.len() != entry.size {
        return Err(tampered(format!(
            "it is {} bytes, the entry says {}",
            meta.len(),
            entry.size
        )));
    }
    // Pin what will run, then digest exactly that (see `Pinned`): the store file itself under a
    // read lease, or a sealed private copy of it.
    let (exe, meta, digested, pinned) = pin(exe, meta, &exe_path, entry.containment, pins)?;
    let unconfirmed = digested.is_none().then(|| Unconfirmed {
        next: reregister_hint(
            root,
            &entry,
            &exe_path,
            info.dev && entry.trust == Trust::Local,
        ),
        vendor: false,
    });
    let elf = check_digested(
        &exe,
        &meta,
        digested,
        &entry.sha256,
        entry.size,
        (entry.containment, &entry.runtime),
    )
    .map_err(|e| match e {
        VerifyError::SizeMismatch {
            expected, found, ..
        } => tampered(format!("it is {found} bytes, the entry says {expected}")),
        VerifyError::DigestMismatch {
            expected, found, ..
        } => tampered(format!("its sha256 is {found}, the entry says {expected}")),
        other => other.with_path(&exe_path),
    });
    // A copy whose digest was left for later and that fails a check of its bytes: if those are
    // not the entry's, that is what is reported, as when the digest comes first.
    let elf = match (elf, &unconfirmed) {
        (Err(e), Some(u)) => {
            u.check(&exe, &exe_path, &entry)?;
            return Err(e);
        }
        (elf, _) => elf?,
    };
    let (elf, dependencies) = match elf {
        Some(facts) => (Some(facts), Dependencies::Pinned),
        // A script or dynamic program whose interpreter and libraries resolve in the runtime.
        None if entry.containment == Containment::Process => (None, Dependencies::Runtime),
        None => match elf::check_static_elf(&exe) {
            Ok(facts) => (Some(facts), Dependencies::Pinned),
            // The host could not read the pinned copy: `io`, never a grant to ask for.
            Err(source @ elf::ElfError::Io(_)) => {
                return Err(VerifyError::NotStaticElf {
                    path: exe_path,
                    source,
                })
            }
            Err(source) => {
                if trust::load_grant(root, &entry)?.is_none() {
                    let next = regrant_hint(
                        root,
                        &entry,
                        &exe_path,
                        info.dev && entry.trust == Trust::Local,
                    );
                    return Err(VerifyError::DynamicNotGranted {
                        path: exe_path,
                        source,
                        next,
                    });
                }
                (None, Dependencies::Unpinned)
            }
        },
    };
    Ok(Verified {
        entry,
        exe,
        pinned,
        exe_path,
        key_id,
        key_ids,
        level,
        signed_at,
        elf,
        dependencies,
        key_not_after,
        dev_root: info.dev,
        unconfirmed,
    })
}

/// Every signature of the signed entry `name`: `NAME.json.minisig` (required: `signature-missing`),
/// then `NAME.json.2.minisig`, `NAME.json.3.minisig` … up to the first that does not exist (at most
/// `proto::publisher::MAX_SIGNATURES`), each within the policy's size; each key id on the deny list
/// refuses before anything else.
fn read_signatures(
    root: &Root,
    ctx: &TrustContext,
    name: &Name,
) -> Result<Vec<Vec<u8>>, VerifyError> {
    let mut sigs = Vec::new();
    for i in 0..proto::publisher::MAX_SIGNATURES {
        let path = root.entry_sig_n(name, i);
        let Some(sig) = read_doc_limited(&path, ctx.policy.limit(Limit::Signature))? else {
            if i == 0 {
                return Err(VerifyError::SignatureMissing { path });
            }
            break;
        };
        ctx.check_size(root, &path, Limit::Signature, sig.len() as u64)?;
        if let Ok(key_id) = signature::signature_key_id(&sig) {
            ctx.check_key(root, &key_id)?;
        }
        sigs.push(sig);
    }
    Ok(sigs)
}

/// The entry registered again with its `have` signatures and one more, `FILE.minisig` (by
/// another key of the publisher), from its own pinned copy.
fn threshold_hint(root: &Root, entry: &Entry, have: usize) -> Next {
    let mut cmd = Next::cmd("dot-register")
        .args(["add", "--root"])
        .arg(root.path())
        .arg("--entry")
        .arg(root.entry(&entry.name));
    for i in 0..have {
        cmd = cmd.arg("--signature").arg(root.entry_sig_n(&entry.name, i));
    }
    cmd.arg("--exe")
        .arg(root.store_file(&entry.sha256))
        .arg("--replace")
        .arg("--signature")
        .raw("FILE.minisig")
}

/// What `pin` returns: the file that runs, its metadata, its SHA-256 and length (`None`: left for
/// `Verified::confirm_digest`) and how it is pinned.
type Pin = (File, Metadata, Option<(Sha256, u64)>, Pinned);

/// Pins the opened store file `store` (see `Pinned`) and digests what was pinned, in one pass: a
/// lease and the file itself where a lease can be taken and the file is not a script, else a sealed
/// private copy. Returns what runs, its metadata, its SHA-256 and length (`None` for a leased
/// `process` copy under `Digest::AfterLease`: left for `Verified::confirm_digest`), and how it is
/// pinned.
/// What `pins` kept of this very file, pinned the same way, is reused instead (`crate::batch`).
fn pin(
    store: File,
    meta: Metadata,
    path: &Path,
    containment: Containment,
    pins: &crate::batch::Pins,
) -> Result<Pin, VerifyError> {
    let mut magic = [0u8; 2];
    let script =
        std::os::unix::fs::FileExt::read_exact_at(&store, &mut magic, 0).is_ok() && magic == *b"#!";
    // Under `process` the plugin runs as an identity of its own, which must be able to execute
    // the store file itself (a copy registered before store copies were 0555 is sealed instead).
    let executable = containment == Containment::Audit || meta.mode() & 0o111 == 0o111;
    let lease = !script && executable;
    if let Some((file, meta, digested, pinned)) = pins.get(&meta, path, lease) {
        return Ok((file, meta, Some(digested), pinned));
    }
    let pinned = if lease && sys::fs::read_lease(&store).is_ok() {
        let since = std::time::Instant::now();
        if pins.digest == Digest::AfterLease {
            return Ok((store, meta, None, Pinned::Leased { since }));
        }
        let digested =
            crate::digest::digest_leased(&store).map_err(|e| VerifyError::io(path, e))?;
        (store, meta.clone(), digested, Pinned::Leased { since })
    } else {
        let (copy, copy_meta, digested) = sealed_copy(&store, path)?;
        (copy, copy_meta, digested, Pinned::Sealed)
    };
    pins.keep(&meta, path, lease, &pinned);
    let (file, meta, digested, how) = pinned;
    Ok((file, meta, Some(digested), how))
}

/// The pinned copy `store` copied into a sealed private memfd (`sys::fs::exec_memfd`, `freeze`),
/// the copy's metadata, and the SHA-256 and length of exactly the bytes written into it (taken in
/// the same pass; nothing else can write the memfd before it is frozen). The copy is what runs.
fn sealed_copy(store: &File, path: &Path) -> Result<(File, Metadata, (Sha256, u64)), VerifyError> {
    let unavailable = |source| VerifyError::ExecSealUnavailable {
        path: path.to_path_buf(),
        source,
    };
    let mut copy = sys::fs::exec_memfd(c"dot-pinned").map_err(unavailable)?;
    // One pass: each chunk hashed, then written to the copy on a second thread.
    let digested =
        crate::digest::digest_into(store, &copy).map_err(|e| VerifyError::io(path, e))?;
    sys::fs::freeze(&mut copy).map_err(unavailable)?;
    let meta = copy.metadata().map_err(|e| VerifyError::io(path, e))?;
    Ok((copy, meta, digested))
}

/// The checks on an open executable: regular file without setuid/setgid, size (from `meta`, before
/// reading anything), digest (one streaming pass over the descriptor), and for `process` the
/// static-ELF rule. Errors carry no path; the caller adds it with `VerifyError::with_path`.
pub fn check_exe_file(
    file: &File,
    meta: &Metadata,
    expect_sha: &Sha256,
    expect_size: u64,
    (containment, runtime): (Containment, &[proto::RuntimeDir]),
) -> Result<Option<ElfFacts>, VerifyError> {
    let digested =
        crate::digest::digest_file(file).map_err(|e| VerifyError::io(Path::new(""), e))?;
    check_digested(
        file,
        meta,
        Some(digested),
        expect_sha,
        expect_size,
        (containment, runtime),
    )
}

/// `check_exe_file` for a file whose digest and length were already taken (`digested`).
fn check_digested(
    file: &File,
    meta: &Metadata,
    digested: Option<(Sha256, u64)>,
    expect_sha: &Sha256,
    expect_size: u64,
    (containment, runtime): (Containment, &[proto::RuntimeDir]),
) -> Result<Option<ElfFacts>, VerifyError> {
    sys::fs::check_regular(meta).map_err(|e| VerifyError::from_open(Path::new(""), e))?;
    if meta.len() != expect_size {
        return Err(size_mismatch(expect_size, meta.len()));
    }
    // `None`: left for `Verified::confirm_digest`.
    if let Some((found, len)) = digested {
        if len != expect_size {
            return Err(size_mismatch(expect_size, len));
        }
        if found != *expect_sha {
            return Err(VerifyError::DigestMismatch {
                path: PathBuf::new(),
                expected: *expect_sha,
                found,
            });
        }
    }
    match containment {
        Containment::Audit => Ok(None),
        // A static ELF; with a runtime, also a script or dynamic program whose interpreter and
        // every library (all levels) resolve inside it (`None` for those two).
        Containment::Process => match elf::check_program(file, runtime, elf::Depth::All) {
            Ok(elf::Program::Static(facts)) => Ok(Some(facts)),
            Ok(_) => Ok(None),
            Err(source) => Err(VerifyError::Runtime {
                path: PathBuf::new(),
                source: Box::new(source),
            }),
        },
    }
}

fn size_mismatch(expected: u64, found: u64) -> VerifyError {
    VerifyError::SizeMismatch {
        path: PathBuf::new(),
        expected,
        found,
    }
}

/// A pinned copy must be ours or root's, and not group- or world-writable.
pub fn check_exe_owner(meta: &Metadata) -> Result<(), VerifyError> {
    let uid = meta.uid();
    if (uid != euid() && uid != 0) || meta.mode() & 0o022 != 0 {
        return Err(VerifyError::ExeUnsafeOwner {
            path: PathBuf::new(),
            uid,
            mode: meta.mode() & 0o7777,
        });
    }
    Ok(())
}

/// Parses an entry file's bytes.
pub fn parse_entry(path: &Path, bytes: &[u8]) -> Result<Entry, VerifyError> {
    Entry::parse(bytes).map_err(|source| VerifyError::EntryMalformed {
        path: path.to_path_buf(),
        source,
    })
}

/// What passed `check_signed`: the first counted signature, and what the others added.
#[derive(Clone, Debug)]
pub struct Signed {
    pub info: SignatureInfo,
    /// The oldest trusted timestamp of the signatures that counted, when they carry one.
    pub signed_at: Option<u64>,
    /// The earliest `not_after` of the keys that counted, when one has one.
    pub key_not_after: Option<u64>,
    /// Every key whose signature counted (distinct keys), the first one's first.
    pub key_ids: Vec<String>,
    /// The level the entry was accepted at (the strictest that binds the publisher).
    pub level: proto::publisher::Level,
    /// The threshold it met.
    pub threshold: u32,
}

pub use crate::signers::check_signed;

/// The publisher-record part of a signature check, shared with key rotation: the publisher is
/// not revoked, `key_id` is one of its keys and not revoked, and `sig` is that key's valid
/// signature over `data`. The time rule is the caller's.
pub fn check_by_publisher(
    publisher: &Publisher,
    pub_path: &Path,
    key_id: &str,
    sig: &[u8],
    data: &[u8],
) -> Result<SignatureInfo, VerifyError> {
    let id = &publisher.id;
    if let Some(rev) = &publisher.revoked {
        return Err(VerifyError::PublisherRevoked {
            id: id.to_string(),
            path: pub_path.to_path_buf(),
            reason: rev.reason.clone(),
        });
    }
    let Some(key) = publisher.keys.iter().find(|k| k.key_id == key_id) else {
        return Err(VerifyError::SignatureInvalid {
            path: PathBuf::new(),
            reason: format!(
                "made with key {key_id}, which is not a key of publisher {:?}",
                id.as_str()
            ),
        });
    };
    if let Some(rev) = &key.revoked {
        return Err(VerifyError::KeyRevoked {
            id: id.to_string(),
            key_id: key_id.to_owned(),
            path: pub_path.to_path_buf(),
            reason: rev.reason.clone(),
        });
    }
    signature::verify_detached(&key.public_key, sig, data)
        .map_err(|e| match e {
            // The key is a field of the publisher record: the record is what is malformed.
            VerifyError::PubkeyMalformed { reason, .. } => VerifyError::PublisherMalformed {
                path: pub_path.to_path_buf(),
                source: proto::publisher::PublisherError::Invalid {
                    field: "keys.public_key",
                    message: format!("key {key_id}: {reason}"),
                },
            },
            other => other,
        })
        .and_then(|info| match info.key_id == key_id {
            true => Ok(info),
            false => Err(VerifyError::SignatureInvalid {
                path: PathBuf::new(),
                reason: "key id changed while checking".to_owned(),
            }),
        })
}

/// Reads and parses `trust/publishers/ID.json`.
pub fn load_publisher(root: &Root, id: &Name) -> Result<(Publisher, PathBuf), VerifyError> {
    let path = root.publisher(id);
    let bytes = read_doc(&path)?.ok_or_else(|| VerifyError::PublisherUnknown {
        id: id.to_string(),
        path: path.clone(),
        root: root.path().to_path_buf(),
    })?;
    let publisher = Publisher::parse(&bytes).map_err(|source| VerifyError::PublisherMalformed {
        path: path.clone(),
        source,
    })?;
    if publisher.id != *id {
        return Err(VerifyError::PublisherMalformed {
            path,
            source: proto::publisher::PublisherError::Invalid {
                field: "id",
                message: format!(
                    "the file is named for {:?} but says {:?}",
                    id.as_str(),
                    publisher.id.as_str()
                ),
            },
        });
    }
    Ok((publisher, path))
}

/// Reads a registry or trust-store document: `None` if it does not exist; it must be a regular
/// file owned by root or by us (not a link, not group/world-writable); at most 64 KiB are read (one more
/// byte, so an oversized file is seen as oversized by the strict parser).
pub fn read_doc(path: &Path) -> Result<Option<Vec<u8>>, VerifyError> {
    read_doc_limited(path, proto::strict::MAX_DOCUMENT as u64)
}

/// `read_doc` reading at most `limit + 1` bytes (so a caller sees an oversized file as such).
pub fn read_doc_limited(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, VerifyError> {
    let (bytes, meta) = match sys::fs::read_regular(path, limit.saturating_add(1)) {
        Ok(ok) => ok,
        Err(sys::fs::OpenError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None)
        }
        Err(sys::fs::OpenError::Io(e)) => return Err(VerifyError::io(path, e)),
        Err(e) => {
            return Err(VerifyError::RootUnsafe {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })
        }
    };
    root::check_shared(path, &meta)?;
    Ok(Some(bytes))
}

/// The command that registers `name` (not registered yet): a template, since the executable (and
/// for a signed entry, its files) are the user's to name.
fn register_hint(root: &Root, name: &Name, dev: bool) -> Next {
    let cmd = Next::cmd("dot-register");
    if dev {
        cmd.args(["dev", "--root"])
            .arg(root.path())
            .arg("--name")
            .arg(name.as_str())
            .arg("--exe")
            .raw("FILE")
            .args(["--containment", "process"])
    } else {
        signed_hint(root, name)
    }
}

/// `dot-register add` for the signed entry `name` from `NAME.json`, its signature and `FILE`.
pub(crate) fn signed_hint(root: &Root, name: &Name) -> Next {
    Next::cmd("dot-register")
        .args(["add", "--root"])
        .arg(root.path())
        .arg("--entry")
        .arg(format!("{name}.json"))
        .arg("--signature")
        .arg(format!("{name}.json.minisig"))
        .arg("--exe")
        .raw("FILE")
}

/// `dot-register` registering `entry` again (`--replace`) from the executable `exe` (`None`: the
/// placeholder `FILE`): `dev` with everything a local entry declares, or `add` with the signed
/// entry and signature already in the registry.
fn register_again(root: &Root, entry: &Entry, local: bool, exe: Option<&Path>) -> Next {
    let cmd = if local {
        cli::next::register_local(root.path(), entry, exe)
    } else {
        let cmd = Next::cmd("dot-register")
            .args(["add", "--root"])
            .arg(root.path())
            .arg("--entry")
            .arg(root.entry(&entry.name))
            .arg("--signature")
            .arg(root.entry_sig(&entry.name))
            .arg("--exe");
        match exe {
            Some(exe) => cmd.arg(exe),
            None => cmd.raw("FILE"),
        }
    };
    cmd.arg("--replace")
}

/// After the pinned copy at `store` was found not to match: remove it (`dot-register` never
/// rewrites a pinned copy, it refuses one that differs), then register the entry again from the
/// publisher's executable, `FILE`.
fn reregister_hint(root: &Root, entry: &Entry, store: &Path, local: bool) -> Next {
    Next::cmd("rm")
        .arg("-f")
        .arg(store)
        .then(register_again(root, entry, local, None))
}

/// A dynamic executable without its grant: register the entry again, from its own pinned copy
/// `store` (the bytes registered), with `--allow-dynamic`.
fn regrant_hint(root: &Root, entry: &Entry, store: &Path, local: bool) -> Next {
    register_again(root, entry, local, Some(store)).arg("--allow-dynamic")
}
