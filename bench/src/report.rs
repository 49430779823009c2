//! BENCHMARKS.md from the results directory `bench/run.sh` fills:
//! `wall.json`, `timings.json`, `commit-N.json`, `reap-N.json` (dot-bench), `digest-MiB.json` and
//! `entry.json` (hyperfine exports), `rss-NAME.txt` (`/usr/bin/time -v`), `started.txt`.

use crate::commit::CommitResult;
use crate::group::ReapResult;
use crate::wall::{Measured, Timings};
use crate::BenchError;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::Path;

/// The part of a hyperfine `--export-json` file used here.
#[derive(Debug, Deserialize)]
struct Hyperfine {
    results: Vec<HyperfineResult>,
}

#[derive(Debug, Deserialize)]
struct HyperfineResult {
    command: String,
    median: f64,
    times: Vec<f64>,
}

fn load<T: DeserializeOwned>(dir: &Path, name: &str) -> Result<Option<T>, BenchError> {
    let path = dir.join(name);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(BenchError::io("reading", path.display(), e)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| BenchError::Malformed {
            path: path.display().to_string(),
            why: e.to_string(),
        })
}

/// "Maximum resident set size (kbytes): N" from a `/usr/bin/time -v` log.
fn max_rss_kib(dir: &Path, name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join(name)).ok()?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
        .and_then(|v| v.trim().parse().ok())
}

/// The size of the plugin the launches run, as bench/run.sh recorded it.
fn hello_size(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("hello-size.txt"))
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .map_or("hello".into(), |b| format!("{:.2} MB", b as f64 / 1e6))
}

/// The scratch file system as bench/run.sh recorded it (`findmnt`: source, type, options).
fn scratch_fs(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("scratch-fs.txt")).ok()?;
    let line = text.lines().next()?.split_whitespace().collect::<Vec<_>>();
    (!line.is_empty()).then(|| line.join(" "))
}

/// What the scratch file system (`fs`: `` (`SOURCE TYPE OPTIONS`)``, or empty) adds to a
/// launch: the same launch with its root and target on a tmpfs (`mem`, the `NAME-tmpfs` row of
/// the wall run), when bench/run.sh could measure it; `against` says how that launch stands
/// against the target.
fn on_tmpfs(fs: &str, on_disk: f64, mem: Option<f64>, against: impl Fn(f64) -> String) -> String {
    let Some(mem) = mem else {
        return String::new();
    };
    format!(
        " With its root and target on a tmpfs the same launch takes {}: {} of the launch is its \
         run's work on the scratch file system{fs}, the decision synced to the audit log and the \
         run directory, its journal and its stage made and removed, none of which reaches a \
         disk on a tmpfs. Measured that way it is {}.",
        ms(mem),
        ms(on_disk - mem),
        against(mem)
    )
}

/// A section: its title, the paragraph that says what was measured, and a table's header row.
fn section(out: &mut String, title: &str, intro: &str, columns: &[&str]) {
    let _ = writeln!(out, "\n## {title}\n\n{intro}\n");
    let _ = writeln!(out, "| {} |", columns.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(columns.len()));
}

fn ms(us: f64) -> String {
    format!("{:.2} ms", us / 1000.0)
}

fn verdict(met: bool) -> &'static str {
    if met {
        "**MET**"
    } else {
        "**NOT MET**"
    }
}

fn machine() -> String {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_default();
    format!("Linux {kernel}, {cores} cores ({cpu})")
}

struct Target {
    id: &'static str,
    what: String,
    target: String,
    measured: String,
    met: Option<bool>,
}

