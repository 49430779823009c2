//! Real minisign keys and signatures, made with the `minisign` crate (and `ed25519-compact` for the
//! legacy format), checked by an independent verifier.

use proto::Name;
use std::fs;
use std::path::{Path, PathBuf};

/// A minisign key pair made by the `minisign` crate (the same key format `minisign -G` makes).
#[derive(Debug, Clone)]
pub struct KeyPair {
    inner: minisign::KeyPair,
}

impl KeyPair {
    /// A new random, unencrypted key pair.
    pub fn generate() -> KeyPair {
        KeyPair {
            inner: minisign::KeyPair::generate_unencrypted_keypair().expect("minisign keygen"),
        }
    }

    /// The same Ed25519 key under another minisign key id: minisign's key id (the `keynum` in the
    /// public key, the secret key and every signature) is covered by no signature, so whoever holds
    /// a key, or only its public half, can list it under any id. Signs with the new id.
    pub fn relisted(&self) -> KeyPair {
        let mut skb = self.inner.sk.to_bytes();
        let mut pkb = self.inner.pk.to_bytes();
        for (i, b) in skb[54..62].iter_mut().enumerate() {
            *b = !*b ^ (i as u8);
        }
        pkb[2..10].copy_from_slice(&skb[54..62]);
        KeyPair {
            inner: minisign::KeyPair {
                pk: minisign::PublicKey::from_bytes(&pkb).expect("relisted public key"),
                sk: minisign::SecretKey::from_bytes(&skb).expect("relisted secret key"),
            },
        }
    }

