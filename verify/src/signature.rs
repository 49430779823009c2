//! minisign public keys and detached signatures (prehashed and legacy), checked with
//! `minisign-verify`.

use crate::error::VerifyError;
use std::path::{Path, PathBuf};

/// What a valid signature says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureInfo {
    /// The signing key's id, 16 uppercase hex digits as minisign prints it.
    pub key_id: String,
    /// The trusted comment, authenticated by the global signature.
    pub trusted_comment: String,
    /// `true` for the current format (Ed25519 over BLAKE2b-512 of the data), `false` for legacy.
    pub prehashed: bool,
}

const ALG_LEGACY: &[u8; 2] = b"Ed";
const ALG_PREHASHED: &[u8; 2] = b"ED";

fn key_malformed(reason: impl Into<String>) -> VerifyError {
    VerifyError::PubkeyMalformed {
        path: PathBuf::new(),
        reason: reason.into(),
    }
}

fn sig_invalid(reason: impl Into<String>) -> VerifyError {
    VerifyError::SignatureInvalid {
        path: PathBuf::new(),
        reason: reason.into(),
    }
}

/// `parse_public_key` on the bytes of the public key file at `path`; errors carry `path`.
pub fn parse_public_key_file(path: &Path, bytes: &[u8]) -> Result<(String, String), VerifyError> {
    let text = std::str::from_utf8(bytes).map_err(|_| VerifyError::PubkeyMalformed {
        path: path.to_path_buf(),
        reason: "not text".to_owned(),
    })?;
    parse_public_key(text).map_err(|e| e.with_path(path))
}

/// Parses a public key file as `minisign -G` writes it (`untrusted comment: …` line, then the
/// base64 key line) and returns the key id and the base64 line.
pub fn parse_public_key(text: &str) -> Result<(String, String), VerifyError> {
    let mut lines = text.lines();
    let comment = lines
        .next()
        .ok_or_else(|| key_malformed("the file is empty"))?;
    if !comment.starts_with("untrusted comment:") {
        return Err(key_malformed(
            "the first line must start with `untrusted comment:`",
        ));
    }
    let b64 = lines
        .next()
        .ok_or_else(|| key_malformed("the base64 key line is missing"))?
        .trim();
    if lines.any(|l| !l.trim().is_empty()) {
        return Err(key_malformed("unexpected lines after the key"));
    }
    let bin = base64_decode(b64).ok_or_else(|| key_malformed("the key line is not base64"))?;
    if bin.len() != 42 {
        return Err(key_malformed(format!(
            "the key is {} bytes, a minisign key is 42",
            bin.len()
        )));
    }
    if &bin[..2] != ALG_LEGACY {
        return Err(key_malformed("not an Ed25519 minisign key"));
    }
    minisign_verify::PublicKey::from_base64(b64)
        .map_err(|e| key_malformed(format!("minisign refuses it: {e}")))?;
    Ok((key_id_of(&bin[2..10]), b64.to_owned()))
}

/// The key id recorded in a `.minisig` (which key claims to have signed), without checking it.
pub fn signature_key_id(sig_bytes: &[u8]) -> Result<String, VerifyError> {
    let text =
        std::str::from_utf8(sig_bytes).map_err(|_| sig_invalid("the signature is not text"))?;
    let line = text
        .lines()
        .nth(1)
        .ok_or_else(|| sig_invalid("the signature line is missing"))?;
    let bin = base64_decode(line.trim())
        .ok_or_else(|| sig_invalid("the signature line is not base64"))?;
    if bin.len() != 74 {
        return Err(sig_invalid("the signature line has the wrong length"));
    }
    if &bin[..2] != ALG_LEGACY && &bin[..2] != ALG_PREHASHED {
        return Err(sig_invalid("unknown signature algorithm"));
    }
    Ok(key_id_of(&bin[2..10]))
}

