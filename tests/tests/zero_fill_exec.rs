//! An executable `PT_LOAD` segment with nothing from the file (a `PT_NOTE` patched to `PT_LOAD`
//! R+X, `p_filesz` 0, `p_memsz` 0x2000): the kernel's zero fill of it is writable and executable.
//! The probe (tests/fixtures/zero-fill-exec.c, linked `-static` by gcc) writes machine code there
//! and calls it: run directly, the patched copy prints its marker and the copy as built dies of
//! SIGSEGV (so the probe detects the hole); registration, `dot-verify entry` and `dot-launch`
//! refuse the patched copy (`exe-wx-segment`) and it never runs.

#![allow(clippy::unwrap_used)]

mod common;

use common::{failure, init_dev_root, repo_root, tool};
use proto::{Containment, Kind};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use testkit::TempDir;

const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
/// Where the probe writes its code (ZERO_FILL in the C source).
const ZERO_FILL: u64 = 0x1000_0000;
const SIGSEGV: i32 = 11;
const MARKER: &str = "zero-fill-exec: ran code written at 0x10000000: 42";

/// The probe, built static by gcc into `dir`.
fn probe(dir: &Path) -> PathBuf {
    common::require_program("cc", "gcc");
    let exe = dir.join("zero-fill-exec");
    let out = Command::new("cc")
        .args(["-static", "-O2", "-o"])
        .arg(&exe)
        .arg(repo_root().join("tests/fixtures/zero-fill-exec.c"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// A copy of `exe`, `dir/name`, whose first `PT_NOTE` header is now `PT_LOAD` R+X at `ZERO_FILL`, with
/// `p_filesz` 0 and `p_memsz` 0x2000.
fn patched(exe: &Path, dir: &Path, name: &str) -> PathBuf {
    let mut b = std::fs::read(exe).unwrap();
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let phoff = u64_at(&b, 32) as usize;
    let phnum = usize::from(u16::from_le_bytes([b[56], b[57]]));
    let note = (0..phnum)
        .map(|i| phoff + i * 56)
        .find(|&at| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) == PT_NOTE)
        .expect("the binary has a PT_NOTE header");
    let mut header = Vec::new();
    header.extend(PT_LOAD.to_le_bytes());
    header.extend(5u32.to_le_bytes()); // PF_R | PF_X
    for v in [0, ZERO_FILL, ZERO_FILL, 0, 0x2000, 0x1000] {
        header.extend(u64::to_le_bytes(v)); // offset, vaddr, paddr, filesz, memsz, align
    }
    b[note..note + 56].copy_from_slice(&header);
    testkit::write_exe(dir, name, &b, 0o755)
}

#[test]
fn the_probe_runs_code_it_wrote_into_the_zero_fill_when_unconfined() {
    let dir = TempDir::new();
    let exe = probe(dir.path());
    let out = Command::new(&exe).output().unwrap();
    assert_eq!(out.status.signal(), Some(SIGSEGV), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(MARKER));
    let out = Command::new(patched(&exe, dir.path(), "patched"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), MARKER);
}

#[test]
fn registration_refuses_a_zero_filled_executable_segment() {
    let dir = TempDir::new();
    let root = dir.join("root");
    init_dev_root(&root);
    let exe = probe(dir.path());
    // gcc's static probe and the Rust static-pie hello, each patched.
    for (name, copy) in [
        ("zf-c", patched(&exe, dir.path(), "zf-c")),
        (
            "zf-rust",
            patched(&testkit::workspace_bin("hello"), dir.path(), "zf-rust"),
        ),
    ] {
        let out = tool("dot-register")
            .args(["dev", "--root"])
            .arg(&root)
            .args(["--name", name, "--containment", "process", "--exe"])
            .arg(&copy)
            .output()
            .unwrap();
        let err = failure(&out, 1);
        testkit::assert_kind!(err, Kind::ExeWxSegment, "{name}");
        assert!(err.message.contains("zero-fills"), "{err:?}");
        assert!(
            !root.join(format!("plugins.d/{name}.json")).exists(),
            "{name} registered"
        );
    }
    // The probe as built registers: the refusal is the patched header's.
    let out = tool("dot-register")
        .args(["dev", "--root"])
        .arg(&root)
        .args(["--name", "zf", "--containment", "process", "--exe"])
        .arg(&exe)
        .output()
        .unwrap();
    common::ok(out, "dot-register dev of the probe as built");
}

#[test]
fn verify_and_launch_refuse_a_zero_filled_executable_segment_and_it_never_runs() {
    let dir = TempDir::new();
    let root_dir = dir.join("root");
    init_dev_root(&root_dir);
    let copy = patched(&probe(dir.path()), dir.path(), "patched");
    let bytes = std::fs::read(&copy).unwrap();
    // Put in place by hand, as a store written behind dot-register's back would be.
    let root = proto::layout::Root::single(&root_dir);
    let entry = testkit::entry_for_bytes("zf", &bytes, Containment::Process, None);
    testkit::install_entry(&root, "zf", &entry.to_bytes(), None, &bytes);
    let out = tool("dot-verify")
        .args(["entry", "--root"])
        .arg(&root_dir)
        .arg("zf")
        .output()
        .unwrap();
    let err = failure(&out, 1);
    testkit::assert_kind!(err, Kind::ExeWxSegment);
    assert!(err.message.contains("zero-fills"), "{err:?}");
    let target = dir.join("target");
    std::fs::create_dir(&target).unwrap();
    let out = common::launch_into(&root_dir, "zf", &target, &["--require-process-sandbox"])
        .output()
        .unwrap();
    let err = failure(&out, 1);
    testkit::assert_kind!(err, Kind::ExeWxSegment);
    assert!(!String::from_utf8_lossy(&out.stdout).contains(MARKER));
    assert!(
        common::names(&target).is_empty(),
        "the run wrote its target"
    );
    assert!(
        common::names(&root_dir.join("txn")).is_empty(),
        "a run was started"
    );
}
