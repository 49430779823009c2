//! What keeps the executable the launch verified from changing until it is executed: a read lease
//! on the pinned copy while it is young enough, a sealed private copy otherwise, and one retry from
//! a sealed copy when the exec found a writer waiting for the lease.

use crate::inputs::Inputs;
use crate::{exec, hooks, LaunchError};
use std::path::Path;

/// Runs the plugin (`exec::run`, started in `workdir`) with what pins its executable. A leased
/// executable whose exec was refused because a would-be writer was waiting for the lease is sealed
/// into a private copy (the lease still held, the writer still waiting) and run again, once.
pub(crate) fn run_pinned(
    verified: &mut verify::entry::Verified,
    runner: Option<&exec::Runner>,
    workdir: &Path,
    request: &[u8],
    limits: &exec::Limits,
    inputs: &Inputs,
) -> Result<exec::Observed, LaunchError> {
    let name = verified.entry.name.clone();
    let runtime = verified.entry.runtime.clone();
    let go = |verified: &mut verify::entry::Verified| {
        let lease = pinned_lease(verified)?;
        exec::run(
            &verified.exe,
            lease,
            runner,
            workdir,
            name.as_str(),
            request,
            limits,
            inputs.totals(),
            &runtime,
            &inputs.env,
        )
    };
    match go(verified)? {
        exec::Ran::Observed(o) => Ok(*o),
        exec::Ran::WriterWaiting => {
            verified.seal_now()?;
            match go(verified)? {
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

/// The lease that keeps a leased executable from changing until it is executed, if it still has
/// at least half the kernel's lease break time to go; an older one is exchanged for a sealed
/// private copy (checked against the entry's digest) first.
fn pinned_lease(
    verified: &mut verify::entry::Verified,
) -> Result<Option<exec::Lease>, LaunchError> {
    let verify::entry::Pinned::Leased { since } = verified.pinned else {
        return Ok(None);
    };
    let break_time = hooks::lease_break_time().unwrap_or_else(sys::fs::lease_break_time);
    if since.elapsed() >= break_time / 2 {
        verified.seal_now()?;
        return Ok(None);
    }
    Ok(Some(exec::Lease { since, break_time }))
}
