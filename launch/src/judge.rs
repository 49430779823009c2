//! Deciding, from what supervision observed, whether the plugin succeeded: for `process`, whether
//! `dot-sandbox` confirmed the containment it enforced ([`confirmed`]); then whether the plugin
//! itself succeeded and what it answered ([`judge`]). Pure functions of [`Observed`]: nothing here
//! touches the run.

use crate::exec::{Observed, RunLimits};
use proto::protocol::{Response, ResponseStatus, PROTOCOL_VERSION};
use proto::runner::{Enforced, SandboxReport};
use proto::{Containment, ErrorObject, Kind};
use std::os::unix::process::ExitStatusExt;

/// The stream that went over its limit first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    Stdout,
    Stderr,
}

/// How a plugin that ran failed (exit 3, nothing committed). Each is one kind of docs/errors.md;
/// its message says what was seen.
#[derive(Debug, thiserror::Error)]
pub enum PluginFailure {
    #[error("the plugin exited with status {code}")]
    Exit { code: i32 },
    #[error("the plugin was killed by signal {signal}")]
    Signal { signal: i32 },
    #[error(
        "the plugin still ran at its deadline of {deadline_ms} ms (stopped after {ran_ms} ms)"
    )]
    Deadline { deadline_ms: u128, ran_ms: u64 },
    #[error("stdout went over its limit ({seen} bytes seen); {stdout}")]
    StdoutLimit { seen: u64, stdout: Excerpt },
    #[error("stderr went over its limit ({seen} bytes seen)")]
    StderrLimit { seen: u64 },
    #[error("the plugin was stopped by its CPU limit of {seconds} s, every thread together (it used {used_ms} ms)")]
    CpuLimit { seconds: u64, used_ms: u64 },
    #[error("the plugin was stopped by its file-size limit: it wrote past {bytes} bytes in one file (SIGXFSZ)")]
    FileSizeLimit { bytes: u64 },
    #[error("stdout is not one protocol response: {why}; {stdout}")]
    NotOneResponse { why: String, stdout: Excerpt },
    #[error("response protocol {0:?} is not {PROTOCOL_VERSION}")]
    OtherProtocol(String),
    /// The plugin answered `status: "error"`: its response is kept in the run's result.
    #[error("{message}")]
    Error {
        message: String,
        response: Box<Response>,
    },
    #[error("{0}")]
    OutputsInvalid(String),
    #[error("{0}")]
    TargetConflict(String),
    #[error("{0}")]
    SandboxNoReport(&'static str),
}

impl PluginFailure {
    pub fn kind(&self) -> Kind {
        match self {
            PluginFailure::Exit { .. } => Kind::PluginExit,
            PluginFailure::Signal { .. } => Kind::PluginSignal,
            PluginFailure::Deadline { .. } => Kind::Deadline,
            PluginFailure::StdoutLimit { .. } => Kind::StdoutLimit,
            PluginFailure::StderrLimit { .. } => Kind::StderrLimit,
            PluginFailure::CpuLimit { .. } => Kind::CpuLimit,
            PluginFailure::FileSizeLimit { .. } => Kind::FileSizeLimit,
            PluginFailure::NotOneResponse { .. } | PluginFailure::OtherProtocol(_) => {
                Kind::PluginProtocol
            }
            PluginFailure::Error { .. } => Kind::PluginError,
            PluginFailure::OutputsInvalid(_) => Kind::OutputsInvalid,
            PluginFailure::TargetConflict(_) => Kind::TargetConflict,
            PluginFailure::SandboxNoReport(_) => Kind::SandboxNoReport,
        }
    }

    /// The first bytes of stdout, for a failure that is about them.
    pub fn stdout(&self) -> Option<&Excerpt> {
        match self {
            PluginFailure::NotOneResponse { stdout, .. }
            | PluginFailure::StdoutLimit { stdout, .. } => Some(stdout),
            _ => None,
        }
    }

