//! The runs this process runs inside, and the ceilings they set (rules G60, G61, G66).
//!
//! An agent can rewrite its environment, so the parent runs are found from what it cannot
//! forge: its ancestor processes. A run's runner is started as `sublaunch-shim
//! <root>/async-cfg-<runId>.json`; an ancestor with that command line is taken for the run
//! only when the run's own status names that very process (its pid as `/proc` names it and
//! its start time). The launching step's permissions, sandbox and thinking ceiling are then
//! read from the run's plan record, written by the host that launched it. A sandboxed agent
//! cannot write either record (its state root is not writable inside the sandbox).

use crate::launch::plan_record::{LaunchedFrom, read_plan_record};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use sublaunch_contract::{Ceiling, PlanStep, SandboxSetting};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::ReadDoc;
use sublaunch_protocol::files::layout::validate_run_id;
use sublaunch_protocol::procinfo::ProcStat;
use sublaunch_protocol::records::status::read_status;

/// How many ancestors are looked at, at most (a deeper chain is not a process tree anyone
/// builds on purpose).
const MAX_ANCESTORS: usize = 256;

/// One run this process descends from, verified in its records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParentRun {
    /// The run's state root.
    pub root: PathBuf,
    /// The run.
    pub run_id: String,
    /// What the steps this process may descend from allow (the one whose agent is an
    /// ancestor, else every running one), with their depth filled in.
    pub ceilings: Vec<Ceiling>,
}

/// The runs a process runs inside, nearest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lineage {
    /// Nearest first: `parents[0]` launched the agent that runs this process.
    pub parents: Vec<ParentRun>,
}

impl Lineage {
    /// The runs this process runs inside, read from `/proc` and the runs' records. Nothing
    /// found (no `/proc`, no runner among the ancestors) is an empty lineage.
    pub fn of_this_process() -> Self {
        Self::of(&ancestors())
    }

    /// The lineage of a chain of ancestors (nearest first).
    fn of(ancestors: &[Ancestor]) -> Self {
        let pids: Vec<u32> = ancestors.iter().map(|a| a.pid).collect();
        let mut parents = Vec::new();
        for ancestor in ancestors {
            let Some((root, run_id)) = runner_of(&ancestor.argv) else {
                continue;
            };
            if let Some(ceilings) = verified_ceilings(&root, &run_id, ancestor, &pids) {
                parents.push(ParentRun { root, run_id, ceilings });
            }
        }
        for (depth, parent) in (1..).zip(&mut parents) {
            for ceiling in &mut parent.ceilings {
                ceiling.depth = depth;
            }
        }
        Self { parents }
    }

    /// Every ceiling, for the plan request (`None` at top level).
    pub fn ceilings(&self) -> Option<Vec<Ceiling>> {
        let all: Vec<Ceiling> = self.parents.iter().flat_map(|p| p.ceilings.iter().cloned()).collect();
        (!all.is_empty()).then_some(all)
    }

    /// How many runs deep this process runs.
    pub fn depth(&self) -> u32 {
        u32::try_from(self.parents.len()).unwrap_or(u32::MAX)
    }

    /// The nearest parent, as a run id and its steps, for the new run's records.
    pub fn launched_from(&self) -> Option<LaunchedFrom> {
        let parent = self.parents.first()?;
        let steps: Vec<&str> = parent.ceilings.iter().map(|c| c.source.as_str()).collect();
        let root = self.parents.last().filter(|root| root.run_id != parent.run_id);
        Some(LaunchedFrom {
            tree_root: root.map(|root| root.run_id.clone()),
            run_id: parent.run_id.clone(),
            source: if steps.is_empty() {
                format!("run {}", parent.run_id)
            } else {
                steps.join("; ")
            },
        })
    }
}

/// One ancestor process as `/proc` shows it.
#[derive(Clone, Debug)]
struct Ancestor {
    pid: u32,
    start_time: u64,
    argv: Vec<OsString>,
}

/// This process's ancestors, nearest first. `/proc/self` (not `getppid`) so that inside a
/// contained agent's PID namespace the numbers are `/proc`'s, the host's.
fn ancestors() -> Vec<Ancestor> {
    let mut chain = Vec::new();
    let Some(mut pid) = ProcStat::read_self().map(|s| s.ppid) else {
        return chain;
    };
    while pid > 0 && chain.len() < MAX_ANCESTORS {
        let Ok(Some(stat)) = ProcStat::read(pid) else {
            break;
        };
        let argv = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|bytes| {
                bytes
                    .split(|&b| b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| std::ffi::OsStr::from_bytes(a).to_owned())
                    .collect()
            })
            .unwrap_or_default();
        chain.push(Ancestor {
            pid,
            start_time: stat.start_time,
            argv,
        });
        if pid == 1 {
            break;
        }
        pid = stat.ppid;
    }
    chain
}

