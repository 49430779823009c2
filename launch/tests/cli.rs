//! `dot-launch` through its command line (`cargo_bin_cmd!`): one test for each exit code and for
//! each of its own error kinds that a command line can cause. The plugins are small shell scripts
//! registered by hand at `audit` in a development root (their interpreter is granted, as
//! `--allow-dynamic` would), and the static `hello` for `process`.
#![allow(clippy::unwrap_used)]

use assert_cmd::cargo::{cargo_bin, cargo_bin_cmd};
use assert_cmd::Command;
use proto::layout::Root;
use proto::result::{RunResult, RunStatus};
use proto::{Containment, InputDecl, InputKind, Kind, Name};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use testkit::{assert_kind, assert_refused, TempDir};

/// A script plugin's answer naming `out/hello.txt`.
const OK: &str = r#"{"protocol":"1.0","status":"ok","outputs":["hello.txt"]}"#;

/// A development root, a target directory, and the plugins registered in it.
struct Fixture {
    dir: TempDir,
    root: Root,
    target: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = TempDir::new();
        let root = testkit::make_root(&dir.join("root"), true);
        let target = dir.join("target");
        std::fs::create_dir(&target).unwrap();
        Fixture { dir, root, target }
    }

    /// Registers `body` (shell, run with an empty environment in the stage) as the `audit` plugin
    /// `name`, its entry changed by `edit`.
    fn script(&self, name: &str, body: &str, edit: impl FnOnce(&mut proto::Entry)) {
        let exe = format!("#!/bin/sh\n{body}\n").into_bytes();
        let mut entry = testkit::entry_for_bytes(name, &exe, Containment::Audit, None);
        edit(&mut entry);
        testkit::install_entry(&self.root, name, &entry.to_bytes(), None, &exe);
    }

    /// A script that writes `out/hello.txt` and answers with it.
    fn hello_script(&self, name: &str) {
        self.script(
            name,
            &format!("printf 'hi\\n' > out/hello.txt\necho '{OK}'"),
            |_| {},
        );
    }

    /// Registers the static `hello` as `name` at `containment`.
    fn hello(&self, name: &str, containment: Containment) {
        let exe = std::fs::read(testkit::static_fixture("hello")).unwrap();
        let entry = testkit::entry_for_bytes(name, &exe, containment, None);
        testkit::install_entry(&self.root, name, &entry.to_bytes(), None, &exe);
    }

    /// `dot-launch --root R NAME --target T ARGS…`.
    fn launch(&self, name: &str, args: &[&str]) -> Command {
        self.launch_with(Command::new(cargo_bin!("dot-launch")), name, args)
    }

    fn launch_with(&self, cmd: Command, name: &str, args: &[&str]) -> Command {
        let mut cmd = self.in_root(cmd);
        cmd.arg(name).arg("--target").arg(&self.target).args(args);
        cmd
    }

    /// `cmd` with an empty environment and `--root R`.
    fn in_root(&self, mut cmd: Command) -> Command {
        cmd.env_clear().arg("--root").arg(self.root.path());
        cmd
    }

    fn run(&self, name: &str, args: &[&str]) -> std::process::Output {
        self.launch(name, args).output().unwrap()
    }

    /// A copy of `dot-launch` in a directory of its own, with `runner` beside it as
    /// `dot-sandbox` (or nothing there).
    fn launcher_beside(&self, runner: Option<&Path>) -> Command {
        let bin = self.dir.join("bin");
        std::fs::create_dir(&bin).unwrap();
        let launch = bin.join("dot-launch");
        testkit::copy_exe(cargo_bin!("dot-launch"), &launch);
        if let Some(runner) = runner {
            testkit::copy_exe(runner, &bin.join("dot-sandbox"));
            std::fs::set_permissions(bin.join("dot-sandbox"), PermissionsExt::from_mode(0o755))
                .unwrap();
        }
        Command::new(launch)
    }

    /// The run directories under `txn/`.
    fn runs(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.root.txn())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn target_files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.target)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// Asserts a refusal before anything ran: exit `code`, `kind`, no run directory, an untouched
    /// target.
    fn refused(&self, out: &std::process::Output, code: i32, kind: Kind) -> proto::ErrorObject {
        let e = assert_refused(out, code, kind);
        assert_eq!(self.runs(), Vec::<String>::new(), "nothing was created");
        assert_eq!(self.target_files(), Vec::<String>::new());
        e
    }

    /// Asserts the plugin ran and failed with `kind` (exit 3): its run in the error object,
    /// nothing committed, the run directory removed.
    fn plugin_failed(&self, out: &std::process::Output, kind: Kind) -> RunResult {
        let e = self.refused(out, 3, kind);
        let run = e.run.expect("a plugin failure carries the run");
        assert_eq!(run.status, RunStatus::Failed);
        assert_eq!(run.failure.as_deref(), Some(e.message.as_str()));
        *run
    }
}

