//! The whole probe suite once per Landlock ABI that `process` supports (3 to 7), with the runner
//! building its ruleset as it would on a kernel of that ABI (`--landlock-abi`): what is left out
//! below 4 (TCP rules) and below 6 (the signal and abstract-unix scopes) must not let any probe
//! through, and the report must say what was applied.

mod common;

use common::{request, Mode};
use proto::canary::PROBES;
use proto::runner::SandboxReport;
use proto::{ErrorObject, Kind};

fn kernel_abi() -> u32 {
    probe::probe().landlock_abi
}

fn suite_at(abi: u32) {
    let applied = abi.min(kernel_abi());
    let canary = common::canary();
    let mut bad = Vec::new();
    for probe in PROBES {
        let (observed, run) = common::run_probe(&canary, probe, Mode::Confined, Some(abi));
        if !probe.confined.contains(&observed.as_str()) {
            bad.push(format!(
                "{}: expected {:?}, observed {observed}",
                probe.name, probe.confined
            ));
        }
        match run.sandbox_report() {
            Some(SandboxReport::Enforced(e)) => {
                let seen = (
                    e.landlock_abi,
                    e.landlock_net,
                    e.landlock_scopes,
                    e.landlock_status.as_str(),
                );
                let want = (applied, applied >= 4, applied >= 6, "fully-enforced");
                if seen != want {
                    bad.push(format!("{}: report {seen:?}, want {want:?}", probe.name));
                }
            }
            other => bad.push(format!("{}: report {other:?}", probe.name)),
        }
    }
    assert!(bad.is_empty(), "at Landlock ABI {abi}: {bad:#?}");
}

#[test]
fn every_probe_is_denied_at_landlock_abi_3() {
    suite_at(3);
}

#[test]
fn every_probe_is_denied_at_landlock_abi_4() {
    suite_at(4);
}

#[test]
fn every_probe_is_denied_at_landlock_abi_5() {
    suite_at(5);
}

#[test]
fn every_probe_is_denied_at_landlock_abi_6() {
    suite_at(6);
}

#[test]
fn every_probe_is_denied_at_landlock_abi_7() {
    suite_at(7);
}

/// A cap below 3 is refused like a kernel without ABI 3, before the plugin runs.
#[test]
fn a_landlock_abi_below_3_is_refused_before_the_plugin_runs() {
    let request = request("write-in-stage");
    for abi in [0, 2] {
        let (run, scratch) =
            common::launch_at_abi(&common::canary(), &request, common::limits(), abi);
        assert_eq!(run.status.code(), Some(1));
        match run.sandbox_report() {
            Some(SandboxReport::Error(e)) => {
                testkit::assert_kind!(e, Kind::LandlockUnsupported);
                assert_eq!(e.value.as_deref(), Some(abi.to_string().as_str()));
            }
            other => panic!("expected an error report, got {other:?}"),
        }
        let err: ErrorObject =
            serde_json::from_slice(run.stderr.trim_ascii_end()).expect("stderr error object");
        testkit::assert_kind!(err, Kind::LandlockUnsupported);
        assert!(run.stdout.is_empty(), "the plugin ran");
        assert!(!scratch.stage.join("out/written.txt").exists());
    }
}

/// A cap above the kernel's changes nothing: the report shows the kernel's ABI.
#[test]
fn a_landlock_abi_above_the_kernels_is_the_kernels() {
    let (run, _scratch) = common::launch_at_abi(
        &common::canary(),
        &request("kill-self"),
        common::limits(),
        99,
    );
    assert!(run.status.success());
    let Some(SandboxReport::Enforced(e)) = run.sandbox_report() else {
        panic!("no enforced report");
    };
    assert_eq!(e.landlock_abi, kernel_abi());
}
