//! `dot-register publisher add|revoke|list`: the root's trust store, `trust/publishers/ID.json`.

use crate::error::RegisterError;
use crate::{now, read_input, WriterLock};
use proto::layout::Root;
use proto::publisher::{Revocation, PUBLISHER_SCHEMA};
use proto::{Name, Publisher, PublisherKey};
use std::path::Path;
use verify::VerifyError;

/// Trusts the key in `pubkey_file` for publisher `id`: a new record, or one more key of an existing
/// publisher. Adding a key the publisher already has changes nothing. A revoked publisher or key is
/// refused, never revived.
pub fn add(root: &Root, id: &Name, pubkey_file: &Path) -> Result<Publisher, RegisterError> {
    verify::root::check_root(root)?;
    let bytes = read_input(pubkey_file)?;
    let text = std::str::from_utf8(&bytes).map_err(|_| VerifyError::PubkeyMalformed {
        path: pubkey_file.to_path_buf(),
        reason: "not text".to_owned(),
    })?;
    let (key_id, b64) =
        verify::signature::parse_public_key(text).map_err(|e| e.with_path(pubkey_file))?;
    let _lock = WriterLock::take(root)?;
    let at = now();
    let new_key = PublisherKey {
        key_id: key_id.clone(),
        public_key: b64.clone(),
        added_at: at,
        revoked: None,
    };
    let record = match verify::entry::load_publisher(root, id) {
        Ok((mut p, path)) => {
            if let Some(rev) = &p.revoked {
                return Err(VerifyError::PublisherRevoked {
                    id: id.to_string(),
                    path,
                    reason: rev.reason.clone(),
                }
                .into());
            }
            match p.keys.iter().find(|k| k.key_id == key_id) {
                Some(k) if k.revoked.is_some() => {
                    return Err(RegisterError::KeyWasRevoked {
                        id: id.to_string(),
                        key_id,
                        path,
                    })
                }
                Some(k) if k.public_key == b64 => return Ok(p),
                Some(_) => {
                    return Err(VerifyError::PubkeyMalformed {
                        path: pubkey_file.to_path_buf(),
                        reason: format!(
                            "publisher {id:?} already has a different key with id {key_id}"
                        ),
                    }
                    .into())
                }
                None => p.keys.push(new_key),
            }
            p
        }
        Err(VerifyError::PublisherUnknown { .. }) => Publisher {
            schema: PUBLISHER_SCHEMA,
            id: id.clone(),
            added_at: at,
            keys: vec![new_key],
            revoked: None,
        },
        Err(e) => return Err(e.into()),
    };
    write(root, &record)?;
    Ok(record)
}

/// Revokes publisher `id` (or only its key `key_id`). Revoking again keeps the first revocation.
pub fn revoke(
    root: &Root,
    id: &Name,
    reason: &str,
    key_id: Option<&str>,
) -> Result<Publisher, RegisterError> {
    verify::root::check_root(root)?;
    let _lock = WriterLock::take(root)?;
    let (mut p, path) = verify::entry::load_publisher(root, id)?;
    let revocation = Revocation {
        at: now(),
        reason: reason.to_owned(),
    };
    match key_id {
        None => {
            if p.revoked.is_some() {
                return Ok(p);
            }
            p.revoked = Some(revocation);
        }
        Some(kid) => {
            let Some(k) = p.keys.iter_mut().find(|k| k.key_id == kid) else {
                return Err(RegisterError::KeyUnknown {
                    id: id.to_string(),
                    key_id: kid.to_owned(),
                    path,
                });
            };
            if k.revoked.is_some() {
                return Ok(p);
            }
            k.revoked = Some(revocation);
        }
    }
    write(root, &p)?;
    Ok(p)
}

/// Every publisher record of the trust store, by id.
pub fn list(root: &Root) -> Result<Vec<Publisher>, RegisterError> {
    verify::root::check_root(root)?;
    let dir = root.publishers();
    let mut ids = Vec::new();
    for e in std::fs::read_dir(&dir).map_err(|e| VerifyError::io(&dir, e))? {
        let e = e.map_err(|e| VerifyError::io(&dir, e))?;
        let file = e.file_name();
        let Some(stem) = file.to_str().and_then(|f| f.strip_suffix(".json")) else {
            continue;
        };
        if let Ok(id) = Name::new(stem) {
            ids.push(id);
        }
    }
    ids.sort();
    ids.iter()
        .map(|id| Ok(verify::entry::load_publisher(root, id)?.0))
        .collect()
}

fn write(root: &Root, p: &Publisher) -> Result<(), RegisterError> {
    let dir = root.publishers();
    sys::fs::atomic_write(&dir, &format!("{}.json", p.id), &p.to_bytes(), 0o600)
        .map_err(|e| VerifyError::io(&root.publisher(&p.id), e))?;
    Ok(())
}
