//! Test-only hooks, compiled only with the `test-hooks` feature (never in release builds):
//! failpoints that SIGKILL the launcher (`DOT_FAILPOINT=NAME`), a pause after validation
//! (`DOT_PAUSE_AFTER_VERIFY=PATH`: creates `PATH.ready`, waits for `PATH.go`), and a pretend
//! Landlock ABI (`DOT_PRETEND_LANDLOCK_ABI=N`).

/// Kills the launcher with SIGKILL when `DOT_FAILPOINT` names this point.
#[cfg(feature = "test-hooks")]
pub fn failpoint(name: &str) {
    if std::env::var("DOT_FAILPOINT").is_ok_and(|v| v == name) {
        let _ = nix::sys::signal::kill(nix::unistd::getpid(), nix::sys::signal::Signal::SIGKILL);
    }
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn failpoint(_name: &str) {}

/// Waits after validation until the test says go.
#[cfg(feature = "test-hooks")]
pub fn pause_after_verify() {
    if let Ok(p) = std::env::var("DOT_PAUSE_AFTER_VERIFY") {
        let _ = std::fs::write(format!("{p}.ready"), b"");
        let go = std::path::PathBuf::from(format!("{p}.go"));
        for _ in 0..30_000 {
            if go.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn pause_after_verify() {}

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
