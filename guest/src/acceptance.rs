//! The acceptance contract of each child (rules G70–G75): the most specific source that says
//! anything decides — the task's or step's own `gate`/`acceptance`, else its group's, else the
//! run's — and without one, the agent's `acceptanceRole` infers it. Contradictory or
//! meaningless contracts are refused with the JSON path of the offending value.

use crate::children::Child;
use serde_json::{Map, Value};
use sublaunch_contract::{
    AcceptanceLevel, AcceptancePlan, AcceptanceRole, Agent, Criterion, EvidenceKind, LaunchOptions, PlanError,
    ReviewGate, VerifyCommand,
};

/// The longest a verification command may be given (a day).
const MAX_TIMEOUT_MS: u64 = 24 * 3_600_000;

/// The evidence an inferred writer's contract asks for.
const INFERRED_EVIDENCE: [EvidenceKind; 3] = [
    EvidenceKind::ChangedFiles,
    EvidenceKind::CommandsRun,
    EvidenceKind::NoStagedFiles,
];

/// The child's contract, or `None` when nothing is asked (and nothing inferred): the most
/// specific source decides (G73).
pub fn plan(
    child: &Child<'_>,
    agent: &Agent,
    launch: Option<&LaunchOptions>,
    placed: bool,
    structured: bool,
) -> Result<Option<AcceptancePlan>, PlanError> {
    let role = role(agent)?;
    let group_path = child.path.split_once(".parallel[").map(|(step, _)| step.to_owned());
    let sources = [
        (child.fields.acceptance, child.fields.gate, child.path.clone()),
        (
            child.fields.group_acceptance,
            child.fields.group_gate,
            group_path.unwrap_or_default(),
        ),
        (
            launch.and_then(|l| l.acceptance.as_deref()),
            launch.and_then(|l| l.gate.as_deref()),
            "launch".to_owned(),
        ),
    ];
    let decided = sources
        .into_iter()
        .find(|(acceptance, gate, _)| acceptance.is_some() || gate.is_some());
    let contract = match decided {
        Some((acceptance, gate, at)) => from_source(acceptance, gate, &at, agent, role)?,
        None => inferred(agent, role),
    };
    let Some(contract) = contract.filter(|c| !c.is_inert() || c.reason.is_some()) else {
        return Ok(None);
    };
    // G80: a typed gate gives the step its structured value, so the step has none of its own.
    if structured && contract.verify.iter().any(|v| v.json) {
        return Err(PlanError::invalid_request(format!(
            "Invalid request at {}: a typed gate (output: json) gives the step its structured value, and the step has an outputSchema; drop one of them.",
            contract.origin
        )));
    }
    if placed && contract.review.is_some() {
        return Err(PlanError::invalid_request(format!(
            "Invalid request at {}.review: a step placed on another machine cannot be reviewed: its reviewer reads the diff where the runner runs. Run the step here, or drop the review.",
            contract.origin
        )));
    }
    if placed && (contract.level >= AcceptanceLevel::Checked || !contract.verify.is_empty()) {
        return Err(PlanError::invalid_request(format!(
            "Invalid request at {}: a step placed on another machine can only be attested: its checks and verification commands run where the runner runs. Use level attested, or run the step here.",
            contract.origin
        )));
    }
    Ok(Some(contract))
}

/// The agent's `acceptanceRole`, checked.
fn role(agent: &Agent) -> Result<Option<AcceptanceRole>, PlanError> {
    let Some(name) = agent.acceptance_role.as_deref() else {
        return Ok(None);
    };
    AcceptanceRole::from_name(name).map(Some).ok_or_else(|| {
        PlanError::invalid_request(format!(
            "Invalid request at agents[{}].acceptanceRole: '{name}' is not a role; use read-only or writer.",
            agent.name
        ))
    })
}

/// G74: a writer's work is checked (and only shown); a reader's, or an agent without a role,
/// has nothing inferred.
fn inferred(agent: &Agent, role: Option<AcceptanceRole>) -> Option<AcceptancePlan> {
    (role == Some(AcceptanceRole::Writer)).then(|| AcceptancePlan {
        level: AcceptanceLevel::Checked,
        explicit: false,
        origin: format!("agents[{}].acceptanceRole", agent.name),
        report: true,
        criteria: Vec::new(),
        evidence: INFERRED_EVIDENCE.to_vec(),
        verify: Vec::new(),
        review: None,
        reason: None,
    })
}

