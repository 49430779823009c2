//! Which signatures of a signed entry count, and what the publisher may sign: the rules of a
//! publisher record beyond its keys (docs/trust.md "Thresholds, levels and names").
//!
//! 1. the deny list first: every signature's key id
//! 2. the publisher the entry names: in the trust store, not revoked
//! 3. the rules that bind it: its own threshold, level and name pins, and — for an entry of the
//!    vendor layer — those of the admin layer's records of the same publisher (the same id, or a
//!    key with the same bytes): the highest threshold, the strictest level, every layer's pins;
//!    and each such admin record *governs* the entry: its threshold is met only by keys whose
//!    bytes that record holds (a record merely named like the admin's, or holding one of its keys
//!    beside keys of its own, brings no key of its own into the admin's count)
//! 4. the name: inside the publisher's pins; without pins, not pinned by another publisher
//!    (`name-not-delegated`)
//! 5. every signature on its own (`signature`): a valid minisign signature over the entry's bytes
//!    by a key of the publisher, not revoked by bytes anywhere, not denied by bytes, valid at the
//!    signature's trusted time. A signature that passes counts for its key's bytes: the same key
//!    twice (under one id or two) counts once
//! 6. enough distinct keys for the threshold (`threshold-not-met`; with a threshold of 1 the one
//!    failing signature's own refusal, as before thresholds), and for each governing admin record
//!    enough of *its* keys (`threshold-not-met`, naming that record): so the admin's pins and
//!    threshold are kept by the admin's keys, not by a publisher id
//! 7. the level: an `audit` entry of a `verified` publisher is `level-needs-process`

use crate::entry::{check_by_publisher, load_publisher, Signed};
use crate::error::{Shortfall, Undelegated, VerifyError};
use crate::signature::{self, SignatureInfo};
use crate::trust::{self, TrustContext};
use proto::layout::Root;
use proto::publisher::Level;
use proto::{Containment, Entry, Name, Publisher};
use std::path::{Path, PathBuf};

/// Every publisher record of `root`'s trust store, by id; a malformed one refuses (fail closed).
pub fn load_store(root: &Root) -> Result<Vec<(Publisher, PathBuf)>, VerifyError> {
    let mut out = Vec::new();
    for stem in crate::root::json_stems(&root.publishers())? {
        let Ok(id) = Name::new(&stem) else { continue };
        out.push(load_publisher(root, &id)?);
    }
    Ok(out)
}

/// The Ed25519 bytes (hex) of each key of `p`.
fn key_bytes(p: &Publisher) -> Vec<String> {
    p.keys
        .iter()
        .filter_map(|k| signature::key_bytes_hex(&k.public_key))
        .collect()
}

/// What binds a publisher's entries: its record and the records above it of the same publisher.
#[derive(Debug)]
pub struct Rules {
    pub threshold: u32,
    /// The record that set the threshold (for the messages).
    pub threshold_from: PathBuf,
    pub level: Level,
    /// The record that set the level, and its root (where the level is changed).
    pub level_from: (PathBuf, Root),
    /// Each record's pins (record path, its root, globs), when it has any.
    pub pins: Vec<(PathBuf, Root, Vec<String>)>,
    /// The records of the layers above that govern the publisher: only their own keys count
    /// toward their thresholds.
    pub governing: Vec<Governing>,
}

/// A record of a layer above (the admin layer's) that governs a publisher of the entry's layer:
/// the same id, or a key with the same bytes.
#[derive(Debug)]
pub struct Governing {
    /// The record's path.
    pub path: PathBuf,
    pub id: Name,
    /// Its threshold (at least 1: one of its keys must sign).
    pub threshold: u32,
    /// The Ed25519 bytes (hex) of its keys: the only keys that count toward its threshold.
    pub keys: Vec<String>,
}

impl Rules {
    /// The rules for `p` (at `path` in `root`), with the records of the layers above (`ctx`).
    pub fn of(root: &Root, p: &Publisher, path: &Path, ctx: &TrustContext) -> Rules {
        let mut r = Rules {
            threshold: p.threshold,
            threshold_from: path.to_path_buf(),
            level: p.level,
            level_from: (path.to_path_buf(), root.clone()),
            pins: Vec::new(),
            governing: Vec::new(),
        };
        if !p.names.is_empty() {
            r.pins
                .push((path.to_path_buf(), root.clone(), p.names.clone()));
        }
        let mine = key_bytes(p);
        for o in &ctx.others {
            for (q, qpath) in &o.above {
                let theirs = key_bytes(q);
                let same = q.id == p.id || theirs.iter().any(|b| mine.contains(b));
                if !same {
                    continue;
                }
                r.governing.push(Governing {
                    path: qpath.clone(),
                    id: q.id.clone(),
                    threshold: q.threshold.max(1),
                    keys: theirs,
                });
                if q.threshold > r.threshold {
                    r.threshold = q.threshold;
                    r.threshold_from = qpath.clone();
                }
                if q.level > r.level {
                    r.level = q.level;
                    r.level_from = (qpath.clone(), o.root.clone());
                }
                if !q.names.is_empty() {
                    r.pins
                        .push((qpath.clone(), o.root.clone(), q.names.clone()));
                }
            }
        }
        r
    }
}

