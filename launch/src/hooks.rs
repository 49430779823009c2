//! Test-only hooks, compiled only with the `test-hooks` feature (never in release builds):
//! failpoints that SIGKILL the launcher (`DOT_FAILPOINT=NAME`, or `NAME@N` for the N-th time the
//! point is reached; the names are the `failpoint` call sites: `after-begin`, `request-sent` (the
//! plugin is running), `after-temp`, `after-prepared`, `between-renames`, `before-committed`, and
//! the run-directory removal's own in `txn::hooks`), injected I/O errors (`DOT_INJECT=NAME`,
//! see `txn::hooks`), a pause after validation (`DOT_PAUSE_AFTER_VERIFY=PATH`: creates
//! `PATH.ready`, waits for `PATH.go`), a pretend Landlock ABI (`DOT_PRETEND_LANDLOCK_ABI=N`: the
//! launcher decides as on a kernel with ABI min(N, real) and passes `--landlock-abi N` to
//! `dot-sandbox`, which builds its ruleset so), a pause at a point of the commit
//! (`DOT_PAUSE_AT=after-temp:PATH`, `after-prepared:PATH`, or `recover-next:PATH` before each run
//! `recover` takes; the same handshake), a pretended lease break time
//! (`DOT_LEASE_BREAK_MS=N`), a pause just before the spawn (`DOT_SLEEP_BEFORE_SPAWN_MS=N`, ended early by a cancelling signal), and a
//! report of the launcher's own open descriptors and peak memory just before it exits
//! (`DOT_REPORT_FDS=PATH`, one JSON line appended per run), for the soak tests.
//!
//! The failpoints and injections are `txn`'s (one implementation for every tool that removes
//! run directories); `launch/test-hooks` turns on `txn/test-hooks`.

pub use txn::hooks::{failpoint, inject};

/// Waits after validation until the test says go.
#[cfg(feature = "test-hooks")]
pub fn pause_after_verify() {
    if let Ok(p) = std::env::var("DOT_PAUSE_AFTER_VERIFY") {
        ready_then_wait_for_go(&p);
    }
}

/// Creates `PATH.ready`, then waits until `PATH.go` exists (at most 30 s).
#[cfg(feature = "test-hooks")]
fn ready_then_wait_for_go(path: &str) {
    let _ = std::fs::write(format!("{path}.ready"), b"");
    let go = std::path::PathBuf::from(format!("{path}.go"));
    for _ in 0..30_000 {
        if go.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn pause_after_verify() {}

/// Waits at the point `name` (`after-runner-start`, `after-temp`, `after-prepared`,
/// `recover-next`) when `DOT_PAUSE_AT` is `NAME:PATH`:
/// creates `PATH.ready`, waits for `PATH.go` (at most 30 s).
#[cfg(feature = "test-hooks")]
pub fn pause_at(name: &str) {
    let Ok(spec) = std::env::var("DOT_PAUSE_AT") else {
        return;
    };
    let Some((point, path)) = spec.split_once(':') else {
        return;
    };
    if point == name {
        ready_then_wait_for_go(path);
    }
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn pause_at(_name: &str) {}

/// A Landlock ABI to pretend the kernel has.
#[cfg(feature = "test-hooks")]
pub fn pretend_landlock_abi() -> Option<u32> {
    std::env::var("DOT_PRETEND_LANDLOCK_ABI")
        .ok()
        .and_then(|v| v.parse().ok())
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn pretend_landlock_abi() -> Option<u32> {
    None
}

/// What `DOT_REPORT_FDS` appends: the launcher's open descriptors when it started and when it
/// is about to exit, and its peak RSS.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessReport {
    pub pid: u32,
    /// Open descriptor numbers at start (what it inherited), ascending.
    pub fds_at_start: Vec<i32>,
    /// Open descriptor numbers just before exit, ascending.
    pub fds: Vec<i32>,
    /// Peak resident set size (`VmHWM` of /proc/self/status), KiB.
    pub vm_hwm_kb: u64,
}

/// The open descriptor numbers (the listing's own descriptor left out), ascending; empty unless
/// `DOT_REPORT_FDS` is set.
#[cfg(feature = "test-hooks")]
pub fn open_fds() -> Vec<i32> {
    if std::env::var_os("DOT_REPORT_FDS").is_none() {
        return Vec::new();
    }
    let own = std::path::PathBuf::from(format!("/proc/{}/fd", std::process::id()));
    let mut fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.flatten()
                .filter(|e| std::fs::read_link(e.path()).is_ok_and(|t| t != own))
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
                .collect()
        })
        .unwrap_or_default();
    fds.sort_unstable();
    fds
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn open_fds() -> Vec<i32> {
    Vec::new()
}

/// Appends a [`ProcessReport`] line to `DOT_REPORT_FDS` when set. Called by main after the run,
/// when everything the run opened should be closed again; `fds_at_start` is [`open_fds`] from
/// the start of main.
#[cfg(feature = "test-hooks")]
pub fn report_process(fds_at_start: Vec<i32>) {
    use std::io::Write as _;
    let Ok(path) = std::env::var("DOT_REPORT_FDS") else {
        return;
    };
    let vm_hwm_kb = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0);
    let report = ProcessReport {
        pid: std::process::id(),
        fds_at_start,
        fds: open_fds(),
        vm_hwm_kb,
    };
    let Ok(mut line) = serde_json::to_vec(&report) else {
        return;
    };
    line.push(b'\n');
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        let _ = f.write_all(&line);
    }
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn report_process(_fds_at_start: Vec<i32>) {}

/// A lease break time to pretend the kernel has (`DOT_LEASE_BREAK_MS`), so a test can make the
/// launcher seal its copy, or find the lease too old at the exec.
#[cfg(feature = "test-hooks")]
pub fn lease_break_time() -> Option<std::time::Duration> {
    std::env::var("DOT_LEASE_BREAK_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(std::time::Duration::from_millis)
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn lease_break_time() -> Option<std::time::Duration> {
    None
}

/// Sleeps `DOT_SLEEP_BEFORE_SPAWN_MS` milliseconds just before the plugin is spawned (`audit`) or
/// its runner gets its go (`process`).
#[cfg(feature = "test-hooks")]
pub fn sleep_before_spawn() {
    if let Some(ms) = std::env::var("DOT_SLEEP_BEFORE_SPAWN_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        // In steps, so a cancelling signal ends the wait (as it would end a real step's work).
        let until = std::time::Instant::now() + std::time::Duration::from_millis(ms);
        while std::time::Instant::now() < until && crate::cancel::received().is_none() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn sleep_before_spawn() {}
