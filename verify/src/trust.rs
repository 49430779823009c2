//! The trust-lifecycle checks `verify_entry` (and so `dot-launch`) and `dot-register` share: the deny
//! list, the root policy (size limits, maximum signature age), key validity at the signature's
//! trusted timestamp, entry expiry, and the owner's `--allow-dynamic` grant. docs/trust.md.

use crate::entry::read_doc;
use crate::error::VerifyError;
use crate::signature::SignatureInfo;
use proto::layout::Root;
use proto::publisher::PublisherKey;
use proto::trust::{comment_timestamp, DenyList, Grant, HighWater, Limit, Policy, TrustDocError};
use proto::Publisher;
use proto::{Entry, Name, Sha256};
use std::path::Path;
use std::path::PathBuf;

/// Unix seconds now (the system clock: docs/trust.md says what that means).
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// How far after this machine's clock a signature's trusted timestamp may lie (5 minutes: the
/// signer's clock and ours may differ a little). Further, it is `signature-time-future`, wherever
/// the signature's time matters (a key with a validity window, a maximum signature age).
pub const MAX_SIGNATURE_SKEW_SECS: u64 = 300;

/// What every trust decision of one command reads once: the deny list, the policy, the time.
#[derive(Clone, Debug)]
pub struct TrustContext {
    pub deny: DenyList,
    pub policy: Policy,
    pub now: u64,
    /// For an entry of a system layer: the other layers' deny lists and revocations, which apply
    /// to it too (docs/registry.md "System layers"). Empty for a single root.
    pub others: Vec<OtherLayer>,
}

/// What another system layer contributes to the trust decisions about an entry: its deny list and
/// the revocations in its trust store; and, from a layer above the entry's (the admin layer over
/// the vendor layer), its publisher records, whose threshold, level and name pins bind the entry's
/// publisher too (`crate::signers`).
#[derive(Clone, Debug)]
pub struct OtherLayer {
    pub root: Root,
    pub deny: DenyList,
    pub revoked: Vec<Revocation>,
    /// The layer is above the entry's: its publisher records constrain the entry's publisher.
    pub above: Vec<(Publisher, PathBuf)>,
}

/// A revocation recorded in a publisher record: the whole publisher (`key_id: None`, with all its
/// keys in `keys`) or one key. `bytes` holds the revoked keys' Ed25519 bytes (hex), which is what
/// a revocation matches in every trust store, under whatever key id the key is listed again.
#[derive(Clone, Debug)]
pub struct Revocation {
    pub publisher: Name,
    pub key_id: Option<String>,
    pub keys: Vec<String>,
    pub bytes: Vec<String>,
    pub path: std::path::PathBuf,
    pub reason: String,
}

/// Every revocation recorded in the publisher records `publishers`.
pub fn revocations(publishers: &[(Publisher, PathBuf)]) -> Vec<Revocation> {
    let hex = |k: &PublisherKey| crate::signature::key_bytes_hex(&k.public_key);
    let mut out = Vec::new();
    for (p, path) in publishers {
        if let Some(rev) = &p.revoked {
            out.push(Revocation {
                publisher: p.id.clone(),
                key_id: None,
                keys: p.keys.iter().map(|k| k.key_id.clone()).collect(),
                bytes: p.keys.iter().filter_map(hex).collect(),
                path: path.clone(),
                reason: rev.reason.clone(),
            });
        }
        for k in &p.keys {
            if let Some(rev) = &k.revoked {
                out.push(Revocation {
                    publisher: p.id.clone(),
                    key_id: Some(k.key_id.clone()),
                    keys: Vec::new(),
                    bytes: hex(k).into_iter().collect(),
                    path: path.clone(),
                    reason: rev.reason.clone(),
                });
            }
        }
    }
    out
}

