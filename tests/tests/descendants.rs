//! Descendants never outlive the run: delayed children (some in their own session) are killed with
//! the group whatever the outcome, and a thousand short-lived children leave no zombie behind.

#![allow(clippy::unwrap_used)]

mod common;

use common::{failure, processes_under, result, stat_state_ppid, Env};
use std::path::Path;
use std::time::Duration;

/// Opens the FIFO for writing without blocking forever (children may all be dead: then nobody
/// reads and the open would block), writes one byte to release any reader, closes.
fn release(fifo: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(fifo);
    if let Ok(mut f) = f {
        let _ = std::io::Write::write_all(&mut f, b"go");
    }
}

fn delayed_children(then: &str, expect_code: i32) {
    let env = Env::new();
    let fifo = env.dir.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o666)).unwrap();
    let marker = env.dir.join("marker");
    let out = env.fixture(
        "delayed-children",
        &[
            ("fifo", &fifo.display().to_string()),
            ("marker", &marker.display().to_string()),
            ("then", then),
        ],
        &["--deadline-ms", "3000"],
    );
    if expect_code == 0 {
        result(&out);
    } else {
        failure(&out, expect_code);
    }
    // dot-launch has returned: release the children (if any were alive they would now write).
    release(&fifo);
    std::thread::sleep(Duration::from_millis(300));
    release(&fifo);
    std::thread::sleep(Duration::from_millis(200));
    assert!(!marker.exists(), "a descendant outlived the run ({then})");
}

#[test]
fn delayed_descendants_die_with_a_successful_run() {
    delayed_children("ok", 0);
}

#[test]
fn delayed_descendants_die_with_a_malformed_run() {
    delayed_children("malformed", 3);
}

#[test]
fn delayed_descendants_die_with_a_timed_out_run() {
    delayed_children("hang", 3);
}

#[test]
fn a_thousand_short_lived_children_leave_nothing_behind() {
    let env = Env::new();
    let out = env.fixture("many-exits", &[], &["--deadline-ms", "20000"]);
    let r = result(&out);
    assert_eq!(
        std::fs::read_to_string(env.target.join("result.txt")).unwrap(),
        "1000\n"
    );
    assert_eq!(r.exit.code, Some(0));
    // dot-launch is gone; none of its descendants may remain. The plugin and its children run the
    // pinned copy in the root's store (exec'd through /proc/self/fd), so they are found by that
    // path, not by the fixture's name.
    let left = processes_under(&env.root);
    assert!(left.is_empty(), "a fixture process survived: {left:?}");
}

/// The children of `pid`, from /proc.
fn children_of(pid: u32) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(p) = name.parse::<u32>() else { continue };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        if stat_state_ppid(&stat).is_some_and(|(_, ppid)| ppid == pid) {
            v.push(p);
        }
    }
    v
}

fn gone_or_zombie(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => stat_state_ppid(&s).is_some_and(|(state, _)| state == 'Z'),
    }
}

fn killing_the_launcher_kills_the_plugin(containment: &str, consent: &str) {
    let env = Env::new();
    env.register(
        "sleeper",
        &testkit::workspace_bin("fixture-plugin"),
        containment,
        &["mode"],
    );
    let mut launcher = env
        .launch("sleeper", &[consent, "--input", "mode=sleep"])
        .spawn()
        .unwrap();
    let mut plugin = Vec::new();
    for _ in 0..5000 {
        plugin = children_of(launcher.id());
        if !plugin.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(plugin.len(), 1, "dot-launch started one plugin process");
    // Let the runner finish confining and exec the plugin.
    std::thread::sleep(Duration::from_millis(200));
    assert!(!gone_or_zombie(plugin[0]), "the plugin is running");
    launcher.kill().unwrap();
    launcher.wait().unwrap();
    let mut dead = false;
    for _ in 0..2000 {
        if gone_or_zombie(plugin[0]) {
            dead = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        dead,
        "the plugin outlived a SIGKILLed dot-launch ({containment})"
    );
}

#[test]
fn sigkilled_launcher_takes_an_audit_plugin_with_it() {
    killing_the_launcher_kills_the_plugin("audit", "--allow-audit-plugin");
}

#[test]
fn sigkilled_launcher_takes_a_process_plugin_with_it() {
    killing_the_launcher_kills_the_plugin("process", "--require-process-sandbox");
}
