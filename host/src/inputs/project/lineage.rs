//! Trust follows the run tree: a run started from inside another run (an agent calling
//! `sublaunch`, or `sublaunch mcp` started by an agent) never trusts more than the run it
//! came from.
//!
//! Every run's shim, and so its agents, gets [`LINEAGE_VAR`]: the projects and approvals the
//! run was launched with. A `sublaunch` reading it trusts a project only where both the
//! user's store and the lineage do. An agent can remove the variable only by being able to
//! run programs freely already; its purpose is that a run cannot *widen* its authority by
//! asking sublaunch, and a malformed value trusts nothing.

use super::store::TrustedProject;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// `SUBLAUNCH_TRUST_LINEAGE`: what the launching run trusted (JSON).
pub const LINEAGE_VAR: &str = "SUBLAUNCH_TRUST_LINEAGE";

/// The most a run launched from inside another run may trust.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Lineage {
    /// The projects the parent run trusted, with their approvals (the parent's own ceiling
    /// already applied).
    pub projects: Vec<TrustedProject>,
}

impl Lineage {
    /// Reads the variable's value; an unreadable value trusts nothing.
    pub fn parse(value: &str) -> Self {
        serde_json::from_str(value).unwrap_or_default()
    }

    /// The value handed to a run's shim.
    pub fn to_var(&self) -> String {
        serde_json::to_string(self).expect("a lineage serializes")
    }

    /// `trusted` cut down to what this lineage allows for `root`: `None` when the parent run
    /// did not trust the project; else the approvals both hold.
    pub fn narrow(&self, root: &Path, trusted: &TrustedProject) -> Option<TrustedProject> {
        let parent = self.projects.iter().find(|p| p.root == root)?;
        Some(TrustedProject {
            root: trusted.root.clone(),
            approved: trusted
                .approved
                .iter()
                .filter(|a| parent.approved.contains(a))
                .cloned()
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::store::{Approval, ProgramKind};
    use super::*;
    use std::path::PathBuf;

    fn approval(sha: &str) -> Approval {
        Approval {
            file: PathBuf::from(".sublaunch/settings.json"),
            kind: ProgramKind::CompletionHook,
            sha256: sha.into(),
            shows: "hook".into(),
        }
    }

    #[test]
    fn a_child_keeps_only_what_both_the_store_and_the_parent_trust() {
        let mine = TrustedProject {
            root: PathBuf::from("/repo"),
            approved: vec![approval("a"), approval("b")],
        };
        let lineage = Lineage {
            projects: vec![TrustedProject {
                root: PathBuf::from("/repo"),
                approved: vec![approval("b"), approval("c")],
            }],
        };
        let narrowed = lineage.narrow(Path::new("/repo"), &mine).unwrap();
        assert_eq!(narrowed.approved, vec![approval("b")]);
        assert_eq!(lineage.narrow(Path::new("/other"), &mine), None);
        assert_eq!(Lineage::parse(&lineage.to_var()), lineage);
        assert_eq!(
            Lineage::parse("{not json"),
            Lineage::default(),
            "garbage trusts nothing"
        );
    }
}
