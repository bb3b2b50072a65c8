//! Command-line interface: one module per command.

/// Prints a line on stderr made safe for a terminal ([`terminal_text::for_terminal`]). It
/// shadows the standard macro in every module of the CLI, so that no diagnostic can reach the
/// terminal unsanitised: error messages quote file names, agent names, chain values and the
/// field names serde echoes, all of which can come from files someone else wrote, and an
/// escape sequence in them could write the clipboard or clear the screen. (Sanitising twice is
/// harmless: the result has no control characters left.) A closed stderr is not worth a panic.
macro_rules! eprintln {
    () => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr());
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = crate::cli::terminal_text::for_terminal(&format!($($arg)*));
        let _ = writeln!(std::io::stderr(), "{line}");
    }};
}

mod agent_text;
mod agents;
mod colour;
mod columns;
mod component;
mod deliver;
mod duration;
mod events;
mod generated;
mod integrate;
mod launching;
mod list;
mod logs;
mod mcp;
mod models;
mod plan;
mod progress;
mod prune;
mod result;
mod resume;
mod retention;
mod run;
mod runs;
mod status;
mod stop;
mod task_input;
mod terminal_text;
mod trust;
mod usage;
mod wait;
mod worktrees;

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;
use sublaunch::contract::{ErrorCode, PlanError};
use sublaunch::engine::artifact_cache::ArtifactCache;
use sublaunch::{Options, Planner};

/// Launch background AI-coding subagent runs.
#[derive(Parser)]
#[command(
    name = "sublaunch",
    version,
    about,
    arg_required_else_help = true,
    after_help = "Exit codes: 0 success; 1 the run's agent (or the command) failed; 2 a usage error or a launch refused before it began; 3 no such run; 10-21 the run ended otherwise, by its failureKind (10 not-started, 11 rate-limited, 12 timeout, 13 deadline, 14 budget, 15 stopped, 16 killed, 17 output-invalid, 18 gate-failed, 19 runner-lost, 20 host-lost, 21 connection-lost); 124 a --timeout of wait or stop passed."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Plan a launch: PlanRequest JSON (stdin by default) to LaunchPlan JSON.
    Plan(plan::Args),
    /// Plan and launch a background run.
    Run(Box<run::Args>),
    /// List the model registry, or resolve a model name.
    Models(models::Args),
    /// List the agents and where each is defined.
    Agents(agents::Args),
    /// Write the planner WebAssembly component embedded in this binary.
    Component(component::Args),
    /// Show a run's status.
    Status(status::Args),
    /// List active runs (all runs with --all).
    List(list::Args),
    /// Wait for a run to end, showing its progress, or for several (--all, --any); exit 0
    /// complete, else by how it failed (1 its agent, 10-21 by its failureKind), 124 on timeout.
    Wait(wait::Args),
    /// Stop a run and its whole process tree.
    Stop(stop::Args),
    /// Print a run's output.
    Logs(logs::Args),
    /// Print a finished run's answer (exit 0 when it completed).
    Result(result::Args),
    /// Start a new run that revives a finished run's session, or continues its agent's
    /// conversation with a follow-up (--task).
    Resume(resume::Args),
    /// Remove ended runs (all, or those older than a duration or in given states).
    Prune(prune::Args),
    /// Show what the runs spent (tokens and cost) by day, week, month, agent, model,
    /// provider, machine, run or run tree, from the usage ledger.
    Usage(usage::Args),
    /// List the git worktrees made for runs, or remove those of ended runs (prune).
    Worktrees(worktrees::Args),
    /// Print the event stream: every run's lifecycle events, in order, each with a cursor;
    /// --since resumes after a cursor, --follow keeps printing.
    Events(events::Args),
    /// Deliver the run ends waiting in the outbox to their completion hooks now (those whose
    /// runner died first, and failed attempts, whatever their backoff).
    Deliver(deliver::Args),
    /// Merge the accepted work of a run's writers onto sublaunch/<run>/integration, each
    /// merge gated, stopping at the first conflict or failed gate.
    Integrate(integrate::Args),
    /// Serve the run tools over the Model Context Protocol on stdin/stdout, for coding agents.
    Mcp(mcp::Args),
    /// Trust a project's own configuration (.sublaunch/, .pi/) and approve the programs it
    /// runs; --list the trusted projects; --revoke one.
    Trust(trust::Args),
    /// Print the completion script for a shell (bash, zsh, fish, elvish, powershell).
    Completions(generated::CompletionsArgs),
    /// Print the man page, or write every command's man page into a directory.
    Man(generated::ManArgs),
}

