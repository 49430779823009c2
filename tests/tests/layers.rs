//! The system registry's layers (docs/registry.md "System layers"), through the real tools on a
//! scratch `--sysroot`: the admin entry of a name overrides the vendor's, an admin mask hides it,
//! a deny list or a revocation in either layer applies to the other's entries, each entry is
//! verified against its own layer's trust store, and a tampered vendor copy is refused.
#![allow(clippy::unwrap_used)]

mod common;

use common::ok;
use common::system::{Publisher, System};
use proto::layers::{Layer, Status};
use proto::Kind;
use register::report::{MaskReport, SystemList};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};
use testkit::{assert_ok, assert_refused, workspace_bin};
use verify::cli::EntryReport;

/// A sysroot whose vendor layer ships `hello` 1.0.0 (process) signed by `acme`.
fn vendor_hello() -> (System, Publisher) {
    let sys = System::new();
    let acme = Publisher::new("acme", sys.dir.path());
    System::publish(
        true,
        &sys.layers.vendor,
        &acme,
        "hello",
        &workspace_bin("hello"),
        "process",
        "1.0.0",
    );
    (sys, acme)
}

fn list(sys: &System) -> SystemList {
    assert_ok(&sys.cmd("dot-register", &["list"]).output().unwrap())
}

#[test]
fn the_vendor_entry_answers_and_a_layer_is_world_readable_and_stateless() {
    let (sys, _) = vendor_hello();
    let r: EntryReport = assert_ok(&sys.verify("hello"));
    assert_eq!(r.layer, Layer::Vendor);
    assert_eq!(r.overrides, None);
    assert_eq!(r.registry, sys.layers.vendor);
    // What a package ships: registry files only, readable by every user, writable by none.
    let v = &sys.layers.vendor;
    for d in ["", "plugins.d", "store/sha256", "trust/publishers"] {
        let m = std::fs::metadata(v.join(d)).unwrap().permissions().mode();
        assert_eq!(m & 0o777, 0o755, "{d}");
    }
    let m = std::fs::metadata(v.join("plugins.d/hello.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(m & 0o777, 0o644);
    for absent in ["txn", "audit.log", "trust/high-water.json", "DEV"] {
        assert!(!v.join(absent).exists(), "{absent} in a layer");
    }
}

#[test]
fn the_admin_entry_overrides_the_vendor_entry() {
    let (sys, _) = vendor_hello();
    System::admin_hello(&sys.layers.admin, sys.dir.path());
    let r: EntryReport = assert_ok(&sys.verify("hello"));
    assert_eq!(r.layer, Layer::Admin);
    assert_eq!(r.overrides, Some(Layer::Vendor));
    assert_eq!(r.version, semver::Version::new(2, 0, 0));
    assert_eq!(r.publisher.unwrap().as_str(), "site");

    let l = list(&sys);
    let status: Vec<(Option<Layer>, Option<Status>, bool)> = l
        .entries
        .iter()
        .map(|e| (e.layer, e.status, e.valid))
        .collect();
    assert_eq!(
        status,
        [
            (Some(Layer::Vendor), Some(Status::Overridden), true),
            (Some(Layer::Admin), Some(Status::Active), true),
        ]
    );
    assert!(l.layers.iter().all(|x| x.present));
    // The admin's layer keeps its change log and high-water versions (only a package's staging
    // leaves them out); the log is root's alone.
    assert_eq!(
        std::fs::metadata(sys.layers.admin.join("audit.log"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    assert!(sys.layers.admin.join("trust/high-water.json").is_file());
}

#[test]
fn each_entry_is_verified_against_its_own_layers_trust_store() {
    let (sys, acme) = vendor_hello();
    // The admin layer has no publisher `acme`: acme's signature is not trusted there, even though
    // the vendor layer trusts it.
    System::init_layer(&sys.layers.admin);
    let work = sys.dir.join("work");
    std::fs::create_dir(&work).unwrap();
    let (entry, sig) = acme.sign_entry(&work, "hello", &workspace_bin("hello"), "audit", "3.0.0");
    let admin = proto::layout::Root::single(&sys.layers.admin);
    let name = proto::Name::new("hello").unwrap();
    std::fs::copy(&entry, admin.entry(&name)).unwrap();
    std::fs::copy(&sig, admin.entry_sig(&name)).unwrap();
    let e = assert_refused(&sys.verify("hello"), 1, Kind::PublisherUnknown);
    assert_eq!(
        e.path.as_deref(),
        Some(
            admin
                .publisher(&proto::Name::new("acme").unwrap())
                .to_str()
                .unwrap()
        )
    );
}

#[test]
fn an_admin_mask_hides_the_vendor_entry_until_unmasked() {
    let (sys, _) = vendor_hello();
    let m: MaskReport = assert_ok(
        &sys.cmd("dot-register", &["mask", "hello"])
            .output()
            .unwrap(),
    );
    assert!(m.masked && m.changed);
    assert_eq!(m.hides, [Layer::Vendor]);
    let mask = sys.layers.admin.join("plugins.d/hello.mask");
    assert_eq!(m.path, mask.display().to_string());
    let meta = std::fs::metadata(&mask).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o644);
    assert_eq!(meta.len(), 0);

    let e = assert_refused(&sys.verify("hello"), 1, Kind::EntryMasked);
    assert_eq!(e.path.as_deref(), Some(mask.to_str().unwrap()));
    let l = list(&sys);
    assert_eq!(l.entries[0].status, Some(Status::Masked));
    assert_eq!(l.masks.len(), 1);
    assert_eq!(l.masks[0].hides, [Layer::Vendor]);

    // Masking again changes nothing; unmask restores the vendor entry.
    let again: MaskReport = assert_ok(
        &sys.cmd("dot-register", &["mask", "hello"])
            .output()
            .unwrap(),
    );
    assert!(!again.changed);
    let un: MaskReport = assert_ok(
        &sys.cmd("dot-register", &["unmask", "hello"])
            .output()
            .unwrap(),
    );
    assert!(un.changed && !un.masked);
    assert!(!mask.exists());
    let r: EntryReport = assert_ok(&sys.verify("hello"));
    assert_eq!(r.layer, Layer::Vendor);
    // The admin layer's change log has the mask and the unmask, once each (the repeated mask
    // changed nothing), like every other change.
    let log = std::fs::read(sys.layers.admin.join("audit.log")).unwrap();
    let actions: Vec<(proto::trust::AuditAction, Option<String>)> = log
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let r: proto::trust::AuditRecord = serde_json::from_slice(l).unwrap();
            (r.action, r.name)
        })
        .filter(|(a, _)| {
            matches!(
                a,
                proto::trust::AuditAction::Mask | proto::trust::AuditAction::Unmask
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            (proto::trust::AuditAction::Mask, Some("hello".to_owned())),
            (proto::trust::AuditAction::Unmask, Some("hello".to_owned())),
        ]
    );
}

#[test]
fn a_mask_before_any_package_is_allowed_and_hides_what_comes_later() {
    let sys = System::new();
    let m: MaskReport = assert_ok(
        &sys.cmd("dot-register", &["mask", "hello"])
            .output()
            .unwrap(),
    );
    assert!(m.masked && m.hides.is_empty());
    let e = assert_refused(&sys.verify("hello"), 1, Kind::EntryMasked);
    assert!(e.message.contains("no layer has an entry"), "{}", e.message);
    let acme = Publisher::new("acme", sys.dir.path());
    System::publish(
        true,
        &sys.layers.vendor,
        &acme,
        "hello",
        &workspace_bin("hello"),
        "process",
        "1.0.0",
    );
    assert_refused(&sys.verify("hello"), 1, Kind::EntryMasked);
}

#[test]
fn a_name_in_no_layer_is_missing() {
    let (sys, _) = vendor_hello();
    let e = assert_refused(&sys.verify("other"), 1, Kind::EntryMissing);
    let want = sys.layers.admin.join("plugins.d/other.json");
    assert_eq!(e.path.as_deref(), Some(want.to_str().unwrap()));
}

/// `dot-register deny add --root LAYER` with `args`.
fn deny(layer: &std::path::Path, args: &[&str]) {
    ok(
        common::tool("dot-register")
            .args(["deny", "add", "--root"])
            .arg(layer)
            .args(args)
            .args(["--reason", "withdrawn"])
            .output()
            .unwrap(),
        "deny add",
    );
}

#[test]
fn the_admin_deny_list_applies_to_the_vendor_entry() {
    let (sys, _) = vendor_hello();
    System::init_layer(&sys.layers.admin);
    let sha = proto::Sha256::of(&std::fs::read(workspace_bin("hello")).unwrap()).to_hex();
    deny(&sys.layers.admin, &["--sha256", &sha]);
    let e = assert_refused(&sys.verify("hello"), 1, Kind::Denied);
    let want = sys.layers.admin.join("trust/deny.json");
    assert_eq!(e.path.as_deref(), Some(want.to_str().unwrap()));
    assert_eq!(e.value.as_deref(), Some(sha.as_str()));
}

#[test]
fn the_vendor_deny_list_applies_to_the_admin_entry() {
    let (sys, _) = vendor_hello();
    let site = System::admin_hello(&sys.layers.admin, sys.dir.path());
    // The vendor layer does not list site's key: denied by id alone it would not be denied by its
    // bytes, so the id is refused and the key itself is denied.
    let out = common::tool("dot-register")
        .args(["deny", "add", "--root"])
        .arg(&sys.layers.vendor)
        .args(["--key", &site.key.key_id(), "--reason", "withdrawn"])
        .output()
        .unwrap();
    assert_refused(&out, 1, Kind::KeyUnknown);
    deny(
        &sys.layers.vendor,
        &["--pubkey", site.pubkey.to_str().unwrap()],
    );
    let e = assert_refused(&sys.verify("hello"), 1, Kind::Denied);
    let want = sys.layers.vendor.join("trust/deny.json");
    assert_eq!(e.path.as_deref(), Some(want.to_str().unwrap()));
}

#[test]
fn a_key_revoked_in_the_admin_layer_is_revoked_for_the_vendor_entry() {
    let (sys, acme) = vendor_hello();
    System::init_layer(&sys.layers.admin);
    let admin = &sys.layers.admin;
    for args in [
        vec!["publisher", "add", "--id", "acme", "--pubkey"],
        vec![
            "publisher",
            "revoke",
            "--id",
            "acme",
            "--reason",
            "stolen",
            "--key",
        ],
    ] {
        let mut c = common::tool("dot-register");
        c.args(&args[..2]).arg("--root").arg(admin).args(&args[2..]);
        if args[1] == "add" {
            c.arg(&acme.pubkey);
        } else {
            c.arg(acme.key.key_id());
        }
        ok(c.output().unwrap(), "publisher");
    }
    let e = assert_refused(&sys.verify("hello"), 1, Kind::KeyRevoked);
    let want = admin.join("trust/publishers/acme.json");
    assert_eq!(e.path.as_deref(), Some(want.to_str().unwrap()));
}

#[test]
fn a_publisher_revoked_in_the_vendor_layer_is_revoked_for_the_admin_entry() {
    let (sys, acme) = vendor_hello();
    // The admin trusts acme too and registers its own acme-signed entry of another name.
    System::publish(
        false,
        &sys.layers.admin,
        &acme,
        "greet",
        &workspace_bin("hello"),
        "audit",
        "1.0.0",
    );
    assert_ok::<EntryReport>(&sys.verify("greet"));
    ok(
        common::tool("dot-register")
            .args(["publisher", "revoke", "--root"])
            .arg(&sys.layers.vendor)
            .args(["--id", "acme", "--reason", "gone"])
            .output()
            .unwrap(),
        "revoke",
    );
    let e = assert_refused(&sys.verify("greet"), 1, Kind::PublisherRevoked);
    let want = sys.layers.vendor.join("trust/publishers/acme.json");
    assert_eq!(e.path.as_deref(), Some(want.to_str().unwrap()));
}

#[test]
fn a_tampered_vendor_copy_is_refused() {
    let (sys, _) = vendor_hello();
    let r: EntryReport = assert_ok(&sys.verify("hello"));
    let store = sys
        .layers
        .vendor
        .join("store/sha256")
        .join(r.sha256.to_hex());
    let mut bytes = std::fs::read(&store).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(&store, &bytes).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o555)).unwrap();
    let e = assert_refused(&sys.verify("hello"), 1, Kind::StoreTampered);
    assert_eq!(e.path.as_deref(), Some(store.to_str().unwrap()));
    // The vendor layer's files are its package's: no `rm` of them, the package is named instead.
    assert_eq!(
        (e.next.as_deref(), e.next_argv.as_ref()),
        (None, None),
        "{e:?}"
    );
    assert!(e.message.contains("reinstall the package"), "{e:?}");
}

#[test]
fn a_layer_that_others_can_write_is_refused() {
    let (sys, _) = vendor_hello();
    let p = sys.layers.vendor.join("plugins.d");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = assert_refused(&sys.verify("hello"), 1, Kind::RootUnsafe);
    assert_eq!(e.path.as_deref(), Some(p.to_str().unwrap()));
}

#[test]
fn root_and_sysroot_together_are_a_usage_error() {
    let (sys, _) = vendor_hello();
    for tool_name in ["dot-verify", "dot-register"] {
        let sub = if tool_name == "dot-verify" {
            vec!["entry", "hello", "--root", "/nonexistent"]
        } else {
            vec!["list", "--root", "/nonexistent"]
        };
        assert_refused(&sys.cmd(tool_name, &sub).output().unwrap(), 2, Kind::Usage);
    }
}

/// The tools nobody runs, copied where nobody can reach them.
const NOBODY_TOOLS: [&str; 4] = ["dot-launch", "dot-sandbox", "dot-canary", "dot-register"];

fn owner_and_mode(p: &std::path::Path) -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(p).unwrap();
    (m.uid(), m.mode() & 0o7777)
}

