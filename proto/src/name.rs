//! Names of plugins and publishers: a single path component `[a-z0-9][a-z0-9._-]{0,63}`.

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// The longest name accepted, in bytes.
pub const MAX_NAME_LEN: usize = 64;

/// A validated plugin or publisher name. It is always safe to use as one path component.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Name(String);

/// Why a string is not a valid name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("name is empty")]
    Empty,
    #[error("name {0:?} is longer than {MAX_NAME_LEN} bytes")]
    TooLong(String),
    #[error("name {0:?} is `.` or `..`")]
    Dots(String),
    #[error("name {0:?} must start with a lowercase letter or digit")]
    BadStart(String),
    #[error("name {name:?} has the character {ch:?}; allowed are a-z 0-9 . _ -")]
    BadChar { name: String, ch: char },
}

impl Name {
    /// Validates `s` as a name.
    pub fn new(s: &str) -> Result<Self, NameError> {
        if s.is_empty() {
            return Err(NameError::Empty);
        }
        if s.len() > MAX_NAME_LEN {
            return Err(NameError::TooLong(s.to_owned()));
        }
        if s == "." || s == ".." {
            return Err(NameError::Dots(s.to_owned()));
        }
        let mut chars = s.chars();
        if let Some(first) = chars.next() {
            if !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
                return Err(NameError::BadStart(s.to_owned()));
            }
        }
        for ch in s.chars() {
            let ok =
                ch.is_ascii_lowercase() || ch.is_ascii_digit() || matches!(ch, '.' | '_' | '-');
            if !ok {
                return Err(NameError::BadChar {
                    name: s.to_owned(),
                    ch,
                });
            }
        }
        Ok(Name(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for Name {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Name::new(s)
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Name::new(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_names() {
        for ok in ["hello", "a", "0", "a.b_c-d", &"x".repeat(64)] {
            assert_eq!(Name::new(ok).map(|n| n.to_string()), Ok(ok.to_owned()));
        }
    }

    #[test]
    fn rejects_paths_dots_case_and_length() {
        assert_eq!(Name::new(""), Err(NameError::Empty));
        assert!(matches!(Name::new("."), Err(NameError::Dots(_))));
        assert!(matches!(Name::new(".."), Err(NameError::Dots(_))));
        assert!(matches!(Name::new("../x"), Err(NameError::BadStart(_))));
        assert!(matches!(
            Name::new("a/b"),
            Err(NameError::BadChar { ch: '/', .. })
        ));
        assert!(matches!(Name::new("Hello"), Err(NameError::BadStart(_))));
        assert!(matches!(
            Name::new("hEllo"),
            Err(NameError::BadChar { ch: 'E', .. })
        ));
        assert!(matches!(
            Name::new(&"x".repeat(65)),
            Err(NameError::TooLong(_))
        ));
        assert!(matches!(Name::new("-x"), Err(NameError::BadStart(_))));
        assert!(matches!(Name::new("a\0b"), Err(NameError::BadChar { .. })));
    }
}
