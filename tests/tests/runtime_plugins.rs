//! Scripts and dynamically linked programs under `process` with a declared runtime
//! (`--runtime /usr`): they commit, and from inside the run the host's files, writes under the
//! runtime, sockets and new processes all fail; the result says the dependencies are the
//! runtime's. Without a runtime, or with one the interpreter or a library is not in, registration
//! and launch refuse.

#![allow(clippy::unwrap_used)]

mod common;

use common::{result, Env};
use proto::trust::Dependencies;
use proto::Kind;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A Python plugin that tries what a runtime must not give and reports each errno name.
const PYTHON_PROBE: &str = r#"#!/usr/bin/python3 -I
import errno, json, os, socket, sys

def attempt(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))

def fork():
    if os.fork() == 0:
        os._exit(0)

request = json.load(sys.stdin)
name = request["inputs"].get("name", "world")
found = {
    "greeting": f"hello {name} from python",
    "read_etc_passwd": attempt(lambda: open("/etc/passwd").read()),
    "write_usr": attempt(lambda: open(request["inputs"].get("usr_file", "/usr/.dot-probe"), "w")),
    "socket": attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM)),
    "fork": attempt(fork),
    "write_proc_self_mem": attempt(lambda: os.close(os.open("/proc/self/mem", os.O_RDWR))),
}
os.makedirs("out", exist_ok=True)
with open("out/result.json", "w") as f:
    json.dump(found, f)
print(json.dumps({"protocol": "1.0", "status": "ok", "outputs": ["result.json"]}))
"#;

/// The same probe as a dynamically linked C program (errno numbers; 0 = it worked).
const C_PROBE: &str = r#"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static int err(int r) { return r < 0 ? errno : 0; }

int main(int argc, char **argv) {
    char buf[65536];
    while (read(0, buf, sizeof buf) > 0) {}
    const char *usr = argc > 1 ? argv[1] : "/usr/.dot-probe";
    int passwd = err(open("/etc/passwd", O_RDONLY));
    int usrw = err(open(usr, O_WRONLY | O_CREAT, 0600));
    int sock = err(socket(AF_INET, SOCK_STREAM, 0));
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    int forked = pid < 0 ? errno : 0;
    FILE *f = fopen("out/result.json", "w");
    if (!f) return 10;
    fprintf(f, "{\"greeting\":\"hello from c\",\"read_etc_passwd\":%d,\"write_usr\":%d,"
               "\"socket\":%d,\"fork\":%d}", passwd, usrw, sock, forked);
    fclose(f);
    printf("{\"protocol\":\"1.0\",\"status\":\"ok\",\"outputs\":[\"result.json\"]}\n");
    return 0;
}
"#;

fn python_plugin(env: &Env) -> PathBuf {
    common::require_program("python3", "python3");
    testkit::write_exe(env.dir.path(), "probe.py", PYTHON_PROBE.as_bytes(), 0o755)
}

/// The C probe, built dynamically linked.
fn c_plugin(dir: &Path) -> PathBuf {
    common::require_program("cc", "gcc");
    let src = dir.join("probe.c");
    std::fs::write(&src, C_PROBE).unwrap();
    let exe = dir.join("probe-c");
    let out = Command::new("cc")
        .arg("-O2")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

fn result_json(env: &Env) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(env.target.join("result.json")).unwrap()).unwrap()
}

fn launch_process(env: &Env, name: &str) -> std::process::Output {
    env.launch(
        name,
        &[
            "--require-process-sandbox",
            "--input",
            "name=ada",
            "--stderr",
            "tail",
        ],
    )
    .output()
    .unwrap()
}