#[test]
fn nobody_launches_from_root_owned_layers_at_both_levels_and_cannot_change_them() {
    use testkit::nobody::{self, NOBODY};
    let (sys, _) = vendor_hello();
    let site = Publisher::new("site", sys.dir.path());
    System::publish(
        false,
        &sys.layers.admin,
        &site,
        "greet",
        &workspace_bin("hello"),
        "audit",
        "1.0.0",
    );
    let bin = nobody::copy_tools(sys.dir.path(), &NOBODY_TOOLS);
    let home = sys.dir.join("home");
    let target = sys.dir.join("target");
    for (d, m) in [(&home, 0o700), (&target, 0o755)] {
        std::fs::create_dir(d).unwrap();
        std::os::unix::fs::chown(d, Some(NOBODY), Some(NOBODY)).unwrap();
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(m)).unwrap();
    }
    let state = home.join("state");
    let before = testkit::tree_snapshot(&sys.sysroot);
    for (name, consent, containment, layer) in [
        (
            "hello",
            "--require-process-sandbox",
            proto::Containment::Process,
            Layer::Vendor,
        ),
        (
            "greet",
            "--allow-audit-plugin",
            proto::Containment::Audit,
            Layer::Admin,
        ),
    ] {
        let out = nobody::command(&bin.join("dot-launch"))
            .arg("--sysroot")
            .arg(&sys.sysroot)
            .arg("--state")
            .arg(&state)
            .args([name, consent, "--input", "name=nobody", "--target"])
            .arg(&target)
            .output()
            .unwrap();
        let r = common::result(&out);
        assert_eq!(r.containment, containment, "{name}");
        assert_eq!(r.layer, Some(layer), "{name}");
        let out = target.join("hello.txt");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "hello, nobody\n");
        assert_eq!(owner_and_mode(&out).0, NOBODY);
    }
    assert_eq!(owner_and_mode(&state), (NOBODY, 0o700));
    // Without --state: nobody's default, $HOME/.local/state/dot, made with its parents.
    let out = nobody::command(&bin.join("dot-launch"))
        .env("HOME", &home)
        .arg("--sysroot")
        .arg(&sys.sysroot)
        .args(["greet", "--allow-audit-plugin", "--target"])
        .arg(&target)
        .output()
        .unwrap();
    common::result(&out);
    let default = home.join(".local/state/dot");
    assert_eq!(owner_and_mode(&default), (NOBODY, 0o700));
    assert!(default.join("audit.log").is_file());

    // dot-register, as nobody, changes neither layer.
    let register = |args: &[&str], root: Option<&std::path::Path>| {
        let mut c = nobody::command(&bin.join("dot-register"));
        c.args(args);
        match root {
            Some(r) => c.arg("--root").arg(r),
            None => c.arg("--sysroot").arg(&sys.sysroot),
        };
        c.output().unwrap()
    };
    let zeros = "0".repeat(64);
    for (layer, dir) in sys.layers.each() {
        for args in [
            vec!["deny", "add", "--sha256", zeros.as_str(), "--reason", "x"],
            vec!["publisher", "revoke", "--id", "acme", "--reason", "x"],
            vec!["remove", "--name", "hello"],
        ] {
            let e = assert_refused(&register(&args, Some(dir)), 1, Kind::RegistryReadOnly);
            assert_eq!(e.path.as_deref(), Some(dir.to_str().unwrap()), "{layer}");
        }
    }
    for verb in ["mask", "unmask"] {
        let e = assert_refused(&register(&[verb, "hello"], None), 1, Kind::RegistryReadOnly);
        assert_eq!(
            e.path.as_deref(),
            Some(sys.layers.admin.to_str().unwrap()),
            "{verb}"
        );
    }
    // Reading them is fine.
    let l: SystemList = assert_ok(&register(&["list"], None));
    assert!(l.entries.iter().all(|e| e.valid), "{l:?}");

    // The files themselves: each attempt fails with its errno.
    let hello = proto::Name::new("hello").unwrap();
    let vendor = proto::layout::Root::single(&sys.layers.vendor);
    let r: EntryReport = assert_ok(&sys.verify("hello"));
    let copy = vendor.store_file(&r.sha256);
    let entry = vendor.entry(&hello);
    let mask = proto::layers::mask_path(&sys.layers.admin, &hello);
    for (what, errno) in nobody::errnos(
        &[
            ("write the vendor copy", "os.open(COPY, os.O_WRONLY)"),
            (
                "write the vendor entry",
                "os.open(ENTRY, os.O_WRONLY | os.O_APPEND)",
            ),
            ("unlink the vendor entry", "os.unlink(ENTRY)"),
            (
                "mask by hand",
                "os.open(MASK, os.O_WRONLY | os.O_CREAT, 0o644)",
            ),
        ],
        &[("COPY", &copy), ("ENTRY", &entry), ("MASK", &mask)],
    ) {
        assert_eq!(errno, "EACCES", "{what}");
    }
    assert_eq!(
        testkit::tree_snapshot(&sys.sysroot),
        before,
        "a layer changed"
    );
}

