//! `dot-register publisher add|rotate|revoke|list`: the root's trust store, `trust/publishers/ID.json`.

use crate::args::PublisherRotateArgs;
use crate::error::RegisterError;
use crate::{audit, now, read_input_limited, write_private, WriterLock};
use cli::Next;
use proto::layout::Root;
use proto::publisher::Level;
use proto::publisher::{Revocation, PUBLISHER_SCHEMA};
use proto::trust::{AuditAction, AuditOutcome, AuditRecord, KeyTransition, Limit};
use proto::{Name, Publisher, PublisherKey};
use std::path::{Path, PathBuf};
use verify::trust::TrustContext;
use verify::VerifyError;

/// Validity bounds for a key being added.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bounds {
    pub not_before: Option<u64>,
    pub not_after: Option<u64>,
}

/// Reads a public key file (bounded by the policy), refuses a denied key id, and makes the key
/// record.
fn read_key(
    root: &Root,
    ctx: &TrustContext,
    pubkey_file: &Path,
    bounds: Bounds,
) -> Result<PublisherKey, RegisterError> {
    let bytes = read_input_limited(pubkey_file, ctx.policy.limit(Limit::Key))?;
    ctx.check_size(root, pubkey_file, Limit::Key, bytes.len() as u64)?;
    let (key_id, b64) = verify::signature::parse_public_key_file(pubkey_file, &bytes)?;
    ctx.check_key(root, &key_id)?;
    // The key's bytes, not its id, are what a deny or a revocation names: a revoked or denied key
    // is not trusted again under another id, in this publisher or any other of the store.
    let hex =
        verify::signature::key_bytes_hex(&b64).ok_or_else(|| VerifyError::PubkeyMalformed {
            path: pubkey_file.to_path_buf(),
            reason: "not an Ed25519 minisign key".to_owned(),
        })?;
    ctx.check_key_bytes(root, &hex, &key_id)?;
    let store = verify::signers::load_store(root)?;
    for r in verify::trust::revocations(&store) {
        if r.bytes.contains(&hex) {
            return Err(RegisterError::KeyWasRevoked {
                id: r.publisher.to_string(),
                key_id: r.key_id.unwrap_or_else(|| key_id.clone()),
                path: r.path,
            });
        }
    }
    if let (Some(nb), Some(na)) = (bounds.not_before, bounds.not_after) {
        if na <= nb {
            return Err(RegisterError::Usage(format!(
                "--not-after {na} is not after --not-before {nb}"
            )));
        }
    }
    Ok(PublisherKey {
        key_id,
        public_key: b64,
        added_at: now(),
        not_before: bounds.not_before,
        not_after: bounds.not_after,
        revoked: None,
    })
}

/// Trusts the key in `pubkey_file` for a new publisher `id`. Adding a key the publisher already
/// has changes nothing; a further key of an existing publisher is a rotation (`rotate`;
/// `transition-missing` here). A revoked publisher or key, or a denied key id, is refused, never
/// revived.
pub fn add(
    root: &Root,
    id: &Name,
    pubkey_file: &Path,
    bounds: Bounds,
    staging: crate::Staging,
    level: Option<Level>,
    names: &[String],
) -> Result<Publisher, RegisterError> {
    crate::check_registry_writable(root)?;
    check_globs(names)?;
    let ctx = TrustContext::load(root)?;
    let new_key = read_key(root, &ctx, pubkey_file, bounds)?;
    let _lock = WriterLock::take(root)?;
    let record = match verify::entry::load_publisher(root, id) {
        Ok((mut p, path)) => {
            if !add_key(&mut p, &path, new_key.clone(), pubkey_file)? {
                let unchanged = level.is_none_or(|l| l == p.level)
                    && (names.is_empty() || names == p.names.as_slice());
                if !unchanged {
                    return Err(RegisterError::Usage(format!(
                        "publisher {:?} exists: change its level with `publisher level` and its names with `publisher names`",
                        id.as_str()
                    )));
                }
                return Ok(p);
            }
            // A new key for a publisher already trusted is a rotation: `publisher rotate`.
            return Err(RegisterError::TransitionMissing {
                id: id.to_string(),
                next: rotate_hint(root, id, pubkey_file),
            });
        }
        Err(VerifyError::PublisherUnknown { .. }) => Publisher {
            schema: PUBLISHER_SCHEMA,
            id: id.clone(),
            added_at: new_key.added_at,
            keys: vec![new_key.clone()],
            revoked: None,
            threshold: 1,
            level: level.unwrap_or_default(),
            names: names.to_vec(),
        },
        Err(e) => return Err(e.into()),
    };
    write(root, &record)?;
    let mut rec = key_record(AuditAction::PublisherAdd, id, &new_key, None);
    rec.level = Some(record.level);
    if !record.names.is_empty() {
        rec.detail = Some(format!("names {}", record.names.join(" ")));
    }
    crate::audit_staged(root, &rec, staging)?;
    Ok(record)
}

