//! Providers' rate limits shared by every run (U5, U6, U7, U10), with the real Claude Code, Codex
//! and pi behind the fake model server answering 429 for a while: the runner recognises each
//! CLI's way of saying so, stops an agent refused before it did any work instead of letting
//! its CLI retry on its own, records a cooldown for the provider in the state root, and runs
//! the step again once it passed — every attempt in the result. Runs launched meanwhile wait
//! `queued` with the reason. What the server saw is counted: one refused request per agent,
//! no storm.

use crate::real_cli_runs::World;
use serde_json::Value;
use std::time::{Duration, Instant};
use sublaunch_tests::cli::{ok, text, write};
use sublaunch_tests::launch_harness::wait_for;
use sublaunch_tests::model_server::Reply;
use sublaunch_tests::real_agents::PiApi;

fn world(name: &str) -> World {
    World::with_pi_api(name, PiApi::OpenAiCompletions)
}

fn cooldown(world: &World, provider: &str) -> Option<Value> {
    let path = world.scratch.root().join(format!("limits/cooldowns/{provider}.json"));
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// `run --agent codex --task TASK` without waiting: the run id it prints.
fn launched(world: &World, task: &str) -> String {
    let output = world.sublaunch(&["run", "--agent", "codex", "--task", task]);
    ok(&output).lines().next().unwrap().trim().to_owned()
}

fn run_id(output: &std::process::Output) -> String {
    text(&output.stderr).lines().next().unwrap_or_default().to_owned()
}

#[test]
fn a_fan_out_of_eight_under_a_rate_limit_pauses_once_and_finishes_without_a_storm() {
    let world = world("rl-fanout");
    // Every call in the next 4 s is refused, without Retry-After. Left alone, Claude Code (two
    // retries here, ten by default) retries after 0.5 s and 1 s: three refused calls per agent,
    // then a failed step. The runner stops each agent at its first retry notice and waits out
    // the provider's cooldown (5 s without Retry-After) once for all eight.
    world.claude.limit_for(
        Duration::from_secs(4),
        Reply::error(429, "Number of requests has exceeded your rate limit"),
    );
    let steps: String = (1..=8)
        .map(|i| format!("  - {{agent: claude, task: 'part {i}'}}\n"))
        .collect();
    let group = write(
        &world.scratch.work().join("fan.yaml"),
        &format!("mode: parallel\nsteps:\n{steps}"),
    );
    let started = Instant::now();
    let (id, stdout) = world.run_ok(&["--chain", &group.to_string_lossy()]);
    // One answered call per agent, and one refused call — two when Claude Code's first retry,
    // 0.5 s after the refusal, went out before the stop reached it — against three refused
    // calls and a failed step per agent left alone.
    let refused = world.claude.refused();
    assert!((8..16).contains(&refused), "{refused} refused calls");
    assert_eq!(
        world.claude.main_requests().len(),
        refused + 8,
        "{}",
        world.claude.dump()
    );
    assert_eq!(stdout.matches("ok").count(), 8, "{stdout}");
    assert!(
        started.elapsed() >= Duration::from_secs(5),
        "the cooldown was waited for"
    );
    // The same model every time: no switching.
    let models: std::collections::BTreeSet<String> = world
        .claude
        .main_requests()
        .iter()
        .filter_map(|r| r.model().map(str::to_owned))
        .collect();
    assert_eq!(models.len(), 1, "{models:?}");

    let result = world.result(&id);
    for step in result["steps"].as_array().unwrap() {
        let attempts = step["rateLimits"].as_array().unwrap_or_else(|| panic!("{step}"));
        assert_eq!(attempts.len(), 1, "{step}");
        let attempt = &attempts[0];
        assert_eq!(attempt["attempt"], 1, "{attempt}");
        assert_eq!(attempt["status"], 429, "{attempt}");
        assert_eq!(attempt["provider"], "anthropic", "{attempt}");
        assert_eq!(attempt["retried"], true, "{attempt}");
        assert_eq!(attempt["worked"], false, "{attempt}");
        let waited = attempt["cooldownUntil"].as_u64().unwrap() - attempt["endedAt"].as_u64().unwrap();
        assert!(waited <= 6000, "{attempt}");
        assert_eq!(step["success"], true, "{step}");
    }
    // One cooldown for the eight refusals: seen together, they are one strike.
    let cooldown = cooldown(&world, "anthropic").expect("the cooldown is recorded");
    assert_eq!(cooldown["strikes"], 1, "{cooldown}");
    assert_eq!(cooldown["status"], 429, "{cooldown}");
}

#[test]
fn retry_after_is_honoured_through_claude_codes_own_retry_delay() {
    let world = world("rl-retry-after");
    // Longer than the 5 s default: the cooldown follows what the provider asked for.
    world
        .claude
        .limit_for(Duration::from_secs(1), Reply::error(429, "slow down").retry_after(7));
    let (id, stdout) = world.run_ok(&["--agent", "claude", "--task", "once"]);
    assert_eq!(stdout, "ok\n");
    let attempt = world.result(&id)["steps"][0]["rateLimits"][0].clone();
    assert!(attempt["retryAfterMs"].as_u64().unwrap() >= 7000, "{attempt}");
    let since = cooldown(&world, "anthropic").unwrap()["since"].as_u64().unwrap();
    let until = attempt["cooldownUntil"].as_u64().unwrap();
    assert!(until - since >= 7000, "{attempt}");
    assert_eq!(world.claude.refused(), 1);
    assert_eq!(world.claude.main_requests().len(), 2);
}

#[test]
fn a_launch_while_its_provider_cools_down_waits_queued_with_the_reason() {
    let world = world("rl-queue");
    // Codex shows no Retry-After: the cooldown is the default 5 s.
    world.codex.limit_for(
        Duration::from_millis(1500),
        Reply::error(429, "Rate limit reached for requests"),
    );
    let first = launched(&world, "first");
    wait_for("the cooldown", Duration::from_secs(60), || cooldown(&world, "openai"));
    let second = launched(&world, "second");
    let status: Value = serde_json::from_str(&ok(&world.sublaunch(&["status", &second, "--json"]))).unwrap();
    assert_eq!(status["state"], "queued", "{status}");
    assert_eq!(status["waiting"]["kind"], "rate-limit", "{status}");
    assert_eq!(status["waiting"]["reason"], "rate limit: openai (HTTP 429)", "{status}");
    assert!(status["waiting"]["until"].as_u64().is_some(), "{status}");
    let listed = ok(&world.sublaunch(&["list"]));
    let line = listed.lines().find(|l| l.starts_with(&second)).unwrap();
    assert!(line.contains("queued (rate limit: openai (HTTP 429), "), "{listed}");
    assert!(line.contains("s left)"), "{listed}");
    let described = ok(&world.sublaunch(&["status", &second]));
    assert!(
        described.contains("waiting  for rate limit: openai (HTTP 429) until "),
        "{described}"
    );
    let listed: Value = serde_json::from_str(&ok(&world.sublaunch(&["list", "--json"]))).unwrap();
    let view = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["runId"] == second.as_str())
        .unwrap();
    assert_eq!(view["waiting"]["reason"], "rate limit: openai (HTTP 429)", "{view}");

    let waited = world.sublaunch(&["wait", &first, &second, "--json"]);
    ok(&waited);
    for id in [&first, &second] {
        let result = world.result(id);
        assert_eq!(result["success"], true, "{result}");
    }
    let attempts = world.result(&first)["steps"][0]["rateLimits"].clone();
    assert_eq!(attempts[0]["status"], 429, "{attempts}");
    assert_eq!(attempts[0]["retried"], true, "{attempts}");
    // The queued run never met the limit, and its wait is over.
    assert_eq!(world.result(&second)["steps"][0]["rateLimits"], Value::Null);
    let status: Value = serde_json::from_str(&ok(&world.sublaunch(&["status", &second, "--json"]))).unwrap();
    assert_eq!(status["waiting"], Value::Null, "{status}");
    // Codex retries by itself; stopped at its first notice, it made at most two refused calls
    // (its one HTTP retry) before the cooldown.
    assert!(world.codex.refused() <= 2, "{}", world.codex.refused());
}

