//! The Makefile as a newcomer meets it: `make` without cargo or rustc fails with one line naming
//! rustup and the minimum version, `make test` as anyone but root stops at once saying it needs
//! root, and `make install` installs the release build there is unless its compiled-in layer
//! paths are not the ones asked for, and then says why it rebuilds.
#![allow(clippy::unwrap_used)]

mod common;

use common::repo_root;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use testkit::TempDir;

/// The Makefile and Cargo.toml copied into a directory anyone can read (the checkout may lie
/// where `nobody` cannot enter).
fn copied(dir: &TempDir) -> &Path {
    for f in ["Makefile", "Cargo.toml"] {
        std::fs::copy(repo_root().join(f), dir.join(f)).unwrap();
    }
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir.path()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn make_without_a_toolchain_says_so_in_one_line() {
    let dir = TempDir::new();
    let out = Command::new("make")
        .arg("--no-print-directory")
        .arg("-C")
        .arg(copied(&dir))
        .arg("build")
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let text = stderr(&out);
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first
            .starts_with("make: cargo and rustc not found: install Rust 1.89 or newer with rustup"),
        "{text}"
    );
    assert!(
        first.contains("Debian's packaged rustc is too old"),
        "{text}"
    );
    // The one line, then make's own line naming the target; nothing else was tried.
    assert_eq!(text.lines().count(), 2, "{text}");
}

#[test]
fn make_test_as_another_user_stops_at_once_saying_it_needs_root() {
    common::require_program("setpriv", "util-linux");
    let dir = TempDir::new();
    let out = testkit::nobody::command(Path::new("/usr/bin/make"))
        .arg("--no-print-directory")
        .arg("-C")
        .arg(copied(&dir))
        .arg("test")
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let text = stderr(&out);
    assert!(
        text.starts_with("make test: the test suites run as root (uid 65534 here)"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(out.stdout.is_empty(), "nothing built or run: {out:?}");
}

/// `make -n install` with a release build in `built` whose layers are `stamp`: what it says and
/// would do.
fn install_with(stamp: Option<&str>) -> (String, String) {
    let built = TempDir::new();
    if let Some(s) = stamp {
        std::fs::write(built.join("dot-layers"), format!("{s}\n")).unwrap();
    }
    let out = Command::new("make")
        .args(["--no-print-directory", "-n", "-C"])
        .arg(repo_root())
        .args(["install", "PREFIX=/usr", "DESTDIR=/nonexistent/stage"])
        .arg(format!("BUILT={}", built.path().display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr(&out),
    )
}

#[test]
fn make_install_installs_the_build_there_is_unless_its_layers_differ() {
    let (plan, said) = install_with(Some("/usr/lib/dot /etc/dot /usr/libexec/dot"));
    assert!(!plan.contains("cargo"), "no rebuild: {plan}");
    assert!(plan.contains("/nonexistent/stage/usr/bin"), "{plan}");
    assert!(said.is_empty(), "{said}");

    let (plan, said) = install_with(Some(
        "/usr/local/lib/dot /usr/local/etc/dot /usr/local/libexec/dot",
    ));
    assert!(
        said.contains("has the layers /usr/local/lib/dot /usr/local/etc/dot /usr/local/libexec/dot compiled in, PREFIX=/usr needs /usr/lib/dot /etc/dot /usr/libexec/dot: rebuilding"),
        "{said}"
    );
    assert!(plan.contains("cargo build --locked --release"), "{plan}");

    let (plan, said) = install_with(None);
    assert!(said.contains("no release build in"), "{said}");
    assert!(plan.contains("cargo build --locked --release"), "{plan}");
}

/// A packager who is not root installs from a build tree they cannot write (root's, after a
/// `sudo make build`): `make install` writes nothing outside DESTDIR — the bash completion it
/// generates from the tools' `--help` goes through a temporary file, not beside the binaries.
#[test]
fn make_install_writes_only_into_destdir_so_a_packager_need_not_own_the_build() {
    common::require_program("setpriv", "util-linux");
    common::require_program("objcopy", "binutils");
    let dir = TempDir::new();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // The sources `install` reads, root's and read-only to the packager.
    let src = dir.join("src");
    for sub in ["man", "docs", "packaging"] {
        std::fs::create_dir_all(src.join(sub)).unwrap();
    }
    for f in ["Makefile", "Cargo.toml", "README.md", "BENCHMARKS.md"] {
        std::fs::copy(repo_root().join(f), src.join(f)).unwrap();
    }
    for sub in ["man", "docs"] {
        for e in std::fs::read_dir(repo_root().join(sub)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), src.join(sub).join(e.file_name())).unwrap();
        }
    }
    std::fs::copy(
        repo_root().join("packaging/completion.sh"),
        src.join("packaging/completion.sh"),
    )
    .unwrap();
    let tools = common::makefile_tools();
    let names: Vec<&str> = tools.iter().map(String::as_str).collect();
    let built = testkit::nobody::copy_tools(dir.path(), &names);
    let stage = dir.join("stage");
    std::fs::create_dir(&stage).unwrap();
    let nobody = testkit::nobody::NOBODY;
    std::os::unix::fs::chown(&stage, Some(nobody), Some(nobody)).unwrap();
    let out = testkit::nobody::command(Path::new("/usr/bin/make"))
        .args(["--no-print-directory", "-C"])
        .arg(&src)
        .args(["install", "PREFIX=/usr", "PROFILE=debug"])
        .arg(format!("DESTDIR={}", stage.display()))
        .arg(format!("BUILT={}", built.display()))
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stage.join("usr/bin/dot-launch").is_file());
    assert!(stage
        .join("usr/share/bash-completion/completions/dot-launch")
        .is_file());
    let beside: Vec<String> = std::fs::read_dir(&built)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !tools.contains(n))
        .collect();
    assert_eq!(
        beside,
        Vec::<String>::new(),
        "nothing written beside the binaries"
    );
}
