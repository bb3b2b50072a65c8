//! Finding agent files, nearest first, and resolving names.

use super::{AgentDef, AgentFileError, AgentSource, Scope, builtins, parse_agent_file};
use std::path::{Path, PathBuf};

/// Every agent known for a working directory.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    /// The agents in effect, by precedence (discovered first, then built-ins).
    pub agents: Vec<AgentDef>,
    /// Definitions hidden by an earlier one of the same name.
    pub shadowed: Vec<AgentDef>,
    /// Files that could not be read as agents.
    pub problems: Vec<AgentFileError>,
}

impl Catalog {
    /// The agent named `name`.
    pub fn get(&self, name: &str) -> Option<&AgentDef> {
        self.agents.iter().find(|a| a.name() == name)
    }

    /// The agent named `name`, or an error that says why it cannot be used: a broken file
    /// that defines it (its file name is `<name>.md`), or no such agent.
    pub fn require(&self, name: &str) -> Result<&AgentDef, String> {
        let broken = self
            .problems
            .iter()
            .find(|p| p.path.file_stem().is_some_and(|s| s == name));
        if let Some(problem) = broken {
            return Err(format!("agent '{name}' cannot be used: {problem}"));
        }
        self.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.agents.iter().map(AgentDef::name).collect();
            let mut message = format!("unknown agent '{name}'; known agents: {}", known.join(", "));
            for problem in &self.problems {
                message.push_str(&format!("\n  (not loaded: {problem})"));
            }
            message
        })
    }
}

/// The discovery locations for `cwd`, nearest first.
pub fn locations(cwd: &Path) -> Vec<(PathBuf, Scope)> {
    let mut locations = Vec::new();
    if let Some(dir) = nearest_dir(cwd, ".sublaunch/agents") {
        locations.push((dir, Scope::Project));
    }
    if let Some(config) = crate::dirs::config() {
        locations.push((config.join("agents"), Scope::User));
    }
    if let Some(dir) = nearest_dir(cwd, ".pi/agents") {
        locations.push((dir, Scope::PiProject));
    }
    if let Some(pi) = crate::dirs::pi_agent_dir() {
        locations.push((pi.join("agents"), Scope::PiUser));
    }
    locations
}

/// The agents for `cwd`: files from [`locations`], then the built-ins.
pub fn discover(cwd: &Path) -> Catalog {
    discover_in(&locations(cwd))
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
        for path in agent_files(dir) {
            let source = AgentSource::File {
                path: path.clone(),
                scope: *scope,
            };
            let parsed = std::fs::read_to_string(&path)
                .map_err(|e| AgentFileError {
                    path: path.clone(),
                    field: None,
                    message: format!("cannot read: {e}"),
                })
                .and_then(|text| parse_agent_file(&path, &text, source));
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

impl Catalog {
    fn add(&mut self, agent: AgentDef) {
        if self.get(agent.name()).is_some() {
            self.shadowed.push(agent);
        } else {
            self.agents.push(agent);
        }
    }
}

/// The `*.md` files of `dir`, sorted by name (a missing directory has none).
fn agent_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .collect();
    files.sort();
    files
}

/// The nearest `<ancestor>/<relative>` directory above `start`.
fn nearest_dir(start: &Path, relative: &str) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join(relative))
        .find(|candidate| candidate.is_dir())
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
        assert!(catalog.require("broken").unwrap_err().contains("broken.md: thinking"));
        let unknown = catalog.require("ghost").unwrap_err();
        assert!(
            unknown.contains("unknown agent 'ghost'") && unknown.contains("not loaded"),
            "{unknown}"
        );
    }
}
