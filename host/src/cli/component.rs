//! `sublaunch component`: write the planner component embedded in this binary.

use super::EXIT_USAGE;
use std::path::PathBuf;
use std::process::ExitCode;
use sublaunch::engine::planner::{EMBEDDED_COMPONENT, EMBEDDED_COMPONENT_SHA256};

/// Arguments of `sublaunch component`.
#[derive(clap::Args)]
pub struct Args {
    /// Where to write the component (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

/// Writes the component and prints its SHA-256 on standard error.
pub fn run(args: Args) -> ExitCode {
    let result = if args.out.as_os_str() == "-" {
        std::io::Write::write_all(&mut std::io::stdout().lock(), EMBEDDED_COMPONENT)
    } else {
        std::fs::write(&args.out, EMBEDDED_COMPONENT)
    };
    match result {
        Ok(()) => {
            eprintln!("sha256 {EMBEDDED_COMPONENT_SHA256}  {} bytes", EMBEDDED_COMPONENT.len());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sublaunch component: cannot write {}: {e}", args.out.display());
            ExitCode::from(EXIT_USAGE)
        }
    }
}
