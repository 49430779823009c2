//! `dot-launch`: the one entry point that runs a plugin.
//!
//! 1. verify the entry (`verify` library: deny list, schema, trust, expiry, the pinned copy opened
//!    and digest-checked)
//! 2. consent must match the entry's containment exactly; for `process`, the kernel must be able to
//!    enforce it; protocol range, limits and inputs are checked; for `process`, the sibling
//!    `dot-sandbox` is opened, validated and (with a leased copy) started at its gate, where it
//!    waits before anything of the plugin's runs; then the target and the runs pending on it are
//!    checked (a refusal ends the runner) — nothing is created yet
//! 3. the leased copy's digest confirmed; append the decision (allowed or refused with its kind)
//!    to `ROOT/audit.log`
//! 4. create and lock `txn/TXID/`, append BEGIN, copy file inputs into the on-disk stage (made
//!    only when something uses it: always at audit, at process only for file inputs)
//! 5. spawn in a new process group with an empty environment, cwd = the on-disk stage, or the run
//!    directory when there is none (audit: the plugin's fd;
//!    process: the runner on fd 3, the plugin on fd 4, the runner's report on fd 5)
//! 6. feed the request, bound stdout and stderr, enforce the deadline
//! 7. terminate and reap the group (`reap` library) before deciding anything
//! 8. on success commit the outputs (BEGIN made durable, temp files, PREPARED, renames,
//!    COMMITTED) and remove the run directory, the journal last (a failed run's too); a directory
//!    that cannot be removed is reported (a warning of the result, or `cleanup-retained`), exit 4
//!
//! SIGTERM, SIGINT and SIGHUP are blocked before step 1 and read at fixed points up to PREPARED
//! (`cancel`): a signal there ends the run like a failure, cleaned, with one `cancelled` error.
//!
//! The modules follow the steps: `decide` (1–3), `audit` (the decision's record), `rundir` (4 and
//! the end of the run directory), `stage` (4), `pinning` and `exec` (5–7), `judge`, `commit` (8);
//! `run` puts them in order.
#![forbid(unsafe_code)]

mod audit;
pub mod cancel;
pub mod cli;
pub mod commit;
mod decide;
pub mod error;
pub mod exec;
pub mod explain;
pub mod hooks;
pub mod inputs;
pub mod judge;
pub mod names;
mod pinning;
pub mod progress;
pub mod recover;
mod run;
pub mod rundir;
mod stage;
pub mod target;

pub use decide::{runner_path, Consent};
pub use error::LaunchError;
pub use judge::PluginFailure;
pub use run::{launch, Options};
