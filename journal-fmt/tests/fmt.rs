//! `dot-journal-fmt` shows every line of a journal, in text and as JSON.

use assert_cmd::cargo::cargo_bin_cmd;
use journal_fmt::JournalReport;
use proto::journal::{Record, RecordKind, RunState};
use proto::{Kind, Sha256};
use std::fs;
use std::path::{Path, PathBuf};
use testkit::journal::{encode, TXID};
use testkit::TempDir;

fn records() -> [Record; 3] {
    testkit::journal::records(TXID)
}

/// `DIR/txn/TXID/journal` holding `bytes`, made as a launcher makes them (the run directory mode
/// 700, the journal 600), so `--root` reads them as `dot-discard` does.
fn write_run(root: &Path, txid: &str, bytes: &[u8]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = root.join("txn").join(txid);
    fs::create_dir_all(&dir).expect("run dir");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).expect("chmod");
    fs::write(dir.join("journal"), bytes).expect("journal");
    fs::set_permissions(dir.join("journal"), fs::Permissions::from_mode(0o600)).expect("chmod");
    dir.join("journal")
}

fn fmt(args: &[&std::ffi::OsStr]) -> (i32, Vec<u8>, Vec<u8>) {
    let out = cargo_bin_cmd!("dot-journal-fmt")
        .args(args)
        .output()
        .expect("runs");
    (out.status.code().expect("code"), out.stdout, out.stderr)
}

fn text(args: &[&std::ffi::OsStr]) -> String {
    let (code, stdout, stderr) = fmt(args);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&stderr));
    String::from_utf8(stdout).expect("utf-8")
}

fn json(args: &[&std::ffi::OsStr]) -> Vec<JournalReport> {
    let mut all = vec![std::ffi::OsStr::new("--json")];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = fmt(&all);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&stderr));
    testkit::decode_json_lines(&stdout)
}

/// A journal with BEGIN, a line whose checksum no longer matches, and a torn tail.
fn damaged() -> (Vec<u8>, usize) {
    let [begin, prepared, _] = records();
    let mut bytes = begin.encode();
    let mut bad = prepared.encode();
    let at = bad
        .windows(6)
        .position(|w| w == b"target")
        .expect("a target field");
    bad[at + 9] = b'X'; // "target":"/srv/target" -> "target":"Xsrv/target"
    bytes.extend_from_slice(&bad);
    let torn = b"{\"v\":1,\"seq\":2,\"kind\":\"COMMI";
    bytes.extend_from_slice(torn);
    (bytes, torn.len())
}

#[test]
fn json_holds_the_records_and_the_state() {
    let tmp = TempDir::new();
    let path = write_run(tmp.path(), TXID, &encode(&records()));
    let reports = json(&[path.as_os_str()]);
    assert_eq!(reports.len(), 1);
    let r = &reports[0];
    assert_eq!(r.journal, path.display().to_string());
    assert_eq!(r.txid.as_deref(), Some(TXID));
    assert_eq!(r.state, RunState::Committed);
    assert_eq!(r.problem, None);
    let kinds: Vec<RecordKind> = r.records.iter().map(Record::kind).collect();
    assert_eq!(
        kinds,
        [
            RecordKind::Begin,
            RecordKind::Prepared,
            RecordKind::Committed
        ]
    );
    match &r.records[1] {
        Record::Prepared { target, files, .. } => {
            assert_eq!((target.as_str(), files.len()), ("/srv/target", 1))
        }
        other => panic!("{other:?}"),
    }
    assert!(r.bad_lines.is_empty());
    assert_eq!(r.torn_tail_bytes, None);
}

