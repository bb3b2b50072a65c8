//! What trusting a project approves: its root and every program its configuration runs, as
//! the files say now (the completion hook, agents with programs of their own or in place of
//! built-in and user ones, pi extensions). `sublaunch trust` shows and records this.

use crate::environment::Environment;
use crate::inputs::agents::discover;
use crate::inputs::project::store::TrustedProject;
use crate::inputs::project::{ProgramItem, Project};
use crate::inputs::settings::Settings;
use std::path::Path;

/// The project of `dir` read as if trusted, and the entry that trusting it records.
pub fn approval(dir: &Path, env: &Environment) -> anyhow::Result<(Project, TrustedProject)> {
    let project = Project::open_for_approval(dir, env.home().as_deref());
    let catalog = discover(&project, env);
    let settings = Settings::load(&project, env)?;
    let mut programs = catalog.programs;
    programs.extend(settings.on_end().map_err(anyhow::Error::msg)?.program);
    if let Some(dir) = project.entry(".pi/extensions") {
        programs.push(ProgramItem::pi_extensions(&dir));
    }
    let entry = TrustedProject {
        root: project.root().to_owned(),
        approved: programs.iter().map(|item| project.approval(item)).collect(),
    };
    Ok((project, entry))
}
