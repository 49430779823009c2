//! `dot-register deny add|remove|list`: `trust/deny.json`, digests and key ids refused everywhere
//! (registration, `dot-verify entry`, `dot-launch`, publisher add/rotate) before any other check.

use crate::error::RegisterError;
use crate::{audit, now, read_input_limited, write_private, WriterLock};
use proto::layout::Root;
use proto::trust::{parse_key_id, AuditAction, AuditOutcome, AuditRecord, Denied, DenyList};
use proto::Sha256;
use std::path::Path;
use verify::trust::TrustContext;
use verify::VerifyError;

/// What one deny command names: a digest, or a key (its id, and the Ed25519 bytes it is known
/// by: from `--pubkey`, or of the keys of that id in the trust stores in reach).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Digest(Sha256),
    Key { id: String, bytes: Vec<String> },
}

impl Target {
    /// From `--sha256` / `--key` / `--pubkey`; exactly one must be given, well formed. A key id
    /// is taken as minisign prints it (leading zeros may be left out) and its bytes are looked up
    /// in `root`'s trust store and in every present system layer's ([`key_bytes`]).
    pub fn from_options(
        root: &Root,
        sha256: Option<&str>,
        key: Option<&str>,
        pubkey: Option<&Path>,
    ) -> Result<Target, RegisterError> {
        match (sha256, key, pubkey) {
            (Some(d), None, None) => Sha256::parse_hex(d)
                .map(Target::Digest)
                .map_err(|e| RegisterError::Usage(format!("--sha256: {e}"))),
            (None, Some(k), None) => match parse_key_id(k) {
                Some(id) => Ok(Target::Key {
                    bytes: key_bytes(root, &id, &system_layers())?,
                    id,
                }),
                None => Err(RegisterError::Usage(format!(
                    "--key {k:?} is not a key id (up to 16 uppercase hex digits, as minisign prints it)"
                ))),
            },
            (None, None, Some(file)) => {
                let text = read_input_limited(file, proto::trust::DEFAULT_MAX_KEY_BYTES)?;
                let (id, b64) = verify::signature::parse_public_key_file(file, &text)?;
                let mut bytes = key_bytes(root, &id, &system_layers())?;
                if let Some(hex) = verify::signature::key_bytes_hex(&b64) {
                    if !bytes.contains(&hex) {
                        bytes.push(hex);
                    }
                }
                Ok(Target::Key { id, bytes })
            }
            _ => Err(RegisterError::Usage(
                "give exactly one of --sha256, --key and --pubkey".to_owned(),
            )),
        }
    }
}

/// The system layers built into the tools that exist, each a registry: where a key id named by
/// `deny --key` is looked up besides the root's own trust store (the admin layer denies what a
/// package ships, whose key only the vendor layer lists).
fn system_layers() -> Vec<Root> {
    let sys = proto::layers::SystemLayers::new(None);
    sys.each()
        .into_iter()
        .map(|(_, dir)| Root::single(dir))
        .collect()
}

/// The Ed25519 bytes (hex) of every key listed as `key_id` in `root`'s trust store (which must be
/// a sound registry) and in the trust stores of `others` (read where they can be; one that cannot
/// be read adds nothing, and a deny that finds no bytes is refused).
pub fn key_bytes(root: &Root, key_id: &str, others: &[Root]) -> Result<Vec<String>, RegisterError> {
    crate::check_registry(root)?;
    let mut out = Vec::new();
    let mut add = |store: Vec<(proto::Publisher, std::path::PathBuf)>| {
        for (p, _) in store {
            for k in p.keys.iter().filter(|k| k.key_id == key_id) {
                if let Some(hex) = verify::signature::key_bytes_hex(&k.public_key) {
                    if !out.contains(&hex) {
                        out.push(hex);
                    }
                }
            }
        }
    };
    add(verify::signers::load_store(root)?);
    for other in others.iter().filter(|o| o.path() != root.path()) {
        let readable = matches!(verify::layers::check_layer(other.path()), Ok(Some(_)));
        if let (true, Ok(store)) = (readable, verify::signers::load_store(other)) {
            add(store);
        }
    }
    Ok(out)
}

/// Adds `target` to the deny list (already denied: unchanged, the first reason kept). A key id
/// whose key no trust store in reach holds is refused (`key-unknown`): denied by its id alone,
/// the same key would pass under another id (minisign's key id is covered by no signature), so
/// the key itself is asked for (`--pubkey`).
pub fn add(root: &Root, target: &Target, reason: &str) -> Result<DenyList, RegisterError> {
    if let Target::Key { id, bytes } = target {
        if bytes.is_empty() {
            return Err(VerifyError::KeyBytesUnknown {
                key_id: id.clone(),
                path: root.publishers(),
            }
            .into());
        }
    }
    change(root, target, AuditAction::DenyAdd, Some(reason), |d| {
        let at = now();
        let item = |value: String| Denied {
            value,
            reason: reason.to_owned(),
            at,
        };
        match target {
            Target::Digest(x) if d.digest(x).is_none() => {
                d.digests.push(Denied {
                    value: *x,
                    reason: reason.to_owned(),
                    at,
                });
                true
            }
            Target::Digest(_) => false,
            Target::Key { id, bytes } => {
                let mut changed = false;
                if d.key(id).is_none() {
                    d.keys.push(item(id.clone()));
                    changed = true;
                }
                for b in bytes {
                    if d.key_bytes(b).is_none() {
                        d.ed25519.push(item(b.clone()));
                        changed = true;
                    }
                }
                changed
            }
        }
    })
}

/// Takes `target` off the deny list (not listed: unchanged).
pub fn remove(root: &Root, target: &Target) -> Result<DenyList, RegisterError> {
    change(root, target, AuditAction::DenyRemove, None, |d| {
        let count = |d: &DenyList| d.digests.len() + d.keys.len() + d.ed25519.len();
        let before = count(d);
        match target {
            Target::Digest(x) => d.digests.retain(|i| i.value != *x),
            Target::Key { id, bytes } => {
                d.keys.retain(|i| i.value != *id);
                d.ed25519.retain(|i| !bytes.contains(&i.value));
            }
        }
        before != count(d)
    })
}

/// The deny list (empty when `trust/deny.json` is absent).
pub fn list(root: &Root) -> Result<DenyList, RegisterError> {
    crate::check_registry(root)?;
    Ok(TrustContext::load(root)?.deny)
}

fn change(
    root: &Root,
    target: &Target,
    action: AuditAction,
    reason: Option<&str>,
    apply: impl FnOnce(&mut DenyList) -> bool,
) -> Result<DenyList, RegisterError> {
    crate::check_registry_writable(root)?;
    let _lock = WriterLock::take(root)?;
    let mut deny = TrustContext::load(root)?.deny;
    if !apply(&mut deny) {
        return Ok(deny);
    }
    write_private(&root.deny_list(), &deny.to_bytes())?;
    let mut rec = AuditRecord::new(now(), action, AuditOutcome::Allowed);
    match target {
        Target::Digest(d) => rec.sha256 = Some(*d),
        Target::Key { id, bytes } => {
            rec.key_id = Some(id.clone());
            if !bytes.is_empty() {
                rec.detail = Some(format!("ed25519 {}", bytes.join(" ")));
            }
        }
    }
    if let Some(r) = reason {
        rec.detail = Some(match rec.detail.take() {
            Some(d) => format!("{r} ({d})"),
            None => r.to_owned(),
        });
    }
    audit(root, &rec)?;
    Ok(deny)
}
