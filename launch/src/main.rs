#![forbid(unsafe_code)]

fn main() -> proto::cli::Outcome {
    let fds_at_start = launch::hooks::open_fds();
    let outcome = proto::cli::main(std::env::args_os(), launch::cli::run);
    launch::hooks::report_process(fds_at_start);
    outcome
}
