#![forbid(unsafe_code)]

fn main() -> proto::cli::Outcome {
    let outcome = proto::cli::main(std::env::args(), launch::cli::run);
    launch::hooks::report_process();
    outcome
}
