//! The plugin's environment: exactly the variables the invoker gives (`dot-launch --env
//! NAME=VALUE`) for names its entry declares (`dot-register … --env NAME`), nothing inherited; none
//! by default. Declaring a name is signed with the entry and adding one is a widening.
#![allow(clippy::unwrap_used)]

mod common;

use common::{failure, result, tool, Env};
use proto::explain::Explanation;
use proto::Kind;
use testkit::{assert_refused, workspace_bin};

/// `Env::new` with the fixture also registered (at audit) as `fx-env`, declaring `RUST_BACKTRACE`.
fn env_with_declared() -> Env {
    let env = Env::new();
    env.register_with(
        "fx-env",
        &workspace_bin("fixture-plugin"),
        "audit",
        &["--input", "mode:string:optional", "--env", "RUST_BACKTRACE"],
    );
    env
}

/// Launches `name` in mode `env` with `extra`, with variables in dot-launch's own environment that
/// must not reach the plugin.
fn launch_env(env: &Env, name: &str, extra: &[&str]) -> std::process::Output {
    env.launch(name, &["--allow-audit-plugin", "--input", "mode=env"])
        .args(extra)
        .env("LEAK_ME", "inherited")
        .env("RUST_BACKTRACE", "full")
        .output()
        .unwrap()
}

/// What the fixture wrote of its environment (`"NAME"="VALUE"` lines).
fn plugin_env(env: &Env) -> String {
    std::fs::read_to_string(env.target.join("result.txt")).unwrap()
}

#[test]
fn a_declared_name_given_a_value_is_the_plugins_whole_environment() {
    let env = env_with_declared();
    result(&launch_env(&env, "fx-env", &["--env", "RUST_BACKTRACE=1"]));
    assert_eq!(plugin_env(&env), r#""RUST_BACKTRACE"="1""#);
}

/// Under `process` too: the runner executes the plugin with exactly the variables given.
#[test]
fn under_process_the_declared_variables_given_are_the_whole_environment() {
    let env = Env::new();
    env.register_with(
        "fx-env-p",
        &workspace_bin("fixture-plugin"),
        "process",
        &[
            "--input",
            "mode:string:optional",
            "--env",
            "RUST_BACKTRACE",
            "--env",
            "APP_MODE",
        ],
    );
    let out = env
        .launch(
            "fx-env-p",
            &["--require-process-sandbox", "--input", "mode=env"],
        )
        .args(["--env", "RUST_BACKTRACE=1", "--env", "APP_MODE=a=b c"])
        .env("LEAK_ME", "inherited")
        .output()
        .unwrap();
    result(&out);
    assert_eq!(
        plugin_env(&env),
        "\"RUST_BACKTRACE\"=\"1\"\n\"APP_MODE\"=\"a=b c\""
    );
    let out = env
        .launch(
            "fx-env-p",
            &["--require-process-sandbox", "--input", "mode=env"],
        )
        .output()
        .unwrap();
    result(&out);
    assert_eq!(plugin_env(&env), "");
}

#[test]
fn without_env_the_plugin_gets_none_even_for_a_declared_name() {
    let env = env_with_declared();
    result(&launch_env(&env, "fx-env", &[]));
    assert_eq!(plugin_env(&env), "");
}

#[test]
fn a_name_the_entry_does_not_declare_is_refused_before_anything_runs() {
    let env = env_with_declared();
    for (name, arg) in [
        ("fx-env", "RUST_LOG=debug"),
        ("fixture", "RUST_BACKTRACE=1"),
    ] {
        let out = launch_env(&env, name, &["--env", arg]);
        let e = assert_refused(&out, 1, Kind::EnvUndeclared);
        assert_eq!(e.field.as_deref(), Some("env"));
        let shown = arg.split('=').next().unwrap();
        assert_eq!(e.value.as_deref(), Some(shown));
        assert!(
            !e.message.contains("debug"),
            "no value echoed: {}",
            e.message
        );
        assert_eq!(env.runs(), Vec::<String>::new(), "nothing created");
    }
    assert!(!env.target.join("result.txt").exists());
}

#[test]
fn a_malformed_repeated_or_denied_variable_is_a_usage_error() {
    let env = env_with_declared();
    for args in [
        &["--env", "RUST_BACKTRACE"][..],
        &["--env", "RUST_BACKTRACE=1", "--env", "RUST_BACKTRACE=0"],
        &["--env", "LD_PRELOAD=/tmp/x.so"],
        &["--env", "rust_backtrace=1"],
    ] {
        let out = launch_env(&env, "fx-env", args);
        let e = assert_refused(&out, 2, Kind::EnvInvalid);
        assert_eq!(e.field.as_deref(), Some("env"), "{args:?}");
        assert!(!e.message.contains("/tmp/x.so"), "{}", e.message);
    }
}

#[test]
fn explain_names_the_variables_given_and_not_their_values() {
    let env = env_with_declared();
    let out = launch_env(
        &env,
        "fx-env",
        &["--env", "RUST_BACKTRACE=secret-ish", "--explain"],
    );
    let e: Explanation = testkit::decode_json(&common::ok(out.clone(), "explain").stdout);
    assert_eq!(e.env, vec!["RUST_BACKTRACE".to_owned()]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("secret-ish"));
}

#[test]
fn declaring_a_loader_or_interpreter_variable_is_refused_at_registration() {
    let env = Env::new();
    for name in ["LD_PRELOAD", "PYTHONPATH", "PATH", "BASH_ENV", "lower"] {
        let out = tool("dot-register")
            .args(["dev", "--root"])
            .arg(&env.root)
            .args(["--name", "bad", "--exe"])
            .arg(workspace_bin("hello"))
            .args(["--containment", "audit", "--env", name])
            .output()
            .unwrap();
        let e = failure(&out, 2);
        testkit::assert_kind!(e, Kind::Usage, "{name}");
        assert!(e.message.contains(name), "{name}: {}", e.message);
    }
    assert!(!env.root.join("plugins.d/bad.json").exists());
}

#[test]
fn adding_a_name_on_replace_is_a_widening_that_needs_consent() {
    let env = env_with_declared();
    let out = tool("dot-register")
        .args(["dev", "--root"])
        .arg(&env.root)
        .args(["--name", "fx-env", "--exe"])
        .arg(workspace_bin("fixture-plugin"))
        .args([
            "--containment",
            "audit",
            "--input",
            "mode:string:optional",
            "--env",
            "RUST_BACKTRACE",
            "--env",
            "RUST_LOG",
            "--replace",
        ])
        .output()
        .unwrap();
    let e = assert_refused(&out, 1, Kind::ChangesNeedConsent);
    let changes = e.changes.expect("the change");
    let added: Vec<&str> = changes.env_added.iter().map(|n| n.as_str()).collect();
    assert_eq!(added, ["RUST_LOG"]);
    assert!(changes.inputs_added.is_empty() && changes.runtime_added.is_empty());
    let entry = std::fs::read_to_string(env.root.join("plugins.d/fx-env.json")).unwrap();
    assert!(!entry.contains("RUST_LOG"), "the entry is unchanged");
}
