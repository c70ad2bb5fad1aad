fn main() {
    std::process::exit(cfghub::cli::main());
}
