//! minisign public keys and signatures through our wrappers (`verify::signature`).
//! The input is tried as a public key file, as a `.minisig` file (key id, and a full check against
//! a fixed real key over fixed bytes), and as a base64 public key line.
//! Invariant: never panics; a signature only verifies over the bytes it was made for.
#![no_main]
use libfuzzer_sys::fuzz_target;
use verify::signature::{parse_public_key, signature_key_id, verify_detached};

/// A real key made with `minisign -G`; fuzz/corpus/minisign/ holds signatures it made over DATA.
const PUBLIC_KEY: &str = "RWQmCHxgDWFubA/GRj3/OYZfK1YTLPF4ykAzs8WangUj2oiI3J2J50/2";
const DATA: &[u8] = b"dot fuzz signed bytes\n";

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_public_key(text);
        let _ = verify_detached(text, b"", DATA);
    }
    let id = signature_key_id(data);
    if let Ok(info) = verify_detached(PUBLIC_KEY, data, DATA) {
        assert_eq!(id.ok().as_deref(), Some(info.key_id.as_str()));
        assert!(verify_detached(PUBLIC_KEY, data, b"other bytes").is_err());
    }
});