#[test]
fn a_launch_with_no_layer_present_makes_no_state() {
    let sys = System::new();
    let state = sys.dir.join("state");
    let out = sys
        .cmd("dot-launch", &["hello", "--allow-audit-plugin"])
        .arg("--state")
        .arg(&state)
        .output()
        .unwrap();
    assert_refused(&out, 1, Kind::EntryMissing);
    assert!(!state.exists(), "a state was made for no registry");
}

#[test]
fn explain_resolves_the_layers_as_a_launch_and_makes_no_state() {
    let (sys, _) = vendor_hello();
    let state = sys.dir.join("state");
    let out = sys
        .cmd(
            "dot-launch",
            &["hello", "--require-process-sandbox", "--explain"],
        )
        .arg("--state")
        .arg(&state)
        .output()
        .unwrap();
    let e: proto::explain::Explanation = assert_ok(&out);
    assert_eq!(e.decision, "allowed");
    assert!(!state.exists(), "--explain made a state");
    ok(
        sys.cmd("dot-register", &["mask", "hello"])
            .output()
            .unwrap(),
        "mask",
    );
    let out = sys
        .cmd(
            "dot-launch",
            &["hello", "--require-process-sandbox", "--explain"],
        )
        .arg("--state")
        .arg(&state)
        .output()
        .unwrap();
    assert_refused(&out, 1, Kind::EntryMasked);
}