#[test]
fn a_python_plugin_under_process_with_a_runtime_commits_and_is_contained() {
    let env = Env::new();
    let script = python_plugin(&env);
    env.register_with(
        "probe-py",
        &script,
        "process",
        &["--runtime", "/usr", "--input", "name:string:optional"],
    );
    let explained = env
        .launch("probe-py", &["--require-process-sandbox", "--explain"])
        .output()
        .unwrap();
    let x: proto::explain::Explanation = testkit::assert_ok(&explained);
    assert_eq!(x.executable.dependencies, Dependencies::Runtime);
    let plan = x.runner.expect("a process plan");
    assert_eq!(plan.runtime, ["/usr"]);
    let out = launch_process(&env, "probe-py");
    let r = result(&out);
    assert_eq!(r.dependencies, Dependencies::Runtime);
    assert_eq!(
        plan.seccomp_policy_sha256,
        r.enforced.as_ref().map(|e| e.seccomp_policy_sha256),
        "--explain names the policy the run gets (the runtime's)"
    );
    let enforced = r.enforced.expect("process reports what it enforced");
    assert_eq!(enforced.runtime, ["/usr"]);
    assert_eq!(enforced.program.as_deref(), Some("script"));
    let found = result_json(&env);
    assert_eq!(found["greeting"], "hello ada from python");
    assert_eq!(found["read_etc_passwd"], "ENOENT", "{found}");
    assert!(
        ["EROFS", "EACCES"].contains(&found["write_usr"].as_str().unwrap()),
        "{found}"
    );
    assert_eq!(found["socket"], "EPERM", "{found}");
    assert_eq!(found["fork"], "EPERM", "{found}");
    // A script's /proc (its interpreter reads it through /dev/fd/4) is read-only: its own memory
    // cannot be written past the page protections.
    assert!(
        ["EROFS", "EACCES"].contains(&found["write_proc_self_mem"].as_str().unwrap()),
        "{found}"
    );
    assert!(!Path::new("/usr/.dot-probe").exists());
}

/// The probe can see what it looks for: run directly (no dot), the same script reads
/// `/etc/passwd`, makes a socket and forks (its write goes to a scratch file, not under `/usr`).
#[test]
fn the_python_probe_detects_each_escape_unconfined() {
    let env = Env::new();
    let script = python_plugin(&env);
    let scratch = env.dir.path().join("writable");
    let work = env.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let request = serde_json::json!({
        "protocol": "1.0", "plugin": "probe-py",
        "inputs": {"name": "ada", "usr_file": scratch.display().to_string()}
    });
    let mut child = Command::new(&script)
        .current_dir(&work)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    assert!(child.wait_with_output().unwrap().status.success());
    let found: serde_json::Value =
        serde_json::from_slice(&std::fs::read(work.join("out/result.json")).unwrap()).unwrap();
    for probe in [
        "read_etc_passwd",
        "write_usr",
        "socket",
        "fork",
        "write_proc_self_mem",
    ] {
        assert_eq!(found[probe], "ok", "{probe}: {found}");
    }
}

#[test]
fn a_dynamic_c_plugin_under_process_with_a_runtime_commits_and_is_contained() {
    let env = Env::new();
    let exe = c_plugin(env.dir.path());
    env.register_with(
        "probe-c",
        &exe,
        "process",
        &["--runtime", "/usr", "--input", "name:string:optional"],
    );
    let out = launch_process(&env, "probe-c");
    let r = result(&out);
    assert_eq!(r.dependencies, Dependencies::Runtime);
    assert_eq!(r.enforced.unwrap().program.as_deref(), Some("dynamic"));
    let found = result_json(&env);
    assert_eq!(
        found["read_etc_passwd"],
        nix::errno::Errno::ENOENT as i32,
        "{found}"
    );
    let w = found["write_usr"].as_i64().unwrap() as i32;
    assert!(
        [
            nix::errno::Errno::EROFS as i32,
            nix::errno::Errno::EACCES as i32
        ]
        .contains(&w),
        "{found}"
    );
    assert_eq!(found["socket"], nix::errno::Errno::EPERM as i32, "{found}");
    assert_eq!(found["fork"], nix::errno::Errno::EPERM as i32, "{found}");
    // Unconfined the same program reads, makes a socket and forks.
    let work = env.dir.path().join("work");
    std::fs::create_dir_all(work.join("out")).unwrap();
    let scratch = env.dir.path().join("writable");
    let status = Command::new(&exe)
        .arg(&scratch)
        .current_dir(&work)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let free: serde_json::Value =
        serde_json::from_slice(&std::fs::read(work.join("out/result.json")).unwrap()).unwrap();
    for probe in ["read_etc_passwd", "write_usr", "socket", "fork"] {
        assert_eq!(free[probe], 0, "{probe}: {free}");
    }
}

/// `dot-register policy set --root R` with `args`.
fn policy_set(env: &Env, args: &[&str]) {
    let out = common::tool("dot-register")
        .args(["policy", "set", "--root"])
        .arg(&env.root)
        .args(args)
        .output()
        .unwrap();
    common::ok(out, "dot-register policy set");
}

