use super::*;
use crate::inputs::agents::{AgentSource, RunnerSpec};
use crate::launch::options::Caller;
use serde_json::json;
use sublaunch_contract::{Agent, LooseString, ThinkingLevel};
use sublaunch_protocol::records::config::RevivalLease;

fn step(agent: &str, task: &str) -> PlanStep {
    PlanStep::local(agent, task, "/w")
}

fn agent(name: &str, adapter: AdapterId, command: Option<Vec<&str>>) -> AgentDef {
    let runner = RunnerSpec {
        adapter,
        command: command.map(|c| c.into_iter().map(str::to_owned).collect()),
    };
    AgentDef {
        planner: Agent {
            name: name.into(),
            runner: runner.planner_runner(),
            ..Agent::default()
        },
        description: String::new(),
        system_prompt: "Be brief.\n".into(),
        runner,
        worktree: false,
        source: AgentSource::BuiltIn,
    }
}

fn launch(plan: &LaunchPlan, agents: Vec<AgentDef>) -> Launch {
    Launch {
        agents,
        ..Launch::new(plan.clone())
    }
}

fn plan(steps: Vec<PlanStep>) -> LaunchPlan {
    LaunchPlan {
        steps,
        graph: None,
        warnings: vec![],
        usage_budget: None,
        reviewers: vec![],
    }
}

#[test]
fn the_mode_is_the_requests_even_for_a_chain_holding_a_group() {
    use sublaunch_contract::{Graph, GraphNode, GraphStep};
    let node = |agent: &str| GraphNode {
        agent: agent.into(),
        output_schema: None,
        structured: false,
    };
    let with_graph = |steps: Vec<GraphStep>| LaunchPlan {
        graph: Some(Graph { steps }),
        ..plan(vec![step("shell", "a"), step("shell", "b")])
    };
    let chain = with_graph(vec![
        GraphStep::Sequential(node("shell")),
        GraphStep::Parallel(vec![node("shell"), node("shell")]),
    ]);
    assert_eq!(plan_mode(&chain), "chain", "a chain with a group is a chain");
    let one = with_graph(vec![GraphStep::Sequential(node("shell"))]);
    assert_eq!(
        plan_mode(&LaunchPlan {
            steps: vec![step("shell", "a")],
            ..one
        }),
        "chain"
    );
    let group = with_graph(vec![GraphStep::Parallel(vec![node("shell"), node("shell")])]);
    assert_eq!(plan_mode(&group), "parallel");
    assert_eq!(plan_mode(&plan(vec![step("shell", "a"), step("shell", "b")])), "chain");
}

#[test]
fn h5_shell_steps_run_sh_c_in_the_step_cwd() {
    let shell = crate::inputs::agents::builtins()
        .into_iter()
        .find(|a| a.name() == "shell")
        .unwrap();
    let plan = plan(vec![step("shell", "echo hi")]);
    let steps = runner_steps(
        &launch(&plan, vec![shell]),
        &crate::Environment::default(),
        Path::new("/r"),
        "/w",
    )
    .unwrap();
    // The shim builds `sh -c -- <task>` from the adapter; no legacy command is written (host
    // and shim ship together, and the configuration's version says so).
    assert!(steps[0].command.is_none());
    assert_eq!(steps[0].task.as_deref(), Some("echo hi"));
    assert_eq!(steps[0].adapter.clone().unwrap().id, AdapterId::Shell);
    assert_eq!((steps[0].step_index, steps[0].task_index), (Some(0), None));
    assert_eq!(plan_mode(&plan), "single");
    let error = runner_steps(
        &launch(&plan, vec![]),
        &crate::Environment::default(),
        Path::new("/r"),
        "/w",
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("not known to the launcher"), "{error}");
}

