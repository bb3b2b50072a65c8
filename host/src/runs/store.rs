//! Reconciliation for listers and waiters (S13, I5, I9, A12): runs this process did not spawn
//! are judged by the pid and start identity in their status (X3). A pending proof whose shim
//! is dead becomes `unknown/observer-unavailable` (or, with a status still active, the
//! stale-run repair `failed` + `stale-repair`); a run whose launching host died before a shim
//! was spawned (status `queued`, no pid) becomes `failed`; phantom markers are released; orphan
//! temp files and staging directories are swept.
//!
//! A full pass visits the runs that can still need it — those with an active marker (I5) or
//! an unfinalized-run entry (I9) — never the ended, finalized ones, so its cost does not grow
//! with the runs a root keeps.

use crate::launch::completion_hook::{self, HookRunner};
use crate::launch::run_dir::{self, hidden_dir_pid};
use crate::launch::{HostEvent, LaunchHooks, NoHooks};
use rustix::fs::FileType;
use serde_json::Value;
use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::ReadDoc;
use sublaunch_protocol::files::durability::{DocKind, DurabilityPolicy};
use sublaunch_protocol::files::layout::{Layout, names, validate_run_id};
use sublaunch_protocol::files::trust::{RootError, TrustedRoot};
use sublaunch_protocol::os::Os;
use sublaunch_protocol::os::processes::{Processes, RealProcesses};
use sublaunch_protocol::procinfo::{self, Liveness};
use sublaunch_protocol::records::capacity::{CapacityQueue, queue_position};
use sublaunch_protocol::records::failure::FailureKind;
use sublaunch_protocol::records::hook::FiredBy;
use sublaunch_protocol::records::index::{ActiveRunIndex, MarkerVerdict, judge_marker};
use sublaunch_protocol::records::proof::{OrphanRequest, ProcessTerminal, repair_orphan};
use sublaunch_protocol::records::run_id_index::{Lookup, RunIdIndex};
use sublaunch_protocol::records::status::{Change, RunState, Status, modify_status, read_status};
use sublaunch_protocol::records::unfinalized::{self, UnfinalizedRuns};
use sublaunch_protocol::sweep::{stamp_due, sweep_root_if_due};

mod cluster;

/// The runs under one root, seen by a process that did not spawn them.
pub struct RunStore {
    root: TrustedRoot,
    index: ActiveRunIndex,
    policy: DurabilityPolicy,
    oracle: Arc<dyn Processes>,
    own_namespace: Option<String>,
    hooks: Arc<dyn LaunchHooks>,
    hook_runner: HookRunner,
    /// J7: the engine asked about runs handed to a cluster.
    engine: Arc<dyn crate::cluster::engine::Engine>,
    job_looks: std::sync::Mutex<cluster::JobLooks>,
}

impl RunStore {
    /// Opens (creating 0700, verifying per H3) the root of `layout`, with the durability and
    /// retry settings of `env`.
    pub fn open(layout: &Layout, env: &crate::Environment) -> Result<Self, RootError> {
        let policy = env.durability();
        let os = Os::with_retry_setting(env.var(sublaunch_protocol::os::retry::MAX_TOTAL_ENV))
            .map_err(|e| RootError::Io(io::Error::other(e.to_string())))?
            .shared();
        let root = TrustedRoot::open(layout, os)?;
        let index = ActiveRunIndex::new(root.runs(), policy)?;
        Ok(Self {
            root,
            index,
            policy,
            oracle: Arc::new(RealProcesses),
            own_namespace: procinfo::pid_namespace_scope(),
            hooks: Arc::new(NoHooks),
            hook_runner: HookRunner::new(layout.root(), None, env.clone(), Vec::new()),
            engine: Arc::new(crate::cluster::slurm_engine::Slurm::new(
                env.var("PATH").map(std::ffi::OsStr::to_owned),
            )),
            job_looks: std::sync::Mutex::default(),
        })
    }

    /// Replaces the liveness oracle (tests).
    #[must_use]
    pub fn with_oracle(mut self, oracle: Arc<dyn Processes>) -> Self {
        self.oracle = oracle;
        self
    }

