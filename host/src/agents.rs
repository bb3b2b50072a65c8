//! Agent definitions the host knows: the built-ins compiled into the binary (more sources
//! arrive with agent files).

use sublaunch_contract::{Agent, Runner};

/// Where an agent definition came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentSource {
    /// Compiled into sublaunch.
    BuiltIn,
}

/// An agent the host can launch.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentDef {
    /// What the planner sees.
    pub planner: Agent,
    /// One line saying what the agent does.
    pub description: String,
    /// Where it was defined.
    pub source: AgentSource,
}

impl AgentDef {
    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.planner.name
    }
}

/// The built-in agents: `shell` runs the task text with `sh -c` in the step's directory.
pub fn builtins() -> Vec<AgentDef> {
    vec![AgentDef {
        planner: Agent {
            name: "shell".into(),
            runner: Some(Runner {
                kind: Some("external-cli".into()),
                adapter: Some("shell".into()),
            }),
            ..Agent::default()
        },
        description: "Runs the task text with `sh -c` in the step's working directory.".into(),
        source: AgentSource::BuiltIn,
    }]
}