/// Refuses the key `hex` (listed as `key_id` by `publisher`) when one of `revoked` revokes those
/// bytes: as a key (`key-revoked`) or as a key of a revoked publisher (`publisher-revoked`).
pub fn check_bytes_not_revoked(
    revoked: &[Revocation],
    hex: &str,
    key_id: &str,
) -> Result<(), VerifyError> {
    let Some(r) = revoked.iter().find(|r| r.bytes.iter().any(|b| b == hex)) else {
        return Ok(());
    };
    Err(match &r.key_id {
        Some(k) => VerifyError::KeyRevoked {
            id: r.publisher.to_string(),
            key_id: match k == key_id {
                true => k.clone(),
                false => format!("{key_id} (the key revoked as {k})"),
            },
            path: r.path.clone(),
            reason: r.reason.clone(),
        },
        None => VerifyError::PublisherRevoked {
            id: r.publisher.to_string(),
            path: r.path.clone(),
            reason: r.reason.clone(),
        },
    })
}

impl TrustContext {
    /// Reads `trust/deny.json` and `trust/policy.json` (absent: empty list, defaults).
    pub fn load(root: &Root) -> Result<TrustContext, VerifyError> {
        Ok(TrustContext {
            deny: load_doc(&root.deny_list(), DenyList::parse)?.unwrap_or_else(DenyList::empty),
            policy: load_doc(&root.policy(), Policy::parse)?.unwrap_or_default(),
            now: now(),
            others: Vec::new(),
        })
    }

