#![forbid(unsafe_code)]

use std::process::Termination;

fn main() -> std::process::ExitCode {
    let fds_at_start = launch::hooks::open_fds();
    let outcome = cli::main_with(
        std::env::args_os(),
        launch::cli::run,
        cli::Extras {
            about: Some(launch::cli::version_about),
            keep_json: false,
        },
    );
    launch::cancel::disarm();
    launch::hooks::report_process(fds_at_start);
    // A cancelled run, cleaned up and reported, ends by the signal that cancelled it.
    let cancelled = outcome
        .error()
        .filter(|e| e.error == proto::Kind::Cancelled)
        .and_then(|e| e.signal.as_deref())
        .and_then(|s| s.parse::<nix::sys::signal::Signal>().ok());
    let code = outcome.report();
    match cancelled {
        Some(signal) => {
            sys::signal::die_by(signal);
            std::process::ExitCode::from(128 + signal as u8)
        }
        None => code,
    }
}
