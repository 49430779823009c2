//! The bytes executed are the bytes verified: while launches run at both containments, another
//! process keeps rewriting the pinned copy in place (same size, other bytes). Every launch must
//! either run the pinned bytes or refuse; none may run the rewritten ones.

mod common;

use common::{tool, Env};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use testkit::workspace_bin;

const PINNED: &[u8] = b"hello, ";
const FORGED: &[u8] = b"pwned, ";
const LAUNCHES: usize = 300;

/// `hello` (audit) and `hello-p` (process, registered here), each with its consent flag.
fn hello_at_both_levels(env: &Env) -> [(&'static str, &'static str); 2] {
    env.register("hello-p", &workspace_bin("hello"), "process", &["name"]);
    [
        ("hello", "--allow-audit-plugin"),
        ("hello-p", "--require-process-sandbox"),
    ]
}

/// Where `needle` occurs in `hay`: exactly once, or the test cannot tell the two programs apart.
fn only_offset(hay: &[u8], needle: &[u8]) -> u64 {
    let hits: Vec<usize> = hay
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(hits.len(), 1, "{needle:?} occurs {} times", hits.len());
    hits[0] as u64
}

/// How the rewriting process holds the pinned copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Writer {
    /// Opens it for every rewrite, as an attacker racing the launcher would: each launch meets
    /// either a file it can lease (no writer at that moment; openers then wait until the plugin is
    /// executed) or a writer (no lease: a sealed copy is made instead).
    Reopening,
    /// Keeps one descriptor open for writing: no lease can ever be taken, every launch seals a copy
    /// (on the previous design every exec failed with ETXTBSY).
    HoldingOpen,
}

#[test]
fn rewriting_the_pinned_copy_in_place_never_runs_unverified_bytes() {
    race(Writer::Reopening);
}

#[test]
fn a_writer_holding_the_pinned_copy_open_never_gets_its_bytes_run() {
    race(Writer::HoldingOpen);
}

