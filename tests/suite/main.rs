//! The end-to-end suites, one module each, in one test binary: the host library (wasmtime
//! included) is linked once instead of once per suite. `faults_host_unobserved` stays a binary
//! of its own: it makes its process a child subreaper, which would adopt the other suites'
//! orphans.

mod adapters_cli;
mod agents_cli;
mod bad_inputs;
mod capacity_cli;
mod chains_cli;
mod chaos;
mod conventions_cli;
mod crash_truth;
mod docs;
mod embedders;
mod ended_runs_cli;
mod faults_host_bookkeeping;
mod faults_host_finalize;
mod faults_host_os;
mod faults_host_preflight;
mod faults_host_revival;
mod history_cli;
mod hooks_cli;
mod launch_cli;
mod launch_library;
mod launch_stress;
mod layers;
mod limits_cli;
mod mcp_cli;
mod plan_cli;
mod planner_session;
mod progress_cli;
mod prune_cli;
mod real_agents;
mod real_cli_limits;
mod real_cli_runs;
mod registry_cli;
mod remote_cli;
mod remote_sshd;
mod retention_cli;
mod run_id_index_cli;
mod run_planning;
mod step_io_cli;
mod trust_cli;
mod unfinalized_cli;
mod wait_many_cli;
mod worktrees_cli;
