//! Plugin response parser: `proto::protocol::Response::parse` on a plugin's whole stdout.
//! Invariant: never panics; anything accepted is one JSON object that round-trips.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proto::protocol::Response;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = Response::parse(data, 64 * 1024) {
        assert_eq!(data.first(), Some(&b'{'));
        let bytes = serde_json::to_vec(&r).expect("serializes");
        assert_eq!(Response::parse(&bytes, 64 * 1024).expect("re-parses"), r);
    }
    // A limit below the input's size never panics either.
    let _ = Response::parse(data, data.len() / 2);
});
