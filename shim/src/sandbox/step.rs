//! The sandbox of one step of the run: where its paths are, from the configuration, and the
//! agent's environment inside it: its own temporary directory, removed at its end (rule G33).
//! A placed step is never sandboxed here (rule G24: the planner refuses it first).

use super::{Prepared, Where};
use crate::adapter::AgentCommand;
use sublaunch_protocol::records::config::{AdapterId, RunnerConfig};

/// The sandbox of step `index` prepared before its spawn (`Ok(None)`: it has none).
pub fn prepare(
    cfg: &RunnerConfig,
    index: usize,
    adapter: AdapterId,
    run: &std::path::Path,
    state_root: &std::path::Path,
) -> Result<Option<Prepared>, String> {
    let Some(step) = cfg.steps.get(index) else {
        return Ok(None);
    };
    let Some(plan) = step.sandbox.as_ref() else {
        return Ok(None);
    };
    if step.placement.is_some() {
        return Err("Cannot sandbox the agent: its step is placed on another machine.".into());
    }
    let cwd = cfg.step_cwd(index);
    let workdir = step.worktree.as_ref().map_or(cwd, |w| w.path.as_str());
    let tmpdir = tmpdir(&cfg.id, index, plan);
    let mut agent_files = agent_files(adapter, index, run)?;
    if let Some(worktree) = &step.worktree {
        agent_files.extend(worktree_git(std::path::Path::new(&worktree.path)));
    }
    // G66: an agent that may launch nested runs keeps their records in a directory of its
    // own run, the only part of the state root it may write.
    let nested_root = match step.adapter.as_ref().map(|spec| spec.resolved_permissions().nested) {
        Some(false) => None,
        _ => Some(nested_root(run).map_err(|e| {
            format!(
                "Cannot sandbox the agent: cannot create {} for its nested runs: {e}",
                run.join(sublaunch_protocol::files::layout::names::NESTED_DIR).display()
            )
        })?),
    };
    agent_files.extend(nested_root.clone());
    super::prepare(&Where {
        plan,
        workdir: std::path::Path::new(workdir),
        tmpdir,
        agent_files,
        state_root,
    })
    .map(|mut prepared| {
        prepared.nested_root = nested_root;
        if matches!(adapter, AdapterId::CodexExec | AdapterId::CodexExecWriter) {
            // G34: what the record says about Codex's own sandbox.
            prepared.applied.notes.push(CODEX_REPLACED.into());
        }
        Some(prepared)
    })
}

/// Makes `<run>/nested`, private.
fn nested_root(run: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = run.join(sublaunch_protocol::files::layout::names::NESTED_DIR);
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(dir),
    }
}

/// The note of a Codex step: its own sandbox gave way to this one.
pub const CODEX_REPLACED: &str = "Codex's own sandbox (bubblewrap) cannot start inside this one: Codex ran with --sandbox danger-full-access, inside this OS sandbox";

/// The step's own temporary directory: `<temp base>/sublaunch-<run id>-<step>`.
fn tmpdir(run_id: &str, index: usize, plan: &sublaunch_protocol::records::sandbox::SandboxPlan) -> std::path::PathBuf {
    std::path::Path::new(&plan.temp_base).join(format!("sublaunch-{run_id}-{index}"))
}

/// Removes step `index`'s temporary directory once its agent has ended (what is left there
/// is the agent's scratch, not its work).
pub fn remove_tmpdir(cfg: &RunnerConfig, index: usize) {
    if let Some(plan) = cfg.steps.get(index).and_then(|s| s.sandbox.as_ref()) {
        let _ = std::fs::remove_dir_all(tmpdir(&cfg.id, index, plan));
    }
}

/// The files the runner reads back from the agent that live among the run's records: each
/// is made now, and only it is writable inside.
fn agent_files(adapter: AdapterId, index: usize, run: &std::path::Path) -> Result<Vec<std::path::PathBuf>, String> {
    let make = |path: std::path::PathBuf, dir: bool| {
        let made = if dir {
            std::fs::create_dir_all(&path)
        } else {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map(drop)
        };
        made.map(|()| path.clone())
            .map_err(|e| format!("Cannot sandbox the agent: cannot create {}: {e}", path.display()))
    };
    match adapter {
        AdapterId::CodexExec | AdapterId::CodexExecWriter => Ok(vec![make(
            run.join(crate::adapter::codex::last_message_name(index)),
            false,
        )?]),
        AdapterId::Pi => Ok(vec![make(run.join(crate::adapter::pi::session_dir_name(index)), true)?]),
        _ => Ok(Vec::new()),
    }
}

/// What a commit in a managed worktree writes outside it (rule G35): the worktree's own git
/// directory (`<repository>/.git/worktrees/<name>`: its index and HEAD) and the shared
/// objects, refs and ref logs. Never the repository's hooks or configuration, which would run
/// code outside the sandbox.
fn worktree_git(worktree: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(link) = std::fs::read_to_string(worktree.join(".git")) else {
        return Vec::new();
    };
    let Some(gitdir) = link.trim().strip_prefix("gitdir:").map(|p| worktree.join(p.trim())) else {
        return Vec::new();
    };
    let common = match std::fs::read_to_string(gitdir.join("commondir")) {
        Ok(relative) => gitdir.join(relative.trim()),
        Err(_) => gitdir.join("../.."),
    };
    let mut paths = vec![gitdir];
    paths.extend(["objects", "refs", "logs"].map(|name| common.join(name)));
    paths
}

/// The agent's environment inside the sandbox: its own temporary directory, and the state
/// root of the runs it launches (G66).
pub fn environment(command: &mut AgentCommand, prepared: &Prepared) {
    let tmp = prepared.tmpdir.to_string_lossy().into_owned();
    for key in ["TMPDIR", "TMP", "TEMP"] {
        command.env.insert(key.into(), tmp.clone());
    }
    if let Some(root) = &prepared.nested_root {
        command.env.insert(
            sublaunch_protocol::files::layout::ROOT_ENV.into(),
            root.to_string_lossy().into_owned(),
        );
    }
}
