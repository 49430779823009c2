//! Debian packages in tests: a scratch file system root dpkg installs into (`dpkg --root`), dpkg
//! run on it, and the files a package left there. Shared by the package of dot itself
//! (tests/tests/deb.rs) and the package of a plugin (tests/tests/plugin_deb.rs).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `cmd`, which must succeed; its stdout.
pub fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({:?}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A file system root dpkg can install into (`dpkg --root`) at `dir/sysroot`: its database and
/// nothing else.
pub fn scratch_root(dir: &Path) -> PathBuf {
    let root = dir.join("sysroot");
    for d in ["info", "updates", "triggers"] {
        std::fs::create_dir_all(root.join("var/lib/dpkg").join(d)).unwrap();
    }
    std::fs::write(root.join("var/lib/dpkg/status"), b"").unwrap();
    root
}

/// `dpkg --root=ROOT ARGS [PKG]`, which must succeed; its stdout.
pub fn dpkg(root: &Path, args: &[&str], pkg: Option<&Path>) -> String {
    let mut c = Command::new("dpkg");
    c.arg(format!("--root={}", root.display()))
        .arg("--log=/dev/null")
        .args(args);
    if let Some(p) = pkg {
        c.arg(p);
    }
    run(&mut c, "dpkg")
}

/// Every file under `dir` but dpkg's own database, relative to `dir`, sorted.
pub fn installed_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            let rel = path.strip_prefix(dir).unwrap().to_path_buf();
            if rel.starts_with("var/lib/dpkg") {
                continue;
            }
            if path.is_dir() && !path.is_symlink() {
                stack.push(path);
            } else {
                found.push(rel);
            }
        }
    }
    found.sort();
    found
}