fn input(name: &str, kind: InputKind, required: bool) -> InputDecl {
    InputDecl {
        name: Name::new(name).unwrap(),
        kind,
        required,
    }
}

// ---- exit 0 ---------------------------------------------------------------------------------

#[test]
fn a_run_that_succeeds_exits_0_with_its_result_and_its_outputs_in_place() {
    let fx = Fixture::new();
    fx.hello_script("greet");
    let out = fx.run("greet", &["--allow-audit-plugin"]);
    let r: RunResult = testkit::assert_ok(&out);
    assert_eq!(r.status, RunStatus::Committed);
    assert_eq!(r.containment, Containment::Audit);
    assert_eq!(r.outputs.len(), 1);
    assert_eq!(std::fs::read(fx.target.join("hello.txt")).unwrap(), b"hi\n");
    assert_eq!(
        fx.runs(),
        Vec::<String>::new(),
        "the run directory is removed"
    );
}

// ---- exit 1 ---------------------------------------------------------------------------------

#[test]
fn no_consent_flag_is_consent_missing_with_the_flag_to_give() {
    let fx = Fixture::new();
    fx.hello_script("greet");
    let e = fx.refused(&fx.run("greet", &[]), 1, Kind::ConsentMissing);
    assert_eq!(e.field.as_deref(), Some("containment"));
    let argv = e.next_argv.expect("the command as an argument vector");
    assert_eq!(
        argv.last().map(String::as_str),
        Some("--allow-audit-plugin")
    );
    assert!(argv.contains(&"greet".to_owned()), "{argv:?}");
    assert_eq!(
        e.next.as_deref(),
        Some(cli::next::join(&os(&argv)).as_str())
    );
}

fn os(argv: &[String]) -> Vec<std::ffi::OsString> {
    argv.iter().map(Into::into).collect()
}

#[test]
fn the_other_consent_flag_is_consent_mismatch() {
    let fx = Fixture::new();
    fx.hello_script("greet");
    let out = fx.run("greet", &["--require-process-sandbox"]);
    fx.refused(&out, 1, Kind::ConsentMismatch);
}

#[test]
fn a_kernel_without_landlock_abi_3_is_process_unsupported() {
    let fx = Fixture::new();
    fx.hello("hello-p", Containment::Process);
    let out = fx
        .launch("hello-p", &["--require-process-sandbox"])
        .env("DOT_PRETEND_LANDLOCK_ABI", "2")
        .output()
        .unwrap();
    let e = fx.refused(&out, 1, Kind::ProcessUnsupported);
    assert_eq!(
        testkit::bare(e.next.as_deref()).as_deref(),
        Some("dot-sandbox probe")
    );
}

#[test]
fn no_runner_beside_dot_launch_is_sandbox_unusable() {
    let fx = Fixture::new();
    fx.hello("hello-p", Containment::Process);
    let alone = fx.launcher_beside(None);
    let out = fx
        .launch_with(alone, "hello-p", &["--require-process-sandbox"])
        .output()
        .unwrap();
    let e = fx.refused(&out, 1, Kind::SandboxUnusable);
    assert_eq!(
        e.path.as_deref(),
        fx.dir.join("bin/dot-sandbox").to_str(),
        "the runner it looked for"
    );
}

