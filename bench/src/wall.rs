//! Wall time of whole commands, and the runner's own timings from `dot-launch` results.

use crate::stats::{summarize, Summary};
use crate::BenchError;
use proto::result::RunResult;
use proto::runner::ConfineTimings;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// One command to time.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub name: String,
    pub argv: Vec<String>,
    /// A file given as standard input (else /dev/null).
    #[serde(default)]
    pub stdin: Option<PathBuf>,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
}

/// One command's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    pub name: String,
    pub command: String,
    pub wall: Summary,
}

pub fn load_specs(path: &Path) -> Result<Vec<Spec>, BenchError> {
    let bytes = std::fs::read(path).map_err(|e| BenchError::io("reading", path.display(), e))?;
    let specs: Vec<Spec> = serde_json::from_slice(&bytes).map_err(|e| BenchError::Malformed {
        path: path.display().to_string(),
        why: e.to_string(),
    })?;
    if specs.iter().any(|s| s.argv.is_empty()) {
        return Err(BenchError::Malformed {
            path: path.display().to_string(),
            why: "a spec has an empty argv".into(),
        });
    }
    Ok(specs)
}

/// Runs `spec` once; the wall time from just before the spawn to just after the wait, in µs.
fn time_once(spec: &Spec) -> Result<f64, BenchError> {
    let command = spec.argv.join(" ");
    let stdin = match &spec.stdin {
        Some(p) => {
            Stdio::from(File::open(p).map_err(|e| BenchError::io("opening", p.display(), e))?)
        }
        None => Stdio::null(),
    };
    let mut cmd = Command::new(&spec.argv[0]);
    cmd.args(&spec.argv[1..])
        .stdin(stdin)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    let start = Instant::now();
    let status = cmd
        .status()
        .map_err(|e| BenchError::io("running", &command, e))?;
    let us = start.elapsed().as_secs_f64() * 1e6;
    if !status.success() {
        return Err(BenchError::CommandFailed {
            command,
            why: format!("exited with {status}"),
        });
    }
    Ok(us)
}

/// Each round runs every command once, in spec order; `warmup` rounds are not counted.
pub fn wall(specs: &[Spec], runs: usize, warmup: usize) -> Result<Vec<Measured>, BenchError> {
    let mut samples: Vec<Vec<f64>> = specs.iter().map(|_| Vec::with_capacity(runs)).collect();
    for round in 0..warmup + runs {
        for (spec, out) in specs.iter().zip(samples.iter_mut()) {
            let us = time_once(spec)?;
            if round >= warmup {
                out.push(us);
            }
        }
    }
    Ok(specs
        .iter()
        .zip(samples)
        .map(|(spec, s)| Measured {
            name: spec.name.clone(),
            command: spec.argv.join(" "),
            wall: summarize(&s),
        })
        .collect())
}

/// The runner's confinement time and its steps over many launches.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timings {
    pub command: String,
    pub confine: Summary,
    /// (step, summary) in sequence order.
    pub steps: Vec<(String, Summary)>,
    /// The runner's peak RSS, KiB (largest seen).
    pub runner_peak_rss_kib: u64,
}

fn steps_of(t: &ConfineTimings) -> [(&'static str, u64); 14] {
    [
        ("elf", t.elf_us),
        ("identity", t.identity_us),
        ("namespaces", t.namespaces_us),
        ("gate", t.gate_us),
        ("stage", t.stage_us),
        ("parent_death", t.parent_death_us),
        ("rlimits", t.rlimits_us),
        ("capabilities", t.capabilities_us),
        ("no_new_privs", t.no_new_privs_us),
        ("landlock", t.landlock_us),
        ("signals", t.signals_us),
        ("seccomp_build", t.seccomp_build_us),
        ("seccomp_install", t.seccomp_install_us),
        ("cloexec", t.cloexec_us),
    ]
}

pub fn timings(argv: &[String], runs: usize) -> Result<Timings, BenchError> {
    let command = argv.join(" ");
    let Some((program, rest)) = argv.split_first() else {
        return Err(BenchError::Malformed {
            path: "argv".into(),
            why: "no command given".into(),
        });
    };
    let mut confine = Vec::with_capacity(runs);
    let mut steps: Vec<Vec<f64>> = (0..steps_of(&ConfineTimings::default()).len())
        .map(|_| Vec::with_capacity(runs))
        .collect();
    let mut rss = 0u64;
    for _ in 0..runs {
        let out = Command::new(program)
            .args(rest)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| BenchError::io("running", &command, e))?;
        let failed = |why: String| BenchError::CommandFailed {
            command: command.clone(),
            why,
        };
        if !out.status.success() {
            return Err(failed(String::from_utf8_lossy(&out.stderr).into_owned()));
        }
        let result: RunResult = serde_json::from_slice(&out.stdout)
            .map_err(|e| failed(format!("stdout is not a run result: {e}")))?;
        let enforced = result
            .enforced
            .ok_or_else(|| failed("no enforced report (not a process entry?)".into()))?;
        let (Some(total), Some(t)) = (enforced.confine_us, enforced.timings) else {
            return Err(failed("the report has no timings".into()));
        };
        confine.push(total as f64);
        for (i, (_, us)) in steps_of(&t).iter().enumerate() {
            steps[i].push(*us as f64);
        }
        rss = rss.max(t.peak_rss_kib);
    }
    let names = steps_of(&ConfineTimings::default()).map(|(n, _)| n);
    Ok(Timings {
        command,
        confine: summarize(&confine),
        steps: names
            .iter()
            .zip(steps)
            .map(|(n, s)| ((*n).to_owned(), summarize(&s)))
            .collect(),
        runner_peak_rss_kib: rss,
    })
}
