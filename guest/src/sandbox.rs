//! The OS sandbox of each child (rules G20, G22, G23, G24): the tightest setting of every source (the
//! user's settings, the run, the agent, the group, the step or task), and the paths the runner
//! needs: the agent CLI's own state (one table, [`state_paths`]), the secrets it may not read
//! ([`HIDDEN`]) and where its temporary directory is made. The planner reads no environment:
//! the host passes `$HOME` and the few variables the paths depend on.

use crate::children::Child;
use sublaunch_contract::{
    AdapterId, Agent, PlanError, PlanRequest, SandboxHost, SandboxPlan, SandboxProfile, SandboxSetting,
};

/// The secrets under `$HOME` no sandboxed agent may read, even where it reads everything else
/// (rule G23).
pub const HIDDEN: &[&str] = &[".ssh", ".gnupg", ".aws"];

/// The child's sandbox, or `None` when no source asks for one (or every one says `none`).
pub fn plan(
    request: &PlanRequest,
    child: &Child<'_>,
    agent: &Agent,
    parents: &[crate::ceilings::Parent<'_>],
    placed: bool,
) -> Result<Option<SandboxPlan>, PlanError> {
    let adapter = crate::runner::adapter(agent);
    let group_path = child
        .path
        .split_once(".parallel[")
        .map(|(step, _)| format!("{step}.sandbox"));
    // G25: the user's settings and the project's are separate sources, so a project tightens.
    let settings = request
        .settings_sandbox
        .iter()
        .flatten()
        .map(|s| (Some(s), "settings sandbox".to_owned()));
    // G63: a parent run's sandbox is a source like any other, so nothing loosens it.
    let inherited = parents.iter().map(|p| (p.sandbox.as_ref(), p.source().to_owned()));
    let sources = settings.chain(inherited).chain([
        (
            request.launch.as_ref().and_then(|l| l.sandbox.as_ref()),
            "the run's sandbox".to_owned(),
        ),
        (agent.sandbox.as_ref(), format!("agents[{}].sandbox", agent.name)),
        (child.fields.group_sandbox, group_path.unwrap_or_default()),
        (child.fields.sandbox, child.field_path("sandbox")),
    ]);
    let mut tightest = Tightest::default();
    for (setting, path) in sources {
        if let Some(setting) = setting {
            tightest.add(setting, setting.origin.clone().unwrap_or(path))?;
        }
    }
    if tightest.sources.is_empty() || (tightest.write == SandboxProfile::None && tightest.ports.is_none()) {
        return Ok(None);
    }
    if placed {
        return Err(PlanError::invalid_request(format!(
            "Invalid request at {}: the OS sandbox ({}) cannot be applied to a step placed on another machine; run it here or drop the sandbox.",
            child.path,
            tightest.sources.join("; ")
        )));
    }
    let host = request.sandbox_host.clone().unwrap_or_default();
    let mut profile = match (tightest.write, &tightest.ports) {
        (SandboxProfile::ReadOnly, _) => SandboxProfile::ReadOnly,
        (SandboxProfile::Offline, _) => SandboxProfile::Offline,
        _ => SandboxProfile::Workspace,
    };
    // G34: the OS sandbox replaces Codex's own, so a read-only Codex stays read-only in it.
    if adapter == Some(AdapterId::CodexExec) && profile != SandboxProfile::ReadOnly {
        profile = SandboxProfile::ReadOnly;
        tightest.sources.push(format!(
            "agents[{}] runs codex-exec, which is read-only: read-only",
            agent.name
        ));
    }
    Ok(Some(SandboxPlan {
        profile,
        ports: tightest.ports,
        best_effort: tightest.best_effort == Some(true),
        write_workdir: profile.writes_workdir(),
        state_paths: host
            .home
            .as_deref()
            .map_or_else(Vec::new, |home| state_paths(adapter, home, &host)),
        hidden: host
            .home
            .as_deref()
            .map_or_else(Vec::new, |home| HIDDEN.iter().map(|name| join(home, name)).collect()),
        temp_base: host
            .tmpdir
            .clone()
            .filter(|t| t.starts_with('/'))
            .unwrap_or_else(|| "/tmp".into()),
        sources: tightest.sources,
    }))
}

/// The tightest of the settings seen so far.
#[derive(Debug, Default)]
struct Tightest {
    /// The tightest write profile (`offline` counts as `workspace` plus no network).
    write: SandboxProfile,
    /// The ports every source allows (`Some([])`: none).
    ports: Option<Vec<u16>>,
    /// `Some(false)` as soon as any source says no.
    best_effort: Option<bool>,
    /// Each source and what it asked for.
    sources: Vec<String>,
}

impl Tightest {
    fn add(&mut self, setting: &SandboxSetting, origin: String) -> Result<(), PlanError> {
        let mut asked = Vec::new();
        if let Some(name) = setting.profile.as_deref() {
            let profile = SandboxProfile::parse(name.trim()).ok_or_else(|| {
                PlanError::invalid_request(format!(
                    "Invalid request at {origin}: unknown sandbox profile '{name}'; use none, read-only, workspace or offline."
                ))
            })?;
            self.write = self.write.max(profile);
            if profile == SandboxProfile::Offline {
                self.ports = Some(Vec::new());
            }
            asked.push(profile.as_str().to_owned());
        }
        if let Some(ports) = &setting.ports {
            if ports.contains(&0) {
                return Err(PlanError::invalid_request(format!(
                    "Invalid request at {origin}.ports: port 0 is not a port an agent can connect to."
                )));
            }
            self.ports = Some(match self.ports.take() {
                Some(known) => known.into_iter().filter(|p| ports.contains(p)).collect(),
                None => {
                    let mut own = ports.clone();
                    own.sort_unstable();
                    own.dedup();
                    own
                }
            });
            asked.push(format!("ports {}", join_ports(ports)));
        }
        if let Some(best) = setting.best_effort {
            self.best_effort = Some(self.best_effort.unwrap_or(true) && best);
            asked.push(if best { "best effort" } else { "no best effort" }.to_owned());
        }
        if !asked.is_empty() {
            self.sources.push(format!("{origin}: {}", asked.join(", ")));
        }
        Ok(())
    }
}

fn join_ports(ports: &[u16]) -> String {
    ports.iter().map(u16::to_string).collect::<Vec<_>>().join(",")
}

fn join(dir: &str, name: &str) -> String {
    format!("{}/{name}", dir.trim_end_matches('/'))
}

/// The one table of what each agent CLI writes outside the step's directory to run at all
/// (rule G22), found by running each real CLI under the sandbox. Node CLIs also keep caches.
pub fn state_paths(adapter: Option<AdapterId>, home: &str, host: &SandboxHost) -> Vec<String> {
    let cache = host.cache_home.clone().unwrap_or_else(|| join(home, ".cache"));
    let config = host.config_home.clone().unwrap_or_else(|| join(home, ".config"));
    let node = || vec![join(home, ".npm"), cache.clone()];
    let mut paths = match adapter {
        Some(AdapterId::ClaudeCode | AdapterId::ClaudeCodeWriter) => {
            let mut paths = vec![
                join(home, ".claude"),
                join(home, ".claude.json"),
                join(&config, "claude"),
            ];
            paths.extend(host.claude_config_dir.clone());
            paths.extend(node());
            paths
        }
        Some(AdapterId::CodexExec | AdapterId::CodexExecWriter) => {
            let mut paths = vec![host.codex_home.clone().unwrap_or_else(|| join(home, ".codex"))];
            paths.extend(node());
            paths
        }
        Some(AdapterId::CursorAgent | AdapterId::CursorAgentWriter) => {
            let mut paths = vec![join(home, ".cursor"), join(&config, "cursor")];
            paths.extend(node());
            paths
        }
        Some(AdapterId::Pi) | None => {
            let mut paths = vec![join(home, ".pi")];
            paths.extend(host.pi_agent_dir.clone());
            paths.extend(node());
            paths
        }
        Some(AdapterId::Command | AdapterId::Shell | AdapterId::GenericCli | AdapterId::ExternalJob) => Vec::new(),
    };
    paths.dedup();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(profile: Option<&str>, ports: Option<&[u16]>, best_effort: Option<bool>) -> SandboxSetting {
        SandboxSetting {
            profile: profile.map(str::to_owned),
            ports: ports.map(<[u16]>::to_vec),
            best_effort,
            origin: None,
        }
    }

    fn tightest(settings: &[SandboxSetting]) -> Result<Tightest, PlanError> {
        let mut tightest = Tightest::default();
        for (i, s) in settings.iter().enumerate() {
            tightest.add(s, format!("source {i}"))?;
        }
        Ok(tightest)
    }

    #[test]
    fn no_source_loosens_another() {
        let t = tightest(&[
            setting(Some("read-only"), None, None),
            setting(Some("workspace"), None, None),
            setting(Some("none"), None, None),
        ])
        .unwrap();
        assert_eq!(t.write, SandboxProfile::ReadOnly);
        let t = tightest(&[
            setting(Some("workspace"), None, None),
            setting(Some("offline"), None, None),
        ])
        .unwrap();
        assert_eq!((t.write, t.ports), (SandboxProfile::Offline, Some(Vec::new())));
    }

    #[test]
    fn port_lists_intersect_and_offline_allows_none() {
        let t = tightest(&[
            setting(None, Some(&[443, 22, 443]), None),
            setting(None, Some(&[443, 8080]), None),
        ])
        .unwrap();
        assert_eq!(t.ports, Some(vec![443]));
        let t = tightest(&[setting(None, Some(&[443]), None), setting(Some("offline"), None, None)]).unwrap();
        assert_eq!(t.ports, Some(Vec::new()));
    }

    #[test]
    fn best_effort_needs_every_source_that_speaks_to_agree() {
        let t = tightest(&[setting(None, None, Some(true)), setting(None, None, Some(false))]).unwrap();
        assert_eq!(t.best_effort, Some(false));
        let t = tightest(&[setting(Some("workspace"), None, None), setting(None, None, Some(true))]).unwrap();
        assert_eq!(t.best_effort, Some(true));
    }

    #[test]
    fn an_unknown_profile_or_port_zero_is_refused_naming_the_source() {
        let error = tightest(&[setting(Some("strict"), None, None)]).unwrap_err();
        assert!(
            error.message.contains("source 0") && error.message.contains("'strict'"),
            "{}",
            error.message
        );
        let error = tightest(&[setting(None, Some(&[0]), None)]).unwrap_err();
        assert!(error.message.contains("source 0.ports"), "{}", error.message);
    }

    #[test]
    fn every_adapter_has_its_state_paths_and_they_follow_the_hosts_variables() {
        let host = SandboxHost {
            codex_home: Some("/c".into()),
            claude_config_dir: Some("/cc".into()),
            ..SandboxHost::default()
        };
        let codex = state_paths(Some(AdapterId::CodexExecWriter), "/h", &host);
        assert_eq!(codex[0], "/c");
        let claude = state_paths(Some(AdapterId::ClaudeCode), "/h", &host);
        assert!(claude.contains(&"/h/.claude.json".to_owned()) && claude.contains(&"/cc".to_owned()));
        assert!(state_paths(Some(AdapterId::Shell), "/h", &host).is_empty());
        assert_eq!(state_paths(None, "/h", &host)[0], "/h/.pi");
    }
}
