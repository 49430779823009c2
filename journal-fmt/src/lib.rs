//! Not yet built: see the open issue that delivers `dot-journal-fmt`.
#![forbid(unsafe_code)]
