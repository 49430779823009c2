//! End-to-end runs at `process` level: hello under dot-sandbox, refusals before spawning, and
//! pathname replacement after validation.

#![allow(clippy::unwrap_used)]

mod common;

use common::{failure, result, tool, Env};
use proto::result::RunStatus;
use proto::{Containment, Kind};
use std::path::{Path, PathBuf};
use std::time::Duration;
use testkit::{workspace_bin, TempDir};

fn process_env() -> Env {
    let env = Env::new();
    env.register("hello-p", &workspace_bin("hello"), "process", &["name"]);
    env
}

#[test]
fn hello_runs_under_process_and_reports_what_was_enforced() {
    let env = process_env();
    let out = env
        .launch(
            "hello-p",
            &["--require-process-sandbox", "--input", "name=box"],
        )
        .output()
        .unwrap();
    let r = result(&out);
    assert_eq!(r.status, RunStatus::Committed);
    assert_eq!(r.containment, Containment::Process);
    assert_eq!(
        std::fs::read(env.target.join("hello.txt")).unwrap(),
        b"hello, box\n"
    );
    let e = r
        .enforced
        .expect("process results carry the enforced details");
    assert!(e.landlock_abi >= 3, "{e:?}");
    assert!(e.no_new_privs);
    assert_eq!(e.rlimits.core, proto::runner::CORE_LIMIT);
    assert!(e.rlimits.nofile > 0 && e.rlimits.as_bytes > 0);
}

#[test]
fn audit_consent_on_a_process_entry_refuses() {
    let env = process_env();
    let err = failure(
        &env.launch("hello-p", &["--allow-audit-plugin"])
            .output()
            .unwrap(),
        1,
    );
    testkit::assert_kind!(err, Kind::ConsentMismatch);
    assert!(err.next.unwrap().contains("--require-process-sandbox"));
    let err = failure(&env.launch("hello-p", &[]).output().unwrap(), 1);
    testkit::assert_kind!(err, Kind::ConsentMissing);
    assert_eq!(env.runs(), Vec::<String>::new());
    assert_eq!(env.target_files(), Vec::<String>::new());
}

#[test]
fn a_kernel_that_cannot_enforce_process_refuses_before_anything_is_created() {
    let env = process_env();
    let mut c = env.launch("hello-p", &["--require-process-sandbox"]);
    c.env("DOT_PRETEND_LANDLOCK_ABI", "2");
    let err = failure(&c.output().unwrap(), 1);
    testkit::assert_kind!(err, Kind::ProcessUnsupported);
    assert_eq!(env.runs(), Vec::<String>::new());
    assert_eq!(env.target_files(), Vec::<String>::new());
}

/// Root's per-run uid is the runner's pid, unique on the host only in the host's PID namespace: a
/// root launcher in another one (as in a container) refuses `process` before anything is created,
/// and `dot-sandbox probe` says why. The same launch in the host's PID namespace runs.
#[test]
fn a_root_launcher_outside_the_hosts_pid_namespace_refuses_process() {
    common::require_program("unshare", "util-linux");
    let env = process_env();
    let in_pid_namespace = |program: &Path| {
        let mut c = std::process::Command::new("unshare");
        c.args(["--pid", "--fork", "--"]).arg(program);
        c
    };
    let mut c = in_pid_namespace(&workspace_bin("dot-launch"));
    c.arg("--root")
        .arg(&env.root)
        .arg("hello-p")
        .arg("--target")
        .arg(&env.target)
        .arg("--require-process-sandbox");
    let err = failure(&c.output().unwrap(), 1);
    testkit::assert_kind!(err, Kind::ProcessUnsupported);
    assert!(
        err.message.contains("host's PID namespace"),
        "{}",
        err.message
    );
    assert_eq!(env.runs(), Vec::<String>::new());
    let probe = in_pid_namespace(&workspace_bin("dot-sandbox"))
        .arg("probe")
        .output()
        .unwrap();
    let p: proto::probe::Probe = serde_json::from_slice(&probe.stdout).unwrap();
    assert!(!p.host_pid_namespace && !p.process_enforceable, "{p:?}");
    let out = env
        .launch("hello-p", &["--require-process-sandbox"])
        .output()
        .unwrap();
    assert_eq!(result(&out).status, RunStatus::Committed);
}

