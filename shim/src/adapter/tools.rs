//! Tool names for Claude Code: agent files name tools the pi way (`read, grep, find, ls,
//! bash, edit, write`); Claude Code calls them `Read, Grep, Glob, LS, Bash, Edit, Write`. Other
//! names (`Bash(git diff:*)`, `mcp__server__tool`, `WebFetch`) pass through unchanged, except
//! that a read-only agent gets no MCP tool (a read-only run starts no MCP server either).

/// Claude Code tools that change files or run commands: never allowed to a read-only agent.
pub const CLAUDE_WRITE_TOOLS: [&str; 5] = ["Bash", "Edit", "MultiEdit", "Write", "NotebookEdit"];

/// What a read-only Claude Code agent gets when its file names no tools.
pub const CLAUDE_READ_DEFAULT: [&str; 4] = ["Read", "Grep", "Glob", "LS"];

/// What a writer Claude Code agent gets when its file names no tools.
pub const CLAUDE_WRITER_DEFAULT: [&str; 8] = ["Read", "Grep", "Glob", "LS", "Edit", "MultiEdit", "Write", "Bash"];

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
        "webfetch" | "web_fetch" | "fetch" => "WebFetch",
        "websearch" | "web_search" => "WebSearch",
        _ => return tool.to_owned(),
    };
    mapped.to_owned()
}

/// Whether a Claude Code tool (or tool pattern like `Bash(git diff:*)`) changes things.
pub fn is_write_tool(tool: &str) -> bool {
    let base = tool.split('(').next().unwrap_or(tool);
    CLAUDE_WRITE_TOOLS.contains(&base)
}

/// The `--allowedTools` list: the agent's tools mapped to Claude names (the adapter's default
/// when none), without write tools and MCP tools for a read-only agent: an MCP tool runs
/// whatever its server does.
pub fn claude_allowed(tools: &[String], writer: bool) -> Vec<String> {
    let mut allowed: Vec<String> = if tools.is_empty() {
        let default: &[&str] = if writer {
            &CLAUDE_WRITER_DEFAULT
        } else {
            &CLAUDE_READ_DEFAULT
        };
        default.iter().map(|t| (*t).to_owned()).collect()
    } else {
        tools.iter().map(|t| claude_name(t.trim())).collect()
    };
    if !writer {
        allowed.retain(|t| !is_write_tool(t) && !t.starts_with("mcp__"));
    }
    allowed.dedup();
    allowed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_tools_map_to_claude_names() {
        let tools: Vec<String> = ["read", "find", "bash", "mcp__x__y", "Bash(git diff:*)"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(
            claude_allowed(&tools, true),
            ["Read", "Glob", "Bash", "mcp__x__y", "Bash(git diff:*)"]
        );
        assert_eq!(claude_allowed(&tools, false), ["Read", "Glob"]);
        assert_eq!(claude_allowed(&[], false), CLAUDE_READ_DEFAULT);
    }
}
