//! Finding agent files, nearest first, and resolving names.
//!
//! Project locations are looked for from the working directory up to the repository root
//! (the nearest directory holding `.git`), else up to `$HOME`, else in the working directory
//! alone: a `.sublaunch/agents` in a shared directory above a project is never picked up.
//! They count only in a project the user trusts ([`crate::inputs::project`]), and a project
//! agent that runs a program of its own choosing, or takes the name of a built-in or user
//! agent, only once the user approved its file's exact content; what is left out is reported
//! in [`Catalog::ignored`]. Every location and file must also pass [`super::trust`]; one that
//! fails is left out and reported in [`Catalog::untrusted`].

use super::trust::{self, Untrusted};
use super::{AgentDef, AgentSource, Scope, builtins, parse_agent_file};
use crate::environment::Environment;
use crate::inputs::config_files::FileError;
use crate::inputs::project::store::ProgramKind;
use crate::inputs::project::{Ignored, ProgramItem, Project};
use std::path::{Path, PathBuf};
use sublaunch_contract::nearest::nearest;

/// Every agent known for a working directory.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    /// The agents in effect, by precedence (discovered first, then built-ins).
    pub agents: Vec<AgentDef>,
    /// Definitions hidden by an earlier one of the same name.
    pub shadowed: Vec<AgentDef>,
    /// Files that could not be read as agents.
    pub problems: Vec<FileError>,
    /// Locations and files left out because someone else could have written them.
    pub untrusted: Vec<Untrusted>,
    /// Project agents left out because the project is not trusted or their program is not
    /// approved.
    pub ignored: Vec<Ignored>,
    /// The project agents that run programs, as approved (what `sublaunch trust` records).
    pub programs: Vec<ProgramItem>,
    /// The SHA-256 of each project agent file as it was parsed.
    digests: Vec<(PathBuf, String)>,
}

impl Catalog {
    /// The agent named `name`.
    pub fn get(&self, name: &str) -> Option<&AgentDef> {
        self.agents.iter().find(|a| a.name() == name)
    }

    /// The built-in or user-wide definitions that a project agent named `name` hides (empty
    /// when the agent in effect is not a project one): a repository can redefine what
    /// `--agent claude` runs, so this is shown to the user.
    pub fn hidden_by_project(&self, name: &str) -> Vec<&AgentDef> {
        let from_project = self.get(name).is_some_and(|a| {
            matches!(&a.source, AgentSource::File { scope, .. } if matches!(scope, Scope::Project | Scope::PiProject))
        });
        if !from_project {
            return Vec::new();
        }
        self.shadowed
            .iter()
            .filter(|s| s.name() == name)
            .filter(|s| match &s.source {
                AgentSource::BuiltIn => true,
                AgentSource::File { scope, .. } => matches!(scope, Scope::User | Scope::PiUser),
            })
            .collect()
    }

    /// The agent named `name`, or an error that says why it cannot be used: a broken file
    /// that would define it (its file name is `<name>.md`) and comes before every valid
    /// definition, or no such agent (the message lists the known agents and the files that
    /// could not be loaded).
    pub fn require(&self, name: &str) -> Result<&AgentDef, UnusableAgent> {
        if let Some(agent) = self.get(name) {
            return Ok(agent);
        }
        if let Some(problem) = self.problems.iter().find(|p| stem_is(&p.path, name)) {
            return Err(UnusableAgent::Broken {
                name: name.to_owned(),
                problem: problem.clone(),
            });
        }
        Err(UnusableAgent::Unknown {
            name: name.to_owned(),
            known: self.agents.iter().map(|a| a.name().to_owned()).collect(),
            not_loaded: self.problems.clone(),
        })
    }
}

/// Why [`Catalog::require`] cannot give the agent asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnusableAgent {
    /// The first file that would define it is broken.
    Broken {
        /// The agent name.
        name: String,
        /// What is wrong with its file.
        problem: FileError,
    },
    /// No agent has that name.
    Unknown {
        /// The agent name.
        name: String,
        /// The agents there are.
        known: Vec<String>,
        /// The files that could not be loaded (one of them may have meant to define it).
        not_loaded: Vec<FileError>,
    },
}

impl std::fmt::Display for UnusableAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Broken { name, problem } => write!(f, "agent '{name}' cannot be used: {problem}"),
            Self::Unknown {
                name,
                known,
                not_loaded,
            } => {
                write!(f, "unknown agent '{name}'")?;
                if let Some(near) = nearest(name, known.iter().map(String::as_str)) {
                    write!(f, " (did you mean '{near}'?)")?;
                }
                write!(f, "; known agents: {}", known.join(", "))?;
                not_loaded
                    .iter()
                    .try_for_each(|problem| write!(f, "\n  (not loaded: {problem})"))
            }
        }
    }
}

