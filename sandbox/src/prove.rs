//! `dot-sandbox probe --prove`: the canary run under the runner once per escape probe of
//! `proto::canary::PROBES`, exactly as `dot-launch` would run it (see `harness`), each outcome
//! compared with the outcomes the list accepts under `process`.

use crate::harness::{canary_invocation, RunOutput};
use proto::canary::{Probe, ProbeSpec, PROBES};
use proto::runner::RunnerLimits;
use proto::{ErrorObject, Kind, ToErrorObject};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io;
use std::path::PathBuf;

/// The limits `--prove` runs the canary with.
pub const PROVE_LIMITS: RunnerLimits = RunnerLimits {
    memory_bytes: 256 << 20,
    cpu_seconds: 1,
    file_bytes: 1 << 20,
    descriptors: 64,
    tasks: 64,
    stage_bytes: 16 << 20,
    stage_inodes: 256,
};

/// One probe's verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeResult {
    pub name: String,
    /// The accepted outcomes, `|`-separated.
    pub expected: String,
    pub observed: String,
    pub ok: bool,
}

/// What `probe --prove` prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProveReport {
    pub probes: Vec<ProbeResult>,
    pub ok: bool,
}

/// Why the proof could not run.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error("cannot open {path}: {reason}; the canary is installed in LIBEXECDIR/dot (`make install`), or built beside dot-sandbox in a build tree (`make build`)")]
    Canary { path: PathBuf, reason: String },
    #[error("cannot open the running dot-sandbox: {0}")]
    Runner(io::Error),
    #[error("unknown probe {0:?}")]
    UnknownProbe(String),
    #[error("running probe {name} failed: {source}")]
    Harness { name: String, source: io::Error },
}

impl ToErrorObject for ProveError {
    fn kind(&self) -> Kind {
        match self {
            ProveError::Canary { .. } => Kind::CanaryMissing,
            ProveError::Runner(_) => Kind::RunnerMissing,
            ProveError::UnknownProbe(_) => Kind::UnknownProbe,
            ProveError::Harness { .. } => Kind::Harness,
        }
    }

    fn to_error_object(&self) -> ErrorObject {
        let obj = ErrorObject::new(self.kind(), self.to_string());
        match self {
            // No one command: installing and building differ; the message names both.
            ProveError::Canary { path, .. } => obj.path(path),
            ProveError::UnknownProbe(name) => obj
                .field("only")
                .value(name.clone())
                .next(&cli::Next::cmd("dot-sandbox").args(["probe", "--prove"])),
            ProveError::Runner(_) => obj.path("/proc/self/exe"),
            ProveError::Harness { name, .. } => obj.field("only").value(name.clone()),
        }
    }
}

/// Runs one probe under the runner (with `--landlock-abi` when `landlock_abi` is set) in a fresh
/// scratch stage; returns its observed outcome, and the run for further checks.
pub fn run_probe(
    runner: &File,
    canary: &File,
    probe: &ProbeSpec,
    limits: RunnerLimits,
    landlock_abi: Option<u32>,
) -> io::Result<(String, RunOutput)> {
    let invocation = canary_invocation(limits, landlock_abi)?;
    crate::harness::run_probe_as(runner, canary, probe, &invocation)
}

/// Runs `only` (or every probe) confined and compares each outcome with the table; the runner
/// gets `--landlock-abi` when `landlock_abi` is set.
pub fn prove(
    runner: &File,
    canary: &File,
    only: &[String],
    landlock_abi: Option<u32>,
) -> Result<ProveReport, ProveError> {
    let specs: Vec<&ProbeSpec> = if only.is_empty() {
        PROBES.iter().collect()
    } else {
        only.iter()
            .map(|n| {
                Probe::from_name(n)
                    .map(Probe::spec)
                    .ok_or_else(|| ProveError::UnknownProbe(n.clone()))
            })
            .collect::<Result<_, _>>()?
    };
    // Handed over exactly as dot-launch hands a plugin: a sealed private copy.
    let len = canary
        .metadata()
        .map_err(|e| ProveError::Canary {
            path: PathBuf::from("dot-canary"),
            reason: e.to_string(),
        })?
        .len();
    let canary =
        &sys::fs::sealed_copy(canary, len, c"dot-canary").map_err(|e| ProveError::Canary {
            path: PathBuf::from("dot-canary"),
            reason: e.to_string(),
        })?;
    let mut probes = Vec::with_capacity(specs.len());
    for s in specs {
        let (observed, _) =
            run_probe(runner, canary, s, PROVE_LIMITS, landlock_abi).map_err(|source| {
                ProveError::Harness {
                    name: s.name.to_owned(),
                    source,
                }
            })?;
        probes.push(ProbeResult {
            name: s.name.to_owned(),
            expected: s.confined.join("|"),
            ok: s.confined.contains(&observed.as_str()),
            observed,
        });
    }
    let ok = probes.iter().all(|p| p.ok);
    Ok(ProveReport { probes, ok })
}

/// Where an installation keeps the canary, fixed at build time (`DOT_LIBEXEC_DIR`, the
/// Makefile's `$(LIBEXECDIR)/dot`): a helper no one runs by name, so never in a `PATH` directory.
pub const LIBEXEC_DIR: Option<&str> = option_env!("DOT_LIBEXEC_DIR");

/// Where `probe --prove` looks for `dot-canary`, in order, for the running dot-sandbox at `exe`:
/// beside it (a build tree: `target/TRIPLE/PROFILE`); `../libexec/dot/` from its directory (an
/// installation: `PREFIX/bin/dot-sandbox`, `PREFIX/libexec/dot/dot-canary`, under any DESTDIR or
/// scratch root); the build's [`LIBEXEC_DIR`]. Never `PATH`.
pub fn canary_candidates(exe: &std::path::Path) -> Vec<PathBuf> {
    let dir = exe.parent().unwrap_or(std::path::Path::new("/"));
    let mut c = vec![
        dir.join("dot-canary"),
        dir.join("../libexec/dot/dot-canary"),
    ];
    if let Some(d) = LIBEXEC_DIR {
        c.push(std::path::Path::new(d).join("dot-canary"));
    }
    c
}

/// `probe --prove`: the running dot-sandbox is the runner, `dot-canary` the canary: the first of
/// [`canary_candidates`] that exists, opened without following a symlink (from the directory of
/// `/proc/self/exe`, never `PATH`).
pub fn prove_sibling(
    only: &[String],
    landlock_abi: Option<u32>,
) -> Result<ProveReport, ProveError> {
    // Started with SIGCHLD ignored, the kernel would reap each run before its status is read.
    sys::signal::default_child_signal().map_err(|source| ProveError::Harness {
        name: "(SIGCHLD)".to_owned(),
        source,
    })?;
    let runner = File::open("/proc/self/exe").map_err(ProveError::Runner)?;
    let exe = std::fs::read_link("/proc/self/exe").map_err(ProveError::Runner)?;
    let candidates = canary_candidates(&exe);
    let mut tried = Vec::new();
    for path in &candidates {
        match sys::fs::open_regular(path) {
            Ok((canary, _)) => return prove(&runner, &canary, only, landlock_abi),
            Err(sys::fs::OpenError::Io(e)) if e.kind() == io::ErrorKind::NotFound => {
                tried.push(path.display().to_string());
            }
            Err(e) => {
                return Err(ProveError::Canary {
                    path: path.clone(),
                    reason: e.to_string(),
                })
            }
        }
    }
    Err(ProveError::Canary {
        path: candidates.first().cloned().unwrap_or_default(),
        reason: format!("no dot-canary in {}", tried.join(", ")),
    })
}