impl Cli {
    /// Runs the command and returns the process exit code.
    pub fn run(self) -> ExitCode {
        StderrLogger::install();
        match self.command {
            Command::Plan(args) => plan::run(args),
            Command::Run(args) => run::run(*args),
            Command::Models(args) => models::run(args),
            Command::Agents(args) => agents::run(args),
            Command::Component(args) => component::run(args),
            Command::Status(args) => status::run(args),
            Command::List(args) => list::run(args),
            Command::Wait(args) => wait::run(args),
            Command::Stop(args) => stop::run(args),
            Command::Logs(args) => logs::run(args),
            Command::Result(args) => result::run(args),
            Command::Resume(args) => resume::run(args),
            Command::Mcp(args) => mcp::run(args),
            Command::Prune(args) => prune::run(args),
            Command::Usage(args) => usage::run(args),
            Command::Worktrees(args) => worktrees::run(args),
            Command::Integrate(args) => integrate::run(args),
            Command::Events(args) => events::run(args),
            Command::Deliver(args) => deliver::run(args),
            Command::Trust(args) => trust::run(args),
            Command::Completions(args) => generated::completions(args),
            Command::Man(args) => generated::man(args),
        }
    }
}

/// Reports a command line clap refused (or the help or version it was asked for) and exits.
/// A refusal is said as every other error is, `sublaunch <command>: <what>` (clap's own
/// `error:` replaced), with clap's did-you-mean tips and usage line below it; an argument that
/// looks like a task given without `--task` gets a tip of its own. clap quotes an offending
/// argument as given: one holding control characters is shown sanitised, like every other
/// diagnostic.
pub fn command_line_error(error: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let code = u8::try_from(error.exit_code()).unwrap_or(EXIT_USAGE);
    let plain = error.render().to_string();
    let shown = terminal_text::for_terminal(&plain);
    let display = matches!(
        error.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if display {
        if shown == plain {
            error.exit()
        }
        eprintln!("{}", shown.trim_end_matches('\n'));
        return ExitCode::from(code);
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let (command, subcommand) = command_path(&args);
    let mut text = match plain.strip_prefix("error: ") {
        Some(rest) => format!("{command}: {rest}"),
        None => plain,
    };
    if error.kind() == ErrorKind::UnknownArgument
        && let Some(clap::error::ContextValue::String(argument)) = error.get(clap::error::ContextKind::InvalidArg)
        && let Some(tip) = task_tip(subcommand.as_deref(), argument)
    {
        text = text.replacen('\n', &format!("\n\n  tip: {tip}\n"), 1);
    }
    eprintln!("{}", text.trim_end_matches('\n'));
    ExitCode::from(code)
}

/// `sublaunch run` (the command path `args` names, as far as it names subcommands) and the
/// name of the first subcommand.
fn command_path(args: &[std::ffi::OsString]) -> (String, Option<String>) {
    let mut command = Cli::command();
    let mut path = vec!["sublaunch".to_owned()];
    for arg in args.iter().skip(1) {
        let Some(arg) = arg.to_str() else { break };
        if arg.starts_with('-') {
            continue;
        }
        let Some(sub) = command.find_subcommand(arg).cloned() else {
            break;
        };
        path.push(sub.get_name().to_owned());
        command = sub;
    }
    let first = path.get(1).cloned();
    (path.join(" "), first)
}

/// For an unexpected argument to `run` or `resume` that is not a flag: how to give a task.
fn task_tip(subcommand: Option<&str>, argument: &str) -> Option<String> {
    if argument.starts_with('-') {
        return None;
    }
    match subcommand? {
        "run" => Some(
            "the task is one argument: quote a task of several words (sublaunch run --agent shell 'echo hi'), or use --task TEXT, --task - (standard input) or --task-file FILE".to_owned(),
        ),
        "resume" => Some(format!(
            "a follow-up is given with --task: sublaunch resume RUN_ID --task '{argument}'"
        )),
        _ => None,
    }
}

/// Prints the library's warnings (and errors) on stderr, as `sublaunch: <message>`.
struct StderrLogger;

impl StderrLogger {
    fn install() {
        static LOGGER: StderrLogger = StderrLogger;
        if log::set_logger(&LOGGER).is_ok() {
            log::set_max_level(log::LevelFilter::Warn);
        }
    }
}

impl log::Log for StderrLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            eprintln!("sublaunch: {}", terminal_text::for_terminal(&record.args().to_string()));
        }
    }

    fn flush(&self) {}
}

