//! Concurrency: two launches of one plugin at once; `dot-register add --replace` while a launch is
//! between verification and spawn; `dot-discard` in a loop while launches run; two registry
//! writers on one root.

#![allow(clippy::unwrap_used)]

mod common;

use common::{names, ok, result, tool, Env};
use discard::{Report as DiscardReport, State};
use proto::result::RunResult;
use proto::{Containment, Sha256};
use register::report::ListItem;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use testkit::{workspace_bin, KeyPair, TempDir};

/// Waits (bounded) for `path` to exist.
fn wait_for(path: &Path) {
    for _ in 0..30_000 {
        if path.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("{} never appeared", path.display());
}

/// Starts a launch that stops after verification (`DOT_PAUSE_AFTER_VERIFY`) and waits until it
/// is there; `go(pause)` lets it continue.
fn paused(mut cmd: std::process::Command, pause: &Path) -> Child {
    let child = cmd
        .env("DOT_PAUSE_AFTER_VERIFY", pause)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&PathBuf::from(format!("{}.ready", pause.display())));
    child
}

fn go(pause: &Path) {
    std::fs::write(format!("{}.go", pause.display()), b"").unwrap();
}

#[test]
fn two_launches_of_one_plugin_at_once_both_commit() {
    let env = Env::new();
    let (p1, p2) = (env.dir.join("p1"), env.dir.join("p2"));
    let a = paused(env.launch("fixture", &["--allow-audit-plugin"]), &p1);
    let b = paused(env.launch("fixture", &["--allow-audit-plugin"]), &p2);
    go(&p1);
    go(&p2);
    let (ra, rb) = (
        result(&a.wait_with_output().unwrap()),
        result(&b.wait_with_output().unwrap()),
    );
    assert_ne!(ra.txid, rb.txid);
    assert_eq!(env.target_files(), ["result.txt"], "no temp file left");
    assert_eq!(
        std::fs::read(env.target.join("result.txt")).unwrap(),
        b"ok\n"
    );
    assert!(env.runs().is_empty());
}

/// A signed (non-development) root with publisher `acme`.
struct Signed {
    dir: TempDir,
    root: PathBuf,
    target: PathBuf,
    key: KeyPair,
}

impl Signed {
    fn new() -> Signed {
        let dir = TempDir::new();
        let root = dir.join("root");
        let target = dir.join("target");
        std::fs::create_dir(&target).unwrap();
        ok(
            tool("dot-register")
                .args(["init", "--root"])
                .arg(&root)
                .output()
                .unwrap(),
            "init",
        );
        let key = KeyPair::generate();
        let pk = key.pk_path(dir.path());
        ok(
            tool("dot-register")
                .args(["publisher", "add", "--root"])
                .arg(&root)
                .args(["--id", "acme", "--pubkey"])
                .arg(&pk)
                .output()
                .unwrap(),
            "publisher add",
        );
        Signed {
            dir,
            root,
            target,
            key,
        }
    }

    /// `dot-register add` of `exe` as `plug` at `version`, signed by acme; returns its digest.
    fn add(&self, exe: &Path, version: &str, replace: bool) -> Sha256 {
        let mut entry = testkit::entry_for("plug", exe, Containment::Audit, Some("acme"));
        entry.version = semver::Version::parse(version).unwrap();
        let bytes = entry.to_bytes();
        let path = self.dir.join(format!("plug-{version}.json"));
        std::fs::write(&path, &bytes).unwrap();
        let sig = self.dir.join(format!("plug-{version}.json.minisig"));
        std::fs::write(&sig, self.key.sign(&bytes, true)).unwrap();
        let mut c = tool("dot-register");
        c.args(["add", "--root"])
            .arg(&self.root)
            .arg("--entry")
            .arg(&path)
            .arg("--signature")
            .arg(&sig)
            .arg("--exe")
            .arg(exe);
        if replace {
            c.arg("--replace");
        }
        ok(c.output().unwrap(), "dot-register add");
        entry.sha256
    }

    fn launch(&self) -> std::process::Command {
        common::launch_into(&self.root, "plug", &self.target, &["--allow-audit-plugin"])
    }
}

