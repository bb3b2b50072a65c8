//! Cluster engines a run can be placed on (rules J1 to J9). The planner decides the placement
//! (`ClusterRef` in the plan); the runner hands the run to the engine as a job; this module is
//! how the host asks the engine about those jobs ([`engine::Engine`]) and reads what it says
//! ([`slurm`]). Slurm is the one engine; `docs/design/clusters.md` describes how a Kubernetes
//! provider would plug in beside it.

pub mod command;
pub mod engine;
pub mod slurm;
pub mod slurm_engine;
