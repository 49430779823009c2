#![forbid(unsafe_code)]

fn main() -> proto::cli::Outcome {
    let fds_at_start = launch::hooks::open_fds();
    let outcome = proto::cli::main_with_version(
        std::env::args_os(),
        launch::cli::run,
        launch::cli::version_about,
    );
    launch::hooks::report_process(fds_at_start);
    outcome
}
