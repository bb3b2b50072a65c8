//! A planner component that misbehaves on request (test-only).
//!
//! It exports the real planner world, so the host loads it exactly like the real planner.
//! The request's `cwd` picks the behaviour: `/loop` spins forever, `/alloc` allocates until
//! the memory cap stops it, `/panic` panics with a message on stderr, `/trap` writes to
//! stderr and then executes `unreachable`; anything else returns an empty plan.

#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({ world: "planner-component", path: "../../wit/planner.wit" });

    use exports::sublaunch::planner::planner::{Guest, GuestPlannerSession};
    use exports::sublaunch::planner::types::{LaunchPlan, ModelEntry, PlanError, PlanRequest};

    struct Rogue;

    fn misbehave(selector: &str) {
        match selector {
            "/loop" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "/alloc" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "/panic" => panic!("rogue planner panicked on purpose"),
            "/trap" => {
                eprintln!("rogue planner is about to trap");
                core::arch::wasm32::unreachable()
            }
            _ => {}
        }
    }

    /// A session that misbehaves like the functions (its registry is ignored).
    struct RogueSession;

    impl GuestPlannerSession for RogueSession {
        fn new(_registry: Vec<ModelEntry>) -> Self {
            RogueSession
        }

        fn plan(&self, request: PlanRequest) -> Result<LaunchPlan, PlanError> {
            <Rogue as Guest>::plan(request)
        }

        fn plan_json(&self, request: String) -> Result<String, PlanError> {
            <Rogue as Guest>::plan_json(request)
        }
    }

    impl Guest for Rogue {
        type PlannerSession = RogueSession;

        fn plan(request: PlanRequest) -> Result<LaunchPlan, PlanError> {
            misbehave(&request.cwd);
            Ok(LaunchPlan {
                steps: Vec::new(),
                graph: None,
                warnings: Vec::new(),
                usage_budget: None,
                reviewers: Vec::new(),
            })
        }

        fn plan_json(request: String) -> Result<String, PlanError> {
            let selector = ["/loop", "/alloc", "/panic", "/trap"]
                .into_iter()
                .find(|s| request.contains(&format!("\"{s}\"")))
                .unwrap_or("");
            misbehave(selector);
            Ok("{\"steps\":[]}".to_owned())
        }
    }

    export!(Rogue);
}