#[test]
fn pi_steps_carry_model_thinking_prompt_tools_and_the_model_check() {
    let mut s = step("scout", "map it");
    s.model = Some("anthropic/claude-haiku-4-5:low".into());
    s.model_origin = Some(ModelOrigin::Configured);
    s.thinking = Some(ThinkingLevel::Low);
    s.step_index = 1;
    s.task_index = Some(2);
    s.structured = true;
    s.output_schema = Some(r#"{"type":"object"}"#.into());
    let mut permissions = sublaunch_contract::ResolvedPermissions::adapter_default(AdapterId::Pi);
    permissions.tools = Some(vec!["read".into(), "grep".into()]);
    s.permissions = Some(permissions.clone());
    let pi = agent("scout", AdapterId::Pi, None);
    let table = AliasTable::parse(&json!({"anthropic/claude-haiku-4-5": ["haiku-2025"]}), "a").unwrap();
    let config = step_config(0, &s, Some(&pi), &table).unwrap();
    let spec = config.adapter.clone().unwrap();
    assert_eq!(spec.id, AdapterId::Pi);
    assert_eq!(spec.model.as_deref(), Some("anthropic/claude-haiku-4-5"));
    assert_eq!(spec.thinking.as_deref(), Some("low"));
    assert_eq!(spec.system_prompt.as_deref(), Some("Be brief.\n"));
    assert_eq!(
        spec.permissions,
        Some(permissions),
        "the plan's resolved permissions (G6)"
    );
    assert_eq!(config.command, None);
    assert_eq!((config.step_index, config.task_index), (Some(1), Some(2)));
    assert!(config.structured);
    assert_eq!(config.output_schema.clone(), Some(json!({"type": "object"})));
    assert_eq!(
        config.model_check.clone(),
        Some(ModelCheck {
            planned: "anthropic/claude-haiku-4-5".into(),
            id: Some("claude-haiku-4-5".into()),
            aliases: vec!["haiku-2025".into()],
        })
    );
    s.model_origin = Some(ModelOrigin::Inherited);
    let inherited = step_config(0, &s, Some(&pi), &table).unwrap();
    assert_eq!(
        inherited.model_check.clone(),
        None,
        "a parent's model is taken as given"
    );
}

#[test]
fn external_adapters_get_their_program_and_the_agent_files_own_model() {
    let mut claude = agent("c", AdapterId::ClaudeCodeWriter, Some(vec!["/opt/claude"]));
    claude.planner.model = Some(LooseString::Text("opus".into()));
    let config = step_config(0, &step("c", "t"), Some(&claude), &AliasTable::default()).unwrap();
    let spec = config.adapter.clone().unwrap();
    assert_eq!(
        (spec.id.id(), spec.program.as_deref(), spec.model.as_deref()),
        ("claude-code-writer", Some("/opt/claude"), Some("opus"))
    );
    assert_eq!(config.model_check.clone(), None);
    let generic = agent("g", AdapterId::GenericCli, Some(vec!["tool", "--flag"]));
    let spec = step_config(0, &step("g", "t"), Some(&generic), &AliasTable::default())
        .unwrap()
        .adapter
        .unwrap();
    assert_eq!(
        (spec.id.id(), spec.argv.unwrap()),
        ("external-cli", vec!["tool".to_owned(), "--flag".into()])
    );
    let job = agent("j", AdapterId::ExternalJob, None);
    assert!(step_config(0, &step("j", "t"), Some(&job), &AliasTable::default()).is_err());
}

#[test]
fn h4_fresh_launches_get_a_barrier_token_revivals_do_not() {
    let workflow = WorkflowOptions {
        concurrency: Some(2),
        fail_fast: true,
        task: Some("the run's task".into()),
    };
    let (fresh_caller, revival) = (
        Caller::default(),
        Caller {
            revival_lease: Some(RevivalLease {
                session_file: "/s".into(),
                run_id: String::new(),
                source_run_id: "src".into(),
                parent_session_id: None,
            }),
            ..Caller::default()
        },
    );
    let launch = |caller: &Caller| Launch {
        caller: caller.clone(),
        workflow: workflow.clone(),
        project_config: sublaunch_protocol::records::config::ProjectConfig::Ignore,
        ..Launch::new(plan(vec![]))
    };
    let (fresh_launch, revival_launch) = (launch(&fresh_caller), launch(&revival));
    let inputs = |launch| ConfigInputs {
        launch,
        run_id: "r-1",
        runner_process_instance_id: "uuid",
        steps: vec![],
        result_path: "/r/results/r-1.json".into(),
        cwd: "/w".into(),
        async_dir: "/r/runs/r-1".into(),
        agent_umask: Some(0o022),
        cluster: None,
    };
    let fresh = runner_config(inputs(&fresh_launch));
    assert_eq!(fresh.launch_barrier_token.as_deref(), Some("uuid"));
    assert_eq!(fresh.workflow.concurrency, Some(2));
    assert!(fresh.workflow.fail_fast);
    assert_eq!(fresh.workflow.task.as_deref(), Some("the run's task"));
    let config = runner_config(inputs(&revival_launch));
    assert_eq!(config.launch_barrier_token, None);
    assert_eq!(config.revival_lease.unwrap().run_id, "r-1");
}
