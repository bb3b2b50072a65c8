//! Tool names and permissions for Claude Code: agent files name tools the pi way (`read, grep,
//! find, ls, bash, edit, write`); Claude Code calls them `Read, Grep, Glob, LS, Bash, Edit,
//! Write`. Other names (`mcp__server__tool`, `WebFetch`) pass through unchanged. What a step
//! may use was decided by the planner (rules G1–G5); this module only spells it the way Claude
//! Code's flags take it.

use sublaunch_protocol::records::config::{PermissionMode, ResolvedPermissions, Rule};

/// What a read-only Claude Code agent is pre-approved when no layer names its tools.
pub const CLAUDE_READ_DEFAULT: [&str; 4] = ["Read", "Grep", "Glob", "LS"];

/// What a writer Claude Code agent is pre-approved when no layer names its tools.
pub const CLAUDE_WRITER_DEFAULT: [&str; 8] = ["Read", "Grep", "Glob", "LS", "Edit", "MultiEdit", "Write", "Bash"];

/// Deny rules that hide sublaunch from an agent that may not launch nested runs: the tools of
/// an MCP server named `sublaunch`, and the command itself through Bash.
pub const CLAUDE_NO_NESTED: [&str; 2] = ["mcp__sublaunch", "Bash(sublaunch *)"];

/// The Claude Code name of an agent-file tool.
pub fn claude_name(tool: &str) -> String {
    let mapped = match tool.to_ascii_lowercase().as_str() {
        "read" => "Read",
        "grep" => "Grep",
        "find" | "glob" => "Glob",
        "ls" => "LS",
        "bash" => "Bash",
        "edit" => "Edit",
        "multiedit" => "MultiEdit",
        "write" => "Write",
        "notebookedit" => "NotebookEdit",
        "webfetch" | "web_fetch" | "fetch" => "WebFetch",
        "websearch" | "web_search" => "WebSearch",
        _ => return tool.to_owned(),
    };
    mapped.to_owned()
}

/// Claude Code's permission flags for a step, in the order they go on its command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClaudePermissions {
    /// `--tools`: the only built-in tools that exist (absent: Claude Code's default set).
    pub tools: Option<Vec<String>>,
    /// `--allowedTools`: tools and rules that run without asking.
    pub allowed: Vec<String>,
    /// `--disallowedTools`: tools that are hidden and rules that are refused.
    pub disallowed: Vec<String>,
    /// `--permission-mode`.
    pub mode: Option<&'static str>,
    /// `--strict-mcp-config`: no MCP server of the user's or the project's (their tools run
    /// outside any tool list).
    pub strict_mcp: bool,
}

fn push_new(into: &mut Vec<String>, item: String) {
    if !into.contains(&item) {
        into.push(item);
    }
}

/// Maps the resolved permissions to Claude Code's flags (rule G8): tools exist only when
/// listed; listed tools and allow rules are pre-approved, except that a tool with an allow rule
/// of its own (`Bash(git *)`) is pre-approved only as its rules say; exclusions and deny rules
/// are refused; `plan` and `acceptEdits` are its permission modes.
pub fn claude_permissions(p: &ResolvedPermissions) -> ClaudePermissions {
    let names = |list: &[String]| -> Vec<String> { list.iter().map(|t| claude_name(t.trim())).collect() };
    let excluded = names(&p.exclude_tools);
    let tools = p.tools.as_deref().map(names);
    let mut allowed = Vec::new();
    let base: Vec<String> = match &tools {
        Some(tools) => tools.clone(),
        None if p.mode == PermissionMode::Writer => CLAUDE_WRITER_DEFAULT.map(str::to_owned).to_vec(),
        None => CLAUDE_READ_DEFAULT.map(str::to_owned).to_vec(),
    };
    // A tool with a pattern rule is pre-approved only for what its rules match.
    let narrowed: Vec<String> = p
        .allow
        .iter()
        .filter_map(|rule| Rule::parse(rule).ok().filter(|r| r.pattern.is_some()))
        .map(|r| claude_name(r.tool))
        .collect();
    for tool in base
        .into_iter()
        .filter(|t| !excluded.contains(t) && !narrowed.contains(t))
    {
        push_new(&mut allowed, tool);
    }
    for rule in &p.allow {
        push_new(&mut allowed, rule.clone());
    }
    let mut disallowed = Vec::new();
    for item in excluded.into_iter().chain(p.deny.iter().cloned()) {
        push_new(&mut disallowed, item);
    }
    if !p.nested {
        for rule in CLAUDE_NO_NESTED {
            push_new(&mut disallowed, rule.to_owned());
        }
    }
    ClaudePermissions {
        tools,
        allowed,
        disallowed,
        mode: match p.mode {
            PermissionMode::Writer => Some("acceptEdits"),
            PermissionMode::Plan => Some("plan"),
            PermissionMode::ReadOnly => None,
        },
        strict_mcp: p.mode != PermissionMode::Writer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sublaunch_protocol::records::config::AdapterId;

    #[test]
    fn agent_tools_map_to_claude_names_and_rules_pass_through() {
        let mut p = ResolvedPermissions::adapter_default(AdapterId::ClaudeCodeWriter);
        p.tools = Some(["read", "find", "bash", "mcp__x__y"].map(str::to_owned).to_vec());
        p.allow = vec!["Bash(git *)".into()];
        p.deny = vec!["Bash(rm *)".into()];
        p.exclude_tools = vec!["bash".into()];
        p.nested = false;
        let flags = claude_permissions(&p);
        assert_eq!(flags.tools.unwrap(), ["Read", "Glob", "Bash", "mcp__x__y"]);
        assert_eq!(
            flags.allowed,
            ["Read", "Glob", "mcp__x__y", "Bash(git *)"],
            "Bash only as its rule says"
        );
        assert_eq!(
            flags.disallowed,
            ["Bash", "Bash(rm *)", "mcp__sublaunch", "Bash(sublaunch *)"]
        );
        assert_eq!((flags.mode, flags.strict_mcp), (Some("acceptEdits"), false));
    }

    #[test]
    fn a_read_only_default_keeps_todays_flags() {
        let flags = claude_permissions(&ResolvedPermissions::adapter_default(AdapterId::ClaudeCode));
        assert_eq!(flags.tools, None);
        assert_eq!(flags.allowed, CLAUDE_READ_DEFAULT);
        assert_eq!(flags.disallowed, ["Bash", "Edit", "MultiEdit", "Write", "NotebookEdit"]);
        assert_eq!((flags.mode, flags.strict_mcp), (None, true));
    }
}
