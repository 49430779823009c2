//! The limits of a run: an entry declares them (a preset, fields over it), signed with the rest;
//! the invoker may lower them and is refused above them, before anything is created; the result
//! names the limit that stopped a run (`cpu-limit`, `file-size-limit`, distinct from
//! `plugin-signal`), and every run reports what it used. An entry without `limits` runs exactly
//! under the standard preset.

#![allow(clippy::unwrap_used)]

mod common;

use common::{failure, result, tool, Env, FIXTURE_INPUTS};
use proto::limits::{Limits, LIMITS};
use proto::result::RunResult;
use proto::runner::Rlimits;
use proto::{Entry, Kind};
use std::process::Output;
use testkit::{assert_kind, assert_refused, workspace_bin};

const MIB: u64 = 1 << 20;

/// `Env::new` with the fixture registered at `containment` as `name`, with `extra` options
/// (the limits it declares).
fn fixture(env: &Env, name: &str, containment: &str, extra: &[&str]) {
    let specs: Vec<String> = FIXTURE_INPUTS
        .iter()
        .map(|i| format!("{i}:string:optional"))
        .collect();
    let mut args: Vec<&str> = Vec::new();
    for spec in &specs {
        args.extend(["--input", spec.as_str()]);
    }
    args.extend_from_slice(extra);
    env.register_with(name, &workspace_bin("fixture-plugin"), containment, &args);
}

fn consent(containment: &str) -> &'static str {
    match containment {
        "process" => "--require-process-sandbox",
        _ => "--allow-audit-plugin",
    }
}

/// Launches `name` (at `containment`) in `mode`, with `extra` arguments.
fn run(env: &Env, name: &str, containment: &str, mode: &str, extra: &[&str]) -> Output {
    let mode = format!("mode={mode}");
    let mut args = vec![consent(containment), "--input", mode.as_str()];
    args.extend_from_slice(extra);
    env.launch(name, &args).output().unwrap()
}

fn entry(env: &Env, name: &str) -> Entry {
    Entry::parse(&std::fs::read(env.root.join(format!("plugins.d/{name}.json"))).unwrap()).unwrap()
}

/// The rlimits a runner reports for `limits`.
fn rlimits(l: &Limits) -> Rlimits {
    Rlimits {
        as_bytes: l.memory_bytes,
        cpu_seconds: l.cpu_budget(),
        cpu_hard_seconds: l.cpu_budget() + 1,
        fsize_bytes: l.output_bytes,
        nofile: l.descriptors,
        core: proto::runner::CORE_LIMIT,
        nproc: l.tasks,
        memlock_bytes: 0,
        sigpending: proto::runner::SIGPENDING,
    }
}

fn enforced(r: &RunResult) -> Rlimits {
    r.enforced.as_ref().expect("a process run reports").rlimits
}

#[test]
fn an_entry_without_limits_runs_under_the_standard_preset_as_before() {
    let env = Env::with_process_fixture();
    let bytes = std::fs::read_to_string(env.root.join("plugins.d/fixture-p.json")).unwrap();
    assert!(!bytes.contains("limits"), "no limits member: {bytes}");
    let r = result(&run(&env, "fixture-p", "process", "ok", &[]));
    assert_eq!(r.limits, Some(Limits::STANDARD));
    assert_eq!(enforced(&r), rlimits(&Limits::STANDARD));
    assert_eq!(
        (
            enforced(&r).as_bytes,
            enforced(&r).nofile,
            enforced(&r).nproc
        ),
        (1 << 30, 64, 256),
        "today's defaults"
    );
    assert_eq!(
        enforced(&r).cpu_seconds,
        30 * 256,
        "the deadline over every task"
    );
    let r = result(&run(&env, "fixture", "audit", "ok", &[]));
    assert_eq!(r.limits, Some(Limits::STANDARD));
}

