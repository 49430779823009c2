//! A user who is not root (`nobody`, through `setpriv`) launches from a registry that is root's
//! and not writable by them (directories 0755, entries 0644, store copies 0555), with a private
//! state of their own, at both containment levels; every attempt of theirs to change the
//! registry, a store copy or another user's state fails; `dot-sandbox probe --prove` raises no
//! alarm for them (nor for root).
//!
//! The suite runs as root: it builds the registry as root, then runs the tools as uid 65534.
//! Everything `nobody` needs is in a scratch directory it can traverse (mode 0755), the
//! binaries included (copied there: the checkout may lie under a directory only root can enter).

#![allow(clippy::unwrap_used)]

mod common;

use common::{ok, result};
use proto::{Containment, Kind};
use sandbox::ProveReport;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use testkit::{tree_snapshot, TempDir};

use testkit::nobody::NOBODY;

/// The tools `nobody` runs, copied beside each other (dot-launch finds dot-sandbox, and
/// dot-sandbox finds dot-canary, next to itself).
const TOOLS: [&str; 6] = [
    "dot-launch",
    "dot-sandbox",
    "dot-canary",
    "dot-register",
    "dot-discard",
    "dot-journal-fmt",
];

struct System {
    dir: TempDir,
    bin: PathBuf,
    /// root's registry: `fx` (audit) and `fxp` (process), both the fixture plugin.
    registry: PathBuf,
    /// nobody's state and target.
    state: PathBuf,
    target: PathBuf,
}

fn mode(p: &Path, m: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(m)).unwrap();
}

fn mkdir_owned(p: &Path, uid: u32, m: u32) {
    fs::create_dir(p).unwrap();
    std::os::unix::fs::chown(p, Some(uid), Some(uid)).unwrap();
    mode(p, m);
}

/// Every directory 0755 and every file 0644 under `dir`, except the store copies (0555 already).
fn open_for_reading(dir: &Path) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let m = fs::symlink_metadata(&p).unwrap();
        if m.is_dir() {
            mode(&p, 0o755);
            open_for_reading(&p);
        } else if m.mode() & 0o111 == 0 {
            mode(&p, 0o644);
        }
    }
}

impl System {
    fn new() -> System {
        let dir = TempDir::new();
        mode(dir.path(), 0o755);
        let mut tools = TOOLS.to_vec();
        tools.push("fixture-plugin");
        let bin = testkit::nobody::copy_tools(dir.path(), &tools);
        let registry = dir.join("registry");
        let sys = System {
            bin,
            registry,
            state: dir.join("home/state"),
            target: dir.join("target"),
            dir,
        };
        ok(sys.as_root("dot-register", &["init", "--dev"]), "init");
        for (name, containment) in [("fx", "audit"), ("fxp", "process")] {
            let out = sys
                .tool("dot-register")
                .args(["dev", "--root"])
                .arg(&sys.registry)
                .args(["--name", name, "--exe"])
                .arg(sys.bin.join("fixture-plugin"))
                .args(["--containment", containment])
                .args(["--input", "mode:string:optional"])
                .output()
                .unwrap();
            ok(out, "dot-register dev");
        }
        fs::remove_dir(sys.registry.join("txn")).unwrap();
        fs::remove_file(sys.registry.join("audit.log")).unwrap();
        mode(&sys.registry, 0o755);
        open_for_reading(&sys.registry);
        mkdir_owned(&sys.dir.join("home"), NOBODY, 0o700);
        mkdir_owned(&sys.target, NOBODY, 0o755);
        sys
    }

    /// The copied tool `name`, as whoever runs the test (root).
    fn tool(&self, name: &str) -> Command {
        let mut c = Command::new(self.bin.join(name));
        c.env_clear();
        c
    }

    /// `TOOL ARGS… --root REGISTRY` as root.
    fn as_root(&self, name: &str, args: &[&str]) -> Output {
        self.tool(name)
            .args(args)
            .arg("--root")
            .arg(&self.registry)
            .output()
            .unwrap()
    }

