//! Not yet built: see the open issue that delivers `dot-reap`.
#![forbid(unsafe_code)]
