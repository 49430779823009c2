//! Waiting until a lock a test released is free for everyone.
//!
//! A test that drops its `flock` descriptor has not always freed the lock: a flock lives as long
//! as any copy of its open file description, and a process that another test of the same binary
//! spawns in another thread holds a copy of every open descriptor from its fork to its exec. A
//! test that then asserts "not locked" can lose that race. [`released`] waits it out.

use std::fs::{File, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

/// Returns once a fresh descriptor of `path` can take its exclusive flock (and gives it back at
/// once), after the test dropped its own lock on it. Panics if that does not happen within 10 s:
/// then something really holds it.
pub fn released(path: &Path) {
    let start = Instant::now();
    loop {
        let probe = File::open(path)
            .unwrap_or_else(|e| panic!("cannot open {} to probe its lock: {e}", path.display()));
        match probe.try_lock() {
            Ok(()) => {
                // Unlocked explicitly: a fork copying `probe` before its close cannot keep it.
                probe
                    .unlock()
                    .unwrap_or_else(|e| panic!("cannot unlock {}: {e}", path.display()));
                return;
            }
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => {
                panic!("cannot probe the lock of {}: {e}", path.display())
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{} is still locked 10 s after the test released it",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}
