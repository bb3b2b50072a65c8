//! `<run>/launch-plan.json`: the plan a run was launched with, kept so `sublaunch resume` can
//! re-run the same steps (the cfg file holding them is unlinked by the shim). A sublaunch
//! addition; readers of upstream run files ignore it.

use serde::{Deserialize, Serialize};
use std::io;
use sublaunch_contract::LaunchPlan;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::ReadDoc;
use sublaunch_protocol::files::durability::{DocKind, DurabilityPolicy};

/// The file name inside `<run>`.
pub const LAUNCH_PLAN_FILE: &str = "launch-plan.json";

/// The stored plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanRecord {
    /// Always 1.
    pub version: u32,
    /// The run.
    pub run_id: String,
    /// The run's local cwd.
    pub cwd: String,
    /// `single` / `chain` / `parallel`.
    pub mode: String,
    /// The plan.
    pub plan: LaunchPlan,
    /// The run whose agent launched this one, and its step (G61); absent at top level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launched_from: Option<LaunchedFrom>,
}

/// The run a nested run was launched from inside (G61).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LaunchedFrom {
    /// The parent run.
    pub run_id: String,
    /// Its step (or steps) whose ceiling applied, for people:
    /// `run shell-ab12cd34, step 1 (agent shell)`.
    pub source: String,
    /// The run at the top of the tree, when it is not the parent (U8: a run tree's limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_root: Option<String>,
}

impl LaunchedFrom {
    /// The run at the top of the tree this run joins.
    pub fn root(&self) -> &str {
        self.tree_root.as_deref().unwrap_or(&self.run_id)
    }
}

/// Writes the record (atomic, private).
pub(crate) fn write_plan_record(run: &Dir, record: &PlanRecord, policy: DurabilityPolicy) -> io::Result<()> {
    run.write_doc(LAUNCH_PLAN_FILE, record, policy.for_kind(DocKind::Other))
}

/// Reads the record of a run (A11: absent / corrupt / present).
pub fn read_plan_record(run: &Dir) -> io::Result<ReadDoc<PlanRecord>> {
    run.read_doc(LAUNCH_PLAN_FILE)
}
