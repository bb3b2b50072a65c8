//! The planner sandbox against real guests: the real planner's imports, and a rogue
//! component that loops, hoards memory, panics and traps.

use sublaunch::contract::{ErrorCode, PlanRequest, Step};
use sublaunch::sandbox::FORBIDDEN_IMPORTS;
use sublaunch::{Limits, Options, Planner};

fn rogue(limits: Limits) -> Planner {
    let wasm = std::fs::read(env!("SUBLAUNCH_ROGUE_PLANNER_WASM")).expect("build.rs built the rogue planner");
    Planner::from_component(
        &wasm,
        "rogue",
        Options {
            limits,
            ..Options::default()
        },
    )
    .expect("the rogue planner loads")
}

fn request(cwd: &str) -> PlanRequest {
    PlanRequest {
        cwd: cwd.into(),
        steps: vec![Step {
            agent: Some("worker".into()),
            task: Some("t".into()),
            ..Step::default()
        }],
        ..PlanRequest::default()
    }
}

#[test]
fn the_planner_imports_no_filesystem_sockets_random_clocks_or_http() {
    let planner = Planner::embedded(Options::default()).unwrap();
    let imports = planner.imports();
    println!("planner imports: {imports:#?}");
    for name in &imports {
        assert!(
            !FORBIDDEN_IMPORTS.iter().any(|prefix| name.starts_with(prefix)),
            "the planner imports {name}"
        );
        assert!(
            name.starts_with("wasi:io/") || name.starts_with("wasi:cli/"),
            "unexpected import {name}"
        );
    }
}

#[test]
fn an_endless_loop_exhausts_the_fuel_deadline_and_the_planner_keeps_working() {
    let planner = rogue(Limits {
        fuel: 50_000_000,
        ..Limits::default()
    });
    let error = planner.plan(&request("/loop")).unwrap_err();
    assert_eq!(error.code, ErrorCode::PlannerFault);
    assert!(error.message.contains("deadline"), "{}", error.message);
    assert!(error.message.contains("50000000"), "{}", error.message);
    // The same planner serves the next call.
    assert!(planner.plan(&request("/fine")).is_ok());
}

#[test]
fn hoarding_memory_hits_the_cap() {
    let planner = rogue(Limits {
        memory_bytes: 32 * 1024 * 1024,
        ..Limits::default()
    });
    let error = planner.plan(&request("/alloc")).unwrap_err();
    assert_eq!(error.code, ErrorCode::PlannerFault);
    assert!(error.message.contains("memory cap of 32 MiB"), "{}", error.message);
    assert!(planner.plan(&request("/fine")).is_ok());
}

#[test]
fn a_panic_is_a_fault_that_carries_the_guest_stderr() {
    let planner = rogue(Limits::default());
    let error = planner.plan(&request("/panic")).unwrap_err();
    assert_eq!(error.code, ErrorCode::PlannerFault);
    assert!(error.message.contains("trapped"), "{}", error.message);
    assert!(
        error.message.contains("rogue planner panicked on purpose"),
        "{}",
        error.message
    );
}

