//! One line of `ROOT/audit.log`: a trust decision or a launch decision.

use super::TrustDocError;
use crate::digest::Sha256;
use crate::error::Kind;
use crate::strict;
use serde::{Deserialize, Serialize};

/// The audit record version this code writes and reads.
pub const AUDIT_VERSION: u32 = 1;

/// One line of `ROOT/audit.log`: one decision that changed the root's trust, or one launch
/// decision (allowed or refused).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditRecord {
    pub v: u32,
    /// Unix seconds.
    pub at: u64,
    pub action: AuditAction,
    pub outcome: AuditOutcome,
    /// The error kind of a refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Kind>,
    /// The plugin name, for entry and launch decisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// Every key whose signature counted, when the publisher's threshold is above 1.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub key_ids: Vec<String>,
    /// The publisher's level (`trusted`, `verified`) the decision was made at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<crate::publisher::Level>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Sha256>,
    /// The owner's explicit overrides that applied (`allow-downgrade`, `reset-high-water`,
    /// `force-by-owner`, `allow-dynamic`, `accept-changes sha256:…`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// Free text: a reason given, a refusal's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuditAction {
    Register,
    Replace,
    Remove,
    PublisherAdd,
    PublisherRotate,
    PublisherRevoke,
    PublisherThreshold,
    PublisherLevel,
    PublisherNames,
    DenyAdd,
    DenyRemove,
    PolicySet,
    Launch,
    /// An admin mask written (`dot-register mask`), in the admin layer's log.
    Mask,
    /// An admin mask removed (`dot-register unmask`).
    Unmask,
}

/// Allowed or refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuditOutcome {
    Allowed,
    Refused,
}

impl AuditRecord {
    pub fn new(at: u64, action: AuditAction, outcome: AuditOutcome) -> AuditRecord {
        AuditRecord {
            v: AUDIT_VERSION,
            at,
            action,
            outcome,
            kind: None,
            name: None,
            version: None,
            publisher: None,
            key_id: None,
            key_ids: Vec::new(),
            level: None,
            sha256: None,
            overrides: Vec::new(),
            detail: None,
        }
    }

    /// One line: compact JSON and `\n`.
    pub fn to_line(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec(self).unwrap_or_default();
        v.push(b'\n');
        v
    }

    /// Parses one line (without its newline).
    pub fn parse_line(line: &[u8]) -> Result<AuditRecord, TrustDocError> {
        let r: AuditRecord = strict::from_slice(line, strict::MAX_DOCUMENT)?;
        if r.v != AUDIT_VERSION {
            return Err(TrustDocError::Invalid {
                field: "v",
                message: format!("unsupported version {}; this reads {AUDIT_VERSION}", r.v),
            });
        }
        Ok(r)
    }
}
