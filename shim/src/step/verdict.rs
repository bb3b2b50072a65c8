//! Judging a finished agent's output (model verification and structured output): the adapter's own failure, pi's
//! model verification and the structured-output contract. Only an agent that ended well
//! (exit 0, no stop, timeout or protocol failure) is judged; the first refusal becomes the
//! step's [`StepEnd::validation`] and fails it.

use crate::adapter::Extracted;
use crate::step::end::StepEnd;
use crate::step::structured::StructuredError;
use serde_json::json;
use sublaunch_protocol::records::config::StepConfig;
use sublaunch_protocol::records::failure::FailureKind;
use sublaunch_protocol::records::status::{RunState, derive_terminal_state};

/// The failure of an agent drained (X5) without a clean final answer.
pub const DRAIN_FAILURE: &str =
    "Subagent process did not exit within 1000ms after its terminal event. Forcing termination.";

/// Records `extracted` into `end` and judges it against `step`'s contracts.
pub fn judge(end: &mut StepEnd, step: &StepConfig, extracted: Extracted) {
    end.output = extracted.output;
    end.output_truncated = extracted.truncated;
    end.reported_model = extracted.reported_model;
    end.usage = extracted.usage;
    end.agent_session = extracted.session;
    end.agent_session_usage = extracted.session_usage;
    if derive_terminal_state(&end.facts()) != RunState::Complete {
        // The agent's own account of why it failed explains its exit (Claude Code and Codex
        // exit 1 on API errors, with the reason in their output).
        end.agent_failure = extracted.failure;
        return;
    }
    let label = end.label();
    if let Some(failure) = extracted.failure {
        end.validation_kind = Some(FailureKind::AgentError);
        end.validation = Some(if end.drained {
            format!("{DRAIN_FAILURE}\n{failure}")
        } else {
            failure
        });
        return;
    }
    if let Some(check) = step.model_check.clone()
        && let Err(error) = crate::step::model_check::verify(&check, end.reported_model.as_deref(), &label)
    {
        end.validation = Some(error);
        end.validation_kind = Some(FailureKind::OutputInvalid);
        return;
    }
    // G76: the report block leaves the answer before the structured output is read from it.
    let fenced = step
        .acceptance
        .as_ref()
        .and_then(|_| crate::step::acceptance::take_fenced(end));
    judge_structured(end, step, &label, extracted.structured);
    if let Some(plan) = &step.acceptance
        && end.validation.is_none()
    {
        crate::step::acceptance::take_report(end, plan, fenced);
    }
}

/// The structured-output contract of a step that asks for it.
fn judge_structured(end: &mut StepEnd, step: &StepConfig, label: &str, native: Option<serde_json::Value>) {
    if !step.structured {
        return;
    }
    let schema = step.output_schema.clone().unwrap_or_else(|| json!({}));
    // A value the agent produced natively is judged as it is, not searched for in the text.
    let text = native.as_ref().map_or_else(|| end.output.clone(), ToString::to_string);
    match crate::step::validator::check(&text, &schema) {
        Ok(value) => end.structured = Some(value),
        Err(error) => {
            if let StructuredError::Invalid(errors) = &error {
                end.structured_errors = errors
                    .iter()
                    .map(|(path, message)| json!({"path": path, "message": message}))
                    .collect();
            }
            end.validation = Some(error.message(label));
            end.validation_kind = Some(FailureKind::OutputInvalid);
        }
    }
}
