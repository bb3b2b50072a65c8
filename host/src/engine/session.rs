//! A planner session ([`PlannerSession`]): the component's `planner-session` resource, made
//! once with a model registry and called for many plans. One store and instance live as long
//! as the session, so the registry is lowered into the guest once; the guest holds nothing a
//! plan can change (its plans are those of the same requests with the registry in them). Each
//! call gets the whole fuel budget again; the memory cap covers the session's instance.

use super::planner::Planner;
use super::sandbox::Sandbox;
use sublaunch_contract::{LaunchPlan, ModelEntry, PlanError, PlanRequest};
use wasmtime::Store;
use wasmtime::component::{Component, ComponentExportIndex, ComponentNamedList, Lift, Lower, ResourceAny};

/// The resource's functions in the component's planner interface.
#[derive(Clone, Debug)]
pub struct SessionExports {
    constructor: ComponentExportIndex,
    plan: ComponentExportIndex,
    plan_json: ComponentExportIndex,
}

impl SessionExports {
    /// The resource's constructor and methods in `interface`, when the component has them.
    pub fn find(component: &Component, interface: &ComponentExportIndex) -> Option<Self> {
        let index = |name: &str| component.get_export_index(Some(interface), name);
        Some(Self {
            constructor: index("[constructor]planner-session")?,
            plan: index("[method]planner-session.plan")?,
            plan_json: index("[method]planner-session.plan-json")?,
        })
    }
}

/// A live `planner-session`: its store, instance and resource handle.
pub struct PlannerSession<'p> {
    planner: &'p Planner,
    store: Store<Sandbox>,
    instance: wasmtime::component::Instance,
    exports: SessionExports,
    handle: Option<ResourceAny>,
}

impl<'p> PlannerSession<'p> {
    /// Instantiates the planner and makes the resource with `registry`.
    pub(super) fn open(
        planner: &'p Planner,
        exports: SessionExports,
        registry: &[ModelEntry],
    ) -> Result<Self, PlanError> {
        let mut store = planner.store();
        let opened = store
            .set_fuel(planner.limits().fuel)
            .and_then(|()| planner.instance_pre().instantiate(&mut store))
            .and_then(|instance| {
                let constructor =
                    instance.get_typed_func::<(&[ModelEntry],), (ResourceAny,)>(&mut store, exports.constructor)?;
                let (handle,) = constructor.call(&mut store, (registry,))?;
                Ok((instance, handle))
            });
        match opened {
            Ok((instance, handle)) => Ok(Self {
                planner,
                store,
                instance,
                exports,
                handle: Some(handle),
            }),
            Err(error) => Err(planner.fault(&store, &error)),
        }
    }

    /// Plans a launch with the session's registry.
    pub fn plan(&mut self, request: &PlanRequest) -> Result<LaunchPlan, PlanError> {
        let function = self.exports.plan;
        self.call::<(ResourceAny, &PlanRequest), LaunchPlan>(function, |handle| (handle, request))
    }

    /// Plans from PlanRequest JSON with the session's registry.
    pub fn plan_json(&mut self, request: &str) -> Result<String, PlanError> {
        let function = self.exports.plan_json;
        self.call::<(ResourceAny, &str), String>(function, |handle| (handle, request))
    }

    fn call<P, R>(
        &mut self,
        function: ComponentExportIndex,
        params: impl FnOnce(ResourceAny) -> P,
    ) -> Result<R, PlanError>
    where
        P: ComponentNamedList + Lower,
        R: Lift + 'static,
    {
        let Some(handle) = self.handle else {
            return Err(PlanError::new(
                sublaunch_contract::ErrorCode::PlannerFault,
                "The planner session ended after an earlier fault.",
            ));
        };
        let store = &mut self.store;
        let outcome = store
            .set_fuel(self.planner.limits().fuel)
            .and_then(|()| {
                self.instance
                    .get_typed_func::<P, (Result<R, PlanError>,)>(&mut *store, function)
            })
            .and_then(|func| func.call(&mut *store, params(handle)));
        match outcome {
            Ok((result,)) => result,
            Err(error) => {
                // A trapped instance cannot be entered again.
                self.handle = None;
                Err(self.planner.fault(&self.store, &error))
            }
        }
    }
}

impl Drop for PlannerSession<'_> {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            let _ = handle.resource_drop(&mut self.store);
        }
    }
}
