//! Planner benchmarks (BENCHMARKS.md):
//! - a warm in-process plan call through the component, against the same call made twice
//!   and against a no-op call through the same sandbox (the rogue planner's empty plan);
//! - a cold `sublaunch plan` process with a warm component cache, against a bare spawn of
//!   `/bin/true`;
//! - the first run with an empty cache (compile + store);
//! - model resolution: a fuzzy name against a 500-entry registry, against an
//!   exact full id in the same run, and how both grow with the registry's size.
//!
//! Run: `cargo bench -p sublaunch --bench planner`

mod support;

use std::io::Write;
use std::process::{Command, Stdio};
use sublaunch::contract::{PlanRequest, parse_request};
use sublaunch::engine::artifact_cache::ArtifactCache;
use sublaunch::{Options, Planner};
use support::{header, measure, measure_interleaved, measure_per_call, row};

const ONE_STEP: &[u8] =
    br#"{"cwd":"/code/repo","mode":"single","agents":[{"name":"worker"}],"steps":[{"agent":"worker","task":"Summarise the change."}]}"#;

fn main() {
    let request: PlanRequest = parse_request(ONE_STEP).unwrap();
    let planner = Planner::embedded(Options::default()).unwrap();
    let on_demand = Planner::embedded(Options {
        instance_pool: None,
        ..Options::default()
    })
    .unwrap();
    let rogue_wasm = std::fs::read(env!("SUBLAUNCH_ROGUE_PLANNER_WASM")).unwrap();
    let noop = Planner::from_component(&rogue_wasm, "rogue", Options::default()).unwrap();

    header("Warm in-process plan call (one-step request)");
    let floor = measure_per_call(30, 200, || {
        noop.plan(&request).unwrap();
    });
    let once = measure_per_call(30, 200, || {
        planner.plan(&request).unwrap();
    });
    let twice = measure_per_call(30, 200, || {
        planner.plan(&request).unwrap();
        planner.plan(&request).unwrap();
    });
    let unpooled = measure_per_call(30, 200, || {
        on_demand.plan(&request).unwrap();
    });
    let json = measure_per_call(30, 200, || {
        planner.plan_json(std::str::from_utf8(ONE_STEP).unwrap()).unwrap();
    });
    row(
        "floor: no-op plan through the same sandbox (fresh store + instantiate + call)",
        floor,
        floor,
    );
    row("plan (typed records)", once, floor);
    row("plan, same call made twice", twice, floor);
    row("plan-json (JSON in, JSON out)", json, floor);
    row(
        "plan (typed records), on-demand instances instead of the pool",
        unpooled,
        floor,
    );

    model_resolution(&planner, &noop);

    let cache = tempfile::tempdir().unwrap();
    let request_file = cache.path().join("request.json");
    std::fs::write(&request_file, ONE_STEP).unwrap();
    let sublaunch = env!("CARGO_BIN_EXE_sublaunch");
    let run_plan = |cache_dir: &std::path::Path| {
        let output = Command::new(sublaunch)
            .args(["plan", "--request"])
            .arg(&request_file)
            .env("SUBLAUNCH_CACHE_DIR", cache_dir)
            .stdout(Stdio::piped())
            .output()
            .unwrap();
        assert!(output.status.success());
    };

    header("Cold `sublaunch plan` process");
    let true_floor = measure(5, 200, || {
        assert!(Command::new("/bin/true").status().unwrap().success());
    });
    let warm_cache = cache.path().join("warm");
    // As on a machine whose cache is long settled: the entry is stamped (and no longer hashed
    // at each load) once it is DEFAULT_SETTLE old.
    run_plan(&warm_cache);
    std::thread::sleep(sublaunch::engine::artifact_cache::DEFAULT_SETTLE + std::time::Duration::from_millis(100));
    let cold_process = measure(5, 200, || run_plan(&warm_cache));
    let first_run = measure(0, 10, || {
        let empty = tempfile::tempdir().unwrap();
        run_plan(empty.path());
    });
    let compile_only = measure(1, 10, || {
        let _ =
            Planner::from_component(sublaunch::engine::planner::EMBEDDED_COMPONENT, "x", Options::default()).unwrap();
    });
    let load_cached = |instance_pool| {
        measure(2, 50, || {
            let options = Options {
                cache: Some(ArtifactCache::new(&warm_cache)),
                instance_pool,
                ..Options::default()
            };
            let _ = Planner::embedded(options).unwrap();
        })
    };
    let (load_on_demand, load_pooled) = (load_cached(None), load_cached(Some(16)));
    row("floor: spawn + exit of /bin/true", true_floor, true_floor);
    row("`sublaunch plan` with a warm component cache", cold_process, true_floor);
    row(
        "`sublaunch plan` with an empty cache (compile + store)",
        first_run,
        true_floor,
    );
    row(
        "in-process: load from the warm cache, on-demand instances (as the CLI)",
        load_on_demand,
        true_floor,
    );
    row(
        "in-process: load from the warm cache, pool of 16 instances",
        load_pooled,
        true_floor,
    );
    row("in-process: compile the component, no cache", compile_only, true_floor);
    let _ = std::io::stdout().flush();
}

