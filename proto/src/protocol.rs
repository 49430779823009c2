//! The launcher ↔ plugin protocol messages.

use crate::name::Name;
use crate::strict::{self, StrictError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The protocol version this launcher speaks.
pub const PROTOCOL_VERSION: &str = "1.0";

/// The same version as a semver value, for matching entries' protocol requirements.
pub fn protocol_version() -> semver::Version {
    semver::Version::new(1, 0, 0)
}

/// The request written to the plugin's stdin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    pub protocol: String,
    pub plugin: Name,
    /// String inputs carry their value; file inputs carry their path relative to the stage (`in/KEY`).
    pub inputs: BTreeMap<String, String>,
}

/// What the plugin reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponseStatus {
    Ok,
    Error,
}

/// The one JSON object a plugin prints on stdout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Response {
    pub protocol: String,
    pub status: ResponseStatus,
    #[serde(default)]
    pub outputs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Response {
    /// Parses a plugin's whole stdout: exactly one JSON object, optionally followed by one newline.
    /// Nothing else may come before or after it, not even whitespace.
    pub fn parse(stdout: &[u8], limit: usize) -> Result<Response, StrictError> {
        let body = stdout.strip_suffix(b"\n").unwrap_or(stdout);
        let not_one_object = |line: usize, column: usize, what: &str| StrictError::Syntax {
            line,
            column,
            message: format!("stdout must be exactly one JSON object{what}"),
        };
        if body.first() != Some(&b'{') {
            return Err(not_one_object(1, 1, ""));
        }
        if body.last() != Some(&b'}') {
            // The parser allows trailing whitespace; the protocol allows one newline only.
            let line = 1 + body.iter().filter(|&&b| b == b'\n').count();
            let column = body.len() - body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            return Err(not_one_object(
                line,
                column,
                ", followed by at most one newline",
            ));
        }
        strict::from_slice(body, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_exactly_one_object() {
        let ok = br#"{"protocol":"1.0","status":"ok","outputs":["hello.txt"]}"#;
        let mut nl = ok.to_vec();
        nl.push(b'\n');
        assert_eq!(
            Response::parse(&nl, 4096).map(|r| r.outputs),
            Ok(vec!["hello.txt".to_owned()])
        );
        for bad in [
            &b"noise\n{\"protocol\":\"1.0\",\"status\":\"ok\"}"[..],
            br#"{"protocol":"1.0","status":"ok"} {"protocol":"1.0","status":"ok"}"#,
            br#"{"protocol":"1.0","status":"ok"}\nmore"#,
            br#" {"protocol":"1.0","status":"ok"}"#,
            b"[]",
            b"",
            br#"{"protocol":"1.0","status":"fine"}"#,
            b"{\"protocol\":\"1.0\",\"status\":\"ok\"}\n\n",
            b"{\"protocol\":\"1.0\",\"status\":\"ok\"}\r\n",
            b"{\"protocol\":\"1.0\",\"status\":\"ok\"} \n",
            b"{\"protocol\":\"1.0\",\"status\":\"ok\"}\n \n",
        ] {
            assert!(
                Response::parse(bad, 4096).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