/// The signed-trust check of an entry with its signatures `sigs` (steps of the module
/// documentation). Errors carry no path; `ThresholdNotMet` carries no `next` (the caller knows
/// the command that adds a signature).
pub fn check_signed(
    root: &Root,
    ctx: &TrustContext,
    entry: &Entry,
    entry_bytes: &[u8],
    sigs: &[Vec<u8>],
) -> Result<Signed, VerifyError> {
    let Some(id) = &entry.publisher else {
        return Err(VerifyError::EntryMalformed {
            path: PathBuf::new(),
            source: proto::entry::EntryError::Invalid {
                field: "publisher",
                value: String::new(),
                message: "a signed entry must name its publisher".to_owned(),
            },
        });
    };
    for sig in sigs {
        if let Ok(key_id) = signature::signature_key_id(sig) {
            ctx.check_key(root, &key_id)?;
        }
    }
    // Every record is read once: the publisher's own from the store (absent: `publisher-unknown`).
    let store = load_store(root)?;
    let (publisher, pub_path) = match store.iter().find(|(p, _)| p.id == *id) {
        Some(found) => found.clone(),
        None => load_publisher(root, id)?,
    };
    if let Some(rev) = &publisher.revoked {
        return Err(VerifyError::PublisherRevoked {
            id: id.to_string(),
            path: pub_path,
            reason: rev.reason.clone(),
        });
    }
    let rules = Rules::of(root, &publisher, &pub_path, ctx);
    check_name(root, entry, &publisher, &store, &rules, ctx)?;
    let revoked = trust::revocations(&store);
    let mut counted: Vec<(String, Signed)> = Vec::new();
    let mut failed: Vec<VerifyError> = Vec::new();
    let mut uncounted: Vec<String> = Vec::new();
    for sig in sigs {
        match signature(root, ctx, &publisher, &pub_path, &revoked, entry_bytes, sig) {
            Ok((hex, s)) => match counted.iter().find(|(h, _)| *h == hex) {
                Some((_, first)) => uncounted.push(format!(
                    "the signature by key {} is by the same key as {}'s: a key counts once",
                    s.info.key_id, first.info.key_id
                )),
                None => counted.push((hex, s)),
            },
            Err(e @ VerifyError::Denied { .. }) => return Err(e),
            Err(e) => {
                uncounted.push(e.to_string());
                failed.push(e);
            }
        }
    }
    let needed = (rules.threshold as usize).max(1);
    if counted.len() < needed {
        if needed == 1 {
            if let Some(e) = failed.into_iter().next() {
                return Err(e);
            }
        }
        return Err(VerifyError::ThresholdNotMet(Box::new(Shortfall {
            path: PathBuf::new(),
            id: id.to_string(),
            name: entry.name.to_string(),
            needed: rules.threshold,
            counted: counted.iter().map(|(_, s)| s.info.key_id.clone()).collect(),
            uncounted,
            record: rules.threshold_from,
            next: None,
        })));
    }
    // Each governing record of the layer above counts its own keys only.
    for g in &rules.governing {
        let mine: Vec<&Signed> = counted
            .iter()
            .filter(|(hex, _)| g.keys.contains(hex))
            .map(|(_, s)| s)
            .collect();
        if mine.len() < g.threshold as usize {
            let mut why = uncounted.clone();
            why.extend(
                counted
                    .iter()
                    .filter(|(hex, _)| !g.keys.contains(hex))
                    .map(|(_, s)| {
                        format!(
                            "key {} is not a key of {} ({}): only that record's keys count toward its threshold",
                            s.info.key_id,
                            g.id,
                            g.path.display()
                        )
                    }),
            );
            return Err(VerifyError::ThresholdNotMet(Box::new(Shortfall {
                path: PathBuf::new(),
                id: g.id.to_string(),
                name: entry.name.to_string(),
                needed: g.threshold,
                counted: mine.iter().map(|s| s.info.key_id.clone()).collect(),
                uncounted: why,
                record: g.path.clone(),
                next: None,
            })));
        }
    }
    if rules.level == Level::Verified && entry.containment == Containment::Audit {
        let (record, at) = rules.level_from;
        return Err(VerifyError::LevelNeedsProcess {
            name: entry.name.to_string(),
            id: id.to_string(),
            path: record,
            root: at.path().to_path_buf(),
        });
    }
    let key_ids: Vec<String> = counted.iter().map(|(_, s)| s.info.key_id.clone()).collect();
    // What comes due first: the earliest key end, the oldest signature (it reaches the maximum
    // age first).
    let key_not_after = counted.iter().filter_map(|(_, s)| s.key_not_after).min();
    let signed_at = counted.iter().filter_map(|(_, s)| s.signed_at).min();
    let mut first = counted.swap_remove(0).1;
    first.key_ids = key_ids;
    first.key_not_after = key_not_after;
    first.signed_at = signed_at;
    first.level = rules.level;
    first.threshold = rules.threshold;
    Ok(first)
}