#[test]
fn a_runner_that_refuses_is_sandbox_refused_with_the_runners_kind() {
    let fx = Fixture::new();
    fx.hello("hello-p", Containment::Process);
    // The fixture plugin stands in for dot-sandbox: it reports a refusal of its own.
    let launcher = fx.launcher_beside(Some(&testkit::static_fixture("fixture-plugin")));
    let out = fx
        .launch_with(launcher, "hello-p", &["--require-process-sandbox"])
        .output()
        .unwrap();
    let e = fx.refused(&out, 1, Kind::SandboxRefused);
    let runner_kind: Kind = e.value.as_deref().unwrap().parse().unwrap();
    assert_eq!(runner_kind.exit_code(), proto::ExitCode::Refused);
    assert!(e.run.is_some());
}

#[test]
fn an_undeclared_input_is_input_undeclared() {
    let fx = Fixture::new();
    fx.hello_script("greet");
    let out = fx.run("greet", &["--allow-audit-plugin", "--input", "colour=red"]);
    let e = fx.refused(&out, 1, Kind::InputUndeclared);
    assert_eq!(e.value.as_deref(), Some("colour"));
}

#[test]
fn a_file_input_that_is_a_link_is_input_file_unsafe() {
    let fx = Fixture::new();
    fx.script("reader", &format!("echo '{OK}'"), |e| {
        e.inputs = vec![input("doc", InputKind::File, false)]
    });
    let link = fx.dir.join("link");
    std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
    let arg = format!("doc={}", link.display());
    let out = fx.run("reader", &["--allow-audit-plugin", "--input-file", &arg]);
    let e = fx.refused(&out, 1, Kind::InputFileUnsafe);
    assert_eq!(e.value.as_deref(), Some("doc"));
}

#[test]
fn an_entry_for_another_protocol_is_protocol_unsupported() {
    let fx = Fixture::new();
    fx.script("future", &format!("echo '{OK}'"), |e| {
        e.protocol = ">=2, <3".into()
    });
    let e = fx.refused(
        &fx.run("future", &["--allow-audit-plugin"]),
        1,
        Kind::ProtocolUnsupported,
    );
    assert_eq!(e.value.as_deref(), Some(">=2, <3"));
}

// ---- exit 2 ---------------------------------------------------------------------------------

#[test]
fn an_unknown_option_is_usage_with_help_as_next() {
    let fx = Fixture::new();
    let e = fx.refused(&fx.run("greet", &["--no-such-option"]), 2, Kind::Usage);
    // The program as it was run, which is how `--help` is reached.
    let program = cargo_bin!("dot-launch").to_str().unwrap().to_owned();
    assert_eq!(
        e.next.as_deref(),
        Some(format!("{program} --help").as_str())
    );
    assert_eq!(e.next_argv, Some(vec![program, "--help".to_owned()]));
}

#[test]
fn a_required_input_not_given_is_input_missing() {
    let fx = Fixture::new();
    fx.script("needy", &format!("echo '{OK}'"), |e| {
        e.inputs = vec![input("must", InputKind::String, true)]
    });
    let e = fx.refused(
        &fx.run("needy", &["--allow-audit-plugin"]),
        2,
        Kind::InputMissing,
    );
    assert_eq!(e.value.as_deref(), Some("must"));
}

#[test]
fn a_string_input_given_as_a_file_is_input_kind() {
    let fx = Fixture::new();
    fx.hello_script("greet");
    let out = fx.run(
        "greet",
        &["--allow-audit-plugin", "--input-file", "name=/etc/hostname"],
    );
    fx.refused(&out, 2, Kind::InputKind);
}

#[test]
fn an_input_given_twice_is_input_twice() {
    let fx = Fixture::new();
    fx.hello_script("greet");
    let args = [
        "--allow-audit-plugin",
        "--input",
        "name=a",
        "--input",
        "name=b",
    ];
    fx.refused(&fx.run("greet", &args), 2, Kind::InputTwice);
}

#[test]
fn an_input_without_equals_is_input_syntax() {
    let fx = Fixture::new();
    fx.hello_script("greet");
    let out = fx.run("greet", &["--allow-audit-plugin", "--input", "name"]);
    fx.refused(&out, 2, Kind::InputSyntax);
}