/// Checks the minisign signature `sig_bytes` (a `.minisig` file's contents) over `data` with the
/// public key `public_key_b64`, accepting the prehashed and the legacy format.
pub fn verify_detached(
    public_key_b64: &str,
    sig_bytes: &[u8],
    data: &[u8],
) -> Result<SignatureInfo, VerifyError> {
    let pk_bin = base64_decode(public_key_b64.trim())
        .filter(|b| b.len() == 42)
        .ok_or_else(|| key_malformed("not a minisign public key"))?;
    let pk = minisign_verify::PublicKey::from_base64(public_key_b64.trim())
        .map_err(|e| key_malformed(format!("minisign refuses it: {e}")))?;
    let key_id = signature_key_id(sig_bytes)?;
    let text =
        std::str::from_utf8(sig_bytes).map_err(|_| sig_invalid("the signature is not text"))?;
    let sig = minisign_verify::Signature::decode(text)
        .map_err(|e| sig_invalid(format!("not a minisign signature: {e}")))?;
    let want = key_id_of(&pk_bin[2..10]);
    if key_id != want {
        return Err(sig_invalid(format!(
            "made with key {key_id}, not with the trusted key {want}"
        )));
    }
    pk.verify(data, &sig, true).map_err(|e| match e {
        minisign_verify::Error::InvalidSignature => {
            sig_invalid("does not match the signed bytes (changed after signing, or forged)")
        }
        other => sig_invalid(other.to_string()),
    })?;
    let prehashed = text
        .lines()
        .nth(1)
        .and_then(|l| base64_decode(l.trim()))
        .is_some_and(|b| &b[..2] == ALG_PREHASHED);
    Ok(SignatureInfo {
        key_id,
        trusted_comment: sig.trusted_comment().to_owned(),
        prehashed,
    })
}

/// The Ed25519 public key inside a minisign public key line (its base64), as 64 lowercase hex
/// digits: what identifies a key. minisign's key id is not covered by any signature, so the same
/// key can be listed (and sign) under any id; revocation and the deny list match these bytes.
pub fn key_bytes_hex(public_key_b64: &str) -> Option<String> {
    let bin = base64_decode(public_key_b64.trim()).filter(|b| b.len() == 42)?;
    Some(bin[10..].iter().map(|b| format!("{b:02x}")).collect())
}

fn key_id_of(keynum: &[u8]) -> String {
    let mut b = [0u8; 8];
    b.copy_from_slice(&keynum[..8]);
    format!("{:016X}", u64::from_le_bytes(b))
}

/// Strict standard base64 with padding; `None` for anything else.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return None;
    }
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(b.len() / 4 * 3);
    let quads = b.len() / 4;
    for (i, q) in b.chunks_exact(4).enumerate() {
        let last = i + 1 == quads;
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n: u32 = 0;
        for &c in &q[..4 - pad] {
            n = (n << 6) | val(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_padding_and_refuses_junk() {
        assert_eq!(base64_decode("Zm9vYmFy").as_deref(), Some(&b"foobar"[..]));
        assert_eq!(base64_decode("Zm8=").as_deref(), Some(&b"fo"[..]));
        assert_eq!(base64_decode("Zg==").as_deref(), Some(&b"f"[..]));
        assert_eq!(base64_decode("Zg=a"), None);
        assert_eq!(base64_decode("Zm9"), None);
        assert_eq!(base64_decode("Zm9*"), None);
        assert_eq!(base64_decode(""), None);
    }

    #[test]
    fn public_key_file_without_comment_is_malformed() {
        let e = parse_public_key("RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3\n")
            .expect_err("no comment line");
        assert!(matches!(e, VerifyError::PubkeyMalformed { .. }));
    }

    #[test]
    fn public_key_file_errors_name_the_file() {
        let path = Path::new("k.pub");
        for bytes in [
            &b"\xff\n"[..],
            b"RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3\n",
        ] {
            match parse_public_key_file(path, bytes) {
                Err(VerifyError::PubkeyMalformed { path: p, .. }) => assert_eq!(p, path),
                other => panic!("{other:?}"),
            }
        }
    }
}