/// Builds the whole document.
pub fn write(dir: &Path) -> Result<String, BenchError> {
    let wall: Vec<Measured> = load(dir, "wall.json")?.unwrap_or_default();
    let timings: Option<Timings> = load(dir, "timings.json")?;
    let median = |name: &str| {
        wall.iter()
            .find(|m| m.name == name)
            .map(|m| m.wall.median_us)
    };
    let scratch = scratch_fs(dir).map_or_else(String::new, |f| format!(" (`{f}`)"));
    let mut targets = Vec::new();
    let mut body = String::new();
    let mut notes = String::new();

    // Per-launch wall time.
    section(
        &mut body,
        "Per-launch wall time",
        "Each command is one process tree from spawn to exit, timed by `dot-bench wall` (rounds \
         interleave the commands, so load changes hit all alike). Every launch uses the static \
         `hello` with the no-output request (`write=no`): the launches below commit nothing, the \
         commit is measured on its own further down.",
        &["command", "runs", "median", "p90", "min", "vs hello"],
    );
    let hello = median("hello");
    for m in &wall {
        let ratio = hello
            .map(|h| format!("{:.2}×", m.wall.median_us / h))
            .unwrap_or_default();
        let _ = writeln!(
            body,
            "| `{}` | {} | {} | {} | {} | {ratio} |",
            m.command,
            m.wall.runs,
            ms(m.wall.median_us),
            ms(m.wall.p90_us),
            ms(m.wall.min_us)
        );
    }
    let process = median("launch-process");
    let audit = median("launch-audit");
    for (id, bwrap, limit) in [("P1", "bwrap-full", 0.9), ("P1", "bwrap-minimal", 1.3)] {
        let (measured, met) = match (process, median(bwrap)) {
            (Some(p), Some(b)) => (
                format!("{:.3}× ({} vs {})", p / b, ms(p), ms(b)),
                Some(p / b <= limit),
            ),
            _ => ("not measured (bubblewrap missing)".to_owned(), None),
        };
        targets.push(Target {
            id,
            what: format!("`dot-launch --require-process-sandbox` vs {bwrap}"),
            target: format!("≤ {limit}×"),
            measured,
            met,
        });
    }
    // An audit launch against its floor: the plugin alone, and one process start plus the digest
    // of its copy (`dot-verify digest` of the same file).
    if let (Some(a), Some(h), Some(d)) = (audit, hello, median("digest-hello")) {
        let over = a - (h + d);
        targets.push(Target {
            id: "P8",
            what: "`audit` launch vs hello + `dot-verify digest` of it".into(),
            target: "≤ +0.3 ms".into(),
            measured: format!(
                "{:+.2} ms ({} vs {} + {})",
                over / 1000.0,
                ms(a),
                ms(h),
                ms(d)
            ),
            met: Some(over <= 300.0),
        });
    }
    if let (Some(py), Some(launch), Some(bwrap)) = (
        median("python"),
        median("launch-python-process"),
        median("bwrap-python"),
    ) {
        let _ = writeln!(
            body,
            "\nThe Python example (`examples/python/greet.py`, which writes its greeting) under \
             `process` with `--runtime /usr`: {} directly, {} through `dot-launch` ({:.2}× \
             direct, {:.3}× bwrap with every namespace and `/` read-only, which takes {}). The \
             launch also commits the greeting file; the other two write it into a scratch \
             directory.",
            ms(py),
            ms(launch),
            launch / py,
            launch / bwrap,
            ms(bwrap)
        );
    }
    if let (Some(h), Some(a), Some(p)) = (hello, audit, process) {
        let confine = timings.as_ref().map(|t| t.confine.median_us).unwrap_or(0.0);
        let _ = writeln!(
            body,
            "\nWhere a confined launch goes (medians): one static process start plus the plugin \
             itself is {} (`hello` direct). `dot-launch` at `audit` adds {} on top: its own \
             process start, the entry checks with the digest of the whole pinned executable, \
             the run directory and journal, the group reap and the removal of the run \
             directory. `process` adds {} more: the `dot-sandbox` process start and its exec \
             into the plugin (a second exec), of which {} is the runner's confinement (its \
             wait at the gate included); at `process` the digest runs while the runner \
             starts, so this difference is smaller than the runner's own cost.{}",
            ms(h),
            ms(a - h),
            ms(p - a),
            ms(confine),
            if p < a {
                " (A negative difference means the two medians are within this run's noise: \
                 compare the minimums, or re-run on a quiet machine.)"
            } else {
                ""
            }
        );
    }

    // Runner timings.
    if let Some(t) = &timings {
        let intro = format!(
            "From the `timings` the runner reports in every result (`enforced.timings`, µs per \
             step; `confine_us` runs from the runner's `main` to just before the exec), over {} \
             launches of `{}`.",
            t.confine.runs, t.command
        );
        let title = "Confinement inside dot-sandbox";
        section(&mut body, title, &intro, &["step", "median", "p90"]);
        for (name, s) in &t.steps {
            let _ = writeln!(
                body,
                "| {name} | {:.0} µs | {:.0} µs |",
                s.median_us, s.p90_us
            );
        }
        let _ = writeln!(
            body,
            "| **confine_us (total)** | **{:.0} µs** | {:.0} µs |",
            t.confine.median_us, t.confine.p90_us
        );
        targets.push(Target {
            id: "P3",
            what: "confinement inside dot-sandbox (`confine_us`)".into(),
            target: "≤ 200 µs".into(),
            measured: format!("{:.0} µs", t.confine.median_us),
            met: Some(t.confine.median_us <= 200.0),
        });
    }

    // Digest.
    section(
        &mut body,
        "Digest",
        "Whole commands, `dot-bench wall` interleaving the two, files in the page cache. \
         Ratio = openssl time / dot-verify time (≥ 1 means dot-verify is at least as fast).",
        &[
            "file",
            "dot-verify digest",
            "openssl dgst -sha256",
            "ratio",
            "dot-verify GB/s",
        ],
    );
    let mut worst: Option<f64> = None;
    for mib in [8u64, 64, 512] {
        let Some(pair) = load::<Vec<Measured>>(dir, &format!("digest-{mib}.json"))? else {
            continue;
        };
        if let [dot, ssl, ..] = pair.as_slice() {
            let (dot, ssl) = (dot.wall.median_us, ssl.wall.median_us);
            let ratio = ssl / dot;
            worst = Some(worst.map_or(ratio, |w: f64| w.min(ratio)));
            let _ = writeln!(
                body,
                "| {mib} MiB | {} | {} | {ratio:.3} | {:.2} |",
                ms(dot),
                ms(ssl),
                (mib << 20) as f64 / dot / 1e3
            );
        }
    }
    targets.push(Target {
        id: "P2",
        what: "digest throughput vs openssl (worst of 8/64/512 MiB)".into(),
        target: "≥ 0.95×".into(),
        measured: worst.map_or("not measured".into(), |w| format!("{w:.3}×")),
        met: worst.map(|w| w >= 0.95),
    });

    if let Some(pair) = load::<Vec<Measured>>(dir, "entry.json")? {
        if let [entry, digest, ..] = pair.as_slice() {
            section(
                &mut body,
                "Entry verification",
                "A signed entry whose executable is 8 MiB: `dot-verify entry` (root checks, \
                 strict parse, minisign signature, publisher, the pinned copy opened and \
                 digested once) against `dot-verify digest` of the same file, interleaved.",
                &["command", "runs", "median"],
            );
            for r in [entry, digest] {
                let _ = writeln!(
                    body,
                    "| `{}` | {} | {} |",
                    r.command,
                    r.wall.runs,
                    ms(r.wall.median_us)
                );
            }
            let (e, d) = (entry.wall.median_us, digest.wall.median_us);
            let _ = writeln!(
                body,
                "\nThe entry checks cost {} on top of the digest ({:.2}×).",
                ms(e - d),
                e / d
            );
        }
    }

    // Launch cost by plugin size.
    if let Some(rows) = load::<Vec<Measured>>(dir, "size.json")? {
        section(
            &mut body,
            "Launch cost by plugin size",
            "`hello` padded with zeros to 2, 16 and 64 MiB (the same program: nothing maps the \
             padding; `hello` itself is over 1 MiB, so the smallest row is 2 MiB), each registered at `process` and launched with `write=no`, interleaved with \
             `dot-verify digest` of its pinned copy. Every launch digests the whole copy; with the \
             runner started at its gate the digest overlaps the runner's start, so a launch costs \
             about the larger of the two plus the plugin's own run.",
            &[
                "size",
                "launch (median)",
                "dot-verify digest",
                "launch − digest",
                "launch vs 2 MiB",
            ],
        );
        let at = |name: &str| {
            rows.iter()
                .find(|m| m.name == name)
                .map(|m| m.wall.median_us)
        };
        let base = at("launch-2");
        for mib in [2u64, 16, 64] {
            let (Some(l), Some(d)) = (at(&format!("launch-{mib}")), at(&format!("digest-{mib}")))
            else {
                continue;
            };
            let growth = base.map(|b| format!("{:.2}×", l / b)).unwrap_or_default();
            let _ = writeln!(
                body,
                "| {mib} MiB | {} | {} | {} | {growth} |",
                ms(l),
                ms(d),
                ms(l - d)
            );
        }
    }

    // A registry of 1,000 entries.
    if let Some(pair) = load::<Vec<Measured>>(dir, "many.json")? {
        let valid = std::fs::read_to_string(dir.join("many-valid.txt"))
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok());
        section(
            &mut body,
            "A registry of 1,000 entries",
            &format!(
                "A DEV root with 1,000 local entries that share one store file (the static \
                 `hello`): each distinct store file is digested once per call. {} of them listed \
                 as valid.",
                valid.map_or("How many were".to_owned(), |v| v.to_string())
            ),
            &["command", "runs", "median", "per entry"],
        );
        for m in &pair {
            let _ = writeln!(
                body,
                "| `{}` | {} | {} | {:.1} µs |",
                m.command,
                m.wall.runs,
                ms(m.wall.median_us),
                m.wall.median_us / 1000.0
            );
            targets.push(Target {
                id: "P7",
                what: format!("`{}` over 1,000 entries sharing one store file", m.name),
                target: "≤ 100 ms".into(),
                measured: ms(m.wall.median_us),
                met: Some(m.wall.median_us <= 100_000.0),
            });
        }
    }

    // Commit.
    section(
        &mut body,
        "Commit",
        "`launch::commit::commit` (temp files made durable, durable PREPARED, renames, target \
         directory fsync, durable COMMITTED) against the unsynced floor (the same temp files \
         written and renamed, no sync). Outputs of 4 KiB, a fresh target each time. Up to 8 \
         outputs the temp files get one fsync each, above that one `syncfs`: the 8 and 9 rows \
         show that threshold. (`dot-launch` caps a run at 256 outputs; the library is called \
         here with a cap of 1,000.)",
        &["outputs", "runs", "durable", "floor", "ratio"],
    );
    let mut at_threshold = (None, None);
    for n in [1usize, 8, 9, 100, 1000] {
        let Some(c) = load::<CommitResult>(dir, &format!("commit-{n}.json"))? else {
            continue;
        };
        match n {
            8 => at_threshold.0 = Some(c.durable.median_us),
            9 => at_threshold.1 = Some(c.durable.median_us),
            _ => {}
        }
        let ratio = c.durable.median_us / c.floor.median_us;
        let _ = writeln!(
            body,
            "| {n} × {} B | {} | {} | {} | {ratio:.2}× |",
            c.size,
            c.durable.runs,
            ms(c.durable.median_us),
            ms(c.floor.median_us)
        );
        if n == 100 {
            targets.push(Target {
                id: "P4",
                what: "durable commit of 100 × 4 KiB vs the unsynced floor".into(),
                target: "≤ 3×".into(),
                measured: format!(
                    "{ratio:.2}× ({} vs {})",
                    ms(c.durable.median_us),
                    ms(c.floor.median_us)
                ),
                met: Some(ratio <= 3.0),
            });
            if ratio > 3.0 {
                let _ = writeln!(
                    notes,
                    "- **P4**: the durable commit needs, after writing, one `syncfs` of the \
                     target's file system (or one fsync per file for up to 8 files), one fdatasync \
                     of the journal for PREPARED, the directory fsync after the renames and one \
                     fdatasync for COMMITTED: four device flushes in a row, each a journal commit \
                     on this file system. The floor has none, so the ratio is set by \
                     flush latency ({} per commit here), not by the work dot does; none of these \
                     flushes can go without breaking the durability promise (PREPARED durable \
                     before any rename; the renames durable before COMMITTED).",
                    ms(c.durable.median_us - c.floor.median_us)
                );
            }
        }
    }

    if let (Some(fsyncs), Some(syncfs)) = at_threshold {
        let _ = writeln!(
            body,
            "\nAt the threshold: 8 outputs (one fsync each) {} against 9 outputs (one syncfs) {}.",
            ms(fsyncs),
            ms(syncfs)
        );
    }

    // Reap.
    section(
        &mut body,
        "Reap",
        "`reap::reap_group` with `dot-launch`'s options (a child subreaper, every descendant a \
         member), from the first SIGKILL until every member is confirmed dead and the leader \
         waited for. The group: a leader and N−1 children, all sleeping.",
        &["members", "runs", "median", "p90", "/proc samples"],
    );
    let (mut reap_1, mut reap_30) = (None, None);
    for n in [1usize, 30, 1000] {
        let Some(r) = load::<ReapResult>(dir, &format!("reap-{n}.json"))? else {
            continue;
        };
        match n {
            1 => reap_1 = Some(r.reap.median_us),
            30 => reap_30 = Some(r.reap.median_us),
            _ => {}
        }
        let _ = writeln!(
            body,
            "| {n} | {} | {} | {} | {} |",
            r.reap.runs,
            ms(r.reap.median_us),
            ms(r.reap.p90_us),
            r.samples_median
        );
        if n == 30 {
            targets.push(Target {
                id: "P5",
                what: "reap of a 30-member group".into(),
                target: "≤ 3 ms".into(),
                measured: ms(r.reap.median_us),
                met: Some(r.reap.median_us <= 3000.0),
            });
        }
    }

    if let Some(h) = load::<Hyperfine>(dir, "launch-hyperfine.json")? {
        section(
            &mut body,
            "Cross-check with hyperfine",
            "The two launches again, timed by hyperfine (each command's runs back to back, not \
             interleaved, so a change of load between them shows here and not above).",
            &["command", "runs", "median"],
        );
        for r in &h.results {
            let _ = writeln!(
                body,
                "| `{}` | {} | {} |",
                r.command,
                r.times.len(),
                ms(r.median * 1e6)
            );
        }
    }

    // RSS.
    section(
        &mut body,
        "Peak RSS",
        "`/usr/bin/time -v` (maximum resident set size of the command and of the children it \
         waited for; the runner's own peak comes from its report, read just before its exec).",
        &["process", "peak RSS"],
    );
    let mut launch_rss = None;
    for (name, label) in [
        ("rss-hello.txt", "`hello` direct"),
        ("rss-launch-audit.txt", "`dot-launch` audit (with hello)"),
        (
            "rss-launch-process.txt",
            "`dot-launch --require-process-sandbox` (with dot-sandbox, hello)",
        ),
    ] {
        if let Some(kib) = max_rss_kib(dir, name) {
            let _ = writeln!(body, "| {label} | {:.2} MiB |", kib as f64 / 1024.0);
            if name != "rss-hello.txt" {
                launch_rss = Some(launch_rss.map_or(kib, |k: u64| k.max(kib)));
            }
        }
    }
    if let Some(t) = &timings {
        let _ = writeln!(
            body,
            "| `dot-sandbox` (before its exec) | {:.2} MiB |",
            t.runner_peak_rss_kib as f64 / 1024.0
        );
    }
    targets.push(Target {
        id: "P6",
        what: "peak RSS of dot-launch".into(),
        target: "≤ 8 MiB".into(),
        measured: launch_rss.map_or("not measured".into(), |k| {
            format!("{:.2} MiB", k as f64 / 1024.0)
        }),
        met: launch_rss.map(|k| k <= 8 * 1024),
    });

    if targets.iter().any(|t| t.id == "P1" && t.met == Some(false)) {
        if let (Some(h), Some(a), Some(p)) = (hello, audit, process) {
            let confine = timings.as_ref().map(|t| t.confine.median_us).unwrap_or(0.0);
            let step = |name: &str| {
                timings
                    .as_ref()
                    .and_then(|t| t.steps.iter().find(|(n, _)| n == name))
                    .map_or(0.0, |(_, s)| s.median_us)
            };
            // `dot-verify digest hello` is one process start plus the digest of the plugin.
            let digest = median("digest-hello").map(|d| (d - h).max(0.0));
            let floor = 3.0 * h + confine - step("gate");
            let full = median("bwrap-full");
            let floor_vs_bwrap = full.map_or_else(String::new, |b| {
                format!(" That floor alone is {:.3}× bwrap-full.", floor / b)
            });
            let bwrap_ns = match (full, median("bwrap-minimal")) {
                (Some(f), Some(m)) => format!(
                    " bubblewrap's own namespaces, `/proc` and `/dev` cost it {} (bwrap-full − \
                     bwrap-minimal).",
                    ms(f - m)
                ),
                _ => String::new(),
            };
            // What a process start costs without the program: glibc's start-up per image.
            let glibc = match (median("start-static"), median("start-raw")) {
                (Some(st), Some(raw)) => format!(
                    " One empty static C program starts and ends in {} here, one without libc \
                     in {}: {} of glibc's own start-up per image, which the confined launch \
                     pays three times (dot-launch, dot-sandbox, the plugin) and bwrap-full twice \
                     (bwrap, the plugin).",
                    ms(st),
                    ms(raw),
                    ms((st - raw).max(0.0))
                ),
                _ => String::new(),
            };
            let _ = writeln!(
                notes,
                "- **P1**: a confined launch is three process images in a row (dot-launch, \
                 dot-sandbox, the plugin) where bubblewrap has two. The runner is started at \
                 its gate before the target is checked and the digest of the leased copy is \
                 confirmed, so the target's checks and the digest of the {} plugin ({}, from \
                 `dot-verify digest` − `hello`) run while the runner starts and makes its \
                 namespaces, off the critical path while they are the shorter of the two. \
                 Floor: three process starts at the cost of `hello` direct ({} each) \
                 + the runner's confinement without its wait at the gate ({}, of which the \
                 namespaces step {}) = {}, against {} measured; the rest, {}, is the launcher's \
                 own work before the runner starts (the registry's and the entry's checks, the \
                 kernel probe, the inputs) and after the plugin ends (reap, the run directory \
                 removed, the result).{floor_vs_bwrap}{bwrap_ns}\
                 {glibc} Launcher work measured as audit − hello: {}.{}",
                hello_size(dir),
                digest.map_or("not measured".into(), ms),
                ms(h),
                ms(confine - step("gate")),
                ms(step("namespaces")),
                ms(floor),
                ms(p),
                ms((p - floor).max(0.0)),
                ms(a - h),
                full.map_or_else(String::new, |b| {
                    on_tmpfs(&scratch, p, median("launch-process-tmpfs"), |mem| {
                        format!("{:.3}× bwrap-full", mem / b)
                    })
                }),
            );
        }
    }
    if targets.iter().any(|t| t.id == "P8" && t.met == Some(false)) {
        if let (Some(a), Some(h), Some(d)) = (audit, hello, median("digest-hello")) {
            let _ = writeln!(
                notes,
                "- **P8**: an `audit` launch is {} over `hello` + `dot-verify digest` of it ({} + \
                 {}). That floor has two process starts (`hello`, `dot-verify`); the launch has \
                 two as well (`dot-launch`, the plugin) and the same digest, so the {} is the \
                 launcher's own steps, none of which a check can drop: the root's and the \
                 entry's checks, the decision appended to the audit log (made durable on a \
                 thread while the run goes on), the run directory with its lock and journal \
                 (BEGIN), the spawn, the group's end (a kill and samples of `/proc` until every \
                 member is a zombie), the run directory's removal, and the result.{}",
                ms(a - (h + d)),
                ms(h),
                ms(d),
                ms(a - (h + d)),
                on_tmpfs(&scratch, a, median("launch-audit-tmpfs"), |mem| format!(
                    "{:+.2} ms from that floor",
                    (mem - (h + d)) / 1000.0
                )),
            );
        }
    }
    if targets.iter().any(|t| t.id == "P3" && t.met == Some(false)) {
        if let Some(t) = &timings {
            let big: Vec<String> = t
                .steps
                .iter()
                .filter(|(_, s)| s.median_us >= 20.0)
                .map(|(n, s)| format!("{n} {:.0} µs", s.median_us))
                .collect();
            let instructions = sandbox::policy_instructions().unwrap_or(0);
            let _ = writeln!(
                notes,
                "- **P3**: the steps above 20 µs are {}. What is left is kernel work that a \
                 check needs: dropping capabilities is one `prctl` per capability the kernel \
                 knows to drop it and one more to verify it is gone, ~90 system calls; the \
                 seccomp install is the kernel checking, translating and JIT-compiling the \
                 {instructions}-instruction program (built at build time, so the runner spends \
                 only `seccomp_build` on it); Landlock is a ruleset, two rules and \
                 `restrict_self`; `identity` is reading `/proc/self/uid_map` and taking the \
                 run's own identity (root: `setgroups`, `setresgid`, `setresuid` to the per-run \
                 uid; anyone else: a user namespace); `stage` is the private tmpfs (`fsopen`, \
                 five `fsconfig`, `fsmount`), its `in/` and `out/`, and handing its descriptor to \
                 the launcher (a `sendmsg` that wakes it). The median of `confine_us` can exceed the sum of the step \
                 medians: a step preempted in one launch is another step in the next; before the \
                 first step the runner only parses its arguments and claims descriptors 4 and 5.",
                big.join(", ")
            );
        }
    }
    if targets.iter().any(|t| t.id == "P5" && t.met == Some(false)) {
        let _ = writeln!(
            notes,
            "- **P5**: `dot-launch` samples only its own descendants (the `children` lists \
             under `/proc`, one `stat` per member), and a member counts as dead only once it is a \
             zombie. A one-member group takes {}; each further member adds {} (30 members: {}). \
             Sampling is the small part (a sample of 30 members is a few `children` reads and 30 \
             `stat` reads, and it takes three); the rest is waiting for 30 killed processes to \
             finish their exits on the same two cores, which they share with the reaper.",
            reap_1.map_or("?".into(), ms),
            match (reap_1, reap_30) {
                (Some(a), Some(b)) => ms((b - a) / 29.0),
                _ => "?".into(),
            },
            reap_30.map_or("?".into(), ms)
        );
    }

    let started = std::fs::read_to_string(dir.join("started.txt")).unwrap_or_default();
    let mut doc = String::new();
    let _ = writeln!(doc, "# Benchmarks\n");
    let _ = writeln!(
        doc,
        "Generated by `make bench` (`bench/run.sh`, `dot-bench`); do not edit by hand. \
         Machine: {}. {}\n",
        machine(),
        started.trim()
    );
    let _ = writeln!(
        doc,
        "Medians of the stated number of runs, all taken in the same run of `make bench`; ratios \
         are between medians of that run. The machine may be shared: compare ratios, not absolute \
         times, across runs.\n"
    );
    let _ = writeln!(doc, "## Targets\n");
    let _ = writeln!(
        doc,
        "| | measure | target | measured | |\n|---|---|---|---|---|"
    );
    for t in &targets {
        let v = t.met.map_or("not measured", verdict);
        let _ = writeln!(
            doc,
            "| {} | {} | {} | {} | {v} |",
            t.id, t.what, t.target, t.measured
        );
    }
    if !notes.is_empty() {
        let _ = writeln!(doc, "\n### Targets not met: where the time goes\n\n{notes}");
    }
    doc.push('\n');
    doc.push_str(&body);
    Ok(doc)
}