fn race(how: Writer) {
    let env = Env::new();
    let hello = std::fs::read(workspace_bin("hello")).expect("hello");
    let levels = hello_at_both_levels(&env);
    let at = only_offset(&hello, PINNED);
    let store = env
        .root
        .join("store/sha256")
        .join(Sha256::of(&hello).to_hex());
    assert!(store.is_file(), "{} is the pinned copy", store.display());

    let stop = Arc::new(AtomicBool::new(false));
    let flips = Arc::new(AtomicU64::new(0));
    let writer = {
        let (stop, flips, store) = (Arc::clone(&stop), Arc::clone(&flips), store.clone());
        let open = move || std::fs::OpenOptions::new().write(true).open(&store);
        std::thread::spawn(move || {
            let held = (how == Writer::HoldingOpen).then(|| open().expect("open for writing"));
            while !stop.load(Ordering::SeqCst) {
                for bytes in [FORGED, PINNED] {
                    let f = match &held {
                        Some(f) => f.try_clone(),
                        None => open(),
                    };
                    if let Ok(f) = f {
                        if f.write_all_at(bytes, at).is_ok() {
                            flips.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
            }
        })
    };

    let (mut ran, mut refused) = ([0usize; 2], 0usize);
    let (mut forged, mut unexpected) = (Vec::new(), Vec::new());
    for i in 0..LAUNCHES {
        let slot = i % 2;
        let (name, consent) = levels[slot];
        let out = env
            .launch(name, &[consent, "--input", &format!("name={i}")])
            .output()
            .expect("dot-launch");
        match out.status.code() {
            Some(0) => {
                let result = common::result(&out);
                assert_eq!(result.sha256, Sha256::of(&hello), "launch {i}");
                let written = std::fs::read(env.target.join("hello.txt")).expect("hello.txt");
                if written == format!("hello, {i}\n").as_bytes() {
                    ran[slot] += 1;
                } else {
                    forged.push(format!(
                        "{name} #{i}: {}",
                        String::from_utf8_lossy(&written)
                    ));
                }
            }
            Some(1) if testkit::decode_error(&out.stderr).error == Kind::StoreTampered => {
                refused += 1
            }
            other => unexpected.push(format!(
                "{name} #{i} exited {other:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            )),
        }
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().expect("writer");
    std::fs::write(&store, &hello).expect("restore");

    let flips = flips.load(Ordering::SeqCst);
    let summary = format!(
        "{how:?}: audit ran {}, process ran {}, refused {refused}, forged {}, unexpected {}, rewrites {flips}",
        ran[0],
        ran[1],
        forged.len(),
        unexpected.len()
    );
    eprintln!("{summary}");
    assert!(forged.is_empty(), "{summary}: ran other bytes: {forged:#?}");
    assert!(unexpected.is_empty(), "{summary}: {unexpected:#?}");
    assert!(
        flips >= LAUNCHES as u64,
        "{summary}: too few rewrites raced the launches"
    );
    assert!(
        ran[0] > 0 && ran[1] > 0,
        "{summary}: no launch got through at some level"
    );
    // With the pinned bytes back, both entries verify and run again.
    let out = tool("dot-verify")
        .args(["entry", "--root"])
        .arg(&env.root)
        .arg("hello-p")
        .output()
        .expect("dot-verify");
    common::ok(out, "dot-verify entry");
}

/// A host that forbids executable memfds (`vm.memfd_noexec = 2`, set here in a pid namespace of the
/// test's own, where the setting is private) gets a refusal, never an exec of the store file.
#[test]
fn without_executable_memfds_every_launch_refuses() {
    common::require_program("unshare", "util-linux");
    let env = Env::new();
    // A writer holding the pinned copy open rules out a lease: the launch must seal a copy.
    let hello = std::fs::read(workspace_bin("hello")).expect("hello");
    let store = env
        .root
        .join("store/sha256")
        .join(Sha256::of(&hello).to_hex());
    let _writer = std::fs::OpenOptions::new()
        .write(true)
        .open(&store)
        .expect("open for writing");
    let launch = env.launch("hello", &["--allow-audit-plugin"]);
    let script = "echo 2 > /proc/sys/vm/memfd_noexec && exec \"$0\" \"$@\"";
    let out = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "sh", "-c", script])
        .arg(launch.get_program())
        .args(launch.get_args())
        .output()
        .expect("unshare");
    let err = common::failure(&out, 1);
    testkit::assert_kind!(err, Kind::ExecSealUnavailable, "{}", err.message);
    assert!(err.message.contains("vm.memfd_noexec"), "{}", err.message);
    assert_eq!(env.runs(), Vec::<String>::new(), "nothing was started");
    assert_eq!(env.target_files(), Vec::<String>::new());
}

/// A lease that might be broken by the time of the exec is never relied on: past half the
/// kernel's lease break time (pretended here to be 0 ms) the launcher seals a private copy first,
/// and the launch runs from that copy.
#[test]
fn an_old_lease_is_exchanged_for_a_sealed_copy_before_the_spawn() {
    let env = Env::new();
    for (name, consent) in hello_at_both_levels(&env) {
        let out = env
            .launch(name, &[consent, "--input", "name=late"])
            .env("DOT_LEASE_BREAK_MS", "0")
            .output()
            .expect("dot-launch");
        common::result(&out);
        assert_eq!(
            std::fs::read(env.target.join("hello.txt")).expect("hello.txt"),
            b"hello, late\n"
        );
    }
}

/// If the plugin was executed only after the lease could have been broken, the run fails closed
/// (`exec-unconfirmed`, exit 5) and nothing is committed.
#[test]
fn an_exec_after_the_lease_break_time_fails_closed() {
    let env = Env::new();
    for (name, consent) in hello_at_both_levels(&env) {
        let out = env
            .launch(name, &[consent])
            .env("DOT_LEASE_BREAK_MS", "400")
            .env("DOT_SLEEP_BEFORE_SPAWN_MS", "600")
            .output()
            .expect("dot-launch");
        let err = common::failure(&out, 5);
        testkit::assert_kind!(err, Kind::ExecUnconfirmed, "{name}: {}", err.message);
        assert_eq!(env.target_files(), Vec::<String>::new(), "{name}");
        assert_eq!(env.runs(), Vec::<String>::new(), "{name}");
    }
}
use proto::{Kind, Sha256};

/// A `process` run's runner is started before the digest of its leased copy is confirmed, and
/// waits at its gate: a copy with other bytes (the same size) is still refused as `store-tampered`,
/// also when those bytes break the ELF rule (checked before the digest), and the runner is gone
/// before the launch ends, having run nothing.
#[test]
fn a_runner_started_before_the_digest_runs_no_other_bytes() {
    let env = Env::new();
    env.register("hello-p", &workspace_bin("hello"), "process", &["name"]);
    let store = env.root.join("store/sha256");
    let copies: Vec<_> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let pinned: Vec<Vec<u8>> = copies.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let rewrite = |edit: &dyn Fn(&mut Vec<u8>)| {
        use std::os::unix::fs::PermissionsExt;
        for (p, bytes) in copies.iter().zip(&pinned) {
            let mut bytes = bytes.clone();
            edit(&mut bytes);
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700)).unwrap();
            std::fs::write(p, &bytes).unwrap();
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
    };
    type Edit<'a> = (&'a str, &'a dyn Fn(&mut Vec<u8>));
    let edits: [Edit; 2] = [
        ("its last byte", &|b: &mut Vec<u8>| {
            let last = b.len() - 1;
            b[last] ^= 0xff;
        }),
        ("its ELF magic", &|b: &mut Vec<u8>| {
            b[1..4].copy_from_slice(b"XXX")
        }),
    ];
    for (what, edit) in edits {
        rewrite(edit);
        let out = env
            .launch("hello-p", &["--require-process-sandbox"])
            .output()
            .unwrap();
        let err = common::failure(&out, 1);
        testkit::assert_kind!(err, Kind::StoreTampered, "{what}: {}", err.message);
        assert!(
            err.message.contains("its sha256 is"),
            "{what}: {}",
            err.message
        );
        assert_eq!(env.target_files(), Vec::<String>::new(), "{what}");
        assert_eq!(env.runs(), Vec::<String>::new(), "{what}");
        assert_eq!(
            common::processes_under(&env.root),
            Vec::<String>::new(),
            "{what}"
        );
    }
    rewrite(&|_| {});
    commits(&env, "hello-p");
}

/// A `process` runner starts before the target is checked (docs/design.md, step 3b): seen alive
/// at the launch's pause just after its start, then a target the checks refuse ends it before its
/// gate — the refusal is the target's, nothing was created, no process is left, and the next
/// launch to a good target runs.
#[test]
fn a_runner_started_before_the_targets_checks_is_ended_when_they_refuse() {
    let env = Env::new();
    env.register("hello-p", &workspace_bin("hello"), "process", &["name"]);
    let file = env.dir.join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let refused = [
        ("inside the root", env.root.join("store")),
        ("a file", file),
        ("missing", env.dir.join("no-such-dir")),
    ];
    for (i, (what, target)) in refused.into_iter().enumerate() {
        let pause = env.dir.join(format!("pause-{i}"));
        let child = common::spawn_paused(
            common::launch_into(
                &env.root,
                "hello-p",
                &target,
                &["--require-process-sandbox"],
            ),
            "after-runner-start",
            &pause,
        );
        assert_eq!(
            runners_of(child.id()),
            1,
            "{what}: the runner is started before the target is checked"
        );
        common::go_on(&pause);
        let out = child.wait_with_output().unwrap();
        let err = common::failure(&out, 2);
        testkit::assert_kind!(err, Kind::TargetInvalid, "{what}: {}", err.message);
        assert_eq!(env.runs(), Vec::<String>::new(), "{what}");
        assert_eq!(
            common::processes_under(&env.root),
            Vec::<String>::new(),
            "{what}"
        );
    }
    commits(&env, "hello-p");
}

/// A launch of the `process` entry `name` commits.
fn commits(env: &Env, name: &str) {
    let out = env
        .launch(name, &["--require-process-sandbox"])
        .output()
        .expect("dot-launch");
    assert_eq!(
        common::result(&out).status,
        proto::result::RunStatus::Committed
    );
}

/// How many children of `pid` are a runner (`argv[0]` `dot-sandbox`).
fn runners_of(pid: u32) -> usize {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            common::stat_state_ppid(&stat).is_some_and(|(_, ppid)| ppid == pid)
        })
        .filter(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            cmdline.split(|b| *b == 0).next() == Some(proto::runner::RUNNER_ARGV0.as_bytes())
        })
        .count()
}
