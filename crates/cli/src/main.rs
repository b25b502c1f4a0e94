//! The `strata` binary; see [`strata_cli::main_with`] (`strata --help` for the commands).
//!
//! Invariant: all behaviour lives in the library, so this file only hands over the arguments
//! and the process's output streams.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args = std::env::args().skip(1).collect();
    let code = strata_cli::main_with(args, &mut std::io::stdout(), &mut std::io::stderr());
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
