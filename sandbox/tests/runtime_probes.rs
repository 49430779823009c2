//! The whole probe suite with a runtime directory bound into the run's private root
//! (`--runtime /usr`): a declared runtime adds read and execute beneath it and nothing else, so
//! every probe gives the outcome it gives without one, and the report names the runtime.

mod common;

use proto::canary::PROBES;
use proto::runner::SandboxReport;

#[test]
fn every_probe_gives_its_outcome_with_a_runtime_bound() {
    let canary = common::canary();
    let invocation = proto::runner::Invocation {
        runtime: vec!["/usr".parse().expect("dir")],
        ..sandbox::canary_invocation(common::limits(), None).expect("invocation")
    };
    let mut bad = Vec::new();
    for probe in PROBES {
        let (observed, run) = sandbox::run_probe_as(&common::runner(), &canary, probe, &invocation)
            .expect("harness runs");
        if !probe.confined.contains(&observed.as_str()) {
            bad.push(format!(
                "{}: expected {:?}, observed {observed}",
                probe.name, probe.confined
            ));
        }
        match run.sandbox_report() {
            Some(SandboxReport::Enforced(e)) => {
                if e.runtime != ["/usr"] || e.program.as_deref() != Some("static") {
                    bad.push(format!(
                        "{}: runtime {:?}, program {:?}",
                        probe.name, e.runtime, e.program
                    ));
                }
            }
            other => bad.push(format!("{}: report {other:?}", probe.name)),
        }
    }
    assert!(bad.is_empty(), "with --runtime /usr: {bad:#?}");
}
