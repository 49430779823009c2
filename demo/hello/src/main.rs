//! The reviewed hello plugin: reads the request on stdin, writes `out/hello.txt` = `hello, NAME\n`
//! (NAME from the string input `name`, default `world`) and prints the protocol response. With the
//! string input `write` = `no` it writes nothing and answers with no outputs (what `make bench`
//! launches, so the cost of a launch is measured apart from the cost of a commit).
//!
//! Only the standard library and serde_json; built as a static executable so it can run under
//! `process` containment.
#![forbid(unsafe_code)]

use std::io::{Read, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            let _ = writeln!(std::io::stderr(), "hello: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut request = Vec::new();
    std::io::stdin()
        .take(1 << 20)
        .read_to_end(&mut request)
        .map_err(|e| format!("reading the request: {e}"))?;
    let request: serde_json::Value =
        serde_json::from_slice(&request).map_err(|e| format!("request is not JSON: {e}"))?;
    let input = |key: &str| {
        request
            .get("inputs")
            .and_then(|i| i.get(key))
            .and_then(|n| n.as_str())
    };
    let outputs = if input("write") == Some("no") {
        ""
    } else {
        let name = input("name").unwrap_or("world");
        std::fs::write("out/hello.txt", format!("hello, {name}\n"))
            .map_err(|e| format!("writing out/hello.txt: {e}"))?;
        r#""hello.txt""#
    };
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        r#"{{"protocol":"1.0","status":"ok","outputs":[{outputs}]}}"#
    )
    .map_err(|e| format!("writing the response: {e}"))?;
    out.flush()
        .map_err(|e| format!("writing the response: {e}"))
}
