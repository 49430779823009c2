//! The root's trust-lifecycle documents (docs/trust.md), one module each: the deny list, the root
//! policy, the high-water versions, an owner's grant for an entry, a key-rotation statement, the
//! canonical difference that needs re-consent, and the audit-log record. Types and pure rules only,
//! no I/O. What they share is here: the schema, the error, the way they are written, key ids and the
//! signature's timestamp.

mod audit;
mod changes;
mod deny;
mod grant;
mod high_water;
mod policy;
mod transition;

pub use audit::{AuditAction, AuditOutcome, AuditRecord, AUDIT_VERSION};
pub use changes::{protocol_not_wider, Changes, RaisedLimit};
pub use deny::{is_key_hex, Denied, DenyList};
pub use grant::{Dependencies, Grant};
pub use high_water::HighWater;
pub use policy::{
    Limit, Policy, DEFAULT_EXPIRY_WARNING_DAYS, DEFAULT_MAX_EXE_BYTES, DEFAULT_MAX_KEY_BYTES,
    DEFAULT_MAX_SIGNATURE_BYTES,
};
pub use transition::KeyTransition;

use serde::Serialize;

/// The schema every trust-lifecycle document of this module carries.
pub const TRUST_SCHEMA: u32 = 1;

/// Why a trust document is not valid.
pub type TrustDocError = crate::strict::DocError;

fn check_schema(schema: u32) -> Result<(), TrustDocError> {
    if schema == TRUST_SCHEMA {
        Ok(())
    } else {
        Err(TrustDocError::Invalid {
            field: "schema",
            message: format!("unsupported schema {schema}; this version reads {TRUST_SCHEMA}"),
        })
    }
}

/// Pretty JSON and a trailing newline, as every trust document is written.
fn doc_bytes<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).unwrap_or_default();
    out.push(b'\n');
    out
}

/// 16 uppercase hex digits, as minisign prints a key id.
pub fn is_key_id(s: &str) -> bool {
    s.len() == 16
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
}

/// A key id typed by a person, as the 16 uppercase hex digits the documents hold: 1 to 16
/// uppercase hex digits, zero-padded on the left. The minisign CLI prints a key id without its
/// leading zeros (`%llX`: 15 digits for about one key in 16), and what it prints must name the key.
pub fn parse_key_id(s: &str) -> Option<String> {
    let ok = (1..=16).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b));
    ok.then(|| format!("{s:0>16}"))
}

/// The `timestamp:N` field of a minisign trusted comment (`timestamp:<unix>\tfile:…`), if present
/// and a number.
pub fn comment_timestamp(trusted_comment: &str) -> Option<u64> {
    trusted_comment
        .split('\t')
        .find_map(|f| f.strip_prefix("timestamp:"))
        .and_then(|n| n.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_id_is_taken_as_minisign_prints_it() {
        assert_eq!(
            parse_key_id("BAE85C4B60B625").as_deref(),
            Some("00BAE85C4B60B625")
        );
        assert_eq!(
            parse_key_id("97EA6871837E5DF2").as_deref(),
            Some("97EA6871837E5DF2")
        );
        assert_eq!(parse_key_id("1").as_deref(), Some("0000000000000001"));
        for bad in [
            "",
            "0123456789ABCDEF0",
            "XYZ",
            "12 34",
            "+1",
            "97ea6871837e5df2",
        ] {
            assert_eq!(parse_key_id(bad), None, "{bad:?}");
        }
        assert!(parse_key_id("BAE85C4B60B625").is_some_and(|k| is_key_id(&k)));
    }

    #[test]
    fn timestamp_comes_from_the_trusted_comment() {
        assert_eq!(
            comment_timestamp("timestamp:1700000000\tfile:a.json\thashed"),
            Some(1_700_000_000)
        );
        assert_eq!(comment_timestamp("file:a.json"), None);
        assert_eq!(comment_timestamp("timestamp:soon"), None);
    }
}
