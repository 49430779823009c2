fn main() -> proto::cli::Outcome {
    proto::cli::main(std::env::args(), journal_fmt::run)
}
