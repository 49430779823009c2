//! A `process` plugin's working directory is a private tmpfs bounded in bytes and inodes: filling
//! it stops at its size, nesting directories stops at its inode count (so depth and count are
//! bounded too), and nothing of it ever reaches the disk or needs cleaning up.

#![allow(clippy::unwrap_used)]

mod common;

use common::{result, Env};

/// `bytes B ERR depth D ERR` from the fixture's `fill-stage` mode.
fn parse(line: &str) -> (u64, String, u64, String) {
    let f: Vec<&str> = line.split_whitespace().collect();
    assert_eq!((f.len(), f[0], f[3]), (6, "bytes", "depth"), "{line}");
    (
        f[1].parse().unwrap(),
        f[2].to_owned(),
        f[4].parse().unwrap(),
        f[5].to_owned(),
    )
}

#[test]
fn filling_or_nesting_the_stage_stops_at_its_bounds_and_leaves_nothing_on_disk() {
    let env = Env::with_process_fixture();
    let out = env
        .launch(
            "fixture-p",
            &["--require-process-sandbox", "--input", "mode=fill-stage"],
        )
        .output()
        .unwrap();
    let r = result(&out);
    let stage = r.enforced.unwrap().stage;
    let line = std::fs::read_to_string(env.target.join("result.txt")).unwrap();
    let (bytes, full, depth, nested) = parse(&line);
    assert_eq!(full, "ENOSPC", "{line}");
    assert!(
        bytes <= stage.bytes,
        "{bytes} written into a {} byte stage",
        stage.bytes
    );
    assert!(
        bytes > stage.bytes / 2,
        "{line}: the stage holds at least half its size"
    );
    assert_eq!(nested, "ENOSPC", "{line}");
    assert!(
        depth < stage.inodes,
        "{depth} levels in a {} inode stage",
        stage.inodes
    );
    assert!(depth > stage.inodes / 2, "{line}");
    // The run directory is gone: nothing the plugin made was ever on disk.
    assert_eq!(env.runs(), Vec::<String>::new());
}
