//! `dot-bench`: the measurements behind `make bench` (driven by `bench/run.sh`) and the
//! BENCHMARKS.md they become. Benchmarks measure; nothing here is a test and nothing asserts on time.
//!
//! - `wall`: wall time of whole commands (process start to exit), interleaved round by round so a
//!   change in machine load hits every command alike;
//! - `timings`: `dot-launch` runs decoded, the runner's own confinement time and its steps;
//! - `commit`: the launch library's durable commit against the unsynced floor (the same temp files
//!   and renames, no sync at all);
//! - `reap`: the reap library on groups of N members, as `dot-launch` calls it;
//! - `report`: BENCHMARKS.md from the results directory.
#![forbid(unsafe_code)]

pub mod commit;
pub mod group;
pub mod report;
pub mod stats;
pub mod wall;

use argh::FromArgs;
use cli::Output;
use proto::{ErrorObject, ToErrorObject};
use std::io;
use std::path::PathBuf;

/// Measurements for make bench (not a test, never run by make test).
#[derive(FromArgs, Debug)]
pub struct Args {
    #[argh(subcommand)]
    pub command: Command,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum Command {
    Wall(WallArgs),
    Timings(TimingsArgs),
    Commit(CommitArgs),
    Reap(ReapArgs),
    Group(GroupArgs),
    Hold(HoldArgs),
    Report(ReportArgs),
}

/// Wall time of each command of a spec file (JSON list of {name, argv, stdin?, cwd?}), interleaved.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "wall")]
pub struct WallArgs {
    /// the spec file
    #[argh(option, from_str_fn(cli::path))]
    pub spec: PathBuf,
    /// measured runs of each command
    #[argh(option, default = "200")]
    pub runs: usize,
    /// unmeasured runs of each command first
    #[argh(option, default = "10")]
    pub warmup: usize,
}

/// Run a dot-launch command line (a process entry) RUNS times and summarise the runner's timings.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "timings")]
pub struct TimingsArgs {
    /// measured runs
    #[argh(option, default = "200")]
    pub runs: usize,
    /// the dot-launch command line
    #[argh(positional, greedy)]
    pub argv: Vec<String>,
}

/// Commit FILES outputs of SIZE bytes with the launch library, against the unsynced floor.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "commit")]
pub struct CommitArgs {
    /// a scratch directory (created; on the file system being measured)
    #[argh(option, from_str_fn(cli::path))]
    pub dir: PathBuf,
    /// outputs per commit
    #[argh(option)]
    pub files: usize,
    /// bytes per output
    #[argh(option, default = "4096")]
    pub size: usize,
    /// measured commits
    #[argh(option, default = "30")]
    pub runs: usize,
}

/// Reap a process group of MEMBERS members with the reap library, as dot-launch does.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "reap")]
pub struct ReapArgs {
    /// processes in the group, the leader included
    #[argh(option)]
    pub members: usize,
    /// measured reaps
    #[argh(option, default = "50")]
    pub runs: usize,
}

/// (used by reap) Become a group leader with MEMBERS-1 children, say "ready", wait to be killed.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "group")]
pub struct GroupArgs {
    /// processes in the group, the leader included
    #[argh(option)]
    pub members: usize,
}

/// (used by reap) Wait to be killed.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "hold")]
pub struct HoldArgs {}

/// Write BENCHMARKS.md (on stdout) from the results directory of bench/run.sh.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "report")]
pub struct ReportArgs {
    /// the results directory
    #[argh(option, from_str_fn(cli::path))]
    pub dir: PathBuf,
}

proto::kinds! {
    /// dot-bench's error kinds. It is not installed and measures instead of running plugins, so
    /// its kinds are its own, outside the installed tools' catalogue (`proto::Kind`,
    /// docs/errors.md); docs/errors.md lists them after the catalogue.
    pub enum BenchKind {
        Usage = "usage" => Usage,
        Io = "io" => System,
        ResultUnwritten = "result-unwritten" => System,
        /// A measured command exited nonzero or did not print what is measured.
        CommandFailed = "command-failed" => System,
        /// A spec or results file that is not of its shape.
        Malformed = "malformed" => Usage,
    }
}

/// Why a measurement could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: io::Error,
    },
    #[error("{command}: {why}")]
    CommandFailed { command: String, why: String },
    #[error("{path}: {why}")]
    Malformed { path: String, why: String },
}

impl BenchError {
    pub fn io(what: &'static str, path: impl std::fmt::Display, source: io::Error) -> BenchError {
        BenchError::Io {
            what,
            path: path.to_string(),
            source,
        }
    }
}

impl ToErrorObject<BenchKind> for BenchError {
    fn kind(&self) -> BenchKind {
        match self {
            BenchError::Io { .. } => BenchKind::Io,
            BenchError::CommandFailed { .. } => BenchKind::CommandFailed,
            BenchError::Malformed { .. } => BenchKind::Malformed,
        }
    }

    fn to_error_object(&self) -> ErrorObject<BenchKind> {
        let obj = ErrorObject::new(self.kind(), self.to_string());
        match self {
            BenchError::Io { path, .. } | BenchError::Malformed { path, .. } => obj.path(path),
            BenchError::CommandFailed { command, .. } => obj.field("command").value(command),
        }
    }
}

/// Runs one `dot-bench` command.
pub fn run(args: Args) -> Result<Output, BenchError> {
    match args.command {
        Command::Wall(a) => {
            let specs = wall::load_specs(&a.spec)?;
            Ok(Output::json(&wall::wall(&specs, a.runs, a.warmup)?))
        }
        Command::Timings(a) => Ok(Output::json(&wall::timings(&a.argv, a.runs)?)),
        Command::Commit(a) => Ok(Output::json(&commit::bench(
            &a.dir, a.files, a.size, a.runs,
        )?)),
        Command::Reap(a) => Ok(Output::json(&group::bench(a.members, a.runs)?)),
        Command::Group(a) => group::lead(a.members).map(|()| Output::text(String::new())),
        Command::Hold(_) => group::hold(),
        Command::Report(a) => report::write(&a.dir).map(Output::text),
    }
}