    /// Delivers `subagent:process-terminal` for repaired runs to `hooks`.
    #[must_use]
    pub fn with_hooks(mut self, hooks: Arc<dyn LaunchHooks>) -> Self {
        self.hooks = hooks;
        self
    }

    /// The verified root.
    pub fn root(&self) -> &TrustedRoot {
        &self.root
    }

    /// The active-run index of the root.
    pub(crate) fn index(&self) -> &ActiveRunIndex {
        &self.index
    }

    /// The durability settings writers of this root use.
    pub(crate) fn policy(&self) -> DurabilityPolicy {
        self.policy
    }

    /// Opens `<runs>/<runId>`; `Ok(None)` when there is no such run. An invalid id is an error.
    pub fn run_dir(&self, run_id: &str) -> io::Result<Option<Dir>> {
        validate_run_id(run_id).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        self.root.runs().open_child(run_id)
    }

    /// Every run directory's id, sorted (hidden names and the index directories excluded).
    pub fn run_ids(&self) -> io::Result<Vec<String>> {
        let mut ids: Vec<String> = self
            .root
            .runs()
            .entries()?
            .into_iter()
            .filter(|e| e.file_type == FileType::Directory)
            .filter_map(|e| e.name.into_string().ok())
            .filter(|name| validate_run_id(name).is_ok())
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// The ids of the runs whose id starts with `prefix`, sorted, from the run-id index (I14):
    /// the buckets that can hold them, not every run name. A root whose index was never built
    /// is listed once and the index built; when the index knows no such run, the run
    /// directories are listed after all, so a run an older version made since is still found.
    pub fn runs_starting_with(&self, prefix: &str) -> io::Result<Vec<String>> {
        let index = RunIdIndex::new(self.root.runs());
        let built = match index.starting_with(prefix)? {
            Lookup::Found(ids) if !ids.is_empty() => return Ok(ids),
            Lookup::Found(_) => true,
            Lookup::NotBuilt => false,
        };
        let ids = self.run_ids()?;
        if !built {
            // Best effort: a root this user cannot write to is still read, walked each time.
            let _ = index.build(&ids);
        }
        Ok(ids.into_iter().filter(|id| id.starts_with(prefix)).collect())
    }

    /// S13 and the dead-launcher repair for one run; returns the non-fatal problems.
    pub fn reconcile_run(&self, run: &Dir) -> Vec<String> {
        let mut warnings = self.settle_cluster_run(run);
        // A damaged hook record means the run's end can never be delivered: say so.
        if let Err(e) = sublaunch_protocol::records::hook::read_spec(run) {
            warnings.push(e.to_string());
        }
        if let Err(e) = self.repair_unspawned(run) {
            warnings.push(e.to_string());
        }
        let request = OrphanRequest {
            spawned_here: false,
            oracle: self.oracle.as_ref(),
            own_pid_namespace: self.own_namespace.as_deref(),
        };
        match repair_orphan(run, &request, Some(&self.index), self.policy) {
            Ok(Some(outcome)) => {
                warnings.extend(outcome.warnings);
                if let Some(repair) = outcome.repaired {
                    warnings.extend(repair.warnings);
                    if repair.agents_ended > 0 {
                        log::info!(
                            "ended {} agent process(es) a dead runner left behind",
                            repair.agents_ended
                        );
                    }
                }
                if outcome.proof_written
                    && let Some(run_id) = run.path().file_name().and_then(|n| n.to_str())
                {
                    self.hooks.event(&HostEvent::ProcessTerminal {
                        run_id: run_id.to_owned(),
                        proof: outcome.proof,
                    });
                }
            }
            Ok(None) => {}
            Err(e) => warnings.push(e.to_string()),
        }
        // I9: whoever finds the run settled removes its entry (idempotent).
        if let Some(run_id) = run.path().file_name().and_then(|n| n.to_str())
            && let Err(e) = self.unfinalized().settle_if_final(run_id, Some(run), self.policy)
        {
            warnings.push(format!("Failed to remove the unfinalized-run entry of '{run_id}': {e}"));
        }
        warnings
    }

    /// The unfinalized-run index of this root (I9).
    fn unfinalized(&self) -> UnfinalizedRuns<'_> {
        UnfinalizedRuns::new(self.root.runs())
    }

