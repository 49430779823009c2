fn main() -> cli::Outcome {
    cli::main(std::env::args_os(), verify::run)
}