#[test]
fn a_missing_request_file_is_request_invalid() {
    let fx = Fixture::new();
    fx.hello_script("greet");
    let missing = fx.dir.join("request.json");
    let args = [
        "--allow-audit-plugin",
        "--request",
        missing.to_str().unwrap(),
    ];
    let e = fx.refused(&fx.run("greet", &args), 2, Kind::RequestInvalid);
    assert_eq!(e.path.as_deref(), missing.to_str());
}

#[test]
fn a_missing_target_is_target_invalid_with_the_mkdir_that_fixes_it() {
    let fx = Fixture::new();
    fx.hello_script("greet");
    let missing = fx.dir.join("no-such-dir");
    let out = fx
        .in_root(cargo_bin_cmd!("dot-launch"))
        .args(["greet", "--allow-audit-plugin", "--target"])
        .arg(&missing)
        .output()
        .unwrap();
    let e = fx.refused(&out, 2, Kind::TargetInvalid);
    assert_eq!(e.next, Some(format!("mkdir -p {}", missing.display())));
}

#[test]
fn recovering_an_unknown_run_is_no_such_run() {
    let fx = Fixture::new();
    let txid = "0123456789abcdef0123456789abcdef";
    let out = fx
        .in_root(cargo_bin_cmd!("dot-launch"))
        .args(["recover", txid])
        .output()
        .unwrap();
    let e = fx.refused(&out, 2, Kind::NoSuchRun);
    assert_eq!(e.value.as_deref(), Some(txid));
}

// ---- exit 3 ---------------------------------------------------------------------------------

#[test]
fn a_nonzero_exit_is_plugin_exit() {
    let fx = Fixture::new();
    fx.script("fails", "exit 3", |_| {});
    let run = fx.plugin_failed(
        &fx.run("fails", &["--allow-audit-plugin"]),
        Kind::PluginExit,
    );
    assert_eq!(run.exit.code, Some(3));
}

#[test]
fn a_plugin_killed_by_a_signal_is_plugin_signal() {
    let fx = Fixture::new();
    fx.script("killed", "kill -9 $$", |_| {});
    let out = fx.run("killed", &["--allow-audit-plugin"]);
    let run = fx.plugin_failed(&out, Kind::PluginSignal);
    assert_eq!(run.exit.signal, Some(9));
}

#[test]
fn a_plugin_still_running_at_its_deadline_is_deadline() {
    let fx = Fixture::new();
    fx.script("slow", "/bin/sleep 30", |_| {});
    let out = fx.run("slow", &["--allow-audit-plugin", "--deadline-ms", "300"]);
    fx.plugin_failed(&out, Kind::Deadline);
}

#[test]
fn too_much_stdout_is_stdout_limit() {
    let fx = Fixture::new();
    fx.script("chatty", &format!("echo '{OK}'"), |_| {});
    let out = fx.run("chatty", &["--allow-audit-plugin", "--max-stdout", "8"]);
    fx.plugin_failed(&out, Kind::StdoutLimit);
}

#[test]
fn too_much_stderr_is_stderr_limit() {
    let fx = Fixture::new();
    fx.script(
        "noisy",
        &format!("echo 'a warning, and more' >&2\necho '{OK}'"),
        |_| {},
    );
    let out = fx.run("noisy", &["--allow-audit-plugin", "--max-stderr", "8"]);
    fx.plugin_failed(&out, Kind::StderrLimit);
}

#[test]
fn stdout_that_is_not_one_response_is_plugin_protocol() {
    let fx = Fixture::new();
    fx.script("noise", &format!("echo noise\necho '{OK}'"), |_| {});
    fx.plugin_failed(
        &fx.run("noise", &["--allow-audit-plugin"]),
        Kind::PluginProtocol,
    );
}

#[test]
fn a_response_with_status_error_is_plugin_error_with_its_message() {
    let fx = Fixture::new();
    let answer = r#"{"protocol":"1.0","status":"error","message":"no such thing"}"#;
    fx.script("refuses", &format!("echo '{answer}'"), |_| {});
    let out = fx.run("refuses", &["--allow-audit-plugin"]);
    let run = fx.plugin_failed(&out, Kind::PluginError);
    assert_eq!(run.failure.as_deref(), Some("no such thing"));
    assert_eq!(
        run.response.unwrap().message.as_deref(),
        Some("no such thing")
    );
}

