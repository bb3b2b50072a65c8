//! Agents' JSON event streams (pi, Claude Code, Codex, Cursor's agent) as text a person reads:
//! what the agent said, the tools it called, its session and how its turn ended. Deltas,
//! tool results and bookkeeping events are left out; `logs --raw` shows the stream as it is.

use serde_json::Value;
use sublaunch::inputs::agents::AdapterId;

/// Whether `adapter`'s output is a JSON event stream this module renders.
pub fn renders(adapter: Option<&str>) -> bool {
    adapter
        .and_then(AdapterId::from_id)
        .is_some_and(|a| a.output_format().is_event_stream())
}

/// The readable lines of one line of an agent's stdout (none for events worth nothing to a
/// reader). A line that is not a JSON object is shown as it is.
pub fn lines(line: &str) -> Vec<String> {
    let trimmed = line.trim_end_matches(['\n', '\r']);
    let Ok(Value::Object(event)) = serde_json::from_str::<Value>(trimmed) else {
        return vec![trimmed.to_owned()];
    };
    let event = Value::Object(event);
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
    let kind = text(event.get("type"));
    let mut out = Vec::new();
    match kind.as_str() {
        // Claude Code and Cursor
        "system" if text(event.get("subtype")) == "init" => out.push(format!(
            "[session {} · model {}]",
            text(event.get("session_id")),
            text(event.get("model"))
        )),
        "assistant" => blocks(event.get("message").and_then(|m| m.get("content")), &mut out),
        "result" => out.push(result_line(&event)),
        // Codex
        "thread.started" => out.push(format!("[thread {}]", text(event.get("thread_id")))),
        "item.completed" => codex_item(event.get("item"), &mut out),
        "turn.failed" => out.push(format!(
            "[turn failed: {}]",
            text(event.get("error").and_then(|e| e.get("message")))
        )),
        "error" => out.push(format!("[error: {}]", text(event.get("message")))),
        // pi
        "session" => out.push(format!("[session {}]", text(event.get("id")))),
        "message_end" => {
            let message = event.get("message");
            if message.and_then(|m| m.get("role")).and_then(Value::as_str) == Some("assistant") {
                blocks(message.and_then(|m| m.get("content")), &mut out);
                if let Some(error) = message.and_then(|m| m.get("errorMessage")).and_then(Value::as_str) {
                    out.push(format!("[error: {error}]"));
                }
            }
        }
        // pi's `tool_execution_start` repeats the tool call its `message_end` already showed.
        _ => {}
    }
    out.into_iter()
        .flat_map(|l| l.lines().map(str::to_owned).collect::<Vec<_>>())
        .collect()
}

/// The lines of one line of an agent's stdout that say what the agent said or did: [`lines`]
/// without the bookkeeping (`[session …]`, `[thread …]`, `[done, …]`), for a live line that
/// shows the agent's last words or tool call rather than how its turn was counted.
pub fn said_or_done(line: &str) -> Vec<String> {
    let Ok(Value::Object(event)) = serde_json::from_str::<Value>(line.trim_end_matches(['\n', '\r'])) else {
        return lines(line);
    };
    let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
    let failed = event.get("is_error").and_then(Value::as_bool) == Some(true);
    match kind {
        "system" | "thread.started" | "session" => Vec::new(),
        // What Codex is running now (`logs` shows it once, when it completed).
        "item.started" => match event.get("item") {
            Some(item) if item.get("type").and_then(Value::as_str) == Some("command_execution") => {
                let command = item.get("command").and_then(Value::as_str).unwrap_or("");
                vec![format!("$ {command}")]
            }
            _ => Vec::new(),
        },
        "result" if !failed => Vec::new(),
        _ => lines(line),
    }
}

