//! The OS sandbox a step actually ran in (rule G28), as its status entry and result record
//! it: which profile, the kernel's Landlock ABI, what was enforced and what was not.

use serde::{Deserialize, Serialize};

pub use sublaunch_contract::{SandboxPlan, SandboxProfile};

/// `sandbox` of a step: what the runner applied before the agent started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AppliedSandbox {
    /// The profile the plan asked for (`read-only`, `workspace`, `offline`).
    pub profile: String,
    /// The Landlock ABI the kernel offered (0: none).
    pub landlock_abi: u32,
    /// What the kernel enforces for this agent: `files`, `tcp-connect`, `tcp-bind`,
    /// `signals`, `abstract-unix-sockets`, `no-new-privs`.
    pub enforced: Vec<String>,
    /// The TCP ports the agent may connect to, when it is limited to some (`[]`: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<u16>>,
    /// Whether the user accepted part of the sandbox (`bestEffort`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub best_effort: bool,
    /// The directories and files it could write.
    pub writable: Vec<String>,
    /// Paths it could not read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<String>,
    /// What the sandbox does not cover, and what best effort left out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl AppliedSandbox {
    /// One line for people: `workspace (Landlock ABI 7: files, tcp-connect, …)`.
    pub fn summary(&self) -> String {
        let ports = match &self.ports {
            Some(ports) if ports.is_empty() => "; no TCP".to_owned(),
            Some(ports) => format!(
                "; TCP ports {}",
                ports.iter().map(u16::to_string).collect::<Vec<_>>().join(",")
            ),
            None => String::new(),
        };
        let enforced = if self.enforced.is_empty() {
            "nothing enforced".to_owned()
        } else {
            self.enforced.join(", ")
        };
        format!(
            "{} (Landlock ABI {}: {enforced}{ports})",
            self.profile, self.landlock_abi
        )
    }
}
