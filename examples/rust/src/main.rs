//! A dot plugin in Rust: reads the request on stdin, writes `out/greeting.txt`, prints the
//! response. Build it static (process containment runs static executables only):
//! `RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --target x86_64-unknown-linux-gnu`.
#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    let answer = |status: &str, extra: serde_json::Value| {
        let mut r = serde_json::json!({"protocol": "1.0", "status": status});
        if let (Some(r), Some(extra)) = (r.as_object_mut(), extra.as_object()) {
            r.extend(extra.clone());
        }
        println!("{r}");
    };
    let request: serde_json::Value = match serde_json::from_reader(std::io::stdin()) {
        Ok(r) => r,
        Err(e) => {
            answer(
                "error",
                serde_json::json!({"message": format!("bad request: {e}")}),
            );
            return ExitCode::FAILURE;
        }
    };
    let name = request["inputs"]["name"].as_str().unwrap_or("world");
    if let Err(e) = std::fs::write("out/greeting.txt", format!("hello, {name}, from Rust\n")) {
        answer("error", serde_json::json!({"message": e.to_string()}));
        return ExitCode::FAILURE;
    }
    answer("ok", serde_json::json!({"outputs": ["greeting.txt"]}));
    ExitCode::SUCCESS
}
