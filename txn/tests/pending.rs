//! The check before a launch (`txn::pending::find`) beside launchers that prepare and commit:
//! a test process of its own, since it opens many descriptors on several threads (the crate's
//! own tests count theirs).

use proto::journal::Record;
use std::fs::File;
use std::path::PathBuf;

/// A launcher holds its run's lock from before BEGIN until after COMMITTED, so a journal reads
/// PREPARED only while the lock is held: the unlocked check, run beside launchers that prepare
/// and commit over and over, never reports one pending (the lock is taken before the journal
/// is read, never after).
#[test]
fn a_run_committing_beside_the_check_is_never_taken_for_pending() {
    let tmp = testkit::TempDir::new();
    let (txn, target) = (tmp.path().join("txn"), tmp.path().join("target"));
    std::fs::create_dir_all(&txn).expect("txn");
    std::fs::create_dir(&target).expect("target");
    let here = target.display().to_string();
    let named = |mut r: Record| {
        if let Record::Begin { target, .. } | Record::Prepared { target, .. } = &mut r {
            target.clone_from(&here);
        }
        r
    };
    // More launchers and checks than CPUs, so a check is often preempted mid-way.
    let (launchers, checks, rounds) = (4, 4, 2000);
    let runs: Vec<(PathBuf, Vec<u8>, Vec<u8>)> = (0..launchers)
        .map(|i| {
            let txid = format!("{i:032x}");
            let run = txn.join(&txid);
            std::fs::create_dir(&run).expect("run");
            let [begin, prepared, committed] = testkit::journal::records(&txid).map(named);
            let prepared = testkit::journal::encode(&[begin, prepared]);
            let committed = testkit::journal::encode(&[committed]);
            std::fs::write(
                run.join(proto::layout::JOURNAL_FILE),
                [&prepared[..], &committed[..]].concat(),
            )
            .expect("journal");
            (run, prepared, committed)
        })
        .collect();
    let found = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for (run, prepared, committed) in &runs {
            s.spawn(move || {
                let journal = run.join(proto::layout::JOURNAL_FILE);
                for _ in 0..rounds {
                    let lock = File::open(run).expect("run dir");
                    lock.lock().expect("lock");
                    std::fs::write(&journal, prepared).expect("prepared");
                    let mut file = std::fs::OpenOptions::new()
                        .append(true)
                        .open(&journal)
                        .expect("journal");
                    std::io::Write::write_all(&mut file, committed).expect("committed");
                    drop(lock);
                }
            });
        }
        for _ in 0..checks {
            s.spawn(|| {
                let dir = File::open(&target).expect("target dir");
                for _ in 0..rounds {
                    if txn::pending::find(&txn, None, &target, &dir, false).is_some() {
                        found.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(found.into_inner(), 0, "committing runs taken for pending");
}