/// `dot-register CMD… --root LAYER rest…` (the layer after the subcommand words), which must
/// succeed.
fn in_layer(layer: &std::path::Path, words: &[&str], rest: &[&std::ffi::OsStr]) {
    let mut c = common::tool("dot-register");
    c.args(words).arg("--root").arg(layer).args(rest);
    ok(c.output().unwrap(), "dot-register");
}

/// A vendor layer cannot lower what the admin decided about a publisher: the admin's threshold of
/// 2 for `acme` refuses the vendor's singly signed entry, also when the vendor lists acme's key
/// under another publisher id; the admin's level refuses the vendor's audit entry of acme.
#[test]
fn a_vendor_layer_cannot_lower_an_admin_threshold() {
    let (sys, acme) = vendor_hello();
    ok(sys.verify("hello"), "the vendor entry verifies before");
    let admin = &sys.layers.admin;
    System::init_layer(admin);
    let k2 = Publisher::new("acme", sys.dir.path());
    let os = |s: &str| std::ffi::OsString::from(s);
    in_layer(
        admin,
        &["publisher", "add"],
        &[
            &os("--id"),
            &os("acme"),
            &os("--pubkey"),
            acme.pubkey.as_os_str(),
        ],
    );
    in_layer(
        admin,
        &["publisher", "rotate"],
        &[
            &os("--id"),
            &os("acme"),
            &os("--force-by-owner"),
            &os("--pubkey"),
            k2.pubkey.as_os_str(),
        ],
    );
    in_layer(
        admin,
        &["publisher", "threshold"],
        &[&os("--id"), &os("acme"), &os("--signatures"), &os("2")],
    );
    let e = assert_refused(&sys.verify("hello"), 1, Kind::ThresholdNotMet);
    assert_eq!(e.value.as_deref(), Some("1/2"));
    let record = admin.join("trust/publishers/acme.json");
    assert!(
        e.message.contains(record.to_str().unwrap()),
        "{}",
        e.message
    );
    // acme's key under another id in the vendor layer is still acme's for the admin.
    let alias = Publisher {
        id: "acme2".into(),
        key: acme.key.clone(),
        pubkey: acme.pubkey.clone(),
    };
    System::publish(
        true,
        &sys.layers.vendor,
        &alias,
        "other",
        &workspace_bin("hello"),
        "audit",
        "1.0.0",
    );
    assert_refused(&sys.verify("other"), 1, Kind::ThresholdNotMet);
    // The admin's level binds the vendor's entries of acme too.
    in_layer(
        admin,
        &["publisher", "threshold"],
        &[&os("--id"), &os("acme"), &os("--signatures"), &os("1")],
    );
    ok(sys.verify("other"), "back to one signature");
    in_layer(
        admin,
        &["publisher", "level"],
        &[&os("--id"), &os("acme"), &os("--level"), &os("verified")],
    );
    assert_refused(&sys.verify("other"), 1, Kind::LevelNeedsProcess);
    ok(
        sys.verify("hello"),
        "a process entry runs at level verified",
    );
}

