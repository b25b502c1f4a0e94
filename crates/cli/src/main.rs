//! The `strata` binary; see [`strata_cli::main_with`] (`strata --help` for the commands).
//!
//! Invariant: all behaviour lives in the library, so this file only hands over the arguments
//! and the process's output streams; an argument that is not UTF-8 is a command-line mistake
//! (exit code 2), never a panic.

use std::io::Write as _;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = Vec::new();
    for arg in std::env::args_os().skip(1) {
        match arg.into_string() {
            Ok(arg) => args.push(arg),
            Err(arg) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "error: the argument '{}' is not valid UTF-8",
                    arg.to_string_lossy()
                );
                return ExitCode::from(2);
            }
        }
    }
    let code = strata_cli::main_with(args, &mut std::io::stdout(), &mut std::io::stderr());
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