/// Refuses a `--names` value that is not a name glob.
fn check_globs(names: &[String]) -> Result<(), RegisterError> {
    match names.iter().find(|g| !proto::publisher::is_name_glob(g)) {
        Some(g) => Err(RegisterError::Usage(format!(
            "--names {g:?} is not a glob of plugin names ([a-z0-9._-] and `*`, at most 64)"
        ))),
        None => Ok(()),
    }
}

/// `publisher threshold`: entries of publisher `id` need signatures by `k` distinct keys of it,
/// from 1 to the number of its keys that are not revoked. Raising or lowering it is recorded
/// (`publisher-threshold`, `detail` "threshold OLD -> NEW"); the same value changes nothing.
pub fn threshold(root: &Root, id: &Name, k: u32) -> Result<Publisher, RegisterError> {
    crate::check_registry_writable(root)?;
    let _lock = WriterLock::take(root)?;
    let (mut p, _) = verify::entry::load_publisher(root, id)?;
    let usable = p.keys.iter().filter(|k| k.revoked.is_none()).count();
    if k == 0 || k as usize > usable.min(proto::publisher::MAX_SIGNATURES) {
        return Err(RegisterError::Usage(format!(
            "--signatures {k}: publisher {:?} has {usable} key(s) that are not revoked; the threshold is from 1 to that (at most {})",
            id.as_str(),
            proto::publisher::MAX_SIGNATURES
        )));
    }
    if p.threshold == k {
        return Ok(p);
    }
    let old = p.threshold;
    p.threshold = k;
    write(root, &p)?;
    let mut rec = AuditRecord::new(
        now(),
        AuditAction::PublisherThreshold,
        AuditOutcome::Allowed,
    );
    rec.publisher = Some(id.to_string());
    rec.level = Some(p.level);
    rec.detail = Some(format!(
        "threshold {old} -> {k}{}",
        if k < old { " (lowered)" } else { "" }
    ));
    audit(root, &rec)?;
    Ok(p)
}

/// `publisher level`: sets the level of publisher `id`, recorded (`publisher-level`).
pub fn level(root: &Root, id: &Name, level: Level) -> Result<Publisher, RegisterError> {
    crate::check_registry_writable(root)?;
    let _lock = WriterLock::take(root)?;
    let (mut p, _) = verify::entry::load_publisher(root, id)?;
    if p.level == level {
        return Ok(p);
    }
    let old = p.level;
    p.level = level;
    write(root, &p)?;
    let mut rec = AuditRecord::new(now(), AuditAction::PublisherLevel, AuditOutcome::Allowed);
    rec.publisher = Some(id.to_string());
    rec.level = Some(level);
    rec.detail = Some(format!("level {old} -> {level}"));
    audit(root, &rec)?;
    Ok(p)
}

/// `publisher names`: sets the name pins of publisher `id` (none: any name no other publisher
/// pins), recorded (`publisher-names`).
pub fn names(root: &Root, id: &Name, names: &[String]) -> Result<Publisher, RegisterError> {
    crate::check_registry_writable(root)?;
    check_globs(names)?;
    let _lock = WriterLock::take(root)?;
    let (mut p, _) = verify::entry::load_publisher(root, id)?;
    if p.names == names {
        return Ok(p);
    }
    let old = std::mem::replace(&mut p.names, names.to_vec());
    write(root, &p)?;
    let mut rec = AuditRecord::new(now(), AuditAction::PublisherNames, AuditOutcome::Allowed);
    rec.publisher = Some(id.to_string());
    rec.level = Some(p.level);
    let shown = |n: &[String]| match n {
        [] => "(any)".to_owned(),
        n => n.join(" "),
    };
    rec.detail = Some(format!("names {} -> {}", shown(&old), shown(names)));
    audit(root, &rec)?;
    Ok(p)
}

