//! Publisher records: `ROOT/trust/publishers/ID.json`, the root's trust store.

use crate::name::Name;
use crate::strict;
use serde::{Deserialize, Serialize};

/// The publisher schema this code writes and accepts.
pub const PUBLISHER_SCHEMA: u32 = 1;

/// A publisher the root's owner trusts, with the minisign keys it signs with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Publisher {
    pub schema: u32,
    pub id: Name,
    /// Unix seconds when the publisher was added.
    pub added_at: u64,
    pub keys: Vec<PublisherKey>,
    /// Set when the whole publisher is revoked: none of its keys is accepted any more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked: Option<Revocation>,
    /// How many distinct keys of the publisher must sign an entry (absent: 1).
    #[serde(default = "one")]
    pub threshold: u32,
    /// What the publisher's entries may ask for (absent: `trusted`).
    #[serde(default)]
    pub level: Level,
    /// Globs of the plugin names the publisher may sign (`*` within a name); empty: any name
    /// that no other publisher of the trust store has pinned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
}

fn one() -> u32 {
    1
}

/// Most signatures one entry may carry (`NAME.json.minisig` and `NAME.json.2.minisig` …).
pub const MAX_SIGNATURES: usize = 8;

/// How far the root's owner trusts a publisher.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Its entries run at the containment they require (today's behaviour).
    #[default]
    Trusted,
    /// Its entries run only under `process`: an `audit` entry is refused at registration and
    /// at launch.
    Verified,
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Level::Trusted => "trusted",
            Level::Verified => "verified",
        })
    }
}

impl std::str::FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "trusted" => Ok(Level::Trusted),
            "verified" => Ok(Level::Verified),
            other => Err(format!(
                "unknown level {other:?}; expected trusted or verified"
            )),
        }
    }
}

/// A glob of plugin names: name characters and `*` (any run of them, possibly empty).
pub fn is_name_glob(g: &str) -> bool {
    !g.is_empty()
        && g.len() <= 64
        && g.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-' | b'*')
        })
}

/// Whether the name glob `g` matches `name` (`*` matches any run of characters).
pub fn name_glob_matches(g: &str, name: &str) -> bool {
    fn go(g: &[u8], n: &[u8]) -> bool {
        match g.split_first() {
            None => n.is_empty(),
            Some((b'*', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
            Some((c, rest)) => n
                .split_first()
                .is_some_and(|(d, nr)| c == d && go(rest, nr)),
        }
    }
    go(g.as_bytes(), name.as_bytes())
}

/// One minisign public key of a publisher.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublisherKey {
    /// The key id as minisign prints it: 16 uppercase hex digits.
    pub key_id: String,
    /// The base64 public key line of a `minisign -G` public key file.
    pub public_key: String,
    /// Unix seconds when the key was added.
    pub added_at: u64,
    /// Unix seconds: signatures timestamped before this are not accepted from this key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<u64>,
    /// Unix seconds: signatures timestamped at or after this are not accepted from this key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked: Option<Revocation>,
}

impl PublisherKey {
    /// The key has a validity window.
    pub fn bounded(&self) -> bool {
        self.not_before.is_some() || self.not_after.is_some()
    }

    /// Not revoked and `not_before <= at < not_after` (absent bounds are open).
    pub fn valid_at(&self, at: u64) -> bool {
        self.revoked.is_none()
            && self.not_before.is_none_or(|nb| nb <= at)
            && self.not_after.is_none_or(|na| at < na)
    }
}

/// Why and when something was revoked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Revocation {
    /// Unix seconds.
    pub at: u64,
    pub reason: String,
}

/// Why a publisher file is not valid.
pub type PublisherError = crate::strict::DocError;