/// Prints each notice once on stderr as `sublaunch <command>: note: …`, made safe for a
/// terminal (file names come from repositories).
pub fn print_notices<T: std::fmt::Display>(command: &str, notices: impl IntoIterator<Item = T>) {
    let mut seen = std::collections::BTreeSet::new();
    for notice in notices {
        let text = notice.to_string();
        if seen.insert(text.clone()) {
            eprintln!("sublaunch {command}: note: {}", terminal_text::for_terminal(&text));
        }
    }
}

/// The process environment: the CLI is the one part of sublaunch that reads it; the library
/// is handed this value.
pub fn environment() -> sublaunch::Environment {
    sublaunch::Environment::from_process()
}

/// Exit code of a usage or input problem, or of a launch refused before it began.
pub const EXIT_USAGE: u8 = 2;

/// Exit code of a command naming a run that does not exist.
pub const EXIT_NOT_FOUND: u8 = 3;

/// Loads the embedded planner with the user's artifact cache; a failure is a `planner-fault`.
pub fn load_planner() -> Result<Planner, PlanError> {
    // One plan per process: on-demand instances start faster than a pool.
    let options = Options {
        cache: environment().component_cache().map(ArtifactCache::new),
        instance_pool: None,
        ..Options::default()
    };
    Planner::embedded(options).map_err(|error| {
        PlanError::new(
            ErrorCode::PlannerFault,
            format!("The planner component could not be loaded: {error:#}"),
        )
    })
}

/// [`load_planner`] on a thread of its own, so that the engine and the cached component load
/// while the caller reads its other inputs.
pub struct PlannerLoad(Option<std::thread::JoinHandle<Result<Planner, PlanError>>>);

impl PlannerLoad {
    /// Starts loading.
    pub fn start() -> Self {
        Self(Some(std::thread::spawn(load_planner)))
    }

    /// The loaded planner; a loader that panicked (a bug) is a `planner-fault`.
    pub fn finish(mut self) -> Result<Planner, PlanError> {
        let loader = self.0.take().expect("a load is finished once");
        loader.join().unwrap_or_else(|_| {
            Err(PlanError::new(
                ErrorCode::PlannerFault,
                "The planner component could not be loaded: its loader panicked",
            ))
        })
    }
}

impl Drop for PlannerLoad {
    /// A load nobody asked for is still waited for: the process exit must not cut off a
    /// cache entry being written.
    fn drop(&mut self) {
        if let Some(loader) = self.0.take() {
            let _ = loader.join();
        }
    }
}

/// Prints `header` and `rows` as columns two spaces apart, every column but the last padded
/// to its widest cell (counted in characters).
pub fn print_table<const N: usize>(header: [&str; N], rows: &[[String; N]]) {
    let header = header.map(str::to_owned);
    let widths: Vec<usize> = (0..N)
        .map(|i| {
            rows.iter()
                .chain([&header])
                .map(|r| columns::width(&r[i]))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(&header).chain(rows) {
        let (last, padded) = row.split_last().expect("a table has columns");
        let mut line: Vec<String> = padded.iter().zip(&widths).map(|(c, w)| columns::pad(c, *w)).collect();
        line.push(last.clone());
        runs::say!("{}", line.join("  ").trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        // clap's own checks: no two flags share a short or long name, every reference
        // (conflicts, requires) names a flag that exists.
        Cli::command().debug_assert();
    }

    #[test]
    fn a_command_line_error_names_the_command_it_refuses() {
        let args = |words: &[&str]| words.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert_eq!(
            command_path(&args(&["sublaunch", "run", "--agent", "shell", "x"])),
            ("sublaunch run".to_owned(), Some("run".to_owned()))
        );
        assert_eq!(
            command_path(&args(&["sublaunch", "worktrees", "--json", "prune", "--forse"])),
            ("sublaunch worktrees prune".to_owned(), Some("worktrees".to_owned()))
        );
        assert_eq!(
            command_path(&args(&["sublaunch", "stauts"])),
            ("sublaunch".to_owned(), None)
        );
        assert!(task_tip(Some("run"), "echo hi").is_some());
        assert!(task_tip(Some("run"), "--tsk").is_none());
        assert!(task_tip(Some("status"), "x").is_none());
    }
}