#[test]
fn text_shows_time_seq_kind_and_key_fields() {
    let tmp = TempDir::new();
    let path = write_run(tmp.path(), TXID, &encode(&records()));
    let out = text(&[path.as_os_str()]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert_eq!(lines[0], format!("journal {} (run {TXID})", path.display()));
    let sha = &Sha256::of(b"plugin bytes").to_hex()[..12];
    let begin: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        begin,
        [
            "2025-11-24T16:00:00.123Z",
            "#0",
            "BEGIN",
            "hello",
            "1.2.3",
            "sha256",
            sha,
            "audit",
            "pid",
            "4242"
        ]
    );
    let prepared: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(
        prepared,
        [
            "2025-11-24T16:00:00.456Z",
            "#1",
            "PREPARED",
            "target",
            "/srv/target,",
            "1",
            "file"
        ]
    );
    let committed: Vec<&str> = lines[3].split_whitespace().collect();
    assert_eq!(committed, ["2025-11-24T16:00:00.789Z", "#2", "COMMITTED"]);
    assert_eq!(lines[4].trim(), "state: COMMITTED");
}

#[test]
fn a_bad_checksum_and_a_torn_tail_are_shown_in_json() {
    let tmp = TempDir::new();
    let (bytes, torn) = damaged();
    let path = write_run(tmp.path(), TXID, &bytes);
    let r = &json(&[path.as_os_str()])[0];
    assert_eq!(r.state, RunState::Unrecognized);
    assert_eq!(r.records.len(), 1);
    assert_eq!(r.bad_lines.len(), 1);
    assert_eq!(r.bad_lines[0].line_no, 2);
    assert!(r.bad_lines[0].error.contains("checksum"), "{r:?}");
    assert_eq!(r.torn_tail_bytes, Some(torn));
    assert!(
        r.problem
            .as_deref()
            .is_some_and(|p| p.starts_with("line 2:")),
        "{r:?}"
    );
}

#[test]
fn a_bad_checksum_and_a_torn_tail_are_shown_in_text() {
    let tmp = TempDir::new();
    let (bytes, torn) = damaged();
    let path = write_run(tmp.path(), TXID, &bytes);
    let out = text(&[path.as_os_str()]);
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    assert!(lines[1].contains("BEGIN"), "{out}");
    assert!(
        lines[2].starts_with("line 2: BAD LINE") && lines[2].contains("checksum"),
        "{out}"
    );
    assert_eq!(
        lines[3],
        format!("torn tail: {torn} bytes without a newline (not a record)")
    );
    assert!(
        lines[4].starts_with("state: UNRECOGNIZED (line 2:"),
        "{out}"
    );
}

#[test]
fn a_torn_tail_alone_leaves_the_run_abandoned_and_visible() {
    let tmp = TempDir::new();
    let [begin, prepared, _] = records();
    let p = prepared.encode();
    let mut bytes = begin.encode();
    bytes.extend_from_slice(&p[..p.len() - 3]);
    let path = write_run(tmp.path(), TXID, &bytes);
    let r = &json(&[path.as_os_str()])[0];
    assert_eq!(
        (r.state, r.torn_tail_bytes, r.records.len()),
        (RunState::Abandoned, Some(p.len() - 3), 1)
    );
    assert!(text(&[path.as_os_str()]).contains(&format!("torn tail: {} bytes", p.len() - 3)));
}

#[test]
fn root_formats_every_run_in_txid_order() {
    let tmp = TempDir::new();
    let root = testkit::make_root(&tmp.join("root"), true);
    let first = "00000000000000000000000000000001";
    let second = "00000000000000000000000000000002";
    // Each journal names its own run, as `recover` and `dot-discard` require (`classify_run`):
    // `--root` shows the state they see.
    write_run(
        root.path(),
        second,
        &encode(&testkit::journal::records(second)[..2]),
    );
    write_run(
        root.path(),
        first,
        &encode(&testkit::journal::records(first)[..1]),
    );
    let third = root.run_dir("00000000000000000000000000000003");
    write_run(root.path(), "00000000000000000000000000000003", b"");
    fs::remove_file(third.join("journal")).expect("no journal");
    fs::create_dir(third.join("stage")).expect("a stage without a journal");
    fs::create_dir(root.txn().join("stray")).expect("stray");
    let reports = json(&[std::ffi::OsStr::new("--root"), root.path().as_os_str()]);
    let seen: Vec<(Option<&str>, RunState)> = reports
        .iter()
        .map(|r| (r.txid.as_deref(), r.state))
        .collect();
    assert_eq!(
        seen,
        [
            (Some(first), RunState::Abandoned),
            (Some(second), RunState::Prepared),
            (
                Some("00000000000000000000000000000003"),
                RunState::Unrecognized
            ),
            (None, RunState::Unrecognized),
        ]
    );
    assert_eq!(reports[2].problem.as_deref(), Some("no journal"));
    assert_eq!(reports[3].problem.as_deref(), Some("not a transaction id"));
    let out = text(&[std::ffi::OsStr::new("--root"), root.path().as_os_str()]);
    let headings = out.lines().filter(|l| l.starts_with("journal ")).count();
    assert_eq!(headings, 4, "{out}");
}

