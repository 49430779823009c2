//! What keeps the executable the launch verified from changing until it is executed: a read lease
//! on the pinned copy while it is young enough, a sealed private copy otherwise, and one retry from
//! a sealed copy when the exec found a writer waiting for the lease.

use crate::inputs::Inputs;
use crate::{exec, hooks, LaunchError};
use std::path::Path;

/// Runs the plugin (`exec::run`, started in `workdir`) with what pins its executable. A leased
/// executable whose exec was refused because a would-be writer was waiting for the lease is sealed
/// into a private copy (the lease still held, the writer still waiting) and run again, once.
/// `early` is a runner the launch started before the run directory existed ([`start_early`]): it
/// gets its go now, unless its lease is too old by now (then it is dropped, and the run starts
/// from a sealed copy as any run with an old lease).
pub(crate) fn run_pinned(
    verified: &mut verify::entry::Verified,
    runner: Option<&exec::Runner>,
    workdir: &Path,
    request: &[u8],
    limits: &exec::RunLimits,
    inputs: &Inputs,
    mut early: Option<exec::Started>,
) -> Result<exec::Observed, LaunchError> {
    let name = verified.entry.name.clone();
    let runtime = verified.entry.runtime.clone();
    let go = |verified: &mut verify::entry::Verified, early: Option<exec::Started>| {
        let young = matches!(verified.pinned, verify::entry::Pinned::Leased { since }
            if since.elapsed() < lease_break_time() / 2);
        let lease = pinned_lease(verified)?;
        let plan = exec::Plan {
            exe: &verified.exe,
            lease,
            runner,
            argv0: name.as_str(),
            limits,
            inputs: inputs.totals(),
            runtime: &runtime,
            env: &inputs.env,
        };
        match early {
            Some(started) if young => exec::finish(started, &plan, workdir, request),
            _ => exec::run(&plan, workdir, request),
        }
    };
    match go(verified, early.take())? {
        exec::Ran::Observed(o) => Ok(*o),
        exec::Ran::WriterWaiting => {
            verified.seal_now()?;
            match go(verified, None)? {
                exec::Ran::Observed(o) => Ok(*o),
                exec::Ran::WriterWaiting => Err(LaunchError::io(
                    "executing the sealed copy",
                    &verified.exe_path,
                    std::io::Error::from_raw_os_error(nix::libc::ETXTBSY),
                )),
            }
        }
    }
}

/// Starts the runner of a `process` run as soon as the decision allows it, before the leased
/// executable's digest is confirmed (`verify::entry::Digest::AfterLease`) and before the run
/// directory exists: it starts in `dir` and waits at its gate (`proto::runner`) while the launcher
/// finishes its own steps, and gets its go in [`run_pinned`]. `None` for an `audit` run, or when
/// it could not be started now (the run then starts it in its place, where a failure is reported).
pub(crate) fn start_early(
    verified: &verify::entry::Verified,
    runner: Option<&exec::Runner>,
    dir: &Path,
    limits: &exec::RunLimits,
    inputs: &Inputs,
) -> Option<exec::Started> {
    runner?;
    let verify::entry::Pinned::Leased { since } = verified.pinned else {
        return None;
    };
    let plan = exec::Plan {
        exe: &verified.exe,
        lease: Some(exec::Lease {
            since,
            break_time: lease_break_time(),
        }),
        runner,
        argv0: verified.entry.name.as_str(),
        limits,
        inputs: inputs.totals(),
        runtime: &verified.entry.runtime,
        env: &inputs.env,
    };
    match exec::start(&plan, dir) {
        Ok(exec::Start::Started(s)) => Some(s),
        _ => None,
    }
}

/// The kernel's lease break time (or the test hook's).
fn lease_break_time() -> std::time::Duration {
    hooks::lease_break_time().unwrap_or_else(sys::fs::lease_break_time)
}

/// The lease that keeps a leased executable from changing until it is executed, if it still has
/// at least half the kernel's lease break time to go; an older one is exchanged for a sealed
/// private copy (checked against the entry's digest) first.
fn pinned_lease(
    verified: &mut verify::entry::Verified,
) -> Result<Option<exec::Lease>, LaunchError> {
    let verify::entry::Pinned::Leased { since } = verified.pinned else {
        return Ok(None);
    };
    let break_time = lease_break_time();
    if since.elapsed() >= break_time / 2 {
        verified.seal_now()?;
        return Ok(None);
    }
    Ok(Some(exec::Lease { since, break_time }))
}
