//! What a client of `sublaunch mcp` may do. The client is an agent, maybe a prompt-injected
//! one, so the server's owner bounds it:
//! - every local path a run uses (its working directory, a step's, the files its agents read
//!   first, the file its answer is written to) lies inside the server's root once `~` is
//!   expanded, relative paths are joined and every symlink is followed;
//! - it starts only the agents the owner allows, and never an agent that runs its task as
//!   shell code (`shell`, `command` runners) unless the owner said `--allow-shell`;
//! - it starts no run when the server itself runs too deep inside runs (an agent that starts
//!   a server that starts an agent that …).
//!
//! A placed run's working directory and reads are on its machine, which has its own account
//! and rules; only what touches this machine is confined here (its answer file).

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use sublaunch::inputs::agents::AgentDef;

/// The most symlinks followed while resolving one path (as Linux's `ELOOP` limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// The bounds a server's owner gave it.
#[derive(Debug)]
pub struct Policy {
    /// The root every local path stays in (canonical).
    root: PathBuf,
    /// The agents a client may start (`None`: every agent).
    agents: Option<BTreeSet<String>>,
    /// Whether agents that run their task as shell code may be started.
    allow_shell: bool,
    /// The depth from which no run is started.
    max_depth: u32,
    /// How deep in runs the server itself runs.
    depth: u32,
    /// `HOME`, for `~` and `~/…`.
    home: Option<PathBuf>,
}

/// Why a request is refused.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A path leads outside the root.
    #[error(
        "{what}: '{given}' leads to {}, outside this server's root {}. Runs started through MCP stay inside the root; the server's owner sets it with `sublaunch mcp --root DIR`",
        resolved.display(),
        root.display()
    )]
    Outside {
        /// The argument (or step and field) that names the path.
        what: String,
        /// The path as given.
        given: String,
        /// Where it leads.
        resolved: PathBuf,
        /// The root.
        root: PathBuf,
    },
    /// A path cannot be resolved.
    #[error("{what}: '{given}' cannot be resolved: {why}")]
    Unresolvable {
        /// The argument (or step and field) that names the path.
        what: String,
        /// The path as given.
        given: String,
        /// Why not.
        why: String,
    },
    /// A step's acceptance contract runs shell commands (a gate, verify commands), and
    /// `--allow-shell` was not given (G70).
    #[error(
        "{what}: its acceptance contract runs shell commands ({commands}), which this server does not run. \
The server's owner allows them with `sublaunch mcp --allow-shell`"
    )]
    ShellGate {
        /// The step (or `gate` for a single agent).
        what: String,
        /// Its commands' ids, listed.
        commands: String,
    },
    /// An agent the client may not start.
    #[error("agent '{name}' {why}. Agents this server starts here: {allowed}. {how}")]
    Agent {
        /// The agent.
        name: String,
        /// Why it is refused.
        why: String,
        /// The agents that may be started, listed.
        allowed: String,
        /// How the server's owner allows more.
        how: String,
    },
    /// The server runs too deep inside runs.
    #[error(
        "this server runs {place}, and starts runs only up to {max} deep: a run started here would nest agents too \
deeply. Do the work without a subagent, or ask the server's owner for a higher `sublaunch mcp --max-depth`"
    )]
    TooDeep {
        /// Where the server runs, in words.
        place: String,
        /// The limit.
        max: u32,
    },
}

/// Why an agent may not be started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotAllowed {
    /// It is not in `--agents`.
    NotListed,
    /// It runs its task as shell code, and `--allow-shell` was not given.
    RunsShellCode,
}

impl NotAllowed {
    /// In words, after the agent's name.
    pub fn describe(self) -> &'static str {
        match self {
            Self::NotListed => "is not among the agents this server starts (`--agents`)",
            Self::RunsShellCode => {
                "runs its task as shell code (the shell runner or a command runner), which this server does not start"
            }
        }
    }
}

impl Policy {
    /// The policy of a server: `root` canonical already; `found_depth` how many runs the
    /// server was found to run inside (their records, G61), which the environment's depth
    /// can only raise.
    pub fn new(
        root: PathBuf,
        agents: Option<Vec<String>>,
        allow_shell: bool,
        max_depth: u32,
        found_depth: u32,
        env: &sublaunch::Environment,
    ) -> Self {
        Self {
            root,
            agents: agents.map(|names| names.into_iter().collect()),
            allow_shell,
            max_depth,
            depth: env.run_depth().max(found_depth),
            home: env.home(),
        }
    }

    /// The root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Refuses a run when the server runs at or beyond the depth limit.
    pub fn check_depth(&self, env: &sublaunch::Environment) -> Result<(), Refusal> {
        if self.depth < self.max_depth {
            return Ok(());
        }
        let var = sublaunch::environment::RUN_DEPTH_VAR;
        let value = env
            .var(var)
            .map(|v| v.to_string_lossy().into_owned())
            .unwrap_or_default();
        Err(Refusal::TooDeep {
            place: if self.depth == u32::MAX {
                format!("with {var}={value}, which is not a whole number and counts as too deep")
            } else if self.depth == 0 {
                "outside any sublaunch run".to_owned()
            } else if value.is_empty() {
                format!("inside sublaunch runs {} deep", self.depth)
            } else {
                format!("inside sublaunch runs {} deep ({var}={value})", self.depth)
            },
            max: self.max_depth,
        })
    }

