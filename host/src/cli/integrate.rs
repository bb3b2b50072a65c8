//! `sublaunch integrate RUN_ID [--onto REF] [--gate CMD | --no-gate] [--keep-going] [--ff]
//! [--json]`: the accepted work of a run's writers merged, gated and landed on
//! `sublaunch/<run>/integration` ([`sublaunch::integrate`], G82). Prints a line per branch (what
//! landed, why the rest did not); `--json` one object. Exit 0 when every branch with work
//! landed (and the fast-forward was made, when asked for), 1 otherwise, 3 for no such run.

use super::duration::{GivenDuration, parse_limit};
use super::runs::say;
use super::runs::{fail, open_run};
use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use sublaunch::integrate::gate::Interrupt;
use sublaunch::integrate::{GateChoice, IntegrateOptions, integrate};
use sublaunch::worktrees::Git;

/// Arguments of `sublaunch integrate`.
#[derive(clap::Args)]
pub struct Args {
    /// The run whose branches are integrated.
    run_id: String,
    /// Build the integration branch on this revision when it does not exist yet (default:
    /// the commit the run's worktrees started at).
    #[arg(long, value_name = "REF")]
    onto: Option<String>,
    /// After each merge, run this shell command on the merged tree instead of the commands
    /// the steps' acceptance contracts verified.
    #[arg(long, value_name = "CMD", conflicts_with = "no_gate")]
    gate: Option<String>,
    /// Run no gate: a merge without conflicts lands.
    #[arg(long)]
    no_gate: bool,
    /// How long one gate command may run (`90s`, `10m`; default 30m).
    #[arg(long, value_name = "DURATION", value_parser = parse_limit)]
    gate_timeout: Option<GivenDuration>,
    /// Skip a branch that conflicts or fails the gate, and try the rest (default: stop there).
    #[arg(long)]
    keep_going: bool,
    /// Then fast-forward the repository's checked-out branch to the integration branch, when
    /// the checkout is clean and the move is a fast-forward.
    #[arg(long)]
    ff: bool,
    /// Print one JSON object: every branch's outcome, the gates run, the branch's head.
    #[arg(short, long)]
    json: bool,
}

/// Runs `sublaunch integrate`.
pub fn run(args: Args) -> ExitCode {
    let (store, _run, run_id) = match open_run(&args.run_id, "integrate") {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let here = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let git = match Git::find(&super::environment(), &here) {
        Ok(git) => git,
        Err(e) => return fail("integrate", e),
    };
    let runtime = match super::runs::async_runtime("integrate") {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let options = IntegrateOptions {
        onto: args.onto,
        gate: match (args.gate, args.no_gate) {
            (Some(command), _) => GateChoice::Command(command),
            (None, true) => GateChoice::None,
            (None, false) => GateChoice::Contracts,
        },
        gate_timeout: args
            .gate_timeout
            .map_or(sublaunch::integrate::gate::DEFAULT_TIMEOUT, |t| t.duration),
        keep_going: args.keep_going,
        fast_forward: args.ff,
    };
    let outcome = runtime.block_on(async {
        let mut interrupt = Signals::new();
        integrate(&store, &git, &run_id, &options, &mut interrupt).await
    });
    let integration = match outcome {
        Ok(integration) => integration,
        Err(e) => return fail("integrate", e),
    };
    if args.json {
        say!("{}", serde_json::to_string_pretty(&integration).unwrap_or_default());
    } else {
        for line in integration.lines() {
            say!("{}", super::terminal_text::for_terminal(&line));
        }
    }
    if integration.complete() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// SIGINT (Ctrl-C) and SIGTERM: the running gate is stopped and the integration reports
/// where it got to, instead of dying with the gate's children left behind.
struct Signals {
    interrupt: Option<tokio::signal::unix::Signal>,
    terminate: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        Self {
            interrupt: signal(SignalKind::interrupt()).ok(),
            terminate: signal(SignalKind::terminate()).ok(),
        }
    }
}

impl Interrupt for Signals {
    fn wait(&mut self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async {
            let one = async {
                match &mut self.interrupt {
                    Some(s) => drop(s.recv().await),
                    None => std::future::pending().await,
                }
            };
            let other = async {
                match &mut self.terminate {
                    Some(s) => drop(s.recv().await),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = one => {}
                () = other => {}
            }
        })
    }
}
