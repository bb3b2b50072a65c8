//! The files a step names — the ones its agent reads first, the one its answer goes to, its
//! pi extensions and skills ([`super::pi_resources`]) —
//! resolved against the directory it will run in (inside its worktree when it has one) and
//! checked before the run starts: a read that does not exist, or an output file whose
//! directory does not, refuses the launch naming it. A placed step's reads are on its
//! machine and are not checked here; its output file is written here.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use sublaunch_protocol::records::config::StepConfig;

/// A file a step names that is not there; `who` is `step 2 ('reviewer')` or
/// `step 2, task 1 ('reviewer')`.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StepFileError {
    /// A read starts with `~` and `HOME` is not set.
    #[error("{who} reads '{path}' starts with ~, and HOME is not set")]
    ReadUnderNoHome {
        /// The step.
        who: String,
        /// The read as given.
        path: String,
    },
    /// A read does not exist.
    #[error("{who} reads {read}, and {} does not exist", .path.display())]
    NoRead {
        /// The step.
        who: String,
        /// The read as given.
        read: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The output file starts with `~` and `HOME` is not set.
    #[error("{who} writes its answer to '{path}' starts with ~, and HOME is not set")]
    OutputUnderNoHome {
        /// The step.
        who: String,
        /// The output file as given.
        path: String,
    },
    /// The output file's directory does not exist.
    #[error("{who} writes its answer to {}, and its directory {} does not exist", .path.display(), .dir.display())]
    NoOutputDir {
        /// The step.
        who: String,
        /// The output file.
        path: PathBuf,
        /// Its directory.
        dir: PathBuf,
    },
    /// The output file is a directory.
    #[error("{who} writes its answer to {}, which is a directory", .path.display())]
    OutputIsADirectory {
        /// The step.
        who: String,
        /// The output file.
        path: PathBuf,
    },
    /// The output file's directory cannot be resolved.
    #[error("{who} writes its answer to {}, and its directory {} cannot be resolved: {source}", .path.display(), .dir.display())]
    OutputDirUnresolved {
        /// The step.
        who: String,
        /// The output file.
        path: PathBuf,
        /// Its directory.
        dir: PathBuf,
        /// Why.
        source: Arc<std::io::Error>,
    },
    /// The output path names no file.
    #[error("{who} writes its answer to {}, which names no file", .path.display())]
    OutputNamesNoFile {
        /// The step.
        who: String,
        /// The output path.
        path: PathBuf,
    },
    /// A pi resource's path starts with `~` and `HOME` is not set.
    #[error("{who} names the {what} {entry}, which starts with ~, and HOME is not set")]
    ResourceUnderNoHome {
        /// The step.
        who: String,
        /// `pi extension` or `pi skill`.
        what: &'static str,
        /// The entry as given.
        entry: String,
    },
    /// A pi resource's path is not usable (`why`: `does not exist`, `has no SKILL.md`).
    #[error("{who} names the {what} {entry}, and {} {why}", .path.display())]
    ResourceUnusable {
        /// The step.
        who: String,
        /// `pi extension` or `pi skill`.
        what: &'static str,
        /// The entry as given.
        entry: String,
        /// Where it was looked for.
        path: PathBuf,
        /// What is wrong.
        why: &'static str,
    },
    /// A pi resource's name is in none of the directories pi looks in.
    #[error("{who} needs the {what} '{entry}', which is in none of {}", .looked.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(" and "))]
    ResourceNotFound {
        /// The step.
        who: String,
        /// `pi extension` or `pi skill`.
        what: &'static str,
        /// The name as given.
        entry: String,
        /// The directories looked in.
        looked: Vec<PathBuf>,
    },
    /// Skills are named for an agent whose tools cannot read them.
    #[error("{who} names skills, and its tools ({}) have neither read nor bash, without which pi offers no skills", .tools.join(", "))]
    SkillsWithoutTools {
        /// The step.
        who: String,
        /// Its tools.
        tools: Vec<String>,
    },
}

/// `step 2 reviewer` or `step 2.1 reviewer`, as progress, `status` and `logs` name steps.
fn label(step: &StepConfig) -> String {
    let agent = step.agent.as_deref().unwrap_or("?");
    sublaunch_protocol::records::step_record::step_label(step.step_index.unwrap_or_default(), step.task_index, agent)
}

/// `path` as an absolute path: `~/…` under `home`, a relative one under `base`; `None` for
/// a `~` path when there is no home.
fn absolute(path: &str, base: &str, home: Option<&Path>) -> Option<PathBuf> {
    if path == "~" || path.starts_with("~/") {
        return Some(home?.join(path.trim_start_matches('~').trim_start_matches('/')));
    }
    Some(Path::new(base).join(path))
}

/// Resolves and checks the reads, output files, pi extensions and skills of `steps` (their
/// final directories set).
pub(crate) fn resolve(steps: &mut [StepConfig], env: &crate::Environment) -> Result<(), StepFileError> {
    let home = env.home();
    let home = home.as_deref();
    for step in steps.iter_mut() {
        let base = step.cwd.clone().unwrap_or_default();
        let who = label(step);
        super::pi_resources::resolve(step, env, &who)?;
        // G81: a reviewer loads its pi resources as any step does (it reads nothing else).
        if let Some(reviewer) = step.reviewer.as_deref_mut() {
            let who = format!("{who} (its reviewer {})", reviewer.agent.as_deref().unwrap_or("?"));
            super::pi_resources::resolve(reviewer, env, &who)?;
        }
        if step.placement.is_none() {
            let mut resolved = Vec::with_capacity(step.reads.len());
            for read in &step.reads {
                let path = absolute(read, &base, home).ok_or_else(|| StepFileError::ReadUnderNoHome {
                    who: who.clone(),
                    path: read.clone(),
                })?;
                if !path.exists() {
                    return Err(StepFileError::NoRead {
                        who,
                        read: read.clone(),
                        path,
                    });
                }
                resolved.push(path.to_string_lossy().into_owned());
            }
            step.reads = resolved;
        }
        if let Some(output) = step.output_file.clone() {
            let path = absolute(&output, &base, home).ok_or_else(|| StepFileError::OutputUnderNoHome {
                who: who.clone(),
                path: output.clone(),
            })?;
            let parent = path.parent().unwrap_or(Path::new("/"));
            if !parent.is_dir() {
                return Err(StepFileError::NoOutputDir {
                    who,
                    dir: parent.to_owned(),
                    path,
                });
            }
            if path.is_dir() {
                return Err(StepFileError::OutputIsADirectory { who, path });
            }
            // The shim writes through real directories only (an agent could swap one for a
            // symlink during the run), so the directory is named as it resolves now, before
            // any agent runs.
            let resolved = match (parent.canonicalize(), path.file_name()) {
                (Ok(dir), Some(name)) => dir.join(name),
                (Err(e), _) => {
                    return Err(StepFileError::OutputDirUnresolved {
                        who,
                        dir: parent.to_owned(),
                        path: path.clone(),
                        source: Arc::new(e),
                    });
                }
                (_, None) => {
                    return Err(StepFileError::OutputNamesNoFile {
                        who,
                        path: path.clone(),
                    });
                }
            };
            step.output_file = Some(resolved.to_string_lossy().into_owned());
        }
    }
    Ok(())
}