/// `dot-verify doctor` without `--root` reads the system layers as `entry` does: the entry a
/// launch would run, with its layer; a masked name is not reported; a broken one is.
#[test]
fn doctor_defaults_to_the_system_layers() {
    let (sys, _) = vendor_hello();
    let doctor = |sys: &System| sys.cmd("dot-verify", &["doctor"]).output().unwrap();
    let r: verify::doctor::DoctorReport = assert_ok(&doctor(&sys));
    assert!(r.ok, "{r:?}");
    assert_eq!(r.entries.len(), 1);
    assert_eq!(
        (
            r.entries[0].name.as_str(),
            r.entries[0].layer,
            r.entries[0].valid
        ),
        ("hello", Some(Layer::Vendor), true)
    );
    assert_eq!(r.publishers.len(), 1);
    assert_eq!(r.publishers[0].layer, Some(Layer::Vendor));
    // Masked by the admin: no launch runs it, nothing to report.
    ok(
        sys.cmd("dot-register", &["mask", "hello"])
            .output()
            .unwrap(),
        "mask",
    );
    let r: verify::doctor::DoctorReport = assert_ok(&doctor(&sys));
    assert!(r.entries.is_empty(), "{r:?}");
    ok(
        sys.cmd("dot-register", &["unmask", "hello"])
            .output()
            .unwrap(),
        "unmask",
    );
    // A vendor entry whose pinned copy was changed: reported, exit 1, report on stdout.
    let store = sys.layers.vendor.join("store/sha256");
    let copy = std::fs::read_dir(&store)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut bytes = std::fs::read(&copy).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&copy, &bytes).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o555)).unwrap();
    let out = doctor(&sys);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let r: verify::doctor::DoctorReport = testkit::decode_json(&out.stdout);
    assert!(!r.ok && !r.entries[0].valid, "{r:?}");
    testkit::assert_kind!(r.entries[0].problem.as_ref().unwrap(), Kind::StoreTampered);
}