/// The root's policy lets runtimes lie beneath `dir` too (besides /usr).
fn allow_runtimes_beneath(env: &Env, dir: &Path) {
    policy_set(env, &["--runtime-root", dir.to_str().unwrap()]);
}

/// A runtime `rt/` (allowed by the root's policy) holding `bin/fixture`, and a script `s.sh` whose
/// interpreter it is. A runtime holding a copy of the C probe's loader and libraries would be
/// large; a script whose interpreter is a static binary in the runtime is enough.
struct ScriptRuntime {
    runtime: PathBuf,
    interpreter: PathBuf,
    script: PathBuf,
}

fn script_runtime(env: &Env) -> ScriptRuntime {
    let runtime = env.dir.path().join("rt");
    std::fs::create_dir_all(runtime.join("bin")).unwrap();
    allow_runtimes_beneath(env, &runtime);
    let interpreter = runtime.join("bin/fixture");
    std::fs::copy(common::bin_dir().join("fixture-plugin"), &interpreter).unwrap();
    let script = testkit::write_exe(
        env.dir.path(),
        "s.sh",
        format!("#!{}\n", interpreter.display()).as_bytes(),
        0o755,
    );
    ScriptRuntime {
        runtime,
        interpreter,
        script,
    }
}

fn register_refused(env: &Env, exe: &Path, extra: &[&str], code: i32, kind: Kind) -> String {
    let out = common::tool("dot-register")
        .args(["dev", "--root"])
        .arg(&env.root)
        .args(["--name", "probe", "--containment", "process", "--exe"])
        .arg(exe)
        .args(extra)
        .output()
        .unwrap();
    testkit::assert_refused(&out, code, kind).message
}

#[test]
fn a_script_or_dynamic_program_without_a_runtime_stays_refused() {
    let env = Env::new();
    let script = python_plugin(&env);
    let exe = c_plugin(env.dir.path());
    for plugin in [&script, &exe] {
        let message = register_refused(&env, plugin, &[], 1, Kind::NotStaticElf);
        assert!(message.contains("--runtime"), "{message}");
    }
}

#[test]
fn a_runtime_the_interpreter_or_libraries_are_not_in_is_refused() {
    let env = Env::new();
    let script = python_plugin(&env);
    let exe = c_plugin(env.dir.path());
    let elsewhere = env.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    allow_runtimes_beneath(&env, &elsewhere);
    allow_runtimes_beneath(&env, Path::new("/nonexistent-dot-runtime"));
    let elsewhere = elsewhere.to_str().unwrap().to_owned();
    for plugin in [&script, &exe] {
        let message = register_refused(
            &env,
            plugin,
            &["--runtime", &elsewhere],
            1,
            Kind::RuntimeUnresolved,
        );
        assert!(message.contains("not inside the runtime"), "{message}");
    }
    // A runtime that does not exist.
    let message = register_refused(
        &env,
        &script,
        &["--runtime", "/nonexistent-dot-runtime"],
        1,
        Kind::RuntimeUnresolved,
    );
    assert!(message.contains("/nonexistent-dot-runtime"), "{message}");
    // `#!/usr/bin/env python3` would look python3 up in PATH and execute it.
    let env_script = testkit::write_exe(
        env.dir.path(),
        "env.py",
        PYTHON_PROBE
            .replacen("#!/usr/bin/python3 -I", "#!/usr/bin/env python3", 1)
            .as_bytes(),
        0o755,
    );
    let message = register_refused(
        &env,
        &env_script,
        &["--runtime", "/usr"],
        1,
        Kind::RuntimeUnresolved,
    );
    assert!(message.contains("env"), "{message}");
    // A runtime is for process only.
    let out = common::tool("dot-register")
        .args(["dev", "--root"])
        .arg(&env.root)
        .args([
            "--name",
            "probe",
            "--containment",
            "audit",
            "--allow-dynamic",
        ])
        .args(["--runtime", "/usr", "--exe"])
        .arg(&script)
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 2, Kind::EntryMalformed);
    assert_eq!(e.field.as_deref(), Some("runtime"));
}

