//! The `sublaunch` command.

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    match cli::Cli::try_parse() {
        Ok(cli) => cli.run(),
        Err(error) => cli::command_line_error(error),
    }
}
