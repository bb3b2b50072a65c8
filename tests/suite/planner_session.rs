//! The planner session (`planner-session`) through the real component: every vector planned
//! in one session, interleaved and repeated, is exactly the fresh-store plan of the same
//! request with the session's registry in it — a session holds nothing a plan can change.

use serde_json::Value;
use sublaunch::contract::{ModelEntry, PlanError, PlanRequest, parse_request};
use sublaunch::{Options, Planner};
use sublaunch_tests::vectors;

/// A 500-entry registry: the vectors' own entries first, then filler.
fn registry(all: &[(String, vectors::Vector)]) -> Vec<ModelEntry> {
    let mut entries: Vec<ModelEntry> = all
        .iter()
        .filter_map(|(_, v)| v.request.get("availableModels"))
        .filter_map(|models| serde_json::from_value::<Vec<ModelEntry>>(models.clone()).ok())
        .flatten()
        .collect();
    entries.truncate(400);
    let filler = (entries.len()..500).map(|i| ModelEntry {
        provider: format!("filler{}", i % 7),
        id: format!("model-{i}"),
        ..ModelEntry::default()
    });
    entries.extend(filler);
    entries
}

/// `request` without its own registry, and the same request with `registry` in it.
fn without_registry(request: &Value, registry: &[ModelEntry]) -> (String, String) {
    let mut bare = request.clone();
    if let Some(object) = bare.as_object_mut() {
        object.remove("availableModels");
    }
    let mut with = bare.clone();
    if let Some(object) = with.as_object_mut() {
        object.insert("availableModels".into(), serde_json::to_value(registry).unwrap());
    }
    (bare.to_string(), with.to_string())
}

/// A JSON parse error names where in the text it is, which the inserted registry moves.
fn unplaced(outcome: Result<String, PlanError>) -> Result<String, PlanError> {
    outcome.map_err(|mut error| {
        if let Some(at) = error.message.find(" at line ") {
            error.message.truncate(at);
        }
        error
    })
}

#[test]
fn plans_interleaved_in_one_session_equal_fresh_store_plans() {
    let planner = Planner::embedded(Options::default()).unwrap();
    let all = vectors::all();
    assert!(all.len() > 100, "{}", all.len());
    let registry = registry(&all);
    let mut session = planner.session(&registry).unwrap();
    let mut compared = 0;
    for round in 0..2 {
        let order: Vec<&(String, vectors::Vector)> = if round == 0 {
            all.iter().collect()
        } else {
            all.iter().rev().collect()
        };
        for (file, vector) in order {
            let name = format!("{file}: {}", vector.name);
            // A request with a registry of its own keeps it …
            if vector.request.get("availableModels").is_some() {
                let text = vector.request.to_string();
                assert_eq!(session.plan_json(&text), planner.plan_json(&text), "{name}");
            }
            // … and without one, so that the session's is used.
            let (bare, with) = without_registry(&vector.request, &registry);
            assert_eq!(
                unplaced(session.plan_json(&bare)),
                unplaced(planner.plan_json(&with)),
                "{name} (session registry)"
            );
            let typed: Option<(PlanRequest, PlanRequest)> = parse_request(bare.as_bytes())
                .ok()
                .zip(parse_request(with.as_bytes()).ok());
            if let Some((bare, with)) = typed {
                assert_eq!(session.plan(&bare), planner.plan(&with), "{name} (typed)");
                compared += 1;
            }
        }
    }
    assert!(compared > 200, "{compared}");
}