/// Adds `key` to an existing publisher record. `Ok(false)`: it already has this exact key.
fn add_key(
    p: &mut Publisher,
    path: &Path,
    key: PublisherKey,
    pubkey_file: &Path,
) -> Result<bool, RegisterError> {
    let id = p.id.clone();
    if let Some(rev) = &p.revoked {
        return Err(VerifyError::PublisherRevoked {
            id: id.to_string(),
            path: path.to_path_buf(),
            reason: rev.reason.clone(),
        }
        .into());
    }
    let hex = verify::signature::key_bytes_hex(&key.public_key);
    if let Some(k) = p
        .keys
        .iter()
        .find(|k| k.key_id != key.key_id && verify::signature::key_bytes_hex(&k.public_key) == hex)
    {
        // The same key under another id: it would count twice toward a threshold.
        return match &k.revoked {
            Some(_) => Err(RegisterError::KeyWasRevoked {
                id: id.to_string(),
                key_id: k.key_id.clone(),
                path: path.to_path_buf(),
            }),
            None => Err(VerifyError::PubkeyMalformed {
                path: pubkey_file.to_path_buf(),
                reason: format!(
                    "publisher {:?} already has this key, as key id {}",
                    id.as_str(),
                    k.key_id
                ),
            }
            .into()),
        };
    }
    match p.keys.iter().find(|k| k.key_id == key.key_id) {
        Some(k) if k.revoked.is_some() => Err(RegisterError::KeyWasRevoked {
            id: id.to_string(),
            key_id: key.key_id,
            path: path.to_path_buf(),
        }),
        Some(k) if k.public_key == key.public_key => Ok(false),
        Some(_) => Err(VerifyError::PubkeyMalformed {
            path: pubkey_file.to_path_buf(),
            reason: format!(
                "publisher {:?} already has a different key with id {}",
                id.as_str(),
                key.key_id
            ),
        }
        .into()),
        None => {
            p.keys.push(key);
            Ok(true)
        }
    }
}

/// `publisher rotate`: adds a new key to an existing publisher, accepted only with a transition
/// statement (`proto::trust::KeyTransition`) naming this publisher and exactly this key, signed
/// by a key of the publisher that is valid now (not revoked, inside its bounds, not denied); or,
/// without a statement, on the owner's `--force-by-owner`, recorded in the audit log.
pub fn rotate(root: &Root, id: &Name, a: &PublisherRotateArgs) -> Result<Publisher, RegisterError> {
    crate::check_registry_writable(root)?;
    let ctx = TrustContext::load(root)?;
    let bounds = Bounds {
        not_before: a.not_before,
        not_after: a.not_after,
    };
    let new_key = read_key(root, &ctx, &a.pubkey, bounds)?;
    let _lock = WriterLock::take(root)?;
    let (mut p, path) = verify::entry::load_publisher(root, id)?;
    let signer = match (&a.transition, a.force_by_owner) {
        (Some(t), _) => Some(check_transition(root, &ctx, &p, &path, &new_key, t)?),
        (None, true) => None,
        (None, false) => {
            return Err(RegisterError::TransitionMissing {
                id: id.to_string(),
                next: rotate_hint(root, id, &a.pubkey),
            })
        }
    };
    if !add_key(&mut p, &path, new_key.clone(), &a.pubkey)? {
        return Ok(p);
    }
    write(root, &p)?;
    let mut rec = key_record(AuditAction::PublisherRotate, id, &new_key, None);
    match signer {
        Some(k) => rec.detail = Some(format!("transition signed by key {k}")),
        None => rec.overrides.push("force-by-owner".to_owned()),
    }
    audit(root, &rec)?;
    Ok(p)
}

fn rotate_hint(root: &Root, id: &Name, pubkey: &Path) -> Next {
    Next::cmd("dot-register")
        .args(["publisher", "rotate", "--root"])
        .arg(root.path())
        .args(["--id", id.as_str(), "--pubkey"])
        .arg(pubkey)
        .arg("--transition")
        .raw("FILE.minisig")
}

/// The statement's and its signature's paths from `--transition`: `FILE.minisig` names the
/// signature (statement `FILE`); any other path names the statement (signature beside it).
fn transition_paths(t: &Path) -> (PathBuf, PathBuf) {
    use std::os::unix::ffi::OsStrExt;
    let bytes = t.as_os_str().as_bytes();
    match bytes.strip_suffix(b".minisig") {
        Some(stmt) => (
            PathBuf::from(std::ffi::OsStr::from_bytes(stmt)),
            t.to_path_buf(),
        ),
        None => {
            let mut sig = t.as_os_str().to_owned();
            sig.push(".minisig");
            (t.to_path_buf(), PathBuf::from(sig))
        }
    }
}

