//! Script plugins at `audit`: an entry registered with `--allow-dynamic` whose executable is a
//! script runs, its interpreter reading the sealed script through descriptor 3; the run says its
//! dependencies are `unpinned`. `process` keeps refusing scripts.

#![allow(clippy::unwrap_used)]

mod common;

use common::{result, Env};
use proto::trust::Dependencies;
use proto::Kind;

/// A Python plugin: reads the request, writes `out/greeting.txt`, answers with it.
const PYTHON_PLUGIN: &str = r#"#!/usr/bin/python3 -I
import json, os, sys
request = json.load(sys.stdin)
name = request["inputs"].get("name", "world")
with open("out/greeting.txt", "w") as f:
    f.write(f"hi {name} from python, fds {sorted(int(d) for d in os.listdir('/proc/self/fd'))}\n")
print(json.dumps({"protocol": "1.0", "status": "ok", "outputs": ["greeting.txt"]}))
"#;

#[test]
fn a_python_plugin_runs_at_audit_end_to_end() {
    common::require_program("python3", "python3");
    let env = Env::new();
    let script = testkit::write_exe(env.dir.path(), "greet.py", PYTHON_PLUGIN.as_bytes(), 0o755);
    env.register_with(
        "greet",
        &script,
        "audit",
        &["--allow-dynamic", "--input", "name:string:optional"],
    );
    let out = env
        .launch("greet", &["--allow-audit-plugin", "--input", "name=ada"])
        .output()
        .unwrap();
    let r = result(&out);
    assert_eq!(r.dependencies, Dependencies::Unpinned);
    assert_eq!(r.outputs.len(), 1);
    let text = std::fs::read_to_string(env.target.join("greeting.txt")).unwrap();
    // Descriptor 3 is the script itself (the listing's own descriptor is the fourth).
    assert!(
        text.starts_with("hi ada from python, fds [0, 1, 2, 3"),
        "{text}"
    );
}

#[test]
fn a_script_cannot_be_registered_for_process() {
    let env = Env::new();
    let script = testkit::write_exe(env.dir.path(), "greet.py", PYTHON_PLUGIN.as_bytes(), 0o755);
    for extra in [&[][..], &["--allow-dynamic"][..]] {
        let out = common::tool("dot-register")
            .args(["dev", "--root"])
            .arg(&env.root)
            .args(["--name", "greet", "--containment", "process", "--exe"])
            .arg(&script)
            .args(extra)
            .output()
            .unwrap();
        let e = testkit::assert_refused(&out, 1, Kind::NotStaticElf);
        assert!(e.message.contains("script"), "{}", e.message);
    }
}