/// `mask --sysroot S` makes the admin layer with its missing parents (`S/etc`), as its help says.
#[test]
fn mask_makes_the_admin_layer_and_its_parents() {
    let dir = testkit::TempDir::new();
    let sysroot = dir.join("empty sysroot");
    std::fs::create_dir(&sysroot).unwrap();
    let layers = proto::layers::SystemLayers::new(Some(&sysroot));
    assert!(!layers.admin.parent().unwrap().exists());
    let m: MaskReport = assert_ok(
        &common::tool("dot-register")
            .args(["mask", "hello", "--sysroot"])
            .arg(&sysroot)
            .output()
            .unwrap(),
    );
    assert!(m.masked && m.changed);
    assert!(proto::layers::mask_path(&layers.admin, &proto::Name::new("hello").unwrap()).is_file());
    let parent = std::fs::metadata(layers.admin.parent().unwrap()).unwrap();
    assert_eq!(parent.permissions().mode() & 0o777, 0o755);
}

/// The admin layer denies the key a package signs with: by its id alone that would not hold (the
/// admin layer does not list the vendor's key, and minisign's key id is covered by no signature),
/// so `deny add --key` refuses (`key-unknown`, nothing written) and `--pubkey` denies the key's
/// bytes: a package update that lists the same key under another id, and signs with it, is still
/// refused.
#[test]
fn an_admin_deny_of_a_vendor_key_holds_under_another_id() {
    let (sys, acme) = vendor_hello();
    let admin = &sys.layers.admin;
    System::init_layer(admin);
    let before = testkit::tree_snapshot(admin);
    let out = common::tool("dot-register")
        .args(["deny", "add", "--root"])
        .arg(admin)
        .args(["--key", &acme.key.key_id(), "--reason", "leaked"])
        .output()
        .unwrap();
    let e = assert_refused(&out, 1, Kind::KeyUnknown);
    assert_eq!(e.value, Some(acme.key.key_id()));
    assert_eq!(before, testkit::tree_snapshot(admin), "nothing written");
    deny(admin, &["--pubkey", acme.pubkey.to_str().unwrap()]);
    assert_refused(&sys.verify("hello"), 1, Kind::Denied);
    // The package ships the same key under another id, and the entry signed under it.
    let alias = Publisher {
        id: "acme".into(),
        key: acme.key.relisted(),
        pubkey: acme.key.relisted().pk_path(sys.dir.path()),
    };
    std::fs::remove_dir_all(&sys.layers.vendor).unwrap();
    System::publish(
        true,
        &sys.layers.vendor,
        &alias,
        "hello",
        &workspace_bin("hello"),
        "process",
        "1.0.1",
    );
    let e = assert_refused(&sys.verify("hello"), 1, Kind::Denied);
    assert_eq!(e.value, Some(alias.key.key_id()));
}

/// Signs `entry` with each of `keys` into `entry.N.minisig` files; their paths.
fn signatures(entry: &std::path::Path, keys: &[&testkit::KeyPair]) -> Vec<std::path::PathBuf> {
    let bytes = std::fs::read(entry).unwrap();
    keys.iter()
        .enumerate()
        .map(|(i, k)| {
            let p = entry.with_extension(format!("{i}.minisig"));
            std::fs::write(&p, k.sign(&bytes, true)).unwrap();
            p
        })
        .collect()
}

/// `dot-register add --replace --staging` of `entry` with `sigs` into the vendor layer.
fn stage(sys: &System, entry: &std::path::Path, sigs: &[std::path::PathBuf]) {
    let mut c = common::tool("dot-register");
    c.args(["add", "--replace", "--staging", "--root"])
        .arg(&sys.layers.vendor)
        .arg("--entry")
        .arg(entry)
        .arg("--exe")
        .arg(workspace_bin("hello"));
    for s in sigs {
        c.arg("--signature").arg(s);
    }
    ok(c.output().unwrap(), "dot-register add");
}

