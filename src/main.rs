//! The stallbench command: parse the arguments, run, print `error: ...`, exit.

use stallbench::Error;

fn main() {
    let cli = stallbench::cli::parse();
    match stallbench::run(cli) {
        Ok(code) => std::process::exit(code),
        // Whoever read stdout has gone (`| head`): nothing to say, like a process killed by SIGPIPE.
        Err(err @ Error::StdoutClosed) => std::process::exit(err.exit_code()),
        Err(err) => {
            stallbench::stderrln!("error: {err}");
            std::process::exit(err.exit_code());
        }
    }
}
