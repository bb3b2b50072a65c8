//! A step's own model and thinking level for a coding-agent CLI (Claude Code, Codex, Cursor's
//! agent), when the runner hands them over (`launch.nativeModels`).
//!
//! These agents take no part in model planning (M19): the model is not looked up in the
//! registry, which lists the models pi knows, not the aliases and models each CLI knows. It is
//! checked against the providers the CLI runs, and the thinking level is mapped to one the CLI
//! has a name for: the nearest when it has no such level (the plan's warnings say so), a
//! refusal that says what to do when it takes none. The runner spells the level the CLI's way
//! (`AdapterId::launch_model`).

use crate::children::Child;
use crate::model::{ModelPlan, model_text};
use crate::thinking::{self, ThinkingValue};
use sublaunch_contract::{
    Agent, CliThinking, ErrorCode, LaunchModel, ModelOrigin, ModelProviders, PlanError, ThinkingLevel,
};

/// Plans the model and thinking level `child` gives its agent's CLI (`cli`): its model as
/// written (provider checked, thinking suffix split off) and the level the CLI will run with.
/// `ceiling` is the agent's effective thinking ceiling (T8), which a level must not exceed.
pub fn plan(
    child: &Child<'_>,
    agent: &Agent,
    cli: LaunchModel,
    ceiling: Option<ThinkingLevel>,
    warnings: &mut Vec<String>,
) -> Result<ModelPlan, PlanError> {
    let written = model_text(child.fields.model, || child.field_path("model"))?.filter(|m| !m.is_empty());
    let split = written.map(thinking::split_suffix);
    if let Some(base) = split.as_ref().map(|s| s.base) {
        check_provider(child, agent, cli, base)?;
    }
    let asked = match child.fields.thinking {
        Some(value) => match thinking::parse_thinking(value, || child.field_path("thinking"))? {
            ThinkingValue::Level(level) => Some(level),
            // `false` or "": no level of the step's own (the suffix goes too, T5).
            ThinkingValue::Disabled => None,
        },
        None => split.as_ref().and_then(|s| s.level),
    };
    let level = match asked {
        Some(level) => Some(cli_level(child, agent, cli, level, warnings)?),
        None => None,
    };
    thinking::check_ceiling(level, ceiling, &agent.name)?;
    Ok(ModelPlan {
        model: split.as_ref().map(|s| s.base.to_owned()),
        requested_model: written.map(str::to_owned),
        model_origin: written.map(|_| ModelOrigin::Explicit),
        thinking: level,
        ..ModelPlan::default()
    })
}

/// Refuses a model of a provider the CLI does not run, saying what it takes.
fn check_provider(child: &Child<'_>, agent: &Agent, cli: LaunchModel, model: &str) -> Result<(), PlanError> {
    let Err(wrong) = cli.model_name(model) else {
        return Ok(());
    };
    let (takes, instead) = match wrong.takes {
        ModelProviders::Only(only) => (
            format!("runs {only} models only"),
            format!(
                "name one of them ({only}/<model>, or a name {} knows), or give the task to an agent whose CLI runs {} models",
                cli.program, wrong.provider
            ),
        ),
        ModelProviders::Unnamed => {
            let bare = model.split_once('/').map_or(model, |(_, id)| id);
            (
                "names its models without a provider".to_owned(),
                format!("give '{bare}'"),
            )
        }
        // Every provider is taken.
        ModelProviders::Any { .. } => return Ok(()),
    };
    Err(PlanError::new(
        ErrorCode::RunnerOptionUnsupported,
        format!(
            "Agent '{}' ({}) runs {}, which {takes}, not '{model}' ({}; --model, or model: in a chain file): {instead}.",
            agent.name,
            child.position.describe(),
            cli.program,
            child.field_path("model"),
        ),
    ))
}

