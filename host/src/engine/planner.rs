//! The planner, called through its WebAssembly component.
//!
//! One [`Planner`] holds one engine, the component (loaded from the artifact cache) and an
//! `InstancePre` with the sandbox's imports resolved. Each plan runs in a fresh `Store` with a
//! memory cap and a fuel budget, so a guest that traps, spins or hoards memory costs one
//! `planner-fault` error and leaves the planner ready for the next call.

use super::limits::Limits;
use crate::engine::artifact_cache::{ArtifactCache, CacheOutcome};
use crate::engine::sandbox::{self, Sandbox};
use crate::wasmtime_error;
use anyhow::{Context as _, anyhow};
use sublaunch_contract::{ErrorCode, LaunchPlan, PlanError, PlanRequest};
use wasmtime::component::{Component, ComponentExportIndex, ComponentNamedList, InstancePre, Lift, Lower};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, Trap};

/// The planner component built from `guest/` and embedded in this binary.
pub const EMBEDDED_COMPONENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/planner.wasm"));

/// SHA-256 (hex) of [`EMBEDDED_COMPONENT`].
pub const EMBEDDED_COMPONENT_SHA256: &str = env!("SUBLAUNCH_PLANNER_SHA256");

/// The exported interface the host calls.
pub const PLANNER_INTERFACE: &str = "sublaunch:planner/planner@0.1.0";

/// How to load the planner.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where precompiled artifacts are cached; `None` compiles in memory every time.
    pub cache: Option<ArtifactCache>,
    /// Limits of each call.
    pub limits: Limits,
    /// `Some(n)`: recycle instances through a pool of `n` slots, for long-lived hosts that
    /// plan many times (a warm call then costs about half as much, but creating the engine
    /// costs a few milliseconds more). `None`: allocate each call's instance on demand, for
    /// one-shot processes such as the CLI.
    pub instance_pool: Option<u32>,
}

impl Default for Options {
    /// No cache, default limits, a pool of 16 instances.
    fn default() -> Self {
        Self {
            cache: None,
            limits: Limits::default(),
            instance_pool: Some(16),
        }
    }
}

/// A loaded planner component, ready for many calls (it is `Send + Sync`).
pub struct Planner {
    engine: Engine,
    pre: InstancePre<Sandbox>,
    plan: ComponentExportIndex,
    plan_json: ComponentExportIndex,
    /// The `planner-session` resource's constructor and methods, when the component has them.
    session: Option<super::session::SessionExports>,
    limits: Limits,
    cache_outcome: CacheOutcome,
    cache_note: Option<String>,
}

impl Planner {
    /// Loads the embedded planner component.
    pub fn embedded(options: Options) -> anyhow::Result<Self> {
        Self::from_component(EMBEDDED_COMPONENT, EMBEDDED_COMPONENT_SHA256, options)
    }

    /// Loads a planner component (its SHA-256 keys the artifact cache).
    pub fn from_component(wasm: &[u8], sha256: &str, options: Options) -> anyhow::Result<Self> {
        let engine = engine(&options.limits, options.instance_pool)?;
        let (component, cache_outcome, cache_note) = match &options.cache {
            Some(cache) => {
                let loaded = cache.load_or_compile(&engine, wasm, sha256)?;
                (loaded.component, loaded.outcome, loaded.note)
            }
            None => {
                let component = Component::new(&engine, wasm)
                    .map_err(wasmtime_error)
                    .context("compiling the planner component")?;
                (component, CacheOutcome::Uncached, None)
            }
        };
        sandbox::check_imports(&engine, &component)?;
        let interface = component
            .get_export_index(None, PLANNER_INTERFACE)
            .ok_or_else(|| anyhow!("the component does not export {PLANNER_INTERFACE}"))?;
        let function = |name: &str| {
            component
                .get_export_index(Some(&interface), name)
                .ok_or_else(|| anyhow!("the component's {PLANNER_INTERFACE} has no `{name}` function"))
        };
        let (plan, plan_json) = (function("plan")?, function("plan-json")?);
        let session = super::session::SessionExports::find(&component, &interface);
        let pre = sandbox::linker(&engine)?
            .instantiate_pre(&component)
            .map_err(wasmtime_error)
            .context("linking the planner component")?;
        Ok(Self {
            engine,
            pre,
            plan,
            plan_json,
            session,
            limits: options.limits,
            cache_outcome,
            cache_note,
        })
    }

    /// Plans a launch.
    pub fn plan(&self, request: &PlanRequest) -> Result<LaunchPlan, PlanError> {
        self.call::<(&PlanRequest,), LaunchPlan>(self.plan, (request,))
    }

