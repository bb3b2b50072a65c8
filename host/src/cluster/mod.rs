//! Cluster engines a run can be placed on (rules J1–J4). The planner decides the placement
//! (`ClusterRef` in the plan); this module reads what the engine says about a job. Slurm is
//! the one engine; `docs/design/clusters.md` describes how the launch path uses it and how a
//! Kubernetes provider would plug in beside it.

pub mod slurm;
