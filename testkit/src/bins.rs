//! The workspace's binaries and the static fixtures the Makefile builds.

use std::path::{Path, PathBuf};

/// A binary the workspace built, next to the running test executable (`target/[TRIPLE/]PROFILE/`;
/// the test runs from `…/PROFILE/deps/`). Panics if it was not built.
pub fn workspace_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test executable lives in target/…/PROFILE/deps");
    let p = profile_dir.join(name);
    assert!(
        p.is_file(),
        "{} not found: build the workspace's binaries first (`cargo build` or `make test`)",
        p.display()
    );
    p
}

/// A static test binary built by the Makefile for the host target (`hello` is built static).
/// Looked up in `$DOT_STATIC_DIR` if set, else `$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release`
/// and `<workspace>/target/x86_64-unknown-linux-gnu/release`. Panics (never skips) if missing.
pub fn static_fixture(name: &str) -> PathBuf {
    let triple_release = Path::new("x86_64-unknown-linux-gnu").join("release");
    let mut tried = Vec::new();
    if let Some(dir) = std::env::var_os("DOT_STATIC_DIR") {
        tried.push(PathBuf::from(dir).join(name));
    } else {
        if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
            tried.push(PathBuf::from(t).join(&triple_release).join(name));
        }
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("testkit lives in the workspace");
        tried.push(workspace.join("target").join(&triple_release).join(name));
    }
    for p in &tried {
        if p.is_file() {
            return p.clone();
        }
    }
    panic!(
        "static fixture {name:?} not found (tried {tried:?}); run `make test`, which builds it \
         static for the host target, or set DOT_STATIC_DIR to the directory holding it"
    );
}

/// Asserts an external program the suite needs is on `PATH` (`.ci/run` installs it, from the
/// Debian `package`): a missing one fails the test, never skips it.
#[track_caller]
pub fn require_program(name: &str, package: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false);
    assert!(
        found,
        "{name} is not installed: `.ci/run` installs it (apt-get install {package})"
    );
}

/// Copies an executable that a test will run, without this process ever holding the copy open
/// for writing: `cp` writes it. The tests of one binary run on several threads; a child that
/// another thread forks while this process has the copy open for writing keeps that descriptor
/// until it execs, and executing the copy in that window fails with `ETXTBSY`.
pub fn copy_exe(from: &Path, to: &Path) {
    let status = std::process::Command::new("cp")
        .arg("--")
        .arg(from)
        .arg(to)
        .status()
        .expect("run cp");
    assert!(
        status.success(),
        "cp {} {}: {status}",
        from.display(),
        to.display()
    );
}

/// A `next` as a tool run through `PATH` prints it: the built tools' directory taken off every
/// dot tool it names. A tool run by its path, as the tests run them, names the other tools
/// beside it (`cli::next::set_program`).
pub fn bare(next: Option<&str>) -> Option<String> {
    let dir = workspace_bin("dot-launch")
        .parent()
        .map(|d| format!("{}/dot-", d.display()))?;
    next.map(|n| n.replace(&dir, "dot-"))
}

/// [`bare`] of a `next_argv`.
pub fn bare_argv(argv: Option<&[String]>) -> Option<Vec<String>> {
    argv.map(|v| {
        v.iter()
            .map(|a| bare(Some(a)).unwrap_or_default())
            .collect()
    })
}