    /// Plans from PlanRequest JSON through the component's own JSON entry point.
    pub fn plan_json(&self, request: &str) -> Result<String, PlanError> {
        self.call::<(&str,), String>(self.plan_json, (request,))
    }

    /// A session holding `registry` for many plans (the component's `planner-session`): the
    /// registry crosses into the guest once, and each plan uses it when its request has no
    /// `availableModels`. The session keeps one instance (and its memory cap) for its life;
    /// each call gets the whole fuel budget.
    pub fn session(
        &self,
        registry: &[sublaunch_contract::ModelEntry],
    ) -> Result<super::session::PlannerSession<'_>, PlanError> {
        let exports = self.session.clone().ok_or_else(|| {
            PlanError::new(
                ErrorCode::PlannerFault,
                format!("The planner component's {PLANNER_INTERFACE} has no planner-session resource."),
            )
        })?;
        super::session::PlannerSession::open(self, exports, registry)
    }

    /// A fresh store with the sandbox, its memory cap and the whole fuel budget.
    pub(super) fn store(&self) -> Store<Sandbox> {
        let mut store = Store::new(&self.engine, Sandbox::new(self.limits.memory_bytes));
        store.limiter(|sandbox| &mut sandbox.memory);
        store
    }

    /// The linked component, ready to instantiate.
    pub(super) fn instance_pre(&self) -> &InstancePre<Sandbox> {
        &self.pre
    }

    /// The interfaces the component imports.
    pub fn imports(&self) -> Vec<String> {
        sandbox::imports(&self.engine, self.pre.component())
    }

    /// Whether the component came from the artifact cache, and why an entry was replaced.
    pub fn cache_report(&self) -> (CacheOutcome, Option<&str>) {
        (self.cache_outcome, self.cache_note.as_deref())
    }

    /// The limits of each call.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    fn call<P, R>(&self, function: ComponentExportIndex, params: P) -> Result<R, PlanError>
    where
        P: ComponentNamedList + Lower,
        R: Lift + 'static,
    {
        let mut store = self.store();
        let outcome = store
            .set_fuel(self.limits.fuel)
            .and_then(|()| self.pre.instantiate(&mut store))
            .and_then(|instance| instance.get_typed_func::<P, (Result<R, PlanError>,)>(&mut store, function))
            .and_then(|func| func.call(&mut store, params));
        match outcome {
            Ok((result,)) => result,
            Err(error) => Err(self.fault(&store, &error)),
        }
    }

    /// Describes why a call failed: the deadline, the memory cap, or a trap (with whatever
    /// the guest wrote to stderr).
    pub(super) fn fault(&self, store: &Store<Sandbox>, error: &wasmtime::Error) -> PlanError {
        let sandbox = store.data();
        let stderr = sandbox.stderr();
        let mut message = if error.downcast_ref::<Trap>() == Some(&Trap::OutOfFuel) {
            format!(
                "The planner exceeded its deadline: it used its whole fuel budget of {} units.",
                self.limits.fuel
            )
        } else if sandbox.memory.was_hit() {
            format!(
                "The planner reached its memory cap of {} MiB.",
                sandbox.memory.limit() / (1024 * 1024)
            )
        } else {
            format!("The planner trapped: {}", root_cause(error))
        };
        if !stderr.is_empty() {
            message.push_str(&format!(" Guest stderr: {stderr}"));
        }
        PlanError::new(ErrorCode::PlannerFault, message)
    }
}

fn root_cause(error: &wasmtime::Error) -> String {
    let text = format!("{error:?}");
    text.lines().next().unwrap_or("unknown trap").trim().to_owned()
}

/// Bytes of each pooled linear memory kept mapped between calls (zeroed, not unmapped), so a
/// warm call neither maps a fresh reservation nor page-faults through new memory.
const KEEP_RESIDENT: usize = 4 * 1024 * 1024;

/// The engine configuration: Cranelift, the component model, fuel metering for per-call
/// deadlines, and (with `pool_slots`) a pooling instance allocator that recycles warm memory
/// between calls. Memory images are copied rather than mapped copy-on-write: the planner's
/// data is small, and copying it is cheaper than remapping per call. The compatibility hash
/// of the configuration keys the artifact cache.
pub fn engine(limits: &Limits, pool_slots: Option<u32>) -> anyhow::Result<Engine> {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .consume_fuel(true)
        .memory_init_cow(false);
    if let Some(slots) = pool_slots {
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(slots)
            .total_core_instances(slots * 8)
            .total_memories(slots * 2)
            .total_tables(slots * 8)
            .max_memory_size(limits.memory_bytes)
            .linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(64 * 1024);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    Engine::new(&config)
        .map_err(wasmtime_error)
        .context("creating the wasmtime engine")
}
