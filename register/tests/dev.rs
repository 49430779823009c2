//! `dot-register dev`: local entries in a development root.
#![allow(clippy::unwrap_used)]

use assert_cmd::cargo::cargo_bin_cmd;
use proto::layout::Root;
use proto::{Containment, InputKind, Kind, Name, Sha256, Trust};
use register::report::AddReport;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::Output;
use testkit::TempDir;

const EXE: &[u8] = b"#!/bin/sh\n# local plugin bytes\n";

struct Fx {
    d: TempDir,
    root: Root,
    exe: PathBuf,
}

fn fx(dev: bool) -> Fx {
    let d = TempDir::new();
    let root = testkit::make_root(&d.join("root"), dev);
    let exe = testkit::write_exe(d.path(), "plugin", EXE, 0o755);
    Fx { d, root, exe }
}

impl Fx {
    fn dev(&self, exe: &std::path::Path, extra: &[&str]) -> Output {
        let mut args: Vec<&OsStr> = vec![
            "dev".as_ref(),
            "--root".as_ref(),
            self.root.path().as_os_str(),
            "--name".as_ref(),
            "hello".as_ref(),
            "--exe".as_ref(),
            exe.as_os_str(),
        ];
        args.extend(extra.iter().map(OsStr::new));
        // The fixture executable is a script: an audit entry of it needs the owner's grant.
        args.push("--allow-dynamic".as_ref());
        cargo_bin_cmd!("dot-register").args(args).output().unwrap()
    }

    fn refused(
        &self,
        out: Output,
        code: i32,
        kind: Kind,
        before: &std::collections::BTreeMap<PathBuf, testkit::NodeFacts>,
    ) -> proto::ErrorObject {
        let e = testkit::assert_refused(&out, code, kind);
        assert_eq!(*before, testkit::tree_snapshot(self.root.path()));
        e
    }
}

#[test]
fn registers_a_local_entry_with_its_options() {
    let fx = fx(true);
    let out = fx.dev(
        &fx.exe,
        &[
            "--containment",
            "audit",
            "--version",
            "0.3.1",
            "--protocol",
            ">=1.0, <1.5",
            "--input",
            "name:string",
            "--input",
            "doc:file:optional",
        ],
    );
    let report: AddReport = testkit::assert_ok(&out);
    assert_eq!(report.trust, Trust::Local);
    assert_eq!(report.key_id, None);
    assert_eq!(report.sha256, Sha256::of(EXE));
    let v = verify::entry::verify_entry(&fx.root, &Name::new("hello").unwrap()).unwrap();
    assert_eq!(v.entry.version, semver::Version::new(0, 3, 1));
    assert_eq!(v.entry.protocol, ">=1.0, <1.5");
    assert_eq!(v.entry.publisher, None);
    let inputs: Vec<_> = v
        .entry
        .inputs
        .iter()
        .map(|i| (i.name.as_str(), i.kind, i.required))
        .collect();
    assert_eq!(
        inputs,
        vec![
            ("name", InputKind::String, true),
            ("doc", InputKind::File, false)
        ]
    );
    assert_eq!(fs::metadata(&v.exe_path).unwrap().mode() & 0o7777, 0o555);
    assert!(v.dev_root);
}

#[test]
fn defaults_version_and_protocol() {
    let fx = fx(true);
    testkit::assert_ok::<AddReport>(&fx.dev(&fx.exe, &["--containment", "audit"]));
    let v = verify::entry::verify_entry(&fx.root, &Name::new("hello").unwrap()).unwrap();
    assert_eq!(v.entry.version, semver::Version::new(0, 1, 0));
    assert_eq!(v.entry.protocol, ">=1.0, <2");
    assert!(v.entry.inputs.is_empty());
}

#[test]
fn registers_a_static_executable_for_process() {
    let fx = fx(true);
    let exe = testkit::static_fixture("hello");
    let report: AddReport = testkit::assert_ok(&fx.dev(&exe, &["--containment", "process"]));
    assert_eq!(report.containment, Containment::Process);
}