/// The level the CLI runs with for `level`: the same, or the nearest it has (with a warning);
/// a CLI that takes none refuses it.
fn cli_level(
    child: &Child<'_>,
    agent: &Agent,
    cli: LaunchModel,
    level: ThinkingLevel,
    warnings: &mut Vec<String>,
) -> Result<ThinkingLevel, PlanError> {
    match cli.thinking(level) {
        CliThinking::Exact(_) => Ok(level),
        CliThinking::Nearest(nearest, _) => {
            let has: Vec<&str> = cli.thinking_levels().into_iter().map(ThinkingLevel::name).collect();
            warnings.push(format!(
                "{} has no thinking level '{}' (it has {}): agent '{}' ({}) runs with the nearest, '{}'.",
                cli.program,
                level.name(),
                has.join(", "),
                agent.name,
                child.position.describe(),
                nearest.name(),
            ));
            Ok(nearest)
        }
        CliThinking::Unsupported => Err(PlanError::new(
            ErrorCode::RunnerOptionUnsupported,
            format!(
                "Agent '{}' ({}) runs {}, which takes no thinking level ({} is '{}'): drop it (--thinking, or thinking: in a chain file), and pick a model that thinks the way you want with --model instead.",
                agent.name,
                child.position.describe(),
                cli.program,
                child.field_path("thinking"),
                level.name(),
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::plan;
    use serde_json::{Value, json};
    use sublaunch_contract::{ErrorCode, LaunchPlan, ModelOrigin, PlanError, ThinkingLevel, parse_request};

    /// A single run of `agent` (claude, codex or cursor) with `step`'s fields, `nativeModels`
    /// as given.
    fn run(native_models: Option<bool>, step: Value) -> Result<LaunchPlan, PlanError> {
        let agent = |name: &str, adapter: &str| {
            json!({"name": name, "runner": {"type": "external-cli", "adapter": adapter},
                   "model": "anthropic/claude-opus-4-1", "thinking": "low"})
        };
        let mut step = step;
        step["task"] = json!("t");
        let request = json!({
            "cwd": "/code/repo", "mode": "single",
            "agents": [agent("claude", "claude-code"), agent("codex", "codex-exec"),
                       agent("cursor", "cursor-agent-writer")],
            "availableModels": [{"provider": "anthropic", "id": "claude-haiku-4-5"}],
            "thinkingCeiling": "xhigh",
            "launch": {"nativeModels": native_models},
            "steps": [step],
        });
        plan(&parse_request(request.to_string().as_bytes())?)
    }

    fn planned(step: Value) -> (Option<String>, Option<ThinkingLevel>, Vec<String>) {
        let plan = run(Some(true), step).expect("planned");
        let step = &plan.steps[0];
        (step.model.clone(), step.thinking, plan.warnings)
    }

    #[test]
    fn a_steps_model_and_thinking_reach_the_cli_unlooked_up_with_the_suffix_split_off() {
        let plan = run(
            Some(true),
            json!({"agent": "claude", "model": "anthropic/claude-sonnet-4-5:high"}),
        )
        .unwrap();
        let step = &plan.steps[0];
        assert_eq!(
            step.model.as_deref(),
            Some("anthropic/claude-sonnet-4-5"),
            "not in the registry, still taken"
        );
        assert_eq!(
            step.requested_model.as_deref(),
            Some("anthropic/claude-sonnet-4-5:high")
        );
        assert_eq!(step.model_origin, Some(ModelOrigin::Explicit));
        assert_eq!(step.thinking, Some(ThinkingLevel::High));
        assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
        // The step's thinking replaces the suffix; an alias the CLI knows is taken as written.
        assert_eq!(
            planned(json!({"agent": "claude", "model": "sonnet:high", "thinking": "medium"})),
            (Some("sonnet".into()), Some(ThinkingLevel::Medium), vec![])
        );
        assert_eq!(
            planned(json!({"agent": "codex", "thinking": "off"})),
            (None, Some(ThinkingLevel::Off), vec![]),
            "a level alone: the agent file's own model stays"
        );
        assert_eq!(
            planned(json!({"agent": "codex", "model": "lab/gpt-5"})),
            (Some("lab/gpt-5".into()), None, vec![]),
            "Codex runs any provider's models"
        );
    }

    #[test]
    fn a_level_the_cli_has_no_name_for_becomes_its_nearest_and_the_plan_says_so() {
        let (_, level, warnings) = planned(json!({"agent": "claude", "thinking": "minimal"}));
        assert_eq!(level, Some(ThinkingLevel::Low));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("Claude Code has no thinking level 'minimal'")
                && warnings[0].contains("the nearest, 'low'"),
            "{warnings:?}"
        );
        let (_, level, warnings) = planned(json!({"agent": "codex", "model": "openai/gpt-5-mini:max"}));
        assert_eq!(level, Some(ThinkingLevel::Xhigh));
        assert!(
            warnings[0].contains("Codex has no thinking level 'max'"),
            "{warnings:?}"
        );
    }

    #[test]
    fn what_a_cli_cannot_take_is_refused_saying_what_to_do() {
        let refused = |step: Value| run(Some(true), step).expect_err("refused");
        let error = refused(json!({"agent": "claude", "model": "openai/gpt-5"}));
        assert_eq!(error.code, ErrorCode::RunnerOptionUnsupported);
        assert!(
            error.message.contains("runs anthropic models only")
                && error.message.contains("'openai/gpt-5'")
                && error.message.contains("--model"),
            "{}",
            error.message
        );
        let error = refused(json!({"agent": "cursor", "thinking": "high"}));
        assert!(
            error.message.contains("takes no thinking level") && error.message.contains("--thinking"),
            "{}",
            error.message
        );
        let error = refused(json!({"agent": "cursor", "model": "openai/gpt-5"}));
        assert!(error.message.contains("give 'gpt-5'"), "{}", error.message);
        let error = refused(json!({"agent": "claude", "thinking": "max"}));
        assert_eq!(error.code, ErrorCode::ThinkingAboveCeiling, "{}", error.message);
        let error = refused(json!({"agent": "claude", "thinking": "hard"}));
        assert_eq!(error.code, ErrorCode::InvalidThinkingLevel);
    }

    #[test]
    fn without_the_runners_word_a_steps_model_is_still_an_external_runners_option() {
        for flag in [None, Some(false)] {
            let error = run(flag, json!({"agent": "claude", "model": "anthropic/claude-sonnet-4-5"}))
                .expect_err("M19 without nativeModels");
            assert_eq!(error.code, ErrorCode::RunnerOptionUnsupported);
            assert!(
                error.message.contains("model override") && error.message.contains("model:"),
                "the refusal says what to do: {}",
                error.message
            );
        }
        let plan = run(None, json!({"agent": "claude"})).unwrap();
        assert_eq!(
            (plan.steps[0].model.as_deref(), plan.steps[0].thinking),
            (None, None),
            "the agent file's own model is not planned (M19)"
        );
    }
}