#[test]
fn register_replace_during_a_launch_runs_the_verified_bytes_and_the_next_launch_the_new() {
    let s = Signed::new();
    let old = s.add(&workspace_bin("fixture-plugin"), "1.0.0", false);
    let pause = s.dir.join("pause");
    let running = paused(s.launch(), &pause);
    let new = s.add(&workspace_bin("hello"), "1.1.0", true);
    assert_ne!(old, new);
    go(&pause);
    let first: RunResult = result(&running.wait_with_output().unwrap());
    assert_eq!(first.sha256, old, "the launch ran the bytes it verified");
    assert_eq!(first.version, "1.0.0");
    assert_eq!(names(&s.target), ["result.txt"], "the fixture's output");
    let second = result(&s.launch().output().unwrap());
    assert_eq!(second.sha256, new, "the next launch runs the new bytes");
    assert_eq!(second.version, "1.1.0");
    assert_eq!(names(&s.target), ["hello.txt", "result.txt"]);
}

#[test]
fn discard_in_a_loop_never_deletes_a_live_run() {
    let env = Env::new();
    let stop = AtomicBool::new(false);
    let discarded = std::sync::Mutex::new(Vec::new());
    let committed = std::sync::Mutex::new(Vec::new());
    let launches = 40;
    let passes = std::thread::scope(|sc| {
        let discarder = sc.spawn(|| {
            let mut passes = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let out = common::discard(&env.root);
                let code = out.status.code();
                assert!(matches!(code, Some(0) | Some(4)), "discard: {out:?}");
                let report: DiscardReport = testkit::decode_json(&out.stdout);
                // A run directory caught empty between its mkdir and its lock may be removed (its
                // launcher starts over under a new TXID): no launch may report a discarded TXID.
                discarded.lock().unwrap().extend(report.discarded);
                for r in &report.retained {
                    assert_eq!(r.state, State::Live, "unexpected retained run: {r:?}");
                }
                passes += 1;
            }
            passes
        });
        let launchers: Vec<_> = (0..2)
            .map(|stream| {
                let env = &env;
                let committed = &committed;
                sc.spawn(move || {
                    for i in 0..launches / 2 {
                        let mode = if (stream + i) % 2 == 0 {
                            "ok"
                        } else {
                            "two-outputs"
                        };
                        let out = env.fixture(mode, &[], &[]);
                        committed.lock().unwrap().push(result(&out).txid);
                    }
                })
            })
            .collect();
        for l in launchers {
            l.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        discarder.join().unwrap()
    });
    assert!(passes > 0, "discard ran during the launches");
    let committed = committed.into_inner().unwrap();
    assert_eq!(committed.len(), launches);
    for txid in discarded.into_inner().unwrap() {
        assert!(
            !committed.contains(&txid),
            "discard deleted the live run {txid}"
        );
    }
    assert!(env.runs().is_empty());
    assert_eq!(env.target_files(), ["a.txt", "b.txt", "result.txt"]);
}

#[test]
fn two_registry_writers_never_corrupt_the_root() {
    let env = Env::new();
    let exes = [workspace_bin("fixture-plugin"), workspace_bin("hello")];
    let rounds = 12;
    std::thread::scope(|sc| {
        for w in 0..2 {
            let (env, exes) = (&env, &exes);
            sc.spawn(move || {
                for i in 0..rounds {
                    let name = format!("p{}", i % 3);
                    let exe = &exes[(w + i) % 2];
                    env.register_with(
                        &name,
                        exe,
                        "audit",
                        &["--input", "name:string:optional", "--replace"],
                    );
                }
            });
        }
    });
    let out = ok(
        tool("dot-register")
            .args(["list", "--root"])
            .arg(&env.root)
            .output()
            .unwrap(),
        "list",
    );
    let items: Vec<ListItem> = testkit::decode_json(&out.stdout);
    let listed: Vec<&str> = items.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(listed, ["fixture", "hello", "p0", "p1", "p2"]);
    for item in &items {
        assert!(item.valid, "{item:?}");
    }
    // Nothing but entries in plugins.d (no temp file left by a writer).
    for n in names(&env.root.join("plugins.d")) {
        assert!(n.ends_with(".json"), "stray file in plugins.d: {n}");
    }
    for p in ["p0", "p1", "p2"] {
        let out = env.launch(p, &["--allow-audit-plugin"]).output().unwrap();
        result(&out);
    }
}
