//! The root's trust-lifecycle documents (docs/trust.md): the deny list, the root policy, the
//! high-water versions, an owner's grant for an entry, a key-rotation statement, the canonical
//! difference that needs re-consent, and the audit-log record. Types and pure rules only, no I/O.

use crate::digest::Sha256;
use crate::entry::{Containment, Entry, InputDecl};
use crate::name::Name;
use crate::strict::{self, StrictError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema every trust-lifecycle document of this module carries.
pub const TRUST_SCHEMA: u32 = 1;

/// Why a trust document is not valid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TrustDocError {
    #[error(transparent)]
    Decode(#[from] StrictError),
    #[error("field `{field}`: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
}

impl TrustDocError {
    /// The field that failed, when one did.
    pub fn field(&self) -> Option<&str> {
        match self {
            TrustDocError::Decode(e) => e.field(),
            TrustDocError::Invalid { field, .. } => Some(field),
        }
    }
}

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

// ---- deny list --------------------------------------------------------------------------------

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

// ---- policy -----------------------------------------------------------------------------------

/// Default largest pinned executable: 256 MiB.
pub const DEFAULT_MAX_EXE_BYTES: u64 = 256 << 20;
/// Default largest signature file: 4 KiB (a minisign signature is about 300 bytes).
pub const DEFAULT_MAX_SIGNATURE_BYTES: u64 = 4 << 10;
/// Default largest public key file: 4 KiB (a minisign public key file is about 100 bytes).
pub const DEFAULT_MAX_KEY_BYTES: u64 = 4 << 10;
/// Default warning window before an entry expires.
pub const DEFAULT_EXPIRY_WARNING_DAYS: u64 = 14;

/// `ROOT/trust/policy.json`: root-wide trust settings. Absent file = every default; an absent
/// field = its default.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    pub schema: u32,
    /// Refuse signatures whose trusted timestamp is older than this many seconds (none: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_signature_age_secs: Option<u64>,
    /// Warn this many days before an entry expires.
    #[serde(default = "default_warning_days")]
    pub expiry_warning_days: u64,
    /// Largest entry file, at most 64 KiB.
    #[serde(default = "default_max_entry")]
    pub max_entry_bytes: u64,
    #[serde(default = "default_max_sig")]
    pub max_signature_bytes: u64,
    #[serde(default = "default_max_key")]
    pub max_key_bytes: u64,
    #[serde(default = "default_max_exe")]
    pub max_exe_bytes: u64,
}

fn default_warning_days() -> u64 {
    DEFAULT_EXPIRY_WARNING_DAYS
}
fn default_max_entry() -> u64 {
    strict::MAX_DOCUMENT as u64
}
fn default_max_sig() -> u64 {
    DEFAULT_MAX_SIGNATURE_BYTES
}
fn default_max_key() -> u64 {
    DEFAULT_MAX_KEY_BYTES
}
fn default_max_exe() -> u64 {
    DEFAULT_MAX_EXE_BYTES
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            schema: TRUST_SCHEMA,
            max_signature_age_secs: None,
            expiry_warning_days: DEFAULT_EXPIRY_WARNING_DAYS,
            max_entry_bytes: default_max_entry(),
            max_signature_bytes: DEFAULT_MAX_SIGNATURE_BYTES,
            max_key_bytes: DEFAULT_MAX_KEY_BYTES,
            max_exe_bytes: DEFAULT_MAX_EXE_BYTES,
        }
    }
}

/// One of the policy's size limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Entry,
    Signature,
    Key,
    Exe,
}

impl Limit {
    /// The policy field that holds it.
    pub fn field(self) -> &'static str {
        match self {
            Limit::Entry => "max_entry_bytes",
            Limit::Signature => "max_signature_bytes",
            Limit::Key => "max_key_bytes",
            Limit::Exe => "max_exe_bytes",
        }
    }
}

impl Policy {
    /// The value of one size limit.
    pub fn limit(&self, l: Limit) -> u64 {
        match l {
            Limit::Entry => self.max_entry_bytes,
            Limit::Signature => self.max_signature_bytes,
            Limit::Key => self.max_key_bytes,
            Limit::Exe => self.max_exe_bytes,
        }
    }