/// A runtime registered and then gone (or no longer holding the interpreter) refuses the launch
/// before anything runs.
#[test]
fn a_launch_whose_runtime_no_longer_resolves_is_refused_before_spawning() {
    let env = Env::new();
    let ScriptRuntime {
        runtime,
        interpreter,
        script,
    } = script_runtime(&env);
    let rt = runtime.to_str().unwrap();
    env.register_with("s", &script, "process", &["--runtime", rt]);
    std::fs::remove_file(&interpreter).unwrap();
    let out = env
        .launch("s", &["--require-process-sandbox"])
        .output()
        .unwrap();
    testkit::assert_refused(&out, 1, Kind::RuntimeUnresolved);
    assert!(env.runs().is_empty(), "nothing was created");
}

/// A runtime someone but root could change (here uid 65534 owns its directory, then its `bin/`
/// is writable by all) chooses what the plugin runs: refused at registration, and when it became
/// so after, at launch before anything is created or spawned.
#[test]
fn a_runtime_another_user_can_change_is_refused_at_registration_and_at_launch() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let ScriptRuntime {
        runtime,
        interpreter: _,
        script,
    } = script_runtime(&env);
    let rt = runtime.to_str().unwrap();
    std::os::unix::fs::chown(&runtime, Some(65534), None).unwrap();
    let e_msg = register_refused(&env, &script, &["--runtime", rt], 1, Kind::RuntimeUnsafe);
    assert!(e_msg.contains("owned by uid 65534"), "{e_msg}");
    std::os::unix::fs::chown(&runtime, Some(0), None).unwrap();
    env.register_with("s", &script, "process", &["--runtime", rt]);
    std::fs::set_permissions(runtime.join("bin"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = env
        .launch("s", &["--require-process-sandbox"])
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 1, Kind::RuntimeUnsafe);
    assert_eq!(
        e.value.as_deref(),
        Some(runtime.join("bin").to_str().unwrap())
    );
    assert!(env.runs().is_empty(), "nothing was created");
}

/// Which host trees a plugin may see is the root owner's decision: a runtime outside the policy's
/// runtime roots (only /usr unless the owner adds one), one on a filesystem of the kernel's
/// (`/proc`), or one holding the platform root is refused at registration; a runtime the policy no
/// longer allows refuses the launch before anything is created.
#[test]
fn a_runtime_the_roots_policy_does_not_allow_is_refused() {
    let env = Env::new();
    let script = python_plugin(&env);
    for (runtime, says) in [
        ("/etc", "is not beneath a runtime root"),
        ("/home", "(/usr)"),
    ] {
        let message = register_refused(
            &env,
            &script,
            &["--runtime", runtime],
            1,
            Kind::RuntimeNotAllowed,
        );
        assert!(message.contains(says), "{message}");
    }
    allow_runtimes_beneath(&env, Path::new("/proc"));
    let message = register_refused(
        &env,
        &script,
        &["--runtime", "/proc"],
        1,
        Kind::RuntimeNotAllowed,
    );
    assert!(message.contains("proc filesystem"), "{message}");
    let dir = env.dir.path().to_str().unwrap();
    allow_runtimes_beneath(&env, env.dir.path());
    let message = register_refused(
        &env,
        &script,
        &["--runtime", dir],
        1,
        Kind::RuntimeNotAllowed,
    );
    assert!(message.contains("holds the platform root"), "{message}");
    // Allowed when registered, no longer when launched.
    env.register_with(
        "py",
        &script,
        "process",
        &["--runtime", "/usr", "--input", "name:string:optional"],
    );
    policy_set(&env, &["--clear-runtime-roots", "--runtime-root", "/opt"]);
    let out = launch_process(&env, "py");
    let e = testkit::assert_refused(&out, 1, Kind::RuntimeNotAllowed);
    assert_eq!(e.value.as_deref(), Some("/usr"));
    assert!(env.runs().is_empty(), "nothing was created");
}

#[test]
fn adding_a_runtime_is_a_widening_that_needs_consent() {
    let env = Env::new();
    let exe = common::bin_dir().join("fixture-plugin");
    env.register_with("w", &exe, "process", &[]);
    let out = common::tool("dot-register")
        .args(["dev", "--root"])
        .arg(&env.root)
        .args(["--name", "w", "--containment", "process", "--replace"])
        .args(["--runtime", "/usr", "--exe"])
        .arg(&exe)
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 1, Kind::ChangesNeedConsent);
    assert!(e.message.contains("runtime added: /usr"), "{}", e.message);
}
