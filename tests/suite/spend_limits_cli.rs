//! Spend limits across runs (U8, U9, U10): a daily allowance in settings that the real pi's
//! reported cost fills, the ninth run waiting `queued` with the reason until the runner's day
//! moves on (its clock shifted through a test hook), `--no-queue` (and MCP `noQueue`) refusing
//! instead, a running run stopped when it fills the day's allowance, an agent that takes
//! messages asked to wrap up first with no further step started, and the reservation of a runner killed with
//! SIGKILL released for the next run.

use crate::real_cli_runs::World;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use sublaunch_protocol::records::ledger::{Ledger, LedgerEntry};
use sublaunch_protocol::records::usage::Usage;
use sublaunch_tests::cli::{ok, text, write};
use sublaunch_tests::launch_harness::{Scratch, processes_with, status, wait_for, wait_terminal};
use sublaunch_tests::model_server::Reply;
use sublaunch_tests::real_agents::PiApi;

/// The runner's test clock: a file holding the milliseconds its wall clock is shifted by.
const CLOCK_FILE_VAR: &str = "SUBLAUNCH_SHIM_TEST_CLOCK_FILE";
const LIMIT: Duration = Duration::from_secs(60);

fn settings(work: &Path, limits: Value) {
    write(
        &work.join(".sublaunch/settings.json"),
        &json!({"subagents": {"limits": limits}}).to_string(),
    );
}

/// `run ARGS` without waiting, with the runner's clock file: the run id.
fn launch(world: &World, args: &[&str], clock: &Path) -> String {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    let output = world.sublaunch_with(&all, &[(CLOCK_FILE_VAR, clock.to_path_buf())]);
    ok(&output).lines().next().unwrap().trim().to_owned()
}

fn json_of(output: &std::process::Output) -> Value {
    serde_json::from_str(&ok(output)).unwrap_or_else(|e| panic!("{e}: {}", text(&output.stderr)))
}

#[test]
fn a_daily_limit_queues_the_ninth_run_until_the_day_moves() {
    let world = World::with_pi_api("spend-daily", PiApi::OpenAiCompletions);
    settings(&world.scratch.work(), json!([{"per": "day", "costUsd": 25}]));
    // A million input tokens at $3 a million: each run spends $3.00.
    world.pi.set_default(Reply::text("done").usage(1_000_000, 0, 0, 0));
    let clock: PathBuf = world.scratch.path().join("clock-shift");
    write(&clock, "0");
    let pi = ["--agent", "pi", "--model", "fake/fake-model", "--task"];
    // Eight side by side: nothing is spent yet and pi has no past step to estimate from.
    let ids: Vec<String> = (0..8)
        .map(|i| launch(&world, &[&pi[..], &[&format!("part {i}")]].concat(), &clock))
        .collect();
    let mut wait = vec!["wait"];
    wait.extend(ids.iter().map(String::as_str));
    ok(&world.sublaunch(&wait));
    for id in &ids {
        assert_eq!(world.result(id)["success"], true);
    }
    let today = json_of(&world.sublaunch(&["usage", "--since", "1d", "--json"]));
    assert_eq!(today["total"]["costUsd"], 24.0, "{today}");

    // The ninth would bring the day to $27: it waits, queued, saying why and until when.
    let ninth = launch(&world, &[&pi[..], &["ninth"]].concat(), &clock);
    let seen = json_of(&world.sublaunch(&["status", &ninth, "--json"]));
    assert_eq!(seen["state"], "queued", "{seen}");
    assert_eq!(seen["waiting"]["kind"], "spend-limit", "{seen}");
    assert_eq!(
        seen["waiting"]["reason"], "spend limit: $24.00 of $25.00 used today",
        "{seen}"
    );
    let until = seen["waiting"]["until"].as_u64().expect("the day's end");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(until > now && until <= now + 86_400_000 + 3_600_000, "{seen}");
    assert!(
        seen["waiting"]["detail"]
            .as_str()
            .unwrap()
            .contains("$3.00 and 1000000 tokens (8 recent steps of pi)"),
        "{seen}"
    );
    let listed = ok(&world.sublaunch(&["list"]));
    let line = listed.lines().find(|l| l.starts_with(&ninth)).unwrap();
    assert!(
        line.contains("queued (spend limit: $24.00 of $25.00 used today, "),
        "{listed}"
    );
    // Asked not to queue, a run is refused with the reason, and nothing of it starts.
    let refused = world.sublaunch(&[&["run", "--no-queue"][..], &pi[..], &["tenth"]].concat());
    assert_ne!(refused.status.code(), Some(0));
    assert!(
        text(&refused.stderr).contains("it would wait for spend limit: $24.00 of $25.00 used today"),
        "{}",
        text(&refused.stderr)
    );
    // An MCP client asking not to queue is refused the same way.
    let mut session = sublaunch_tests::mcp_session::Session::spawn(world.command(&["mcp"]));
    let answer = session.request(
        "tools/call",
        json!({"name": "run", "arguments": {
            "agent": "pi", "model": "fake/fake-model", "task": "tenth", "noQueue": true
        }}),
    );
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        answer
            .to_string()
            .contains("it would wait for spend limit: $24.00 of $25.00 used today"),
        "{answer}"
    );
    drop(session);
    assert_eq!(world.pi.main_requests().len(), 8, "the queued run asked nothing");

    // The runner's day moves on: the ninth run fits in the new day, starts and ends.
    write(&clock, "86400000");
    ok(&world.sublaunch(&["wait", &ninth]));
    assert_eq!(world.result(&ninth)["success"], true);
    assert_eq!(world.pi.main_requests().len(), 9);
    let seen = json_of(&world.sublaunch(&["status", &ninth, "--json"]));
    assert_eq!(seen["waiting"], Value::Null, "{seen}");
}

