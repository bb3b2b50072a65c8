//! `sublaunch run`: plan a launch from the command line (one agent and task, or a chain file),
//! the discovered agents, settings and registry, then launch it (or print the plan with
//! `--dry-run`). Before launching, every local step's program must be found.

use super::duration::{GivenDuration, parse_limit};
use super::launching::{CLI_SESSION_ID, Presentation, launch_and_report};
use super::task_input::TaskSources;
use super::{EXIT_USAGE, PlannerLoad, plan::print_outcome};
use std::path::PathBuf;
use std::process::ExitCode;
use sublaunch::inputs::chain::read_chain_file;
use sublaunch::launch::Caller;
use sublaunch::runs::start::{Gathered, RunRequest, StartError, Work, prepare};
use sublaunch_protocol::records::failure::FailureKind;

/// Arguments of `sublaunch run`.
#[derive(clap::Args)]
#[command(
    after_help = "Capacity: SUBLAUNCH_MAX_ACTIVE=N (or subagents.maxActive in settings) caps the runs active at once; a run over the cap is recorded queued and starts in arrival order when a slot frees, even after this command has exited ('sublaunch list' shows its place, 'sublaunch stop' takes it out of the queue)."
)]
pub struct Args {
    /// The task handed to the agent (instead of --task or --task-file); with --chain, the
    /// text `{task}` stands for. Quote a task of several words.
    #[arg(value_name = "TASK", conflicts_with_all = ["task", "task_file"])]
    task_arg: Option<String>,
    /// The agent to run (`shell` runs the task with sh -c; `sublaunch agents` lists them).
    #[arg(short, long, required_unless_present = "chain", conflicts_with = "chain")]
    agent: Option<String>,
    /// The task handed to the agent; `-` reads it from standard input. It may start with `-`.
    #[arg(short, long, value_name = "TEXT", allow_hyphen_values = true)]
    task: Option<String>,
    /// Read the task from FILE (`-`: standard input).
    #[arg(long, value_name = "FILE", conflicts_with = "task")]
    task_file: Option<PathBuf>,
    /// Run the steps of a chain file (JSON or YAML) instead of one agent.
    #[arg(short, long, value_name = "FILE")]
    chain: Option<PathBuf>,
    /// With --chain: how many tasks of a parallel group run at once (overrides the file).
    #[arg(long, value_name = "N", requires = "chain", value_parser = clap::value_parser!(u32).range(1..))]
    concurrency: Option<u32>,
    /// With --chain: a failed task stops the rest of its parallel group (overrides the file).
    #[arg(long, requires = "chain")]
    fail_fast: bool,
    /// Model for this run (e.g. `anthropic/claude-sonnet-4-5`, `openai/gpt-5-mini:high`).
    #[arg(short, long, conflicts_with = "chain")]
    model: Option<String>,
    /// Thinking level: off, minimal, low, medium, high, xhigh, max.
    #[arg(long, conflicts_with = "chain")]
    thinking: Option<String>,
    /// Highest thinking level allowed, on top of the settings' ceilings.
    #[arg(long, value_name = "LEVEL")]
    max_thinking: Option<String>,
    /// Run on this saved Herdr machine, or on a cluster (`slurm`, `slurm:PARTITION`, or a
    /// cluster named in settings).
    #[arg(long)]
    machine: Option<String>,
    /// Working directory (a directory on the machine when --machine is given).
    #[arg(short = 'C', long, value_name = "DIR")]
    cwd: Option<String>,
    /// Add a model registry file on top of the configured ones.
    #[arg(long, value_name = "FILE")]
    models: Option<PathBuf>,
    /// Print the plan instead of launching.
    #[arg(short = 'n', long)]
    dry_run: bool,
    /// Wait for the run's end, showing its progress; exit 0 complete, 1 otherwise.
    #[arg(short, long)]
    wait: bool,
    /// Refuse the run, saying why, rather than have it wait queued for a spend limit, a
    /// provider's rate-limit cooldown or a capacity slot.
    #[arg(long)]
    no_queue: bool,
    /// Print `{"runId","runDir","pid"}` (with --wait also the final state and steps).
    #[arg(short, long)]
    json: bool,
    /// Stop the run after DURATION: `90s`, `10m`, `1h` (a bare number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = parse_limit)]
    timeout: Option<GivenDuration>,
    /// Stop the run at this time at the latest: 2026-12-01T23:00:00Z (RFC 3339), or
    /// milliseconds since 1970 (deadlineAt).
    #[arg(long, value_name = "TIME", value_parser = sublaunch::inputs::deadline::parse_deadline)]
    deadline: Option<u64>,
    /// Use this run id instead of a generated one (it must not name an existing run).
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
    /// Run each step in its own git worktree, on a new branch sublaunch/<run-id>/<step>
    /// (`sublaunch worktrees` lists them and prunes those of ended runs).
    #[arg(long)]
    worktree: bool,
    /// The commit, branch or tag the worktrees start at (default: HEAD).
    #[arg(long, value_name = "REF")]
    base: Option<String>,
    /// Refuse to launch when the repository has uncommitted changes (the worktrees would
    /// not have them).
    #[arg(long)]
    require_clean: bool,
    /// A file the agent reads before the task (relative to its directory); repeat for
    /// several.
    #[arg(long = "read", value_name = "FILE", conflicts_with = "chain")]
    reads: Vec<String>,
    /// Also write the agent's final answer to FILE (relative to its directory, or absolute).
    #[arg(long, value_name = "FILE", conflicts_with = "chain")]
    output: Option<String>,
    /// Stop the run once its agents have used more than N input and output tokens in all
    /// (usageBudget.maxTokens; pi, Claude Code and Codex report them).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_tokens: Option<u64>,
    /// Stop the run once its agents have spent more than USD dollars in all
    /// (usageBudget.maxCostUsd; pi and Claude Code report their cost).
    #[arg(long, value_name = "USD")]
    max_cost: Option<f64>,
    /// Stop the agent when it starts its (N+1)th tool call (toolBudget).
    #[arg(long, value_name = "N", conflicts_with = "chain")]
    max_tool_calls: Option<u32>,
    /// Ask the agents to wrap up DURATION (`30s`, `2m`) before the run's timeout or deadline
    /// (pi and Claude Code).
    #[arg(long, value_name = "DURATION", value_parser = parse_limit)]
    checkpoint_before_deadline: Option<GivenDuration>,
    /// A pi extension (a name pi's extension directory has, or a path) to load instead of
    /// the ones pi discovers; repeat for several.
    #[arg(long = "extension", value_name = "EXT", conflicts_with = "chain")]
    extensions: Vec<String>,
    /// A pi extension the agent must load: the launch fails when it is not found; repeat for
    /// several.
    #[arg(long = "require-extension", value_name = "EXT", conflicts_with = "chain")]
    required_extensions: Vec<String>,
    /// A pi skill (a name pi's skill directory has, or a path) to offer instead of the ones
    /// pi discovers; repeat for several.
    #[arg(long = "skill", value_name = "SKILL", conflicts_with = "chain")]
    skills: Vec<String>,
    /// The only tools every agent of the run has (comma-separated or repeated); each step
    /// keeps those its agent also has.
    #[arg(long, value_name = "TOOLS", value_delimiter = ',', value_parser = parse_tool)]
    tools: Vec<String>,
    /// Tools no agent of the run has (comma-separated or repeated).
    #[arg(long, value_name = "TOOLS", value_delimiter = ',', value_parser = parse_tool)]
    exclude_tools: Vec<String>,
    /// Pre-approve a tool use: `Tool` or `Tool(pattern)`, e.g. 'Bash(git *)'; repeat for
    /// several. Only uses every layer that lists rules agrees on run without asking.
    #[arg(long = "allow", value_name = "RULE", value_parser = parse_rule)]
    allow: Vec<String>,
    /// Refuse a tool use: `Tool` or `Tool(pattern)`, e.g. 'Bash(rm *)'; repeat for several.
    #[arg(long = "deny", value_name = "RULE", value_parser = parse_rule)]
    deny: Vec<String>,
    /// What the agents may change at most: plan, read-only or writer (an agent that is
    /// read-only stays read-only).
    #[arg(long, value_name = "MODE", value_parser = clap::value_parser!(sublaunch::contract::PermissionMode))]
    mode: Option<sublaunch::contract::PermissionMode>,
    /// The agents may not launch nested runs of sublaunch.
    #[arg(long)]
    no_nested: bool,
    /// How many levels of nested runs the agents may launch below this run (0: none).
    #[arg(long, value_name = "N")]
    max_depth: Option<u32>,
    /// The only agents nested runs launched from this run may start (comma-separated).
    #[arg(long, value_name = "AGENTS", value_delimiter = ',')]
    nested_agents: Vec<String>,
    /// The only models nested runs may use (comma-separated; `*` matches any text, as in
    /// 'anthropic/*').
    #[arg(long, value_name = "MODELS", value_delimiter = ',')]
    nested_models: Vec<String>,
    /// Run every agent in an OS sandbox: none, read-only, workspace (write only its directory
    /// or worktree) or offline (workspace without network).
    #[arg(long, value_name = "PROFILE", value_parser = parse_sandbox_profile)]
    sandbox: Option<String>,
    /// Let the sandboxed agents connect only to this TCP port; repeat for several.
    #[arg(long = "sandbox-port", value_name = "PORT", value_parser = parse_sandbox_port)]
    sandbox_ports: Vec<u16>,
    /// Apply as much of the sandbox as this kernel offers instead of refusing to launch.
    #[arg(long)]
    sandbox_best_effort: bool,
    /// Verify each step's work with this shell command, run in the step's directory once its
    /// agent ended: a step whose command fails has failed.
    #[arg(long, value_name = "CMD", allow_hyphen_values = true, conflicts_with = "accept")]
    gate: Option<String>,
    /// The evidence each step's work must show: attested (the agent's report), checked (the
    /// report checked against git), auto (what the agents' roles infer) or off.
    #[arg(long, value_name = "LEVEL", value_parser = parse_accept)]
    accept: Option<serde_json::Value>,
    /// Run this shell command once when the run ends, with its result JSON on stdin and
    /// SUBLAUNCH_RUN_ID / SUBLAUNCH_STATE set (default: settings' subagents.onEnd; '' for none).
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    on_end: Option<String>,
}

