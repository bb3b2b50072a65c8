//! The live progress block as a person sees it: `run --wait` inside a real terminal (a tmux
//! pane), and the assertions on the SCREEN tmux keeps (`capture-pane`), not on the bytes
//! written. Wide characters (emoji, CJK) and combining marks must not make a frame wrap: a
//! wrapped frame throws the redraw off by a row, and every later frame leaves a copy of a
//! line behind and indents the next one.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use sublaunch_tests::cli::{text, write};
use sublaunch_tests::launch_harness::Scratch;

/// Panes made so far (their sockets' names).
static PANES: AtomicUsize = AtomicUsize::new(0);

/// A tmux server of its own (its socket in the scratch directory) with one pane running a
/// command at a fixed size.
struct Pane {
    socket: PathBuf,
}

impl Pane {
    /// Runs `command` (a shell command line) in a `columns`×`rows` pane, with the CLI's
    /// environment and `extra` variables. When it has ended, the pane stays open (its output
    /// on screen) and the tmux channel `finished` is signalled.
    fn run(scratch: &Scratch, columns: u16, rows: u16, command: &str, extra: &[(&str, &str)]) -> Self {
        // A socket per pane: a server that was killed may still hold the last one.
        let socket = scratch
            .work()
            .join(format!("tmux-{}.sock", PANES.fetch_add(1, Ordering::Relaxed)));
        let tmux = Self { socket };
        // Like an interactive shell, the pane's shell outlives a Ctrl-C meant for its command
        // (a trapped signal is reset to its default in the command).
        let script = format!(
            "trap true INT; {command}; echo \"exit=$?\"; tmux -S '{}' wait-for -S finished; exec cat",
            tmux.socket.display()
        );
        let output = Command::new("tmux")
            .args([
                "-S",
                &tmux.socket.to_string_lossy(),
                "-f",
                "/dev/null",
                "new-session",
                "-d",
            ])
            .args(["-x", &columns.to_string(), "-y", &rows.to_string(), "sh", "-c", &script])
            .current_dir(scratch.work())
            .env_clear()
            .envs(scratch.cli_env())
            .envs(extra.iter().copied())
            .env("TERM", "xterm-256color")
            .output()
            .expect("tmux starts");
        assert!(output.status.success(), "tmux: {}", text(&output.stderr));
        tmux
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-S", &self.socket.to_string_lossy()])
            .args(args)
            .output()
            .expect("tmux runs")
    }

    /// Waits until the pane's command has ended (at most a minute), then returns the whole
    /// screen, scrollback included, one string per row.
    fn screen_at_end(&self) -> Vec<String> {
        let waited = Command::new("timeout")
            .args([
                "60",
                "tmux",
                "-S",
                &self.socket.to_string_lossy(),
                "wait-for",
                "finished",
            ])
            .status()
            .expect("timeout runs tmux");
        assert!(waited.success(), "the command in the pane did not end within a minute");
        let captured = self.tmux(&["capture-pane", "-p", "-S", "-", "-E", "-"]);
        assert!(captured.status.success(), "{}", text(&captured.stderr));
        let screen = text(&captured.stdout);
        let mut rows: Vec<String> = screen.lines().map(str::to_owned).collect();
        while rows.last().is_some_and(|r| r.trim().is_empty()) {
            rows.pop();
        }
        rows
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

/// The CLI run in a pane: `sublaunch ARGS`.
fn sublaunch(args: &str) -> String {
    format!("{} {args}", sublaunch_tests::bin("sublaunch").display())
}

fn chain(scratch: &Scratch, yaml: &str) -> PathBuf {
    write(&scratch.work().join("chain.yaml"), yaml)
}

fn rows_containing<'a>(screen: &'a [String], needle: &str) -> Vec<&'a String> {
    screen.iter().filter(|row| row.contains(needle)).collect()
}

fn shown(screen: &[String]) -> String {
    screen.join("\n")
}

/// The screen of `run --chain <file> --wait` in a pane of that size, with colour off.
fn run_chain(scratch: &Scratch, file: &Path, columns: u16, rows: u16) -> Vec<String> {
    let command = sublaunch(&format!("run --chain {} --wait", file.display()));
    Pane::run(scratch, columns, rows, &command, &[("NO_COLOR", "1")]).screen_at_end()
}

