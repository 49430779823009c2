//! The per-target commit lock: an exclusive `flock` on the target directory, held open since it
//! was checked. It is keyed by the directory's device and inode whatever path named it, and the
//! kernel releases it when the descriptor closes or the process dies (SIGKILL included). One
//! commit (or one `recover` roll-forward) at a time per target: each run's outputs land as one
//! set. docs/journal.md, "One commit at a time per target".

use std::fs::File;
use std::time::Duration;

/// Why the lock was not taken.
#[derive(Debug)]
pub enum LockError<E> {
    /// The lock call failed.
    Io(std::io::Error),
    /// `cancelled` said stop while waiting.
    Cancelled(E),
}

/// Takes the commit lock on the held target directory `dir`, waiting while another holds it;
/// `cancelled` is asked between tries (a cancelling signal ends the wait with its error).
/// Returns whether it waited.
pub fn lock_target<E>(
    dir: &File,
    mut cancelled: impl FnMut() -> Result<(), E>,
) -> Result<bool, LockError<E>> {
    let mut pause = Duration::from_millis(1);
    let mut waited = false;
    loop {
        match dir.try_lock() {
            Ok(()) => return Ok(waited),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(LockError::Io(e)),
        }
        waited = true;
        cancelled().map_err(LockError::Cancelled)?;
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_waits_until_cancelled_and_a_free_one_is_taken_at_once() {
        let tmp = testkit::TempDir::new();
        let open = || File::open(tmp.path()).expect("open dir");
        let first = open();
        assert!(matches!(
            lock_target(&first, || Ok::<(), ()>(())),
            Ok(false)
        ));
        let second = open();
        let mut asked = 0;
        let got = lock_target(&second, || {
            asked += 1;
            if asked < 3 {
                Ok(())
            } else {
                Err("cancelled")
            }
        });
        assert!(matches!(got, Err(LockError::Cancelled("cancelled"))));
        assert_eq!(asked, 3);
        drop(first);
        testkit::flock::released(tmp.path());
        assert!(matches!(
            lock_target(&second, || Ok::<(), ()>(())),
            Ok(false)
        ));
    }
}