#[test]
fn a_preset_and_fields_over_it_are_signed_applied_and_reported() {
    let env = Env::new();
    fixture(&env, "strict", "process", &["--preset", "strict"]);
    let r = result(&run(&env, "strict", "process", "ok", &[]));
    assert_eq!(r.limits, Some(Limits::STRICT));
    assert_eq!(enforced(&r), rlimits(&Limits::STRICT));
    assert_eq!(enforced(&r).as_bytes, 256 * MIB);

    fixture(
        &env,
        "tuned",
        "process",
        &[
            "--preset",
            "strict",
            "--max-cpu-seconds",
            "60",
            "--deadline-ms",
            "20000",
        ],
    );
    let declared = entry(&env, "tuned").limits.expect("declared");
    assert_eq!(
        declared.options(),
        vec![
            ("--preset", "strict".to_owned()),
            ("--max-cpu-seconds", "60".to_owned()),
            ("--deadline-ms", "20000".to_owned()),
        ]
    );
    let r = result(&run(&env, "tuned", "process", "ok", &[]));
    let tuned = Limits {
        cpu_seconds: Some(60),
        deadline_ms: 20_000,
        ..Limits::STRICT
    };
    assert_eq!(r.limits, Some(tuned));
    assert_eq!(enforced(&r), rlimits(&tuned));
}

#[test]
fn the_invoker_lowers_every_limit() {
    let env = Env::with_process_fixture();
    let lowered = [
        "--max-memory",
        "536870912",
        "--max-cpu-seconds",
        "5",
        "--max-tasks",
        "16",
        "--max-descriptors",
        "32",
        "--max-outputs",
        "4",
        "--max-output-bytes",
        "1048576",
        "--deadline-ms",
        "9000",
    ];
    let want = Limits {
        memory_bytes: 512 * MIB,
        cpu_seconds: Some(5),
        tasks: 16,
        descriptors: 32,
        outputs: 4,
        output_bytes: MIB,
        deadline_ms: 9_000,
    };
    let r = result(&run(&env, "fixture-p", "process", "ok", &lowered));
    assert_eq!(r.limits, Some(want));
    assert_eq!(enforced(&r), rlimits(&want));
    let r = result(&run(&env, "fixture", "audit", "ok", &lowered));
    assert_eq!(r.limits, Some(want));
    // One output more than the lowered count is refused at the commit, at audit too.
    let out = run(
        &env,
        "fixture",
        "audit",
        "many-outputs",
        &["--input", "size=5", "--max-outputs", "4"],
    );
    assert_kind!(failure(&out, 3), Kind::OutputsInvalid);
}

#[test]
fn the_invoker_may_not_raise_a_limit_and_nothing_is_created() {
    let env = Env::new();
    fixture(&env, "strict", "process", &["--preset", "strict"]);
    let entry_values = [256 * MIB, 10, 8, 32, 16, 8 * MIB, 10_000];
    for (limit, entry_value) in LIMITS.iter().zip(entry_values) {
        let asked = (entry_value + 1).to_string();
        let out = run(
            &env,
            "strict",
            "process",
            "ok",
            &["--input", "a=kept", limit.option, &asked],
        );
        let e = assert_refused(&out, 2, Kind::LimitAboveEntry);
        assert_eq!(e.field.as_deref(), Some(limit.option));
        assert_eq!(e.value.as_deref(), Some(asked.as_str()));
        assert!(
            e.message.contains(&format!("limit of {entry_value}")),
            "{e:?}"
        );
        let next = e.next.as_deref().unwrap();
        assert!(
            next.contains(&format!("{} {entry_value}", limit.option)),
            "{next}"
        );
        assert!(next.contains("a=kept"), "every argument kept: {next}");
        let argv = e.next_argv.expect("runnable as printed");
        let at: Vec<usize> = (0..argv.len())
            .filter(|i| argv[*i] == limit.option)
            .collect();
        assert_eq!(at.len(), 1, "{argv:?}");
        assert_eq!(argv[at[0] + 1], entry_value.to_string(), "{argv:?}");
    }
    assert_eq!(env.runs(), Vec::<String>::new(), "no run directory");
    assert_eq!(env.target_files(), Vec::<String>::new());
    // A standard entry's CPU budget is the deadline over every task: above it is refused too.
    let env = Env::with_process_fixture();
    let out = run(
        &env,
        "fixture-p",
        "process",
        "ok",
        &["--max-cpu-seconds", "7681"],
    );
    assert_refused(&out, 2, Kind::LimitAboveEntry);
}

