//! One agent file: YAML frontmatter between `---` lines, then the system prompt.
//!
//! ```markdown
//! ---
//! name: reviewer
//! description: Reviews a change and returns a verdict
//! model: claude-sonnet-4-5
//! thinking: medium
//! tools: read, grep, find        # the only tools it has (a `Tool(pattern)` item also pre-approves the pattern)
//! excludeTools: [bash]            # tools it never has
//! allow: ["Bash(git *)"]          # tool uses that run without asking
//! deny: ["Bash(rm *)"]            # tool uses that are always refused
//! mode: read-only                 # plan, read-only or writer (default: the adapter's)
//! nested: true                    # it may launch nested runs (default), bounded by:
//! maxDepth: 1                     #   how many levels below it
//! nestedAgents: [scout]           #   the only agents they may start
//! nestedModels: ["anthropic/*"]   #   the only models they may use
//! defaultReads: [docs/STYLE.md]   # read before every task (relative to the step's directory)
//! outputSchema:
//!   type: object
//!   required: [verdict]
//! ---
//! You review code changes. …
//! ```

use super::{AdapterId, AgentDef, AgentSource, RunnerSpec, TEMPLATE_PLACEHOLDERS};
use crate::inputs::config_files::{FileError, YamlTooDeep};
use serde_json::{Map, Value};
use std::path::Path;
use sublaunch_contract::{Agent, LooseString, Permissions, Rule, RunnerType, ThinkingLevel, ThinkingSetting};

/// Parses the agent file at `path` (with content `text`).
pub fn parse_agent_file(path: &Path, text: &str, source: AgentSource) -> Result<AgentDef, FileError> {
    let fail = |field: Option<&str>, message: String| FileError::new(path, field.map(str::to_owned), message);
    let (yaml, body) = split_frontmatter(text).ok_or_else(|| {
        fail(
            None,
            "missing YAML frontmatter: the file must start with a `---` line and close it with another".into(),
        )
    })?;
    // The frontmatter starts on the file's second line.
    crate::inputs::config_files::check_yaml_depth(yaml).map_err(|e| {
        let in_file = YamlTooDeep { line: e.line + 1 };
        fail(None, format!("refused YAML frontmatter at {in_file}"))
    })?;
    let value: Value = serde_norway::from_str(yaml).map_err(|e| {
        // The YAML parser counts lines from the opening `---`; report lines of the file.
        let text = e.to_string();
        let what = text.split(" at line ").next().unwrap_or(&text);
        let at = e
            .location()
            .map(|l| format!(" at line {}, column {}", l.line() + 1, l.column()))
            .unwrap_or_default();
        fail(None, format!("broken YAML frontmatter{at}: {what}"))
    })?;
    let fields = match value {
        Value::Object(fields) => fields,
        // `---` directly followed by `---`: no fields, every default.
        Value::Null => Map::new(),
        _ => return Err(fail(None, "the frontmatter must be a mapping of fields".into())),
    };
    let field = Fields {
        fields: &fields,
        fail: &fail,
    };
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = field.string("name")?.unwrap_or(stem);
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
        return Err(fail(
            Some("name"),
            format!("'{name}' is not a valid agent name (letters, digits, `.`, `_`, `-`)"),
        ));
    }
    let runner = field.runner()?;
    let planner = Agent {
        name,
        model: field.string("model")?.map(LooseString::Text),
        thinking: field.thinking("thinking")?,
        model_provider: field.string("modelProvider")?,
        max_thinking: field.level("maxThinking")?.map(LooseString::Text),
        machine: field.machine()?,
        runner: runner.planner_runner(),
        output_schema: field.schema()?,
        default_reads: match field.get("defaultReads") {
            None | Some(Value::Bool(false)) => None,
            Some(_) => Some(field.list("defaultReads")?),
        },
        usage_budget: field.typed("usageBudget")?,
        tool_budget: field.typed_with("toolBudget", sublaunch_contract::budget::tool_budget)?,
        retry: field.typed("retry")?,
        extensions: field.get("extensions").map(|_| field.list("extensions")).transpose()?,
        required_extensions: field
            .get("requiredExtensions")
            .map(|_| field.list("requiredExtensions"))
            .transpose()?,
        skills: field.get("skills").map(|_| field.list("skills")).transpose()?,
        permissions: field.permissions()?,
        sandbox: field.typed_with("sandbox", sublaunch_contract::sandbox::setting)?,
        acceptance_role: field.string("acceptanceRole")?,
    };
    Ok(AgentDef {
        planner,
        description: field.string("description")?.unwrap_or_default(),
        system_prompt: body.trim_start_matches(['\r', '\n']).to_owned(),
        runner,
        worktree: field.flag("worktree")?,
        source,
    })
}

