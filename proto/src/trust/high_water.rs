//! `ROOT/trust/high-water.json`: the highest version ever registered under each name.

use super::{check_schema, doc_bytes, TrustDocError, TRUST_SCHEMA};
use crate::name::Name;
use crate::strict;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `ROOT/trust/high-water.json`: the highest version ever registered under each name. It survives
/// `remove`; only `--reset-high-water` lowers it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HighWater {
    pub schema: u32,
    pub versions: BTreeMap<Name, semver::Version>,
}

impl HighWater {
    pub fn empty() -> HighWater {
        HighWater {
            schema: TRUST_SCHEMA,
            versions: BTreeMap::new(),
        }
    }

    pub fn parse(bytes: &[u8]) -> Result<HighWater, TrustDocError> {
        let h: HighWater = strict::from_slice(bytes, strict::MAX_DOCUMENT)?;
        check_schema(h.schema)?;
        Ok(h)
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        doc_bytes(self)
    }
}
