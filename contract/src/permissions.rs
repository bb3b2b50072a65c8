//! What an agent may do (`permissions` in wit/planner.wit): which tools it has, which it never
//! has, which tool uses are pre-approved or denied (`Tool` or `Tool(pattern)` rules), whether
//! it may change files (its mode), and whether it may launch nested runs. Agents, steps,
//! tasks, runs and settings each give a layer; the planner resolves the most restrictive of
//! them per step (rules G1–G4) and the runner maps the result to each CLI's own controls.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What an agent may change, least to most: `plan` < `read-only` < `writer` (rule G2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(enum)
)]
#[repr(u8)]
pub enum PermissionMode {
    /// Read and explore, and propose a plan; no edits and no commands that change anything.
    #[cfg_attr(feature = "wasmtime", component(name = "plan"))]
    Plan,
    /// Read and explore; no tool that changes files.
    #[cfg_attr(feature = "wasmtime", component(name = "read-only"))]
    ReadOnly,
    /// May edit files in its working directory and run commands.
    #[cfg_attr(feature = "wasmtime", component(name = "writer"))]
    Writer,
}

impl PermissionMode {
    /// Every mode, least permissive first.
    pub const ALL: [Self; 3] = [Self::Plan, Self::ReadOnly, Self::Writer];

    /// The mode as users write it (`read-only`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::ReadOnly => "read-only",
            Self::Writer => "writer",
        }
    }

    /// The mode a user wrote, or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == name)
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for PermissionMode {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::from_name(name).ok_or_else(|| format!("unknown mode '{name}'; use plan, read-only or writer"))
    }
}

/// One layer of the permission contract, as an agent, step, task, run or settings gives it.
/// Every field is optional: an absent one leaves the other layers to decide.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct Permissions {
    /// The only tools the agent has (absent: the CLI's default set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Tools the agent never has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "exclude-tools"))]
    pub exclude_tools: Option<Vec<String>>,
    /// Tool uses that run without asking: `Tool` or `Tool(pattern)`, e.g. `Bash(git *)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
    /// Tool uses that are always refused: `Tool` or `Tool(pattern)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny: Option<Vec<String>>,
    /// What the agent may change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<PermissionMode>,
    /// Whether the agent may launch nested runs of sublaunch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nested: Option<bool>,
    /// How many levels of nested runs may be launched below this one (0: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "max-depth"))]
    pub max_depth: Option<u32>,
    /// The only agents nested runs launched from this one may start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "nested-agents"))]
    pub nested_agents: Option<Vec<String>>,
    /// The only models nested runs may use: `provider/id` patterns, `*` matching any text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "nested-models"))]
    pub nested_models: Option<Vec<String>>,
}

impl Permissions {
    /// Whether the layer says nothing.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }

    /// Every rule of the layer that does not parse, as `(field, error)`.
    pub fn bad_rules(&self) -> impl Iterator<Item = (&'static str, RuleError)> + '_ {
        [("allow", &self.allow), ("deny", &self.deny)]
            .into_iter()
            .flat_map(|(field, rules)| rules.iter().flatten().map(move |rule| (field, rule)))
            .filter_map(|(field, rule)| Rule::parse(rule).err().map(|e| (field, e)))
    }
}

/// The permissions a step runs with, after every layer is combined (rules G1–G4): what the
/// runner maps to the agent's CLI.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct ResolvedPermissions {
    /// The only tools the agent has (absent: the CLI's default set, less `exclude-tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Tools the agent never has.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "wasmtime", component(name = "exclude-tools"))]
    pub exclude_tools: Vec<String>,
    /// Pre-approved tool uses (rules).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Refused tool uses (rules).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// What the agent may change.
    pub mode: PermissionMode,
    /// Whether the agent may launch nested runs.
    pub nested: bool,
    /// How many levels of nested runs may be launched below this one (absent: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "max-depth"))]
    pub max_depth: Option<u32>,
    /// The only agents nested runs may start (absent: any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "nested-agents"))]
    pub nested_agents: Option<Vec<String>>,
    /// The only models nested runs may use, as patterns (absent: any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "nested-models"))]
    pub nested_models: Option<Vec<String>>,
}

impl ResolvedPermissions {
    /// What an agent of `adapter` runs with when no layer says anything: its default mode,
    /// its CLI's default tools less those that change files when it is not a writer, no
    /// rules, nested runs allowed.
    pub fn adapter_default(adapter: crate::AdapterId) -> Self {
        combine(Some(adapter), []).permissions
    }

