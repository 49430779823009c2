//! The SHA-256 digest newtype, written as 64 lowercase hex digits.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::Digest as _;
use std::fmt;

/// A SHA-256 digest.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha256(pub [u8; 32]);

/// A string that is not 64 lowercase hex digits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a sha256 digest (64 lowercase hex digits)")]
pub struct DigestError(pub String);

impl Sha256 {
    /// Digest of an in-memory byte string (file digests are streamed by `verify`).
    pub fn of(bytes: &[u8]) -> Self {
        Sha256(sha2::Sha256::digest(bytes).into())
    }

    /// Parses 64 lowercase hex digits.
    pub fn parse_hex(s: &str) -> Result<Self, DigestError> {
        let b = s.as_bytes();
        if b.len() != 64 {
            return Err(DigestError(s.to_owned()));
        }
        let mut out = [0u8; 32];
        for (i, pair) in b.chunks_exact(2).enumerate() {
            let hi = hex_val(pair[0]).ok_or_else(|| DigestError(s.to_owned()))?;
            let lo = hex_val(pair[1]).ok_or_else(|| DigestError(s.to_owned()))?;
            out[i] = (hi << 4) | lo;
        }
        Ok(Sha256(out))
    }

    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }
}

/// Lowercase hex of a byte string.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    s
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

impl fmt::Display for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256({})", self.to_hex())
    }
}

impl std::str::FromStr for Sha256 {
    type Err = DigestError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Sha256::parse_hex(s)
    }
}

impl Serialize for Sha256 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Sha256 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Sha256::parse_hex(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digest_round_trips() {
        let d = Sha256::of(b"abc");
        assert_eq!(
            d.to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(Sha256::parse_hex(&d.to_hex()), Ok(d));
    }

    #[test]
    fn rejects_uppercase_short_and_non_hex() {
        let upper = "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD";
        assert!(Sha256::parse_hex(upper).is_err());
        assert!(Sha256::parse_hex("abc").is_err());
        assert!(Sha256::parse_hex(&"g".repeat(64)).is_err());
    }
}