/// The runner starts on another CPU than the launcher (so its start overlaps the launcher's
/// digest), and the launcher gives it back every CPU right after: the plugin may run on as many
/// CPUs as the launcher.
#[test]
fn a_process_plugin_may_run_on_every_cpu_its_launcher_may() {
    let env = Env::with_process_fixture();
    let out = env
        .launch(
            "fixture-p",
            &["--require-process-sandbox", "--input", "mode=cpus"],
        )
        .output()
        .unwrap();
    assert_eq!(result(&out).status, RunStatus::Committed);
    let theirs = std::fs::read_to_string(env.target.join("result.txt")).unwrap();
    assert_eq!(theirs, cpus_of(0).to_string());
}

/// How many CPUs the thread `tid` (0: the caller) may run on.
fn cpus_of(tid: i32) -> usize {
    use nix::sched::{sched_getaffinity, CpuSet};
    let set = sched_getaffinity(nix::unistd::Pid::from_raw(tid)).expect("sched_getaffinity");
    (0..CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .count()
}

/// A private copy of dot-launch whose sibling dot-sandbox the test controls.
fn launcher_dir(sandbox: impl FnOnce(&Path)) -> (TempDir, PathBuf) {
    let dir = TempDir::new();
    let launch = dir.join("dot-launch");
    testkit::copy_exe(&workspace_bin("dot-launch"), &launch);
    sandbox(&dir.join("dot-sandbox"));
    (dir, launch)
}

fn run_with(launch: &Path, env: &Env) -> std::process::Output {
    env.launch_via(launch, "hello-p", &["--require-process-sandbox"])
        .output()
        .unwrap()
}

fn assert_sandbox_unusable(setup: impl FnOnce(&Path)) {
    let env = process_env();
    let (_dir, launch) = launcher_dir(setup);
    let err = failure(&run_with(&launch, &env), 1);
    testkit::assert_kind!(err, Kind::SandboxUnusable, "{err:?}");
    assert_eq!(env.runs(), Vec::<String>::new());
    assert_eq!(env.target_files(), Vec::<String>::new());
}

#[test]
fn missing_sandbox_refuses() {
    assert_sandbox_unusable(|_| {});
}

#[test]
fn symlinked_sandbox_refuses() {
    assert_sandbox_unusable(|p| {
        std::os::unix::fs::symlink(workspace_bin("dot-sandbox"), p).unwrap()
    });
}

#[test]
fn group_writable_sandbox_refuses() {
    assert_sandbox_unusable(|p| {
        testkit::copy_exe(&workspace_bin("dot-sandbox"), p);
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o775)).unwrap();
    });
}

#[test]
fn a_copied_launcher_finds_its_own_sibling_sandbox() {
    let env = process_env();
    let (_dir, launch) = launcher_dir(|p| {
        testkit::copy_exe(&workspace_bin("dot-sandbox"), p);
    });
    let out = run_with(&launch, &env);
    assert_eq!(result(&out).containment, Containment::Process);
}

#[test]
fn dynamic_or_script_plugins_cannot_be_registered_as_process() {
    let env = Env::new();
    let dir = TempDir::new();
    let script = testkit::write_exe(dir.path(), "s.sh", testkit::SCRIPT, 0o755);
    for exe in [Path::new("/bin/true"), script.as_path()] {
        let mut c = tool("dot-register");
        c.args(["dev", "--root"])
            .arg(&env.root)
            .args(["--name", "dyn", "--exe"])
            .arg(exe);
        c.args(["--containment", "process"]);
        let err = failure(&c.output().unwrap(), 1);
        testkit::assert_kind!(err, Kind::NotStaticElf, "{exe:?}");
    }
}

