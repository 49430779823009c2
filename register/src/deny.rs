//! `dot-register deny add|remove|list`: `trust/deny.json`, digests and key ids refused everywhere
//! (registration, `dot-verify entry`, `dot-launch`, publisher add/rotate) before any other check.

use crate::error::RegisterError;
use crate::{audit, now, write_private, WriterLock};
use proto::layout::Root;
use proto::trust::{is_key_id, AuditAction, AuditOutcome, AuditRecord, Denied, DenyList};
use proto::Sha256;
use verify::trust::TrustContext;

/// What one deny command names: exactly one of a digest and a key id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Digest(Sha256),
    Key(String),
}

impl Target {
    /// From `--sha256` / `--key`; exactly one must be given, well formed.
    pub fn from_options(sha256: Option<&str>, key: Option<&str>) -> Result<Target, RegisterError> {
        match (sha256, key) {
            (Some(d), None) => Sha256::parse_hex(d)
                .map(Target::Digest)
                .map_err(|e| RegisterError::Usage(format!("--sha256: {e}"))),
            (None, Some(k)) if is_key_id(k) => Ok(Target::Key(k.to_owned())),
            (None, Some(k)) => Err(RegisterError::Usage(format!(
                "--key {k:?} is not a key id (16 uppercase hex digits)"
            ))),
            _ => Err(RegisterError::Usage(
                "give exactly one of --sha256 and --key".to_owned(),
            )),
        }
    }
}

/// Adds `target` to the deny list (already denied: unchanged, the first reason kept).
pub fn add(root: &Root, target: &Target, reason: &str) -> Result<DenyList, RegisterError> {
    change(root, target, AuditAction::DenyAdd, Some(reason), |d| {
        let at = now();
        match target {
            Target::Digest(x) if d.digest(x).is_none() => d.digests.push(Denied {
                value: *x,
                reason: reason.to_owned(),
                at,
            }),
            Target::Key(k) if d.key(k).is_none() => d.keys.push(Denied {
                value: k.clone(),
                reason: reason.to_owned(),
                at,
            }),
            _ => return false,
        }
        true
    })
}

/// Takes `target` off the deny list (not listed: unchanged).
pub fn remove(root: &Root, target: &Target) -> Result<DenyList, RegisterError> {
    change(root, target, AuditAction::DenyRemove, None, |d| {
        let before = d.digests.len() + d.keys.len();
        match target {
            Target::Digest(x) => d.digests.retain(|i| i.value != *x),
            Target::Key(k) => d.keys.retain(|i| i.value != *k),
        }
        before != d.digests.len() + d.keys.len()
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
        Target::Key(k) => rec.key_id = Some(k.clone()),
    }
    rec.detail = reason.map(str::to_owned);
    audit(root, &rec)?;
    Ok(deny)
}
