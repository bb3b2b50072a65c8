//! The pi extensions and skills a child loads: `extensions` and `skills` replace what pi
//! would discover (an empty list: none), `requiredExtensions` are loaded in every case and
//! must exist. Each entry is a name (looked up by the host where pi discovers extensions and
//! skills) or a path (relative to the child's directory). Only pi has them: any other agent
//! is refused, Claude Code's skills included, because its command line cannot select skills.

use crate::children::{Child, Inherited};
use crate::paths;
use crate::runner::adapter;
use crate::step_io::{check_text, invalid};
use sublaunch_contract::{AdapterId, Agent, ErrorCode, MachineRef, PlanError};

/// The most entries in one list.
const ENTRIES_LIMIT: usize = 100;

/// A child's pi extensions and skills.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PiResources {
    /// Extensions instead of the discovered ones.
    pub extensions: Option<Vec<String>>,
    /// Extensions that must load.
    pub required_extensions: Vec<String>,
    /// Skills instead of the discovered ones.
    pub skills: Option<Vec<String>>,
}

/// The child's extensions and skills: its own (or its group's), else its agent's.
pub fn plan(child: &Child<'_>, agent: &Agent, machine: Option<&MachineRef>) -> Result<PiResources, PlanError> {
    let pick = |field: &str, own: &Option<Inherited<&[String]>>, agent_value: Option<&[String]>| match own {
        Some(given) => Some((given.value.to_vec(), child.inherited_path(field, given))),
        None => agent_value.map(|v| (v.to_vec(), format!("agents[{}].{field}", agent.name))),
    };
    let extensions = pick("extensions", &child.fields.extensions, agent.extensions.as_deref());
    let required = pick(
        "requiredExtensions",
        &child.fields.required_extensions,
        agent.required_extensions.as_deref(),
    );
    let skills = pick("skills", &child.fields.skills, agent.skills.as_deref());
    if adapter(agent) != Some(AdapterId::Pi) {
        let given = [
            (&extensions, "extensions"),
            (&required, "requiredExtensions"),
            (&skills, "skills"),
        ];
        if let Some((_, field)) = given
            .iter()
            .find(|(list, _)| list.as_ref().is_some_and(|(l, _)| !l.is_empty()))
        {
            let why = match (adapter(agent), *field) {
                (Some(AdapterId::ClaudeCode | AdapterId::ClaudeCodeWriter), "skills") => {
                    "cannot be given skills: Claude Code loads every skill of its skill directories and its command line cannot select some"
                }
                (_, "skills") => "cannot be given skills: they are pi's",
                _ => "cannot load pi extensions: they are pi's",
            };
            return Err(PlanError::new(
                ErrorCode::RunnerOptionUnsupported,
                format!(
                    "Agent '{}' ({}) {why}; drop {field}.",
                    agent.name,
                    child.position.describe()
                ),
            ));
        }
    }
    Ok(PiResources {
        extensions: extensions.map(|(l, p)| entries(&p, &l, machine)).transpose()?,
        required_extensions: required
            .map(|(l, p)| entries(&p, &l, machine))
            .transpose()?
            .unwrap_or_default(),
        skills: skills.map(|(l, p)| entries(&p, &l, machine)).transpose()?,
    })
}

/// Checks and normalises one list: names stay, relative paths are normalised (a placed
/// child's are joined to its remote directory), `~/…` and absolute paths stay; repeats are
/// dropped.
fn entries(path: &str, list: &[String], machine: Option<&MachineRef>) -> Result<Vec<String>, PlanError> {
    if list.len() > ENTRIES_LIMIT {
        return Err(invalid(
            path,
            format!("{} entries; at most {ENTRIES_LIMIT}.", list.len()),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for (index, entry) in list.iter().enumerate() {
        check_text(&format!("{path}[{index}]"), "the name or path", entry)?;
        let planned = if !entry.contains('/') || entry.starts_with('/') || entry.starts_with("~/") {
            entry.clone()
        } else if let Some(machine) = machine {
            paths::join(&machine.cwd, entry)
        } else {
            // `./ext.ts` stays a path: without its slash it would read as a name.
            let normalized = paths::normalize(entry);
            if normalized.contains('/') {
                normalized
            } else {
                format!("./{normalized}")
            }
        };
        if !out.contains(&planned) {
            out.push(planned);
        }
    }
    Ok(out)
}
