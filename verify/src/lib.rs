//! Verification shared by `dot-verify`, `dot-register`, `dot-launch` and `dot-sandbox`: digests of
//! open files, minisign signatures, the platform root check, and the full check of a registry
//! entry that `dot-launch` makes before every spawn, and the doctor's look ahead at what comes due.
#![forbid(unsafe_code)]

pub mod batch;
pub mod cli;
pub mod digest;
pub mod doctor;
pub mod elf;
pub mod entry;
pub mod error;
pub mod layers;
pub mod root;
pub mod signature;
pub mod signers;
pub mod trust;

pub use cli::{run, Args};
pub use error::VerifyError;
