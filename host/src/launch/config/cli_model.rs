//! The model and thinking level of an agent run by a coding-agent CLI (Claude Code, Codex,
//! Cursor's agent), as that CLI names them. These agents take no part in planning (their
//! `model:` and `thinking:` are their own, M19), so the frontmatter is read here: a provider
//! prefix (`anthropic/…`) and a thinking suffix (`…:high`) are never handed to an API
//! verbatim — they are mapped to the CLI's own options, or the launch is refused before
//! anything is paid for. A step's own model and level (`run --model`, `--thinking`, a chain
//! step's `model:`) replace the file's; the planner has already checked and mapped them. The
//! CLIs' names for models and levels are the adapter table's (`AdapterId::launch_model`).

use crate::inputs::agents::{AdapterId, AgentDef};
use sublaunch_contract::{CliThinking, LooseString, ModelProviders, PlanStep, ThinkingLevel, ThinkingSetting};

/// What reaches the CLI.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CliModel {
    /// The model as the CLI names it (`claude-sonnet-4-5`, `gpt-5-codex`).
    pub model: Option<String>,
    /// The model provider the CLI should use, for CLIs that have several (Codex's
    /// `model_providers`).
    pub provider: Option<String>,
    /// The thinking level (the shim maps it to the CLI's option).
    pub thinking: Option<ThinkingLevel>,
}

/// What an agent file asks that its CLI cannot take.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CliModelError {
    /// `model:` is not text (the JSON given).
    #[error("agent '{agent}' has a model that is not text: {json}")]
    ModelNotText {
        /// The agent.
        agent: String,
        /// What its file has.
        json: String,
    },
    /// `thinking:` names no level.
    #[error("agent '{agent}' has thinking '{text}'; use one of off, minimal, low, medium, high, xhigh, max")]
    UnknownThinking {
        /// The agent.
        agent: String,
        /// What its file has.
        text: String,
    },
    /// `thinking:` is not text (the JSON given).
    #[error("agent '{agent}' has a thinking level that is not text: {json}")]
    ThinkingNotText {
        /// The agent.
        agent: String,
        /// What its file has.
        json: String,
    },
    /// The model's suffix and `thinking:` name different levels.
    #[error("agent '{agent}' asks for thinking '{}' in its model and '{}' in its thinking field; keep one", .suffix.name(), .field.name())]
    TwoThinkingLevels {
        /// The agent.
        agent: String,
        /// The level of the model's suffix.
        suffix: ThinkingLevel,
        /// The level of `thinking:`.
        field: ThinkingLevel,
    },
    /// Claude Code is given another provider's model.
    #[error(
        "agent '{agent}' runs Claude Code, which takes Anthropic models only, but its model names provider '{provider}'"
    )]
    NotAnthropic {
        /// The agent.
        agent: String,
        /// The provider named.
        provider: String,
    },
    /// Cursor's agent is given a provider.
    #[error("agent '{agent}' runs Cursor's agent, which names models without a provider ('{id}'), not '{provider}/…'")]
    CursorProvider {
        /// The agent.
        agent: String,
        /// The model id.
        id: String,
        /// The provider named.
        provider: String,
    },
    /// Cursor's agent is given a thinking level.
    #[error(
        "agent '{agent}' asks for thinking '{}', but Cursor's agent takes no thinking level (pick a thinking variant of the model instead)",
        .level.name()
    )]
    CursorThinking {
        /// The agent.
        agent: String,
        /// The level asked for.
        level: ThinkingLevel,
    },
}

/// The CLI model of a step of `agent`, run by `adapter`: the step's own model and thinking
/// level (which the planner checked and mapped) where it has them, else the agent file's; an
/// error says what the agent file asks that the CLI cannot take.
pub fn cli_model(adapter: AdapterId, agent: &AgentDef, step: &PlanStep) -> Result<CliModel, CliModelError> {
    let name = agent.name();
    let Some(cli) = adapter.launch_model() else {
        return Ok(CliModel::default());
    };
    let (file_model, file_thinking) = agent_file_model(agent)?;
    let model = step.model.as_deref().or(file_model);
    let thinking = step.thinking.or(file_thinking);
    let named = match model {
        Some(model) => Some(cli.model_name(model).map_err(|wrong| match wrong.takes {
            ModelProviders::Unnamed => CliModelError::CursorProvider {
                agent: name.to_owned(),
                id: model.split_once('/').map_or(model, |(_, id)| id).to_owned(),
                provider: wrong.provider.to_owned(),
            },
            _ => CliModelError::NotAnthropic {
                agent: name.to_owned(),
                provider: wrong.provider.to_owned(),
            },
        })?),
        None => None,
    };
    // A level the CLI has no name for runs as its nearest (the planner warned of a step's own).
    let thinking = match thinking.map(|level| (level, cli.thinking(level))) {
        None => None,
        Some((level, CliThinking::Exact(_))) => Some(level),
        Some((_, CliThinking::Nearest(nearest, _))) => Some(nearest),
        // No thinking is what a CLI without thinking levels does anyway.
        Some((ThinkingLevel::Off, CliThinking::Unsupported)) => None,
        Some((level, CliThinking::Unsupported)) => {
            return Err(CliModelError::CursorThinking {
                agent: name.to_owned(),
                level,
            });
        }
    };
    Ok(CliModel {
        model: named.map(|n| n.model.to_owned()),
        provider: named.and_then(|n| n.provider).map(str::to_owned),
        thinking,
    })
}

