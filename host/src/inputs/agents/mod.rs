//! Agent definitions: Markdown files with YAML frontmatter, discovered nearest first, and
//! the built-ins compiled into sublaunch.
//!
//! Discovery order (the first definition of a name wins, later ones are shadowed):
//! 1. the nearest `.sublaunch/agents/` above the working directory (project);
//! 2. `~/.config/sublaunch/agents/` (user);
//! 3. the nearest `.pi/agents/` and then `~/.pi/agent/agents/`, so pi-subagents users bring
//!    their agents along;
//! 4. the built-ins (`builtin`).

mod builtin;
mod discovery;
mod file;
mod program;
mod runner;
pub(crate) mod trust;

pub use builtin::builtins;
pub use discovery::{Catalog, discover, discover_in};
pub use file::parse_agent_file;
pub use program::{MissingProgram, locate_program};
pub use runner::{AdapterId, RunnerSpec, TEMPLATE_PLACEHOLDERS};
pub use trust::Untrusted;

use std::path::PathBuf;
use sublaunch_contract::Agent;

/// Where an agent definition came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentSource {
    /// Compiled into sublaunch.
    BuiltIn,
    /// Read from a file.
    File {
        /// The file.
        path: PathBuf,
        /// Which discovery location it was found in.
        scope: Scope,
    },
}

/// A discovery location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `.sublaunch/agents/` above the working directory.
    Project,
    /// `~/.config/sublaunch/agents/`.
    User,
    /// `.pi/agents/` above the working directory.
    PiProject,
    /// `~/.pi/agent/agents/`.
    PiUser,
}

impl Scope {
    /// The scope's id in JSON listings: `project`, `user`, `pi-project`, `pi-user`.
    pub fn id(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::User => "user",
            Self::PiProject => "pi-project",
            Self::PiUser => "pi-user",
        }
    }

    /// A short label for listings.
    pub fn label(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::User => "user",
            Self::PiProject => "pi project",
            Self::PiUser => "pi user",
        }
    }
}

impl AgentSource {
    /// A short description for listings: `built-in`, or the scope and file.
    pub fn describe(&self) -> String {
        match self {
            Self::BuiltIn => "built-in".to_owned(),
            Self::File { path, scope } => format!("{} ({})", scope.label(), path.display()),
        }
    }
}

/// An agent the host can launch.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentDef {
    /// What the planner sees (name, model, thinking, ceilings, machine, runner, schema).
    pub planner: Agent,
    /// One line saying what the agent does.
    pub description: String,
    /// The system prompt (the file's body).
    pub system_prompt: String,
    /// How the agent is started.
    pub runner: RunnerSpec,
    /// It writes, so each of its steps runs in its own managed git worktree unless the step
    /// says otherwise (frontmatter `worktree: true`).
    pub worktree: bool,
    /// Where it was defined.
    pub source: AgentSource,
}

impl AgentDef {
    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.planner.name
    }
}