#[test]
fn a_limit_below_its_smallest_value_is_a_usage_error() {
    let env = Env::with_process_fixture();
    for (option, value) in [
        ("--max-descriptors", "15"),
        ("--max-tasks", "0"),
        ("--deadline-ms", "0"),
        ("--max-memory", "4096"),
    ] {
        let out = run(&env, "fixture-p", "process", "ok", &[option, value]);
        let e = assert_refused(&out, 2, Kind::Usage);
        assert!(e.message.contains(option), "{e:?}");
    }
}

#[test]
fn a_declared_limit_out_of_range_is_a_malformed_entry() {
    let env = Env::new();
    for (option, value, field) in [
        ("--max-cpu-seconds", "0", "limits.cpu_seconds"),
        ("--max-memory", "1024", "limits.memory_bytes"),
        ("--max-descriptors", "1000000", "limits.descriptors"),
    ] {
        let out = tool("dot-register")
            .args(["dev", "--root"])
            .arg(&env.root)
            .args(["--name", "bad", "--exe"])
            .arg(workspace_bin("fixture-plugin"))
            .args(["--containment", "process", option, value])
            .output()
            .unwrap();
        let e = assert_refused(&out, 2, Kind::EntryMalformed);
        assert_eq!(e.field.as_deref(), Some(field), "{e:?}");
        assert_eq!(e.value.as_deref(), Some(value), "{e:?}");
    }
    assert!(!env.root.join("plugins.d/bad.json").exists());
}

#[test]
fn replacing_an_entry_with_a_higher_limit_needs_consent_and_a_lower_one_does_not() {
    let env = Env::new();
    fixture(&env, "p", "process", &["--preset", "strict"]);
    let replace = |extra: &[&str]| {
        let mut args = vec!["--replace"];
        args.extend_from_slice(extra);
        let mut c = tool("dot-register");
        c.args(["dev", "--root"])
            .arg(&env.root)
            .args(["--name", "p", "--exe"])
            .arg(workspace_bin("fixture-plugin"))
            .args(["--containment", "process"]);
        for i in FIXTURE_INPUTS {
            c.args(["--input", &format!("{i}:string:optional")]);
        }
        c.args(&args).output().unwrap()
    };
    let out = replace(&["--preset", "strict", "--max-tasks", "9"]);
    let e = assert_refused(&out, 1, Kind::ChangesNeedConsent);
    let changes = e.changes.expect("the difference");
    assert_eq!(
        changes.limits_raised,
        vec![proto::trust::RaisedLimit {
            limit: "tasks".into(),
            from: 8,
            to: 9
        }]
    );
    assert_eq!(entry(&env, "p").run_limits(), Limits::STRICT, "unchanged");
    let token = e.value.expect("token");
    common::ok(
        replace(&[
            "--preset",
            "strict",
            "--max-tasks",
            "9",
            "--accept-changes",
            &token,
        ]),
        "accepted",
    );
    assert_eq!(entry(&env, "p").run_limits().tasks, 9);
    common::ok(
        replace(&["--preset", "strict", "--max-tasks", "4"]),
        "lowering needs no consent",
    );
    assert_eq!(entry(&env, "p").run_limits().tasks, 4);
}

#[test]
fn entry_new_prints_the_declared_limits_to_sign() {
    let out = tool("dot-register")
        .args(["entry", "new", "--name", "small", "--exe"])
        .arg(workspace_bin("fixture-plugin"))
        .args([
            "--publisher",
            "acme",
            "--containment",
            "process",
            "--version",
            "1.0.0",
            "--preset",
            "strict",
            "--max-output-bytes",
            "1048576",
        ])
        .output()
        .unwrap();
    let out = common::ok(out, "entry new");
    let e = Entry::parse(&out.stdout).unwrap();
    assert_eq!(
        e.run_limits(),
        Limits {
            output_bytes: MIB,
            ..Limits::STRICT
        }
    );
}

