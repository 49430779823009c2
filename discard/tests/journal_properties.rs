//! Properties of the journal classifier and of `dot-discard` over damaged journals.
//!
//! For the valid journals BEGIN, BEGIN+PREPARED and BEGIN+PREPARED+COMMITTED:
//! - every byte prefix, and every single-byte corruption (all 255 other values at every position):
//!   `classify` never panics, and it never says ABANDONED while the PREPARED line (its bytes and its
//!   newline) is intact; whenever it says ABANDONED, it reports no PREPARED record;
//! - `dot-discard` (the library, on real run directories) never deletes a run whose PREPARED line
//!   is intact: checked for every prefix and for a deterministic sample of the corruptions (at every
//!   position: a newline and one more value that moves with the position).
//!
//! For every journal of every state (empty, BEGIN, BEGIN+PREPARED, BEGIN+PREPARED+COMMITTED), every
//! combination of "drop one newline" (none, or the newline of any one record) and "append a torn
//! record" (none, or every prefix of every record kind, up to the whole record without its
//! newline): a complete record anywhere counts as present (never ABANDONED with a PREPARED or
//! COMMITTED present; never PREPARED with a COMMITTED present); a lost newline always reads
//! UNRECOGNIZED; a torn proper prefix alone never changes the state. `dot-discard` deletes exactly
//! the runs the classifier calls ABANDONED (a deterministic sample of the combinations).
//!
//! The runs hold only their journal (the stage walk has its own tests in discard.rs), which keeps
//! the run directories cheap. Each run's journal names its own directory (`classify_run`'s rule).

use proto::journal::{classify, classify_run, Record, RecordKind, RunState};
use proto::layout::Root;
use std::collections::BTreeMap;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use testkit::journal::{begin, committed, encode, prepared_for};
use testkit::TempDir;

const TXID: &str = testkit::journal::TXID;

/// The records of a journal that reached `n` records, for run `txid`.
fn records(txid: &str, n: usize) -> Vec<Record> {
    [begin(txid), prepared_for(txid), committed()]
        .into_iter()
        .take(n)
        .collect()
}

/// One damaged journal, as a recipe that works for any run's txid (every txid has 32 digits, so
/// every journal of a shape has the same length and layout).
#[derive(Clone, Debug)]
enum Damage {
    /// The first `cut` bytes of the `n`-record journal.
    Prefix { n: usize, cut: usize },
    /// The `n`-record journal with byte `at` set to `value`.
    Byte { n: usize, at: usize, value: u8 },
    /// The `n`-record journal without the newline of record `drop` (if any), then the first
    /// `len` bytes of record `tail` (if any).
    Torn {
        n: usize,
        drop: Option<usize>,
        tail: Option<(usize, usize)>,
    },
}

impl Damage {
    fn bytes(&self, txid: &str) -> Vec<u8> {
        match *self {
            Damage::Prefix { n, cut } => encode(&records(txid, n))[..cut].to_vec(),
            Damage::Byte { n, at, value } => {
                let mut b = encode(&records(txid, n));
                b[at] = value;
                b
            }
            Damage::Torn { n, drop, tail } => {
                let mut b = Vec::new();
                for (i, r) in records(txid, n).iter().enumerate() {
                    let line = r.encode();
                    let keep = if drop == Some(i) {
                        line.len() - 1
                    } else {
                        line.len()
                    };
                    b.extend_from_slice(&line[..keep]);
                }
                if let Some((kind, len)) = tail {
                    b.extend_from_slice(&records(txid, 3)[kind].encode()[..len]);
                }
                b
            }
        }
    }
}

/// Is the PREPARED line of the `n`-record journal intact in `bytes` (same bytes at the same place,
/// newline included)?
fn prepared_intact(n: usize, bytes: &[u8]) -> bool {
    if n < 2 {
        return false;
    }
    let b = begin(TXID).encode().len();
    let p = prepared_for(TXID).encode().len();
    bytes.get(b..b + p) == encode(&records(TXID, n)).get(b..b + p)
}

/// The classifier's verdict on `bytes` (a damaged `n`-record journal), checked against the
/// properties; returns the state.
fn check_classify(n: usize, bytes: &[u8], what: &str) -> RunState {
    let j = classify(bytes);
    if j.state == RunState::Abandoned {
        assert!(
            !prepared_intact(n, bytes),
            "{n}: {what}: ABANDONED with the PREPARED line intact"
        );
        assert!(j.prepared().is_none(), "{n}: {what}");
        assert!(j.problem.is_none(), "{n}: {what}");
    }
    if j.state == RunState::Unrecognized {
        assert!(j.problem.is_some(), "{n}: {what}: no reason");
    }
    j.state
}

/// Every prefix of the 1-, 2- and 3-record journals.
fn prefixes() -> Vec<Damage> {
    (1..=3)
        .flat_map(|n| {
            let len = encode(&records(TXID, n)).len();
            (0..=len).map(move |cut| Damage::Prefix { n, cut })
        })
        .collect()
}