    pub fn parse(bytes: &[u8]) -> Result<Policy, TrustDocError> {
        let p: Policy = strict::from_slice(bytes, strict::MAX_DOCUMENT)?;
        check_schema(p.schema)?;
        p.validate()?;
        Ok(p)
    }

    /// Document limits may only be lowered (64 KiB is the parser's own bound); no limit is 0.
    pub fn validate(&self) -> Result<(), TrustDocError> {
        let doc = strict::MAX_DOCUMENT as u64;
        let checks: [(&'static str, u64, u64); 4] = [
            ("max_entry_bytes", self.max_entry_bytes, doc),
            ("max_signature_bytes", self.max_signature_bytes, doc),
            ("max_key_bytes", self.max_key_bytes, doc),
            ("max_exe_bytes", self.max_exe_bytes, u64::MAX),
        ];
        for (field, v, max) in checks {
            if v == 0 || v > max {
                return Err(TrustDocError::Invalid {
                    field,
                    message: format!("{v} is outside 1..={max}"),
                });
            }
        }
        Ok(())
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        doc_bytes(self)
    }
}

// ---- high-water versions ----------------------------------------------------------------------

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

// ---- owner's grant ----------------------------------------------------------------------------

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
}

// ---- key rotation -----------------------------------------------------------------------------

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

// ---- re-consent on widening -------------------------------------------------------------------

/// The widening between a registered entry and its replacement that needs the owner's consent.
/// Serialized canonically (fixed field order, compact JSON); its SHA-256 is what
/// `--accept-changes sha256:HEX` names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Changes {
    pub name: Name,
    /// The registered entry's digest and the new one: an acceptance is for this exact pair.
    pub from_sha256: Sha256,
    pub to_sha256: Sha256,
    /// `process` → `audit`: the containment requirement's risk was raised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containment: Option<[Containment; 2]>,
    /// Inputs the new entry declares that the old did not (or declares with another kind).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs_added: Vec<InputDecl>,
    /// The protocol range changed and is not provably narrower or equal: `[old, new]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<[String; 2]>,
}

impl Changes {
    /// The widening from `old` to `new`, or `None` when nothing widened.
    pub fn between(old: &Entry, new: &Entry) -> Option<Changes> {
        let containment = (old.containment == Containment::Process
            && new.containment == Containment::Audit)
            .then_some([old.containment, new.containment]);
        let inputs_added: Vec<InputDecl> = new
            .inputs
            .iter()
            .filter(|i| old.input(i.name.as_str()).is_none_or(|o| o.kind != i.kind))
            .cloned()
            .collect();
        let protocol = (!protocol_not_wider(&old.protocol, &new.protocol))
            .then(|| [old.protocol.clone(), new.protocol.clone()]);
        if containment.is_none() && inputs_added.is_empty() && protocol.is_none() {
            return None;
        }
        Some(Changes {
            name: new.name.clone(),
            from_sha256: old.sha256,
            to_sha256: new.sha256,
            containment,
            inputs_added,
            protocol,
        })
    }

    /// `sha256:HEX` of the canonical serialization.
    pub fn token(&self) -> String {
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        format!("sha256:{}", Sha256::of(&bytes).to_hex())
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some([a, b]) = &self.containment {
            parts.push(format!("containment {a} -> {b}"));
        }
        for i in &self.inputs_added {
            parts.push(format!(
                "input added: {} ({}{})",
                i.name,
                i.kind,
                if i.required { ", required" } else { "" }
            ));
        }
        if let Some([a, b]) = &self.protocol {
            parts.push(format!("protocol {a:?} -> {b:?}"));
        }
        parts.join("; ")
    }
}

/// `true` only when the new protocol requirement provably accepts no version the old one did not:
/// the same requirement, or both are simple ranges (`>=`, `>`, `<`, `<=`, `=` on full versions
/// without pre-release tags, joined by `,`) and the new interval lies inside the old one. Anything
/// this cannot prove counts as wider.
pub fn protocol_not_wider(old: &str, new: &str) -> bool {
    let (Ok(o), Ok(n)) = (
        semver::VersionReq::parse(old),
        semver::VersionReq::parse(new),
    ) else {
        return false;
    };
    if o == n {
        return true;
    }
    match (Interval::of(&o), Interval::of(&n)) {
        (Some(o), Some(n)) => n.within(&o),
        _ => false,
    }
}

