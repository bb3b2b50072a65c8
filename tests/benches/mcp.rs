//! `tools/call run` of `sublaunch mcp` (a `shell` step running `true`, not waiting) round
//! trip over stdio, against `sublaunch run --agent shell --task true` started as a process,
//! measured in the same run and interleaved round by round. The server keeps its planner
//! loaded and needs no process start per run.
//!
//! Run: `scripts/bench-mcp.sh` (builds the release binaries, then
//! `cargo bench -p sublaunch-tests --bench mcp`). `SUBLAUNCH_BENCH_ROUNDS` sets the rounds
//! (default 40); medians are printed as a Markdown table.

use serde_json::json;
use std::time::Instant;
use sublaunch_tests::bench::{self, median, ms};
use sublaunch_tests::launch_harness::Scratch;
use sublaunch_tests::mcp_session::Session;

fn main() {
    let Some(rounds) = bench::rounds(40) else {
        return;
    };
    let scratch = Scratch::new("bench-mcp");
    let mut session = Session::start(&scratch);
    let call = json!({"name": "run", "arguments": {"agent": "shell", "task": "true"}});
    // One call first: the planner's instance pool and the caches warm up.
    session.request("tools/call", call.clone());
    let (mut cli, mut mcp) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let started = Instant::now();
        let output = scratch
            .cli(&["run", "--agent", "shell", "--task", "true"])
            .output()
            .unwrap();
        cli.push(started.elapsed());
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let started = Instant::now();
        let response = session.request("tools/call", call.clone());
        mcp.push(started.elapsed());
        assert_eq!(response["result"]["isError"], false, "{response}");
    }
    let (cli, mcp) = (median(cli), median(mcp));
    println!("| measurement | median | × floor |\n|---|---|---|");
    println!(
        "| floor: `sublaunch run --agent shell --task true` (a process) | {} | 1.00 |",
        ms(cli)
    );
    println!(
        "| MCP `tools/call run` (same run, over stdio) | {} | {:.2} |",
        ms(mcp),
        mcp.as_secs_f64() / cli.as_secs_f64()
    );
}