    /// The copied tool `name`, run as nobody.
    fn nobody(&self, name: &str) -> Command {
        self.nobody_program(&self.bin.join(name))
    }

    /// `program`, run as nobody (`testkit::nobody::command`).
    fn nobody_program(&self, program: &Path) -> Command {
        testkit::nobody::command(program)
    }

    /// `dot-launch --root REGISTRY --state STATE NAME --target TARGET` as nobody, with the
    /// consent `NAME`'s containment needs and the fixture's `mode`.
    fn launch(&self, name: &str, state: &Path, fixture_mode: &str) -> Command {
        let consent = match name {
            "fxp" => "--require-process-sandbox",
            _ => "--allow-audit-plugin",
        };
        let mut c = self.nobody("dot-launch");
        c.arg("--root")
            .arg(&self.registry)
            .arg("--state")
            .arg(state)
            .arg(name)
            .arg("--target")
            .arg(&self.target)
            .args([consent, "--input", &format!("mode={fixture_mode}")]);
        c
    }

    /// `dot-register ARGS… --root REGISTRY` as nobody.
    fn register(&self, args: &[&str]) -> Output {
        self.nobody("dot-register")
            .args(args)
            .arg("--root")
            .arg(&self.registry)
            .output()
            .unwrap()
    }

    fn store_copy(&self) -> PathBuf {
        let store = self.registry.join("store/sha256");
        let copies = common::names(&store);
        assert_eq!(copies.len(), 1, "{copies:?}");
        store.join(&copies[0])
    }
}

fn owner_and_mode(p: &Path) -> (u32, u32) {
    let m = fs::symlink_metadata(p).unwrap();
    (m.uid(), m.mode() & 0o7777)
}

#[test]
fn nobody_launches_from_a_root_owned_registry_at_both_levels() {
    let sys = System::new();
    assert_eq!(owner_and_mode(&sys.registry), (0, 0o755));
    assert_eq!(
        owner_and_mode(&sys.registry.join("plugins.d/fx.json")),
        (0, 0o644)
    );
    assert_eq!(owner_and_mode(&sys.store_copy()), (0, 0o555));
    let before = tree_snapshot(&sys.registry);
    for (name, containment) in [("fx", Containment::Audit), ("fxp", Containment::Process)] {
        let r = result(
            &sys.launch(name, &sys.state, "two-outputs")
                .output()
                .unwrap(),
        );
        assert_eq!(r.containment, containment);
        assert_eq!(r.outputs.len(), 2, "{r:?}");
        for out in ["a.txt", "b.txt"] {
            assert_eq!(owner_and_mode(&sys.target.join(out)).0, NOBODY);
        }
    }
    // nobody's state was made on first use, private; the registry is as root left it.
    for dir in [sys.state.clone(), sys.state.join("txn")] {
        assert_eq!(owner_and_mode(&dir), (NOBODY, 0o700), "{}", dir.display());
    }
    assert_eq!(owner_and_mode(&sys.state.join("audit.log")).0, NOBODY);
    assert_eq!(tree_snapshot(&sys.registry), before);
}

