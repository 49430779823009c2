//! The shared data model of dot, and nothing else: no I/O, no tool logic, no command line.
//!
//! Everything here is what two or more tools exchange or must agree on: the registry entry and the
//! publisher record (files in a platform root), journal records and the pure state classifier that
//! `dot-launch recover`, `dot-discard` and `dot-journal-fmt` share, what they report of a run they
//! leave in place (`retained`), the plugin protocol messages, the result and error objects, error
//! kinds and exit codes, a run's limits (`limits`), the name and digest newtypes, the
//! launcher↔runner contract (`runner`), what a kernel offers `process` containment (`probe`), and
//! the canary's escape probes (`canary`).
//!
//! Nothing here reads or writes a file, a descriptor or the terminal: argument parsing, the
//! `next` commands and their shell quoting, and what is printed on stdout and stderr are the
//! `cli` crate's, which every tool's `main` uses.
#![forbid(unsafe_code)]

/// For [`kinds!`]: the serde its expansion implements, whatever the calling crate depends on.
#[doc(hidden)]
pub use serde as __serde;

pub mod canary;
pub mod digest;
pub mod entry;
pub mod error;
pub mod explain;
pub mod journal;
pub mod layers;
pub mod layout;
pub mod limits;
pub mod name;
pub mod probe;
pub mod protocol;
pub mod publisher;
pub mod result;
pub mod retained;
pub mod runner;
pub mod strict;
pub mod time;
pub mod trust;

pub use digest::Sha256;
pub use entry::{Containment, Entry, EnvName, InputDecl, InputKind, RuntimeDir, Trust};
pub use error::{ErrorKind, ErrorObject, ExitCode, Kind, NextCommand, ToErrorObject};
pub use name::{Name, NameError};
pub use publisher::{Publisher, PublisherKey};