    /// A one-line summary for people: `mode read-only; tools Read, Grep; deny Bash(rm *)`.
    pub fn summary(&self) -> String {
        let mut parts = vec![format!("mode {}", self.mode)];
        let list = |items: &[String]| {
            if items.is_empty() {
                "none".to_owned()
            } else {
                items.join(", ")
            }
        };
        match &self.tools {
            Some(tools) => parts.push(format!("tools {}", list(tools))),
            None => parts.push("tools: the CLI's default set".to_owned()),
        }
        for (name, items) in [
            ("excluded", &self.exclude_tools),
            ("allow", &self.allow),
            ("deny", &self.deny),
        ] {
            if !items.is_empty() {
                parts.push(format!("{name} {}", list(items)));
            }
        }
        if !self.nested {
            parts.push("no nested runs".to_owned());
        } else {
            if let Some(depth) = self.max_depth {
                parts.push(format!("nested runs {depth} deep"));
            }
            if let Some(agents) = &self.nested_agents {
                parts.push(format!("nested agents {}", list(agents)));
            }
            if let Some(models) = &self.nested_models {
                parts.push(format!("nested models {}", list(models)));
            }
        }
        parts.join("; ")
    }
}

/// Whether two tool names are the same tool (the CLIs' own names and agent files' lower-case
/// ones: `Bash` and `bash`).
fn same_tool(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// Items of `a` that are also in `b`, in `a`'s order.
fn intersect(a: Vec<String>, b: &[String], same: fn(&str, &str) -> bool) -> Vec<String> {
    a.into_iter().filter(|t| b.iter().any(|u| same(t, u))).collect()
}

/// Adds the items of `more` that `into` lacks, in order.
fn union(into: &mut Vec<String>, more: &[String]) {
    for item in more {
        if !into.iter().any(|i| same_tool(i, item)) {
            into.push(item.clone());
        }
    }
}

/// The result of [`combine`]: the permissions, and the tools a layer listed that a read-only
/// or plan step does not get (its CLI's writing tools), for a warning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Combined {
    /// The combined permissions.
    pub permissions: ResolvedPermissions,
    /// Listed tools taken out because the step may not change files.
    pub withheld: Vec<String>,
}

/// The most restrictive of `layers` for an agent of `adapter` (rules G1, G2, G3, G4): tools intersect
/// (an absent list: unrestricted), excluded tools and deny rules add up, allow rules are kept
/// only where every layer that lists allow rules agrees, the mode is the lowest (the adapter's
/// default mode counts as the agent's), nested runs are off when any layer says so. A step
/// that may not change files never has its CLI's writing tools. `None` for the adapter: a
/// runner the caller does not know (writer by default, no tool names known).
pub fn combine<'a>(adapter: Option<crate::AdapterId>, layers: impl IntoIterator<Item = &'a Permissions>) -> Combined {
    let default_mode = adapter.map_or(PermissionMode::Writer, |a| a.permission_support().default_mode);
    let mut resolved = ResolvedPermissions {
        tools: None,
        exclude_tools: Vec::new(),
        allow: Vec::new(),
        deny: Vec::new(),
        mode: default_mode,
        nested: true,
        max_depth: None,
        nested_agents: None,
        nested_models: None,
    };
    let mut allow: Option<Vec<String>> = None;
    for p in layers {
        if let Some(tools) = &p.tools {
            resolved.tools = Some(match resolved.tools.take() {
                None => tools.clone(),
                Some(so_far) => intersect(so_far, tools, same_tool),
            });
        }
        if let Some(rules) = &p.allow {
            allow = Some(match allow.take() {
                None => rules.clone(),
                Some(so_far) => intersect(so_far, rules, |a, b| a == b),
            });
        }
        union(
            &mut resolved.exclude_tools,
            p.exclude_tools.as_deref().unwrap_or_default(),
        );
        for rule in p.deny.iter().flatten() {
            if !resolved.deny.contains(rule) {
                resolved.deny.push(rule.clone());
            }
        }
        resolved.mode = resolved.mode.min(p.mode.unwrap_or(PermissionMode::Writer));
        resolved.nested &= p.nested.unwrap_or(true) && p.max_depth != Some(0);
        if let Some(depth) = p.max_depth {
            resolved.max_depth = Some(resolved.max_depth.map_or(depth, |d| d.min(depth)));
        }
        for (into, list) in [
            (&mut resolved.nested_agents, &p.nested_agents),
            (&mut resolved.nested_models, &p.nested_models),
        ] {
            if let Some(list) = list {
                *into = Some(match into.take() {
                    None => list.clone(),
                    Some(so_far) => intersect(so_far, list, |a, b| a == b),
                });
            }
        }
    }
    resolved.allow = allow.unwrap_or_default();
    let write_tools: Vec<String> = match (resolved.mode, adapter) {
        (PermissionMode::Writer, _) | (_, None) => Vec::new(),
        (_, Some(adapter)) => adapter.write_tools().iter().map(|t| (*t).to_owned()).collect(),
    };
    let mut withheld = Vec::new();
    if let Some(tools) = &mut resolved.tools {
        withheld = tools
            .iter()
            .filter(|t| write_tools.iter().any(|w| same_tool(w, t)))
            .cloned()
            .collect();
        let excluded = resolved.exclude_tools.clone();
        tools.retain(|t| !write_tools.iter().chain(&excluded).any(|w| same_tool(w, t)));
    }
    union(&mut resolved.exclude_tools, &write_tools);
    Combined {
        permissions: resolved,
        withheld,
    }
}

