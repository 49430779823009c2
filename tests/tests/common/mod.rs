//! Helpers for the cross-tool suites: a DEV root with the fixture plugin and hello registered
//! through the real `dot-register`, and running the real `dot-launch`.
#![allow(dead_code, clippy::unwrap_used)]

use proto::result::RunResult;
use proto::ErrorObject;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
pub mod system;

use testkit::{workspace_bin, TempDir};

/// Inputs the fixture plugin declares (all optional strings).
pub const FIXTURE_INPUTS: [&str; 9] = [
    "mode", "marker", "fifo", "then", "a", "b", "name", "port", "size",
];

pub struct Env {
    pub dir: TempDir,
    pub root: PathBuf,
    pub target: PathBuf,
}

pub fn tool(name: &str) -> Command {
    let mut c = Command::new(workspace_bin(name));
    c.env_remove("DOT_FAILPOINT").env_remove("DOT_ROOT");
    c
}

/// `dot-register init --dev --root ROOT`, which must succeed.
pub fn init_dev_root(root: &Path) {
    ok(
        tool("dot-register")
            .args(["init", "--dev", "--root"])
            .arg(root)
            .output()
            .unwrap(),
        "init",
    );
}

/// Asserts `what` exited 0 (its status, stdout and stderr in the message); returns its output.
pub fn ok(out: Output, what: &str) -> Output {
    assert!(
        out.status.success(),
        "{what} failed: {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl Env {
    /// A DEV root with `fixture` (audit) and `hello` (audit) registered.
    pub fn new() -> Env {
        let dir = TempDir::new();
        let root = dir.join("root");
        let target = dir.join("target");
        std::fs::create_dir(&target).unwrap();
        init_dev_root(&root);
        let env = Env { dir, root, target };
        env.register(
            "fixture",
            &workspace_bin("fixture-plugin"),
            "audit",
            &FIXTURE_INPUTS,
        );
        env.register("hello", &workspace_bin("hello"), "audit", &["name"]);
        env
    }

    /// `Env::new` with the fixture also registered at `process`, as `fixture-p`.
    pub fn with_process_fixture() -> Env {
        let env = Env::new();
        env.register(
            "fixture-p",
            &workspace_bin("fixture-plugin"),
            "process",
            &FIXTURE_INPUTS,
        );
        env
    }

    /// `dot-register dev` of `exe` as `name`, each of `inputs` an optional string input.
    pub fn register(&self, name: &str, exe: &Path, containment: &str, inputs: &[&str]) {
        let specs: Vec<String> = inputs
            .iter()
            .map(|i| format!("{i}:string:optional"))
            .collect();
        let mut extra = Vec::new();
        for spec in &specs {
            extra.extend(["--input", spec.as_str()]);
        }
        self.register_with(name, exe, containment, &extra);
    }

    /// `dot-register dev` of `exe` as `name` with `extra` options (inputs, protocol, …).
    pub fn register_with(&self, name: &str, exe: &Path, containment: &str, extra: &[&str]) {
        let mut c = tool("dot-register");
        c.args(["dev", "--root"])
            .arg(&self.root)
            .args(["--name", name, "--exe"])
            .arg(exe);
        c.args(["--containment", containment]).args(extra);
        ok(c.output().unwrap(), "dot-register dev");
    }

    /// `dot-launch --root R NAME --target T` plus `args`.
    pub fn launch(&self, name: &str, args: &[&str]) -> Command {
        launch_into(&self.root, name, &self.target, args)
    }

    /// `launch` through the dot-launch binary at `bin` (see `launch_with`).
    pub fn launch_via(&self, bin: &Path, name: &str, args: &[&str]) -> Command {
        launch_with(bin, &self.root, name, &self.target, args)
    }

    /// Runs the fixture at audit with `mode` and extra `--input`s.
    pub fn fixture(&self, mode: &str, inputs: &[(&str, &str)], extra: &[&str]) -> Output {
        self.fixture_command(mode, inputs, extra).output().unwrap()
    }

    /// The command `fixture` runs.
    pub fn fixture_command(&self, mode: &str, inputs: &[(&str, &str)], extra: &[&str]) -> Command {
        let mut c = self.launch(
            "fixture",
            &["--allow-audit-plugin", "--input", &format!("mode={mode}")],
        );
        for (k, v) in inputs {
            c.args(["--input", &format!("{k}={v}")]);
        }
        c.args(extra);
        c
    }

    /// `dot-launch` of the fixture at audit in mode `two-outputs`: it commits `a.txt` and `b.txt`.
    pub fn two_outputs(&self) -> Command {
        self.launch(
            "fixture",
            &["--allow-audit-plugin", "--input", "mode=two-outputs"],
        )
    }

    /// The fixture at audit in mode `two-outputs` into `target`, its files `a.txt` and `b.txt`
    /// holding `new a` and `new b` (one line each).
    pub fn two_new_outputs_into(&self, target: &Path) -> Command {
        self.two_new_outputs_as("fixture", "--allow-audit-plugin", target)
    }

    /// [`Env::two_new_outputs_into`] of the fixture registered as `name`, launched with `consent`.
    pub fn two_new_outputs_as(&self, name: &str, consent: &str, target: &Path) -> Command {
        launch_into(
            &self.root,
            name,
            target,
            &[
                consent,
                "--input",
                "mode=two-outputs",
                "--input",
                "a=new a\n",
                "--input",
                "b=new b\n",
            ],
        )
    }

    /// The names in the target directory, sorted.
    pub fn target_files(&self) -> Vec<String> {
        names(&self.target)
    }

    /// The run directories under the root's `txn/`, sorted.
    pub fn runs(&self) -> Vec<String> {
        names(&self.root.join("txn"))
    }
}

pub fn result(out: &Output) -> RunResult {
    ok(out.clone(), "dot-launch");
    testkit::decode_json(&out.stdout)
}

/// The error object of a failed run, after checking the exit code.
pub fn failure(out: &Output, code: i32) -> ErrorObject {
    testkit::assert_failed(out, code)
}

/// The repository's top directory (README.md, Makefile, man/, docs/).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives in the workspace")
        .to_path_buf()
}

