//! Properties of the journal classifier and of `dot-discard` over damaged journals.
//!
//! For the valid journals BEGIN, BEGIN+PREPARED and BEGIN+PREPARED+COMMITTED:
//! - every byte prefix, and every single-byte corruption (all 255 other values at every position):
//!   `classify` never panics, and it never says ABANDONED while the PREPARED line (its bytes and its
//!   newline) is intact; whenever it says ABANDONED, it reports no PREPARED record;
//! - `dot-discard` (the library, on real run directories) never deletes a run whose PREPARED line
//!   is intact: checked for every prefix and for a deterministic sample of the corruptions (at every
//!   position: a newline and one more value that moves with the position). These runs hold only their journal (the stage walk
//!   has its own tests in discard.rs), which keeps its 4,422 run directories cheap.

use proto::journal::{classify, RunState};
use proto::layout::Root;
use std::collections::BTreeMap;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use testkit::journal::{begin, committed, encode, prepared};
use testkit::TempDir;

const TXID: &str = testkit::journal::TXID;

/// A named journal and the byte range of its PREPARED line (newline included), if it has one.
struct Case {
    name: &'static str,
    bytes: Vec<u8>,
    prepared: Option<std::ops::Range<usize>>,
}

fn cases() -> Vec<Case> {
    let b = begin(TXID).encode();
    let p = prepared().encode();
    let c = committed().encode();
    let range = b.len()..b.len() + p.len();
    vec![
        Case {
            name: "BEGIN",
            bytes: b.clone(),
            prepared: None,
        },
        Case {
            name: "BEGIN+PREPARED",
            bytes: encode(&[begin(TXID), prepared()]),
            prepared: Some(range.clone()),
        },
        Case {
            name: "BEGIN+PREPARED+COMMITTED",
            bytes: [b, p, c].concat(),
            prepared: Some(range),
        },
    ]
}

/// Is the PREPARED line of `case` intact in `bytes` (same bytes at the same place)?
fn prepared_intact(case: &Case, bytes: &[u8]) -> bool {
    case.prepared
        .as_ref()
        .is_some_and(|r| bytes.get(r.clone()) == case.bytes.get(r.clone()))
}

/// The classifier's verdict on `bytes`, checked against the properties; returns the state.
fn check_classify(case: &Case, bytes: &[u8], what: &str) -> RunState {
    let j = classify(bytes);
    if j.state == RunState::Abandoned {
        assert!(
            !prepared_intact(case, bytes),
            "{}: {what}: ABANDONED with the PREPARED line intact",
            case.name
        );
        assert!(j.prepared().is_none(), "{}: {what}", case.name);
        assert!(j.problem.is_none(), "{}: {what}", case.name);
    }
    if j.state == RunState::Unrecognized {
        assert!(j.problem.is_some(), "{}: {what}: no reason", case.name);
    }
    j.state
}

#[test]
fn classify_every_prefix_and_every_single_byte_corruption() {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for case in cases() {
        for cut in 0..=case.bytes.len() {
            let s = check_classify(&case, &case.bytes[..cut], &format!("prefix {cut}"));
            *counts.entry(s.to_string()).or_default() += 1;
        }
        let mut c = case.bytes.clone();
        for i in 0..c.len() {
            let orig = c[i];
            for v in 0..=255u8 {
                if v == orig {
                    continue;
                }
                c[i] = v;
                let s = check_classify(&case, &c, &format!("byte {i} set to {v}"));
                *counts.entry(s.to_string()).or_default() += 1;
            }
            c[i] = orig;
        }
    }
    // The walk reached every state (so the properties were not checked vacuously).
    for s in [
        RunState::Abandoned,
        RunState::Prepared,
        RunState::Committed,
        RunState::Unrecognized,
    ] {
        assert!(
            counts.get(&s.to_string()).copied().unwrap_or(0) > 0,
            "{s} never seen: {counts:?}"
        );
    }
}

/// `txn/TXID/` (0700) holding only `journal` (0600) with `bytes`.
fn journal_only_run(root: &Root, txid: &str, bytes: &[u8]) {
    let dir = root.run_dir(txid);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .expect("run dir");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dir.join("journal"))
        .expect("journal");
    std::io::Write::write_all(&mut f, bytes).expect("write journal");
}

/// Writes every journal of `batch` as a run under a fresh root, runs the discard library once, and
/// checks that each run whose PREPARED line is intact is still there, and that each run the
/// classifier calls ABANDONED is gone.
fn discard_batch(case: &Case, batch: &[(String, Vec<u8>)]) {
    let tmp = TempDir::new();
    let root: Root = testkit::make_root(&tmp.join("root"), true);
    let mut txids = Vec::new();
    for (n, (_, bytes)) in batch.iter().enumerate() {
        let txid = format!("{:032x}", n + 1);
        journal_only_run(&root, &txid, bytes);
        txids.push(txid);
    }
    let report = discard::discard(&root, false).expect("discard runs");
    for ((what, bytes), txid) in batch.iter().zip(&txids) {
        let exists = root.run_dir(txid).exists();
        if prepared_intact(case, bytes) {
            assert!(
                exists,
                "{}: {what}: discard deleted a run with an intact PREPARED",
                case.name
            );
        }
        let abandoned = classify(bytes).state == RunState::Abandoned;
        assert_eq!(
            !exists, abandoned,
            "{}: {what}: deleted iff ABANDONED ({report:?})",
            case.name
        );
        assert_eq!(
            report.discarded.contains(txid),
            abandoned,
            "{}: {what}",
            case.name
        );
    }
}

/// The corruptions sampled for the discard check at position `i` of a journal whose byte there is
/// `orig`.
fn sampled_values(i: usize, orig: u8) -> Vec<u8> {
    let mut v = vec![b'\n', ((i * 131 + 7) % 256) as u8];
    v.sort_unstable();
    v.dedup();
    v.retain(|&b| b != orig);
    v
}

#[test]
fn discard_never_deletes_a_run_whose_prepared_line_is_intact() {
    for case in cases() {
        let mut batch: Vec<(String, Vec<u8>)> = (0..=case.bytes.len())
            .map(|cut| (format!("prefix {cut}"), case.bytes[..cut].to_vec()))
            .collect();
        let mut c = case.bytes.clone();
        for i in 0..c.len() {
            let orig = c[i];
            for v in sampled_values(i, orig) {
                c[i] = v;
                batch.push((format!("byte {i} set to {v}"), c.clone()));
            }
            c[i] = orig;
        }
        for chunk in batch.chunks(512) {
            discard_batch(&case, chunk);
        }
    }
}