#[test]
fn nobody_cannot_change_the_registry() {
    let sys = System::new();
    let before = tree_snapshot(&sys.registry);
    let exe = sys.bin.join("fixture-plugin");
    let exe = exe.to_str().unwrap();
    let dev = |name: &str, extra: &[&str]| {
        let mut args = vec![
            "dev",
            "--name",
            name,
            "--exe",
            exe,
            "--containment",
            "audit",
        ];
        args.extend(extra);
        sys.register(&args)
    };
    for (what, out) in [
        ("dev --replace", dev("fx", &["--replace"])),
        ("dev of a new name", dev("mine", &[])),
        ("remove", sys.register(&["remove", "--name", "fx"])),
        (
            "add",
            sys.register(&[
                "add",
                "--entry",
                "/nonexistent/e.json",
                "--signature",
                "/nonexistent/e.json.minisig",
                "--exe",
                exe,
            ]),
        ),
        (
            "publisher add",
            sys.register(&[
                "publisher",
                "add",
                "--id",
                "acme",
                "--pubkey",
                "/nonexistent/k.pub",
            ]),
        ),
        (
            "publisher revoke",
            sys.register(&["publisher", "revoke", "--id", "acme", "--reason", "x"]),
        ),
        (
            "deny add",
            sys.register(&["deny", "add", "--sha256", &"0".repeat(64), "--reason", "x"]),
        ),
        (
            "policy set",
            sys.register(&["policy", "set", "--max-signature-age-secs", "1"]),
        ),
        ("init", sys.register(&["init"])),
    ] {
        let e = testkit::assert_refused(&out, 1, Kind::RegistryReadOnly);
        assert_eq!(
            e.path.as_deref(),
            Some(sys.registry.to_str().unwrap()),
            "{what}"
        );
    }
    // Reading it is fine.
    ok(sys.register(&["list"]), "list as nobody");

    // The files themselves: each attempt, made by nobody, fails with its errno.
    let copy = sys.store_copy();
    let entry = sys.registry.join("plugins.d/fx.json");
    let attempts = as_nobody_errnos(
        &sys,
        &[
            ("write the store copy", "os.open(COPY, os.O_WRONLY)"),
            ("truncate the store copy", "os.truncate(COPY, 0)"),
            ("unlink the store copy", "os.unlink(COPY)"),
            ("rename the store copy", "os.rename(COPY, COPY + '.x')"),
            ("chmod the store copy", "os.chmod(COPY, 0o777)"),
            (
                "write the entry",
                "os.open(ENTRY, os.O_WRONLY | os.O_APPEND)",
            ),
            ("unlink the entry", "os.unlink(ENTRY)"),
            ("chmod the entry", "os.chmod(ENTRY, 0o666)"),
            (
                "create an entry",
                "os.open(REG + '/plugins.d/new.json', os.O_WRONLY | os.O_CREAT, 0o644)",
            ),
            (
                "create a store copy",
                "os.open(REG + '/store/sha256/new', os.O_WRONLY | os.O_CREAT, 0o555)",
            ),
            ("make txn/ in the registry", "os.mkdir(REG + '/txn')"),
            ("chmod the registry", "os.chmod(REG, 0o777)"),
        ],
        &[("COPY", &copy), ("ENTRY", &entry), ("REG", &sys.registry)],
    );
    for (what, errno) in attempts {
        let expected = if what.starts_with("chmod") {
            "EPERM"
        } else {
            "EACCES"
        };
        assert_eq!(errno, expected, "{what}");
    }
    assert_eq!(tree_snapshot(&sys.registry), before, "the registry changed");
}

/// `testkit::nobody::errnos` (the suite's `System` only names the attempts).
fn as_nobody_errnos(
    _sys: &System,
    attempts: &[(&str, &str)],
    paths: &[(&str, &Path)],
) -> Vec<(String, String)> {
    testkit::nobody::errnos(attempts, paths)
}

