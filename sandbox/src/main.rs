fn main() -> proto::cli::Outcome {
    proto::cli::main_with(
        std::env::args_os(),
        sandbox::run,
        proto::cli::Extras {
            about: Some(sandbox::version_about),
            keep_json: false,
        },
    )
}