/// The state root and run of a runner's command line: `<shim> <root>/async-cfg-<id>.json`.
fn runner_of(argv: &[OsString]) -> Option<(PathBuf, String)> {
    let [_, cfg] = argv else {
        return None;
    };
    let cfg = Path::new(cfg);
    let name = cfg.file_name()?.to_str()?;
    let run_id = name.strip_prefix("async-cfg-")?.strip_suffix(".json")?;
    validate_run_id(run_id).ok()?;
    let root = cfg.parent().filter(|p| p.is_absolute())?;
    Some((root.to_owned(), run_id.to_owned()))
}

/// The ceilings of run `run_id` under `root`, when its status names `runner` as its live
/// runner; `None` when it does not (a forged command line, a stale one).
fn verified_ceilings(root: &Path, run_id: &str, runner: &Ancestor, ancestors: &[u32]) -> Option<Vec<Ceiling>> {
    let run = Dir::open(&root.join("runs").join(run_id)).ok()?;
    let ReadDoc::Present(status) = read_status(&run).ok()? else {
        return None;
    };
    let identity = format!("linux:{}", runner.start_time);
    if status.pid != Some(runner.pid) || status.pid_start_identity.as_deref() != Some(identity.as_str()) {
        return None;
    }
    let steps = status.steps.unwrap_or_default();
    // The step whose agent is an ancestor; else every running one; else every one (a
    // ceiling too many narrows, one too few would widen).
    let mut chosen: Vec<usize> = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.external_process.as_ref().is_some_and(|p| ancestors.contains(&p.pid)))
        .map(|(i, _)| i)
        .collect();
    if chosen.is_empty() {
        chosen = steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.status.as_deref() == Some("running"))
            .map(|(i, _)| i)
            .collect();
    }
    let plan = match read_plan_record(&run) {
        Ok(ReadDoc::Present(record)) => record.plan,
        // A run without its plan record allows nothing nested: its limits cannot be known.
        _ => {
            return Some(vec![Ceiling {
                source: format!("run {run_id} (its plan record cannot be read)"),
                permissions: Some(sublaunch_contract::ResolvedPermissions {
                    nested: false,
                    ..sublaunch_contract::ResolvedPermissions::adapter_default(sublaunch_contract::AdapterId::Shell)
                }),
                ..Ceiling::default()
            }]);
        }
    };
    if chosen.is_empty() {
        chosen = (0..plan.steps.len()).collect();
    }
    Some(
        chosen
            .into_iter()
            .filter_map(|i| plan.steps.get(i).map(|step| ceiling_of(run_id, i, step)))
            .collect(),
    )
}

/// What step `index` of run `run_id` allows the runs its agent launches.
fn ceiling_of(run_id: &str, index: usize, step: &PlanStep) -> Ceiling {
    Ceiling {
        source: format!("run {run_id}, step {} (agent {})", index + 1, step.agent),
        depth: 1,
        permissions: step.permissions.clone(),
        sandbox: step.sandbox.as_ref().map(|s| SandboxSetting {
            profile: Some(s.profile.as_str().to_owned()),
            ports: s.ports.clone(),
            best_effort: Some(s.best_effort),
            origin: None,
        }),
        max_thinking: step.thinking_ceiling.map(|level| level.name().to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runner_is_named_by_its_configuration_path() {
        let argv = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            runner_of(&argv(&["/bin/sublaunch-shim", "/s/async-cfg-shell-ab12cd34.json"])),
            Some((PathBuf::from("/s"), "shell-ab12cd34".to_owned()))
        );
        for forged in [
            argv(&["shim"]),
            argv(&["shim", "async-cfg-x.json"]),
            argv(&["shim", "/s/async-cfg-../x.json"]),
            argv(&["shim", "/s/cfg-x.json"]),
            argv(&["shim", "/s/async-cfg-x.json", "more"]),
        ] {
            assert_eq!(runner_of(&forged), None, "{forged:?}");
        }
    }

    #[test]
    fn a_forged_runner_without_matching_records_is_no_parent() {
        // G61: a process that only looks like a runner gives no ceiling, and so no authority
        // either; the depth counts verified runs only.
        let root = tempfile::tempdir().unwrap();
        let forged = Ancestor {
            pid: std::process::id(),
            start_time: 1,
            argv: vec![
                "shim".into(),
                root.path().join("async-cfg-shell-ab12cd34.json").into_os_string(),
            ],
        };
        assert_eq!(Lineage::of(&[forged]).depth(), 0);
    }
}
