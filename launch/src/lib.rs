//! Not yet built: see the open issue that delivers `dot-launch`.
#![forbid(unsafe_code)]
