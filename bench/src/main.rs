fn main() -> cli::Outcome<bench::BenchKind> {
    cli::main(std::env::args_os(), bench::run)
}