#[test]
fn nobody_cannot_use_or_touch_another_users_state() {
    let sys = System::new();
    // root's own state apart from the registry, with a PREPARED run in it.
    let root_state = sys.dir.join("root-state");
    let root_target = sys.dir.join("root-target");
    fs::create_dir(&root_target).unwrap();
    fs::write(root_target.join("a.txt"), b"old a\n").unwrap();
    let killed = sys
        .tool("dot-launch")
        .arg("--root")
        .arg(&sys.registry)
        .arg("--state")
        .arg(&root_state)
        .args(["fx", "--target"])
        .arg(&root_target)
        .args(["--allow-audit-plugin", "--input", "mode=two-outputs"])
        .env("DOT_FAILPOINT", "after-prepared")
        .output()
        .unwrap();
    assert_eq!(killed.status.signal(), Some(9), "{killed:?}");
    assert_eq!(owner_and_mode(&root_state), (0, 0o700));
    let before = tree_snapshot(sys.dir.path());

    // Launching with root's state: refused on the state directory itself.
    let e = testkit::assert_refused(
        &sys.launch("fx", &root_state, "two-outputs")
            .output()
            .unwrap(),
        1,
        Kind::RootUnsafe,
    );
    assert_eq!(e.path.as_deref(), Some(root_state.to_str().unwrap()));
    assert!(e.message.contains("state directory"), "{}", e.message);
    // Recovering or discarding root's runs: refused on txn/.
    let as_nobody = |name: &str, args: &[&str]| {
        sys.nobody(name)
            .args(args)
            .arg("--root")
            .arg(&sys.registry)
            .arg("--state")
            .arg(&root_state)
            .output()
            .unwrap()
    };
    for out in [
        as_nobody("dot-launch", &["recover"]),
        as_nobody("dot-discard", &[]),
    ] {
        let e = testkit::assert_refused(&out, 1, Kind::UnsafeTxn);
        assert_eq!(
            e.path.as_deref(),
            Some(root_state.join("txn").to_str().unwrap())
        );
    }
    assert_eq!(tree_snapshot(sys.dir.path()), before, "something changed");

    // A state of root's that nobody can read is refused for its owner just the same.
    mode(&root_state, 0o755);
    mode(&root_state.join("txn"), 0o755);
    testkit::assert_refused(
        &sys.launch("fx", &root_state, "two-outputs")
            .output()
            .unwrap(),
        1,
        Kind::RootUnsafe,
    );
    let e = testkit::assert_refused(&as_nobody("dot-discard", &[]), 1, Kind::UnsafeTxn);
    assert!(e.message.contains("owned by uid 0"), "{}", e.message);
    mode(&root_state, 0o700);
    mode(&root_state.join("txn"), 0o700);

    // The run is still root's to recover.
    let out = sys
        .tool("dot-launch")
        .arg("recover")
        .arg("--root")
        .arg(&sys.registry)
        .arg("--state")
        .arg(&root_state)
        .output()
        .unwrap();
    let rep: launch::recover::RecoverReport = testkit::assert_ok(&out);
    assert_eq!(rep.recovered.len(), 1, "{rep:?}");
}

#[test]
fn a_single_root_owned_by_root_is_not_a_state_for_nobody() {
    // A single directory holds registry and state: nobody may read it but not run from it.
    let sys = System::new();
    fs::create_dir(sys.registry.join("txn")).unwrap();
    mode(&sys.registry.join("txn"), 0o700);
    let mut c = sys.nobody("dot-launch");
    c.arg("--root")
        .arg(&sys.registry)
        .args(["fx", "--target"])
        .arg(&sys.target)
        .args(["--allow-audit-plugin"]);
    let e = testkit::assert_refused(&c.output().unwrap(), 1, Kind::RootUnsafe);
    assert!(e.message.contains("owned by uid 0"), "{}", e.message);
    assert!(!sys.registry.join("audit.log").exists());
}

#[test]
fn probe_prove_raises_no_alarm_for_nobody_or_root() {
    let sys = System::new();
    for (who, out) in [
        (
            "nobody",
            sys.nobody("dot-sandbox")
                .args(["probe", "--prove"])
                .output()
                .unwrap(),
        ),
        (
            "root",
            sys.tool("dot-sandbox")
                .args(["probe", "--prove"])
                .output()
                .unwrap(),
        ),
    ] {
        let report: ProveReport = testkit::assert_ok(&out);
        let alarms: Vec<_> = report.probes.iter().filter(|p| !p.ok).collect();
        assert!(alarms.is_empty(), "{who}: {alarms:?}");
        assert!(report.ok, "{who}");
        assert!(!report.probes.is_empty());
    }
}
