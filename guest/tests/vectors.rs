//! Every public planner vector through the planner compiled natively (fast feedback while
//! developing the planner; the same vectors also run through the component and the CLI in
//! the workspace's end-to-end tests).

use serde_json::Value;
use sublaunch_tests::vectors;

#[test]
fn public_vectors_pass_natively() {
    // SUBLAUNCH_VECTOR_FILTER=<text> limits the run to files whose name contains <text>.
    let filter = std::env::var("SUBLAUNCH_VECTOR_FILTER").unwrap_or_default();
    vectors::assert_all_pass(&filter, |request| match sublaunch_planner::plan_json(request) {
        Ok(text) => (serde_json::from_str::<Value>(&text).expect("the plan is JSON"), true),
        Err(error) => (serde_json::json!({ "error": error }), false),
    });
}
