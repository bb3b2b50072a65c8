//! The files a step names — the ones its agent reads first, the one its answer goes to, its
//! pi extensions and skills ([`super::pi_resources`]) —
//! resolved against the directory it will run in (inside its worktree when it has one) and
//! checked before the run starts: a read that does not exist, or an output file whose
//! directory does not, refuses the launch naming it. A placed step's reads are on its
//! machine and are not checked here; its output file is written here.

use std::path::{Path, PathBuf};
use sublaunch_protocol::records::config::StepConfig;

/// `step 2 ('reviewer')` or `step 2, task 1 ('reviewer')`.
fn label(step: &StepConfig) -> String {
    let at = step.step_index.unwrap_or_default() + 1;
    let agent = step.agent.as_deref().unwrap_or("?");
    match step.task_index {
        Some(task) => format!("step {at}, task {} ('{agent}')", task + 1),
        None => format!("step {at} ('{agent}')"),
    }
}

/// `path` as an absolute path: `~/…` under `home`, a relative one under `base`.
fn absolute(path: &str, base: &str, home: Option<&Path>) -> Result<PathBuf, String> {
    if path == "~" || path.starts_with("~/") {
        let home = home.ok_or_else(|| format!("'{path}' starts with ~, and HOME is not set"))?;
        return Ok(home.join(path.trim_start_matches('~').trim_start_matches('/')));
    }
    Ok(Path::new(base).join(path))
}

/// Resolves and checks the reads, output files, pi extensions and skills of `steps` (their
/// final directories set).
pub(crate) fn resolve(steps: &mut [StepConfig], env: &crate::Environment) -> Result<(), String> {
    let home = env.home();
    let home = home.as_deref();
    for step in steps.iter_mut() {
        let base = step.cwd.clone().unwrap_or_default();
        let who = label(step);
        super::pi_resources::resolve(step, env, &who)?;
        if step.placement.is_none() {
            let mut resolved = Vec::with_capacity(step.reads.len());
            for read in &step.reads {
                let path = absolute(read, &base, home).map_err(|e| format!("cannot launch: {who} reads {e}"))?;
                if !path.exists() {
                    return Err(format!(
                        "cannot launch: {who} reads {read}, and {} does not exist",
                        path.display()
                    ));
                }
                resolved.push(path.to_string_lossy().into_owned());
            }
            step.reads = resolved;
        }
        if let Some(output) = step.output_file.clone() {
            let path =
                absolute(&output, &base, home).map_err(|e| format!("cannot launch: {who} writes its answer to {e}"))?;
            let parent = path.parent().unwrap_or(Path::new("/"));
            if !parent.is_dir() {
                return Err(format!(
                    "cannot launch: {who} writes its answer to {}, and its directory {} does not exist",
                    path.display(),
                    parent.display()
                ));
            }
            if path.is_dir() {
                return Err(format!(
                    "cannot launch: {who} writes its answer to {}, which is a directory",
                    path.display()
                ));
            }
            // The shim writes through real directories only (an agent could swap one for a
            // symlink during the run), so the directory is named as it resolves now, before
            // any agent runs.
            let resolved = match (parent.canonicalize(), path.file_name()) {
                (Ok(dir), Some(name)) => dir.join(name),
                (Err(e), _) => {
                    return Err(format!(
                        "cannot launch: {who} writes its answer to {}, and its directory {} cannot be resolved: {e}",
                        path.display(),
                        parent.display()
                    ));
                }
                (_, None) => {
                    return Err(format!(
                        "cannot launch: {who} writes its answer to {}, which names no file",
                        path.display()
                    ));
                }
            };
            step.output_file = Some(resolved.to_string_lossy().into_owned());
        }
    }
    Ok(())
}
