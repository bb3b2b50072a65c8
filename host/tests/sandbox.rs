//! The planner sandbox against real guests: the real planner's imports, and a rogue
//! component that loops, hoards memory, panics and traps.

use sublaunch::contract::{ErrorCode, PlanRequest, Step};
use sublaunch::engine::sandbox::FORBIDDEN_IMPORTS;
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

#[test]
fn a_session_gets_the_fuel_deadline_per_call_and_ends_after_a_fault() {
    let planner = rogue(Limits {
        fuel: 50_000_000,
        ..Limits::default()
    });
    let mut session = planner.session(&[]).expect("the rogue planner has sessions");
    // Many calls in one session each get the whole budget.
    for _ in 0..20 {
        assert!(session.plan(&request("/ok")).is_ok());
    }
    let error = session.plan(&request("/loop")).unwrap_err();
    assert_eq!(error.code, ErrorCode::PlannerFault);
    assert!(error.message.contains("deadline"), "{}", error.message);
    let after = session.plan(&request("/ok")).unwrap_err();
    assert!(
        after.message.contains("ended after an earlier fault"),
        "{}",
        after.message
    );
    // The planner itself, and a new session, still serve.
    assert!(planner.plan(&request("/ok")).is_ok());
    assert!(planner.session(&[]).unwrap().plan(&request("/ok")).is_ok());
}

#[test]
fn a_session_that_hoards_memory_meets_the_cap() {
    let planner = rogue(Limits::default());
    let mut session = planner.session(&[]).unwrap();
    let error = session.plan(&request("/alloc")).unwrap_err();
    assert_eq!(error.code, ErrorCode::PlannerFault);
    assert!(error.message.contains("memory cap"), "{}", error.message);
}
