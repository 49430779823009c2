//! The only crate of dot with `unsafe`: thin, documented wrappers for what the kernel interface needs.
//!
//! Every `unsafe` block is one syscall (or one std hook that runs between fork and exec), converted at
//! once to `io::Result`, with a `// SAFETY:` line. Raw descriptors become `OwnedFd`/`BorrowedFd` as soon
//! as a call returns them; no `c_int` crosses this crate's API.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub mod confine;
pub mod fs;
pub mod namespace;
pub mod process;
pub mod signal;
pub mod spawn;
