//! Verification shared by `dot-verify`, `dot-register`, `dot-launch` and `dot-sandbox`.
#![forbid(unsafe_code)]

pub mod elf;
