//! Cross-tool test suites live in `tests/`; the fixture plugin they run is `src/bin/fixture-plugin.rs`.
#![forbid(unsafe_code)]