/// The directory holding the workspace's binaries (`dot-*`, `hello`).
pub fn bin_dir() -> PathBuf {
    workspace_bin("dot-launch")
        .parent()
        .expect("a binary lives in a directory")
        .to_path_buf()
}

/// Asserts an external program the suite needs is installed (`.ci/run` installs it): a missing one
/// fails the test, never skips it.
pub fn require_program(name: &str, package: &str) {
    testkit::require_program(name, package)
}

/// The text of a file in the repository.
pub fn repo_file(rel: &str) -> String {
    let p = repo_root().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The binaries the Makefile installs (its `TOOLS := …` line).
pub fn makefile_tools() -> Vec<String> {
    makefile_list("TOOLS")
}

/// Of [`makefile_tools`], those installed in `LIBEXECDIR/dot` (its `LIBEXEC_TOOLS := …` line).
pub fn makefile_libexec_tools() -> Vec<String> {
    makefile_list("LIBEXEC_TOOLS")
}

/// The words of the Makefile's `NAME := …` line.
fn makefile_list(name: &str) -> Vec<String> {
    let makefile = repo_file("Makefile");
    let line = makefile
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name) && l.contains(":="))
        .unwrap_or_else(|| panic!("Makefile has a {name} line"));
    line.split_once(":=")
        .unwrap_or_else(|| panic!("{name} := …"))
        .1
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Spawns `cmd` (a launch of a test build) to pause at the hook point `point` (`DOT_PAUSE_AT`,
/// `launch::hooks::pause_at`), its output piped, and returns once it waits there (at most 30 s);
/// [`go_on`] lets it go.
pub fn spawn_paused(mut cmd: Command, point: &str, pause: &Path) -> std::process::Child {
    let child = cmd
        .env("DOT_PAUSE_AT", format!("{point}:{}", pause.display()))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawning the launch");
    let ready = PathBuf::from(format!("{}.ready", pause.display()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !ready.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the launch never paused at {point}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child
}

/// Lets a launch paused by [`spawn_paused`] at `pause` go on.
pub fn go_on(pause: &Path) {
    std::fs::write(format!("{}.go", pause.display()), b"").expect("the go file");
}

/// `dot-launch --root R NAME --target TARGET` plus `args` (a target other than the Env's).
pub fn launch_into(root: &Path, name: &str, target: &Path, args: &[&str]) -> Command {
    launch_with(&workspace_bin("dot-launch"), root, name, target, args)
}

/// `launch_into` through the dot-launch binary at `bin` (a private copy beside a `dot-sandbox` the
/// test controls).
pub fn launch_with(bin: &Path, root: &Path, name: &str, target: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.env_remove("DOT_FAILPOINT");
    c.arg("--root")
        .arg(root)
        .arg(name)
        .arg("--target")
        .arg(target)
        .args(args);
    c
}

/// `dot-launch --root R recover`.
pub fn recover(root: &Path) -> Output {
    tool("dot-launch")
        .arg("--root")
        .arg(root)
        .arg("recover")
        .output()
        .unwrap()
}

/// `dot-discard --root R`.
pub fn discard(root: &Path) -> Output {
    tool("dot-discard")
        .arg("--root")
        .arg(root)
        .output()
        .unwrap()
}

/// The names in `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The state letter and the parent pid of a `/proc/PID/stat` line (the fields after the command
/// name, which may itself hold spaces and parentheses).
pub fn stat_state_ppid(stat: &str) -> Option<(char, u32)> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Whether `ancestor` is `pid`'s parent, grandparent, … (a `process` plugin is three levels below
/// its launcher: runner, the run's init, the plugin).
pub fn descends_from(pid: u32, ancestor: u32) -> bool {
    let mut at = pid;
    for _ in 0..8 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{at}/stat")) else {
            return false;
        };
        match stat_state_ppid(&stat) {
            Some((_, ppid)) if ppid == ancestor => return true,
            Some((_, ppid)) if ppid > 1 => at = ppid,
            _ => return false,
        }
    }
    false
}

/// Live (not zombie) processes other than this one whose working directory, executable or any
/// open descriptor lies under `dir`: a run's plugin (cwd = its stage, exe = the pinned copy in
/// the store), anything it started there, and whatever holds a run's lock.
pub fn processes_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = e.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) || pid == std::process::id().to_string() {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat_state_ppid(&stat).is_some_and(|(state, _)| state == 'Z');
        if zombie {
            continue;
        }
        let under = |link: &Path| std::fs::read_link(link).is_ok_and(|t| t.starts_with(dir));
        // Its working directory, its executable, or any descriptor it holds (a run's lock is an
        // open descriptor of the run directory).
        let inside = ["cwd", "exe"].iter().any(|l| under(&e.path().join(l)))
            || std::fs::read_dir(e.path().join("fd"))
                .into_iter()
                .flatten()
                .flatten()
                .any(|fd| under(&fd.path()));
        if inside {
            found.push(stat);
        }
    }
    found
}

/// Waits (bounded; the bound only turns a hang into a failure) until no process runs under `dir`;
/// returns the ones still there.
pub fn wait_no_processes_under(dir: &Path) -> Vec<String> {
    for _ in 0..500 {
        if processes_under(dir).is_empty() {
            return Vec::new();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    processes_under(dir)
}

/// Everything written to the terminal whose master is `master`, until its last writer is gone (the
/// pty's reads then end with EIO).
pub fn read_terminal(master: std::os::fd::OwnedFd) -> String {
    use std::io::Read;
    let mut master = std::fs::File::from(master);
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = master.read(&mut buf) {
        if n == 0 {
            break;
        }
        text.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// The pid of a live descendant of `launcher` whose executable is the pinned copy in `root`'s
/// store: the plugin itself, past its exec (at `process`, below the runner and the run's init).
pub fn plugin_of(launcher: u32, root: &Path) -> Option<u32> {
    let store = root.join("store");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        let (state, _) = stat_state_ppid(&stat)?;
        let exe = std::fs::read_link(e.path().join("exe")).ok()?;
        (state != 'Z' && exe.starts_with(&store) && descends_from(pid, launcher)).then_some(pid)
    })
}