#[test]
fn usage_errors_exit_2() {
    let tmp = TempDir::new();
    let missing = tmp.join("missing");
    let cases: [(Vec<&std::ffi::OsStr>, Kind); 5] = [
        (vec![missing.as_os_str()], Kind::NoJournal),
        (vec![tmp.path().as_os_str()], Kind::NotAJournal),
        (vec![], Kind::Usage),
        (
            vec![
                std::ffi::OsStr::new("--root"),
                tmp.path().as_os_str(),
                std::ffi::OsStr::new("x"),
            ],
            Kind::Usage,
        ),
        (
            vec![std::ffi::OsStr::new("--root"), tmp.path().as_os_str()],
            Kind::NotARoot,
        ),
    ];
    for (args, kind) in cases {
        let (code, stdout, stderr) = fmt(&args);
        assert_eq!(code, 2, "{args:?}");
        assert!(stdout.is_empty());
        testkit::assert_kind!(testkit::decode_error(&stderr), kind, "{args:?}");
    }
}

#[test]
fn a_journal_on_stdin_is_formatted_like_a_file() {
    let bytes = encode(&records()[..2]);
    let out = cargo_bin_cmd!("dot-journal-fmt")
        .args(["--json", "-"])
        .write_stdin(bytes.clone())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let reports: Vec<JournalReport> = testkit::decode_json_lines(&out.stdout);
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].journal, "-");
    assert_eq!(reports[0].state, RunState::Prepared);
    assert_eq!(reports[0].txid.as_deref(), Some(TXID));
    let dir = TempDir::new();
    let file = write_run(dir.path(), TXID, &bytes);
    let from_file = json(&[file.as_os_str()]);
    assert_eq!(
        (from_file[0].state, &from_file[0].records),
        (reports[0].state, &reports[0].records)
    );
}

#[test]
fn an_oversized_journal_is_reported_with_its_real_size() {
    // Only one byte over the limit is read; the size shown is the journal's, named or on stdin.
    let bytes = vec![b'x'; 5_000_000];
    let dir = TempDir::new();
    let file = write_run(dir.path(), TXID, &bytes);
    let out = cargo_bin_cmd!("dot-journal-fmt")
        .args(["--json", "-"])
        .write_stdin(bytes)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let mut reports: Vec<JournalReport> = testkit::decode_json_lines(&out.stdout);
    reports.extend(json(&[file.as_os_str()]));
    reports.extend(json(&[
        std::ffi::OsStr::new("--root"),
        dir.path().as_os_str(),
    ]));
    assert_eq!(reports.len(), 3);
    for r in reports {
        assert_eq!(r.state, RunState::Unrecognized, "{r:?}");
        assert_eq!(
            r.problem.as_deref(),
            Some("journal is 5000000 bytes, over 4194304"),
            "{r:?}"
        );
    }
}

#[test]
fn a_root_without_runs_says_so_to_a_person_and_is_no_line_in_json() {
    let d = TempDir::new();
    let root = d.join("root");
    fs::create_dir_all(root.join("txn")).expect("txn");
    let shown = text(&[std::ffi::OsStr::new("--root"), root.as_os_str()]);
    assert_eq!(
        shown,
        format!("no runs in {}\n", root.join("txn").display())
    );
    assert!(json(&[std::ffi::OsStr::new("--root"), root.as_os_str()]).is_empty());
    // With a run, the line is gone.
    write_run(&root, TXID, &encode(&records()[..1]));
    let shown = text(&[std::ffi::OsStr::new("--root"), root.as_os_str()]);
    assert!(!shown.contains("no runs"), "{shown}");
}