/// The YAML between the opening and closing `---` lines, and the body after them.
fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

struct Fields<'a, F: Fn(Option<&str>, String) -> FileError> {
    fields: &'a Map<String, Value>,
    fail: &'a F,
}

impl<F: Fn(Option<&str>, String) -> FileError> Fields<'_, F> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key).filter(|v| !v.is_null())
    }

    fn wrong(&self, key: &str, expected: &str, got: &Value) -> FileError {
        (self.fail)(Some(key), format!("expected {expected}, got {got}"))
    }

    fn string(&self, key: &str) -> Result<Option<String>, FileError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
            Some(other) => Err(self.wrong(key, "a string", other)),
        }
    }

    /// A thinking level name (T1), trimmed.
    fn level(&self, key: &str) -> Result<Option<String>, FileError> {
        let Some(text) = self.string(key)? else { return Ok(None) };
        if ThinkingLevel::from_name(&text).is_none() {
            return Err((self.fail)(
                Some(key),
                format!("'{text}' is not a thinking level; expected one of {}", levels()),
            ));
        }
        Ok(Some(text))
    }

    fn thinking(&self, key: &str) -> Result<Option<ThinkingSetting>, FileError> {
        match self.get(key) {
            Some(Value::Bool(false)) => Ok(Some(ThinkingSetting::Disabled)),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(Some(ThinkingSetting::Disabled)),
            Some(Value::String(_)) => Ok(self.level(key)?.map(ThinkingSetting::Text)),
            Some(other) => Err(self.wrong(key, &format!("false or one of {}", levels()), other)),
            None => Ok(None),
        }
    }

    /// `machine`: a saved machine's id or label; `false` means none.
    fn machine(&self) -> Result<Option<LooseString>, FileError> {
        match self.get("machine") {
            None | Some(Value::Bool(false)) => Ok(None),
            Some(Value::String(s)) => Ok(Some(LooseString::Text(s.clone()))),
            Some(other) => Err(self.wrong("machine", "a machine name or false", other)),
        }
    }

    /// `outputSchema`: a JSON Schema object (checked in depth by the planner), also written
    /// as a string holding JSON; `false` means none.
    fn schema(&self) -> Result<Option<String>, FileError> {
        match self.get("outputSchema") {
            None | Some(Value::Bool(false)) => Ok(None),
            Some(schema @ Value::Object(_)) => Ok(Some(schema.to_string())),
            Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
                Ok(schema @ Value::Object(_)) => Ok(Some(schema.to_string())),
                Ok(other) => Err(self.wrong("outputSchema", "a JSON Schema object", &other)),
                Err(e) => Err((self.fail)(
                    Some("outputSchema"),
                    format!("the string is not a JSON Schema object: {e}"),
                )),
            },
            Some(other) => Err(self.wrong("outputSchema", "a JSON Schema object", other)),
        }
    }

    /// `true` or `false` (absent: `false`).
    fn flag(&self, key: &str) -> Result<bool, FileError> {
        match self.get(key) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(self.wrong(key, "true or false", other)),
        }
    }

    /// A value of the contract's own type, refused with serde's message (naming the inner
    /// field, as in `usageBudget.maxTokens`).
    fn typed<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>, FileError> {
        self.typed_with(key, |value: Value| T::deserialize(value).map(Some))
    }

    /// A value read by `read` (a contract deserializer), refused with its message.
    fn typed_with<T>(
        &self,
        key: &str,
        read: impl FnOnce(Value) -> Result<Option<T>, serde_json::Error>,
    ) -> Result<Option<T>, FileError> {
        match self.get(key) {
            None => Ok(None),
            Some(value) => read(value.clone()).map_err(|e| (self.fail)(Some(key), e.to_string())),
        }
    }

    /// A list written as a YAML sequence or a comma-separated string.
    fn list(&self, key: &str) -> Result<Vec<String>, FileError> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(s
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect()),
            Some(Value::Array(items)) => self.strings(key, items),
            Some(other) => Err(self.wrong(key, "a list or a comma-separated string", other)),
        }
    }

    /// `tools`: a sequence or a comma-separated string, and each item split at the commas
    /// outside parentheses too. An item `"Read,Bash"` is two tools, as the CLIs that take a
    /// list read it, so a read-only agent's filter sees `Bash` (a comma inside a rule's
    /// pattern, `Bash(git log a,b)`, stays in its rule).
    fn tools(&self) -> Result<Vec<String>, FileError> {
        let items = match self.get("tools") {
            None => return Ok(Vec::new()),
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => self.strings("tools", items)?,
            Some(other) => return Err(self.wrong("tools", "a list or a comma-separated string", other)),
        };
        Ok(items.iter().flat_map(|item| split_tools(item)).collect())
    }

    /// The agent's layer of the permission contract (rules G1, G60): `tools`, `excludeTools`,
    /// `allow`, `deny`, `mode`, `nested`, `maxDepth`, `nestedAgents` and `nestedModels`; `None` when it sets none of them. A `tools` item
    /// with a pattern (`Bash(git *)`) gives the tool and pre-approves the pattern, as Claude
    /// Code's `--allowedTools` read it before the contract had rules of its own.
    fn permissions(&self) -> Result<Option<Permissions>, FileError> {
        let mut permissions = Permissions::default();
        if self.get("tools").is_some() {
            let mut tools = Vec::new();
            let mut allow = Vec::new();
            for item in self.tools()? {
                let rule = Rule::parse(&item).map_err(|e| (self.fail)(Some("tools"), e.to_string()))?;
                if rule.pattern.is_some() {
                    allow.push(item.clone());
                }
                if !tools.iter().any(|t| t == rule.tool) {
                    tools.push(rule.tool.to_owned());
                }
            }
            permissions.tools = Some(tools);
            permissions.allow = (!allow.is_empty()).then_some(allow);
        }
        if self.get("excludeTools").is_some() {
            let tools = self.list("excludeTools")?;
            if let Some(bad) = tools
                .iter()
                .find(|t| !Rule::parse(t).is_ok_and(|r| r.pattern.is_none()))
            {
                return Err((self.fail)(
                    Some("excludeTools"),
                    format!("'{bad}' is not a tool name; patterns belong in `deny` rules"),
                ));
            }
            permissions.exclude_tools = Some(tools);
        }
        for key in ["allow", "deny"] {
            if self.get(key).is_none() {
                continue;
            }
            let rules = match self.get(key) {
                Some(Value::String(rule)) => vec![rule.trim().to_owned()],
                Some(Value::Array(items)) => self.strings(key, items)?,
                Some(other) => return Err(self.wrong(key, "a list of rules such as [\"Bash(git *)\"]", other)),
                None => Vec::new(),
            };
            for rule in &rules {
                Rule::parse(rule).map_err(|e| (self.fail)(Some(key), e.to_string()))?;
            }
            let slot = if key == "allow" {
                &mut permissions.allow
            } else {
                &mut permissions.deny
            };
            slot.get_or_insert_with(Vec::new).extend(rules);
        }
        if let Some(mode) = self.string("mode")? {
            permissions.mode = Some(mode.parse().map_err(|e: String| (self.fail)(Some("mode"), e))?);
        }
        permissions.nested = match self.get("nested") {
            None => None,
            Some(Value::Bool(nested)) => Some(*nested),
            Some(other) => return Err(self.wrong("nested", "true or false", other)),
        };
        if let Some(value) = self.get("maxDepth") {
            let depth = value.as_u64().and_then(|n| u32::try_from(n).ok());
            let depth = depth.ok_or_else(|| self.wrong("maxDepth", "a whole number (0: no nested runs)", value))?;
            permissions.max_depth = Some(depth);
        }
        for (key, slot) in [
            ("nestedAgents", &mut permissions.nested_agents),
            ("nestedModels", &mut permissions.nested_models),
        ] {
            if self.get(key).is_some() {
                *slot = Some(self.list(key)?);
            }
        }
        Ok((!permissions.is_empty()).then_some(permissions))
    }

    /// The items of the sequence `key`, each a string.
    fn strings(&self, key: &str, items: &[Value]) -> Result<Vec<String>, FileError> {
        let text = |item: &Value| {
            item.as_str()
                .map(str::to_owned)
                .ok_or_else(|| self.wrong(key, "strings", item))
        };
        items.iter().map(text).collect()
    }

    /// `runner: {type, adapter, command, args}`.
    fn runner(&self) -> Result<RunnerSpec, FileError> {
        let Some(runner) = self.get("runner") else {
            return Ok(RunnerSpec::adapter(AdapterId::Pi));
        };
        let Value::Object(runner) = runner else {
            return Err(self.wrong("runner", "a mapping with `type`", runner));
        };
        let text = |key: &str| match runner.get(key).filter(|v| !v.is_null()) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
            Some(other) => Err(self.wrong(&format!("runner.{key}"), "a string", other)),
        };
        let command = self.command(runner)?;
        let kind = text("type")?.unwrap_or_else(|| "native".to_owned());
        let id = text("adapter")?;
        let Some(adapter) = AdapterId::from_runner(Some(&kind), id.as_deref()) else {
            return Err(match RunnerType::from_name(&kind) {
                Some(_) => {
                    let known: Vec<&str> = AdapterId::EXTERNAL.iter().map(|a| a.id()).collect();
                    (self.fail)(
                        Some("runner.adapter"),
                        format!(
                            "unknown adapter '{}'; known: {}",
                            id.unwrap_or_default(),
                            known.join(", ")
                        ),
                    )
                }
                None => {
                    let known: Vec<&str> = RunnerType::ALL.iter().map(|t| t.name()).collect();
                    (self.fail)(
                        Some("runner.type"),
                        format!("unknown runner type '{kind}'; known: {}", known.join(", ")),
                    )
                }
            });
        };
        match (adapter, &command) {
            (adapter, None) if adapter.runs_given_command() => Err((self.fail)(
                Some("runner.command"),
                format!("a {} runner needs a command", kind),
            )),
            (AdapterId::Command, Some(argv)) => {
                check_placeholders(argv).map_err(|e| (self.fail)(Some("runner.command"), e.to_string()))?;
                Ok(RunnerSpec { adapter, command })
            }
            _ => Ok(RunnerSpec { adapter, command }),
        }
    }

    /// `runner.command` (a list, or a string split on whitespace) plus `runner.args`.
    fn command(&self, runner: &Map<String, Value>) -> Result<Option<Vec<String>>, FileError> {
        let strings = |key: &str, value: &Value| -> Result<Vec<String>, FileError> {
            match value {
                Value::String(s) => Ok(s.split_whitespace().map(str::to_owned).collect()),
                Value::Array(items) => self.strings(key, items),
                other => Err(self.wrong(key, "a list of strings or a string", other)),
            }
        };
        let Some(command) = runner.get("command").filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let mut argv = strings("runner.command", command)?;
        if let Some(args) = runner.get("args").filter(|v| !v.is_null()) {
            argv.extend(strings("runner.args", args)?);
        }
        if argv.first().is_none_or(String::is_empty) {
            return Err((self.fail)(Some("runner.command"), "the command is empty".into()));
        }
        Ok(Some(argv))
    }
}

