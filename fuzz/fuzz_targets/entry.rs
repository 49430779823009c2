//! Registry entry parser: `proto::Entry::parse` (strict JSON + validation) on arbitrary bytes.
//! Invariant: never panics; whatever it accepts round-trips through `to_bytes` unchanged.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proto::Entry;

fuzz_target!(|data: &[u8]| {
    if let Ok(entry) = Entry::parse(data) {
        let again = Entry::parse(&entry.to_bytes()).expect("an accepted entry re-parses");
        assert_eq!(again, entry);
        assert!(entry.protocol_req().is_ok());
    }
});