/// The JSON of a request whose one step asks for `model` against a registry of `size` entries
/// spread over 20 providers; the wanted entry is the last one.
fn registry_json(size: usize, model: &str) -> String {
    let models: Vec<String> = (0..size)
        .map(|i| {
            format!(
                r#"{{"provider":"provider-{}","id":"model-{i}-2025-01-01","contextWindow":200000}}"#,
                i % 20
            )
        })
        .collect();
    format!(
        r#"{{"cwd":"/code","mode":"single","availableModels":[{}],"agents":[{{"name":"worker"}}],"steps":[{{"agent":"worker","task":"t","model":"{model}"}}]}}"#,
        models.join(",")
    )
}

/// [`registry_json`] as typed records.
fn registry_request(size: usize, model: &str) -> PlanRequest {
    parse_request(registry_json(size, model).as_bytes()).unwrap()
}

fn model_resolution(planner: &Planner, noop: &Planner) {
    header("Model resolution through the component (warm plan call)");
    let exact_500 = registry_request(500, "provider-19/model-499-2025-01-01");
    let fuzzy_500 = registry_request(500, "Model_499");
    assert_eq!(
        planner.plan(&fuzzy_500).unwrap().steps[0].model.as_deref(),
        Some("provider-19/model-499-2025-01-01")
    );
    let fuzzy_json_500 = registry_json(500, "Model_499");
    // Interleaved, so the ratios hold while the machine's speed drifts.
    let [floor, fuzzy, passing, fuzzy_json] = measure_interleaved(
        30,
        1500,
        &mut [
            &mut || drop(planner.plan(&exact_500).unwrap()),
            &mut || drop(planner.plan(&fuzzy_500).unwrap()),
            &mut || drop(noop.plan(&fuzzy_500).unwrap()),
            &mut || drop(planner.plan_json(&fuzzy_json_500).unwrap()),
        ],
    )[..] else {
        unreachable!("four ops, four summaries")
    };
    row("floor: exact full id, 500-entry registry", floor, floor);
    row("fuzzy name (`Model_499`, undated), 500-entry registry", fuzzy, floor);
    row(
        "no-op plan given the same 500-entry request (passing it in)",
        passing,
        floor,
    );
    row(
        "plan-json: fuzzy name, 500-entry registry (JSON in, JSON out)",
        fuzzy_json,
        floor,
    );
    planner_session(planner, &fuzzy_500);
    for size in [100, 1000, 2000, 10_000] {
        let exact = registry_request(
            size,
            &format!("provider-{}/model-{}-2025-01-01", (size - 1) % 20, size - 1),
        );
        let fuzzy = registry_request(size, &format!("Model_{}", size - 1));
        // Each size beside its own 500-entry floor, interleaved.
        let [floor, exact_time, fuzzy_time] = measure_interleaved(
            5,
            100,
            &mut [
                &mut || drop(planner.plan(&exact_500).unwrap()),
                &mut || drop(planner.plan(&exact).unwrap()),
                &mut || drop(planner.plan(&fuzzy).unwrap()),
            ],
        )[..] else {
            unreachable!("three ops, three summaries")
        };
        row(&format!("exact full id, {size}-entry registry"), exact_time, floor);
        row(&format!("fuzzy name, {size}-entry registry"), fuzzy_time, floor);
    }
}

/// A planner session holding the 500-entry registry: its plans against the fresh-store plan of
/// the same request with the registry in it (the floor), and against a fresh-store plan of a
/// one-step request without a registry.
fn planner_session(planner: &Planner, fuzzy_500: &PlanRequest) {
    let registry = fuzzy_500.available_models.clone().unwrap();
    let mut bare = fuzzy_500.clone();
    bare.available_models = None;
    let one_step: PlanRequest = parse_request(ONE_STEP).unwrap();
    let session = std::cell::RefCell::new(planner.session(&registry).unwrap());
    assert_eq!(
        session.borrow_mut().plan(&bare).unwrap(),
        planner.plan(fuzzy_500).unwrap()
    );
    let [floor, in_session, session_one_step, fresh_one_step] = measure_interleaved(
        30,
        1500,
        &mut [
            &mut || drop(planner.plan(fuzzy_500).unwrap()),
            &mut || drop(session.borrow_mut().plan(&bare).unwrap()),
            &mut || drop(session.borrow_mut().plan(&one_step).unwrap()),
            &mut || drop(planner.plan(&one_step).unwrap()),
        ],
    )[..] else {
        unreachable!("four ops, four summaries")
    };
    header("Planner session (the 500-entry registry given once)");
    row(
        "floor: fresh-store plan, fuzzy name, 500-entry registry in the request",
        floor,
        floor,
    );
    row(
        "session plan, fuzzy name, the session's 500-entry registry",
        in_session,
        floor,
    );
    row("session plan, one-step request", session_one_step, floor);
    row(
        "fresh-store plan, one-step request (no registry)",
        fresh_one_step,
        floor,
    );
}
