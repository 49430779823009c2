//! `dot-register deny add|remove|list`: `trust/deny.json`, digests and key ids refused everywhere
//! (registration, `dot-verify entry`, `dot-launch`, publisher add/rotate) before any other check.

use crate::error::RegisterError;
use crate::{audit, now, read_input_limited, write_private, WriterLock};
use proto::layout::Root;
use proto::trust::{is_key_id, AuditAction, AuditOutcome, AuditRecord, Denied, DenyList};
use proto::Sha256;
use std::path::Path;
use verify::trust::TrustContext;

/// What one deny command names: a digest, or a key (its id, and the Ed25519 bytes it is known
/// by: from `--pubkey`, or of the trust store's keys of that id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Digest(Sha256),
    Key { id: String, bytes: Vec<String> },
}

impl Target {
    /// From `--sha256` / `--key` / `--pubkey`; exactly one must be given, well formed. A key id's
    /// bytes are looked up in `root`'s trust store.
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
            (None, Some(k), None) if is_key_id(k) => Ok(Target::Key {
                id: k.to_owned(),
                bytes: store_bytes(root, k)?,
            }),
            (None, Some(k), None) => Err(RegisterError::Usage(format!(
                "--key {k:?} is not a key id (16 uppercase hex digits)"
            ))),
            (None, None, Some(file)) => {
                let text = read_input_limited(file, proto::trust::DEFAULT_MAX_KEY_BYTES)?;
                let (id, b64) = verify::signature::parse_public_key_file(file, &text)?;
                let mut bytes = store_bytes(root, &id)?;
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

/// The Ed25519 bytes (hex) of every key of `root`'s trust store listed as `key_id`.
fn store_bytes(root: &Root, key_id: &str) -> Result<Vec<String>, RegisterError> {
    crate::check_registry(root)?;
    let mut out = Vec::new();
    for (p, _) in verify::signers::load_store(root)? {
        for k in p.keys.iter().filter(|k| k.key_id == key_id) {
            if let Some(hex) = verify::signature::key_bytes_hex(&k.public_key) {
                if !out.contains(&hex) {
                    out.push(hex);
                }
            }
        }
    }
    Ok(out)
}

/// Adds `target` to the deny list (already denied: unchanged, the first reason kept).
pub fn add(root: &Root, target: &Target, reason: &str) -> Result<DenyList, RegisterError> {
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