    /// D7: starts a deliverer for each end in the outbox that is due — its runner died before
    /// delivering it, or an attempt failed and its backoff passed. Nobody delivers an end while
    /// its own runner may still make the first attempt.
    fn sweep_outbox(&self, warnings: &mut Vec<String>) {
        let runner_alive = |status: &Status| {
            if status.cluster.is_some() {
                return !cluster::cluster_runner_gone(status);
            }
            let Some(pid) = status.pid else { return false };
            if let (Some(theirs), Some(ours)) = (status.pid_namespace_scope.as_deref(), self.own_namespace.as_deref())
                && theirs != ours
            {
                return true;
            }
            // X3: pid and start identity, so a reused pid is not taken for the shim.
            self.oracle.liveness(pid, status.pid_start_identity.as_deref()) != Liveness::Dead
        };
        let sweep = completion_hook::Sweep {
            fired_by: FiredBy::Reconciler,
            only_run: None,
            forced: false,
        };
        match completion_hook::sweep(
            self.root.runs(),
            self.root.results(),
            sweep,
            runner_alive,
            &self.hook_runner,
        ) {
            Ok(swept) => warnings.extend(swept.into_iter().filter_map(|s| match s.action {
                completion_hook::SweepAction::Failed(why) => Some(format!(
                    "The completion hook of {} was not delivered: {why}",
                    s.delivery.run_id
                )),
                _ => None,
            })),
            Err(e) => warnings.push(format!("Failed to read the outbox: {e}")),
        }
    }

    /// Delivers every end in the outbox now, whatever its backoff, waiting for each attempt
    /// (`sublaunch deliver`); `only_run` limits it to one run's ends.
    pub fn deliver_all(&self, only_run: Option<&str>) -> io::Result<Vec<completion_hook::Swept>> {
        let sweep = completion_hook::Sweep {
            fired_by: FiredBy::Command,
            only_run,
            forced: true,
        };
        completion_hook::sweep(
            self.root.runs(),
            self.root.results(),
            sweep,
            |_| false,
            &self.hook_runner,
        )
    }

