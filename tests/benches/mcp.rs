//! `tools/call run` of `sublaunch mcp` (a `shell` step running `true`, not waiting) round
//! trip over stdio, against `sublaunch run --agent shell --task true` started as a process,
//! measured in the same run and interleaved round by round. The server keeps its planner
//! loaded and needs no process start per run.
//!
//! Run: `scripts/bench-mcp.sh` (builds the release binaries, then
//! `cargo bench -p sublaunch-tests --bench mcp`). `SUBLAUNCH_BENCH_ROUNDS` sets the rounds
//! (default 40); medians are printed as a Markdown table.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::Instant;
use sublaunch_tests::bench::{self, median, ms};
use sublaunch_tests::launch_harness::Scratch;

/// A JSON-RPC session with `sublaunch mcp` (newline-delimited messages).
struct Session {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next_id: u64,
}

impl Session {
    fn start(scratch: &Scratch) -> Session {
        let mut child = scratch
            .cli(&["mcp", "--allow-shell"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("sublaunch mcp");
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut session = Session {
            child,
            input,
            output,
            next_id: 0,
        };
        session.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        );
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.input, "{message}").unwrap();
        self.input.flush().unwrap();
    }

    /// Sends a request and reads until its response.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.output.read_line(&mut line).unwrap() > 0,
                "the server closed stdout"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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
