//! Publisher (trust) files: `proto::Publisher::parse` on arbitrary bytes, and the public-key text a
//! trust file's key comes from (`verify::signature::parse_public_key`).
//! Invariant: never panics; an accepted record round-trips through `to_bytes`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proto::Publisher;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = Publisher::parse(data) {
        let again = Publisher::parse(&p.to_bytes()).expect("an accepted publisher re-parses");
        assert_eq!(again, p);
        for k in &p.keys {
            let _ = p.usable_key(&k.key_id);
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok((key_id, b64)) = verify::signature::parse_public_key(text) {
            assert_eq!(key_id.len(), 16);
            assert!(text.contains(&b64));
        }
    }
});