impl std::error::Error for UnusableAgent {}

/// Whether an agent's runner starts a program its file chose (not a built-in adapter's own:
/// an adapter without one runs what the file names).
fn runs_own_program(agent: &AgentDef) -> bool {
    agent.runner.command.is_some() || agent.runner.adapter.default_program().is_none()
}

fn is_project(agent: &AgentDef) -> bool {
    matches!(&agent.source, AgentSource::File { scope, .. } if matches!(scope, Scope::Project | Scope::PiProject))
}

fn stem_is(path: &Path, name: &str) -> bool {
    path.file_stem().is_some_and(|s| s == name)
}

/// The discovery locations for `project`, nearest first (its own only when trusted).
pub fn locations(project: &Project, env: &Environment) -> Vec<(PathBuf, Scope)> {
    let mut locations = Vec::new();
    if let Some(dir) = project.entry(".sublaunch/agents") {
        locations.push((dir, Scope::Project));
    }
    if let Some(config) = env.config_dir() {
        locations.push((config.join("agents"), Scope::User));
    }
    if let Some(dir) = project.entry(".pi/agents") {
        locations.push((dir, Scope::PiProject));
    }
    if let Some(pi) = env.pi_agent_dir() {
        locations.push((pi.join("agents"), Scope::PiUser));
    }
    locations
}

/// The agents for `project`: files from `locations`, then the built-ins; project agents
/// that run programs only when approved.
pub fn discover(project: &Project, env: &Environment) -> Catalog {
    let mut catalog = discover_in(&locations(project, env));
    catalog.gate_programs(project);
    catalog
}

/// The agents from these locations (nearest first), then the built-ins.
pub fn discover_in(locations: &[(PathBuf, Scope)]) -> Catalog {
    let mut catalog = Catalog::default();
    let mut seen_dirs: Vec<PathBuf> = Vec::new();
    for (dir, scope) in locations {
        let canonical = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        if seen_dirs.contains(&canonical) {
            continue;
        }
        seen_dirs.push(canonical);
        if !trusted_location(dir, *scope, &mut catalog.untrusted) {
            continue;
        }
        for path in agent_files(dir) {
            match trust::check(&path) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(untrusted) => {
                    catalog.untrusted.push(untrusted);
                    continue;
                }
            }
            let source = AgentSource::File {
                path: path.clone(),
                scope: *scope,
            };
            let parsed = crate::inputs::config_files::read_text(&path)
                .map_err(|problem| FileError::new(&path, None, problem.problem))
                .and_then(|text| {
                    if matches!(scope, Scope::Project | Scope::PiProject) {
                        let digest = sublaunch_protocol::files::atomic::sha256_hex(text.as_bytes());
                        catalog.digests.push((path.clone(), digest));
                    }
                    parse_agent_file(&path, &text, source)
                });
            match parsed {
                Ok(agent) => catalog.add(agent),
                Err(problem) => catalog.problems.push(problem),
            }
        }
    }
    for agent in builtins() {
        catalog.add(agent);
    }
    catalog
}

/// Whether the agents of `dir` may be read: the directory and, for a project location, the
/// `.sublaunch` or `.pi` directory holding it must pass [`trust::check`].
fn trusted_location(dir: &Path, scope: Scope, untrusted: &mut Vec<Untrusted>) -> bool {
    let project = matches!(scope, Scope::Project | Scope::PiProject);
    let parent = dir.parent().filter(|_| project);
    for path in parent.into_iter().chain([dir]) {
        match trust::check(path) {
            Ok(true) => {}
            Ok(false) => return false,
            Err(problem) => {
                untrusted.push(problem);
                return false;
            }
        }
    }
    true
}

impl Catalog {
    /// Leaves out each project agent that runs a program of its own choosing or takes the name
    /// of a built-in or user agent, unless `project` approves its file's content: the
    /// definition it hides (if any) is in effect instead, and the notice goes to
    /// [`Catalog::ignored`].
    fn gate_programs(&mut self, project: &Project) {
        let mut index = 0;
        while index < self.agents.len() {
            let agent = &self.agents[index];
            let AgentSource::File { path, scope } = &agent.source else {
                index += 1;
                continue;
            };
            if !matches!(scope, Scope::Project | Scope::PiProject) {
                index += 1;
                continue;
            }
            let kind = if !self.hidden_by_project(agent.name()).is_empty() {
                ProgramKind::AgentInPlace
            } else if runs_own_program(agent) {
                ProgramKind::AgentProgram
            } else {
                index += 1;
                continue;
            };
            let digest = self.digests.iter().find(|(p, _)| p == path).map(|(_, d)| d.clone());
            let item = ProgramItem {
                path: path.clone(),
                kind,
                sha256: digest.unwrap_or_default(),
                shows: format!("{} ({})", agent.name(), agent.runner.describe()),
            };
            match project.check(&item) {
                Ok(()) => {
                    self.programs.push(item);
                    index += 1;
                }
                Err(ignored) => {
                    self.ignored.push(ignored);
                    let removed = self.agents.remove(index);
                    let name = removed.name().to_owned();
                    // The first definition it hid that is not the project's takes its place.
                    if let Some(at) = self.shadowed.iter().position(|s| s.name() == name && !is_project(s)) {
                        let restored = self.shadowed.remove(at);
                        self.agents.insert(index, restored);
                        index += 1;
                    }
                    self.shadowed.retain(|s| !(s.name() == name && is_project(s)));
                }
            }
        }
    }

