//! The live line a run past about a second shows on a terminal: the plugin's name, the time it has
//! run against its deadline, and the bytes it has sent. It goes to stderr only when stderr is a
//! terminal (never to stdout, never into a pipe or a file a caller parses), is rewritten in place
//! and erased before dot-launch prints anything else. Not shown with `--stderr pass`, whose lines
//! would tangle with it.

use std::io::Write;
use std::time::{Duration, Instant};

/// How long a run goes before the line appears.
const AFTER: Duration = Duration::from_secs(1);
/// How often it is rewritten.
pub const EVERY: Duration = Duration::from_millis(250);

#[derive(Debug)]
pub struct Progress {
    enabled: bool,
    name: String,
    deadline: Duration,
    last: Option<Instant>,
}

impl Progress {
    /// A line for the run of `name`, shown only when `enabled` (stderr is a terminal).
    pub fn new(name: &str, deadline: Duration, enabled: bool) -> Progress {
        Progress {
            enabled,
            name: name.to_owned(),
            deadline,
            last: None,
        }
    }

    /// Whether stderr is a terminal, the one place the line may go.
    pub fn stderr_is_terminal() -> bool {
        nix::unistd::isatty(std::io::stderr()).unwrap_or(false)
    }

    /// How long the supervisor may wait before it must call `tick` again.
    pub fn wait_at_most(&self) -> Option<Duration> {
        self.enabled.then_some(EVERY)
    }

    /// Rewrites the line if the run is past `AFTER` and the last one is `EVERY` old.
    pub fn tick(&mut self, started: Instant, stdout_bytes: u64, stderr_bytes: u64) {
        let now = Instant::now();
        let elapsed = now.duration_since(started);
        if !self.enabled || elapsed < AFTER || self.last.is_some_and(|l| now - l < EVERY) {
            return;
        }
        self.last = Some(now);
        let line = line(
            &self.name,
            elapsed,
            self.deadline,
            stdout_bytes,
            stderr_bytes,
        );
        let _ = write!(std::io::stderr(), "\r\x1b[K{line}");
    }

    /// Erases the line, if one was shown.
    pub fn clear(&mut self) {
        if self.last.take().is_some() {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
        }
    }
}

/// `dot-launch: NAME running 2.3 s of 30.0 s, 1.2 KiB out, 0 B err`.
pub fn line(name: &str, elapsed: Duration, deadline: Duration, out: u64, err: u64) -> String {
    format!(
        "dot-launch: {name} running {:.1} s of {:.1} s, {} out, {} err",
        elapsed.as_secs_f64(),
        deadline.as_secs_f64(),
        bytes(out),
        bytes(err)
    )
}

fn bytes(n: u64) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KiB", n as f64 / 1024.0),
        _ => format!("{:.1} MiB", n as f64 / 1_048_576.0),
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_elapsed_against_the_deadline_and_bytes() {
        assert_eq!(
            line(
                "hello",
                Duration::from_millis(2340),
                Duration::from_secs(30),
                1536,
                0
            ),
            "dot-launch: hello running 2.3 s of 30.0 s, 1.5 KiB out, 0 B err"
        );
        assert_eq!(bytes(3 << 20), "3.0 MiB");
    }

    #[test]
    fn nothing_is_shown_when_disabled() {
        let mut p = Progress::new("x", Duration::from_secs(1), false);
        p.tick(Instant::now() - Duration::from_secs(5), 1, 1);
        assert!(p.last.is_none());
        assert_eq!(p.wait_at_most(), None);
    }
}