#[test]
fn refuses_a_root_without_the_dev_marker() {
    let fx = fx(false);
    let before = testkit::tree_snapshot(fx.root.path());
    let e = fx.refused(
        fx.dev(&fx.exe, &["--containment", "audit"]),
        1,
        Kind::LocalEntryNotDev,
        &before,
    );
    // An empty root: `init --dev` on it is the way out.
    let root = fx.root.path().to_str().unwrap();
    assert_eq!(
        testkit::bare_argv(e.next_argv.as_deref()),
        Some(
            ["dot-register", "init", "--root", root, "--dev"]
                .map(String::from)
                .to_vec()
        )
    );
    // A root that holds an entry stays as it is: a new directory is.
    fs::write(fx.root.plugins().join("other.json"), b"{}").unwrap();
    let before = testkit::tree_snapshot(fx.root.path());
    let e = fx.refused(
        fx.dev(&fx.exe, &["--containment", "audit"]),
        1,
        Kind::LocalEntryNotDev,
        &before,
    );
    assert_eq!(
        testkit::bare(e.next.as_deref()).as_deref(),
        Some("dot-register init --root DIR --dev")
    );
    assert!(e.message.contains("new directory"), "{}", e.message);
}

#[test]
fn a_missing_root_is_made_a_dev_root_by_the_next() {
    let d = TempDir::new();
    let exe = testkit::write_exe(d.path(), "plugin", EXE, 0o755);
    let root = d.join("new");
    let out = cargo_bin_cmd!("dot-register")
        .args(["dev", "--root"])
        .arg(&root)
        .args([
            "--name",
            "hello",
            "--containment",
            "audit",
            "--allow-dynamic",
            "--exe",
        ])
        .arg(&exe)
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 1, Kind::RootMissing);
    let root_s = root.to_str().unwrap();
    assert_eq!(
        testkit::bare_argv(e.next_argv.as_deref()),
        Some(
            ["dot-register", "init", "--root", root_s, "--dev"]
                .map(String::from)
                .to_vec()
        )
    );
    assert!(!root.exists(), "nothing made");
}

#[test]
fn refuses_existing_name_without_replace() {
    let fx = fx(true);
    testkit::assert_ok::<AddReport>(&fx.dev(&fx.exe, &["--containment", "audit"]));
    let other = testkit::write_exe(fx.d.path(), "other", b"#!/bin/sh\n# new build\n", 0o755);
    let before = testkit::tree_snapshot(fx.root.path());
    fx.refused(
        fx.dev(&other, &["--containment", "audit"]),
        1,
        Kind::EntryExists,
        &before,
    );
    let report: AddReport =
        testkit::assert_ok(&fx.dev(&other, &["--containment", "audit", "--replace"]));
    assert!(report.replaced);
}

#[test]
fn refuses_unknown_containment() {
    let fx = fx(true);
    let before = testkit::tree_snapshot(fx.root.path());
    fx.refused(
        fx.dev(&fx.exe, &["--containment", "jail"]),
        2,
        Kind::Usage,
        &before,
    );
}

#[test]
fn refuses_unparsable_protocol_requirement() {
    let fx = fx(true);
    let before = testkit::tree_snapshot(fx.root.path());
    let e = fx.refused(
        fx.dev(&fx.exe, &["--containment", "audit", "--protocol", "soon"]),
        2,
        Kind::EntryMalformed,
        &before,
    );
    assert_eq!(e.field.as_deref(), Some("protocol"));
}

#[test]
fn refuses_bad_version() {
    let fx = fx(true);
    let before = testkit::tree_snapshot(fx.root.path());
    let e = fx.refused(
        fx.dev(&fx.exe, &["--containment", "audit", "--version", "1.0"]),
        2,
        Kind::EntryMalformed,
        &before,
    );
    assert_eq!(e.field.as_deref(), Some("version"));
}

#[test]
fn refuses_duplicate_input_names() {
    let fx = fx(true);
    let before = testkit::tree_snapshot(fx.root.path());
    let out = fx.dev(
        &fx.exe,
        &[
            "--containment",
            "audit",
            "--input",
            "a:string",
            "--input",
            "a:file",
        ],
    );
    let e = fx.refused(out, 2, Kind::EntryMalformed, &before);
    assert_eq!(e.field.as_deref(), Some("inputs"));
}

#[test]
fn refuses_malformed_input_spec() {
    let fx = fx(true);
    let before = testkit::tree_snapshot(fx.root.path());
    for spec in ["a", "a:blob", "A:string", "a:string:maybe"] {
        let e = fx.refused(
            fx.dev(&fx.exe, &["--containment", "audit", "--input", spec]),
            2,
            Kind::EntryMalformed,
            &before,
        );
        assert_eq!(e.value.as_deref(), Some(spec));
    }
}

