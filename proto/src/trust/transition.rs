//! A key-rotation statement: "publisher P adds key NEW", signed by a current key.

use super::{check_schema, doc_bytes, is_key_id, TrustDocError};
use crate::name::Name;
use crate::strict;
use serde::{Deserialize, Serialize};

/// A key-rotation statement, signed with minisign by a currently valid key of the publisher:
/// "publisher P adds key NEW". `dot-register publisher rotate` accepts a new key only with one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyTransition {
    pub schema: u32,
    pub publisher: Name,
    pub new_key_id: String,
    /// The base64 line of the new public key.
    pub new_public_key: String,
    /// Unix seconds when the statement was made.
    pub at: u64,
}

impl KeyTransition {
    pub fn parse(bytes: &[u8]) -> Result<KeyTransition, TrustDocError> {
        let t: KeyTransition = strict::from_slice(bytes, strict::MAX_DOCUMENT)?;
        check_schema(t.schema)?;
        if !is_key_id(&t.new_key_id) {
            return Err(TrustDocError::Invalid {
                field: "new_key_id",
                message: format!("{:?} is not 16 uppercase hex digits", t.new_key_id),
            });
        }
        Ok(t)
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        doc_bytes(self)
    }
}
