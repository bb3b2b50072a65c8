//! Machine placement on saved Herdr machines (rules P1–P17, P-I1–P-I5, Q1–Q6).
//!
//! [`Placement::place`] runs for each child whose requested machine is present (P1), in flat
//! order, and applies the rules in the precedence of P15:
//! P2 gate → P3 selector → P4 catalog → P6 selection → P8/P9 user, then project settings
//! (P7–P10) → P11 remote cwd → P13 ssh target → P12 cwd validation → P14 machine reference.
//! The catalog and the settings are read lazily, on the first placed child, and only once
//! per plan (P16).

mod catalog;
mod cluster;
mod gate;
mod machine_settings;
mod remote_cwd;
mod selection;
mod selector;
mod ssh_target;
#[cfg(test)]
mod tests;

use crate::children::Child;
use catalog::{Catalog, Machine};
use cluster::Clusters;
use machine_settings::Settings;
use sublaunch_contract::{Agent, ClusterRef, LooseString, MachineRef, PlanError, PlanRequest};

/// Where a placed child runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Placed {
    /// On a saved Herdr machine, over ssh (P14).
    Machine(MachineRef),
    /// As a batch job of a cluster (J1).
    Cluster(ClusterRef),
}

/// The Herdr session that a machine reference leaves out (P14).
const DEFAULT_SESSION: &str = "default";

/// Placement state for one plan: the request, and the catalog and settings once read (P16).
pub struct Placement<'r> {
    request: &'r PlanRequest,
    /// The parsed catalog, or why it is unusable; filled by the first placed child.
    catalog: Option<Result<Catalog, PlanError>>,
    /// The parsed settings scopes; filled by the first child that reaches them.
    settings: Option<Settings>,
    /// The clusters the settings name; filled by the first placed child (J2).
    clusters: Option<Clusters>,
}

impl<'r> Placement<'r> {
    /// Prepares placement for a request without reading its catalog or settings.
    pub fn new(request: &'r PlanRequest) -> Self {
        Self {
            request,
            catalog: None,
            settings: None,
            clusters: None,
        }
    }

    /// Places one child on the machine it requested (rules P2–P15) and returns its machine
    /// reference (P14), or on the cluster it named (J1–J3). `requested` is the machine value of
    /// L2/L3, `remote_cwd` the child's remote cwd input of L5/L6.
    pub fn place(
        &mut self,
        child: &Child<'r>,
        agent: &'r Agent,
        requested: &'r LooseString,
        remote_cwd: Option<&'r str>,
    ) -> Result<Placed, PlanError> {
        let location = child.position.describe();
        let machine = requested_text(requested, &location)?;
        let request = self.request;
        // J1: a cluster is named before the catalog is read; a cluster needs no catalog.
        let clusters = self
            .clusters
            .get_or_insert_with(|| Clusters::new(request.machine_settings.as_ref()));
        // J12: a cluster's nodes share the file system the worktree is made on.
        let on_cluster = selector::parse(machine, &location)
            .ok()
            .and_then(|selector| clusters.resolve(selector, &location).ok().flatten())
            .is_some();
        gate::check(child, agent, machine, request.platform.as_deref(), on_cluster)?;
        let selector = selector::parse(machine, &location)?;
        if let Some(cluster) = clusters.resolve(selector, &location)? {
            return Ok(Placed::Cluster(cluster));
        }
        let catalog = self
            .catalog
            .get_or_insert_with(|| Catalog::load(request.machine_catalog.as_ref()))
            .as_ref()
            .map_err(PlanError::clone)?;
        let chosen = selection::select(catalog, selector, &location)?;
        let keys = machine_settings::candidate_keys(selector, chosen);
        let settings = self
            .settings
            .get_or_insert_with(|| Settings::new(request.machine_settings.as_ref()));
        let root = settings.root(&keys)?;
        let candidate = remote_cwd::resolve(remote_cwd, root.as_deref(), chosen.display_name())?;
        let target = ssh_target::check(&chosen.target, selector)?;
        let cwd = remote_cwd::validate(&candidate, selector)?;
        Ok(Placed::Machine(machine_ref(chosen, target, cwd)))
    }
}

/// The requested machine as text. The shape check (C4) has already refused other values;
/// this keeps placement total if it is ever called without it.
fn requested_text<'m>(requested: &'m LooseString, location: &str) -> Result<&'m str, PlanError> {
    requested.as_text().ok_or_else(|| {
        PlanError::invalid_request(format!(
            "Invalid request: the machine of {location} must be a string, got {}.",
            requested.to_json()
        ))
    })
}

/// The plan's machine reference (P14): the Herdr session only when it is not `default`, the
/// target trimmed (P13), never any environment (P-I4).
fn machine_ref(machine: &Machine, target: &str, cwd: String) -> MachineRef {
    MachineRef {
        provider: "herdr".to_owned(),
        id: machine.id.clone(),
        label: machine.label.clone(),
        target: target.to_owned(),
        session: machine.session.clone().filter(|session| session != DEFAULT_SESSION),
        cwd,
    }
}

/// J3: a run uses one cluster with one set of options: every child on a cluster is on the
/// same one. A run wholly on it goes there as a whole (its runner is the job); one with
/// children elsewhere stays here and runs its cluster children through `srun` (J11).
pub fn check_one_cluster(children: &[Child<'_>], steps: &[sublaunch_contract::PlanStep]) -> Result<(), PlanError> {
    let Some((first_child, first)) = children
        .iter()
        .zip(steps)
        .find_map(|(child, step)| step.cluster.as_ref().map(|c| (child, c)))
    else {
        return Ok(());
    };
    // J11: steps elsewhere make a run that stays here, its cluster steps run through `srun`.
    for (child, step) in children.iter().zip(steps) {
        let Some(cluster) = &step.cluster else { continue };
        if cluster == first {
            continue;
        }
        let other = if cluster.name == first.name {
            format!("on cluster '{}' with other options", cluster.name)
        } else {
            format!("on cluster '{}'", cluster.name)
        };
        return Err(PlanError::invalid_request(format!(
            "Invalid request: {} runs on cluster '{}' but {} runs {other}; a run uses one cluster with one set of options, so launch the steps as separate runs.",
            first_child.position.describe(),
            first.name,
            child.position.describe(),
        )));
    }
    Ok(())
}
