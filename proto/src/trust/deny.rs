//! `ROOT/trust/deny.json`: digests and key ids refused everywhere.

use super::{check_schema, doc_bytes, is_key_id, TrustDocError, TRUST_SCHEMA};
use crate::digest::Sha256;
use crate::strict;
use serde::{Deserialize, Serialize};

/// `ROOT/trust/deny.json`: digests and key ids refused everywhere, before any other check.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenyList {
    pub schema: u32,
    /// Refused executable digests (also matched against the entry file's own digest).
    pub digests: Vec<Denied<Sha256>>,
    /// Refused minisign key ids.
    pub keys: Vec<Denied<String>>,
    /// Refused Ed25519 public keys, by their 32 bytes (64 lowercase hex digits): a key is refused
    /// under whatever key id it is listed or signs with (minisign's key id is not signed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ed25519: Vec<Denied<String>>,
}

/// One deny-list item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Denied<T> {
    pub value: T,
    pub reason: String,
    /// Unix seconds when it was added.
    pub at: u64,
}

impl DenyList {
    pub fn empty() -> DenyList {
        DenyList {
            schema: TRUST_SCHEMA,
            ..Default::default()
        }
    }

    pub fn parse(bytes: &[u8]) -> Result<DenyList, TrustDocError> {
        let d: DenyList = strict::from_slice(bytes, strict::MAX_DOCUMENT)?;
        check_schema(d.schema)?;
        if let Some(k) = d.keys.iter().find(|k| !is_key_id(&k.value)) {
            return Err(TrustDocError::Invalid {
                field: "keys.value",
                message: format!("{:?} is not 16 uppercase hex digits", k.value),
            });
        }
        if let Some(k) = d.ed25519.iter().find(|k| !is_key_hex(&k.value)) {
            return Err(TrustDocError::Invalid {
                field: "ed25519.value",
                message: format!("{:?} is not 64 lowercase hex digits", k.value),
            });
        }
        Ok(d)
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        doc_bytes(self)
    }

    pub fn digest(&self, d: &Sha256) -> Option<&Denied<Sha256>> {
        self.digests.iter().find(|x| x.value == *d)
    }

    pub fn key(&self, key_id: &str) -> Option<&Denied<String>> {
        self.keys.iter().find(|x| x.value == key_id)
    }

    /// The item denying the Ed25519 key `hex` (64 lowercase hex digits), if any.
    pub fn key_bytes(&self, hex: &str) -> Option<&Denied<String>> {
        self.ed25519.iter().find(|x| x.value == hex)
    }
}

/// 64 lowercase hex digits: an Ed25519 public key's 32 bytes.
pub fn is_key_hex(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
