//! What a launch resolves before touching anything (the options' os, policies, hooks and
//! paths, the runner steps, the cwd checks), and the run directory it then establishes.

use super::blocking::blocking_value;
use super::config::{self, plan_mode};
use super::error::{LaunchError, cause};
use super::failure::LaunchFailure;
use super::ids::new_run_id_with;
use super::options::{LaunchOptions, default_shim_path};
use super::preflight::CwdCheck;
use super::run_dir::RunDirError;
use super::run_dir::{self, Origin, Preliminary};
use super::spec::Launch;
use std::path::PathBuf;
use std::sync::Arc;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::durability::DurabilityPolicy;
use sublaunch_protocol::files::layout::{Layout, validate_run_id};
use sublaunch_protocol::files::trust::TrustedRoot;
use sublaunch_protocol::os::Os;
use sublaunch_protocol::os::faults::HostFaults;
use sublaunch_protocol::records::config::StepConfig;
use sublaunch_protocol::records::unfinalized::UnfinalizedRuns;

/// Attempts at a fresh random run id before giving up.
const RUN_ID_ATTEMPTS: usize = 8;

/// Everything resolved from the plan and the options before anything is touched.
pub(crate) struct Setup {
    pub layout: Layout,
    pub os: Arc<Os>,
    pub policy: DurabilityPolicy,
    pub faults: HostFaults,
    pub shim: PathBuf,
    pub steps: Vec<StepConfig>,
    pub agents: Vec<(String, Option<String>)>,
    pub mode: &'static str,
    pub cwd: String,
    pub cwd_checks: Vec<CwdCheck>,
}