/// A version interval with optional bounds; `(version, inclusive)`.
#[derive(Debug)]
struct Interval {
    lo: Option<(semver::Version, bool)>,
    hi: Option<(semver::Version, bool)>,
}

impl Interval {
    fn of(req: &semver::VersionReq) -> Option<Interval> {
        use semver::Op;
        let mut iv = Interval { lo: None, hi: None };
        for c in &req.comparators {
            if !c.pre.is_empty() {
                return None;
            }
            // `>=1.2` and `<2` mean `>=1.2.0` and `<2.0.0`; other operators on a partial version
            // (`<=1.2`, `>1`, `=1`) cover ranges this does not model.
            let partial = c.minor.is_none() || c.patch.is_none();
            if partial && !matches!(c.op, Op::GreaterEq | Op::Less) {
                return None;
            }
            let v = semver::Version::new(c.major, c.minor.unwrap_or(0), c.patch.unwrap_or(0));
            match c.op {
                Op::GreaterEq => iv.raise((v, true)),
                Op::Greater => iv.raise((v, false)),
                Op::LessEq => iv.lower((v, true)),
                Op::Less => iv.lower((v, false)),
                Op::Exact => {
                    iv.raise((v.clone(), true));
                    iv.lower((v, true));
                }
                _ => return None,
            }
        }
        Some(iv)
    }

    fn raise(&mut self, b: (semver::Version, bool)) {
        let tighter = match &self.lo {
            None => true,
            Some(cur) => b.0 > cur.0 || (b.0 == cur.0 && !b.1),
        };
        if tighter {
            self.lo = Some(b);
        }
    }

    fn lower(&mut self, b: (semver::Version, bool)) {
        let tighter = match &self.hi {
            None => true,
            Some(cur) => b.0 < cur.0 || (b.0 == cur.0 && !b.1),
        };
        if tighter {
            self.hi = Some(b);
        }
    }

    /// `self` ⊆ `outer`.
    fn within(&self, outer: &Interval) -> bool {
        let lo_ok = match (&outer.lo, &self.lo) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(o), Some(s)) => s.0 > o.0 || (s.0 == o.0 && (o.1 || !s.1)),
        };
        let hi_ok = match (&outer.hi, &self.hi) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(o), Some(s)) => s.0 < o.0 || (s.0 == o.0 && (o.1 || !s.1)),
        };
        lo_ok && hi_ok
    }
}

// ---- audit log --------------------------------------------------------------------------------

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
    pub kind: Option<String>,
    /// The plugin name, for entry and launch decisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
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
    DenyAdd,
    DenyRemove,
    PolicySet,
    Launch,
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

// ---- signature time ---------------------------------------------------------------------------

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
    fn protocol_widening_is_judged_on_intervals() {
        assert!(protocol_not_wider(">=1.0, <2", ">=1.0, <2"));
        assert!(protocol_not_wider(">=1.0.0, <2.0.0", ">=1.0, <2"));
        assert!(protocol_not_wider(">=1.0, <2", ">=1.2, <2"));
        assert!(protocol_not_wider(">=1.0, <2", "=1.5.0"));
        assert!(!protocol_not_wider(">=1.0, <2", ">=1.0, <3"));
        assert!(!protocol_not_wider(">=1.0, <2", ">=0.9, <2"));
        assert!(!protocol_not_wider(">=1.0, <2", ">=1.0"));
        assert!(!protocol_not_wider(">1.0.0, <2", ">=1.0.0, <2"));
        // Caret and tilde are not interpreted: treated as wider.
        assert!(!protocol_not_wider(">=1.0, <2", "^1.0"));
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

    #[test]
    fn policy_defaults_fill_absent_fields_and_limits_are_checked() {
        let p = Policy::parse(br#"{"schema":1}"#).expect("defaults");
        assert_eq!(p, Policy::default());
        assert_eq!(p.max_exe_bytes, 256 << 20);
        let e = Policy::parse(br#"{"schema":1,"max_entry_bytes":70000}"#).expect_err("too big");
        assert_eq!(e.field(), Some("max_entry_bytes"));
        let e = Policy::parse(br#"{"schema":1,"max_size":1}"#).expect_err("unknown");
        assert_eq!(e.field(), Some("max_size"));
    }
}
