//! The crash campaign: `dot-launch`, `dot-launch recover` and `dot-discard` SIGKILLed at random
//! points, round after round on one root, each round committing two files into a target of its
//! own. A kill lands at a failpoint (dot-launch's commit steps, the run directory's removal
//! steps, recover's renames, discard's temp files; `NAME@N` picks the N-th time a step is reached)
//! or after a random delay. After each round, one `recover` and one `dot-discard` must exit 0 and
//! leave no run directory, and the round's target must hold exactly the old files or exactly the
//! new ones, without a temp file. At least 500 processes must have died by SIGKILL.
//!
//! The random choices come from a fixed seed (`DOT_CRASH_SEED` picks another; the seed is in
//! every failure message), so a failing round can be replayed. `DOT_CRASH_ROUNDS` sets the number
//! of rounds (default 440).

#![allow(clippy::unwrap_used)]

mod common;

use common::{discard, recover, tool, wait_no_processes_under, Env};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// xorshift64*: small, deterministic, good enough to pick points.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// Where a process is killed.
#[derive(Clone, Debug)]
enum Kill {
    /// `DOT_FAILPOINT=…`.
    At(String),
    /// SIGKILL after this long.
    After(Duration),
}

/// dot-launch's failpoints (faults.rs checks the list against the sources) and its run
/// directory's removal steps.
const LAUNCH_POINTS: [&str; 16] = [
    "after-begin",
    "request-sent",
    "after-temp",
    "after-prepared",
    "between-renames",
    "before-committed",
    "remove-entry@1",
    "remove-entry@2",
    "remove-entry@3",
    "remove-entry@4",
    "remove-entry@5",
    "before-journal",
    "before-rmdir",
    // Injected as often again as the removal points: a commit is killed more often.
    "after-prepared",
    "between-renames",
    "before-committed",
];
const RECOVER_POINTS: [&str; 9] = [
    "between-renames",
    "remove-entry@1",
    "remove-entry@2",
    "remove-entry@3",
    "remove-entry@4",
    "remove-entry@5",
    "before-journal",
    "before-rmdir",
    "between-renames",
];
const DISCARD_POINTS: [&str; 10] = [
    "remove-entry@1",
    "remove-entry@2",
    "remove-entry@3",
    "remove-entry@4",
    "remove-temp@1",
    "remove-temp@2",
    "before-journal",
    "before-rmdir",
    "remove-temp@1",
    "before-journal",
];

/// A failpoint from `points` or, one time in three, a delay below `window`.
fn choose(rng: &mut Rng, points: &[&str], window: Duration) -> Kill {
    if rng.below(3) == 0 {
        let us = rng.below(window.as_micros() as u64);
        Kill::After(Duration::from_micros(us))
    } else {
        Kill::At(rng.pick(points).to_owned())
    }
}

/// Runs `cmd` with `kill`; returns whether it died by SIGKILL.
fn run(mut cmd: Command, kill: &Kill) -> bool {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match kill {
        Kill::At(point) => {
            cmd.env("DOT_FAILPOINT", point);
            cmd.status().unwrap().signal() == Some(9)
        }
        Kill::After(delay) => {
            let mut child = cmd.spawn().unwrap();
            std::thread::sleep(*delay);
            let _ = child.kill();
            child.wait().unwrap().signal() == Some(9)
        }
    }
}

fn recover_cmd(root: &Path) -> Command {
    let mut c = tool("dot-launch");
    c.arg("--root").arg(root).arg("recover");
    c
}

fn discard_cmd(root: &Path) -> Command {
    let mut c = tool("dot-discard");
    c.arg("--root").arg(root);
    c
}

/// The files of a target directory, name and bytes, sorted.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    common::names(dir)
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(dir.join(&n)).unwrap();
            (n, bytes)
        })
        .collect()
}

/// How long an unkilled launch takes, as the window timed kills are drawn from.
fn launch_window(env: &Env, name: &str, consent: &str) -> Duration {
    let target = env.dir.join("calibrate");
    std::fs::create_dir_all(&target).unwrap();
    let mut longest = Duration::ZERO;
    for _ in 0..3 {
        let start = Instant::now();
        let out = common::launch_into(
            &env.root,
            name,
            &target,
            &[consent, "--input", "mode=two-outputs"],
        )
        .output()
        .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        longest = longest.max(start.elapsed());
    }
    longest
}