#[test]
fn a_run_that_fills_the_days_allowance_is_stopped_naming_the_limit() {
    let world = World::with_pi_api("spend-stop", PiApi::AnthropicMessages);
    settings(
        &world.scratch.work(),
        json!([{"per": "day", "costUsd": 5, "provider": "fake"}]),
    );
    // One call costs $6, then pi runs a tool for 30 s: the run is stopped during the tool.
    world
        .pi
        .replies([Reply::tool_call("bash", json!({"command": "sleep 30"})).usage(2_000_000, 0, 0, 0)]);
    let started = Instant::now();
    let output = world.run(&["--agent", "pi", "--model", "fake/fake-model", "--task", "work"]);
    assert_eq!(output.status.code(), Some(14), "{}", text(&output.stderr));
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "stopped before the tool ended"
    );
    let id = text(&output.stderr).lines().next().unwrap().to_owned();
    let result = world.result(&id);
    assert_eq!(result["state"], "stopped", "{result}");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("the spend limit of $5.00 per day for fake was reached ($6.00 used today)"),
        "{result}"
    );
    assert_eq!(world.pi.main_requests().len(), 1);
    let today = json_of(&world.sublaunch(&["usage", "--since", "1d", "--json"]));
    assert_eq!(today["total"]["costUsd"], 6.0, "the spend is in the ledger: {today}");
    // pi's steps now cost $6 on average: more than the whole day's allowance, so a launch is
    // refused at once rather than queued for ever.
    let refused = world.run(&["--agent", "pi", "--model", "fake/fake-model", "--task", "again"]);
    assert_ne!(refused.status.code(), Some(0));
    assert!(
        text(&refused.stderr).contains("spend limit: $6.00 of $5.00 used today for fake"),
        "{}",
        text(&refused.stderr)
    );
}