#[test]
fn refuses_bad_plugin_name() {
    let fx = fx(true);
    let before = testkit::tree_snapshot(fx.root.path());
    let out = cargo_bin_cmd!("dot-register")
        .args(["dev", "--containment", "audit", "--name", "../x", "--root"])
        .arg(fx.root.path())
        .arg("--exe")
        .arg(&fx.exe)
        .output()
        .unwrap();
    fx.refused(out, 2, Kind::BadName, &before);
}

#[test]
fn refuses_the_reserved_name_recover() {
    // `dot-launch --root R recover` is the recover subcommand: a plugin of that name could be
    // registered but never launched.
    let fx = fx(true);
    let before = testkit::tree_snapshot(fx.root.path());
    let out = cargo_bin_cmd!("dot-register")
        .args([
            "dev",
            "--containment",
            "audit",
            "--name",
            "recover",
            "--root",
        ])
        .arg(fx.root.path())
        .arg("--exe")
        .arg(&fx.exe)
        .arg("--allow-dynamic")
        .output()
        .unwrap();
    let e = fx.refused(out, 2, Kind::EntryMalformed, &before);
    assert_eq!(e.field.as_deref(), Some("name"));
    assert_eq!(e.value.as_deref(), Some("recover"));
}

#[test]
fn refuses_dynamic_exe_as_process() {
    let fx = fx(true);
    let before = testkit::tree_snapshot(fx.root.path());
    let e = fx.refused(
        fx.dev(
            std::path::Path::new("/bin/true"),
            &["--containment", "process"],
        ),
        1,
        Kind::NotStaticElf,
        &before,
    );
    assert_eq!(e.path.as_deref(), Some("/bin/true"));
}

#[test]
fn refuses_script_as_process() {
    let fx = fx(true);
    let script = testkit::write_exe(fx.d.path(), "script", testkit::SCRIPT, 0o755);
    let before = testkit::tree_snapshot(fx.root.path());
    fx.refused(
        fx.dev(&script, &["--containment", "process"]),
        1,
        Kind::NotStaticElf,
        &before,
    );
}

#[test]
fn refuses_symlinked_exe() {
    let fx = fx(true);
    let link = fx.d.join("link");
    std::os::unix::fs::symlink(&fx.exe, &link).unwrap();
    let before = testkit::tree_snapshot(fx.root.path());
    fx.refused(
        fx.dev(&link, &["--containment", "audit"]),
        1,
        Kind::ExeSymlink,
        &before,
    );
}

#[test]
fn refuses_a_script_without_an_interpreter_line() {
    let fx = fx(true);
    for (name, bytes) in [
        ("noshebang.sh", &b"echo '{}'\n"[..]),
        ("empty", b""),
        ("short", b"#"),
    ] {
        let exe = testkit::write_exe(fx.d.path(), name, bytes, 0o755);
        let before = testkit::tree_snapshot(fx.root.path());
        let e = fx.refused(
            fx.dev(&exe, &["--containment", "audit"]),
            1,
            Kind::ExeUnknownFormat,
            &before,
        );
        assert_eq!(e.path.as_deref(), exe.to_str(), "{e:?}");
        assert!(e.message.contains("#!/bin/sh"), "{}", e.message);
    }
    // Without --allow-dynamic too: the format is checked first, so the grant's `next` is never
    // offered for a file no grant could make runnable.
    let exe = testkit::write_exe(fx.d.path(), "plain", b"echo hi\n", 0o755);
    let out = cargo_bin_cmd!("dot-register")
        .args(["dev", "--root"])
        .arg(fx.root.path())
        .args(["--name", "hello", "--containment", "audit", "--exe"])
        .arg(&exe)
        .output()
        .unwrap();
    testkit::assert_refused(&out, 1, Kind::ExeUnknownFormat);
}

/// `dev --version` is the plugin's version; the tool's own `-V, --version` works only as the first
/// argument, and the help of a subcommand with both says them apart.
#[test]
fn the_plugins_version_option_is_told_apart_from_the_tools() {
    for sub in [&["dev"][..], &["entry", "new"][..]] {
        let out = cargo_bin_cmd!("dot-register")
            .args(sub)
            .arg("--help")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let help = String::from_utf8_lossy(&out.stdout);
        let own = help
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("--version "))
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(own.contains("the plugin's version"), "{sub:?}: {help}");
        assert!(own.contains("not the tool's own"), "{sub:?}: {help}");
        assert!(
            help.contains("only as the first argument, before any"),
            "{sub:?}: {help}"
        );
    }
    let out = cargo_bin_cmd!("dot-register")
        .args(["init", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("(first argument only)"), "{help}");
}