#[test]
fn pi_is_recognised_and_a_limit_that_never_lifts_fails_the_step_after_its_retries() {
    let world = world("rl-pi");
    world.pi.limit_for(
        Duration::from_secs(600),
        Reply::error(429, "Too many requests, slow down").retry_after(1),
    );
    let output = world.run(&["--agent", "pi", "--model", "fake/fake-model", "--task", "never"]);
    assert_eq!(output.status.code(), Some(11), "{}", text(&output.stderr));
    let result = world.result(&run_id(&output));
    assert_eq!(result["failureKind"], "rate-limited", "{result}");
    let step = &result["steps"][0];
    let attempts = step["rateLimits"].as_array().unwrap_or_else(|| panic!("{step}"));
    // The default: run twice more, then give up.
    let retried: Vec<bool> = attempts.iter().map(|a| a["retried"].as_bool().unwrap()).collect();
    assert_eq!(retried, [true, true, false], "{step}");
    assert!(attempts.iter().all(|a| a["status"] == 429), "{step}");
    let error = step["error"].as_str().unwrap();
    assert!(
        error.starts_with("Rate limited: the provider refused the agent's calls (HTTP 429) on all 3 attempts"),
        "{error}"
    );
    assert!(error.contains("Too many requests, slow down"), "{error}");
    // Repeats back off: the third attempt's cooldown was longer than the first's.
    let waits: Vec<u64> = attempts
        .iter()
        .map(|a| a["cooldownUntil"].as_u64().unwrap() - a["endedAt"].as_u64().unwrap())
        .collect();
    assert!(waits[2] > waits[0], "{waits:?}");
    assert!(cooldown(&world, "fake").unwrap()["strikes"].as_u64().unwrap() >= 2);
    // pi retries by itself too; stopped at the refusal, about one call per attempt.
    assert!(world.pi.refused() <= 6, "{}", world.pi.refused());

    // A step may ask for fewer retries: with none, its first refusal ends it.
    let chain = write(
        &world.scratch.work().join("no-retry.yaml"),
        "steps:\n  - {agent: pi, model: fake/fake-model, task: once, retry: {rateLimit: 0}}\n",
    );
    let output = world.run(&["--chain", &chain.to_string_lossy()]);
    assert_eq!(output.status.code(), Some(11), "{}", text(&output.stderr));
    let step = &world.result(&run_id(&output))["steps"][0];
    let retried: Vec<&Value> = step["rateLimits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["retried"])
        .collect();
    assert_eq!(retried, [&Value::Bool(false)], "{step}");
}
