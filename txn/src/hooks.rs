//! Test-only hooks, compiled only with the `test-hooks` feature (never in release builds), shared
//! by every tool that removes run directories (`dot-discard`, and `dot-launch` through this
//! library):
//! - `DOT_FAILPOINT=NAME` SIGKILLs the process the first time it reaches `failpoint("NAME")`,
//!   `DOT_FAILPOINT=NAME@N` the N-th time. The removal's points: `remove-entry` (before each
//!   unlink under `stage/`), `remove-temp` (before each temp file in the target), `before-journal`
//!   (everything but the journal removed), `before-rmdir` (the journal removed, the directory not);
//!   dot-launch's own are listed in its `hooks` module.
//! - `DOT_INJECT=NAME` makes `inject("NAME")` fail with EIO: `create-journal`, and `append-begin`,
//!   `append-prepared`, `append-committed` (dot-launch's journal appends).

/// Kills the process with SIGKILL when `DOT_FAILPOINT` names this point (and this hit).
#[cfg(feature = "test-hooks")]
pub fn failpoint(name: &str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;
    static POINT: OnceLock<Option<(String, u64)>> = OnceLock::new();
    static HITS: AtomicU64 = AtomicU64::new(0);
    let point = POINT.get_or_init(|| {
        let v = std::env::var("DOT_FAILPOINT").ok()?;
        Some(match v.split_once('@') {
            Some((p, n)) => (p.to_owned(), n.parse().unwrap_or(1)),
            None => (v, 1),
        })
    });
    if let Some((p, nth)) = point {
        if p == name && HITS.fetch_add(1, Ordering::Relaxed) + 1 == *nth {
            let _ =
                nix::sys::signal::kill(nix::unistd::getpid(), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn failpoint(_name: &str) {}

/// An injected I/O error (EIO) when `DOT_INJECT` names this step.
#[cfg(feature = "test-hooks")]
pub fn inject(name: &str) -> std::io::Result<()> {
    if std::env::var("DOT_INJECT").is_ok_and(|v| v == name) {
        return Err(std::io::Error::from(nix::errno::Errno::EIO));
    }
    Ok(())
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn inject(_name: &str) -> std::io::Result<()> {
    Ok(())
}
