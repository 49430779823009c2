//! The static-ELF rule, from the `elf` crate (which `dot-sandbox` applies too, without `verify`).

pub use elf::runtime::{check_program, Depth, Program, RuntimeError};
pub use elf::{check_static_elf, check_static_elf_bytes, ElfError, ElfFacts, HOST_MACHINE};
