#![forbid(unsafe_code)]

fn main() -> proto::cli::Outcome {
    let fds_at_start = launch::hooks::open_fds();
    let outcome = proto::cli::main_with(
        std::env::args_os(),
        launch::cli::run,
        proto::cli::Extras {
            about: Some(launch::cli::version_about),
            keep_json: false,
        },
    );
    launch::hooks::report_process(fds_at_start);
    outcome
}
