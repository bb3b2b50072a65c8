//! Every public planner vector through the planner compiled natively (fast feedback while
//! developing the planner; the same vectors also run through the component and the CLI in
//! the workspace's end-to-end tests).

use serde_json::Value;
use sublaunch_tests::vectors;

#[test]
fn public_vectors_pass_natively() {
    let mut failures = Vec::new();
    // SUBLAUNCH_VECTOR_FILTER=<text> limits the run to files whose name contains <text>.
    let filter = std::env::var("SUBLAUNCH_VECTOR_FILTER").unwrap_or_default();
    let all: Vec<_> = vectors::all()
        .into_iter()
        .filter(|(file, _)| file.contains(&filter))
        .collect();
    assert!(
        filter.len() > 0 || all.len() >= 122,
        "expected the public vectors, found {}",
        all.len()
    );
    for (file, vector) in &all {
        let bytes = serde_json::to_vec(&vector.request).unwrap();
        let (output, ok) = match sublaunch_planner::plan_json(&bytes) {
            Ok(text) => (serde_json::from_str::<Value>(&text).unwrap(), true),
            Err(error) => (serde_json::json!({ "error": error }), false),
        };
        let problems = vectors::check(&vector.expect, &output, ok);
        if !problems.is_empty() {
            failures.push(format!(
                "{file}: {} [{}]\n    {}",
                vector.name,
                vector.rules.join(", "),
                problems.join("\n    ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} vectors failed:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}