/// One signature: valid over `data` by a non-revoked key of `publisher`, whose bytes no trust
/// store revokes and no deny list refuses, valid at the signature's time. Returns the key's bytes
/// (hex) and what the signature says.
fn signature(
    root: &Root,
    ctx: &TrustContext,
    publisher: &Publisher,
    pub_path: &Path,
    revoked: &[trust::Revocation],
    data: &[u8],
    sig: &[u8],
) -> Result<(String, Signed), VerifyError> {
    let id = &publisher.id;
    let key_id = signature::signature_key_id(sig)?;
    ctx.check_revoked_elsewhere(id, &key_id)?;
    let info: SignatureInfo = check_by_publisher(publisher, pub_path, &key_id, sig, data)?;
    let key = publisher
        .keys
        .iter()
        .find(|k| k.key_id == key_id)
        .ok_or_else(|| VerifyError::SignatureInvalid {
            path: PathBuf::new(),
            reason: "key id changed while checking".to_owned(),
        })?;
    let hex =
        signature::key_bytes_hex(&key.public_key).ok_or_else(|| VerifyError::SignatureInvalid {
            path: PathBuf::new(),
            reason: format!("key {key_id} is not an Ed25519 minisign key"),
        })?;
    ctx.check_key_bytes(root, &hex, &key_id)?;
    trust::check_bytes_not_revoked(revoked, &hex, &key_id)?;
    ctx.check_bytes_revoked_elsewhere(&hex, &key_id)?;
    let signed_at = ctx.check_signature_time(id, key, &info)?;
    Ok((
        hex,
        Signed {
            key_ids: Vec::new(),
            key_not_after: key.not_after,
            signed_at,
            info,
            level: publisher.level,
            threshold: publisher.threshold,
        },
    ))
}

/// A name belongs to its publisher: inside every pin that binds the publisher (its own record's
/// `names`, the admin layer's); without pins of its own, a name another publisher pins (in this
/// trust store, or in a layer above) is refused.
fn check_name(
    root: &Root,
    entry: &Entry,
    publisher: &Publisher,
    store: &[(Publisher, PathBuf)],
    rules: &Rules,
    ctx: &TrustContext,
) -> Result<(), VerifyError> {
    let name = entry.name.as_str();
    let refuse = |by: Option<&Name>, path: &Path, pin_root: &Root, globs: &[String]| {
        VerifyError::NameNotDelegated(Box::new(Undelegated {
            name: name.to_owned(),
            id: publisher.id.to_string(),
            claimed_by: by.map(|b| b.to_string()),
            globs: globs.to_vec(),
            path: path.to_path_buf(),
            root: pin_root.path().to_path_buf(),
        }))
    };
    for (path, pin_root, globs) in &rules.pins {
        if !globs
            .iter()
            .any(|g| proto::publisher::name_glob_matches(g, name))
        {
            return Err(refuse(None, path, pin_root, globs));
        }
    }
    if !rules.pins.is_empty() {
        return Ok(());
    }
    let above = ctx
        .others
        .iter()
        .flat_map(|o| o.above.iter().map(move |(q, p)| (q, p, &o.root)));
    let here = store.iter().map(|(q, p)| (q, p, root));
    for (q, path, q_root) in here.chain(above) {
        if q.id != publisher.id && q.revoked.is_none() && q.pins(name) {
            return Err(refuse(Some(&q.id), path, q_root, &q.names));
        }
    }
    Ok(())
}