/// An argv template with a `{…}` the runner does not fill.
#[derive(Debug, thiserror::Error)]
enum PlaceholderError {
    #[error("unclosed `{{` in '{0}'")]
    Unclosed(String),
    #[error("unknown placeholder {placeholder} in '{arg}'; known: {}", TEMPLATE_PLACEHOLDERS.join(", "))]
    Unknown { placeholder: String, arg: String },
}

/// Every `{…}` in an argv template must be one of [`TEMPLATE_PLACEHOLDERS`].
fn check_placeholders(argv: &[String]) -> Result<(), PlaceholderError> {
    for arg in argv {
        let mut rest = arg.as_str();
        while let Some(start) = rest.find('{') {
            let end = rest[start..]
                .find('}')
                .map(|e| start + e + 1)
                .ok_or_else(|| PlaceholderError::Unclosed(arg.clone()))?;
            let placeholder = &rest[start..end];
            if !TEMPLATE_PLACEHOLDERS.contains(&placeholder) {
                return Err(PlaceholderError::Unknown {
                    placeholder: placeholder.to_owned(),
                    arg: arg.clone(),
                });
            }
            rest = &rest[end..];
        }
    }
    Ok(())
}

fn levels() -> String {
    ThinkingLevel::ALL
        .iter()
        .map(|l| l.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The tools of one list item: split at the commas outside parentheses, trimmed, empty
/// pieces dropped.
fn split_tools(item: &str) -> Vec<String> {
    let mut tools = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (at, c) in item.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                tools.push(&item[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    tools.push(&item[start..]);
    tools
        .into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AgentDef, FileError> {
        parse_agent_file(Path::new("/agents/reviewer.md"), text, AgentSource::BuiltIn)
    }

    #[test]
    fn a_full_agent_file_parses() {
        let agent = parse(
            "---\nname: reviewer\ndescription: Reviews\nmodel: claude-sonnet-4-5\nthinking: medium\nmaxThinking: high\n\
             tools: read, grep\noutputSchema:\n  type: object\n  required: [verdict]\n---\nYou review.\n",
        )
        .unwrap();
        assert_eq!(agent.name(), "reviewer");
        assert_eq!(agent.planner.model, Some(LooseString::Text("claude-sonnet-4-5".into())));
        assert_eq!(agent.planner.thinking, Some(ThinkingSetting::Text("medium".into())));
        assert_eq!(tools(&agent), ["read", "grep"]);
        assert_eq!(agent.system_prompt, "You review.\n");
        assert_eq!(agent.runner.adapter, AdapterId::Pi);
        let schema: Value = serde_json::from_str(agent.planner.output_schema.as_deref().unwrap()).unwrap();
        assert_eq!(schema["required"][0], "verdict");
    }

    /// A list item holding several tools is several tools, so that a read-only agent's
    /// `tools: ["Read,Bash"]` cannot slip `Bash` past the filter that drops write tools; a
    /// comma inside a rule's parentheses stays in the rule.
    #[test]
    fn a_list_item_naming_several_tools_is_split() {
        let agent = parse("---\ntools: [\"Read,Bash\", \" Grep , \", \"Bash(git log a,b),Edit\"]\n---\n").unwrap();
        assert_eq!(tools(&agent), ["Read", "Bash", "Grep", "Edit"]);
        let permissions = agent.planner.permissions.unwrap();
        assert_eq!(permissions.allow.unwrap(), ["Bash(git log a,b)"]);
        let agent = parse("---\ntools: Read, Bash(git diff x,y)\n---\n").unwrap();
        assert_eq!(tools(&agent), ["Read", "Bash"]);
    }

    fn tools(agent: &AgentDef) -> Vec<String> {
        agent
            .planner
            .permissions
            .as_ref()
            .and_then(|p| p.tools.clone())
            .unwrap_or_default()
    }

    /// G1, G7, G60: every field of the agent's layer, and a clear error naming the file, the
    /// field and the bad rule or value.
    #[test]
    fn permission_fields_parse_and_bad_ones_name_the_rule() {
        let agent = parse(
            "---\nexcludeTools: bash, edit\nallow: [\"Bash(git *)\"]\ndeny: Bash(rm *)\nmode: plan\nnested: false\nmaxDepth: 2\nnestedAgents: scout, shell\nnestedModels: [\"anthropic/*\"]\n---\n",
        )
        .unwrap();
        let p = agent.planner.permissions.unwrap();
        assert_eq!(p.tools, None);
        assert_eq!(p.exclude_tools.unwrap(), ["bash", "edit"]);
        assert_eq!(p.allow.unwrap(), ["Bash(git *)"]);
        assert_eq!(p.deny.unwrap(), ["Bash(rm *)"]);
        assert_eq!(p.mode, Some(sublaunch_contract::PermissionMode::Plan));
        assert_eq!(p.nested, Some(false));
        assert_eq!(p.max_depth, Some(2));
        assert_eq!(p.nested_agents.unwrap(), ["scout", "shell"]);
        assert_eq!(p.nested_models.unwrap(), ["anthropic/*"]);
        assert_eq!(parse("---\nname: x\n---\n").unwrap().planner.permissions, None);
        for (text, field, needle) in [
            ("deny: [\"Bash(rm *\"]", "deny", "'Bash(rm *'"),
            ("allow: [\"Bash git\"]", "allow", "'Bash git'"),
            ("mode: rw", "mode", "'rw'"),
            ("nested: no-thanks", "nested", "true or false"),
            ("maxDepth: -1", "maxDepth", "whole number"),
            ("nestedAgents: 3", "nestedAgents", "a list"),
            (
                "excludeTools: [\"Bash(rm *)\"]",
                "excludeTools",
                "patterns belong in `deny`",
            ),
            ("tools: [\"Bash(\"]", "tools", "'Bash('"),
        ] {
            let error = parse(&format!("---\n{text}\n---\n")).expect_err(text).to_string();
            assert!(
                error.contains(field) && error.contains(needle) && error.contains("reviewer.md"),
                "{error}"
            );
        }
    }

    #[test]
    fn the_name_defaults_to_the_file_stem() {
        assert_eq!(parse("---\ndescription: x\n---\n").unwrap().name(), "reviewer");
    }

    #[test]
    fn runners_map_to_adapters() {
        let shell = parse("---\nrunner:\n  type: external-cli\n  adapter: shell\n---\n").unwrap();
        assert_eq!(shell.runner.adapter, AdapterId::Shell);
        assert_eq!(shell.planner.runner.unwrap().adapter.as_deref(), Some("shell"));
        let command =
            parse("---\nrunner:\n  type: command\n  command: [my-agent, --prompt, \"{task}\", -m, \"{model}\"]\n---\n")
                .unwrap();
        assert_eq!(
            command.runner.command.unwrap(),
            ["my-agent", "--prompt", "{task}", "-m", "{model}"]
        );
        let generic = parse("---\nrunner:\n  type: external-cli\n  command: cat\n  args: [-n]\n---\n").unwrap();
        assert_eq!(generic.runner.adapter, AdapterId::GenericCli);
        assert_eq!(generic.runner.command.unwrap(), ["cat", "-n"]);
    }

    #[test]
    fn broken_files_name_the_file_and_field() {
        let cases = [
            ("no frontmatter\n", None, "missing YAML frontmatter"),
            (
                "---\nname: [unclosed\n---\n",
                None,
                "broken YAML frontmatter at line 3, column 1: did not find",
            ),
            (
                "---\nrunner:\n  type: docker\n---\n",
                Some("runner.type"),
                "unknown runner type 'docker'",
            ),
            (
                "---\nrunner:\n  type: external-cli\n  adapter: gemini\n---\n",
                Some("runner.adapter"),
                "unknown adapter",
            ),
            (
                "---\nrunner:\n  type: command\n  command: [x, \"{prompt}\"]\n---\n",
                Some("runner.command"),
                "{prompt}",
            ),
            (
                "---\nrunner:\n  type: command\n---\n",
                Some("runner.command"),
                "needs a command",
            ),
            (
                "---\nthinking: extreme\n---\n",
                Some("thinking"),
                "'extreme' is not a thinking level",
            ),
            ("---\nmodel: 5\n---\n", Some("model"), "expected a string"),
            (
                "---\noutputSchema: [1]\n---\n",
                Some("outputSchema"),
                "JSON Schema object",
            ),
            ("---\nname: has space\n---\n", Some("name"), "not a valid agent name"),
        ];
        for (text, field, fragment) in cases {
            let error = parse(text).unwrap_err();
            assert_eq!(error.at.as_deref(), field, "{text:?}: {error}");
            assert!(error.to_string().contains(fragment), "{text:?}: {error}");
            assert!(error.to_string().starts_with("/agents/reviewer.md: "), "{error}");
        }
    }

    #[test]
    fn an_unclosed_frontmatter_is_reported() {
        assert!(
            parse("---\nname: x\n")
                .unwrap_err()
                .message
                .contains("missing YAML frontmatter")
        );
    }
    #[test]
    fn an_empty_frontmatter_takes_every_default() {
        let agent = parse("---\n---\nPrompt.\n").unwrap();
        assert_eq!(agent.name(), "reviewer");
        assert_eq!(agent.runner, RunnerSpec::adapter(AdapterId::Pi));
        assert_eq!(agent.system_prompt, "Prompt.\n");
    }

    #[test]
    fn an_output_schema_may_be_json_text_or_false() {
        let text = parse("---\noutputSchema: '{\"type\": \"object\"}'\n---\n").unwrap();
        assert_eq!(text.planner.output_schema.as_deref(), Some(r#"{"type":"object"}"#));
        assert_eq!(
            parse("---\noutputSchema: false\n---\n").unwrap().planner.output_schema,
            None
        );
        let error = parse("---\noutputSchema: 'not json'\n---\n").unwrap_err();
        assert_eq!(error.at.as_deref(), Some("outputSchema"));
    }

    #[test]
    fn runners_describe_themselves_for_listings() {
        let describe = |text: &str| {
            let runner = parse(text).unwrap().runner;
            (
                runner.kind(),
                runner.adapter_id(),
                runner.describe(),
                runner.program().map(str::to_owned),
            )
        };
        assert_eq!(
            describe("---\n---\n"),
            ("native", None, "native".into(), Some("pi".into()))
        );
        assert_eq!(
            describe("---\nrunner: {type: external-cli, adapter: codex-exec-writer, command: /opt/codex}\n---\n"),
            (
                "external-cli",
                Some("codex-exec-writer"),
                "external-cli/codex-exec-writer (/opt/codex)".into(),
                Some("/opt/codex".into())
            )
        );
        assert_eq!(
            describe("---\nrunner: {type: command, command: [tool, \"{task}\"]}\n---\n"),
            ("command", None, "command: tool {task}".into(), Some("tool".into()))
        );
        assert_eq!(
            describe("---\nrunner: {type: external-job}\n---\n"),
            ("external-job", None, "external-job".into(), None)
        );
    }
}