    /// Why `agent` may not be started (`None`: it may).
    pub fn not_allowed(&self, agent: &AgentDef) -> Option<NotAllowed> {
        if self.agents.as_ref().is_some_and(|names| !names.contains(agent.name())) {
            return Some(NotAllowed::NotListed);
        }
        let shell_code = agent.runner.adapter.runs_shell_code();
        (shell_code && !self.allow_shell).then_some(NotAllowed::RunsShellCode)
    }

    /// Refuses a step whose acceptance contract runs `commands` (their ids) when shell code
    /// may not run: a gate is shell code as much as a `shell` agent's task (G70).
    pub fn check_gates(&self, what: &str, commands: &[&str]) -> Result<(), Refusal> {
        if commands.is_empty() || self.allow_shell {
            return Ok(());
        }
        Err(Refusal::ShellGate {
            what: what.to_owned(),
            commands: commands.join(", "),
        })
    }

    /// Refuses agent `name` of `catalog` when it may not be started, listing those that may.
    /// A name the catalog does not know is left to the planner, which refuses it in its own
    /// words (and a launch could not start it).
    pub fn check_agent(&self, name: &str, catalog: &[AgentDef]) -> Result<(), Refusal> {
        let Some(why) = catalog
            .iter()
            .find(|agent| agent.name() == name)
            .and_then(|agent| self.not_allowed(agent))
        else {
            return Ok(());
        };
        let allowed: Vec<&str> = catalog
            .iter()
            .filter(|agent| self.not_allowed(agent).is_none())
            .map(AgentDef::name)
            .collect();
        let how = match why {
            NotAllowed::NotListed => {
                "The server's owner names the agents it starts with `sublaunch mcp --agents a,b,…`"
            }
            NotAllowed::RunsShellCode => {
                "The server's owner allows agents that run shell code with `sublaunch mcp --allow-shell` (and, with `--agents`, by listing them)"
            }
        };
        Err(Refusal::Agent {
            name: name.to_owned(),
            why: why.describe().to_owned(),
            allowed: if allowed.is_empty() {
                "none".to_owned()
            } else {
                allowed.join(", ")
            },
            how: how.to_owned(),
        })
    }

    /// `given` (argument `what`) as an absolute path: `~` and `~/…` in `HOME`, a relative one
    /// in `base`.
    fn absolute(&self, what: &str, given: &str, base: &Path) -> Result<PathBuf, Refusal> {
        let home_relative = match given {
            "~" => Some(""),
            _ => given.strip_prefix("~/"),
        };
        match home_relative {
            Some(rest) => match &self.home {
                Some(home) => Ok(home.join(rest)),
                None => Err(Refusal::Unresolvable {
                    what: what.to_owned(),
                    given: given.to_owned(),
                    why: "it starts with ~, and HOME is not set".to_owned(),
                }),
            },
            None => Ok(base.join(given)),
        }
    }

    /// Where `given` (argument `what`, relative to `base`) really leads, refused unless it is
    /// inside the root. The part of the path that does not exist yet (a new output file) is
    /// taken as written below the real location of the part that does.
    pub fn confine(&self, what: &str, given: &str, base: &Path) -> Result<PathBuf, Refusal> {
        let absolute = self.absolute(what, given, base)?;
        let resolved = real_path(&absolute).map_err(|e| Refusal::Unresolvable {
            what: what.to_owned(),
            given: given.to_owned(),
            why: e.to_string(),
        })?;
        if resolved.starts_with(&self.root) {
            Ok(resolved)
        } else {
            Err(Refusal::Outside {
                what: what.to_owned(),
                given: given.to_owned(),
                resolved,
                root: self.root.clone(),
            })
        }
    }
}

