//! What every tool's thin `main` shares: argh parsing without argh's own `exit` (so `--help` exits 0
//! and a usage error exits with our usage code) and the report: one JSON document (or text) on stdout
//! and exit 0, or one error object line on stderr and the error's exit code.
//!
//! This is the one place in `proto` that writes anything: `Outcome::report` prints what the tool
//! computed, when `main` returns.

use crate::error::{ErrorObject, ExitCode, ToErrorObject};
use serde::Serialize;
use std::io::Write;

/// What a tool's `run` produced on success: the text for stdout and the exit code (0, or 4 for a
/// report that says state was retained).
#[derive(Debug)]
pub struct Output {
    pub stdout: String,
    pub code: ExitCode,
}

impl Output {
    /// One JSON document and a newline, exit 0.
    pub fn json<T: Serialize>(value: &T) -> Output {
        let mut stdout = serde_json::to_string(value).unwrap_or_default();
        stdout.push('\n');
        Output {
            stdout,
            code: ExitCode::Success,
        }
    }

    /// Plain text, exit 0.
    pub fn text(stdout: String) -> Output {
        Output {
            stdout,
            code: ExitCode::Success,
        }
    }

    /// The same output with another exit code.
    pub fn with_code(mut self, code: ExitCode) -> Output {
        self.code = code;
        self
    }
}

/// What `main` returns: printing happens in `Termination::report`.
#[derive(Debug)]
pub struct Outcome {
    stdout: String,
    stderr: Option<ErrorObject>,
    code: ExitCode,
}

impl std::process::Termination for Outcome {
    fn report(self) -> std::process::ExitCode {
        let mut code = self.code;
        if !self.stdout.is_empty() {
            let mut out = std::io::stdout().lock();
            if out
                .write_all(self.stdout.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
                && code == ExitCode::Success
            {
                code = ExitCode::System;
            }
        }
        if let Some(err) = self.stderr {
            let _ = writeln!(std::io::stderr().lock(), "{}", err.to_line());
        }
        code.into()
    }
}

/// Parses `argv` (program name first) into `A`, runs `run`, and turns the result into an `Outcome`.
pub fn main<A, E, F>(argv: impl IntoIterator<Item = String>, run: F) -> Outcome
where
    A: argh::FromArgs,
    E: ToErrorObject,
    F: FnOnce(A) -> Result<Output, E>,
{
    let argv: Vec<String> = argv.into_iter().collect();
    let args = match parse::<A>(&argv) {
        Ok(a) => a,
        Err(Early::Help(text)) => {
            return Outcome {
                stdout: text,
                stderr: None,
                code: ExitCode::Success,
            }
        }
        Err(Early::Usage(obj)) => {
            return Outcome {
                stdout: String::new(),
                stderr: Some(*obj),
                code: ExitCode::Usage,
            }
        }
    };
    match run(args) {
        Ok(out) => Outcome {
            stdout: out.stdout,
            stderr: None,
            code: out.code,
        },
        Err(e) => Outcome {
            stdout: String::new(),
            stderr: Some(e.to_error_object()),
            code: e.exit_code(),
        },
    }
}

/// Why parsing did not produce arguments.
#[derive(Debug)]
pub enum Early {
    /// `--help`: print the text on stdout, exit 0.
    Help(String),
    /// A usage error: the error object, exit 2.
    Usage(Box<ErrorObject>),
}

/// Parses `argv` (program name first) into `A`.
pub fn parse<A: argh::FromArgs>(argv: &[String]) -> Result<A, Early> {
    let name = argv.first().map(String::as_str).unwrap_or("dot");
    let name = name.rsplit('/').next().unwrap_or(name);
    let rest: Vec<&str> = argv.iter().skip(1).map(String::as_str).collect();
    A::from_args(&[name], &rest).map_err(|e| match e.status {
        Ok(()) => Early::Help(e.output),
        Err(()) => Early::Usage(Box::new(
            ErrorObject::new("usage", e.output.trim_end().to_owned())
                .next(format!("{name} --help")),
        )),
    })
}
