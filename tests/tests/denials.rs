//! `dot-launch --report-denials`: the system calls the seccomp filter refused, in the result; the
//! refusals themselves (the plugin's errno) the same as without the flag.

mod common;

use common::{failure, result, Env};
use proto::Kind;

/// What the fixture's `denied` mode observed: one line per call, its errno (`1` is `EPERM`).
const REFUSED: &str = "socket 1\nsocket 1\nsocket 1\nsetsid 1\n";

fn denied(env: &Env, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["--require-process-sandbox", "--input", "mode=denied"];
    args.extend_from_slice(extra);
    env.launch("fixture-p", &args).output().expect("dot-launch")
}

#[test]
fn the_refused_calls_are_counted_and_still_refused_with_eperm() {
    let env = Env::with_process_fixture();
    let with = result(&denied(&env, &["--report-denials"]));
    let committed = std::fs::read_to_string(env.target.join("result.txt")).unwrap();
    assert_eq!(committed, REFUSED, "the plugin saw EPERM for each");
    let denials = with.denials.expect("denials counted");
    let by_name = |name: &str| denials.iter().find(|d| d.syscall == name);
    let socket = by_name("socket").expect("socket counted");
    assert_eq!((socket.nr, socket.count), (41, 3), "{denials:?}");
    let setsid = by_name("setsid").expect("setsid counted");
    assert_eq!((setsid.nr, setsid.count), (112, 1), "{denials:?}");
    let nrs: Vec<i32> = denials.iter().map(|d| d.nr).collect();
    let mut sorted = nrs.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(nrs, sorted, "one entry per number, in order");
    let notifying = with.enforced.expect("enforced").seccomp_policy_sha256;

    // Without the flag: the same refusals, no `denials`, the plain policy.
    std::fs::remove_file(env.target.join("result.txt")).unwrap();
    let without = result(&denied(&env, &[]));
    assert_eq!(
        std::fs::read_to_string(env.target.join("result.txt")).unwrap(),
        REFUSED
    );
    assert_eq!(without.denials, None);
    let plain = without.enforced.expect("enforced").seccomp_policy_sha256;
    assert_eq!(Some(plain), sandbox::policy_sha256(false).ok());
    assert_ne!(plain, notifying, "the notifying variant has its own digest");
}

/// A plugin that is refused nothing gets an empty list, not an absent one.
#[test]
fn a_run_without_refusals_says_so() {
    let env = Env::with_process_fixture();
    let out = env
        .launch(
            "fixture-p",
            &[
                "--require-process-sandbox",
                "--input",
                "mode=ok",
                "--report-denials",
            ],
        )
        .output()
        .unwrap();
    let r = result(&out);
    let denials = r.denials.expect("denials counted");
    assert!(
        !denials.iter().any(|d| d.syscall == "socket"),
        "{denials:?}"
    );
}

/// An `audit` plugin has no filter to report on: a usage error, nothing run.
#[test]
fn an_audit_entry_refuses_the_flag() {
    let env = Env::new();
    let out = env
        .launch(
            "fixture",
            &[
                "--allow-audit-plugin",
                "--input",
                "mode=ok",
                "--report-denials",
            ],
        )
        .output()
        .unwrap();
    let e = failure(&out, 2);
    testkit::assert_kind!(e, Kind::Usage, "{}", e.message);
    assert!(e.message.contains("needs a process entry"), "{}", e.message);
    assert_eq!(env.target_files(), Vec::<String>::new());
}
