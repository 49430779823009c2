//! Journal fixtures: one BEGIN, PREPARED and COMMITTED record set with fixed values, encoded with
//! the real `proto::journal` encoder, and a complete record of a kind no version knows.

use proto::journal::{PreparedFile, Record};
use proto::layout::Root;
use proto::{Containment, Name, Sha256};
use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::PathBuf;

/// The txid the fixtures use when a test does not pick its own.
pub const TXID: &str = "0123456789abcdef0123456789abcdef";

/// BEGIN (seq 0) of run `txid`: hello 1.2.3, sha256 of `b"plugin bytes"`, audit, pid 4242, at
/// 2025-11-24T16:00:00.123Z, target `/srv/target`.
pub fn begin(txid: &str) -> Record {
    Record::Begin {
        v: 1,
        seq: 0,
        at_ms: 1_764_000_000_123,
        txid: txid.into(),
        name: Name::new("hello").expect("name"),
        version: "1.2.3".into(),
        sha256: Sha256::of(b"plugin bytes"),
        containment: Containment::Audit,
        pid: 4242,
        target: "/srv/target".into(),
        target_id: None,
        sum: None,
    }
}

/// PREPARED (seq 1) of run [`TXID`]: [`prepared_for`] it.
pub fn prepared() -> Record {
    prepared_for(TXID)
}

/// PREPARED (seq 1) of run `txid`: one file `hello.txt` into `/srv/target` (BEGIN's target), from
/// the run's temp file `.dot-TXID-0.tmp`, at …00.456Z.
pub fn prepared_for(txid: &str) -> Record {
    Record::Prepared {
        v: 1,
        seq: 1,
        at_ms: 1_764_000_000_456,
        target: "/srv/target".into(),
        target_id: None,
        files: vec![PreparedFile {
            name: "hello.txt".into(),
            temp: proto::layout::target_temp(txid, 0),
            size: 13,
            sha256: Sha256::of(b"hello, world\n"),
            old: None,
        }],
        sum: None,
    }
}

/// COMMITTED (seq 2), at …00.789Z.
pub fn committed() -> Record {
    Record::Committed {
        v: 1,
        seq: 2,
        at_ms: 1_764_000_000_789,
        sum: None,
    }
}

/// BEGIN, PREPARED and COMMITTED of run `txid`.
pub fn records(txid: &str) -> [Record; 3] {
    [begin(txid), prepared_for(txid), committed()]
}

/// The journal bytes of `records`, one line each.
pub fn encode(records: &[Record]) -> Vec<u8> {
    records.iter().flat_map(Record::encode).collect()
}

/// A complete line with a valid checksum whose kind this version does not know.
pub fn unknown_record() -> Vec<u8> {
    let body = br#"{"v":1,"seq":1,"at_ms":5,"kind":"FROB"}"#;
    let sum = Sha256::of(body).to_hex();
    let mut line = body[..body.len() - 1].to_vec();
    line.extend_from_slice(format!(",\"sum\":\"{}\"}}\n", &sum[..16]).as_bytes());
    line
}

/// A run directory as a crashed launcher leaves it: `txn/TXID/` (0700) with `journal` (0600)
/// holding `bytes` and a stage with an input and two outputs (one in a subdirectory).
pub fn write_run(root: &Root, txid: &str, bytes: &[u8]) -> PathBuf {
    let dir = root.run_dir(txid);
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .expect("run dir");
    fs::write(dir.join("journal"), bytes).expect("journal");
    fs::set_permissions(dir.join("journal"), fs::Permissions::from_mode(0o600)).expect("chmod");
    let stage = dir.join("stage");
    fs::create_dir_all(stage.join("in")).expect("stage/in");
    fs::create_dir_all(stage.join("out/sub")).expect("stage/out/sub");
    fs::write(stage.join("in/name"), b"world").expect("input");
    fs::write(stage.join("out/a"), b"a").expect("output");
    fs::write(stage.join("out/sub/b"), b"b").expect("output");
    dir
}