/// The contract one source gives (`at`: its JSON path, `launch` for the run's).
fn from_source(
    acceptance: Option<&str>,
    gate: Option<&str>,
    at: &str,
    agent: &Agent,
    role: Option<AcceptanceRole>,
) -> Result<Option<AcceptancePlan>, PlanError> {
    let acceptance = acceptance
        .map(|text| parse_json(text, &format!("{at}.acceptance")))
        .transpose()?;
    let disabled = acceptance.as_ref().is_some_and(|v| *v == Value::Bool(false));
    if let Some(gate) = gate {
        let path = format!("{at}.gate");
        if acceptance.is_some() && !disabled {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {path}: a gate is the whole acceptance contract, and {at}.acceptance is set too. Drop one: put the command in acceptance.verify, or keep the gate alone."
            )));
        }
        let command = gate_command(&parse_json(gate, &path)?, &path)?;
        return Ok(Some(AcceptancePlan {
            level: AcceptanceLevel::Verified,
            explicit: true,
            origin: path,
            report: false,
            criteria: Vec::new(),
            evidence: Vec::new(),
            verify: vec![command],
            review: None,
            reason: None,
        }));
    }
    let path = format!("{at}.acceptance");
    match acceptance {
        None | Some(Value::Bool(false)) => Ok(None),
        Some(Value::Bool(true)) => Err(PlanError::invalid_request(format!(
            "Invalid request at {path}: true is not a contract; name a level (attested or checked), or give an object with verify commands."
        ))),
        Some(Value::String(level)) => match level.as_str() {
            "auto" => Ok(inferred(agent, role)),
            "none" => Err(PlanError::invalid_request(format!(
                "Invalid request at {path}: a bare \"none\" is refused; say why: {{\"level\": \"none\", \"reason\": \"...\"}} (or false to turn acceptance off)."
            ))),
            "verified" => Err(PlanError::invalid_request(format!(
                "Invalid request at {path}: verified needs the commands that verify: {{\"level\": \"verified\", \"verify\": [{{\"command\": \"...\"}}]}}, or a gate."
            ))),
            other => {
                let level = level_named(other, &path)?;
                Ok(Some(explicit(level, path)))
            }
        },
        Some(Value::Object(fields)) => object(&fields, path).map(Some),
        Some(other) => Err(PlanError::invalid_request(format!(
            "Invalid request at {path}: expected a level, an object or false, got {}.",
            kind_of(&other)
        ))),
    }
}

/// An explicit contract of `level` with nothing else.
fn explicit(level: AcceptanceLevel, origin: String) -> AcceptancePlan {
    AcceptancePlan {
        level,
        explicit: true,
        origin,
        report: level >= AcceptanceLevel::Attested,
        criteria: Vec::new(),
        evidence: Vec::new(),
        verify: Vec::new(),
        review: None,
        reason: None,
    }
}

