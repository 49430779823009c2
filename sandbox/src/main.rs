fn main() -> cli::Outcome {
    cli::main_with(
        std::env::args_os(),
        sandbox::run,
        cli::Extras {
            about: Some(sandbox::version_about),
            keep_json: false,
        },
    )
}
