//! `sublaunch completions SHELL` and `sublaunch man [DIR]`: shell completion scripts and man
//! pages generated from the command line's own definition (clap's generators), so that an
//! installed binary carries them and they never drift from the flags it takes.

use clap::CommandFactory;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `sublaunch completions`.
#[derive(clap::Args)]
#[command(after_help = "Install, e.g.:
  bash: sublaunch completions bash > ~/.local/share/bash-completion/completions/sublaunch
  zsh:  sublaunch completions zsh > ~/.zfunc/_sublaunch   (with fpath+=~/.zfunc before compinit)
  fish: sublaunch completions fish > ~/.config/fish/completions/sublaunch.fish")]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Arguments of `sublaunch man`.
#[derive(clap::Args)]
#[command(after_help = "Install, e.g.: sublaunch man ~/.local/share/man/man1 && man sublaunch-run")]
pub struct ManArgs {
    /// Write sublaunch.1 and a page per command (sublaunch-run.1, …) into DIR instead of
    /// printing sublaunch.1 on standard output.
    #[arg(value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Prints the completion script for the shell.
pub fn completions(args: CompletionsArgs) -> ExitCode {
    let mut command = super::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "sublaunch", &mut script);
    write_stdout("completions", &script)
}

/// Prints the main page, or writes every page into the directory.
pub fn man(args: ManArgs) -> ExitCode {
    let command = super::Cli::command();
    let Some(dir) = args.dir else {
        let mut page = Vec::new();
        if let Err(e) = clap_mangen::Man::new(command).render(&mut page) {
            return super::runs::fail("man", e);
        }
        return write_stdout("man", &page);
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return super::runs::fail("man", format_args!("{}: {e}", dir.display()));
    }
    match clap_mangen::generate_to(command, &dir) {
        Ok(()) => {
            super::runs::say!("wrote the man pages to {}", dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => super::runs::fail("man", format_args!("{}: {e}", dir.display())),
    }
}

/// Writes `bytes` on stdout; a closed stdout (`| head`) is not an error worth a panic.
fn write_stdout(command: &str, bytes: &[u8]) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => super::runs::fail(command, e),
    }
}