    /// The key id as minisign prints it: 16 uppercase hex digits.
    pub fn key_id(&self) -> String {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.inner.pk.keynum());
        format!("{:016X}", u64::from_le_bytes(b))
    }

    /// The base64 line of the public key file.
    pub fn public_key_b64(&self) -> String {
        self.inner.pk.to_base64()
    }

    /// The public key file's text, exactly as `minisign -G` writes it.
    pub fn public_key_file(&self) -> String {
        format!(
            "untrusted comment: minisign public key {}\n{}\n",
            self.key_id(),
            self.public_key_b64()
        )
    }

    /// Writes the public key file as `dir/<KEYID>.pub` and returns its path.
    pub fn pk_path(&self, dir: &Path) -> PathBuf {
        let p = dir.join(format!("{}.pub", self.key_id()));
        fs::write(&p, self.public_key_file()).unwrap();
        p
    }

    /// A `.minisig` over `bytes`, with a trusted comment like minisign's
    /// (`timestamp:<unix>\tfile:<name>` plus `\thashed` for a prehashed signature). `prehashed`
    /// selects the current format (Ed25519 over BLAKE2b-512 of the data, made by the `minisign`
    /// crate) or the legacy one (Ed25519 over the data itself).
    pub fn sign(&self, bytes: &[u8], prehashed: bool) -> Vec<u8> {
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let comment = if prehashed {
            format!("timestamp:{ts}\tfile:entry.json\thashed")
        } else {
            format!("timestamp:{ts}\tfile:entry.json")
        };
        self.sign_with_comment(bytes, prehashed, &comment)
    }

    /// Like `sign`, with the given trusted comment.
    pub fn sign_with_comment(&self, bytes: &[u8], prehashed: bool, comment: &str) -> Vec<u8> {
        let untrusted = "signature from minisign secret key";
        if prehashed {
            let sig = minisign::sign(
                Some(&self.inner.pk),
                &self.inner.sk,
                std::io::Cursor::new(bytes),
                Some(comment),
                Some(untrusted),
            )
            .expect("minisign sign");
            sig.to_bytes()
        } else {
            self.sign_legacy(bytes, comment, untrusted)
        }
    }

    /// The legacy format (signature algorithm `Ed`): the `minisign` crate signs only prehashed, so
    /// the Ed25519 signatures are made with `ed25519-compact` from the same secret key, and the
    /// box is checked against the `minisign` crate's own verifier before it is returned.
    fn sign_legacy(&self, bytes: &[u8], comment: &str, untrusted: &str) -> Vec<u8> {
        // SecretKey::to_bytes: sig_alg 2, kdf_alg 2, chk_alg 2, salt 32, opslimit 8, memlimit 8,
        // keynum 8, then the 64-byte Ed25519 secret key (unencrypted for this key pair).
        let skb = self.inner.sk.to_bytes();
        let keynum = &skb[54..62];
        let sk = ed25519_compact::SecretKey::from_slice(&skb[62..126]).expect("ed25519 sk");
        let sig = sk.sign(bytes, None);
        let mut line1 = Vec::with_capacity(74);
        line1.extend_from_slice(b"Ed");
        line1.extend_from_slice(keynum);
        line1.extend_from_slice(sig.as_ref());
        let mut global_msg = sig.as_ref().to_vec();
        global_msg.extend_from_slice(comment.as_bytes());
        let global = sk.sign(&global_msg, None);
        let text = format!(
            "untrusted comment: {untrusted}\n{}\ntrusted comment: {comment}\n{}\n",
            base64(&line1),
            base64(global.as_ref())
        );
        let sig_box = minisign::SignatureBox::from_string(&text).expect("legacy box parses");
        minisign::verify(
            &self.inner.pk,
            &sig_box,
            std::io::Cursor::new(bytes),
            true,
            false,
            true,
        )
        .expect("legacy signature verifies with the minisign crate");
        assert!(!sig_box.is_prehashed());
        text.into_bytes()
    }

    /// A prehashed `.minisig` whose trusted comment carries `timestamp:<at>` (a signing time far in
    /// the past or future, for the key-validity and signature-age rules).
    pub fn sign_at(&self, bytes: &[u8], at: u64) -> Vec<u8> {
        self.sign_with_comment(
            bytes,
            true,
            &format!("timestamp:{at}\tfile:entry.json\thashed"),
        )
    }

    /// A key-rotation statement by `self` (a key of `publisher`) adding `new`: the statement's
    /// bytes and its signature, as `dot-register publisher rotate --transition` takes them.
    pub fn transition_to(&self, publisher: &str, new: &KeyPair) -> (Vec<u8>, Vec<u8>) {
        let stmt = proto::trust::KeyTransition {
            schema: proto::trust::TRUST_SCHEMA,
            publisher: Name::new(publisher).unwrap(),
            new_key_id: new.key_id(),
            new_public_key: new.public_key_b64(),
            at: 1,
        }
        .to_bytes();
        let sig = self.sign(&stmt, true);
        (stmt, sig)
    }

    /// Signs the file at `path` and writes `path.minisig`; returns the signature's path.
    pub fn sign_file(&self, path: &Path, prehashed: bool) -> PathBuf {
        let bytes = fs::read(path).unwrap();
        let sig = self.sign(&bytes, prehashed);
        let mut p = path.as_os_str().to_owned();
        p.push(".minisig");
        let p = PathBuf::from(p);
        fs::write(&p, sig).unwrap();
        p
    }
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                s.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_known_vectors() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn both_signature_formats_verify_with_minisign_verify() {
        let kp = KeyPair::generate();
        let pk = minisign_verify::PublicKey::decode(&kp.public_key_file()).unwrap();
        for prehashed in [true, false] {
            let sig = kp.sign(b"data", prehashed);
            let text = String::from_utf8(sig).unwrap();
            let s = minisign_verify::Signature::decode(&text).unwrap();
            pk.verify(b"data", &s, true).unwrap();
            assert!(pk.verify(b"datA", &s, true).is_err());
            assert!(s.trusted_comment().starts_with("timestamp:"));
            // Legacy is refused when legacy is not allowed: proof the format differs.
            assert_eq!(pk.verify(b"data", &s, false).is_ok(), prehashed);
        }
        assert_eq!(kp.key_id().len(), 16);
    }

    #[test]
    fn a_relisted_key_signs_under_its_new_id_with_the_same_key() {
        let kp = KeyPair::generate();
        let again = kp.relisted();
        assert_ne!(again.key_id(), kp.key_id());
        assert_eq!(
            base64_decode_tail(&again.public_key_b64()),
            base64_decode_tail(&kp.public_key_b64())
        );
        let pk = minisign_verify::PublicKey::decode(&again.public_key_file()).unwrap();
        let sig = String::from_utf8(again.sign(b"data", true)).unwrap();
        pk.verify(
            b"data",
            &minisign_verify::Signature::decode(&sig).unwrap(),
            false,
        )
        .unwrap();
    }

    /// The last 40 base64 characters of a public key line: bytes 12 to 42, inside the Ed25519 key.
    fn base64_decode_tail(b64: &str) -> String {
        b64[b64.len() - 40..].to_owned()
    }
}
