//! BENCHMARKS.md's explanation of a missed launch target: the same launch with its root on a
//! tmpfs, when `bench/run.sh` measured it, says how much of the launch is its run's file-system
//! work; without that row nothing is claimed.
#![allow(clippy::unwrap_used)]

use bench::stats::summarize;
use bench::wall::Measured;
use testkit::TempDir;

fn row(name: &str, median_us: f64) -> Measured {
    Measured {
        name: name.into(),
        command: format!("cmd-{name}"),
        wall: summarize(&[median_us]),
    }
}

/// The document for a wall run of `rows`, with the scratch file system recorded.
fn document(rows: &[(&str, f64)]) -> String {
    let dir = TempDir::new();
    let wall: Vec<Measured> = rows.iter().map(|&(n, us)| row(n, us)).collect();
    std::fs::write(dir.join("wall.json"), serde_json::to_vec(&wall).unwrap()).unwrap();
    std::fs::write(
        dir.join("scratch-fs.txt"),
        "/dev/vda ext4 rw,relatime,discard\n",
    )
    .unwrap();
    bench::report::write(dir.path()).unwrap()
}

fn note<'a>(doc: &'a str, id: &str) -> &'a str {
    let start = doc
        .find(&format!("- **{id}**:"))
        .unwrap_or_else(|| panic!("no {id} note in:\n{doc}"));
    doc[start..].lines().next().unwrap()
}

#[test]
fn a_missed_audit_target_says_what_the_file_system_adds_when_measured() {
    let base = [
        ("hello", 800.0),
        ("digest-hello", 2000.0),
        ("launch-audit", 3500.0),
        ("launch-process", 4000.0),
        ("bwrap-full", 3200.0),
    ];
    let mut with_tmpfs = base.to_vec();
    with_tmpfs.extend([
        ("launch-audit-tmpfs", 3000.0),
        ("launch-process-tmpfs", 3680.0),
    ]);
    let doc = document(&with_tmpfs);
    assert!(
        doc.contains("+0.70 ms (3.50 ms vs 0.80 ms + 2.00 ms) | **NOT MET**"),
        "{doc}"
    );
    let p8 = note(&doc, "P8");
    assert!(
        p8.contains(
            "on a tmpfs the same launch takes 3.00 ms: 0.50 ms of the launch is its run's work \
             on the scratch file system (`/dev/vda ext4 rw,relatime,discard`),"
        ),
        "{p8}"
    );
    assert!(
        p8.contains("Measured that way it is +0.20 ms from that floor."),
        "{p8}"
    );
    let p1 = note(&doc, "P1");
    // No runner timings here: the floor is three starts of hello alone.
    assert!(
        p1.contains("That floor alone is 0.750× bwrap-full."),
        "{p1}"
    );
    assert!(
        p1.contains("on a tmpfs the same launch takes 3.68 ms: 0.32 ms of the launch"),
        "{p1}"
    );
    assert!(
        p1.contains("Measured that way it is 1.150× bwrap-full."),
        "{p1}"
    );

    // Without the in-memory rows, the notes make no claim about the file system.
    let doc = document(&base);
    assert!(!note(&doc, "P8").contains("tmpfs"), "{doc}");
    assert!(!note(&doc, "P1").contains("tmpfs"), "{doc}");
}