    /// The deny lists that apply, each with the root it is in: this root's, then the other
    /// layers'.
    fn deny_lists<'a>(&'a self, root: &'a Root) -> impl Iterator<Item = (&'a Root, &'a DenyList)> {
        std::iter::once((root, &self.deny)).chain(self.others.iter().map(|o| (&o.root, &o.deny)))
    }

    /// Refuses a denied digest (of an executable or of an entry file), on any deny list that
    /// applies.
    pub fn check_digest(&self, root: &Root, d: &Sha256) -> Result<(), VerifyError> {
        for (r, deny) in self.deny_lists(root) {
            if let Some(x) = deny.digest(d) {
                return Err(VerifyError::Denied {
                    path: r.deny_list(),
                    field: "sha256",
                    value: d.to_hex(),
                    reason: x.reason.clone(),
                    root: r.path().to_path_buf(),
                });
            }
        }
        Ok(())
    }

    /// Refuses a denied key id, on any deny list that applies.
    pub fn check_key(&self, root: &Root, key_id: &str) -> Result<(), VerifyError> {
        for (r, deny) in self.deny_lists(root) {
            if let Some(x) = deny.key(key_id) {
                return Err(VerifyError::Denied {
                    path: r.deny_list(),
                    field: "key_id",
                    value: key_id.to_owned(),
                    reason: x.reason.clone(),
                    root: r.path().to_path_buf(),
                });
            }
        }
        Ok(())
    }

    /// Refuses the Ed25519 key `hex` (signing as `key_id`) when any deny list that applies lists
    /// its bytes: reported as the key id it signs with, so that `deny remove --key ID` (which
    /// takes the bytes of that id's key off the list too) is the way back.
    pub fn check_key_bytes(&self, root: &Root, hex: &str, key_id: &str) -> Result<(), VerifyError> {
        for (r, deny) in self.deny_lists(root) {
            if let Some(x) = deny.key_bytes(hex) {
                return Err(VerifyError::Denied {
                    path: r.deny_list(),
                    field: "key_id",
                    value: key_id.to_owned(),
                    reason: x.reason.clone(),
                    root: r.path().to_path_buf(),
                });
            }
        }
        Ok(())
    }

    /// Refuses the key `hex` when another layer's trust store revokes those bytes.
    pub fn check_bytes_revoked_elsewhere(
        &self,
        hex: &str,
        key_id: &str,
    ) -> Result<(), VerifyError> {
        for o in &self.others {
            check_bytes_not_revoked(&o.revoked, hex, key_id)?;
        }
        Ok(())
    }

    /// Refuses a signature by `key_id` for `publisher` that another layer's trust store revokes:
    /// the key itself, or a publisher of that id or holding that key.
    pub fn check_revoked_elsewhere(
        &self,
        publisher: &Name,
        key_id: &str,
    ) -> Result<(), VerifyError> {
        for r in self.others.iter().flat_map(|o| &o.revoked) {
            match &r.key_id {
                Some(k) if k == key_id => {
                    return Err(VerifyError::KeyRevoked {
                        id: r.publisher.to_string(),
                        key_id: key_id.to_owned(),
                        path: r.path.clone(),
                        reason: r.reason.clone(),
                    })
                }
                None if r.publisher == *publisher || r.keys.iter().any(|k| k == key_id) => {
                    return Err(VerifyError::PublisherRevoked {
                        id: r.publisher.to_string(),
                        path: r.path.clone(),
                        reason: r.reason.clone(),
                    })
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The signature's time rule: with a `timestamp:N` in the authenticated trusted comment, the
    /// key must be valid at N (not revoked, inside its bounds) and N must not be older than the
    /// policy's maximum age. Without one, the signature is accepted only when the key has no
    /// bounds and the policy sets no maximum age. Where the time matters (the key has bounds, or
    /// the policy a maximum age), N may not lie more than [`MAX_SIGNATURE_SKEW_SECS`] after now: a
    /// signature from the future would never grow old.
    pub fn check_signature_time(
        &self,
        publisher: &Name,
        key: &PublisherKey,
        info: &SignatureInfo,
    ) -> Result<Option<u64>, VerifyError> {
        let Some(at) = comment_timestamp(&info.trusted_comment) else {
            if key.bounded() || self.policy.max_signature_age_secs.is_some() {
                return Err(VerifyError::SignatureTimeMissing {
                    key_id: key.key_id.clone(),
                    why: if key.bounded() {
                        "the key has a validity window"
                    } else {
                        "the root's policy sets a maximum signature age"
                    },
                });
            }
            return Ok(None);
        };
        let matters = key.bounded() || self.policy.max_signature_age_secs.is_some();
        if matters && at > self.now.saturating_add(MAX_SIGNATURE_SKEW_SECS) {
            return Err(VerifyError::SignatureTimeFuture {
                key_id: key.key_id.clone(),
                at,
                now: self.now,
                skew: MAX_SIGNATURE_SKEW_SECS,
            });
        }
        if !key.valid_at(at) {
            return Err(VerifyError::KeyNotValidAt {
                id: publisher.to_string(),
                key_id: key.key_id.clone(),
                at,
                not_before: key.not_before,
                not_after: key.not_after,
            });
        }
        if let Some(max) = self.policy.max_signature_age_secs {
            if self.now.saturating_sub(at) > max {
                return Err(VerifyError::SignatureTooOld {
                    key_id: key.key_id.clone(),
                    at,
                    max_age: max,
                });
            }
        }
        Ok(Some(at))
    }

    /// Refuses an entry whose signed `expires` time has come.
    pub fn check_expiry(&self, entry: &Entry, path: &Path) -> Result<(), VerifyError> {
        match entry.expires {
            Some(t) if self.now >= t => Err(VerifyError::EntryExpired {
                path: path.to_path_buf(),
                name: entry.name.to_string(),
                expires: t,
            }),
            _ => Ok(()),
        }
    }

    /// Refuses a size over one of the policy's limits.
    pub fn check_size(
        &self,
        root: &Root,
        path: &Path,
        limit: Limit,
        size: u64,
    ) -> Result<(), VerifyError> {
        let max = self.policy.limit(limit);
        if size > max {
            return Err(VerifyError::TooLarge {
                path: path.to_path_buf(),
                field: limit.field(),
                size,
                limit: max,
                root: root.path().to_path_buf(),
            });
        }
        Ok(())
    }
}

/// Reads and parses an optional trust document (`None` when absent).
pub fn load_doc<T>(
    path: &Path,
    parse: fn(&[u8]) -> Result<T, TrustDocError>,
) -> Result<Option<T>, VerifyError> {
    let Some(bytes) = read_doc(path)? else {
        return Ok(None);
    };
    parse(&bytes)
        .map(Some)
        .map_err(|source| VerifyError::TrustMalformed {
            path: path.to_path_buf(),
            source,
        })
}

/// `trust/high-water.json` (absent: empty).
pub fn load_high_water(root: &Root) -> Result<HighWater, VerifyError> {
    Ok(load_doc(&root.high_water(), HighWater::parse)?.unwrap_or_else(HighWater::empty))
}

/// The owner's grant for `entry`, if one exists for exactly this executable.
pub fn load_grant(root: &Root, entry: &Entry) -> Result<Option<Grant>, VerifyError> {
    Ok(load_doc(&root.entry_grant(&entry.name), Grant::parse)?
        .filter(|g| g.name == entry.name && g.sha256 == entry.sha256))
}