/// Where the absolute `path` really leads: every symlink followed (a dangling one too), each
/// `..` taken after the symlinks before it as the kernel takes it; the part below the last
/// component that exists is appended as written (with its `..` taken lexically: nothing
/// below a missing directory can be a symlink).
fn real_path(path: &Path) -> std::io::Result<PathBuf> {
    let mut path = path.to_path_buf();
    for _ in 0..MAX_SYMLINK_HOPS {
        let parts: Vec<Component<'_>> = path.components().collect();
        let mut redirected = None;
        for keep in (1..=parts.len()).rev() {
            let prefix: PathBuf = parts[..keep].iter().collect();
            match std::fs::canonicalize(&prefix) {
                Ok(real) => return Ok(append(real, &parts[keep..])),
                Err(_) if prefix.is_symlink() => {
                    // A dangling symlink: what is created through it lands at its target.
                    let target = std::fs::read_link(&prefix)?;
                    let mut next = prefix.parent().unwrap_or(Path::new("/")).join(target);
                    next.extend(&parts[keep..]);
                    redirected = Some(next);
                    break;
                }
                Err(_) => {}
            }
        }
        match redirected {
            Some(next) => path = next,
            // Not even `/` resolved: nothing to follow.
            None => return Ok(append(PathBuf::from("/"), &parts)),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// `base` with `rest` appended lexically.
fn append(mut base: PathBuf, rest: &[Component<'_>]) -> PathBuf {
    for part in rest {
        match part {
            Component::ParentDir => {
                base.pop();
            }
            Component::Normal(name) => base.push(name),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn policy(root: &Path, home: &Path) -> Policy {
        let env = sublaunch::Environment::from_vars([("HOME", home)]);
        Policy::new(std::fs::canonicalize(root).unwrap(), None, false, 2, 0, &env)
    }

    #[test]
    fn paths_are_confined_after_home_relative_parts_and_symlinks_are_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let home = dir.path().join("home");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        symlink(&home, root.join("to-home")).unwrap();
        symlink(home.join("missing"), root.join("dangling")).unwrap();
        symlink(".", root.join("here")).unwrap();
        let policy = policy(&root, &home);
        let real_root = std::fs::canonicalize(&root).unwrap();
        let inside = |given: &str| policy.confine("output", given, &root.join("sub"));

        assert_eq!(inside("a.md").unwrap(), real_root.join("sub/a.md"));
        assert_eq!(inside("../new/x/../b.md").unwrap(), real_root.join("new/b.md"));
        assert_eq!(inside("../here/c.md").unwrap(), real_root.join("c.md"));
        assert!(inside(root.to_str().unwrap()).is_ok());
        assert_eq!(inside("..").unwrap(), real_root, "the root itself is inside");
        for outside in [
            "/",
            "../..",
            "../../x",
            "../to-home/.bashrc",
            "../dangling",
            "../dangling/deeper/x",
            "~/.bashrc",
            "~",
            "/etc/passwd",
            "../missing/../../x",
        ] {
            let refusal = inside(outside).unwrap_err();
            assert!(matches!(refusal, Refusal::Outside { .. }), "{outside}: {refusal}");
            let message = refusal.to_string();
            assert!(
                message.starts_with(&format!("output: '{outside}' leads to "))
                    && message.contains(&format!("outside this server's root {}", real_root.display())),
                "{message}"
            );
        }
    }

    #[test]
    fn a_symlink_loop_is_refused_not_followed_for_ever() {
        let dir = tempfile::tempdir().unwrap();
        symlink(dir.path().join("b"), dir.path().join("a")).unwrap();
        symlink(dir.path().join("a"), dir.path().join("b")).unwrap();
        let policy = policy(dir.path(), dir.path());
        let refusal = policy.confine("cwd", "a/x", dir.path()).unwrap_err();
        assert!(matches!(refusal, Refusal::Unresolvable { .. }), "{refusal}");
    }

    #[test]
    fn shell_code_agents_need_allow_shell_and_a_list_narrows_the_rest() {
        let catalog = sublaunch::inputs::agents::builtins();
        let env = sublaunch::Environment::default();
        let default = Policy::new("/r".into(), None, false, 2, 0, &env);
        let refusal = default.check_agent("shell", &catalog).unwrap_err().to_string();
        assert!(
            refusal.starts_with("agent 'shell' runs its task as shell code"),
            "{refusal}"
        );
        assert!(
            refusal.contains("--allow-shell") && refusal.contains("claude, "),
            "{refusal}"
        );
        assert!(!refusal.contains("shell,"), "{refusal}");
        assert!(default.check_agent("codex", &catalog).is_ok());

        let listed = Policy::new(
            "/r".into(),
            Some(vec!["claude".into(), "shell".into()]),
            false,
            2,
            0,
            &env,
        );
        let refusal = listed.check_agent("codex", &catalog).unwrap_err().to_string();
        assert!(
            refusal.contains("not among the agents") && refusal.contains("starts here: claude."),
            "{refusal}"
        );
        assert!(listed.check_agent("shell", &catalog).is_err(), "listing is not enough");
        let shell = Policy::new("/r".into(), Some(vec!["shell".into()]), true, 2, 0, &env);
        assert!(shell.check_agent("shell", &catalog).is_ok());
        assert!(shell.check_agent("claude", &catalog).is_err());
    }

    #[test]
    fn the_depth_limit_is_checked_and_a_malformed_depth_is_too_deep() {
        let at = |depth: &str| {
            let env = sublaunch::Environment::from_vars([(sublaunch::environment::RUN_DEPTH_VAR, depth)]);
            Policy::new("/r".into(), None, false, 2, 0, &env).check_depth(&env)
        };
        assert!(at("1").is_ok());
        let refusal = at("2").unwrap_err().to_string();
        assert!(
            refusal.contains("2 deep (SUBLAUNCH_DEPTH=2)") && refusal.contains("up to 2 deep"),
            "{refusal}"
        );
        assert!(at("lots").is_err());
    }
}