#[derive(Debug, Default)]
struct Kills {
    launch: u32,
    recover: u32,
    discard: u32,
}

#[test]
fn sigkill_anywhere_then_recover_and_discard_leave_no_run_and_every_target_all_old_or_all_new() {
    let seed: u64 = std::env::var("DOT_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0d07_c0ff_ee13);
    let rounds: usize = std::env::var("DOT_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(440);
    let mut rng = Rng(seed | 1);
    let env = Env::new();
    env.register(
        "fx-process",
        &testkit::workspace_bin("fixture-plugin"),
        "process",
        &["mode", "a", "b"],
    );
    let windows = [
        launch_window(&env, "fixture", "--allow-audit-plugin"),
        launch_window(&env, "fx-process", "--require-process-sandbox"),
    ];
    let small = Duration::from_millis(4);
    let mut kills = Kills::default();
    let started = Instant::now();
    for round in 0..rounds {
        let what = format!("seed {seed} round {round}");
        let target: PathBuf = env.dir.join(format!("t{round}"));
        std::fs::create_dir(&target).unwrap();
        let old = vec![("a.txt".to_owned(), format!("old a {round}\n").into_bytes())];
        let new = vec![
            ("a.txt".to_owned(), format!("new a {round}\n").into_bytes()),
            ("b.txt".to_owned(), format!("new b {round}\n").into_bytes()),
        ];
        std::fs::write(target.join("a.txt"), &old[0].1).unwrap();
        // One round in eight runs the plugin under process containment.
        let process = rng.below(8) == 0;
        let (name, consent, window) = if process {
            ("fx-process", "--require-process-sandbox", windows[1])
        } else {
            ("fixture", "--allow-audit-plugin", windows[0])
        };
        let a = format!("a=new a {round}\n");
        let b = format!("b=new b {round}\n");
        let launch = common::launch_into(
            &env.root,
            name,
            &target,
            &[
                consent,
                "--input",
                "mode=two-outputs",
                "--input",
                &a,
                "--input",
                &b,
            ],
        );
        let kill = choose(&mut rng, &LAUNCH_POINTS, window);
        kills.launch += u32::from(run(launch, &kill));
        // Then a recover and a discard that may be killed too (their failpoints are reached only
        // when the launch left them something to do).
        let k = choose(&mut rng, &RECOVER_POINTS, small);
        kills.recover += u32::from(run(recover_cmd(&env.root), &k));
        let k = choose(&mut rng, &DISCARD_POINTS, small);
        kills.discard += u32::from(run(discard_cmd(&env.root), &k));
        // A plugin whose launcher was killed dies of its parent-death signal; wait for it before
        // the final pass, which must find no live run.
        let left = wait_no_processes_under(&env.root);
        assert!(
            left.is_empty(),
            "{what} ({kill:?}): processes left: {left:?}"
        );
        let r = recover(&env.root);
        assert_eq!(
            r.status.code(),
            Some(0),
            "{what} ({kill:?}): recover: {r:?}"
        );
        let d = discard(&env.root);
        assert_eq!(
            d.status.code(),
            Some(0),
            "{what} ({kill:?}): discard: {d:?}"
        );
        assert_eq!(
            env.runs(),
            Vec::<String>::new(),
            "{what} ({kill:?}): runs left"
        );
        let now = contents(&target);
        assert!(
            now == old || now == new,
            "{what} ({kill:?}): the target is neither all-old nor all-new: {now:?}"
        );
    }
    let total = kills.launch + kills.recover + kills.discard;
    eprintln!(
        "crash campaign: seed {seed}, {rounds} rounds, {total} SIGKILLs {kills:?}, {:.1} s",
        started.elapsed().as_secs_f64()
    );
    if rounds >= 440 {
        assert!(total >= 500, "only {total} kills: {kills:?}");
        assert!(
            kills.launch >= 200 && kills.recover >= 50 && kills.discard >= 50,
            "{kills:?}"
        );
    }
}