/// What the admin decided about a publisher is kept by the admin's own keys: the vendor's record
/// of `acme` holding one admin key (K1) and a key of its own (K3) does not meet the admin's 2 of
/// {K1, K2} with K1 + K3; and a vendor record merely named `acme`, with a key of its own, does not
/// sign a name the admin's `acme` pins.
#[test]
fn an_admin_threshold_and_pins_count_only_the_admins_keys() {
    let (sys, k1) = vendor_hello();
    let admin = &sys.layers.admin;
    System::init_layer(admin);
    let dir = sys.dir.join("keys");
    std::fs::create_dir(&dir).unwrap();
    let k2 = Publisher::new("acme", &dir);
    let k3 = Publisher::new("acme", &dir.join(".."));
    let os = |s: &str| std::ffi::OsString::from(s);
    let rotate = |layer: &std::path::Path, p: &Publisher| {
        in_layer(
            layer,
            &["publisher", "rotate"],
            &[
                &os("--id"),
                &os("acme"),
                &os("--force-by-owner"),
                &os("--pubkey"),
                p.pubkey.as_os_str(),
            ],
        )
    };
    in_layer(
        admin,
        &["publisher", "add"],
        &[
            &os("--id"),
            &os("acme"),
            &os("--pubkey"),
            k1.pubkey.as_os_str(),
        ],
    );
    rotate(admin, &k2);
    in_layer(
        admin,
        &["publisher", "threshold"],
        &[&os("--id"), &os("acme"), &os("--signatures"), &os("2")],
    );
    // The vendor's acme: K1 and a key of its own, K3; the entry signed by K1 and K3.
    rotate(&sys.layers.vendor, &k3);
    let (entry, _) = k1.sign_entry(&dir, "hello", &workspace_bin("hello"), "process", "1.0.1");
    stage(&sys, &entry, &signatures(&entry, &[&k1.key, &k3.key]));
    let e = assert_refused(&sys.verify("hello"), 1, Kind::ThresholdNotMet);
    assert_eq!(e.value.as_deref(), Some("1/2"));
    let record = admin.join("trust/publishers/acme.json");
    assert!(
        e.message.contains(record.to_str().unwrap()),
        "{}",
        e.message
    );
    assert!(
        e.message
            .contains(&format!("key {} is not a key of acme", k3.key.key_id())),
        "{}",
        e.message
    );
    // K1 and K2, both the admin's (and the vendor's), meet it.
    rotate(&sys.layers.vendor, &k2);
    stage(&sys, &entry, &signatures(&entry, &[&k1.key, &k2.key]));
    ok(sys.verify("hello"), "two of the admin's keys");
    // Pins: the admin's acme (K1 only, threshold 1) pins hello. A vendor record named acme with
    // K3 alone signs hello: refused, as a vendor publisher of another id is.
    std::fs::remove_dir_all(admin).unwrap();
    std::fs::remove_dir_all(&sys.layers.vendor).unwrap();
    System::init_layer(admin);
    in_layer(
        admin,
        &["publisher", "add"],
        &[
            &os("--id"),
            &os("acme"),
            &os("--pubkey"),
            k1.pubkey.as_os_str(),
            &os("--names"),
            &os("hello"),
        ],
    );
    System::publish(
        true,
        &sys.layers.vendor,
        &k3,
        "hello",
        &workspace_bin("hello"),
        "process",
        "1.0.2",
    );
    let e = assert_refused(&sys.verify("hello"), 1, Kind::ThresholdNotMet);
    assert!(
        e.message.contains(record.to_str().unwrap()),
        "{}",
        e.message
    );
    let zzz = Publisher {
        id: "zzz".into(),
        key: k3.key.clone(),
        pubkey: k3.pubkey.clone(),
    };
    std::fs::remove_dir_all(&sys.layers.vendor).unwrap();
    System::publish(
        true,
        &sys.layers.vendor,
        &zzz,
        "hello",
        &workspace_bin("hello"),
        "process",
        "1.0.2",
    );
    assert_refused(&sys.verify("hello"), 1, Kind::NameNotDelegated);
    // acme's own key signs its pinned name from the vendor layer.
    std::fs::remove_dir_all(&sys.layers.vendor).unwrap();
    System::publish(
        true,
        &sys.layers.vendor,
        &k1,
        "hello",
        &workspace_bin("hello"),
        "process",
        "1.0.2",
    );
    ok(sys.verify("hello"), "the admin's key signs the pinned name");
}

/// An admin layer reached through a symbolic link whose target is missing (a volume not mounted
/// yet) is not absent: its masks and deny list would silently stop applying. Every tool that reads
/// the system layers refuses (`root-unsafe`, naming the link) until it is there again.
#[test]
fn a_dangling_admin_layer_is_refused_not_absent() {
    let (sys, _) = vendor_hello();
    let volume = sys.dir.join("volume/etc-dot");
    std::fs::create_dir_all(volume.parent().unwrap()).unwrap();
    System::init_layer(&volume);
    std::os::unix::fs::symlink(&volume, &sys.layers.admin).unwrap();
    ok(
        sys.cmd("dot-register", &["mask", "hello"])
            .output()
            .unwrap(),
        "mask",
    );
    assert_refused(&sys.verify("hello"), 1, Kind::EntryMasked);
    let unmounted = sys.dir.join("volume/elsewhere");
    std::fs::rename(&volume, &unmounted).unwrap();
    let e = assert_refused(&sys.verify("hello"), 1, Kind::RootUnsafe);
    assert_eq!(e.path.as_deref(), Some(sys.layers.admin.to_str().unwrap()));
    assert!(e.message.contains("does not exist"), "{}", e.message);
    let state = sys.dir.join("state");
    let target = sys.dir.join("out");
    std::fs::create_dir(&target).unwrap();
    let out = common::tool("dot-launch")
        .arg("--sysroot")
        .arg(&sys.sysroot)
        .arg("--state")
        .arg(&state)
        .args(["hello", "--require-process-sandbox", "--target"])
        .arg(&target)
        .output()
        .unwrap();
    assert_refused(&out, 1, Kind::RootUnsafe);
    assert!(!target.join("hello.txt").exists(), "nothing ran");
    assert_refused(
        &sys.cmd("dot-register", &["list"]).output().unwrap(),
        1,
        Kind::RootUnsafe,
    );
    std::fs::rename(&unmounted, &volume).unwrap();
    assert_refused(&sys.verify("hello"), 1, Kind::EntryMasked);
}