    /// Whether the plugin's stderr may say why it failed: every failure of the plugin itself (its
    /// exit, a signal, the deadline, a limit, its stdout, its answer, its outputs). Not a name
    /// taken in the target, nor a runner that confirmed nothing (the runner's own refusals are
    /// on its report, not on stderr).
    pub fn stderr_may_explain(&self) -> bool {
        !matches!(
            self,
            PluginFailure::TargetConflict(_) | PluginFailure::SandboxNoReport(_)
        )
    }
}

/// The first bytes of a stream as text that is safe to print on a terminal: at most
/// [`Excerpt::BYTES`] bytes, cut at a character, each control, format or other unprintable
/// character escaped as Rust's `escape_debug` writes it (`\n`, `\u{1b}`, `\u{202e}`; `\`, `"`
/// and `'` escaped too), each byte that is not part of UTF-8 text as `\xNN`; and how many bytes
/// of the stream are not shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Excerpt {
    pub text: String,
    pub more: u64,
}

impl Excerpt {
    /// The most bytes of the stream an excerpt shows.
    pub const BYTES: usize = 80;

    /// The excerpt of `held`, the first bytes of a stream of `total` bytes.
    pub fn of(held: &[u8], total: u64) -> Excerpt {
        let mut text = String::new();
        let mut shown = 0usize;
        'chunks: for chunk in held.utf8_chunks() {
            for c in chunk.valid().chars() {
                if shown + c.len_utf8() > Excerpt::BYTES {
                    break 'chunks;
                }
                shown += c.len_utf8();
                text.extend(c.escape_debug());
            }
            for b in chunk.invalid() {
                if shown + 1 > Excerpt::BYTES {
                    break 'chunks;
                }
                shown += 1;
                text.push_str(&format!("\\x{b:02x}"));
            }
        }
        Excerpt {
            text,
            more: total.max(held.len() as u64).saturating_sub(shown as u64),
        }
    }
}

impl std::fmt::Display for Excerpt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.text.is_empty(), self.more) {
            (true, 0) => f.write_str("stdout was empty"),
            (false, 0) => write!(f, "stdout was \"{}\"", self.text),
            (_, more) => write!(f, "stdout began \"{}\" and {more} more bytes", self.text),
        }
    }
}

/// Why a `process` run's containment was not confirmed.
#[derive(Debug)]
pub enum Unconfirmed {
    /// `dot-sandbox` refused to confine the plugin; its error object (`sandbox-refused`).
    Refused(Box<ErrorObject>),
    /// It reported nothing usable (`sandbox-no-report`).
    NoReport(PluginFailure),
}

/// What `dot-sandbox` says it enforced: its report line, and the stage it handed over with it.
pub fn confirmed(o: &Observed) -> Result<Enforced, Unconfirmed> {
    let line = o.report.split(|&b| b == b'\n').next().unwrap_or_default();
    match serde_json::from_slice::<SandboxReport>(line) {
        Ok(SandboxReport::Enforced(_)) if o.stage.is_none() => Err(Unconfirmed::NoReport(
            PluginFailure::SandboxNoReport("dot-sandbox reported its containment but handed over no stage: the plugin result is discarded"),
        )),
        Ok(SandboxReport::Enforced(e)) => Ok(e),
        Ok(SandboxReport::Error(error)) => Err(Unconfirmed::Refused(Box::new(error))),
        Err(_) => Err(Unconfirmed::NoReport(PluginFailure::SandboxNoReport(
            "dot-sandbox reported nothing: containment was not confirmed, the plugin result is discarded",
        ))),
    }
}

