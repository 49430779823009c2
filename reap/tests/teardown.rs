//! A killed process holding gigabytes keeps running in the kernel while its memory is torn down:
//! `reap_group` waits for it (it shows `PF_EXITING`) instead of calling it a survivor.
//!
//! The big process is the workspace's fixture plugin in its `alloc-sleep` mode. The ignored test
//! `measure_teardown` prints how long the kernel takes, for the reap page (`man/dot-reap.1`):
//! `cargo test -p reap --test teardown -- --ignored --nocapture` (after building the binaries).

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use reap::{reap_group, Options, Outcome, ProcStat, PF_EXITING};
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const GIB: usize = 1 << 30;

/// The fixture plugin in a new process group, holding `size` touched bytes and `threads` more
/// threads; returned once its resident set has reached `size`.
fn big_process(size: usize, threads: usize) -> Child {
    sys::process::set_child_subreaper().expect("subreaper");
    let mut child = Command::new(testkit::workspace_bin("fixture-plugin"))
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn the fixture plugin");
    let request = format!(
        r#"{{"protocol":"1.0","plugin":"big","inputs":{{"mode":"alloc-sleep","size":"{size}","threads":"{threads}"}}}}"#
    );
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(request.as_bytes()).expect("request");
    drop(stdin);
    // Bounded by tries, not by time: touching gigabytes takes about a second.
    let pid = child.id();
    let mut tries = 0;
    while resident(pid) < size {
        tries += 1;
        assert!(tries < 120_000, "the fixture never reached {size} bytes");
        std::thread::sleep(Duration::from_millis(1));
    }
    child
}

/// Resident bytes of `pid` (0 when it cannot be read).
fn resident(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/statm"))
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<usize>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn stat(path: &str, pid: i32) -> Option<ProcStat> {
    std::fs::read(path)
        .ok()
        .and_then(|b| ProcStat::parse(pid, &b))
}

fn reaps_a_big_process(threads: usize) {
    let mut child = big_process(2 * GIB, threads);
    let pgid = child.id() as i32;
    let report = reap_group(pgid, Some(&mut child), &Options::default()).expect("confirmed dead");
    assert!(report.survivors.is_empty());
    assert!(matches!(
        report.outcome,
        Outcome::AllZombie | Outcome::Absent
    ));
    let status = child.try_wait().expect("status").expect("reaped");
    assert_eq!(status.signal(), Some(9));
    assert_eq!(
        kill(Pid::from_raw(pgid), None),
        Err(nix::errno::Errno::ESRCH),
        "the leader is gone, not a zombie"
    );
}

#[test]
fn a_process_tearing_down_gigabytes_is_reaped_not_a_survivor() {
    reaps_a_big_process(0);
}

#[test]
fn a_threaded_process_tearing_down_gigabytes_is_reaped_not_a_survivor() {
    reaps_a_big_process(4);
}

/// Kills a process holding `gib` GiB with `threads` more threads and watches `/proc` until every
/// task is a zombie or gone: prints when `PF_EXITING` first showed and when the process became a
/// zombie. Once a task shows `PF_EXITING` it keeps it.
fn measure(gib: usize, threads: usize) {
    let mut child = big_process(gib * GIB, threads);
    let pid = child.id() as i32;
    let started = Instant::now();
    kill(Pid::from_raw(pid), Signal::SIGKILL).expect("kill");
    let mut first_exiting = None;
    let mut states = String::new();
    let mut last = None;
    let zombie = loop {
        let Some(leader) = stat(&format!("/proc/{pid}/stat"), pid) else {
            break started.elapsed();
        };
        let mut all_exiting = true;
        for task in std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
        {
            let Ok(task) = task else { continue };
            let tid: i32 = task.file_name().to_string_lossy().parse().unwrap_or(0);
            if let Some(t) = stat(&format!("/proc/{pid}/task/{tid}/stat"), tid) {
                all_exiting &= t.is_exiting();
            }
        }
        if all_exiting && first_exiting.is_none() {
            first_exiting = Some(started.elapsed());
        }
        if first_exiting.is_some() {
            assert!(all_exiting, "a task stopped exiting");
        }
        let seen = (leader.state, leader.flags & PF_EXITING != 0);
        if last != Some(seen) {
            last = Some(seen);
            states.push_str(&format!(
                " {}{}",
                seen.0 as char,
                ["", "+exiting"][usize::from(seen.1)]
            ));
        }
        if leader.is_dead() {
            break started.elapsed();
        }
    };
    child.wait().expect("wait");
    println!(
        "{gib:>3} GiB, {threads} more threads: PF_EXITING on every task after {:?}, a zombie after {zombie:?}; leader seen:{states}",
        first_exiting.unwrap_or(zombie)
    );
}

#[test]
#[ignore = "a measurement for the documentation: allocates up to 12 GiB"]
fn measure_teardown() {
    for (gib, threads) in [(1, 0), (3, 0), (3, 0), (3, 4), (6, 0), (12, 0)] {
        measure(gib, threads);
    }
}
