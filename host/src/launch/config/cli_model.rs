//! The model and thinking level of an agent run by a coding-agent CLI (Claude Code, Codex,
//! Cursor's agent), as that CLI names them. These agents take no part in planning (their
//! `model:` and `thinking:` are their own, M19), so the frontmatter is read here: a provider
//! prefix (`anthropic/…`) and a thinking suffix (`…:high`) are never handed to an API
//! verbatim — they are mapped to the CLI's own options, or the launch is refused before
//! anything is paid for.

use crate::inputs::agents::{AdapterId, AgentDef};
use sublaunch_contract::{LooseString, ThinkingLevel, ThinkingSetting};

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

/// The CLI model of `agent`, run by `adapter`; an error says what the agent file asks that
/// the CLI cannot take.
pub fn cli_model(adapter: AdapterId, agent: &AgentDef) -> Result<CliModel, CliModelError> {
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
    let (provider, id) = match model {
        Some(model) => match model.split_once('/') {
            Some((provider, id)) if !provider.is_empty() && !id.is_empty() => (Some(provider), Some(id)),
            _ => (None, Some(model)),
        },
        None => (None, None),
    };
    let cli = match adapter {
        AdapterId::ClaudeCode | AdapterId::ClaudeCodeWriter => {
            if let Some(provider) = provider.filter(|p| *p != "anthropic") {
                return Err(CliModelError::NotAnthropic {
                    agent: name.to_owned(),
                    provider: provider.to_owned(),
                });
            }
            CliModel {
                model: id.map(str::to_owned),
                provider: None,
                thinking,
            }
        }
        AdapterId::CodexExec | AdapterId::CodexExecWriter => CliModel {
            model: id.map(str::to_owned),
            // `openai` is Codex's built-in provider; any other names a `model_providers` entry.
            provider: provider.filter(|p| *p != "openai").map(str::to_owned),
            thinking,
        },
        AdapterId::CursorAgent | AdapterId::CursorAgentWriter => {
            if let Some(provider) = provider {
                return Err(CliModelError::CursorProvider {
                    agent: name.to_owned(),
                    id: id.unwrap_or_default().to_owned(),
                    provider: provider.to_owned(),
                });
            }
            if let Some(level) = thinking.filter(|t| *t != ThinkingLevel::Off) {
                return Err(CliModelError::CursorThinking {
                    agent: name.to_owned(),
                    level,
                });
            }
            CliModel {
                model: id.map(str::to_owned),
                provider: None,
                thinking: None,
            }
        }
        _ => CliModel::default(),
    };
    Ok(cli)
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
        )
        .unwrap();
        assert_eq!(claude.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(claude.thinking, Some(ThinkingLevel::High));
        let codex = cli_model(AdapterId::CodexExec, &agent(Some("lab/gpt-5:low"), None)).unwrap();
        assert_eq!(
            (codex.model.as_deref(), codex.provider.as_deref()),
            (Some("gpt-5"), Some("lab"))
        );
        let openai = cli_model(AdapterId::CodexExec, &agent(Some("openai/gpt-5"), Some("medium"))).unwrap();
        assert_eq!((openai.provider, openai.thinking), (None, Some(ThinkingLevel::Medium)));
    }

    #[test]
    fn what_a_cli_cannot_take_is_refused_with_the_agent_named() {
        let wrong = cli_model(AdapterId::ClaudeCode, &agent(Some("openai/gpt-5"), None))
            .unwrap_err()
            .to_string();
        assert!(
            wrong.contains("agent 'a'") && wrong.contains("provider 'openai'"),
            "{wrong}"
        );
        let both = cli_model(AdapterId::ClaudeCode, &agent(Some("claude-x:high"), Some("low")))
            .unwrap_err()
            .to_string();
        assert!(both.contains("'high'") && both.contains("'low'"), "{both}");
        assert!(cli_model(AdapterId::CursorAgent, &agent(Some("gpt-5"), Some("high"))).is_err());
        assert!(cli_model(AdapterId::CursorAgent, &agent(Some("openai/gpt-5"), None)).is_err());
        assert!(cli_model(AdapterId::ClaudeCode, &agent(None, Some("hard"))).is_err());
    }
}
