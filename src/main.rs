//! The stallbench command: parse the arguments, run, print `error: ...`, exit.

use clap::Parser;

fn main() {
    let cli = stallbench::cli::Cli::parse();
    match stallbench::run(cli) {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("error: {err}");
            std::process::exit(err.exit_code());
        }
    }
}