#[test]
fn two_spinning_threads_get_the_whole_deadline() {
    // Before, the CPU limit was the deadline plus one second for every thread together: two
    // threads spinning 4 s under a 6 s deadline reached it (7 s) at 3.5 s, if both had a CPU.
    let env = Env::with_process_fixture();
    let out = run(
        &env,
        "fixture-p",
        "process",
        "spin",
        &[
            "--input",
            "a=2",
            "--input",
            "size=4000",
            "--deadline-ms",
            "6000",
        ],
    );
    let r = result(&out);
    assert_eq!(enforced(&r).cpu_seconds, 6 * 256);
    assert!(r.usage.expect("usage").cpu_us > 0);
    assert_eq!(
        std::fs::read_to_string(env.target.join("result.txt")).unwrap(),
        "spun 2\n"
    );
}

#[test]
fn the_cpu_limit_names_itself_whether_the_entry_or_the_invoker_set_it() {
    let env = Env::with_process_fixture();
    fixture(&env, "cpu1", "process", &["--max-cpu-seconds", "1"]);
    for (name, extra) in [
        ("cpu1", vec!["--input", "a=2"]),
        ("fixture-p", vec!["--max-cpu-seconds", "1"]),
    ] {
        let out = run(&env, name, "process", "spin", &extra);
        let e = failure(&out, 3);
        assert_kind!(e, Kind::CpuLimit, "{name}");
        let run = e.run.expect("the run");
        assert_eq!(run.exit.signal, Some(nix::libc::SIGXCPU), "{name}");
        // The kernel checks the limit on its ticks; the scheduler's exact count can be lower
        // (12% was seen on a loaded machine): only a loose bound.
        assert!(
            run.usage.expect("usage").cpu_us >= 500_000,
            "{name}: {run:?}"
        );
        assert!(e.message.contains("CPU limit of 1 s"), "{}", e.message);
    }
    assert_eq!(env.runs(), Vec::<String>::new());
}

#[test]
fn the_file_size_limit_names_itself_at_process() {
    let env = Env::new();
    fixture(&env, "small-p", "process", &["--max-output-bytes", "4096"]);
    fixture(&env, "small", "audit", &["--max-output-bytes", "4096"]);
    let big = ["--input", "size=10000"];
    let e = failure(&run(&env, "small-p", "process", "big-output", &big), 3);
    assert_kind!(e, Kind::FileSizeLimit);
    assert_eq!(
        e.run.expect("the run").exit.signal,
        Some(nix::libc::SIGXFSZ)
    );
    // At audit no file-size limit is set: the commit refuses the outputs instead.
    let e = failure(&run(&env, "small", "audit", "big-output", &big), 3);
    assert_kind!(e, Kind::OutputsInvalid);
    assert_eq!(env.target_files(), Vec::<String>::new());
}

#[test]
fn a_signal_that_is_no_limit_stays_plugin_signal() {
    let env = Env::with_process_fixture();
    for (name, containment) in [("fixture-p", "process"), ("fixture", "audit")] {
        let e = failure(&run(&env, name, containment, "signal", &[]), 3);
        assert_kind!(e, Kind::PluginSignal, "{containment}");
        assert!(e.run.expect("the run").usage.is_some());
    }
}

#[test]
fn every_run_reports_its_usage() {
    let env = Env::with_process_fixture();
    for (name, containment) in [("fixture-p", "process"), ("fixture", "audit")] {
        let r = result(&run(&env, name, containment, "ok", &[]));
        let u = r.usage.expect("usage on success");
        assert_eq!(u.cpu_us, u.user_us + u.system_us);
        assert!(u.peak_rss_kib > 0, "{containment}: {u:?}");
        let e = failure(&run(&env, name, containment, "exit-3", &[]), 3);
        assert_kind!(e, Kind::PluginExit, "{containment}");
        assert!(e.run.expect("the run").usage.is_some(), "{containment}");
        // A plugin stopped at its deadline was still measured.
        let e = failure(
            &run(&env, name, containment, "sleep", &["--deadline-ms", "300"]),
            3,
        );
        assert_kind!(e, Kind::Deadline, "{containment}");
        assert!(e.run.expect("the run").usage.is_some(), "{containment}");
    }
    // Memory a plugin touches shows in its peak resident set.
    let r = result(&run(
        &env,
        "fixture-p",
        "process",
        "alloc",
        &["--input", "size=67108864"],
    ));
    assert!(r.usage.expect("usage").peak_rss_kib >= 64 * 1024, "{r:?}");
}
