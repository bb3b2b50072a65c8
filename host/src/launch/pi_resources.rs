//! The pi extensions and skills a step names, found before the run starts. A name is looked
//! up where pi discovers its own (`$PI_CODING_AGENT_DIR`, by default `~/.pi/agent`, then the
//! project's `.pi`), a path is taken against the step's directory; one that is not there
//! refuses the launch, naming where it was looked for. pi itself would refuse a missing
//! extension only once the run had started, and skips a missing skill without a word.

use super::step_files::StepFileError;
use crate::Environment;
use std::path::{Path, PathBuf};
use sublaunch_protocol::records::config::StepConfig;

/// What is looked up: an extension (a file, or a directory with an index) or a skill (a
/// directory with a `SKILL.md`, or the file itself).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Extension,
    Skill,
}

impl Kind {
    fn dir_name(self) -> &'static str {
        match self {
            Kind::Extension => "extensions",
            Kind::Skill => "skills",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Kind::Extension => "pi extension",
            Kind::Skill => "pi skill",
        }
    }

    /// The entries of a directory that stand for `name`.
    fn candidates(self, dir: &Path, name: &str) -> Vec<PathBuf> {
        match self {
            Kind::Extension => vec![
                dir.join(format!("{name}.ts")),
                dir.join(format!("{name}.js")),
                dir.join(name).join("index.ts"),
                dir.join(name).join("index.js"),
                dir.join(name),
            ],
            Kind::Skill => vec![dir.join(name).join("SKILL.md")],
        }
    }

    /// Whether `path` is usable as given.
    fn usable(self, path: &Path) -> bool {
        match self {
            Kind::Extension => path.exists(),
            Kind::Skill => path.is_file() || path.join("SKILL.md").is_file(),
        }
    }
}

/// One lookup context: the step's directory, HOME and pi's directory.
struct Lookup<'a> {
    cwd: &'a Path,
    home: Option<PathBuf>,
    agent_dir: Option<PathBuf>,
    who: &'a str,
}

impl Lookup<'_> {
    /// The directories a name is looked up in, in order.
    fn dirs(&self, kind: Kind) -> Vec<PathBuf> {
        self.agent_dir
            .iter()
            .map(|d| d.join(kind.dir_name()))
            .chain(std::iter::once(self.cwd.join(".pi").join(kind.dir_name())))
            .collect()
    }

    fn find(&self, kind: Kind, entry: &str) -> Result<PathBuf, StepFileError> {
        if entry.contains('/') {
            let path = if let Some(rest) = entry.strip_prefix("~/") {
                self.home
                    .as_ref()
                    .ok_or_else(|| StepFileError::ResourceUnderNoHome {
                        who: self.who.to_owned(),
                        what: kind.what(),
                        entry: entry.to_owned(),
                    })?
                    .join(rest)
            } else {
                self.cwd.join(entry)
            };
            if kind.usable(&path) {
                return Ok(path);
            }
            let why = if kind == Kind::Skill && path.is_dir() {
                "has no SKILL.md"
            } else {
                "does not exist"
            };
            return Err(StepFileError::ResourceUnusable {
                who: self.who.to_owned(),
                what: kind.what(),
                entry: entry.to_owned(),
                path,
                why,
            });
        }
        let dirs = self.dirs(kind);
        for dir in &dirs {
            if let Some(found) = kind.candidates(dir, entry).into_iter().find(|p| p.exists()) {
                // A skill is handed to pi as its directory.
                return Ok(match kind {
                    Kind::Skill => found.parent().map_or(found.clone(), Path::to_path_buf),
                    Kind::Extension => found,
                });
            }
        }
        Err(StepFileError::ResourceNotFound {
            who: self.who.to_owned(),
            what: kind.what(),
            entry: entry.to_owned(),
            looked: dirs,
        })
    }

    fn find_all(&self, kind: Kind, entries: &[String]) -> Result<Vec<String>, StepFileError> {
        entries
            .iter()
            .map(|entry| self.find(kind, entry).map(|p| p.to_string_lossy().into_owned()))
            .collect()
    }
}

/// Resolves the extensions and skills of `step` (`who` names it in messages). A placed step's
/// are on its machine and stay as planned.
pub(crate) fn resolve(step: &mut StepConfig, env: &Environment, who: &str) -> Result<(), StepFileError> {
    if step.placement.is_some()
        || (step.extensions.is_none() && step.required_extensions.is_empty() && step.skills.is_none())
    {
        return Ok(());
    }
    let cwd = PathBuf::from(step.cwd.clone().unwrap_or_default());
    let lookup = Lookup {
        cwd: &cwd,
        home: env.home(),
        // One reading of `$PI_CODING_AGENT_DIR` (with `~` expanded) for the whole host.
        agent_dir: env.pi_agent_dir(),
        who,
    };
    if let Some(list) = &step.extensions {
        step.extensions = Some(lookup.find_all(Kind::Extension, list)?);
    }
    let required = lookup.find_all(Kind::Extension, &step.required_extensions)?;
    // With discovery on, pi loads what its own directory holds; naming it again would load it
    // twice.
    let discovered = lookup.agent_dir.as_ref().map(|d| d.join("extensions"));
    step.required_extensions = required
        .into_iter()
        .filter(|path| {
            step.extensions.is_some()
                || !discovered
                    .as_ref()
                    .is_some_and(|dir| in_discovery_dir(Path::new(path), dir))
        })
        .collect();
    if let Some(list) = &step.skills {
        let permissions = step.adapter.as_ref().and_then(|a| a.permissions.as_ref());
        let tools = permissions.and_then(|p| p.tools.as_deref()).unwrap_or_default();
        if !list.is_empty() && !tools.is_empty() && !tools.iter().any(|t| t == "read" || t == "bash") {
            return Err(StepFileError::SkillsWithoutTools {
                who: who.to_owned(),
                tools: tools.to_vec(),
            });
        }
        step.skills = Some(lookup.find_all(Kind::Skill, list)?);
    }
    Ok(())
}

/// Whether pi's discovery finds `path` in `dir` (`dir/x.ts` or `dir/x/index.ts`).
fn in_discovery_dir(path: &Path, dir: &Path) -> bool {
    let parent = path.parent();
    parent == Some(dir) || parent.and_then(Path::parent) == Some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `PI_CODING_AGENT_DIR=~/pi` names the same directory here as for the settings and the
    /// agents: the extension found there is pi's own discovery, so it is not named again.
    #[test]
    fn a_tilde_agent_dir_is_the_one_pi_discovers_from() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join("pi/extensions")).unwrap();
        std::fs::write(home.join("pi/extensions/audit.ts"), "export default () => {}\n").unwrap();
        let env = Environment::from_vars([("HOME", home.as_os_str()), ("PI_CODING_AGENT_DIR", "~/pi".as_ref())]);
        let mut step = StepConfig {
            cwd: Some(tmp.path().to_string_lossy().into_owned()),
            required_extensions: vec!["audit".into()],
            ..StepConfig::default()
        };
        resolve(&mut step, &env, "step 1").unwrap();
        assert_eq!(
            step.required_extensions,
            Vec::<String>::new(),
            "pi loads it from its directory itself"
        );
    }
}