/// The resource limit a signal shows the plugin reached, at `process` (where the runner set the
/// limits; an `audit` plugin's signal is only a signal). The kernel sends `SIGXFSZ` for a write
/// past `RLIMIT_FSIZE`, and `SIGXCPU` at `RLIMIT_CPU`'s soft value, then `SIGKILL` one second
/// later at its hard value (a plugin that caught or ignored `SIGXCPU`). Nothing else in a run
/// sends `SIGKILL` before the group is terminated, but the kernel's CPU clock for the limit is
/// sampled on its ticks while `wait4` reports the scheduler's exact time, which can be lower (by
/// 12% at `SIGXCPU`, measured on a loaded machine): a `SIGKILL` counts as the CPU limit when the
/// CPU time is at least three quarters of the soft limit (the hard limit is one second above it).
/// Memory (`RLIMIT_AS`), tasks (`RLIMIT_NPROC`) and descriptors (`RLIMIT_NOFILE`) send nothing:
/// the call fails, and what the plugin does then is its own (docs/protocol.md).
fn limit_signal(o: &Observed, signal: i32, limits: &RunLimits) -> Option<PluginFailure> {
    let used_us = o.usage.map(|u| u.user_us.saturating_add(u.system_us));
    let cpu = PluginFailure::CpuLimit {
        seconds: limits.run.cpu_budget(),
        used_ms: used_us.unwrap_or(0) / 1000,
    };
    match signal {
        nix::libc::SIGXFSZ => Some(PluginFailure::FileSizeLimit {
            bytes: limits.run.output_bytes,
        }),
        nix::libc::SIGXCPU => Some(cpu),
        nix::libc::SIGKILL if used_us? >= limits.run.cpu_budget().saturating_mul(750_000) => {
            Some(cpu)
        }
        _ => None,
    }
}