/// `{level, criteria, evidence, verify, review, reason}`, each field checked (G71).
fn object(fields: &Map<String, Value>, path: String) -> Result<AcceptancePlan, PlanError> {
    const KEYS: [&str; 6] = ["level", "criteria", "evidence", "verify", "review", "reason"];
    if let Some(key) = fields.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(PlanError::invalid_request(format!(
            "Invalid request at {path}.{key}: unknown field; an acceptance contract has {}.",
            KEYS.join(", ")
        )));
    }
    let review = review(fields.get("review"), &format!("{path}.review"))?;
    let criteria = criteria(fields.get("criteria"), &format!("{path}.criteria"))?;
    let evidence = evidence(fields.get("evidence"), &format!("{path}.evidence"))?;
    let verify = verify(fields.get("verify"), &format!("{path}.verify"))?;
    let reason = match fields.get("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if !text.trim().is_empty() => Some(text.clone()),
        Some(_) => {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {path}.reason: expected a non-empty text."
            )));
        }
    };
    let level_path = format!("{path}.level");
    let level = match fields.get("level") {
        None | Some(Value::Null) => {
            if verify.is_empty() {
                AcceptanceLevel::Checked
            } else {
                AcceptanceLevel::Verified
            }
        }
        Some(Value::String(name)) if name == "auto" => {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {level_path}: auto infers the whole contract from the agent's role; write \"auto\" alone, or name a level here."
            )));
        }
        Some(Value::String(name)) => level_named(name, &level_path)?,
        Some(other) => {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {level_path}: expected a level (none, attested, checked or verified), got {}.",
                kind_of(other)
            )));
        }
    };
    if level == AcceptanceLevel::None {
        if reason.is_none() {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {path}.reason: a contract of level none says why (reason)."
            )));
        }
        if !criteria.is_empty() || !evidence.is_empty() || !verify.is_empty() {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {level_path}: level none asks for nothing, yet the contract lists criteria, evidence or verify commands; raise the level or drop them."
            )));
        }
    }
    if level == AcceptanceLevel::Verified && verify.is_empty() {
        return Err(PlanError::invalid_request(format!(
            "Invalid request at {path}.verify: level verified needs at least one verify command."
        )));
    }
    if level < AcceptanceLevel::Verified && !verify.is_empty() {
        return Err(PlanError::invalid_request(format!(
            "Invalid request at {level_path}: verify commands are run only at level verified, and the level is {level}; raise it to verified or drop the commands."
        )));
    }
    // G81: the reviewer reads the step's diff from where git started counting its work, which
    // only a checked contract records (and a step outside git cannot be checked).
    if review.is_some() && level < AcceptanceLevel::Checked {
        return Err(PlanError::invalid_request(format!(
            "Invalid request at {path}.review: a review reads the step's diff, which only a checked contract takes from git, and the level is {level}; raise it to checked or verified, or drop the review."
        )));
    }
    Ok(AcceptancePlan {
        report: level >= AcceptanceLevel::Attested,
        criteria,
        evidence,
        verify,
        review,
        reason,
        ..explicit(level, path)
    })
}

/// `review`: `{agent, required}` (G81); `required` defaults to true. Whether the agent exists
/// is checked against the request's catalogue by [`check_reviewer`].
fn review(value: Option<&Value>, path: &str) -> Result<Option<ReviewGate>, PlanError> {
    let fields = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(fields)) => fields,
        Some(other) => {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {path}: expected {{agent, required}}, got {}.",
                kind_of(other)
            )));
        }
    };
    if let Some(key) = fields.keys().find(|k| !["agent", "required"].contains(&k.as_str())) {
        return Err(PlanError::invalid_request(format!(
            "Invalid request at {path}.{key}: unknown field; a review has agent and required."
        )));
    }
    let agent = match fields.get("agent") {
        Some(Value::String(name)) if !name.trim().is_empty() => name.clone(),
        None | Some(Value::Null) => {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {path}.agent: a review names the agent that reviews."
            )));
        }
        Some(other) => {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {path}.agent: expected an agent's name, got {}.",
                if other.is_string() {
                    "an empty text"
                } else {
                    kind_of(other)
                }
            )));
        }
    };
    let required = match fields.get("required") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(required)) => *required,
        Some(other) => {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {path}.required: expected true or false, got {}.",
                kind_of(other)
            )));
        }
    };
    Ok(Some(ReviewGate { agent, required }))
}

/// G81: the reviewer of `contract` is an agent of the request's catalogue (`known`).
pub fn check_reviewer<'a>(
    contract: &AcceptancePlan,
    known: impl Iterator<Item = &'a str> + Clone,
) -> Result<(), PlanError> {
    let Some(review) = &contract.review else {
        return Ok(());
    };
    if known.clone().any(|name| name == review.agent) {
        return Ok(());
    }
    let near = sublaunch_contract::nearest::nearest(&review.agent, known.clone())
        .map(|near| format!(" Did you mean '{near}'?"))
        .unwrap_or_default();
    let names: Vec<&str> = known.collect();
    Err(PlanError::new(
        sublaunch_contract::ErrorCode::UnknownAgent,
        format!(
            "Unknown agent '{}' at {}.review.agent.{near} Known agents: {}.",
            review.agent,
            contract.origin,
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ),
    ))
}

/// A level name; `reviewed` is explained, not taken.
fn level_named(name: &str, path: &str) -> Result<AcceptanceLevel, PlanError> {
    if name == "reviewed" {
        return Err(PlanError::invalid_request(format!(
            "Invalid request at {path}: reviewed is not a level; review is a gate of its own beside the level."
        )));
    }
    AcceptanceLevel::from_name(name).ok_or_else(|| {
        PlanError::invalid_request(format!(
            "Invalid request at {path}: '{name}' is not a level; use none, attested, checked or verified (or auto)."
        ))
    })
}