    /// A `queued` status without a pid whose launching host is dead: the launch died before a
    /// shim existed (or before it was recorded). Marked failed, proof not-started.
    fn repair_unspawned(&self, run: &Dir) -> io::Result<()> {
        let Ok(ReadDoc::Present(status)) = read_status(run) else {
            return Ok(());
        };
        let own = self.own_namespace.as_deref();
        if !launcher_died(self.oracle.as_ref(), &status, own) {
            return Ok(());
        }
        let now = run.os().clock.wall_ms();
        let oracle = self.oracle.clone();
        let policy = self.policy;
        let result = modify_status(run, false, |status| {
            if !launcher_died(&*oracle, status, own) {
                return (Change::Keep, None);
            }
            let host = status.launch_host_pid.unwrap_or(0);
            status.mark_terminal(
                RunState::Failed,
                now,
                Some(format!(
                    "Launch host process {host} exited before the async runner was started."
                )),
                Some(FailureKind::NotStarted),
            );
            let instance = status
                .process_terminal
                .as_ref()
                .and_then(|p| p.get("runnerProcessInstanceId"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let proof = match (status.run_id.clone(), instance) {
                (Some(run_id), Some(instance)) => Some(ProcessTerminal::not_started(&run_id, &instance)),
                _ => None,
            };
            if let Some(proof) = &proof {
                status.process_terminal = Some(proof.to_value());
            }
            (Change::Write(policy.for_kind(DocKind::TerminalStatus)), proof)
        });
        match result {
            // The run never had a runner: its proof file says so too, when none was written.
            Ok(Some(proof))
                if run
                    .stat(sublaunch_protocol::files::layout::names::PROCESS_TERMINAL)?
                    .is_none() =>
            {
                run.write_doc(
                    sublaunch_protocol::files::layout::names::PROCESS_TERMINAL,
                    &proof,
                    policy.for_kind(DocKind::FinalProof),
                )
            }
            Err(sublaunch_protocol::records::status::ModifyError::Io(e)) => Err(e),
            _ => Ok(()),
        }
    }

    /// A full pass: sweep when due (A12), every run that may need S13 (its marker, I5, or its
    /// unfinalized entry, I9), every marker (I5), then the outbox (D7); returns the non-fatal
    /// problems.
    pub fn reconcile_all(&self) -> Vec<String> {
        let mut warnings = self.reconcile_runs();
        self.sweep_outbox(&mut warnings);
        warnings
    }

    /// [`Self::reconcile_all`] without the outbox sweep (`sublaunch deliver` delivers itself).
    pub fn reconcile_runs(&self) -> Vec<String> {
        let mut warnings = sweep_root_if_due(&self.root, self.oracle.as_ref())
            .map(|report| report.errors)
            .unwrap_or_default();
        if stamp_due(self.root.root(), names::STAGING_SWEEP_STAMP) {
            if let Err(e) = self.root.root().stamp(names::STAGING_SWEEP_STAMP) {
                warnings.push(e.to_string());
            }
            self.sweep_hidden_dirs();
        }
        match self.unfinalized().list() {
            Ok(Some(entries)) => self.reconcile_indexed(entries, &mut warnings),
            Ok(None) => self.build_unfinalized(&mut warnings),
            Err(e) => {
                // An index that cannot be read is not believed: the walk is the truth (I9).
                warnings.push(format!("Failed to read the unfinalized-run index: {e}"));
                self.reconcile_every_run(&mut warnings);
            }
        }
        if let Err(e) = self.reconcile_markers(&mut warnings) {
            warnings.push(e.to_string());
        }
        warnings
    }

    /// S13 for the runs with an unfinalized entry or an active marker; an entry whose run
    /// directory is gone is removed (`reconcile_run` removes those of settled runs).
    fn reconcile_indexed(&self, mut ids: Vec<String>, warnings: &mut Vec<String>) {
        match self.index.list() {
            Ok(markers) => ids.extend(markers.into_iter().flatten().map(|m| m.run_id)),
            Err(e) => warnings.push(e.to_string()),
        }
        ids.sort();
        ids.dedup();
        // J7: one question to the engine for every cluster job among them.
        self.look_at_jobs_of(&ids);
        for id in ids {
            if validate_run_id(&id).is_err() {
                continue;
            }
            match self.root.runs().open_child(&id) {
                Ok(Some(run)) => warnings.extend(self.reconcile_run(&run)),
                Ok(None) => {
                    if let Err(e) = self.unfinalized().settle_if_final(&id, None, self.policy) {
                        warnings.push(format!("Failed to remove the unfinalized-run entry of '{id}': {e}"));
                    }
                }
                Err(e) => warnings.push(e.to_string()),
            }
        }
        self.end_pass();
    }

    /// A root without the index (made by an older version, or before any launch): every run
    /// once, as the index would have led to them, recording those still unfinalized; then
    /// the index is marked built and later passes read only it (I9).
    fn build_unfinalized(&self, warnings: &mut Vec<String>) {
        let complete = self.reconcile_every_run(warnings);
        if complete && let Err(e) = self.unfinalized().mark_built() {
            warnings.push(format!("Failed to build the unfinalized-run index: {e}"));
        }
    }

    /// S13 for every run directory, recording the runs still unfinalized afterwards; returns
    /// whether every run was visited and recorded.
    fn reconcile_every_run(&self, warnings: &mut Vec<String>) -> bool {
        let ids = match self.run_ids() {
            Ok(ids) => ids,
            Err(e) => {
                warnings.push(e.to_string());
                return false;
            }
        };
        let mut complete = true;
        for id in ids {
            let Ok(Some(run)) = self.root.runs().open_child(&id) else {
                continue;
            };
            warnings.extend(self.reconcile_run(&run));
            if !unfinalized::settled(&run)
                && let Err(e) = self.unfinalized().record(&id, false)
            {
                warnings.push(format!("Failed to record the unfinalized run '{id}': {e}"));
                complete = false;
            }
        }
        complete
    }

    /// I5 for every marker; the release's warnings go to `warnings`.
    fn reconcile_markers(&self, warnings: &mut Vec<String>) -> io::Result<()> {
        let Some(markers) = self.index.list()? else {
            return Ok(());
        };
        let now = self.root.runs().os().clock.wall_ms();
        for marker in markers {
            let run = self.root.runs().open_child(&marker.run_id).ok().flatten();
            let status = run
                .as_ref()
                .and_then(|r| read_status(r).ok())
                .and_then(ReadDoc::present);
            let age = Duration::from_millis(now.saturating_sub(marker.mtime_ms));
            match judge_marker(run.is_some(), status.as_ref(), age) {
                MarkerVerdict::Phantom => {
                    self.index.release(&marker.run_id, &RunState::Failed, None, None)?;
                }
                MarkerVerdict::ReleaseTerminal(state) => {
                    let outcome = self.index.release(&marker.run_id, &state, None, run.as_ref())?;
                    warnings.extend(outcome.warnings);
                }
                MarkerVerdict::Active | MarkerVerdict::TerminalPending => {}
            }
        }
        Ok(())
    }

    /// Settles the capacity queue (tickets of dead runners reclaimed, waiting ones promoted,
    /// see [`sublaunch_protocol::records::capacity`]) and returns the place of each waiting run (1 =
    /// next). No queue yet: no places.
    pub fn queue_positions(&self) -> io::Result<HashMap<String, usize>> {
        let Some(queue) = CapacityQueue::open_existing(self.root.runs())? else {
            return Ok(HashMap::new());
        };
        let tickets = queue.lock()?.evaluate(self.oracle.as_ref())?;
        Ok(tickets
            .iter()
            .filter_map(|t| Some((t.run_id.clone(), queue_position(&tickets, &t.run_id)?)))
            .collect())
    }

    /// The run ids of active markers whose run is still active (after [`Self::reconcile_all`]).
    pub fn active_run_ids(&self) -> io::Result<Vec<String>> {
        let Some(markers) = self.index.list()? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for marker in markers {
            let Some(run) = self.root.runs().open_child(&marker.run_id)? else {
                continue;
            };
            let status = read_status(&run)?.present();
            if judge_marker(true, status.as_ref(), Duration::ZERO) == MarkerVerdict::Active {
                out.push(marker.run_id);
            }
        }
        Ok(out)
    }

    /// Removes the staging and removal directories of launch hosts that died (see `run_dir`).
    /// It reads every name in `<runs>`, so listers run it on the A12 schedule (once per
    /// [`sublaunch_protocol::sweep::ORPHAN_TEMP_AGE`], by its own stamp) rather than on every
    /// pass: such a directory is never listed as a run (its name is hidden) and only holds
    /// disk space until then.
    fn sweep_hidden_dirs(&self) {
        let runs = self.root.runs();
        let Ok(entries) = runs.entries() else { return };
        for entry in entries.into_iter().filter(|e| e.file_type == FileType::Directory) {
            let Some(name) = entry.name.to_str() else { continue };
            let Some(pid) = hidden_dir_pid(name) else { continue };
            if pid != std::process::id() && self.oracle.liveness(pid, None) == Liveness::Dead {
                run_dir::remove_hidden(runs, name);
            }
        }
    }
}

/// Whether the launch host of a `queued` run without a shim pid has died.
/// A host in another pid namespace than this lister's (G45) is not judged: its pid names
/// another process here.
fn launcher_died(oracle: &dyn Processes, status: &Status, own_namespace: Option<&str>) -> bool {
    // J7: a run handed to a cluster waits in the engine's queue, with no process here.
    if status.state != Some(RunState::Queued) || status.pid.is_some() || status.cluster.is_some() {
        return false;
    }
    if let (Some(theirs), Some(ours)) = (status.pid_namespace_scope.as_deref(), own_namespace)
        && theirs != ours
    {
        return false;
    }
    let Some((host, identity)) = status.launch_host() else {
        return false;
    };
    host != procinfo::own_host_pid() && oracle.liveness(host, identity) == Liveness::Dead
}