/// Whether the plugin succeeded: its response when it did. In order, the first that holds is the
/// failure: the deadline, a stream over its limit, a signal (at `process`, a limit's signal is
/// that limit's kind), a nonzero exit (a plugin that explains itself with `status: "error"` keeps
/// its message), stdout that is not exactly one response of this protocol, a response with
/// `status: "error"`.
pub fn judge(
    o: &Observed,
    limits: &RunLimits,
    containment: Containment,
) -> Result<Response, PluginFailure> {
    if o.deadline_hit {
        return Err(PluginFailure::Deadline {
            deadline_ms: limits.deadline().as_millis(),
            ran_ms: o.duration.as_millis() as u64,
        });
    }
    match o.over_limit {
        Some(Overflow::Stdout) => {
            return Err(PluginFailure::StdoutLimit {
                seen: o.stdout_bytes,
                stdout: Excerpt::of(&o.stdout, o.stdout_bytes),
            })
        }
        Some(Overflow::Stderr) => {
            return Err(PluginFailure::StderrLimit {
                seen: o.stderr_bytes,
            })
        }
        None => {}
    }
    if let Some(signal) = o.status.signal() {
        let limit = match containment {
            Containment::Process => limit_signal(o, signal, limits),
            Containment::Audit => None,
        };
        return Err(limit.unwrap_or(PluginFailure::Signal { signal }));
    }
    let parsed = Response::parse(&o.stdout, o.stdout.len().max(1));
    if let Some(code) = o.status.code().filter(|c| *c != 0) {
        return Err(match parsed {
            Ok(response)
                if response.protocol == PROTOCOL_VERSION
                    && response.status == ResponseStatus::Error =>
            {
                let message = format!(
                    "{} (exit status {code})",
                    response
                        .message
                        .as_deref()
                        .unwrap_or("the plugin reported an error")
                );
                PluginFailure::Error {
                    message,
                    response: Box::new(response),
                }
            }
            _ => PluginFailure::Exit { code },
        });
    }
    let response = parsed.map_err(|e| PluginFailure::NotOneResponse {
        why: e.to_string(),
        stdout: Excerpt::of(&o.stdout, o.stdout_bytes),
    })?;
    if response.protocol != PROTOCOL_VERSION {
        return Err(PluginFailure::OtherProtocol(response.protocol));
    }
    if response.status == ResponseStatus::Error {
        let message = response
            .message
            .clone()
            .unwrap_or_else(|| "the plugin reported an error".into());
        return Err(PluginFailure::Error {
            message,
            response: Box::new(response),
        });
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LaunchError;
    use cli::Next;
    use std::os::unix::process::ExitStatusExt;
    use std::time::Duration;

    /// What supervision saw of a plugin that exited with `status` (a wait status) after writing
    /// `stdout`.
    fn observed(status: i32, stdout: &str) -> Observed {
        Observed {
            stdout: stdout.as_bytes().to_vec(),
            stdout_bytes: stdout.len() as u64,
            status: std::process::ExitStatus::from_raw(status),
            duration: Duration::from_millis(7),
            ..Observed::default()
        }
    }

    /// The standard limits with a deadline of `deadline_ms`.
    fn limits(deadline_ms: u64) -> RunLimits {
        let run = proto::limits::Limits {
            deadline_ms,
            ..proto::limits::Limits::STANDARD
        };
        RunLimits::new(
            &run,
            crate::exec::StreamLimits {
                stderr: crate::exec::StderrMode::Discard,
                max_stdout: 1 << 20,
                max_stderr: 1 << 16,
                report_denials: false,
            },
        )
    }

    /// A plugin killed by `signal` after `cpu_ms` of CPU time.
    fn killed(signal: i32, cpu_ms: u64) -> Observed {
        let mut o = observed(signal, "");
        o.usage = Some(sys::process::ExitUsage {
            user_us: cpu_ms * 700,
            system_us: cpu_ms * 300,
            max_rss_kib: 2048,
        });
        o
    }

    #[test]
    fn a_limits_signal_names_the_limit_at_process_only() {
        let mut l = limits(10_000);
        l.run.cpu_seconds = Some(2);
        l.run.output_bytes = 4096;
        use Containment::{Audit, Process};
        const CPU: &str = "the plugin was stopped by its CPU limit";
        let cases: [(Observed, Containment, Kind, &str); 7] = [
            (
                killed(SIGKILL, 2_004),
                Process,
                Kind::CpuLimit,
                "the plugin was stopped by its CPU limit of 2 s, every thread together (it used 2004 ms)",
            ),
            (killed(SIGKILL, 1_500), Process, Kind::CpuLimit, CPU),
            (killed(SIGKILL, 1_499), Process, Kind::PluginSignal, "the plugin was killed by signal 9"),
            (killed(SIGXCPU, 100), Process, Kind::CpuLimit, CPU),
            (
                killed(SIGXFSZ, 10),
                Process,
                Kind::FileSizeLimit,
                "the plugin was stopped by its file-size limit: it wrote past 4096 bytes",
            ),
            (killed(SIGXFSZ, 10), Audit, Kind::PluginSignal, "the plugin was killed by signal 25"),
            (killed(SIGKILL, 2_004), Audit, Kind::PluginSignal, "the plugin was killed by signal 9"),
        ];
        for (o, containment, kind, message) in cases {
            let f = judge(&o, &l, containment).expect_err(message);
            assert_eq!(f.kind(), kind, "{f}");
            assert!(f.to_string().starts_with(message), "{f}");
        }
    }

    const OK: &str = "{\"protocol\":\"1.0\",\"status\":\"ok\",\"outputs\":[\"a.txt\"]}\n";
    const ERROR: &str = "{\"protocol\":\"1.0\",\"status\":\"error\",\"message\":\"bad input\"}\n";
    const EXIT_1: i32 = 1 << 8;
    const SIGKILL: i32 = 9;
    const SIGXCPU: i32 = 24;
    const SIGXFSZ: i32 = 25;

    #[test]
    fn a_clean_exit_with_one_ok_response_succeeds() {
        let r = judge(&observed(0, OK), &limits(1_000), Containment::Process).expect("success");
        assert_eq!(r.status, ResponseStatus::Ok);
        assert_eq!(r.outputs, vec!["a.txt".to_owned()]);
    }

    #[test]
    fn each_failure_is_judged_with_its_kind_and_message() {
        let deadline = 250;
        let over = |which, stdout_bytes, stderr_bytes| {
            let mut o = observed(0, OK);
            o.over_limit = Some(which);
            o.stdout_bytes = stdout_bytes;
            o.stderr_bytes = stderr_bytes;
            o
        };
        let late = {
            let mut o = observed(SIGKILL, "");
            o.deadline_hit = true;
            o
        };
        let other_protocol = "{\"protocol\":\"2.0\",\"status\":\"ok\",\"outputs\":[]}\n";
        let cases: [(&str, Observed, Kind, &str); 11] = [
            (
                "exit 1, no response",
                observed(EXIT_1, ""),
                Kind::PluginExit,
                "the plugin exited with status 1",
            ),
            (
                "exit 1 with an ok response",
                observed(EXIT_1, OK),
                Kind::PluginExit,
                "the plugin exited with status 1",
            ),
            (
                "killed",
                observed(SIGKILL, OK),
                Kind::PluginSignal,
                "the plugin was killed by signal 9",
            ),
            (
                "deadline (before the signal)",
                late,
                Kind::Deadline,
                "the plugin still ran at its deadline of 250 ms (stopped after 7 ms)",
            ),
            (
                "stdout over",
                over(Overflow::Stdout, 99, 0),
                Kind::StdoutLimit,
                "stdout went over its limit (99 bytes seen)",
            ),
            (
                "stderr over",
                over(Overflow::Stderr, 0, 77),
                Kind::StderrLimit,
                "stderr went over its limit (77 bytes seen)",
            ),
            (
                "noise",
                observed(0, "hello\n"),
                Kind::PluginProtocol,
                "stdout is not one protocol response: ",
            ),
            (
                "two responses",
                observed(0, &format!("{OK}{OK}")),
                Kind::PluginProtocol,
                "stdout is not one protocol response: ",
            ),
            (
                "another protocol",
                observed(0, other_protocol),
                Kind::PluginProtocol,
                "response protocol \"2.0\" is not 1.0",
            ),
            (
                "status error",
                observed(0, ERROR),
                Kind::PluginError,
                "bad input",
            ),
            (
                "status error, exit 1",
                observed(EXIT_1, ERROR),
                Kind::PluginError,
                "bad input (exit status 1)",
            ),
        ];
        for (what, o, kind, message) in cases {
            let f = judge(&o, &limits(deadline), Containment::Audit).expect_err(what);
            assert_eq!(f.kind(), kind, "{what}: {f:?}");
            assert!(f.to_string().starts_with(message), "{what}: {f}");
            if let PluginFailure::Error { response, .. } = &f {
                assert_eq!(response.message.as_deref(), Some("bad input"), "{what}");
            }
        }
    }

    #[test]
    fn every_plugin_failure_has_an_exit_3_kind() {
        let response = Box::new(Response::parse(ERROR.as_bytes(), ERROR.len()).expect("valid"));
        let all = [
            PluginFailure::Exit { code: 1 },
            PluginFailure::Signal { signal: 9 },
            PluginFailure::Deadline {
                deadline_ms: 1,
                ran_ms: 2,
            },
            PluginFailure::StdoutLimit {
                seen: 1,
                stdout: Excerpt::of(b"x", 1),
            },
            PluginFailure::StderrLimit { seen: 1 },
            PluginFailure::CpuLimit {
                seconds: 1,
                used_ms: 1000,
            },
            PluginFailure::FileSizeLimit { bytes: 1 },
            PluginFailure::NotOneResponse {
                why: "x".into(),
                stdout: Excerpt::of(b"x", 1),
            },
            PluginFailure::OtherProtocol("2.0".into()),
            PluginFailure::Error {
                message: "m".into(),
                response,
            },
            PluginFailure::OutputsInvalid("x".into()),
            PluginFailure::TargetConflict("x".into()),
            PluginFailure::SandboxNoReport("x"),
        ];
        let kinds: std::collections::BTreeSet<Kind> = all.iter().map(PluginFailure::kind).collect();
        assert_eq!(
            kinds.len(),
            12,
            "one kind each, the two protocol failures share theirs"
        );
        for f in &all {
            assert_eq!(f.kind().exit_code(), proto::ExitCode::PluginFailed, "{f:?}");
        }
    }

    #[test]
    fn an_excerpt_is_bounded_cut_at_a_character_and_escaped_for_a_terminal() {
        let cut = format!("{}é", "a".repeat(79));
        let cases: [(&[u8], u64, &str, u64); 6] = [
            (b"", 0, "", 0),
            (b"hello\n", 6, "hello\\n", 0),
            (
                b"\x1b[31mred\xff\x07\"q\"",
                13,
                "\\u{1b}[31mred\\xff\\u{7}\\\"q\\\"",
                0,
            ),
            ("\u{202e}gnp.exe".as_bytes(), 10, "\\u{202e}gnp.exe", 0),
            (&[b'x'; 200], 5000, &"x".repeat(80), 4920),
            (cut.as_bytes(), 81, &"a".repeat(79), 2),
        ];
        for (held, total, text, more) in cases {
            let e = Excerpt::of(held, total);
            assert_eq!((e.text.as_str(), e.more), (text, more), "{held:?}");
            assert!(!e.text.chars().any(char::is_control), "{e:?}");
        }
        let noise = judge(
            &observed(0, "starting up\n{}\n"),
            &limits(1_000),
            Containment::Audit,
        )
        .expect_err("noise");
        assert!(
            noise
                .to_string()
                .ends_with("; stdout was \"starting up\\n{}\\n\""),
            "{noise}"
        );
        assert_eq!(
            noise.stdout().map(|e| e.text.as_str()),
            Some("starting up\\n{}\\n")
        );
        let mut long = observed(0, &"y".repeat(100));
        long.stdout_bytes = 1 << 20;
        long.over_limit = Some(Overflow::Stdout);
        let over = judge(&long, &limits(1_000), Containment::Audit).expect_err("over");
        assert!(
            over.to_string().ends_with(&format!(
                "stdout began \"{}\" and {} more bytes",
                "y".repeat(80),
                (1 << 20) - 80
            )),
            "{over}"
        );
    }

    #[test]
    fn a_failure_with_discarded_stderr_names_the_launch_with_stderr_tail() {
        use crate::exec::StderrMode;
        let run = || {
            let r = serde_json::json!({"schema":1,"txid":"t","name":"p","version":"1.0.0",
                "sha256":"0".repeat(64),"trust":"local","containment":"audit",
                "dependencies":"pinned","status":"failed",
                "exit":{"code":1},"duration_ms":1,"stdout_bytes":0,"stderr_bytes":5,"outputs":[]});
            serde_json::from_value(r).expect("a run result")
        };
        let base = || Next::cmd("dot-launch").args(["--root", "/r", "p"]);
        let next_of = |f: PluginFailure, mode| {
            let e = LaunchError::plugin(run(), f).see_stderr(mode, base());
            e.to_error_object().next
        };
        use proto::ToErrorObject;
        assert_eq!(
            next_of(PluginFailure::Exit { code: 1 }, StderrMode::Discard).as_deref(),
            Some("dot-launch --root /r p --stderr tail")
        );
        assert_eq!(
            next_of(PluginFailure::Exit { code: 1 }, StderrMode::Tail),
            None
        );
        assert_eq!(
            next_of(PluginFailure::Exit { code: 1 }, StderrMode::Pass),
            None
        );
        for f in [
            PluginFailure::TargetConflict("x".into()),
            PluginFailure::SandboxNoReport("x"),
        ] {
            assert_eq!(next_of(f, StderrMode::Discard), None);
        }
        let fields = |f: PluginFailure| {
            let o = LaunchError::plugin(run(), f).to_error_object();
            (o.field, o.value)
        };
        assert_eq!(
            fields(PluginFailure::OtherProtocol("2.0".into())),
            (Some("protocol".into()), Some("2.0".into()))
        );
        assert_eq!(
            fields(PluginFailure::NotOneResponse {
                why: "x".into(),
                stdout: Excerpt::of(b"\x1bno", 3),
            }),
            (Some("stdout".into()), Some("\\u{1b}no".into()))
        );
    }

    #[test]
    fn a_process_run_is_confirmed_only_by_a_report_with_its_stage() {
        let nothing = observed(0, OK);
        assert!(matches!(
            confirmed(&nothing),
            Err(Unconfirmed::NoReport(PluginFailure::SandboxNoReport(_)))
        ));
        let mut refused = observed(0, OK);
        refused.report =
            b"{\"error\":{\"error\":\"landlock-unsupported\",\"message\":\"ABI 2\"}}\n".to_vec();
        match confirmed(&refused) {
            Err(Unconfirmed::Refused(e)) => assert_eq!(e.error, Kind::LandlockUnsupported),
            other => panic!("{other:?}"),
        }
    }
}