/// `criteria`: texts (named `c1`, `c2`, …) or `{id, must}`.
fn criteria(value: Option<&Value>, path: &str) -> Result<Vec<Criterion>, PlanError> {
    let mut out: Vec<Criterion> = Vec::new();
    for (i, item) in list(value, path)?.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let (id, must) = match item {
            Value::String(must) => (format!("c{}", i + 1), must.clone()),
            Value::Object(fields) => {
                if let Some(key) = fields.keys().find(|k| !["id", "must"].contains(&k.as_str())) {
                    return Err(PlanError::invalid_request(format!(
                        "Invalid request at {at}.{key}: unknown field; a criterion has id and must."
                    )));
                }
                let id = match fields.get("id") {
                    None | Some(Value::Null) => format!("c{}", i + 1),
                    Some(Value::String(id)) => id.clone(),
                    Some(other) => {
                        return Err(PlanError::invalid_request(format!(
                            "Invalid request at {at}.id: expected a text, got {}.",
                            kind_of(other)
                        )));
                    }
                };
                let must = fields.get("must").and_then(Value::as_str).ok_or_else(|| {
                    PlanError::invalid_request(format!(
                        "Invalid request at {at}.must: a criterion says what must hold."
                    ))
                })?;
                (id, must.to_owned())
            }
            other => {
                return Err(PlanError::invalid_request(format!(
                    "Invalid request at {at}: expected a text or {{id, must}}, got {}.",
                    kind_of(other)
                )));
            }
        };
        if must.trim().is_empty() || id.trim().is_empty() {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {at}: a criterion needs a name and what must hold."
            )));
        }
        if out.iter().any(|c| c.id == id) {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {at}: criterion '{id}' is named twice."
            )));
        }
        out.push(Criterion { id, must });
    }
    Ok(out)
}

/// `evidence`: kind names, each once.
fn evidence(value: Option<&Value>, path: &str) -> Result<Vec<EvidenceKind>, PlanError> {
    let mut out = Vec::new();
    for (i, item) in list(value, path)?.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let name = item.as_str().ok_or_else(|| {
            PlanError::invalid_request(format!(
                "Invalid request at {at}: expected an evidence kind, got {}.",
                kind_of(item)
            ))
        })?;
        let kind = EvidenceKind::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = EvidenceKind::ALL.iter().map(|k| k.as_str()).collect();
            PlanError::invalid_request(format!(
                "Invalid request at {at}: '{name}' is not an evidence kind; use {}.",
                known.join(", ")
            ))
        })?;
        if !out.contains(&kind) {
            out.push(kind);
        }
    }
    Ok(out)
}

/// `verify`: `{id, command, timeout}` (or a bare command), ids unique.
fn verify(value: Option<&Value>, path: &str) -> Result<Vec<VerifyCommand>, PlanError> {
    let mut out: Vec<VerifyCommand> = Vec::new();
    for (i, item) in list(value, path)?.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let command = match item {
            Value::String(_) => gate_command(item, &at)?,
            Value::Object(fields) => {
                if let Some(key) = fields
                    .keys()
                    .find(|k| !["id", "command", "timeout", "timeoutMs"].contains(&k.as_str()))
                {
                    return Err(PlanError::invalid_request(format!(
                        "Invalid request at {at}.{key}: unknown field; a verify command has id, command and timeout."
                    )));
                }
                gate_command(item, &at)?
            }
            other => {
                return Err(PlanError::invalid_request(format!(
                    "Invalid request at {at}: expected a command or {{id, command, timeout}}, got {}.",
                    kind_of(other)
                )));
            }
        };
        let id = match item.get("id") {
            None | Some(Value::Null) => format!("verify-{}", i + 1),
            Some(Value::String(id)) if valid_id(id) => id.clone(),
            Some(other) => {
                return Err(PlanError::invalid_request(format!(
                    "Invalid request at {at}.id: expected a name of letters, digits, '-', '_' or '.', got {other}."
                )));
            }
        };
        if out.iter().any(|v| v.id == id) {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {at}.id: verify command '{id}' is named twice."
            )));
        }
        out.push(VerifyCommand { id, ..command });
    }
    Ok(out)
}

