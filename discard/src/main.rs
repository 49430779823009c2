fn main() -> cli::Outcome {
    cli::main(std::env::args_os(), discard::run)
}
