//! What a tool reports of a run it leaves in place (`dot-discard`'s `retained`, `dot-launch
//! recover`'s `skipped`): the run, the state it was found in, why, and the command that takes it
//! further. The command itself is the command-line layer's to build (`cli::next::retained`);
//! this is the report's data.

use crate::error::NextCommand;
use crate::journal::RunState;
use serde::{Deserialize, Serialize};

/// One run left in place.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Retained {
    /// The entry's name under `txn/` (not always a valid transaction id).
    pub txid: String,
    pub state: State,
    pub reason: String,
    /// The command that takes it further, where one exists (quoted for POSIX `sh`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// `next` as an argument vector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_argv: Option<Vec<String>>,
}

impl Retained {
    /// A retained run and the command that takes it further, if there is one.
    pub fn new(
        txid: &str,
        state: State,
        reason: String,
        next: Option<&dyn NextCommand>,
    ) -> Retained {
        Retained {
            txid: txid.to_owned(),
            state,
            reason,
            next_argv: next.and_then(NextCommand::argv),
            next: next.map(NextCommand::text),
        }
    }
}

/// The state a retained run was found in: the journal's state, or `LIVE` for a run whose
/// `dot-launch` still holds its lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum State {
    /// ABANDONED, but its removal stopped because something changed under it.
    Abandoned,
    Prepared,
    Committed,
    Unrecognized,
    /// Its lock is held.
    Live,
    /// An I/O error of the host (EIO, out of memory or descriptors) stopped its examination: it
    /// is none of the above yet, and another pass may get past it (its `next` is that pass).
    Unreadable,
}

impl From<RunState> for State {
    fn from(s: RunState) -> State {
        match s {
            RunState::Abandoned => State::Abandoned,
            RunState::Prepared => State::Prepared,
            RunState::Committed => State::Committed,
            RunState::Unrecognized => State::Unrecognized,
        }
    }
}
