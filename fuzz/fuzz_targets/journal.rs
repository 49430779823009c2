//! Journal reader and state classifier: `proto::journal::classify` on arbitrary bytes.
//! Invariants: never panics; the state agrees with the records it reports (PREPARED/COMMITTED
//! only with an intact PREPARED record, ABANDONED only without one, UNRECOGNIZED always says why).
#![no_main]
use libfuzzer_sys::fuzz_target;
use proto::journal::{classify, Record, RunState};

fuzz_target!(|data: &[u8]| {
    let j = classify(data);
    match j.state {
        RunState::Prepared | RunState::Committed => {
            assert!(j.prepared().is_some() && j.begin().is_some() && j.problem.is_none())
        }
        RunState::Abandoned => assert!(j.prepared().is_none() && j.problem.is_none()),
        RunState::Unrecognized => assert!(j.problem.is_some()),
    }
    // Every record the reader accepted re-encodes to a line that decodes to the same record.
    for r in j.records() {
        let line = r.encode();
        let back = Record::decode(&line[..line.len() - 1]).expect("re-encoded record decodes");
        assert_eq!((back.kind(), back.seq()), (r.kind(), r.seq()));
    }
    // Each line on its own also never panics.
    for line in data.split(|&b| b == b'\n') {
        let _ = Record::decode(line);
    }
});
