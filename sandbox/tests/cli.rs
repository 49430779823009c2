//! `dot-sandbox probe` and the command line.

mod common;

use assert_cmd::cargo::cargo_bin_cmd;
use proto::probe::Probe;
use proto::runner::IdentityKind;
use proto::Kind;
use sandbox::ProveReport;

#[test]
fn probe_reports_this_kernel() {
    let out = cargo_bin_cmd!("dot-sandbox")
        .arg("probe")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let p: Probe = serde_json::from_slice(&out.stdout).expect("probe json");
    assert_eq!(p.arch, std::env::consts::ARCH);
    assert_eq!(p.process_enforceable, p.why_not.is_none());
    let identity_possible = p.identity == IdentityKind::PerRunUid || p.user_namespaces;
    assert_eq!(
        p.process_enforceable,
        p.landlock_abi >= 3 && p.seccomp && p.no_new_privs && identity_possible
    );
    assert_eq!(p, probe::probe(), "the command prints the library's probe");
}

#[test]
fn prove_sees_every_expected_denial() {
    common::canary_path();
    let out = cargo_bin_cmd!("dot-sandbox")
        .args(["probe", "--prove"])
        .output()
        .expect("run");
    let report: ProveReport = serde_json::from_slice(&out.stdout).expect("report json");
    let bad: Vec<_> = report.probes.iter().filter(|p| !p.ok).collect();
    assert!(bad.is_empty(), "{bad:#?}");
    assert!(report.ok);
    assert_eq!(report.probes.len(), proto::canary::PROBES.len());
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn probe_reports_a_lowered_landlock_abi() {
    let kernel = probe::probe().landlock_abi;
    let probe_at = |abi: &str| -> Probe {
        let out = cargo_bin_cmd!("dot-sandbox")
            .args(["probe", "--landlock-abi", abi])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(0));
        serde_json::from_slice(&out.stdout).expect("probe json")
    };
    let p = probe_at("4");
    assert_eq!(p.landlock_abi, kernel.min(4));
    assert_eq!(p.process_enforceable, kernel >= 3);
    let p = probe_at("2");
    assert_eq!(p.landlock_abi, kernel.min(2));
    assert!(!p.process_enforceable);
    assert!(p.why_not.is_some_and(|w| w.contains("Landlock ABI")));
}

#[test]
fn prove_at_a_lowered_landlock_abi_still_sees_the_signal_route_denied() {
    common::canary_path();
    let out = cargo_bin_cmd!("dot-sandbox")
        .args(["probe", "--prove", "--landlock-abi", "3"])
        .args(["--only", "fsetown-parent", "--only", "sigio-sigkill"])
        .output()
        .expect("run");
    let report: ProveReport = serde_json::from_slice(&out.stdout).expect("report json");
    assert_eq!(report.probes.len(), 2);
    assert!(report.ok, "{report:?}");
    assert!(report.probes.iter().all(|p| p.observed == "errno:EPERM"));
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn prove_refuses_an_unknown_probe() {
    common::canary_path();
    let out = cargo_bin_cmd!("dot-sandbox")
        .args(["probe", "--prove", "--only", "no-such-probe"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err: proto::ErrorObject =
        serde_json::from_slice(out.stderr.trim_ascii_end()).expect("error");
    testkit::assert_kind!(err, Kind::UnknownProbe);
}

#[test]
fn exec_without_arguments_is_a_usage_error() {
    let out = cargo_bin_cmd!("dot-sandbox")
        .arg("exec")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err: proto::ErrorObject =
        serde_json::from_slice(out.stderr.trim_ascii_end()).expect("error");
    testkit::assert_kind!(err, Kind::Usage);
}

#[test]
fn help_exits_zero() {
    let out = cargo_bin_cmd!("dot-sandbox")
        .arg("--help")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("probe"));
}