/// What the command line said besides the request: how to report, and in whose terms.
struct Asked {
    /// `--dry-run`.
    dry_run: bool,
    /// `--json`.
    json: bool,
    /// `--timeout` as written.
    timeout: Option<GivenDuration>,
    /// The flags given that the planner knows by their request field.
    terms: FlagTerms,
}

/// Which request fields came from flags, so that the planner's messages (which name the
/// request's fields, e.g. `launch.usageBudget.maxCostUsd`) can name the flags instead.
#[derive(Default)]
struct FlagTerms {
    /// One agent: its step is `steps[0]`, made of flags.
    agent: bool,
    max_cost: bool,
    max_tokens: bool,
    checkpoint: bool,
    gate: bool,
    accept: bool,
}

impl FlagTerms {
    /// `message` with the request fields made of flags named as those flags (the longest
    /// field first, so that a field is not taken for the start of a longer one).
    fn apply(&self, message: &str) -> String {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        if self.max_cost {
            pairs.push(("launch.usageBudget.maxCostUsd", "--max-cost"));
        }
        if self.max_tokens {
            pairs.push(("launch.usageBudget.maxTokens", "--max-tokens"));
        }
        if self.max_cost || self.max_tokens {
            pairs.push(("launch.usageBudget", "--max-tokens/--max-cost"));
        }
        if self.checkpoint {
            pairs.push(("launch.checkpointBeforeDeadlineMs", "--checkpoint-before-deadline"));
        }
        if self.gate {
            pairs.push(("launch.gate", "--gate"));
        }
        if self.accept {
            pairs.push(("launch.acceptance", "--accept"));
        }
        if self.agent {
            pairs.extend([
                ("steps[0].toolBudget", "--max-tool-calls"),
                ("steps[0].thinking", "--thinking"),
                ("steps[0].model", "--model"),
                ("steps[0].reads", "--read"),
                ("steps[0].output", "--output"),
                ("steps[0].task", "the task"),
            ]);
        }
        let text = pairs
            .iter()
            .fold(message.to_owned(), |text, (field, flag)| text.replace(field, flag));
        if self.agent {
            return text;
        }
        // A chain file's top-level keys are the request's `launch` fields.
        text.replace("launch.", "")
    }
}

