fn main() -> proto::cli::Outcome {
    proto::cli::main(std::env::args_os(), verify::run)
}
