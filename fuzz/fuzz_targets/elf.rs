//! The static-ELF rule (the `elf` crate) on an image in memory.
//! Invariant: never panics, never reads outside the image, a script is never accepted, and an
//! accepted image has no loaded segment both writable and executable.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if elf::check_static_elf_bytes(data).is_ok() {
        assert!(data.starts_with(b"\x7fELF") && data.len() >= 64);
        let at = |o: usize, n: usize| {
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(&data[o..o + n]);
            u64::from_le_bytes(b)
        };
        let (phoff, phnum) = (at(32, 8) as usize, at(56, 2) as usize);
        for i in 0..phnum {
            let ph = phoff + i * 56;
            let (p_type, p_flags) = (at(ph, 4), at(ph + 4, 4));
            assert!(p_type != 1 || p_flags & 3 != 3, "accepted a W+X PT_LOAD");
        }
    }
});
