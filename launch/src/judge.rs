//! Deciding, from what supervision observed, whether the plugin succeeded: for `process`, whether
//! `dot-sandbox` confirmed the containment it enforced ([`confirmed`]); then whether the plugin
//! itself succeeded and what it answered ([`judge`]). Pure functions of [`Observed`]: nothing here
//! touches the run.

use crate::exec::Observed;
use proto::protocol::{Response, ResponseStatus, PROTOCOL_VERSION};
use proto::runner::{Enforced, SandboxReport};
use proto::{ErrorObject, Kind};
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

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
    #[error("stdout went over its limit ({seen} bytes seen)")]
    StdoutLimit { seen: u64 },
    #[error("stderr went over its limit ({seen} bytes seen)")]
    StderrLimit { seen: u64 },
    #[error("stdout is not one protocol response: {0}")]
    NotOneResponse(String),
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
            PluginFailure::NotOneResponse(_) | PluginFailure::OtherProtocol(_) => {
                Kind::PluginProtocol
            }
            PluginFailure::Error { .. } => Kind::PluginError,
            PluginFailure::OutputsInvalid(_) => Kind::OutputsInvalid,
            PluginFailure::TargetConflict(_) => Kind::TargetConflict,
            PluginFailure::SandboxNoReport(_) => Kind::SandboxNoReport,
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

/// Whether the plugin succeeded: its response when it did. In order, the first that holds is the
/// failure: the deadline, a stream over its limit, a signal, a nonzero exit (a plugin that
/// explains itself with `status: "error"` keeps its message), stdout that is not exactly one
/// response of this protocol, a response with `status: "error"`.
pub fn judge(o: &Observed, deadline: Duration) -> Result<Response, PluginFailure> {
    if o.deadline_hit {
        return Err(PluginFailure::Deadline {
            deadline_ms: deadline.as_millis(),
            ran_ms: o.duration.as_millis() as u64,
        });
    }
    match o.over_limit {
        Some(Overflow::Stdout) => {
            return Err(PluginFailure::StdoutLimit {
                seen: o.stdout_bytes,
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
        return Err(PluginFailure::Signal { signal });
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
    let response = parsed.map_err(|e| PluginFailure::NotOneResponse(e.to_string()))?;
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
    use std::os::unix::process::ExitStatusExt;

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

    const OK: &str = "{\"protocol\":\"1.0\",\"status\":\"ok\",\"outputs\":[\"a.txt\"]}\n";
    const ERROR: &str = "{\"protocol\":\"1.0\",\"status\":\"error\",\"message\":\"bad input\"}\n";
    const EXIT_1: i32 = 1 << 8;
    const SIGKILL: i32 = 9;

    #[test]
    fn a_clean_exit_with_one_ok_response_succeeds() {
        let r = judge(&observed(0, OK), Duration::from_secs(1)).expect("success");
        assert_eq!(r.status, ResponseStatus::Ok);
        assert_eq!(r.outputs, vec!["a.txt".to_owned()]);
    }

    #[test]
    fn each_failure_is_judged_with_its_kind_and_message() {
        let deadline = Duration::from_millis(250);
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
            let f = judge(&o, deadline).expect_err(what);
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
            PluginFailure::StdoutLimit { seen: 1 },
            PluginFailure::StderrLimit { seen: 1 },
            PluginFailure::NotOneResponse("x".into()),
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
            10,
            "one kind each, the two protocol failures share theirs"
        );
        for f in &all {
            assert_eq!(f.kind().exit_code(), proto::ExitCode::PluginFailed, "{f:?}");
        }
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