/// The agent file's own `model:` (without its thinking suffix) and thinking level (the
/// suffix's or `thinking:`'s, which must agree).
fn agent_file_model(agent: &AgentDef) -> Result<(Option<&str>, Option<ThinkingLevel>), CliModelError> {
    let name = agent.name();
    let written = match &agent.planner.model {
        Some(LooseString::Text(text)) if !text.trim().is_empty() => Some(text.trim()),
        Some(LooseString::NotText(json)) => {
            return Err(CliModelError::ModelNotText {
                agent: name.to_owned(),
                json: json.clone(),
            });
        }
        _ => None,
    };
    let field = match &agent.planner.thinking {
        None => None,
        Some(ThinkingSetting::Disabled) => Some(ThinkingLevel::Off),
        Some(ThinkingSetting::Text(text)) if text.trim().is_empty() => None,
        Some(ThinkingSetting::Text(text)) => {
            Some(
                ThinkingLevel::from_name(text.trim()).ok_or_else(|| CliModelError::UnknownThinking {
                    agent: name.to_owned(),
                    text: text.clone(),
                })?,
            )
        }
        Some(ThinkingSetting::Invalid(json)) => {
            return Err(CliModelError::ThinkingNotText {
                agent: name.to_owned(),
                json: json.to_string(),
            });
        }
    };
    let (model, suffix) = match written {
        Some(model) => split_suffix(model),
        None => (None, None),
    };
    let thinking = match (suffix, field) {
        (Some(a), Some(b)) if a != b => {
            return Err(CliModelError::TwoThinkingLevels {
                agent: name.to_owned(),
                suffix: a,
                field: b,
            });
        }
        (a, b) => a.or(b),
    };
    Ok((model, thinking))
}

/// `model:level` → the model and the level (a suffix that is no level stays in the model).
fn split_suffix(model: &str) -> (Option<&str>, Option<ThinkingLevel>) {
    match model.rsplit_once(':') {
        Some((base, level)) if !base.is_empty() => match ThinkingLevel::from_name(level) {
            Some(level) => (Some(base), Some(level)),
            None => (Some(model), None),
        },
        _ => (Some(model), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step with none of its own.
    fn step() -> PlanStep {
        PlanStep::local("a", "t", "/")
    }

    fn agent(model: Option<&str>, thinking: Option<&str>) -> AgentDef {
        let mut agent = crate::inputs::agents::builtins().remove(2);
        agent.planner.name = "a".into();
        agent.planner.model = model.map(|m| LooseString::Text(m.into()));
        agent.planner.thinking = thinking.map(|t| ThinkingSetting::Text(t.into()));
        agent
    }

    #[test]
    fn prefixes_and_suffixes_become_the_clis_own_options() {
        let claude = cli_model(
            AdapterId::ClaudeCode,
            &agent(Some("anthropic/claude-sonnet-4-5:high"), None),
            &step(),
        )
        .unwrap();
        assert_eq!(claude.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(claude.thinking, Some(ThinkingLevel::High));
        let codex = cli_model(AdapterId::CodexExec, &agent(Some("lab/gpt-5:low"), None), &step()).unwrap();
        assert_eq!(
            (codex.model.as_deref(), codex.provider.as_deref()),
            (Some("gpt-5"), Some("lab"))
        );
        let openai = cli_model(
            AdapterId::CodexExec,
            &agent(Some("openai/gpt-5"), Some("medium")),
            &step(),
        )
        .unwrap();
        assert_eq!((openai.provider, openai.thinking), (None, Some(ThinkingLevel::Medium)));
    }

    #[test]
    fn a_steps_own_model_and_level_replace_the_agent_files() {
        let mut own = step();
        own.model = Some("anthropic/claude-haiku-4-5".into());
        let claude = cli_model(AdapterId::ClaudeCode, &agent(Some("claude-x"), Some("high")), &own).unwrap();
        assert_eq!(
            (claude.model.as_deref(), claude.thinking),
            (Some("claude-haiku-4-5"), Some(ThinkingLevel::High)),
            "the step's model, the file's level"
        );
        own.thinking = Some(ThinkingLevel::Minimal);
        let claude = cli_model(AdapterId::ClaudeCode, &agent(None, Some("high")), &own).unwrap();
        assert_eq!(
            claude.thinking,
            Some(ThinkingLevel::Low),
            "Claude Code's nearest to minimal"
        );
        let codex = cli_model(AdapterId::CodexExec, &agent(Some("openai/gpt-5:max"), None), &step()).unwrap();
        assert_eq!(codex.thinking, Some(ThinkingLevel::Xhigh), "Codex's nearest to max");
    }

    #[test]
    fn what_a_cli_cannot_take_is_refused_with_the_agent_named() {
        let wrong = cli_model(AdapterId::ClaudeCode, &agent(Some("openai/gpt-5"), None), &step())
            .unwrap_err()
            .to_string();
        assert!(
            wrong.contains("agent 'a'") && wrong.contains("provider 'openai'"),
            "{wrong}"
        );
        let both = cli_model(
            AdapterId::ClaudeCode,
            &agent(Some("claude-x:high"), Some("low")),
            &step(),
        )
        .unwrap_err()
        .to_string();
        assert!(both.contains("'high'") && both.contains("'low'"), "{both}");
        assert!(cli_model(AdapterId::CursorAgent, &agent(Some("gpt-5"), Some("high")), &step()).is_err());
        assert!(cli_model(AdapterId::CursorAgent, &agent(Some("openai/gpt-5"), None), &step()).is_err());
        assert!(cli_model(AdapterId::ClaudeCode, &agent(None, Some("hard")), &step()).is_err());
    }
}
