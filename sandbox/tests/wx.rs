//! Writable and executable memory from the ELF headers alone: a copy of the canary whose writable
//! `PT_LOAD` segment also has `PF_X` really runs machine code it writes into its data (proving the
//! `write-exec-data` probe detects the escape), and the runner refuses that copy before it runs; so
//! it does a copy with an executable segment the kernel zero-fills (writable and executable
//! memory; tests/tests/zero_fill_exec.rs proves that hole with a probe of its own).

mod common;

use common::{request, Mode};
use proto::canary::Probe;
use proto::runner::SandboxReport;
use proto::{ErrorObject, Kind};
use sandbox::Scratch;
use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
const PF_X: u32 = 1;
const PF_W: u32 = 2;

fn u16_at(b: &[u8], at: usize) -> usize {
    usize::from(u16::from_le_bytes([b[at], b[at + 1]]))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// A copy of the canary in `dir` whose writable `PT_LOAD` segments also have `PF_X`.
fn canary_with_executable_data(dir: &Path) -> PathBuf {
    let mut elf = std::fs::read(common::canary_path()).expect("read the canary");
    let phoff = u64::from_le_bytes(elf[32..40].try_into().expect("8 bytes")) as usize;
    let (phentsize, phnum) = (u16_at(&elf, 54), u16_at(&elf, 56));
    let mut patched = 0;
    for i in 0..phnum {
        let at = phoff + i * phentsize;
        let flags = u32_at(&elf, at + 4);
        if u32_at(&elf, at) == PT_LOAD && flags & PF_W != 0 {
            elf[at + 4..at + 8].copy_from_slice(&(flags | PF_X).to_le_bytes());
            patched += 1;
        }
    }
    assert!(patched > 0, "the canary has a writable PT_LOAD segment");
    let path = dir.join("dot-canary-wx");
    std::fs::write(&path, &elf).expect("write the copy");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// A copy of the canary in `dir` whose first `PT_NOTE` header is a `PT_LOAD` R+X with `p_filesz` 0
/// and `p_memsz` 0x2000: two pages of the kernel's zero fill, writable and executable.
fn canary_with_zero_filled_code(dir: &Path) -> PathBuf {
    let mut elf = std::fs::read(common::canary_path()).expect("read the canary");
    let phoff = u64::from_le_bytes(elf[32..40].try_into().expect("8 bytes")) as usize;
    let (phentsize, phnum) = (u16_at(&elf, 54), u16_at(&elf, 56));
    let note = (0..phnum)
        .map(|i| phoff + i * phentsize)
        .find(|&at| u32_at(&elf, at) == PT_NOTE)
        .expect("the canary has a PT_NOTE header");
    let mut header = [PT_LOAD, PF_X | 4].map(u32::to_le_bytes).concat();
    for v in [0u64, 0x1000_0000, 0x1000_0000, 0, 0x2000, 0x1000] {
        header.extend(v.to_le_bytes());
    }
    elf[note..note + 56].copy_from_slice(&header);
    let path = dir.join("dot-canary-zero-fill");
    std::fs::write(&path, &elf).expect("write the copy");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

#[test]
fn a_data_segment_made_executable_runs_code_written_into_it_unconfined() {
    let dir = Scratch::new("wx").expect("scratch");
    let patched = File::open(canary_with_executable_data(&dir.dir)).expect("open copy");
    let probe = Probe::WriteExecData.spec();
    let (observed, _) = common::run_probe(&patched, probe, Mode::Unconfined, None);
    assert_eq!(observed, "ok", "the patched copy executes its data");
    let (observed, _) = common::run_probe(&common::canary(), probe, Mode::Unconfined, None);
    assert_eq!(observed, "signal:SIGSEGV", "the canary as built does not");
}

#[test]
fn the_runner_refuses_a_writable_and_executable_segment_before_the_plugin_runs() {
    let dir = Scratch::new("wx").expect("scratch");
    let path = canary_with_executable_data(&dir.dir);
    let patched = File::open(&path).expect("open copy");
    assert!(matches!(
        elf::check_static_elf(&patched),
        Err(elf::ElfError::WritableExecutable { .. })
    ));
    let request = request("write-exec-data");
    let (run, scratch) = common::launch(&patched, &request, common::limits());
    assert_eq!(
        run.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    match run.sandbox_report() {
        Some(SandboxReport::Error(e)) => {
            testkit::assert_kind!(e, Kind::ExeWxSegment);
            assert_eq!(e.path.as_deref(), Some("/proc/self/fd/4"));
        }
        other => panic!("expected an error report, got {other:?}"),
    }
    let err: ErrorObject =
        serde_json::from_slice(run.stderr.trim_ascii_end()).expect("stderr error object");
    testkit::assert_kind!(err, Kind::ExeWxSegment);
    assert!(run.stdout.is_empty(), "the plugin ran");
    assert!(
        !scratch.stage.join("out/result.json").exists(),
        "the plugin ran"
    );
}

/// Registration applies the same rule (the `elf` crate, through `verify`): the copy cannot become a
/// `process` entry.
#[test]
fn registration_refuses_a_writable_and_executable_segment_for_process() {
    let dir = Scratch::new("wx-register").expect("scratch");
    let path = canary_with_executable_data(&dir.dir);
    let register = common::runner_path().with_file_name("dot-register");
    let root = dir.dir.join("root");
    let init = std::process::Command::new(&register)
        .args(["init", "--dev", "--root"])
        .arg(&root)
        .output()
        .expect("dot-register init");
    assert!(init.status.success());
    let out = std::process::Command::new(&register)
        .args(["dev", "--root"])
        .arg(&root)
        .args(["--name", "wx", "--containment", "process", "--exe"])
        .arg(&path)
        .output()
        .expect("dot-register dev");
    assert_eq!(out.status.code(), Some(1));
    let err: ErrorObject =
        serde_json::from_slice(out.stderr.trim_ascii_end()).expect("stderr error object");
    testkit::assert_kind!(err, Kind::ExeWxSegment);
    assert!(err.message.contains("writable and executable"), "{err:?}");
    assert!(!root.join("plugins.d/wx.json").exists(), "registered");
}

#[test]
fn the_runner_refuses_a_zero_filled_executable_segment_before_the_plugin_runs() {
    let dir = Scratch::new("wx-zero-fill").expect("scratch");
    let patched = File::open(canary_with_zero_filled_code(&dir.dir)).expect("open copy");
    let (run, scratch) = common::launch(&patched, &request("write-exec-data"), common::limits());
    assert_eq!(
        run.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    match run.sandbox_report() {
        Some(SandboxReport::Error(e)) => {
            testkit::assert_kind!(e, Kind::ExeWxSegment);
            assert!(e.message.contains("zero-fills"), "{e:?}");
        }
        other => panic!("expected an error report, got {other:?}"),
    }
    assert!(run.stdout.is_empty(), "the plugin ran");
    assert!(
        !scratch.stage.join("out/result.json").exists(),
        "the plugin ran"
    );
}