impl Setup {
    pub(crate) fn new(launch: &Launch, options: &LaunchOptions) -> Result<Self, LaunchError> {
        let plan = &launch.plan;
        super::admission::admit(plan, &launch.agents, &options.environment)?;
        let os = match &options.os {
            Some(os) => os.clone(),
            None => Os::with_retry_setting(options.environment.var(sublaunch_protocol::os::retry::MAX_TOTAL_ENV))
                .map_err(|e| LaunchError::Setting(cause(e)))?
                .shared(),
        };
        let faults = match &options.faults {
            Some(faults) => faults.clone(),
            None => HostFaults::from_setting(options.environment.text(sublaunch_protocol::os::faults::HOST_FAULT_VAR))
                .map_err(|e| LaunchError::Setting(cause(e)))?,
        };
        let layout = match &options.layout {
            Some(layout) => absolute_layout(layout),
            None => options
                .environment
                .layout(std::env::current_dir().ok().as_deref())
                .map_err(|e| LaunchError::Setting(cause(e)))?,
        };
        // The launch's local directory: a placed step's directory is on its machine.
        let cwd = launch
            .cwd
            .as_ref()
            .map(|c| c.to_string_lossy().into_owned())
            .or_else(|| plan.steps.iter().find(|s| s.machine.is_none()).map(|s| s.cwd.clone()))
            .or_else(|| std::env::current_dir().ok().map(|d| d.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "/".into());
        let steps = config::runner_steps(launch, &options.environment, layout.root(), &cwd)?;
        let mut cwd_checks = vec![CwdCheck {
            effective: cwd.clone(),
            requested: None,
        }];
        // A placed step's directory is on its machine (the shim's `cd` checks it there).
        for step in plan.steps.iter().filter(|s| s.machine.is_none()) {
            if !cwd_checks.iter().any(|c| c.effective == step.cwd) {
                cwd_checks.push(CwdCheck {
                    effective: step.cwd.clone(),
                    requested: Some(step.requested_cwd.clone()),
                });
            } else if let Some(check) = cwd_checks.iter_mut().find(|c| c.effective == step.cwd) {
                check.requested.get_or_insert_with(|| step.requested_cwd.clone());
            }
        }
        Ok(Self {
            layout,
            os,
            policy: options.durability.unwrap_or_else(|| options.environment.durability()),
            faults,
            shim: match &options.shim {
                Some(shim) => shim.clone(),
                None => default_shim_path(&options.environment)?,
            },
            steps,
            agents: plan.steps.iter().map(|s| (s.agent.clone(), s.model.clone())).collect(),
            mode: plan_mode(plan),
            cwd,
            cwd_checks,
        })
    }
}

fn absolute_layout(layout: &Layout) -> Layout {
    if layout.root().is_absolute() {
        return layout.clone();
    }
    match std::env::current_dir() {
        Ok(cwd) => Layout::new(cwd.join(layout.root())),
        Err(_) => layout.clone(),
    }
}

impl Setup {
    /// Chooses the run id and creates (or, for a caller-chosen id, opens) `<run>`.
    pub(crate) async fn establish_run_dir(
        &self,
        root: &Arc<TrustedRoot>,
        launch: &Launch,
        instance: &str,
    ) -> Result<(String, Dir, Origin), LaunchFailure> {
        let instance = instance.to_owned();
        let agent = launch.plan.steps.first().map_or("run", |s| s.agent.as_str()).to_owned();
        let explicit = launch.run_id.clone();
        if let Some(id) = &explicit {
            validate_run_id(id).map_err(|e| LaunchFailure::preflight(RunDirError::from(e)))?;
        }
        let root = root.clone();
        let os = self.os.clone();
        let policy = self.policy;
        let now = os.clock.wall_ms();
        let session_id = launch.caller.session_id.clone();
        let owner = launch.caller.completion_owner_id.clone();
        let tool_call = launch.caller.tool_call_id.clone();
        let mode = self.mode;
        let cwd = self.cwd.clone();
        let agents = self.agents.clone();
        let result = blocking_value(move || -> Result<(String, Dir, Origin), RunDirError> {
            let preliminary = |run_id: &str| {
                run_dir::preliminary_status(&Preliminary {
                    run_id,
                    runner_process_instance_id: &instance,
                    session_id: session_id.as_deref(),
                    completion_owner_id: owner.as_deref(),
                    tool_call_id: tool_call.as_deref(),
                    mode,
                    cwd: &cwd,
                    steps: agents.clone(),
                    now,
                })
            };
            let runs = root.runs();
            // I9: a run is unfinalized from the moment its directory exists, so that a lister
            // finds it even when this host dies before the launch commit (its `queued` status
            // is then failed by the reconciler). Best effort here: the launch commit records
            // it again and fails the launch if it cannot (I3).
            let unfinalized = |id: &str| {
                let _ = UnfinalizedRuns::new(runs).record(id, false);
            };
            if let Some(id) = explicit {
                if let Some(dir) = run_dir::open_existing(runs, &id)? {
                    return Ok((id, dir, Origin::Existing));
                }
                return match run_dir::create(runs, &id, &preliminary(&id), policy) {
                    Ok(Some(dir)) => {
                        unfinalized(&id);
                        Ok((id, dir, Origin::Created))
                    }
                    Ok(None) => Err(RunDirError::Exists(id)),
                    Err(e) => Err(RunDirError::Create {
                        run_id: id,
                        source: Arc::new(e),
                    }),
                };
            }
            for _ in 0..RUN_ID_ATTEMPTS {
                let id = new_run_id_with(&agent, os.random.as_ref());
                match run_dir::create(runs, &id, &preliminary(&id), policy) {
                    Ok(Some(dir)) => {
                        unfinalized(&id);
                        return Ok((id, dir, Origin::Created));
                    }
                    Ok(None) => {}
                    Err(e) => {
                        return Err(RunDirError::Create {
                            run_id: id,
                            source: Arc::new(e),
                        });
                    }
                }
            }
            Err(RunDirError::NoFreeId)
        })
        .await
        .unwrap_or(Err(RunDirError::Unfinished));
        result.map_err(LaunchFailure::preflight)
    }
}
