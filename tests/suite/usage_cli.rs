//! `sublaunch usage` (U1, U2, U3, U4): the usage ledger fed by the real CLIs behind the fake model server, summed
//! by agent, provider, model, run and day; an unreported cost shown as unknown; what was spent
//! still counted after its runs are pruned; a ledger cut short by a power loss still read.

use crate::real_cli_runs::World;
use serde_json::Value;
use sublaunch_tests::cli::{ok, text};
use sublaunch_tests::model_server::Reply;
use sublaunch_tests::real_agents::PiApi;

fn usage_json(world: &World, args: &[&str]) -> Value {
    let mut all = vec!["usage", "--json"];
    all.extend_from_slice(args);
    let output = world.sublaunch(&all);
    serde_json::from_str(&ok(&output)).unwrap_or_else(|e| panic!("{e}: {}", text(&output.stderr)))
}

fn group<'a>(summary: &'a Value, key: &str) -> &'a Value {
    summary["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == key)
        .unwrap_or_else(|| panic!("no group {key} in {summary}"))
}

#[test]
fn the_ledger_sums_what_each_cli_reported_and_outlives_its_runs() {
    let world = World::with_pi_api("usage-ledger", PiApi::OpenAiCompletions);
    world.claude.reply(Reply::text("alpha").usage(100, 20, 30, 40));
    world.codex.reply(Reply::text("beta").usage(50, 10, 0, 0));
    world.pi.reply(Reply::text("gamma").usage(7, 3, 0, 0));
    let chain = sublaunch_tests::cli::write(
        &world.scratch.work().join("chain.yaml"),
        "steps:\n  - {agent: claude, task: 'one {task}'}\n  - {agent: codex, task: 'two {previous}'}\n  - {agent: pi, model: fake/fake-model, task: 'three {previous}'}\n",
    );
    let (id, _) = world.run_ok(&["--chain", &chain.to_string_lossy(), "--task", "x"]);
    let result = world.result(&id);
    let reported = |i: usize| result["steps"][i]["usage"].clone();

    let by_agent = usage_json(&world, &["--by", "agent"]);
    for (i, agent) in ["claude", "codex", "pi"].into_iter().enumerate() {
        let g = group(&by_agent, agent);
        let step = reported(i);
        assert_eq!(g["steps"], 1, "{g}");
        for field in ["inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens"] {
            assert_eq!(g[field], step[field], "{agent} {field}: {g} vs {step}");
        }
        assert_eq!(g["costUsd"], step["costUsd"], "{agent}: {g} vs {step}");
    }
    // Codex reports no cost: unknown, never zero; its tokens are still counted.
    assert_eq!(group(&by_agent, "codex")["costUsd"], Value::Null);
    assert_eq!(group(&by_agent, "codex")["stepsWithoutCost"], 1);
    assert_eq!(by_agent["total"]["steps"], 3);
    assert_eq!(by_agent["total"]["stepsWithoutCost"], 1);

    let by_provider = usage_json(&world, &["--by", "provider"]);
    let providers: Vec<&str> = by_provider["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert_eq!(providers, ["anthropic", "fake", "openai"], "{by_provider}");
    let by_run = usage_json(&world, &["--by", "run"]);
    assert_eq!(group(&by_run, &id)["steps"], 3, "{by_run}");

    // The table says the same in words, with the day's bar.
    let table = ok(&world.sublaunch(&["usage", "--by", "agent"]));
    let codex_line = table.lines().find(|l| l.starts_with("codex")).unwrap();
    assert!(codex_line.contains("unknown"), "{table}");
    assert!(table.lines().last().unwrap().contains("+ unknown"), "{table}");
    let by_day = ok(&world.sublaunch(&["usage"]));
    assert!(by_day.contains('█'), "{by_day}");

    // The MCP tool answers the same totals.
    let mut session = sublaunch_tests::mcp_session::Session::start(&world.scratch);
    let answer = session.request(
        "tools/call",
        serde_json::json!({"name": "usage", "arguments": {"by": "agent"}}),
    );
    // MCP answers leave nulls out: an unknown cost is an absent `costUsd` there.
    let mut without_nulls = by_agent.clone();
    for g in without_nulls["groups"].as_array_mut().unwrap() {
        g.as_object_mut().unwrap().retain(|_, v| !v.is_null());
    }
    assert_eq!(answer["result"]["structuredContent"], without_nulls, "{answer}");
    let refused = session.request(
        "tools/call",
        serde_json::json!({"name": "usage", "arguments": {"by": "colour"}}),
    );
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(refused.to_string().contains("colour is not a grouping"), "{refused}");

    // Pruned runs keep counting.
    ok(&world.sublaunch(&["prune", "--yes"]));
    assert_eq!(usage_json(&world, &["--by", "agent"]), by_agent);
    // A period before the run holds nothing.
    let before = usage_json(&world, &["--until", "2000-01-01"]);
    assert_eq!(before["total"]["steps"], 0, "{before}");
}

#[test]
fn a_ledger_line_cut_short_is_left_out_and_the_next_entries_count() {
    let world = World::with_pi_api("usage-torn", PiApi::OpenAiCompletions);
    world.pi.reply(Reply::text("a").usage(10, 1, 0, 0));
    world.run_ok(&["--agent", "pi", "--model", "fake/fake-model", "--task", "one"]);
    let dir = world.scratch.root().join("usage");
    let file = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
    let whole = std::fs::read(&file).unwrap();
    // A power loss mid-append: half a line, no newline.
    std::fs::write(&file, [&whole[..], &whole[..whole.len() / 2]].concat()).unwrap();
    world.pi.reply(Reply::text("b").usage(20, 2, 0, 0));
    world.run_ok(&["--agent", "pi", "--model", "fake/fake-model", "--task", "two"]);
    let output = world.sublaunch(&["usage", "--json", "--by", "agent"]);
    let summary: Value = serde_json::from_str(&ok(&output)).unwrap();
    assert_eq!(group(&summary, "pi")["steps"], 2, "{summary}");
    assert_eq!(group(&summary, "pi")["inputTokens"], 30, "{summary}");
    assert_eq!(summary["damaged"], 1);
    assert!(
        text(&output.stderr).contains("1 damaged ledger line"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn what_a_running_step_reported_is_in_the_ledger_before_it_ends() {
    // U1: pi's first call is reported, then its tool runs for 30 s: the call's usage is in the
    // ledger while the step still runs, and stays once the run is stopped.
    let world = World::with_pi_api("usage-live", PiApi::AnthropicMessages);
    world
        .pi
        .replies([Reply::tool_call("bash", serde_json::json!({"command": "sleep 30"})).usage(500, 20, 0, 0)]);
    let output = world.sublaunch(&["run", "--agent", "pi", "--model", "fake/fake-model", "--task", "work"]);
    let id = ok(&output).lines().next().unwrap().trim().to_owned();
    let by_run = |world: &World| usage_json(world, &["--by", "run"]);
    let seen = sublaunch_tests::launch_harness::wait_for(
        "the call's usage in the ledger",
        std::time::Duration::from_secs(60),
        || {
            let summary = by_run(&world);
            summary["groups"]
                .as_array()
                .unwrap()
                .iter()
                .find(|g| g["key"] == id.as_str() && g["inputTokens"] == 500)
                .cloned()
        },
    );
    // Recorded as reported: no step has ended yet.
    assert_eq!(seen["steps"], 0, "{seen}");
    let status = sublaunch_tests::launch_harness::status(&world.scratch.run_dir(&id)).unwrap();
    assert_eq!(status["state"], "running", "{status}");
    ok(&world.sublaunch(&["stop", &id]));
    // A stopped run's `wait` exits 1: it ended, not complete.
    let _ = world.sublaunch(&["wait", &id]);
    let group = by_run(&world)["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == id.as_str())
        .cloned()
        .unwrap();
    // The step's end adds what is left, nothing twice, and counts the step once.
    assert_eq!(
        (group["inputTokens"].clone(), group["steps"].clone()),
        (500.into(), 1.into()),
        "{group}"
    );
}