    /// Adds a definition found after every one already added: it is shadowed by an earlier
    /// definition of its name, or by an earlier broken file named after it (so a broken
    /// `shell.md` is reported instead of silently falling back to the built-in).
    fn add(&mut self, agent: AgentDef) {
        let broken_before = self.problems.iter().any(|p| stem_is(&p.path, agent.name()));
        if broken_before || self.get(agent.name()).is_some() {
            self.shadowed.push(agent);
        } else {
            self.agents.push(agent);
        }
    }
}

/// The `*.md` entries of `dir`, sorted by name (a missing directory has none). Whatever is
/// not a regular file (a directory, a FIFO, a device) is reported by the reader, by name.
fn agent_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn nearer_locations_win_and_builtins_come_last() {
        let tmp = tempfile::tempdir().unwrap();
        let (project, user) = (tmp.path().join("project"), tmp.path().join("user"));
        write(
            &project,
            "shell.md",
            "---\ndescription: project shell\nrunner:\n  type: external-cli\n  adapter: shell\n---\n",
        );
        write(&project, "scout.md", "---\ndescription: project scout\n---\n");
        write(&user, "scout.md", "---\ndescription: user scout\n---\n");
        write(&user, "broken.md", "---\nthinking: 9\n---\n");
        let catalog = discover_in(&[(project, Scope::Project), (user, Scope::User)]);
        assert_eq!(catalog.get("scout").unwrap().description, "project scout");
        assert_eq!(
            catalog.get("shell").unwrap().description,
            "project shell",
            "a file wins over the built-in"
        );
        assert!(catalog.get("codex").is_some_and(|a| a.source == AgentSource::BuiltIn));
        assert_eq!(
            catalog
                .shadowed
                .iter()
                .filter(|a| a.name() == "scout" || a.name() == "shell")
                .count(),
            2
        );
        assert_eq!(catalog.problems.len(), 1);
        assert!(
            catalog
                .require("broken")
                .unwrap_err()
                .to_string()
                .contains("broken.md: thinking")
        );
        let unknown = catalog.require("ghost").unwrap_err().to_string();
        assert!(
            unknown.contains("unknown agent 'ghost'") && unknown.contains("not loaded"),
            "{unknown}"
        );
    }
    #[test]
    fn a_broken_file_hides_later_definitions_of_its_name_but_not_earlier_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let (project, user) = (tmp.path().join("project"), tmp.path().join("user"));
        // Nearest first: the broken project `shell.md` hides the built-in `shell`.
        write(&project, "shell.md", "---\nrunner: shell\n---\n");
        // A valid project `scout` wins over a broken user `scout.md`.
        write(&project, "scout.md", "---\ndescription: good scout\n---\n");
        write(&user, "scout.md", "---\nmodel: [x]\n---\n");
        let catalog = discover_in(&[(project, Scope::Project), (user, Scope::User)]);
        let error = catalog.require("shell").unwrap_err().to_string();
        assert!(
            error.contains("agent 'shell' cannot be used") && error.contains("shell.md: runner"),
            "{error}"
        );
        assert!(
            catalog
                .shadowed
                .iter()
                .any(|a| a.name() == "shell" && a.source == AgentSource::BuiltIn)
        );
        assert_eq!(catalog.require("scout").unwrap().description, "good scout");
        assert_eq!(catalog.problems.len(), 2, "both broken files are still reported");
    }

    #[test]
    fn the_same_directory_reached_twice_is_read_once() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("agents");
        write(&dir, "a.md", "---\n---\n");
        let catalog = discover_in(&[(dir.clone(), Scope::Project), (dir, Scope::PiProject)]);
        assert!(catalog.shadowed.iter().all(|a| a.name() != "a"));
        assert_eq!(
            catalog.get("a").unwrap().source,
            AgentSource::File {
                path: tmp.path().join("agents/a.md"),
                scope: Scope::Project
            }
        );
    }
}