/// A gate or verify command: a command text, or `{command, timeout, output, schema}`.
fn gate_command(value: &Value, path: &str) -> Result<VerifyCommand, PlanError> {
    let (command, fields) = match value {
        Value::String(command) => (command.as_str(), None),
        Value::Object(fields) => {
            if let Some(key) = fields
                .keys()
                .find(|k| !["command", "timeout", "timeoutMs", "output", "schema", "id"].contains(&k.as_str()))
            {
                return Err(PlanError::invalid_request(format!(
                    "Invalid request at {path}.{key}: unknown field; a gate has command, timeout, output and schema."
                )));
            }
            let command = fields.get("command").and_then(Value::as_str).ok_or_else(|| {
                PlanError::invalid_request(format!(
                    "Invalid request at {path}.command: a gate needs its command text."
                ))
            })?;
            (command, Some(fields))
        }
        other => {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {path}: expected a command or {{command, output, schema}}, got {}.",
                kind_of(other)
            )));
        }
    };
    if command.trim().is_empty() || command.contains('\0') {
        return Err(PlanError::invalid_request(format!(
            "Invalid request at {path}: the command is empty or holds a NUL byte."
        )));
    }
    let timeout_ms = fields.map(|f| timeout(f, path)).transpose()?.flatten();
    let (json, schema) = match fields {
        Some(fields) => typed(fields, path)?,
        None => (false, None),
    };
    Ok(VerifyCommand {
        id: "gate".to_owned(),
        command: command.to_owned(),
        timeout_ms,
        json,
        schema,
    })
}

/// G80: a typed gate's `output: "json"` and its `schema` (which needs the output).
fn typed(fields: &Map<String, Value>, path: &str) -> Result<(bool, Option<String>), PlanError> {
    let json = match fields.get("output") {
        None | Some(Value::Null) => false,
        Some(Value::String(output)) if output == "json" => true,
        Some(other) => {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {path}.output: the only output a gate can have is \"json\", got {other}."
            )));
        }
    };
    let schema = match fields.get("schema") {
        None | Some(Value::Null) => None,
        Some(_) if !json => {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {path}.schema: a schema checks a typed gate's output; add output: \"json\"."
            )));
        }
        Some(schema) => {
            crate::schema::check_gate_schema(schema, &format!("at {path}.schema"))?;
            Some(schema.to_string())
        }
    };
    Ok((json, schema))
}

/// `timeout` (seconds, or a duration like `90s`, `2m`, `1h`, `500ms`) or `timeoutMs`.
fn timeout(fields: &Map<String, Value>, path: &str) -> Result<Option<u64>, PlanError> {
    let (field, ms) = match (fields.get("timeout"), fields.get("timeoutMs")) {
        (Some(_), Some(_)) => {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {path}.timeoutMs: give timeout or timeoutMs, not both."
            )));
        }
        (Some(Value::Number(n)), None) => ("timeout", n.as_f64().map(|s| s * 1000.0)),
        (Some(Value::String(text)), None) => ("timeout", duration_ms(text)),
        (None, Some(Value::Number(n))) => ("timeoutMs", n.as_f64()),
        (None, None) => return Ok(None),
        (Some(_), None) => ("timeout", None),
        (None, Some(_)) => ("timeoutMs", None),
    };
    match ms {
        Some(ms) if ms >= 1.0 && ms <= MAX_TIMEOUT_MS as f64 => Ok(Some(ms as u64)),
        _ => Err(PlanError::invalid_request(format!(
            "Invalid request at {path}.{field}: expected a duration from 1 ms to 24 h (seconds, or 90s, 2m, 1h, 500ms)."
        ))),
    }
}

/// `90s`, `2m`, `1h`, `500ms`, `30` (seconds) in milliseconds.
fn duration_ms(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "ms" => 1.0,
        "" | "s" => 1_000.0,
        "m" => 60_000.0,
        "h" => 3_600_000.0,
        _ => return None,
    };
    Some(number * scale)
}

fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// A list field (absent: empty).
fn list<'v>(value: Option<&'v Value>, path: &str) -> Result<&'v [Value], PlanError> {
    match value {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(PlanError::invalid_request(format!(
            "Invalid request at {path}: expected a list, got {}.",
            kind_of(other)
        ))),
    }
}

fn parse_json(text: &str, path: &str) -> Result<Value, PlanError> {
    serde_json::from_str(text).map_err(|e| PlanError::invalid_request(format!("Invalid request at {path}: {e}")))
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