#[test]
fn emoji_cjk_and_combining_marks_leave_one_line_per_step_on_screen() {
    let scratch = Scratch::new("screen-wide");
    // Each step keeps running long enough for a dozen frames with its wide line on screen.
    write(
        &scratch.work().join("emoji.sh"),
        "echo '✅ All 42 tests pass 🚀'; sleep 1.2\n",
    );
    write(
        &scratch.work().join("cjk.sh"),
        "echo '日本語テキストの出力です'; sleep 1.2\n",
    );
    let long = format!("cafe\u{301} {}", "長い行 ".repeat(40));
    write(&scratch.work().join("long.sh"), &format!("echo '{long}'; sleep 1.2\n"));
    let file = chain(
        &scratch,
        "steps:\n  - {agent: shell, task: 'sh emoji.sh'}\n  - {agent: shell, label: 字句, task: 'sh cjk.sh'}\n  - {agent: shell, task: 'sh long.sh'}\n",
    );
    // The answer goes to a file: the screen holds what stderr drew.
    let command = sublaunch(&format!("run --chain {} --wait >answer.txt", file.display()));
    let screen = Pane::run(&scratch, 100, 40, &command, &[("NO_COLOR", "1")]).screen_at_end();
    let all = shown(&screen);
    assert!(all.contains("exit=0"), "{all}");
    // One row per step: no frame left a copy behind.
    for needle in ["All 42 tests pass", "日本語テキストの出力です", "cafe\u{301} 長い行"] {
        assert_eq!(
            rows_containing(&screen, needle).len(),
            1,
            "{needle} once on screen:\n{all}"
        );
    }
    // The final frame, each line at column 0 (nothing indented by a drifting cursor), the
    // agent column as wide as its widest cell in columns (`shell (字句)` is 12).
    for start in [
        format!("✓ 1  {:<12}  complete", "shell"),
        "✓ 2  shell (字句)  complete".to_owned(),
        format!("✓ 3  {:<12}  complete", "shell"),
    ] {
        assert!(
            screen.iter().any(|row| row.starts_with(&start)),
            "a row starts with {start:?}:\n{all}"
        );
    }
    let summary = rows_containing(&screen, "3 steps: 3 complete in ");
    assert_eq!(summary.len(), 1, "{all}");
    assert!(summary[0].starts_with("3 steps: 3 complete in "), "{all}");
    // The long line is cut at the width, with an ellipsis, on its row.
    let long_row = rows_containing(&screen, "長い行")[0];
    assert!(long_row.trim_end().ends_with('…'), "{all}");
    // Nothing else on screen: the run id, 3 step rows, the summary, the outcome, the exit.
    let used: Vec<&String> = screen.iter().filter(|row| !row.trim().is_empty()).collect();
    assert_eq!(used.len(), 7, "{all}");
}

#[test]
fn a_narrow_terminal_shrinks_the_label_column_first() {
    let scratch = Scratch::new("screen-narrow");
    let file = chain(
        &scratch,
        "steps:\n\
         \x20 - {agent: shell, label: a-rather-long-label-for-this-step, task: \"echo step-output-line; sleep 0.3\"}\n",
    );
    let screen = run_chain(&scratch, &file, 60, 20);
    let all = shown(&screen);
    let row = screen
        .iter()
        .find(|row| row.starts_with("✓ 1  shell (a-"))
        .unwrap_or_else(|| panic!("the step's final row:\n{all}"));
    // The state, the elapsed time and the start of the output stay on the row.
    assert!(row.contains("…  complete"), "the label is cut, not the state: {row:?}");
    assert!(row.contains("s  step-outp"), "elapsed time and output: {row:?}");
    assert!(row.chars().count() < 60, "{row:?}");
}

#[test]
fn marks_are_red_and_green_on_a_terminal_and_plain_under_no_color() {
    let scratch = Scratch::new("screen-colour");
    let file = chain(
        &scratch,
        "mode: parallel\nsteps:\n  - {agent: shell, task: 'echo fine'}\n  - {agent: shell, task: 'echo broken; exit 3'}\n",
    );
    let command = sublaunch(&format!("run --chain {} --wait", file.display()));
    let coloured = Pane::run(&scratch, 100, 30, &command, &[]);
    coloured.screen_at_end();
    // `-e` keeps the colours of the screen as escape sequences.
    let captured = text(
        &coloured
            .tmux(&["capture-pane", "-p", "-e", "-S", "-", "-E", "-"])
            .stdout,
    );
    assert!(captured.contains("\u{1b}[32m✓"), "a green ✓: {captured:?}");
    assert!(captured.contains("\u{1b}[31m✗"), "a red ✗: {captured:?}");
    drop(coloured);

    let plain = Pane::run(&scratch, 100, 30, &command, &[("NO_COLOR", "1")]);
    plain.screen_at_end();
    let captured = text(&plain.tmux(&["capture-pane", "-p", "-e", "-S", "-", "-E", "-"]).stdout);
    assert!(captured.contains("✗ 1.2  shell  failed"), "{captured:?}");
    assert!(
        !captured.contains("\u{1b}[31m"),
        "no colour under NO_COLOR: {captured:?}"
    );
}

#[test]
fn ctrl_c_on_run_wait_says_the_run_goes_on_and_how_to_stop_it() {
    let scratch = Scratch::new("screen-interrupt");
    let gate = scratch.work().join("gate");
    assert!(Command::new("mkfifo").arg(&gate).status().unwrap().success());
    let task = format!(
        "echo waiting-for-the-gate; read line < {}; echo released",
        gate.display()
    );
    let command = sublaunch(&format!("run --agent shell --task '{task}' --wait"));
    let pane = Pane::run(&scratch, 120, 20, &command, &[("NO_COLOR", "1")]);
    // Ctrl-C once the block shows the step running (its handler is set up by then).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let id = loop {
        let screen = text(&pane.tmux(&["capture-pane", "-p"]).stdout);
        if screen.contains("running") && screen.contains("waiting-for-the-gate") {
            break screen.lines().next().unwrap_or_default().trim().to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "never running:\n{screen}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(pane.tmux(&["send-keys", "C-c"]).status.success());
    let screen = pane.screen_at_end();
    let all = shown(&screen);
    assert!(all.contains("exit=130"), "{all}");
    let message = format!("{id} goes on in the background; `sublaunch stop {id}` ends it");
    let said = rows_containing(&screen, &message);
    assert_eq!(said.len(), 1, "{all}");
    // The run did go on: it ends when released, complete.
    std::fs::write(&gate, "go\n").unwrap();
    let waited = scratch.cli(&["wait", &id]).output().unwrap();
    assert_eq!(
        text(&waited.stdout),
        format!("{id}: complete\n"),
        "{}",
        text(&waited.stderr)
    );
}
