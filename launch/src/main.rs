#![forbid(unsafe_code)]

fn main() -> proto::cli::Outcome {
    proto::cli::main(std::env::args(), launch::cli::run)
}
