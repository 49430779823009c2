fn main() -> proto::cli::Outcome {
    proto::cli::main_with_version(std::env::args_os(), sandbox::run, sandbox::version_about)
}