#[test]
fn a_trap_through_the_json_entry_point_carries_the_guest_stderr() {
    let planner = rogue(Limits::default());
    let error = planner.plan_json(r#"{"cwd":"/trap"}"#).unwrap_err();
    assert_eq!(error.code, ErrorCode::PlannerFault);
    assert!(
        error.message.contains("rogue planner is about to trap"),
        "{}",
        error.message
    );
    assert_eq!(planner.plan_json(r#"{"cwd":"/fine"}"#).unwrap(), r#"{"steps":[]}"#);
}

#[test]
fn the_real_planner_refuses_an_oversized_request_inside_its_limits() {
    let planner = Planner::embedded(Options::default()).unwrap();
    let mut big = request("/code");
    big.steps[0].task = Some("x".repeat(20 * 1024 * 1024));
    // 20 MiB of task text is lowered into the guest (within the 256 MiB cap) and planned:
    // the request names no agents, so planning itself gets as far as unknown-agent.
    assert_eq!(planner.plan(&big).unwrap_err().code, ErrorCode::UnknownAgent);
    let capped = Planner::embedded(Options {
        limits: Limits {
            memory_bytes: 8 * 1024 * 1024,
            ..Limits::default()
        },
        ..Options::default()
    })
    .unwrap();
    let error = capped.plan(&big).unwrap_err();
    assert_eq!(error.code, ErrorCode::PlannerFault);
    assert!(error.message.contains("memory cap of 8 MiB"), "{}", error.message);
}

/// Every value of `value`, as (JSON pointer, value), the root first.
fn json_paths(value: &serde_json::Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match value {
        serde_json::Value::Object(map) => {
            for (key, child) in map {
                json_paths(
                    child,
                    format!("{at}/{}", key.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        serde_json::Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                json_paths(child, format!("{at}/{index}"), out);
            }
        }
        _ => {}
    }
}

/// Hostile requests (bad input, E1): every public vector's request with each value in turn
/// replaced by a value of another shape, an extreme number, a long or odd string, or removed;
/// and its text cut short. The planner answers each with a plan or a typed error that has a
/// message — never a fault (a trap, a panic, running out of fuel or memory).
#[test]
fn hostile_variants_of_every_vector_get_a_plan_or_a_typed_error_never_a_fault() {
    let planner = Planner::embedded(Options::default()).unwrap();
    let replacements = vec![
        serde_json::json!(null),
        serde_json::json!(true),
        serde_json::json!(-1),
        serde_json::json!(1e308),
        serde_json::json!(18_446_744_073_709_551_615_u64),
        serde_json::json!(""),
        serde_json::json!(" \u{0}*?[/\u{202e}é"),
        serde_json::json!("x".repeat(70_000)),
        serde_json::json!([]),
        serde_json::json!({}),
        serde_json::from_str(&format!("{}1{}", "[".repeat(40), "]".repeat(40))).unwrap(),
    ];
    let (mut plans, mut refusals) = (0, 0);
    let mut check = |text: &str, what: &str| match planner.plan_json(text) {
        Ok(plan) => {
            plans += 1;
            serde_json::from_str::<serde_json::Value>(&plan)
                .unwrap_or_else(|e| panic!("{what}: plan is not JSON: {e}"));
        }
        Err(error) => {
            refusals += 1;
            assert_ne!(error.code, ErrorCode::PlannerFault, "{what}: {}", error.message);
            assert!(
                !error.message.trim().is_empty(),
                "{what}: {:?} without a message",
                error.code
            );
        }
    };
    let vectors_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/vectors");
    for file in ["model-and-thinking.json", "placement-and-schemas.json"] {
        let text = std::fs::read_to_string(format!("{vectors_dir}/{file}")).unwrap();
        let vectors: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        for vector in &vectors {
            let name = vector["name"].as_str().unwrap_or("?");
            let request = &vector["request"];
            let text = request.to_string();
            for cut in [0, 1, text.len() / 3, text.len() / 2, text.len() - 1] {
                let cut = (0..=cut).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
                check(&text[..cut], &format!("{file} '{name}' cut at {cut}"));
            }
            let mut paths = Vec::new();
            json_paths(request, String::new(), &mut paths);
            for (i, path) in paths.iter().enumerate().skip(1) {
                // Every path gets two replacements (which two turns with the path) and removal.
                for replacement in [
                    &replacements[i % replacements.len()],
                    &replacements[(i * 7 + 3) % replacements.len()],
                ] {
                    let mut variant = request.clone();
                    *variant.pointer_mut(path).unwrap() = replacement.clone();
                    check(
                        &variant.to_string(),
                        &format!("{file} '{name}' {path} = {replacement:.40}"),
                    );
                }
                let (parent, key) = path.rsplit_once('/').unwrap();
                let mut variant = request.clone();
                match variant.pointer_mut(parent).unwrap() {
                    serde_json::Value::Object(map) => {
                        map.remove(&key.replace("~1", "/").replace("~0", "~"));
                    }
                    serde_json::Value::Array(items) => {
                        items.remove(key.parse::<usize>().unwrap());
                    }
                    _ => unreachable!("a path's parent holds it"),
                }
                check(&variant.to_string(), &format!("{file} '{name}' without {path}"));
            }
        }
    }
    println!("hostile variants: {plans} planned, {refusals} refused with a typed error");
    assert!(plans > 1_000 && refusals > 1_000, "{plans} planned, {refusals} refused");
}
