//! Not yet built: see the open issue that delivers `dot-sandbox`.
#![forbid(unsafe_code)]
