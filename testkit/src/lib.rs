//! Test helpers shared by dot's test suites, so no test file copies another: unique temp
//! directories, tree snapshots ("nothing was written"), real minisign keys and signatures, decoding
//! a tool's stdout and error line, asserting error kinds (and recording which kinds the suites
//! asserted), fixture executables, entries and platform roots, and locating the workspace's
//! binaries and static fixtures.
//!
//! This crate is a dev-dependency only. Its helpers panic with a clear message on any failure: a
//! test that cannot set up its fixture must fail, never skip.
#![forbid(unsafe_code)]
#![allow(clippy::unwrap_used)]

pub mod bins;
pub mod deb;
pub mod fixtures;
pub mod flock;
pub mod journal;
pub mod keys;
pub mod kinds;
pub mod mount;
pub mod nobody;
pub mod output;
pub mod tempdir;

pub use bins::{bare, bare_argv, copy_exe, require_program, static_fixture, workspace_bin};
pub use fixtures::{
    entry_for, entry_for_bytes, install_entry, install_grant, install_publisher, make_root,
    odd_files, publisher_record, write_exe, SCRIPT,
};
pub use keys::KeyPair;
pub use kinds::{assert_cancelled, assert_refused, assert_typed};
pub use output::{assert_failed, assert_ok, decode_error, decode_json, decode_json_lines};
pub use tempdir::{tree_snapshot, NodeFacts, TempDir};