#[test]
fn an_output_named_but_not_written_is_outputs_invalid() {
    let fx = Fixture::new();
    fx.script("liar", &format!("echo '{OK}'"), |_| {});
    fx.plugin_failed(
        &fx.run("liar", &["--allow-audit-plugin"]),
        Kind::OutputsInvalid,
    );
}

#[test]
fn an_output_whose_name_is_a_directory_in_the_target_is_target_conflict() {
    let fx = Fixture::new();
    fx.hello_script("greet");
    std::fs::create_dir(fx.target.join("hello.txt")).unwrap();
    let out = fx.run("greet", &["--allow-audit-plugin"]);
    let e = assert_refused(&out, 3, Kind::TargetConflict);
    assert!(fx.target.join("hello.txt").is_dir(), "nothing replaced");
    assert_eq!(fx.runs(), Vec::<String>::new());
    assert_eq!(e.run.unwrap().status, RunStatus::Failed);
}

#[test]
fn a_runner_that_reports_nothing_is_sandbox_no_report() {
    let fx = Fixture::new();
    fx.hello("hello-p", Containment::Process);
    // hello stands in for dot-sandbox: it runs and answers, but never reports on descriptor 5.
    let launcher = fx.launcher_beside(Some(&testkit::static_fixture("hello")));
    let out = fx
        .launch_with(launcher, "hello-p", &["--require-process-sandbox"])
        .output()
        .unwrap();
    let run = fx.plugin_failed(&out, Kind::SandboxNoReport);
    assert_eq!(run.enforced, None);
}

// ---- exit 4 ---------------------------------------------------------------------------------

#[test]
fn a_failed_run_that_left_a_fifo_is_cleanup_retained_with_the_failure_as_value() {
    let fx = Fixture::new();
    fx.script("fifo", "/usr/bin/mkfifo out/fifo\nexit 1", |_| {});
    let out = fx.run("fifo", &["--allow-audit-plugin"]);
    let e = assert_refused(&out, 4, Kind::CleanupRetained);
    assert_eq!(e.value.as_deref(), Some("plugin-exit"));
    let runs = fx.runs();
    assert_eq!(runs.len(), 1, "the run directory stays for the operator");
    assert_eq!(
        e.path,
        Some(fx.root.txn().join(&runs[0]).display().to_string())
    );
}

#[test]
fn a_commit_whose_committed_record_fails_exits_4_with_a_run_retained_warning() {
    let fx = Fixture::new();
    fx.hello_script("greet");
    let out = fx
        .launch("greet", &["--allow-audit-plugin"])
        .env("DOT_INJECT", "append-committed")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let r: RunResult = testkit::decode_json(&out.stdout);
    assert_eq!(r.status, RunStatus::Committed);
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert_kind!(r.warnings[0], Kind::RunRetained);
    assert_eq!(std::fs::read(fx.target.join("hello.txt")).unwrap(), b"hi\n");
    assert_eq!(fx.runs().len(), 1, "PREPARED, for dot-launch recover");
}

// ---- exit 5 ---------------------------------------------------------------------------------

#[test]
fn a_journal_that_cannot_be_created_is_io_and_leaves_no_run_directory() {
    let fx = Fixture::new();
    fx.hello_script("greet");
    let out = fx
        .launch("greet", &["--allow-audit-plugin"])
        .env("DOT_INJECT", "create-journal")
        .output()
        .unwrap();
    fx.refused(&out, 5, Kind::Io);
}

#[test]
fn an_exec_after_the_lease_break_time_is_exec_unconfirmed() {
    let fx = Fixture::new();
    fx.hello("hello-a", Containment::Audit);
    let out = fx
        .launch("hello-a", &["--allow-audit-plugin"])
        .env("DOT_LEASE_BREAK_MS", "400")
        .env("DOT_SLEEP_BEFORE_SPAWN_MS", "600")
        .output()
        .unwrap();
    fx.refused(&out, 5, Kind::ExecUnconfirmed);
}