impl Args {
    /// The run these arguments ask for and how to report it, or the usage error to print.
    fn into_request(self) -> Result<(RunRequest, Asked), String> {
        // clap does not enforce `requires` on these two next to `required_unless_present`.
        if self.chain.is_none() && (self.concurrency.is_some() || self.fail_fast) {
            return Err("--concurrency and --fail-fast need --chain".to_owned());
        }
        let asked = Asked {
            dry_run: self.dry_run,
            json: self.json,
            timeout: self.timeout.clone(),
            terms: FlagTerms {
                agent: self.chain.is_none(),
                max_cost: self.max_cost.is_some(),
                max_tokens: self.max_tokens.is_some(),
                checkpoint: self.checkpoint_before_deadline.is_some(),
                gate: self.gate.is_some(),
                accept: self.accept.is_some(),
            },
        };
        let usage_budget =
            (self.max_tokens.is_some() || self.max_cost.is_some()).then_some(sublaunch::contract::UsageBudget {
                max_tokens: self.max_tokens,
                max_cost_usd: self.max_cost,
            });
        let task = TaskSources {
            flag: self.task,
            file: self.task_file,
            positional: self.task_arg,
        }
        .read()?;
        let work = match &self.chain {
            Some(path) => Work::Chain {
                chain: read_chain_file(path).map_err(|e| e.to_string())?,
                task,
            },
            None => Work::Agent {
                agent: self.agent.unwrap_or_default(),
                task: task.ok_or(
                    "no task: give it as an argument (sublaunch run --agent shell 'echo hi'), with --task TEXT, \
                     --task - (standard input) or --task-file FILE",
                )?,
            },
        };
        let request = RunRequest {
            work,
            model: self.model,
            thinking: self.thinking,
            max_thinking: self.max_thinking,
            machine: self.machine,
            cwd: self.cwd,
            models_file: self.models,
            timeout: self.timeout.map(|t| t.duration),
            deadline_at: self.deadline,
            run_id: self.run_id,
            concurrency: self.concurrency,
            fail_fast: self.fail_fast,
            caller: Caller {
                session_id: Some(CLI_SESSION_ID.into()),
                ..Caller::default()
            },
            on_end: self.on_end,
            // SUBLAUNCH_MAX_ACTIVE, else the settings (`runs::request::max_active`).
            max_active: None,
            no_queue: self.no_queue,
            worktree: self.worktree,
            worktree_base: self.base,
            require_clean: self.require_clean,
            reads: self.reads,
            output: self.output,
            usage_budget,
            tool_budget: self.max_tool_calls,
            checkpoint_before_deadline: self.checkpoint_before_deadline.map(|c| c.duration),
            extensions: (!self.extensions.is_empty()).then_some(self.extensions),
            required_extensions: self.required_extensions,
            skills: (!self.skills.is_empty()).then_some(self.skills),
            sandbox: (self.sandbox.is_some() || !self.sandbox_ports.is_empty() || self.sandbox_best_effort).then(
                || sublaunch_contract::SandboxSetting {
                    profile: self.sandbox,
                    ports: (!self.sandbox_ports.is_empty()).then_some(self.sandbox_ports),
                    best_effort: self.sandbox_best_effort.then_some(true),
                    origin: Some("run --sandbox".into()),
                },
            ),
            wait: self.wait,
            acceptance: self.accept,
            gate: self.gate.map(serde_json::Value::String),
            permissions: run_permissions(sublaunch::contract::Permissions {
                tools: listed(self.tools),
                exclude_tools: listed(self.exclude_tools),
                allow: listed(self.allow),
                deny: listed(self.deny),
                mode: self.mode,
                nested: self.no_nested.then_some(false),
                max_depth: self.max_depth,
                nested_agents: listed(self.nested_agents),
                nested_models: listed(self.nested_models),
            }),
        };
        Ok((request, asked))
    }
}

