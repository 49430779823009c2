//! What the `dot-register` suites share: running the tool, and a root that trusts a publisher.
#![allow(dead_code, clippy::unwrap_used)]

use assert_cmd::cargo::cargo_bin_cmd;
use proto::layout::Root;
use std::ffi::OsStr;
use std::path::Path;
use std::process::Output;
use testkit::KeyPair;

/// Runs `dot-register` with `args`.
pub fn reg<I: AsRef<OsStr>>(args: impl IntoIterator<Item = I>) -> Output {
    cargo_bin_cmd!("dot-register").args(args).output().unwrap()
}

/// `dir/root`, made by `dot-register init`, trusting `key` as publisher `acme` (added by
/// `dot-register publisher add`, its public key file written into `dir`).
pub fn root_trusting_acme(dir: &Path, key: &KeyPair) -> Root {
    let root = Root::single(dir.join("root"));
    let r = root.path().to_str().unwrap().to_owned();
    testkit::assert_ok::<register::report::InitReport>(&reg(["init", "--root", &r]));
    let pk = key.pk_path(dir);
    testkit::assert_ok::<proto::Publisher>(&reg([
        "publisher",
        "add",
        "--root",
        &r,
        "--id",
        "acme",
        "--pubkey",
        pk.to_str().unwrap(),
    ]));
    root
}