impl Publisher {
    /// Parses and validates a publisher file's bytes.
    pub fn parse(bytes: &[u8]) -> Result<Publisher, PublisherError> {
        let p: Publisher = strict::from_slice(bytes, strict::MAX_DOCUMENT)?;
        if p.schema != PUBLISHER_SCHEMA {
            return Err(PublisherError::Invalid {
                field: "schema",
                message: format!(
                    "unsupported schema {}; this version reads {PUBLISHER_SCHEMA}",
                    p.schema
                ),
            });
        }
        if p.threshold == 0 || p.threshold as usize > MAX_SIGNATURES {
            return Err(PublisherError::Invalid {
                field: "threshold",
                message: format!("{} is outside 1..={MAX_SIGNATURES}", p.threshold),
            });
        }
        if let Some(g) = p.names.iter().find(|g| !is_name_glob(g)) {
            return Err(PublisherError::Invalid {
                field: "names",
                message: format!("{g:?} is not a name glob (name characters and `*`)"),
            });
        }
        if p.keys.is_empty() {
            return Err(PublisherError::Invalid {
                field: "keys",
                message: "a publisher needs at least one key".into(),
            });
        }
        for k in &p.keys {
            if !crate::trust::is_key_id(&k.key_id) {
                return Err(PublisherError::Invalid {
                    field: "keys.key_id",
                    message: format!("{:?} is not 16 uppercase hex digits", k.key_id),
                });
            }
            if let (Some(nb), Some(na)) = (k.not_before, k.not_after) {
                if na <= nb {
                    return Err(PublisherError::Invalid {
                        field: "keys.not_after",
                        message: format!(
                            "key {}: not_after {na} is not after not_before {nb}",
                            k.key_id
                        ),
                    });
                }
            }
        }
        Ok(p)
    }

    /// Serializes the record as written to disk.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).unwrap_or_default();
        v.push(b'\n');
        v
    }

    /// Whether the publisher may sign an entry named `name` by its own pins (`names`; none: any).
    pub fn pins(&self, name: &str) -> bool {
        self.names.iter().any(|g| name_glob_matches(g, name))
    }

    /// The key with this id that is not revoked, if the publisher itself is not revoked.
    pub fn usable_key(&self, key_id: &str) -> Option<&PublisherKey> {
        if self.revoked.is_some() {
            return None;
        }
        self.keys
            .iter()
            .find(|k| k.key_id == key_id && k.revoked.is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(extra: &str) -> String {
        format!(
            r#"{{"schema":1,"id":"acme","added_at":1,"keys":[{{"key_id":"0123456789ABCDEF",
            "public_key":"RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3","added_at":1}}]{extra}}}"#
        )
    }

    #[test]
    fn a_record_without_the_new_fields_reads_as_one_signature_trusted_any_name() {
        let p = Publisher::parse(record("").as_bytes()).expect("valid");
        assert_eq!(
            (p.threshold, p.level, p.names.len()),
            (1, Level::Trusted, 0)
        );
        let text = String::from_utf8(p.to_bytes()).expect("utf-8");
        assert!(text.contains("\"threshold\": 1") && text.contains("\"level\": \"trusted\""));
        assert!(!text.contains("names"));
    }

    #[test]
    fn threshold_level_and_names_are_checked() {
        let p = Publisher::parse(
            record(r#","threshold":2,"level":"verified","names":["hello","acme-*"]"#).as_bytes(),
        )
        .expect("valid");
        assert_eq!((p.threshold, p.level), (2, Level::Verified));
        assert!(p.pins("hello") && p.pins("acme-x") && p.pins("acme-") && !p.pins("hello2"));
        for (extra, field) in [
            (r#","threshold":0"#, "threshold"),
            (r#","threshold":9"#, "threshold"),
            (r#","names":["Hello"]"#, "names"),
            (r#","names":["a/b"]"#, "names"),
            (r#","level":"root""#, "level"),
        ] {
            let e = Publisher::parse(record(extra).as_bytes()).expect_err(extra);
            assert_eq!(e.field(), Some(field), "{extra}");
        }
    }

    #[test]
    fn name_globs_match_whole_names() {
        assert!(name_glob_matches("*", "anything"));
        assert!(name_glob_matches("a*c", "abbc") && name_glob_matches("a*c", "ac"));
        assert!(!name_glob_matches("a*c", "acb") && !name_glob_matches("hello", "hello-x"));
        assert!(name_glob_matches("*-tool", "x-tool") && !name_glob_matches("*-tool", "x-tools"));
        assert_eq!("verified".parse::<Level>(), Ok(Level::Verified));
        assert!("root".parse::<Level>().is_err());
    }
}
