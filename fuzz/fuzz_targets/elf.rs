//! The static-ELF checker (`verify::elf`) on an image in memory.
//! Invariant: never panics, never reads outside the image, and a script is never accepted.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if verify::elf::check_static_elf_bytes(data).is_ok() {
        assert!(data.starts_with(b"\x7fELF") && data.len() >= 64);
    }
});
