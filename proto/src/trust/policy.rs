//! `ROOT/trust/policy.json`: root-wide trust settings and size limits.

use super::{check_schema, doc_bytes, TrustDocError, TRUST_SCHEMA};
use crate::strict;
use serde::{Deserialize, Serialize};

/// Default largest pinned executable: 256 MiB.
pub const DEFAULT_MAX_EXE_BYTES: u64 = 256 << 20;
/// Default largest signature file: 4 KiB (a minisign signature is about 300 bytes).
pub const DEFAULT_MAX_SIGNATURE_BYTES: u64 = 4 << 10;
/// Default largest public key file: 4 KiB (a minisign public key file is about 100 bytes).
pub const DEFAULT_MAX_KEY_BYTES: u64 = 4 << 10;
/// Default warning window before an entry expires.
pub const DEFAULT_EXPIRY_WARNING_DAYS: u64 = 14;
/// The host trees a runtime may be, or lie beneath, unless the policy names others.
pub const DEFAULT_RUNTIME_ROOTS: &[&str] = &["/usr"];

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
    /// Paths `dot-launch --input-file` refuses besides its built-in list (absolute path globs:
    /// `*` within a component, `**` across components), unless the invoker names the input
    /// with `--allow-sensitive-input`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sensitive_inputs: Vec<String>,
    /// The host directories an entry's runtime may be, or lie beneath (`runtime-not-allowed`
    /// otherwise): the root's owner decides which host trees a plugin may see, not the publisher
    /// who signs the entry. Default [`DEFAULT_RUNTIME_ROOTS`].
    #[serde(default = "default_runtime_roots")]
    pub runtime_roots: Vec<crate::entry::RuntimeDir>,
}

fn default_runtime_roots() -> Vec<crate::entry::RuntimeDir> {
    DEFAULT_RUNTIME_ROOTS
        .iter()
        .filter_map(|d| d.parse().ok())
        .collect()
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
            sensitive_inputs: Vec::new(),
            runtime_roots: default_runtime_roots(),
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
    /// The policy's runtime root that `dir` is, or lies beneath, if any.
    pub fn runtime_root_of(
        &self,
        dir: &crate::entry::RuntimeDir,
    ) -> Option<&crate::entry::RuntimeDir> {
        self.runtime_roots
            .iter()
            .find(|r| std::path::Path::new(dir.as_str()).starts_with(r.as_str()))
    }

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
        if let Some(g) = self
            .sensitive_inputs
            .iter()
            .find(|g| !g.starts_with('/') || g.len() > 4096 || g.contains('\0'))
        {
            return Err(TrustDocError::Invalid {
                field: "sensitive_inputs",
                message: format!("{g:?} is not an absolute path glob"),
            });
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