#[test]
fn an_agent_that_takes_messages_is_asked_to_wrap_up_and_no_further_step_starts() {
    let world = World::with_pi_api("spend-wrap-up", PiApi::AnthropicMessages);
    // A limit in tokens: a reported use in the millions would also make pi shrink its next
    // request to fit its context window.
    settings(&world.scratch.work(), json!([{"per": "day", "tokens": 5000}]));
    // The first call uses 6000 tokens and runs a 3 s tool; the message to wrap up arrives
    // with the tool's result, and pi's answer to it is the step's.
    world.pi.replies([
        Reply::tool_call("bash", json!({"command": "sleep 3"})).usage(6000, 0, 0, 0),
        Reply::text("pi wrapped up"),
    ]);
    // A checkpoint gives pi a pipe for messages while it runs.
    let chain = write(
        &world.scratch.path().join("two-steps.json"),
        &json!({"checkpointBeforeDeadlineMs": 60000, "steps": [
            {"agent": "pi", "task": "first", "model": "fake/fake-model"},
            {"agent": "pi", "task": "second", "model": "fake/fake-model"}
        ]})
        .to_string(),
    );
    let output = world.run(&["--chain", chain.to_str().unwrap(), "--timeout", "600"]);
    assert_eq!(output.status.code(), Some(14), "{}", text(&output.stderr));
    let id = text(&output.stderr).lines().next().unwrap().to_owned();
    let result = world.result(&id);
    let requests = world.pi.main_requests();
    assert_eq!(
        requests.len(),
        2,
        "the second step never started: {}\n{result}",
        world.pi.dump()
    );
    let (first, second) = (requests[0].body.to_string(), requests[1].body.to_string());
    assert!(!first.contains("reached a spend limit"), "{}", world.pi.dump());
    for said in [
        "This run reached a spend limit (the spend limit of 5000 tokens per day was reached (",
        "used today)) and ends in 10 s. Stop now",
    ] {
        assert!(second.contains(said), "{said}: {}", world.pi.dump());
    }
    assert_eq!(result["state"], "stopped", "{result}");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .starts_with("Stopped: the spend limit of 5000 tokens per day was reached ("),
        "{result}"
    );
    // The first step's answer to the request is kept.
    assert_eq!(result["steps"][0]["success"], true, "{result}");
    assert_eq!(result["steps"][0]["output"], "pi wrapped up", "{result}");
    assert_eq!(result["steps"][1]["success"], false, "{result}");
}

/// Writes `n` ledger entries of agent `agent` costing `cost` each, two days ago.
fn seed_history(scratch: &Scratch, agent: &str, n: usize, cost: f64) {
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        - 2 * 86_400_000;
    let ledger = Ledger::under(&scratch.root());
    for i in 0..n {
        ledger
            .append(&LedgerEntry {
                at: at + i as u64,
                run: format!("old-{i}"),
                agent: Some(agent.to_owned()),
                usage: Usage {
                    input_tokens: 10,
                    cost_usd: Some(cost),
                    ..Usage::default()
                },
                ..LedgerEntry::default()
            })
            .unwrap();
    }
}

#[test]
fn a_killed_runners_reservation_is_released_for_the_next_run() {
    let scratch = Scratch::trusting("spend-killed");
    scratch.create_root();
    settings(&scratch.work(), json!([{"per": "day", "costUsd": 5}]));
    // The shell agent's past steps cost $3 each: each run reserves $3, two do not fit in $5.
    seed_history(&scratch, "shell", 3, 3.0);
    let mark = format!("spend-killed-{}", std::process::id());
    let launch = |task: &str| {
        let output = scratch
            .cli(&["run", "--agent", "shell", "--task", task])
            .output()
            .unwrap();
        ok(&output).lines().next().unwrap().trim().to_owned()
    };
    let first = launch(&format!("sleep 60 # {mark}"));
    wait_for("the first run to start", LIMIT, || {
        (status(&scratch.run_dir(&first))?["state"] == "running").then_some(())
    });
    let second = launch("echo second");
    let seen = status(&scratch.run_dir(&second)).unwrap();
    assert_eq!(seen["state"], "queued", "{seen}");
    let reservations = scratch.root().join("usage/reservations");
    assert!(reservations.join(format!("{first}.json")).exists());

    // The first runner dies outright, its reservation left behind.
    let pid = status(&scratch.run_dir(&first)).unwrap()["pid"].as_u64().unwrap() as i32;
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    // The waiting run finds it dead, releases it and starts.
    let ended = wait_terminal(&scratch.run_dir(&second), LIMIT);
    assert_eq!(ended["state"], "complete", "{ended}");
    assert!(!reservations.join(format!("{first}.json")).exists());
    assert!(!reservations.join(format!("{second}.json")).exists());
    // The first run is repaired as lost at the next look.
    let repaired = scratch.cli(&["status", &first, "--json"]).output().unwrap();
    let repaired: Value = serde_json::from_slice(&repaired.stdout).unwrap();
    assert_eq!(repaired["state"], "failed", "{repaired}");
    for pid in processes_with(&mark) {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32).unwrap(),
            rustix::process::Signal::KILL,
        );
    }
}