/// Text blocks as they are, tool calls as `→ name input`.
fn blocks(content: Option<&Value>, out: &mut Vec<String>) {
    match content {
        Some(Value::String(text)) => out.push(text.clone()),
        Some(Value::Array(blocks)) => {
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => out.push(block.get("text").and_then(Value::as_str).unwrap_or("").to_owned()),
                    Some("tool_use" | "toolCall") => out.push(format!(
                        "→ {} {}",
                        block.get("name").and_then(Value::as_str).unwrap_or("tool"),
                        brief(block.get("input").or_else(|| block.get("arguments")))
                    )),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

fn codex_item(item: Option<&Value>, out: &mut Vec<String>) {
    let Some(item) = item else { return };
    let field = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
    match item.get("type").and_then(Value::as_str) {
        Some("agent_message") => out.push(field("text").to_owned()),
        Some("command_execution") => out.push(format!("$ {}", field("command"))),
        Some("file_change") => {
            let paths: Vec<&str> = item
                .get("changes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("path").and_then(Value::as_str))
                .collect();
            out.push(format!("→ edit {}", paths.join(", ")));
        }
        Some("mcp_tool_call") => out.push(format!("→ {} {}", field("tool"), brief(item.get("arguments")))),
        Some("error") => out.push(format!("[error: {}]", field("message"))),
        _ => {}
    }
}

/// How a Claude Code or Cursor turn ended.
fn result_line(event: &Value) -> String {
    let failed = event.get("is_error").and_then(Value::as_bool) == Some(true);
    let mut line = if failed {
        let message = event.get("result").and_then(Value::as_str).unwrap_or("");
        format!("[failed: {message}")
    } else {
        "[done".to_owned()
    };
    if let Some(turns) = event.get("num_turns").and_then(Value::as_u64) {
        line.push_str(&format!(", {turns} turn{}", if turns == 1 { "" } else { "s" }));
    }
    if let Some(cost) = event.get("total_cost_usd").and_then(Value::as_f64) {
        line.push_str(&format!(", {}", sublaunch_protocol::records::usage::usd(cost)));
    }
    line.push(']');
    line
}

/// A tool call's arguments on one short line.
fn brief(args: Option<&Value>) -> String {
    let text = match args {
        None | Some(Value::Null) => return String::new(),
        Some(Value::Object(map)) if map.len() == 1 => match map.values().next() {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        },
        Some(other) => other.to_string(),
    };
    let one_line = text.replace('\n', " ");
    match one_line.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_events_read_as_text_and_plain_lines_stay() {
        assert_eq!(lines("plain words\n"), ["plain words"]);
        assert_eq!(
            lines(
                r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Hello\nthere"},{"type":"tool_use","name":"Read","input":{"file_path":"/a"}}]}}"#
            ),
            ["Hello", "there", "→ Read /a"]
        );
        assert_eq!(
            lines(r#"{"type":"result","subtype":"success","is_error":true,"result":"API Error: 400","num_turns":1}"#),
            ["[failed: API Error: 400, 1 turn]"]
        );
        assert_eq!(
            lines(r#"{"type":"item.completed","item":{"type":"command_execution","command":"ls -la"}}"#),
            ["$ ls -la"]
        );
        assert_eq!(
            lines(
                r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Done."}]}}"#
            ),
            ["Done."]
        );
        assert!(lines(r#"{"type":"message_update","delta":"x"}"#).is_empty());
        assert!(
            lines(r#"{"type":"tool_execution_start","toolName":"bash","args":{"command":"sleep 2"}}"#).is_empty(),
            "pi's tool call is shown once, from its message"
        );
        assert_eq!(
            lines(
                r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","name":"bash","arguments":{"command":"sleep 2"}}]}}"#
            ),
            ["→ bash sleep 2"]
        );
        assert!(said_or_done(r#"{"type":"result","subtype":"success","is_error":false,"num_turns":1}"#).is_empty());
        assert_eq!(
            said_or_done(r#"{"type":"result","is_error":true,"result":"API Error: 400"}"#),
            ["[failed: API Error: 400]"]
        );
        assert!(lines(r#"{"type":"stream_event","event":{}}"#).is_empty());
    }
}