/// After validation, the pinned store file and the dot-sandbox pathname are replaced with other
/// bytes; the run still executes the validated inodes.
#[test]
fn pathname_replacement_after_validation_changes_nothing() {
    let env = process_env();
    let (dir, launch) = launcher_dir(|p| {
        testkit::copy_exe(&workspace_bin("dot-sandbox"), p);
    });
    let pause = dir.join("pause");
    let mut c = std::process::Command::new(&launch);
    c.arg("--root").arg(&env.root).args([
        "hello-p",
        "--require-process-sandbox",
        "--input",
        "name=original",
        "--target",
    ]);
    c.arg(&env.target).env("DOT_PAUSE_AFTER_VERIFY", &pause);
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    let ready = PathBuf::from(format!("{}.ready", pause.display()));
    for _ in 0..10_000 {
        if ready.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(ready.exists(), "dot-launch reached the pause point");
    // Replace both pathnames with the fixture plugin (other bytes entirely).
    let other = workspace_bin("fixture-plugin");
    for e in std::fs::read_dir(env.root.join("store/sha256")).unwrap() {
        let p = e.unwrap().path();
        let tmp = p.with_extension("new");
        std::fs::copy(&other, &tmp).unwrap();
        std::fs::rename(&tmp, &p).unwrap();
    }
    let tmp = dir.join("sandbox.new");
    std::fs::copy(&other, &tmp).unwrap();
    std::fs::rename(&tmp, dir.join("dot-sandbox")).unwrap();
    std::fs::write(format!("{}.go", pause.display()), b"").unwrap();
    let out = child.wait_with_output().unwrap();
    let r = result(&out);
    assert_eq!(r.containment, Containment::Process);
    assert!(
        r.enforced.is_some(),
        "the validated dot-sandbox ran, not the replacement"
    );
    assert_eq!(
        std::fs::read(env.target.join("hello.txt")).unwrap(),
        b"hello, original\n"
    );
    assert!(
        !env.target.join("result.txt").exists(),
        "the replacement plugin never ran"
    );
}

/// Every run is in namespaces of its own — none of them the host's, none another run's: two
/// plugins running at once, each compared with this process and with the other.
#[test]
fn two_runs_share_no_namespace_with_the_host_or_each_other() {
    let env = Env::with_process_fixture();
    let start = || {
        env.launch(
            "fixture-p",
            &[
                "--require-process-sandbox",
                "--input",
                "mode=sleep",
                "--deadline-ms",
                "20000",
            ],
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("dot-launch")
    };
    let (mut a, mut b) = (start(), start());
    let find = |child: &std::process::Child| {
        for _ in 0..2000 {
            if let Some(pid) = common::plugin_of(child.id(), &env.root) {
                return pid;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("the plugin of {} never started", child.id());
    };
    let (pa, pb) = (find(&a), find(&b));
    let ns = |pid: &str, kind: &str| {
        std::fs::read_link(format!("/proc/{pid}/ns/{kind}")).expect("ns link")
    };
    for kind in ["net", "pid", "mnt", "ipc", "uts", "cgroup"] {
        let (host, x, y) = (
            ns("self", kind),
            ns(&pa.to_string(), kind),
            ns(&pb.to_string(), kind),
        );
        assert_ne!(x, host, "{kind}: the first run is in the host's");
        assert_ne!(y, host, "{kind}: the second run is in the host's");
        assert_ne!(x, y, "{kind}: the two runs share one");
    }
    for c in [&mut a, &mut b] {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(c.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = c.wait();
    }
}

/// The runner takes its launcher's CPUs itself before it forks the plugin, whenever the launcher
/// gives them back: a runner started from a thread narrowed to one CPU (what a give-back that
/// comes late leaves it with) still gives its plugin every CPU its parent — here this test's
/// process — may run on.
#[test]
fn a_runner_started_on_one_cpu_gives_its_plugin_its_parents_cpus() {
    use nix::sched::{sched_setaffinity, CpuSet};
    use nix::unistd::Pid;
    let parents = cpus_of(std::process::id() as i32);
    let scratch = sandbox::Scratch::new("cpus").unwrap();
    let plugin = std::fs::File::open(workspace_bin("fixture-plugin")).unwrap();
    let runner = std::fs::File::open(workspace_bin("dot-sandbox")).unwrap();
    let argv =
        proto::runner::Invocation::new(sandbox::PROVE_LIMITS, proto::Name::new("fixture").unwrap())
            .argv();
    let request = br#"{"protocol":"1.0","plugin":"fixture","inputs":{"mode":"cpus"}}"#;
    let run = std::thread::scope(|s| {
        s.spawn(|| {
            // This thread (only) on the CPU it is on: the runner inherits that.
            let mut one = CpuSet::new();
            one.set(nix::sched::sched_getcpu().unwrap()).unwrap();
            sched_setaffinity(Pid::from_raw(0), &one).unwrap();
            sandbox::Run {
                stage: &scratch.stage,
                request,
                input: sandbox::Input::Pipe,
                timeout: std::time::Duration::from_secs(60),
            }
            .runner(&runner, &plugin, &argv)
            .unwrap()
        })
        .join()
        .unwrap()
    });
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let theirs = run.read_stage_file("out/result.txt").unwrap();
    assert_eq!(String::from_utf8_lossy(&theirs), parents.to_string());
}
