fn main() -> proto::cli::Outcome {
    proto::cli::main_with(
        std::env::args_os(),
        journal_fmt::run,
        proto::cli::Extras {
            about: None,
            keep_json: true,
        },
    )
}