/// A permission rule: a tool name, optionally with an argument pattern (`Bash(git *)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule<'a> {
    /// The tool the rule is about.
    pub tool: &'a str,
    /// The pattern its argument must match, when the rule has one.
    pub pattern: Option<&'a str>,
}

/// Why a permission rule does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bad permission rule '{}': {}; write Tool or Tool(pattern), e.g. Bash(git *)",
            self.rule, self.reason
        )
    }
}

impl std::error::Error for RuleError {}

impl<'a> Rule<'a> {
    /// Parses `Tool` or `Tool(pattern)` (rule G7): a tool name of letters, digits, `_`, `-`, `.` and
    /// `:` (MCP tools are `mcp__server__tool`), and a non-empty pattern in one pair of
    /// parentheses that ends the rule.
    pub fn parse(rule: &'a str) -> Result<Self, RuleError> {
        let bad = |reason| RuleError {
            rule: rule.to_owned(),
            reason,
        };
        let (tool, pattern) = match rule.split_once('(') {
            None => (rule, None),
            Some((tool, rest)) => {
                let pattern = rest
                    .strip_suffix(')')
                    .ok_or_else(|| bad("the pattern has no closing ')'"))?;
                if pattern.trim().is_empty() {
                    return Err(bad("the pattern in parentheses is empty"));
                }
                (tool, Some(pattern))
            }
        };
        if tool.is_empty() {
            return Err(bad("it names no tool"));
        }
        if !tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        {
            return Err(bad(
                "a tool name has only letters, digits, '_', '-', '.' and ':' (one rule per item: no commas or spaces)",
            ));
        }
        Ok(Self { tool, pattern })
    }
}

/// Which fields of the contract an adapter's CLI enforces itself (data of the adapter table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PermissionSupport {
    /// It takes a list of the only tools the agent has.
    pub tools: bool,
    /// It takes a list of tools the agent never has.
    pub exclude_tools: bool,
    /// It takes allow and deny rules, argument patterns included.
    pub rules: bool,
    /// The modes it can enforce (`[plan, read-only, writer]`).
    pub modes: [bool; 3],
    /// It can hide sublaunch from its agent (nested runs off).
    pub nested_off: bool,
    /// The mode of an agent of this adapter when no layer names one.
    pub default_mode: PermissionMode,
}

impl PermissionSupport {
    /// Whether it can enforce `mode`.
    pub const fn enforces_mode(self, mode: PermissionMode) -> bool {
        self.modes[mode as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_or_say_what_is_wrong() {
        assert_eq!(
            Rule::parse("Bash(git *)"),
            Ok(Rule {
                tool: "Bash",
                pattern: Some("git *")
            })
        );
        assert_eq!(Rule::parse("mcp__sublaunch__run").map(|r| r.pattern), Ok(None));
        for (rule, reason) in [
            ("Bash(git *", "closing"),
            ("Bash()", "empty"),
            ("(x)", "names no tool"),
            ("Read,Bash", "no commas"),
            ("", "names no tool"),
        ] {
            let error = Rule::parse(rule).expect_err(rule).to_string();
            assert!(
                error.contains(&format!("'{rule}'")) && error.contains(reason),
                "{error}"
            );
        }
    }

    #[test]
    fn modes_order_from_plan_to_writer() {
        assert!(PermissionMode::Plan < PermissionMode::ReadOnly && PermissionMode::ReadOnly < PermissionMode::Writer);
        assert_eq!("read-only".parse(), Ok(PermissionMode::ReadOnly));
        assert!("rw".parse::<PermissionMode>().unwrap_err().contains("'rw'"));
    }
}
