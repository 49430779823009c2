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
}
