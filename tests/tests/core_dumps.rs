//! A crashing `process` plugin makes no core dump anywhere — not a file in its stage, and not a
//! host's `core_pattern` pipe handler, which the kernel runs as root on the host whatever a limit
//! of 0 says (it skips it only at exactly 1: `RLIMIT_CORE` = 1 in the plugin, and the runner,
//! which ends by the plugin's signal, made non-dumpable). Unconfined, the same crash does start
//! the handler, which proves the handler would see one.

#![allow(clippy::unwrap_used)]

mod common;

use common::Env;
use proto::Kind;
use std::path::{Path, PathBuf};

const CORE_PATTERN: &str = "/proc/sys/kernel/core_pattern";

/// The host's `core_pattern` set to a handler that appends `COMM UID` for each dump to a log, and
/// put back when dropped.
struct PipeHandler {
    saved: String,
    log: PathBuf,
}

impl PipeHandler {
    fn install(dir: &Path) -> PipeHandler {
        let saved = std::fs::read_to_string(CORE_PATTERN).unwrap();
        let log = dir.join("dumps.log");
        let handler = testkit::write_exe(
            dir,
            "handler.sh",
            format!(
                "#!/bin/sh\necho \"$1 $2\" >> {}\ncat > /dev/null\n",
                log.display()
            )
            .as_bytes(),
            0o755,
        );
        std::fs::write(CORE_PATTERN, format!("|{} %e %u", handler.display())).unwrap();
        PipeHandler { saved, log }
    }

    /// The dumps logged so far (`COMM UID`) that `pick` selects.
    fn dumps(&self, pick: impl Fn(&str, u32) -> bool) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| match l.split_once(' ') {
                Some((comm, uid)) => uid.parse().is_ok_and(|uid| pick(comm, uid)),
                None => false,
            })
            .map(str::to_owned)
            .collect()
    }

    /// Waits (bounded by tries) until a dump of `comm` is logged.
    fn wait_for(&self, comm: &str) -> bool {
        (0..500).any(|_| {
            let found = !self.dumps(|c, _| c == comm).is_empty();
            if !found {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            found
        })
    }
}

impl Drop for PipeHandler {
    fn drop(&mut self) {
        let _ = std::fs::write(CORE_PATTERN, self.saved.trim_end());
    }
}

#[test]
fn a_crashing_process_plugin_starts_no_core_dump_handler() {
    let env = Env::with_process_fixture();
    let handler = PipeHandler::install(env.dir.path());
    // Unconfined, the fixture's abort does reach the handler.
    let control = std::process::Command::new(testkit::workspace_bin("fixture-plugin"))
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            let mut stdin = c.stdin.take().unwrap();
            stdin.write_all(br#"{"protocol":"1.0","plugin":"fx","inputs":{"mode":"abort"}}"#)?;
            drop(stdin);
            c.wait()
        })
        .unwrap();
    assert!(!control.success());
    assert!(handler.wait_for("fixture-plugin"), "the handler never ran");
    // Under process: the plugin (its per-run uid) and the runner (root, comm "3": executed from
    // its descriptor), which ends by the same signal, dump nothing.
    let out = env
        .launch(
            "fixture-p",
            &["--require-process-sandbox", "--input", "mode=abort"],
        )
        .output()
        .unwrap();
    let e = testkit::assert_refused(&out, 3, Kind::PluginSignal);
    assert!(e.message.contains("signal 6"), "{}", e.message);
    // A handler started by that crash would have logged by now (the control took far less).
    std::thread::sleep(std::time::Duration::from_millis(500));
    let run_uids = 0x7F00_0000..0x7F40_0000;
    assert_eq!(
        handler.dumps(|comm, uid| comm == "3" || run_uids.contains(&uid)),
        Vec::<String>::new()
    );
}