#[test]
fn classify_every_prefix_and_every_single_byte_corruption() {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for d in prefixes() {
        let Damage::Prefix { n, .. } = d else {
            continue;
        };
        let s = check_classify(n, &d.bytes(TXID), &format!("{d:?}"));
        *counts.entry(s.to_string()).or_default() += 1;
    }
    for n in 1..=3 {
        let mut c = encode(&records(TXID, n));
        for i in 0..c.len() {
            let orig = c[i];
            for v in 0..=255u8 {
                if v == orig {
                    continue;
                }
                c[i] = v;
                let s = check_classify(n, &c, &format!("byte {i} set to {v}"));
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

/// Every "drop one newline" × "append a torn record" combination of every journal shape.
fn torn_combinations() -> Vec<Damage> {
    let kinds = records(TXID, 3);
    let mut all = Vec::new();
    for n in 0..=3 {
        let drops = std::iter::once(None).chain((0..n).map(Some));
        for drop in drops {
            all.push(Damage::Torn {
                n,
                drop,
                tail: None,
            });
            for (kind, r) in kinds.iter().enumerate() {
                // Every prefix up to the whole record without its newline.
                for len in 1..r.encode().len() {
                    all.push(Damage::Torn {
                        n,
                        drop,
                        tail: Some((kind, len)),
                    });
                }
            }
        }
    }
    all
}

/// The record kinds complete in a `Torn` journal: its `n` records (a lost newline does not change
/// a record's bytes) and the appended piece when it is a whole record without its newline.
fn present(d: &Damage) -> Vec<RecordKind> {
    let Damage::Torn { n, tail, .. } = *d else {
        return Vec::new();
    };
    let all = records(TXID, 3);
    let mut kinds: Vec<RecordKind> = all.iter().take(n).map(Record::kind).collect();
    if let Some((kind, len)) = tail {
        if len == all[kind].encode().len() - 1 {
            kinds.push(all[kind].kind());
        }
    }
    kinds
}

#[test]
fn a_complete_record_counts_wherever_it_is_and_only_a_torn_fragment_is_ignored() {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let combos = torn_combinations();
    assert!(combos.len() > 6_000, "{} combinations", combos.len());
    for d in &combos {
        let Damage::Torn { n, drop, tail } = *d else {
            continue;
        };
        let bytes = d.bytes(TXID);
        let j = classify(&bytes);
        let what = format!("{d:?}");
        let present = present(d);
        if present.contains(&RecordKind::Prepared) {
            assert_ne!(j.state, RunState::Abandoned, "{what}: PREPARED is present");
        }
        if present.contains(&RecordKind::Committed) {
            assert!(
                matches!(j.state, RunState::Committed | RunState::Unrecognized),
                "{what}: COMMITTED is present, state {}",
                j.state
            );
        }
        if j.state == RunState::Abandoned {
            assert!(j.prepared().is_none() && j.problem.is_none(), "{what}");
        }
        let base = classify(&encode(&records(TXID, n))).state;
        let whole_tail =
            tail.is_some_and(|(kind, len)| len == records(TXID, 3)[kind].encode().len() - 1);
        match (drop, whole_tail) {
            // A lost newline leaves a complete record on a line with another, or unterminated.
            (Some(_), _) => assert_eq!(j.state, RunState::Unrecognized, "{what}"),
            // A whole record without its newline is present, not torn.
            (None, true) => assert_eq!(j.state, RunState::Unrecognized, "{what}"),
            // A torn proper prefix is a torn write: the state is the journal's without it.
            (None, false) => assert_eq!(j.state, base, "{what}"),
        }
        *counts.entry(j.state.to_string()).or_default() += 1;
    }
    for s in ["ABANDONED", "PREPARED", "COMMITTED", "UNRECOGNIZED"] {
        assert!(counts.get(s).copied().unwrap_or(0) > 0, "{s}: {counts:?}");
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

/// The number of records of the journal a damage starts from.
fn shape(d: &Damage) -> usize {
    match *d {
        Damage::Prefix { n, .. } | Damage::Byte { n, .. } | Damage::Torn { n, .. } => n,
    }
}

/// Writes every journal of `batch` as a run (its journal made for its own txid) under a fresh
/// root, runs the discard library once, and checks that each run whose PREPARED line is intact is
/// still there, and that exactly the runs the classifier calls ABANDONED are gone.
fn discard_batch(batch: &[Damage]) {
    let tmp = TempDir::new();
    let root: Root = testkit::make_root(&tmp.join("root"), true);
    let mut runs = Vec::new();
    for (i, d) in batch.iter().enumerate() {
        let txid = format!("{:032x}", i + 1);
        let bytes = d.bytes(&txid);
        journal_only_run(&root, &txid, &bytes);
        runs.push((txid, bytes));
    }
    let report = discard::discard(&root, false).expect("discard runs");
    for (d, (txid, bytes)) in batch.iter().zip(&runs) {
        let exists = root.run_dir(txid).exists();
        if prepared_intact(shape(d), bytes) {
            assert!(
                exists,
                "{d:?}: discard deleted a run with an intact PREPARED"
            );
        }
        let abandoned = classify_run(bytes, txid).state == RunState::Abandoned;
        assert_eq!(
            !exists, abandoned,
            "{d:?}: deleted iff ABANDONED ({report:?})"
        );
        assert_eq!(report.discarded.contains(txid), abandoned, "{d:?}");
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
    let mut batch = prefixes();
    for n in 1..=3 {
        let c = encode(&records(TXID, n));
        for (at, &orig) in c.iter().enumerate() {
            for value in sampled_values(at, orig) {
                batch.push(Damage::Byte { n, at, value });
            }
        }
    }
    for chunk in batch.chunks(512) {
        discard_batch(chunk);
    }
}

#[test]
fn discard_deletes_exactly_the_abandoned_torn_combinations() {
    // Every combination whose torn piece ends at one of a few lengths per record (every 17th,
    // plus the boundaries: nothing, one byte, the whole record without its newline).
    let lens = |len: usize| move |l: usize| l == 1 || l.is_multiple_of(17) || l + 1 == len;
    let sample: Vec<Damage> = torn_combinations()
        .into_iter()
        .filter(|d| match *d {
            Damage::Torn {
                tail: Some((kind, l)),
                ..
            } => lens(records(TXID, 3)[kind].encode().len())(l),
            _ => true,
        })
        .collect();
    assert!(sample.len() > 400, "{} sampled", sample.len());
    for chunk in sample.chunks(512) {
        discard_batch(chunk);
    }
}
