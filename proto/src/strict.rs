//! Strict JSON decoding shared by every file and message dot reads: a size bound, unknown fields
//! rejected (each type says `deny_unknown_fields`), and errors that name the field that failed.

use serde::de::DeserializeOwned;

/// The largest registry entry, publisher record or trust file accepted.
pub const MAX_DOCUMENT: usize = 64 * 1024;

/// Why a document was not accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StrictError {
    #[error("document is {size} bytes, more than the limit of {limit}")]
    Oversized { size: usize, limit: usize },
    #[error("field `{field}`: {message}")]
    Field { field: String, message: String },
    #[error("not valid JSON at line {line} column {column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
}

impl StrictError {
    /// The field the error is about (`.` for the document as a whole).
    pub fn field(&self) -> Option<&str> {
        match self {
            StrictError::Field { field, .. } => Some(field),
            _ => None,
        }
    }
}

/// Why a document of the root (a publisher record, a trust document) is not valid: it did not
/// decode, or a decoded field breaks a rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DocError {
    #[error(transparent)]
    Decode(#[from] StrictError),
    #[error("field `{field}`: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
}

impl DocError {
    /// The field that failed, when one did.
    pub fn field(&self) -> Option<&str> {
        match self {
            DocError::Decode(e) => e.field(),
            DocError::Invalid { field, .. } => Some(field),
        }
    }
}

/// Decodes one JSON document of at most `limit` bytes into `T`.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8], limit: usize) -> Result<T, StrictError> {
    if bytes.len() > limit {
        return Err(StrictError::Oversized {
            size: bytes.len(),
            limit,
        });
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        classify(path, e.into_inner())
    })?;
    de.end().map_err(|e| classify(".".to_owned(), e))?;
    Ok(value)
}

fn classify(path: String, e: serde_json::Error) -> StrictError {
    use serde_json::error::Category;
    match e.classify() {
        Category::Syntax | Category::Eof | Category::Io => StrictError::Syntax {
            line: e.line(),
            column: e.column(),
            message: strip_position(&e.to_string()),
        },
        Category::Data => {
            let message = strip_position(&e.to_string());
            // serde reports a missing field at the enclosing object; name the field itself.
            let field = match quoted_field(&message) {
                Some(f) if message.starts_with("missing field") => {
                    if path == "." {
                        f
                    } else {
                        format!("{path}.{f}")
                    }
                }
                _ => path,
            };
            StrictError::Field { field, message }
        }
    }
}

fn quoted_field(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(message[start..start + len].to_owned())
}

fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        a: u32,
        inner: Inner,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        b: String,
    }

    fn field_of(json: &str) -> String {
        match from_slice::<Doc>(json.as_bytes(), 1024) {
            Err(StrictError::Field { field, .. }) => field,
            other => panic!("expected a field error, got {other:?}"),
        }
    }

    #[test]
    fn names_unknown_missing_and_mistyped_fields() {
        assert_eq!(field_of(r#"{"a":1,"inner":{"b":"x"},"zz":1}"#), "zz");
        assert_eq!(field_of(r#"{"a":1}"#), "inner");
        assert_eq!(field_of(r#"{"a":"one","inner":{"b":"x"}}"#), "a");
        assert_eq!(field_of(r#"{"a":1,"inner":{"b":2}}"#), "inner.b");
        assert_eq!(field_of(r#"{"a":1,"inner":{"b":"x","c":1}}"#), "inner.c");
    }

    #[test]
    fn refuses_oversized_and_trailing_garbage() {
        let big = format!(r#"{{"a":1,"inner":{{"b":"{}"}}}}"#, "x".repeat(2000));
        assert!(matches!(
            from_slice::<Doc>(big.as_bytes(), 1024),
            Err(StrictError::Oversized { .. })
        ));
        let two = r#"{"a":1,"inner":{"b":"x"}} {}"#;
        assert!(matches!(
            from_slice::<Doc>(two.as_bytes(), 1024),
            Err(StrictError::Syntax { .. })
        ));
    }
}
