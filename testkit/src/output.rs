//! Decoding what a tool printed: its one error line, its JSON document or lines.

/// The error object of a failed tool: stderr must be exactly one JSON line.
pub fn decode_error(stderr: &[u8]) -> proto::ErrorObject {
    let text =
        std::str::from_utf8(stderr).unwrap_or_else(|_| panic!("stderr is not UTF-8: {stderr:?}"));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "stderr must be exactly one error line, got: {text:?}"
    );
    serde_json::from_str(lines[0])
        .unwrap_or_else(|e| panic!("stderr is not an error object ({e}): {text:?}"))
}

/// Asserts a tool failed with exit `code` and printed nothing on stdout; its error object.
#[track_caller]
pub fn assert_failed(out: &std::process::Output, code: i32) -> proto::ErrorObject {
    assert_eq!(
        out.status.code(),
        Some(code),
        "exit status; stdout {:?}, stderr {:?}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    failure_error(out)
}

/// What every failure shows, however it ended: nothing on stdout, one error object on stderr
/// (returned).
#[track_caller]
pub fn failure_error(out: &std::process::Output) -> proto::ErrorObject {
    assert!(
        out.stdout.is_empty(),
        "a failure prints nothing on stdout: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    decode_error(&out.stderr)
}

/// Asserts a tool succeeded (exit 0, nothing on stderr) and decodes its stdout as `T`.
pub fn assert_ok<T: serde::de::DeserializeOwned>(out: &std::process::Output) -> T {
    assert_eq!(
        out.status.code(),
        Some(0),
        "exit status; stderr {:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "stderr: {:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    decode_json(&out.stdout)
}

/// A tool's stdout decoded as one JSON document of type `T`.
pub fn decode_json<T: serde::de::DeserializeOwned>(stdout: &[u8]) -> T {
    serde_json::from_slice(stdout).unwrap_or_else(|e| {
        panic!(
            "stdout does not decode as {} ({e}): {:?}",
            std::any::type_name::<T>(),
            String::from_utf8_lossy(stdout)
        )
    })
}

/// A tool's stdout decoded as one JSON document of type `T` per line.
pub fn decode_json_lines<T: serde::de::DeserializeOwned>(stdout: &[u8]) -> Vec<T> {
    let text = std::str::from_utf8(stdout).unwrap();
    text.lines().map(|l| decode_json(l.as_bytes())).collect()
}