/// The run's layer of the permission contract from its flags (`None`: no flag given).
fn run_permissions(permissions: sublaunch::contract::Permissions) -> Option<sublaunch::contract::Permissions> {
    (!permissions.is_empty()).then_some(permissions)
}

/// A repeated flag's values, `None` when it was not given.
fn listed(items: Vec<String>) -> Option<Vec<String>> {
    (!items.is_empty()).then_some(items)
}

/// A tool name of `--tools` / `--exclude-tools` (no pattern: those are `--allow`/`--deny` rules).
fn parse_tool(text: &str) -> Result<String, String> {
    let tool = text.trim();
    match sublaunch::contract::Rule::parse(tool) {
        Ok(rule) if rule.pattern.is_none() => Ok(tool.to_owned()),
        Ok(_) => Err(format!(
            "'{tool}' is a rule, not a tool name: give patterns with --allow or --deny"
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// A permission rule of `--allow` / `--deny` (rule G7).
fn parse_rule(text: &str) -> Result<String, String> {
    let rule = text.trim();
    sublaunch::contract::Rule::parse(rule).map_err(|e| e.to_string())?;
    Ok(rule.to_owned())
}

/// Runs `sublaunch run`.
pub fn run(args: Args) -> ExitCode {
    let usage = |message: String| {
        eprintln!("sublaunch run: {message}");
        ExitCode::from(EXIT_USAGE)
    };
    let (request, asked) = match args.into_request() {
        Ok(asked) => asked,
        Err(message) => return usage(message),
    };
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => return usage(format!("cannot read the working directory: {e}")),
    };
    // The planner (engine and cached component) loads while settings and agents are read; the
    // arguments were checked first, so a usage error never waits for a load.
    let planner = PlannerLoad::start();
    let gathered = match Gathered::read(&cwd, request.models_file.as_deref(), &super::environment()) {
        Ok(gathered) => gathered,
        Err(e) => return usage(e.to_string()),
    };
    for warning in gathered.warnings() {
        eprintln!(
            "sublaunch run: warning: {}",
            super::terminal_text::for_terminal(&warning)
        );
    }
    super::print_notices("run", gathered.ignored());
    let planner = match planner.finish() {
        Ok(planner) => planner,
        Err(error) => return print_outcome::<sublaunch::contract::LaunchPlan>(&Err(error)),
    };
    let wait = request.wait;
    let runtime = sublaunch::launch::runtime().expect("a tokio runtime");
    let prepared = runtime.block_on(prepare(request, gathered, &planner));
    let prepared = match prepared {
        Ok(prepared) if !asked.dry_run => prepared,
        Ok(prepared) => {
            // A dry run makes every check the launch would, so the plan it prints is one the
            // launch accepts; it writes and starts nothing.
            if let Err(error) = runtime.block_on(sublaunch::launch::check(&prepared.launch, &prepared.options)) {
                eprintln!(
                    "sublaunch run: {}",
                    asked.terms.apply(&super::launching::refusal(&error))
                );
                return super::launching::exit_for_refusal(&error);
            }
            return print_outcome(&Ok(prepared.launch.plan));
        }
        Err(StartError::Invalid(message)) => {
            let message = asked.terms.apply(&message);
            if asked.json {
                // D3: a launch refused before it began says so in one word too.
                let document = serde_json::json!({"error": message, "failureKind": FailureKind::Refused.as_str()});
                println!("{}", serde_json::to_string_pretty(&document).unwrap_or_default());
            }
            return usage(message);
        }
        Err(StartError::Failed(e)) => {
            eprintln!("sublaunch run: {e:#}");
            return ExitCode::FAILURE;
        }
        // A person gets one line on stderr; the document is for --json and the plan printout.
        // A refusal is bad input (exit 2, as for a broken chain file); a planner fault is not.
        Err(StartError::Plan(error)) if !asked.json && !asked.dry_run => {
            let fault = error.code == sublaunch::contract::ErrorCode::PlannerFault;
            eprintln!("sublaunch run: {}", asked.terms.apply(&error.message));
            return if fault {
                ExitCode::FAILURE
            } else {
                ExitCode::from(EXIT_USAGE)
            };
        }
        Err(StartError::Plan(error)) => {
            let fault = error.code == sublaunch::contract::ErrorCode::PlannerFault;
            if fault || asked.dry_run {
                print_outcome::<sublaunch::contract::LaunchPlan>(&Err(error));
            } else {
                // D3: a launch refused before it began says so in one word too.
                let document = serde_json::json!({"error": error, "failureKind": FailureKind::Refused.as_str()});
                println!("{}", serde_json::to_string_pretty(&document).unwrap_or_default());
            }
            return if fault {
                ExitCode::FAILURE
            } else {
                ExitCode::from(EXIT_USAGE)
            };
        }
    };
    drop(runtime);
    for note in &prepared.notes {
        eprintln!("sublaunch run: note: {}", super::terminal_text::for_terminal(note));
    }
    let presentation = Presentation {
        command: "run",
        json: asked.json,
        wait,
        timeout: asked.timeout,
    };
    let code = launch_and_report(prepared.launch, prepared.options, presentation);
    // Only after a run was made: a refused launch leaves the state root as it found it.
    if code == ExitCode::SUCCESS {
        super::retention::start_if_due();
    }
    code
}

/// `--accept` (G70): a level the flag can ask for alone (`verified` needs commands: `--gate`), or
/// `off` (no contract, not even an inferred one).
fn parse_accept(text: &str) -> Result<serde_json::Value, String> {
    match text {
        "attested" | "checked" | "auto" => Ok(serde_json::Value::String(text.to_owned())),
        "off" => Ok(serde_json::Value::Bool(false)),
        "verified" => Err("verified needs the command that verifies: use --gate CMD".into()),
        _ => Err(format!("'{text}' is not a level; use attested, checked, auto or off")),
    }
}

/// `--sandbox`: a profile name.
fn parse_sandbox_profile(text: &str) -> Result<String, String> {
    sublaunch_contract::sandbox::checked_profile(text)
}

/// `--sandbox-port`: a TCP port (never a host).
fn parse_sandbox_port(text: &str) -> Result<u16, String> {
    sublaunch_contract::sandbox::parse_port(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planner_fields_made_of_flags_are_named_as_the_flags() {
        let terms = FlagTerms {
            agent: true,
            max_cost: true,
            ..FlagTerms::default()
        };
        assert_eq!(
            terms.apply("reports no cost, so launch.usageBudget.maxCostUsd cannot be kept"),
            "reports no cost, so --max-cost cannot be kept"
        );
        assert_eq!(terms.apply("steps[0].model: unknown"), "--model: unknown");
        let chain = FlagTerms::default();
        assert_eq!(
            chain.apply("steps[1].model: launch.usageBudget.maxCostUsd cannot be kept"),
            "steps[1].model: usageBudget.maxCostUsd cannot be kept",
            "a chain file's own keys, as the file writes them"
        );
    }
}
