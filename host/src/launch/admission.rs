//! What this host grants a plan before launching it. The planner decided what runs where;
//! admission checks that this machine can do it, once, before anything is written: each local
//! step's program exists, placed steps have the local ssh client, and each placed step's
//! adapter is one whose command line sublaunch can wrap for ssh
//! ([`AdapterId::can_run_on_machine`](crate::inputs::agents::AdapterId::can_run_on_machine)).
//! An embedder's launch gets the same checks as the CLI's.

use crate::environment::Environment;
use crate::inputs::agents::{AdapterId, AgentDef, MissingProgram, locate_program};
use std::path::Path;
use sublaunch_contract::LaunchPlan;

/// Why this host cannot run a plan; the message says what is missing and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    /// A placed step's adapter cannot be wrapped for ssh.
    #[error("step {index} ('{agent}') uses the {adapter} runner, which cannot run on machine '{machine}'.")]
    NotPlaceable {
        /// The step's index in the plan.
        index: usize,
        /// Its agent.
        agent: String,
        /// The agent's adapter.
        adapter: AdapterId,
        /// The machine's id.
        machine: String,
    },
    /// Steps are placed on a Slurm cluster and a Slurm command is missing (J6, J11).
    #[error(
        "steps placed on a Slurm cluster are run with Slurm's commands, and {0}.\nInstall Slurm's client commands (Debian and Ubuntu: `apt install slurm-client`)."
    )]
    NoSlurm(MissingProgram),
    /// Steps are placed on a machine and the ssh client is missing.
    #[error("steps placed on a machine run through ssh, and {0}.\nInstall the OpenSSH client.")]
    NoSsh(MissingProgram),
    /// Local steps' programs are missing: one `agent '<name>' needs the program …` each.
    #[error(
        "{}.\nOr point the agent's `runner.command` at the program (`sublaunch agents` shows where each agent is defined).",
        .0.join("; ")
    )]
    MissingPrograms(Vec<String>),
}

/// Refuses `plan` when this host cannot run it with `agents`.
pub fn admit(plan: &LaunchPlan, agents: &[AgentDef], env: &Environment) -> Result<(), AdmissionError> {
    let path = env.var("PATH");
    let agent_of = |name: &str| agents.iter().find(|a| a.name() == name);
    // J4: the run is submitted from here (J6), or its cluster steps are (J11, `srun`); its
    // agents' programs are on the nodes.
    if let Some(step) = plan.steps.iter().find(|s| s.cluster.is_some()) {
        let whole = plan.steps.iter().all(|s| s.cluster.is_some());
        let needed: &[&str] = if whole { &["sbatch"] } else { &["srun", "scancel"] };
        for program in needed {
            if let Err(missing) = locate_program(program, Path::new(&step.cwd), path) {
                return Err(AdmissionError::NoSlurm(missing));
            }
        }
    }
    for (index, step) in plan.steps.iter().enumerate() {
        let (Some(machine), Some(agent)) = (&step.machine, agent_of(&step.agent)) else {
            continue;
        };
        let adapter = agent.runner.adapter;
        if !adapter.can_run_on_machine() {
            return Err(AdmissionError::NotPlaceable {
                index,
                agent: step.agent.clone(),
                adapter,
                machine: machine.id.clone(),
            });
        }
    }
    if let Some(step) = plan.steps.iter().find(|s| s.machine.is_some())
        && let Err(missing) = locate_program("ssh", Path::new(&step.cwd), path)
    {
        return Err(AdmissionError::NoSsh(missing));
    }
    let mut problems: Vec<String> = Vec::new();
    // A placed step's program must exist on its machine (or the cluster's nodes), not here.
    for step in plan.steps.iter().filter(|s| s.machine.is_none() && s.cluster.is_none()) {
        let Some(program) = agent_of(&step.agent).and_then(|a| a.runner.program()) else {
            continue;
        };
        // An argv template may build the program from placeholders; the runner checks it.
        if program.contains('{') {
            continue;
        }
        if let Err(missing) = locate_program(program, Path::new(&step.cwd), path) {
            let problem = needs(&step.agent, program, &missing);
            if !problems.contains(&problem) {
                problems.push(problem);
            }
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(AdmissionError::MissingPrograms(problems))
}

/// `agent 'claude' needs the program 'claude', which is not on PATH (…); install it with …`.
fn needs(agent: &str, program: &str, missing: &MissingProgram) -> String {
    let why = match missing {
        MissingProgram::NotOnPath { path, .. } if path.is_empty() => "which cannot be found: PATH is empty".to_owned(),
        MissingProgram::NotOnPath { path, .. } => format!("which is not on PATH ({path})"),
        MissingProgram::NotExecutable { path, reason } => {
            return format!("agent '{agent}' needs the program '{}', which {reason}", path.display());
        }
    };
    let install = match program {
        "claude" => "; install Claude Code with `npm install -g @anthropic-ai/claude-code`",
        "codex" => "; install Codex with `npm install -g @openai/codex`",
        "pi" => "; install pi with `npm install -g @earendil-works/pi-coding-agent` (it needs Node.js 22.19 or later)",
        "cursor-agent" => "; install Cursor's agent with `curl https://cursor.com/install -fsS | bash`",
        _ => "",
    };
    format!("agent '{agent}' needs the program '{program}', {why}{install}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::agents::{AdapterId, AgentSource, RunnerSpec, builtins};
    use sublaunch_contract::{MachineRef, PlanStep};

    fn placed(agent: &str) -> LaunchPlan {
        let mut step = PlanStep::local(agent, "task", "/");
        step.machine = Some(MachineRef {
            provider: "herdr".into(),
            id: "box".into(),
            label: None,
            target: "box".into(),
            session: None,
            cwd: "/srv".into(),
        });
        LaunchPlan::single(step)
    }

    fn path_env(dir: &Path) -> Environment {
        Environment::from_vars([("PATH", dir.as_os_str())])
    }

    #[test]
    fn a_placed_step_needs_a_wrappable_adapter_and_the_ssh_client() {
        let tmp = tempfile::tempdir().unwrap();
        let mut generic = builtins().into_iter().find(|a| a.name() == "shell").unwrap();
        generic.planner.name = "tool".into();
        generic.runner = RunnerSpec {
            adapter: AdapterId::GenericCli,
            command: Some(vec!["tool".into()]),
        };
        generic.source = AgentSource::BuiltIn;
        let agents = [builtins(), vec![generic]].concat();
        let error = admit(&placed("tool"), &agents, &path_env(tmp.path()))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("uses the external-cli runner, which cannot run on machine 'box'"),
            "{error}"
        );
        let error = admit(&placed("shell"), &agents, &path_env(tmp.path()))
            .unwrap_err()
            .to_string();
        assert!(error.contains("steps placed on a machine run through ssh"), "{error}");
        std::fs::write(tmp.path().join("ssh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            tmp.path().join("ssh"),
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
        )
        .unwrap();
        assert_eq!(admit(&placed("shell"), &agents, &path_env(tmp.path())), Ok(()));
    }

    #[test]
    fn a_local_step_needs_its_program_on_the_environments_path() {
        let tmp = tempfile::tempdir().unwrap();
        let plan = LaunchPlan::single(PlanStep::local("claude", "task", "/"));
        let error = admit(&plan, &builtins(), &path_env(tmp.path()))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(&format!(
                "agent 'claude' needs the program 'claude', which is not on PATH ({}); install Claude Code with `npm install -g @anthropic-ai/claude-code`.\n",
                tmp.path().display()
            )),
            "{error}"
        );
        assert!(error.contains("runner.command"), "{error}");
    }
}