/// Checks a transition statement; returns the id of the key that signed it.
fn check_transition(
    root: &Root,
    ctx: &TrustContext,
    p: &Publisher,
    pub_path: &Path,
    new_key: &PublisherKey,
    t: &Path,
) -> Result<String, RegisterError> {
    let (stmt_path, sig_path) = transition_paths(t);
    let stmt = read_input_limited(&stmt_path, ctx.policy.limit(Limit::Entry))?;
    let sig = read_input_limited(&sig_path, ctx.policy.limit(Limit::Signature))?;
    ctx.check_size(root, &sig_path, Limit::Signature, sig.len() as u64)?;
    let signer = verify::signature::signature_key_id(&sig).map_err(|e| e.with_path(&sig_path))?;
    ctx.check_key(root, &signer)?;
    let info = verify::entry::check_by_publisher(p, pub_path, &signer, &sig, &stmt)
        .map_err(|e| e.with_path(&sig_path))?;
    let key = p.keys.iter().find(|k| k.key_id == signer);
    // The signer is known by its bytes too: denied or revoked under another id, it signs nothing.
    if let Some(hex) = key.and_then(|k| verify::signature::key_bytes_hex(&k.public_key)) {
        ctx.check_key_bytes(root, &hex, &signer)?;
        let store = verify::signers::load_store(root)?;
        verify::trust::check_bytes_not_revoked(&verify::trust::revocations(&store), &hex, &signer)?;
    }
    // The signing key must be valid now (a rotation is a present act), and at its signature's
    // timestamp when it carries one.
    if let Some(k) = key {
        if !k.valid_at(ctx.now) {
            return Err(VerifyError::KeyNotValidAt {
                id: p.id.to_string(),
                key_id: signer.clone(),
                at: ctx.now,
                not_before: k.not_before,
                not_after: k.not_after,
            }
            .into());
        }
        ctx.check_signature_time(&p.id, k, &info)
            .map_err(|e| e.with_path(&sig_path))?;
    }
    let invalid = |why: String| RegisterError::TransitionInvalid {
        path: stmt_path.clone(),
        why,
    };
    let doc = KeyTransition::parse(&stmt).map_err(|e| invalid(e.to_string()))?;
    if doc.publisher != p.id {
        return Err(invalid(format!(
            "it is for publisher {:?}, not {:?}",
            doc.publisher.as_str(),
            p.id.as_str()
        )));
    }
    if doc.new_key_id != new_key.key_id || doc.new_public_key != new_key.public_key {
        return Err(invalid(format!(
            "it names key {}, not the new key {}",
            doc.new_key_id, new_key.key_id
        )));
    }
    Ok(signer)
}

fn key_record(
    action: AuditAction,
    id: &Name,
    key: &PublisherKey,
    detail: Option<String>,
) -> AuditRecord {
    let mut rec = AuditRecord::new(now(), action, AuditOutcome::Allowed);
    rec.publisher = Some(id.to_string());
    rec.key_id = Some(key.key_id.clone());
    rec.detail = detail;
    rec
}

/// Revokes publisher `id` (or only its key `key_id`). Revoking again keeps the first revocation.
pub fn revoke(
    root: &Root,
    id: &Name,
    reason: &str,
    key_id: Option<&str>,
) -> Result<Publisher, RegisterError> {
    crate::check_registry_writable(root)?;
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
            // As minisign prints it, leading zeros left out: the id of the record's key.
            let typed = proto::trust::parse_key_id(kid);
            let found = p
                .keys
                .iter_mut()
                .find(|k| typed.as_deref() == Some(k.key_id.as_str()));
            let Some(k) = found else {
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
    let mut rec = AuditRecord::new(now(), AuditAction::PublisherRevoke, AuditOutcome::Allowed);
    rec.publisher = Some(id.to_string());
    rec.key_id = key_id.map(|k| proto::trust::parse_key_id(k).unwrap_or_else(|| k.to_owned()));
    rec.detail = Some(reason.to_owned());
    audit(root, &rec)?;
    Ok(p)
}

/// Every publisher record of the trust store, by id.
pub fn list(root: &Root) -> Result<Vec<Publisher>, RegisterError> {
    crate::check_registry(root)?;
    let ids: Vec<Name> = verify::root::json_stems(&root.publishers())?
        .iter()
        .filter_map(|stem| Name::new(stem).ok())
        .collect();
    ids.iter()
        .map(|id| Ok(verify::entry::load_publisher(root, id)?.0))
        .collect()
}

fn write(root: &Root, p: &Publisher) -> Result<(), RegisterError> {
    write_private(&root.publisher(&p.id), &p.to_bytes())
}
