fn main() -> cli::Outcome {
    cli::main_with(
        std::env::args_os(),
        journal_fmt::run,
        cli::Extras {
            about: None,
            keep_json: true,
        },
    )
}
