//! `plugins.d/NAME.json.grant`: the owner's grant for one executable, and whether what runs is pinned.

use super::{check_schema, doc_bytes, TrustDocError};
use crate::digest::Sha256;
use crate::name::Name;
use crate::strict;
use serde::{Deserialize, Serialize};

/// `plugins.d/NAME.json.grant`: what the root's owner granted one registered executable that its
/// signed entry cannot carry. Today: `--allow-dynamic` for an `audit` executable that is not a
/// static ELF (its libraries or interpreter are not pinned).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    pub schema: u32,
    pub name: Name,
    /// The executable the grant is for; a grant for another digest grants nothing.
    pub sha256: Sha256,
    /// Unix seconds when `--allow-dynamic` was given.
    pub allow_dynamic_at: u64,
}

impl Grant {
    pub fn parse(bytes: &[u8]) -> Result<Grant, TrustDocError> {
        let g: Grant = strict::from_slice(bytes, strict::MAX_DOCUMENT)?;
        check_schema(g.schema)?;
        Ok(g)
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        doc_bytes(self)
    }
}

/// Whether everything a plugin executes is pinned by the entry's digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dependencies {
    /// A static ELF: the pinned bytes are all that runs.
    Pinned,
    /// A script or dynamic ELF run under an owner's `--allow-dynamic` grant: its interpreter and
    /// libraries come from the host and are not pinned.
    Unpinned,
    /// A script or dynamic ELF under `process` with the entry's runtime directories: its own bytes
    /// are pinned, its interpreter and libraries are the host's files in those directories, read
    /// only and not pinned.
    Runtime,
}