/// The nearest directory above `dir` that exists: where a scratch tree is bound so that `dir`
/// can be made in a mount namespace of the test's own.
fn existing_ancestor(dir: &std::path::Path) -> std::path::PathBuf {
    dir.ancestors()
        .skip(1)
        .find(|a| a.is_dir())
        .unwrap()
        .to_path_buf()
}

/// `cmd` run in a mount namespace of its own (private: nothing reaches the host's) where `tree` is
/// bound on `at`.
fn with_bound(tree: &std::path::Path, at: &std::path::Path, cmd: &Command) -> Output {
    common::require_program("unshare", "util-linux");
    Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount --bind "$1" "$2" || exit 97; shift 2; exec "$@""#)
        .arg("sh")
        .arg(tree)
        .arg(at)
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .env_remove("DOT_FAILPOINT")
        .env_remove("DOT_ROOT")
        .output()
        .unwrap()
}

/// A scratch tree standing in for the built-in layer directory `layer` (the path below `at`,
/// bound there by [`with_bound`]): its root, and the directory that becomes `layer`.
fn stand_in(
    dir: &std::path::Path,
    layer: &str,
) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let layer = std::path::Path::new(layer);
    let at = existing_ancestor(layer);
    let tree = dir.join("tree");
    let inside = tree.join(layer.strip_prefix(&at).unwrap());
    std::fs::create_dir_all(inside.parent().unwrap()).unwrap();
    std::fs::set_permissions(&tree, std::fs::Permissions::from_mode(0o755)).unwrap();
    (tree, at, inside)
}

/// `--root` naming a system layer directory built into the tools — by its path, through a link,
/// or by another path to the same directory — is refused (`root-unsafe`) by `dot-launch` and
/// `dot-verify`: read as a root, the admin's masks and deny list would not apply to it. The same
/// directory where it is not a system layer is an ordinary root.
#[test]
fn a_system_layer_named_as_a_root_is_refused() {
    let dir = testkit::TempDir::new();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (tree, at, inside) = stand_in(dir.path(), proto::layers::VENDOR_DIR);
    let acme = Publisher::new("acme", dir.path());
    System::publish(
        true,
        &inside,
        &acme,
        "hello",
        &workspace_bin("hello"),
        "process",
        "1.0.0",
    );
    let verify = |root: &std::path::Path| {
        let mut c = common::tool("dot-verify");
        c.args(["entry", "hello", "--root"]).arg(root);
        c
    };
    // Not a system layer here: an ordinary root.
    ok(verify(&inside).output().unwrap(), "dot-verify entry --root");
    let link = dir.join("link");
    std::os::unix::fs::symlink(proto::layers::VENDOR_DIR, &link).unwrap();
    for named in [
        std::path::Path::new(proto::layers::VENDOR_DIR),
        &link,
        &inside,
    ] {
        let e = assert_refused(&with_bound(&tree, &at, &verify(named)), 1, Kind::RootUnsafe);
        assert!(e.message.contains("system's vendor layer"), "{}", e.message);
    }
    let state = dir.join("state");
    let target = dir.join("out");
    std::fs::create_dir(&target).unwrap();
    let mut launch = common::tool("dot-launch");
    launch
        .args(["--root", proto::layers::VENDOR_DIR, "--state"])
        .arg(&state)
        .args(["hello", "--require-process-sandbox", "--target"])
        .arg(&target);
    assert_refused(&with_bound(&tree, &at, &launch), 1, Kind::RootUnsafe);
    assert!(!state.exists(), "no state was made");
    let mut doctor = common::tool("dot-verify");
    doctor.args(["doctor", "--root", proto::layers::VENDOR_DIR]);
    assert_refused(&with_bound(&tree, &at, &doctor), 1, Kind::RootUnsafe);
}

/// A launch with `--root` never commits into a system layer: a target inside the admin layer
/// built into the tools (its trust store, say) is `target-invalid`, as it is for a launch from
/// the system layers.
#[test]
fn a_root_launch_commits_nothing_into_a_system_layer() {
    let env = common::Env::new();
    let (tree, at, inside) = stand_in(env.dir.path(), proto::layers::ADMIN_DIR);
    System::init_layer(&inside);
    let publishers = std::path::Path::new(proto::layers::ADMIN_DIR).join("trust/publishers");
    let mut launch = common::tool("dot-launch");
    launch
        .arg("--root")
        .arg(&env.root)
        .args(["hello", "--allow-audit-plugin", "--target"])
        .arg(&publishers);
    let e = assert_refused(&with_bound(&tree, &at, &launch), 2, Kind::TargetInvalid);
    assert!(
        e.message.contains(proto::layers::ADMIN_DIR),
        "{}",
        e.message
    );
    assert_eq!(
        common::names(&inside.join("trust/publishers")),
        Vec::<String>::new(),
        "nothing was committed into the layer"
    );
    assert!(env.runs().is_empty());
}
