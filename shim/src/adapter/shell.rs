//! The built-in `shell` adapter (spec README "sublaunch additions"): the step's `command.argv`
//! (`["sh","-c",task]`) in the step's cwd; stdout is untrusted plain text.

use super::{Adapter, AgentCommand, OutputParser, ParsedLine};
use sublaunch_runfiles::config::RunnerConfig;

/// Bytes of a text line kept for its `subagent.child.stdout` event.
pub const TEXT_LINE_RETAIN: usize = 64 * 1024;

/// The `shell` adapter.
#[derive(Clone, Copy, Debug, Default)]
pub struct ShellAdapter;

impl Adapter for ShellAdapter {
    fn id(&self) -> &'static str {
        "shell"
    }

    fn command(&self, cfg: &RunnerConfig, index: usize) -> Result<AgentCommand, String> {
        let command = cfg
            .step_command(index)
            .filter(|c| !c.argv.is_empty())
            .ok_or_else(|| format!("Step {index} has no command to run."))?;
        Ok(AgentCommand {
            argv: command.argv.clone(),
            env: command.env.clone(),
            cwd: cfg.step_cwd(index).to_owned(),
        })
    }

    fn parser(&self) -> Box<dyn OutputParser> {
        Box::new(TextParser)
    }
}

/// Plain text: every line is a `subagent.child.stdout` event; the output is the stdout tail.
#[derive(Clone, Copy, Debug, Default)]
pub struct TextParser;

impl OutputParser for TextParser {
    fn line_retain_limit(&self) -> usize {
        TEXT_LINE_RETAIN
    }

    fn needs_lines(&self) -> bool {
        false
    }

    fn stdout_line(&mut self, _line: &[u8], _full_len: usize) -> ParsedLine {
        ParsedLine::Text
    }

    fn finish(&mut self, stdout_tail: &[u8]) -> String {
        String::from_utf8_lossy(stdout_tail).trim_end().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sublaunch_runfiles::config::StepConfig;

    #[test]
    fn the_shell_step_runs_its_argv_in_its_cwd() {
        let cfg = RunnerConfig {
            id: "r".into(),
            steps: vec![StepConfig::shell("echo hi", "/tmp", Default::default())],
            result_path: "/x/r.json".into(),
            cwd: "/".into(),
            async_dir: "/x/runs/r".into(),
            session_id: None,
            completion_owner_id: None,
            tool_call_id: None,
            revival_lease: None,
            timeout_ms: None,
            deadline_at: None,
            command: None,
            runner_process_instance_id: "i".into(),
            launch_barrier_token: Some("i".into()),
            extra: Default::default(),
        };
        let command = ShellAdapter.command(&cfg, 0).unwrap();
        assert_eq!(command.argv, ["sh", "-c", "echo hi"]);
        assert_eq!(command.cwd, "/tmp");
        assert_eq!(TextParser.finish(b"out\n"), "out");
    }
}
