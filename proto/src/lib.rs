//! The shared data model of dot, and nothing else: no I/O, no tool logic.
//!
//! Everything here is what two or more tools exchange or must agree on: the registry entry and the
//! publisher record (files in a platform root), journal records and the pure state classifier that
//! `dot-launch recover`, `dot-discard` and `dot-journal-fmt` share, the plugin protocol messages, the
//! result and error objects, exit codes, the name and digest newtypes, the launcher↔runner contract
//! (`runner`), what a kernel offers `process` containment (`probe`), and the canary's escape probes
//! (`canary`).
#![forbid(unsafe_code)]

pub mod canary;
pub mod cli;
pub mod digest;
pub mod entry;
pub mod error;
pub mod explain;
pub mod journal;
pub mod layers;
pub mod layout;
pub mod limits;
pub mod name;
pub mod next;
pub mod probe;
pub mod protocol;
pub mod publisher;
pub mod result;
pub mod runner;
pub mod strict;
pub mod time;
pub mod trust;

pub use digest::Sha256;
pub use entry::{Containment, Entry, EnvName, InputDecl, InputKind, RuntimeDir, Trust};
pub use error::{ErrorObject, ExitCode, Kind, ToErrorObject};
pub use name::{Name, NameError};
pub use next::Next;
pub use publisher::{Publisher, PublisherKey};
