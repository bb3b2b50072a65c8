//! The user documentation (`README.md` and `docs/`) against the CLI and the repository:
//!
//! - the reference (`docs/reference.md`) names exactly the commands and flags that the built
//!   `sublaunch` defines (its `--help`), so a new flag without a line fails, and so does a
//!   line for a flag that is gone; a `sublaunch …` command line anywhere in the docs uses only
//!   flags its command has;
//! - no link leaves the repository, and every link inside it reaches a file (and a heading)
//!   that exists;
//! - the examples marked `<!-- example: runs -->` run, against a scratch state root, and print
//!   what the page shows (docs/development.md, "Examples that run");
//! - the reference also names exactly the chain-file keys the CLI accepts and the MCP tools and
//!   parameters `sublaunch mcp` serves, and every `SUBLAUNCH_*` variable the host and the
//!   runner read or set (but their internal ones).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use sublaunch_tests::launch_harness::Scratch;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The published pages: `README.md` and every `.md` under `docs/`, except `docs/drafts/`
/// (texts on their way into these pages).
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if entry.file_name() != "drafts" {
                    walk(&path, found);
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    let root = workspace();
    let mut found = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut found);
    found.sort();
    found
}

fn relative(path: &Path) -> String {
    path.strip_prefix(workspace()).unwrap_or(path).display().to_string()
}

// ---------------------------------------------------------------------------------------
// The CLI's own definition, from its help.

/// `sublaunch <words…> --help`.
fn help(words: &[&str]) -> String {
    let output = Command::new(sublaunch_tests::bin("sublaunch"))
        .args(words)
        .arg("--help")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(output.status.success(), "sublaunch {words:?} --help failed");
    String::from_utf8(output.stdout).unwrap()
}

/// The lines of a help section (`Commands:`, `Options:`) up to the blank line that ends it.
fn section<'a>(help: &'a str, title: &str) -> Vec<&'a str> {
    help.lines()
        .skip_while(|l| *l != title)
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect()
}

/// The subcommands a help lists (without clap's `help`).
fn subcommands(help: &str) -> Vec<String> {
    section(help, "Commands:")
        .into_iter()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The flags a help lists (`-f`, `--follow`), without `--help` and `--version`.
fn help_flags(help: &str) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    for line in section(help, "Options:") {
        let line = line.trim_start();
        if !line.starts_with('-') {
            continue;
        }
        for token in line.split_whitespace() {
            let token = token.trim_end_matches(',');
            if token.starts_with('<') {
                continue;
            }
            if !token.starts_with('-') {
                break;
            }
            flags.insert(token.to_owned());
        }
    }
    for own in ["-h", "--help", "-V", "--version"] {
        flags.remove(own);
    }
    flags
}

/// Every command path (`run`, `models resolve`) with its flags, as the binary defines them.
fn cli_commands() -> BTreeMap<String, BTreeSet<String>> {
    fn visit(path: Vec<String>, found: &mut BTreeMap<String, BTreeSet<String>>) {
        let words: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&words);
        if !path.is_empty() {
            found.insert(path.join(" "), help_flags(&text));
        }
        for sub in subcommands(&text) {
            let mut deeper = path.clone();
            deeper.push(sub);
            visit(deeper, found);
        }
    }
    let mut found = BTreeMap::new();
    visit(Vec::new(), &mut found);
    found
}

// ---------------------------------------------------------------------------------------
// The reference.

/// The text between backquotes in `text`.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The commands the reference documents (each a `### \`sublaunch …\`` heading) with the
/// flags of its table (the first cell of each row: `` `-f`, `--follow` ``).
fn reference_commands() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(workspace().join("docs/reference.md")).unwrap();
    let mut commands = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.starts_with('#') {
            current = line
                .strip_prefix("### `sublaunch ")
                .and_then(|rest| rest.strip_suffix('`'))
                .map(str::to_owned);
            if let Some(name) = &current {
                assert!(
                    commands.insert(name.clone(), BTreeSet::new()).is_none(),
                    "docs/reference.md documents `sublaunch {name}` twice"
                );
            }
            continue;
        }
        let (Some(name), Some(row)) = (&current, line.strip_prefix("| `-")) else {
            continue;
        };
        let first_cell = format!("`-{}", row.split(" | ").next().unwrap());
        for span in code_spans(&first_cell) {
            let flag = span.split_whitespace().next().unwrap_or_default();
            if flag.starts_with('-') {
                commands.get_mut(name).unwrap().insert(flag.to_owned());
            }
        }
    }
    commands
}

#[test]
fn the_reference_documents_exactly_the_commands_and_flags_of_the_cli() {
    let cli = cli_commands();
    let documented = reference_commands();
    assert!(cli.len() >= 15 && cli.contains_key("worktrees prune"), "{cli:?}");
    let missing: Vec<&String> = cli.keys().filter(|c| !documented.contains_key(*c)).collect();
    let gone: Vec<&String> = documented.keys().filter(|c| !cli.contains_key(*c)).collect();
    assert!(
        missing.is_empty() && gone.is_empty(),
        "docs/reference.md is out of step with the CLI's commands.\n\
         Commands without a `### \\`sublaunch …\\`` section: {missing:?}\n\
         Sections for commands the CLI does not have: {gone:?}"
    );
    let mut problems = Vec::new();
    for (command, flags) in &cli {
        let written = &documented[command];
        for flag in flags.difference(written) {
            problems.push(format!("sublaunch {command} {flag}: not in the reference"));
        }
        for flag in written.difference(flags) {
            problems.push(format!("sublaunch {command} {flag}: in the reference, not in the CLI"));
        }
    }
    assert!(problems.is_empty(), "docs/reference.md:\n{}", problems.join("\n"));
}

/// The keys of the reference's chain-file table, each with where it may stand (`top`, `step`,
/// `group`: the second cell).
fn reference_chain_keys() -> BTreeSet<(String, String)> {
    let text = std::fs::read_to_string(workspace().join("docs/reference.md")).unwrap();
    let table = text
        .split("## Chain files")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("docs/reference.md has a `## Chain files` section");
    let mut keys = BTreeSet::new();
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        for key in code_spans(cells[0]) {
            for place in cells[1].split(", ") {
                keys.insert((key.to_owned(), place.to_owned()));
            }
        }
    }
    keys
}

/// The keys the CLI accepts at each place of a chain file: the list its refusal of an unknown
/// key gives (`expected one of `mode`, …`).
fn cli_chain_keys() -> BTreeSet<(String, String)> {
    let scratch = Scratch::new("docs-chain-keys");
    let mut keys = BTreeSet::new();
    for (place, chain) in [
        ("top", "zzz: 1\nsteps:\n  - {agent: shell, task: x}\n"),
        ("step", "steps:\n  - {agent: shell, task: x, zzz: 1}\n"),
        ("group", "steps:\n  - {parallel: [{agent: shell, task: x}], zzz: 1}\n"),
    ] {
        let file = scratch.work().join(format!("{place}.yaml"));
        std::fs::write(&file, chain).unwrap();
        let output = scratch
            .cli(&["run", "--chain", &file.to_string_lossy()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let expected = stderr
            .split("expected one of ")
            .nth(1)
            .unwrap_or_else(|| panic!("no list of known keys in the refusal of a {place} key: {stderr}"));
        for key in code_spans(&format!("`{}", expected.trim_start_matches('`'))) {
            keys.insert((key.to_owned(), place.to_owned()));
        }
    }
    keys
}

#[test]
fn the_reference_documents_exactly_the_keys_a_chain_file_may_have() {
    let cli = cli_chain_keys();
    let documented = reference_chain_keys();
    assert!(cli.len() >= 30, "{cli:?}");
    let missing: Vec<_> = cli.difference(&documented).collect();
    let gone: Vec<_> = documented.difference(&cli).collect();
    assert!(
        missing.is_empty() && gone.is_empty(),
        "docs/reference.md, \"Chain files\", is out of step with the keys the CLI accepts.\n\
         (key, place) accepted but not documented: {missing:?}\n\
         documented but refused: {gone:?}"
    );
}

/// Splits a command line into words as a shell would (quotes kept together), up to the end of
/// the command: a `#` comment, `|`, `;`, `&&`, `)` or a redirection.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut quoted = false;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                quoted = true;
            }
            None if c.is_whitespace() => {
                if !word.is_empty() || quoted {
                    words.push(std::mem::take(&mut word));
                    quoted = false;
                }
            }
            None if matches!(c, '|' | ';' | '&' | ')' | '>' | '<' | '#') && word.is_empty() && !quoted => break,
            None => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Each `sublaunch COMMAND …` in the docs' code (blocks and spans) with the flags it uses.
fn command_lines_in_docs() -> Vec<(String, String, Vec<String>)> {
    let mut found = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let mut in_block = false;
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                in_block = !in_block;
                continue;
            }
            let pieces: Vec<&str> = if in_block { vec![line] } else { code_spans(line) };
            for piece in pieces {
                for (at, _) in piece.match_indices("sublaunch ") {
                    if at > 0 && !piece[..at].ends_with([' ', '(', '$', '`', '"', '\'', '=']) {
                        continue;
                    }
                    let words = shell_words(&piece[at + "sublaunch ".len()..]);
                    found.push((relative(&page), piece.to_owned(), words));
                }
            }
        }
    }
    found
}

#[test]
fn command_lines_in_the_docs_use_only_flags_their_command_has() {
    let cli = cli_commands();
    let mut problems = Vec::new();
    let mut checked = 0;
    for (page, line, words) in command_lines_in_docs() {
        // The longest command path the words begin with (`worktrees prune`, else `worktrees`).
        let mut command = None;
        for n in (1..=2).rev() {
            if words.len() >= n && cli.contains_key(&words[..n].join(" ")) {
                command = Some((words[..n].join(" "), n));
                break;
            }
        }
        let Some((command, n)) = command else { continue };
        checked += 1;
        for word in &words[n..] {
            // A command quoted in prose may end with the prose's punctuation: `--wait)`.
            let flag = word
                .split('=')
                .next()
                .unwrap()
                .trim_end_matches([')', '.', ',', ';', ':']);
            let is_flag = flag.starts_with("--") && flag.len() > 2
                || flag.len() == 2 && flag.starts_with('-') && flag.as_bytes()[1].is_ascii_alphabetic();
            let own = ["--help", "-h"].contains(&flag);
            if is_flag && !own && !cli[&command].contains(flag) {
                problems.push(format!("{page}: `sublaunch {command}` has no {flag}: {line}"));
            }
        }
    }
    assert!(
        checked >= 40,
        "only {checked} sublaunch command lines were found in the docs"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn shell_words_keep_quoted_text_together_and_stop_at_the_end_of_the_command() {
    assert_eq!(
        shell_words("run --task 'cargo test --workspace' --wait   # a comment --json"),
        ["run", "--task", "cargo test --workspace", "--wait"]
    );
    assert_eq!(shell_words("wait \"$id\" | jq . --x"), ["wait", "$id"]);
}

// ---------------------------------------------------------------------------------------
// Links.

/// The anchor GitHub gives a heading: lower case, without punctuation, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code blocks; repeats get `-1`, `-2`).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut found = BTreeSet::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
        } else if !in_block && line.starts_with('#') {
            let base = slug(line.trim_start_matches('#'));
            let count = seen.entry(base.clone()).or_default();
            found.insert(if *count == 0 {
                base.clone()
            } else {
                format!("{base}-{count}")
            });
            *count += 1;
        }
    }
    found
}

/// The prose of a page: code blocks and code spans removed (they hold examples, not links).
fn prose(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut in_block = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
        } else if !in_block {
            let outside: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
            lines.push((n + 1, outside));
        }
    }
    lines
}

/// The targets of the links on a line: `[text](target)`, `<scheme://…>` and bare URLs.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for piece in line.split("](").skip(1) {
        if let Some(end) = piece.find(')') {
            targets.push(piece[..end].split_whitespace().next().unwrap_or_default().to_owned());
        }
    }
    for scheme in ["http://", "https://", "ftp://", "mailto:"] {
        for (at, _) in line.match_indices(scheme) {
            let rest = &line[at..];
            let end = rest.find([' ', ')', '>', '"']).unwrap_or(rest.len());
            targets.push(rest[..end].to_owned());
        }
    }
    targets
}

/// `base/target` with `.` and `..` resolved (no file system access), or `None` when it climbs
/// above the file system's root.
fn lexical_join(base: &Path, target: &str) -> Option<PathBuf> {
    let joined = base.join(target);
    let mut parts: Vec<Component> = Vec::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            other => parts.push(other),
        }
    }
    Some(parts.iter().collect())
}

/// What is wrong with a link from `page` to `target`, if anything.
fn broken_link(page: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") || target.starts_with("//") {
        return Some("leaves the repository".into());
    }
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    let file = if path.is_empty() {
        page.to_path_buf()
    } else {
        match lexical_join(page.parent().unwrap(), path) {
            Some(file) if file.starts_with(workspace()) => file,
            _ => return Some("leaves the repository".into()),
        }
    };
    if !file.exists() {
        return Some(format!("{} does not exist", relative(&file)));
    }
    if !anchor.is_empty() {
        let text = std::fs::read_to_string(&file).ok()?;
        if !anchors(&text).contains(anchor) {
            return Some(format!("{} has no heading #{anchor}", relative(&file)));
        }
    }
    None
}

#[test]
fn no_link_leaves_the_repository_and_every_link_reaches_its_file_and_heading() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (n, line) in prose(&text) {
            for target in link_targets(&line) {
                checked += 1;
                if let Some(problem) = broken_link(&page, &target) {
                    problems.push(format!("{}:{n}: ({target}) {problem}", relative(&page)));
                }
            }
        }
    }
    assert!(checked >= 50, "only {checked} links were found in README.md and docs/");
    assert!(problems.is_empty(), "broken links:\n{}", problems.join("\n"));
}

#[test]
fn links_are_judged_as_a_reader_would_follow_them() {
    let readme = workspace().join("README.md");
    assert_eq!(broken_link(&readme, "docs/reference.md"), None);
    assert_eq!(broken_link(&readme, "#the-two-commands"), None);
    assert!(broken_link(&readme, "../shared/spec/README.md").is_some());
    assert!(broken_link(&readme, "https://example.org/").is_some());
    assert!(broken_link(&readme, "docs/no-such-page.md").is_some());
    assert!(broken_link(&readme, "docs/reference.md#no-such-heading").is_some());
    assert_eq!(
        slug("Coding agents delegating through MCP: `sublaunch mcp`"),
        "coding-agents-delegating-through-mcp-sublaunch-mcp"
    );
    assert_eq!(
        link_targets("see [a](b.md#c \"t\") and <https://x.org/y> or http://z"),
        ["b.md#c", "http://z", "https://x.org/y"]
    );
}

// ---------------------------------------------------------------------------------------
// Examples that run.

/// One example command: what it runs, and the stdout lines it must print (none: unchecked).
#[derive(Debug)]
struct Example {
    line: usize,
    command: String,
    shows: Vec<String>,
}

/// A page's runnable examples: the files to write first, and the commands in order.
#[derive(Debug, Default)]
struct Examples {
    files: Vec<(String, String)>,
    commands: Vec<Example>,
}

/// The examples of a page (see the module documentation for the markers).
fn examples(text: &str) -> Examples {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Examples::default();
    let mut i = 0;
    while i < lines.len() {
        let marker = lines[i].trim();
        let Some(kind) = marker
            .strip_prefix("<!-- example: ")
            .and_then(|m| m.strip_suffix(" -->"))
        else {
            i += 1;
            continue;
        };
        assert!(
            lines.get(i + 1).is_some_and(|l| l.starts_with("```")),
            "line {}: `{marker}` must stand right above a code block",
            i + 1
        );
        let start = i + 2;
        let end = start + lines[start..].iter().position(|l| l.starts_with("```")).unwrap();
        let body = &lines[start..end];
        if let Some(path) = kind.strip_prefix("file ") {
            found.files.push((path.to_owned(), body.join("\n") + "\n"));
        } else {
            assert_eq!(kind, "runs", "line {}: unknown example marker `{marker}`", i + 1);
            let mut j = 0;
            while j < body.len() {
                let line = start + j + 1;
                let mut command = body[j]
                    .strip_prefix("$ ")
                    .unwrap_or_else(|| panic!("line {line}: an example starts with a `$ ` command"))
                    .to_owned();
                while command.ends_with('\\') {
                    j += 1;
                    command = format!("{}\n{}", command, body[j]);
                }
                j += 1;
                let mut shows = Vec::new();
                while j < body.len() && !body[j].starts_with("$ ") {
                    shows.push(body[j].to_owned());
                    j += 1;
                }
                found.commands.push(Example { line, command, shows });
            }
        }
        i = end + 1;
    }
    found
}

/// Whether `actual` matches `shown`: `…` in a line stands for any text, and a line that is
/// only `…` for any number of lines.
fn shows(shown: &[String], actual: &[&str]) -> bool {
    fn line_matches(pattern: &str, line: &str) -> bool {
        let pieces: Vec<&str> = pattern.split('…').collect();
        if pieces.len() == 1 {
            return pattern == line;
        }
        let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
        if !line.starts_with(first) || line.len() < first.len() + last.len() || !line.ends_with(last) {
            return false;
        }
        let mut rest = &line[first.len()..line.len() - last.len()];
        for piece in &pieces[1..pieces.len() - 1] {
            match rest.find(piece) {
                Some(at) => rest = &rest[at + piece.len()..],
                None => return false,
            }
        }
        true
    }
    match (shown.split_first(), actual.split_first()) {
        (None, None) => true,
        (Some((any, rest)), _) if any == "…" => (0..=actual.len()).any(|skip| shows(rest, &actual[skip..])),
        (Some((pattern, rest)), Some((line, more))) => line_matches(pattern, line) && shows(rest, more),
        _ => false,
    }
}

/// The agents an example names (`--agent X`, `agent: X`, `"agent": "X"`), when it runs them
/// (a `--dry-run` starts nothing).
fn agents_run(text: &str) -> Vec<String> {
    let mut agents = Vec::new();
    for line in text.lines().filter(|l| !l.contains("--dry-run")) {
        let words = shell_words(line);
        for pair in words.windows(2).filter(|w| w[0] == "--agent") {
            agents.push(pair[1].clone());
        }
        for marker in ["agent: ", "\"agent\": \""] {
            for piece in line.split(marker).skip(1) {
                let name = piece.split([',', '}', '"', ' ']).next().unwrap_or_default();
                agents.push(name.to_owned());
            }
        }
    }
    agents
}

/// The agents a page's examples may run: `shell`, and the agents its example files define
/// whose runner is a program of their own (`runner.command` and no adapter: no coding-agent
/// CLI, which would need an account).
fn runnable_agents(examples: &Examples) -> BTreeSet<String> {
    let mut agents = BTreeSet::from(["shell".to_owned()]);
    for (path, text) in &examples.files {
        let own_program = text.contains("command:") && !text.contains("adapter:");
        if let (Some(file), true) = (path.rsplit_once("agents/").map(|(_, f)| f), own_program) {
            agents.insert(file.trim_end_matches(".md").to_owned());
        }
    }
    agents
}

/// Runs a page's examples in one shell in a fresh scratch; panics with what went wrong.
fn run_examples(page: &Path, examples: &Examples) {
    let name = relative(page);
    let allowed = runnable_agents(examples);
    for text in examples
        .files
        .iter()
        .map(|(_, t)| t)
        .chain(examples.commands.iter().map(|c| &c.command))
    {
        for agent in agents_run(text) {
            assert!(
                allowed.contains(&agent),
                "{name}: a runnable example may only run {allowed:?}, not `{agent}`: {text}"
            );
        }
    }
    let scratch = Scratch::new("docs-example");
    let home = scratch.path().join("home");
    for (path, text) in &examples.files {
        let target = match path.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None => scratch.work().join(path),
        };
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(&target, text).unwrap();
    }
    // A record separator and the command's number before each command, to cut stdout apart.
    let mut script = String::from("set -e\n");
    for (i, example) in examples.commands.iter().enumerate() {
        script.push_str(&format!("printf '\\036%s\\n' {i}\n{}\n", example.command));
    }
    let bin_dir = sublaunch_tests::bin("sublaunch").parent().unwrap().to_owned();
    // The agent CLIs are on PATH as a user's are: `--dry-run` checks their programs as a
    // launch does (the examples never run them).
    sublaunch_tests::real_agents::require_installed();
    let agents = sublaunch_tests::real_agents::bin_dir();
    let path = format!("{}:{}:/usr/bin:/bin", bin_dir.display(), agents.display());
    let output = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .current_dir(scratch.work())
        .env_clear()
        .envs(scratch.cli_env())
        .env("PATH", path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let outputs: Vec<&str> = stdout.split('\u{1e}').skip(1).collect();
    if !output.status.success() {
        let failed = &examples.commands[outputs.len().saturating_sub(1)];
        panic!(
            "{name}:{}: the example `{}` failed ({}).\nstdout:\n{stdout}\nstderr:\n{stderr}",
            failed.line, failed.command, output.status
        );
    }
    assert_eq!(outputs.len(), examples.commands.len(), "{name}: {stdout}");
    for (example, printed) in examples.commands.iter().zip(outputs) {
        if example.shows.is_empty() {
            continue;
        }
        let printed: Vec<&str> = printed.lines().skip(1).collect();
        assert!(
            shows(&example.shows, &printed),
            "{name}:{}: `{}` printed\n{}\nbut the page shows\n{}\nstderr:\n{stderr}",
            example.line,
            example.command,
            printed.join("\n"),
            example.shows.join("\n")
        );
    }
}

#[test]
fn the_examples_marked_to_run_run_and_print_what_the_pages_show() {
    let mut ran = BTreeSet::new();
    for page in pages() {
        let found = examples(&std::fs::read_to_string(&page).unwrap());
        if found.commands.is_empty() {
            continue;
        }
        run_examples(&page, &found);
        ran.insert(relative(&page));
    }
    for page in ["README.md", "docs/guide/background-runs.md", "docs/guide/chains.md"] {
        assert!(
            ran.contains(page),
            "{page} has no example that runs; pages with some: {ran:?}"
        );
    }
}

#[test]
fn example_output_is_matched_line_by_line_with_ellipses() {
    let shown = |lines: &[&str]| lines.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(shows(&shown(&["shell-…: complete"]), &["shell-7k2m9x4q: complete"]));
    assert!(!shows(&shown(&["shell-…: complete"]), &["shell-7k2m9x4q: failed"]));
    assert!(shows(&shown(&["a", "…", "z"]), &["a", "b", "c", "z"]));
    assert!(shows(&shown(&["a", "…"]), &["a"]));
    assert!(!shows(&shown(&["a"]), &["a", "b"]));
    assert!(!shows(&shown(&["a…b…c"]), &["abc", "x"]));
    assert!(shows(&shown(&["a…b…c"]), &["a-b-c"]));
    assert_eq!(
        agents_run("$ sublaunch run --agent claude --task x\n- {agent: shell, task: y}"),
        ["claude", "shell"]
    );
    assert!(agents_run("$ sublaunch run --agent claude --task x --dry-run").is_empty());
}

#[test]
fn the_readme_is_a_short_page_that_starts_a_user() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines: it is the page a user reads first; move details into docs/"
    );
    let mut missing = Vec::new();
    for needed in [
        "## The two commands",
        "## Install",
        "## Log in to the agent CLIs",
        "## The background loop",
        "## Chains",
        "## Where to go next",
        "@anthropic-ai/claude-code",
        "@openai/codex",
        "@earendil-works/pi-coding-agent",
        "claude mcp add sublaunch",
        "[mcp_servers.sublaunch]",
        ".cursor/mcp.json",
        "opencode mcp add sublaunch",
    ] {
        if !readme.contains(needed) {
            missing.push(needed);
        }
    }
    assert!(missing.is_empty(), "README.md lacks {missing:?}");
}

/// `SUBLAUNCH_*` variables that are no user's business: the startup handshake's, the test
/// builds' hooks, the build's own, and one that is only ever removed.
const INTERNAL_VARIABLES: &[&str] = &[
    "SUBLAUNCH_RUNNER_CONFIG",
    "SUBLAUNCH_STARTUP_FD",
    "SUBLAUNCH_SHIM_FAULT",
    "SUBLAUNCH_HOST_FAULT",
    "SUBLAUNCH_TEST_PARENT_PID",
    "SUBLAUNCH_SHIM_CONTROL_TIMEOUT_MS",
    "SUBLAUNCH_RUNNER_STARTUP_TIMEOUT_MS",
    "SUBLAUNCH_SHIM_TEST_ENOSPC",
    "SUBLAUNCH_SHIM_TEST_ENOSPC_TARGETS",
    "SUBLAUNCH_SHIM_TEST_CLOCK_FILE",
    "SUBLAUNCH_TEST_BOOT_ID_FILE",
    "SUBLAUNCH_TEST_HOOK_CLAIM_DELAY_MS",
    "SUBLAUNCH_TEST_UNSET_VARIABLE_FOR_RUNFILES",
    "SUBLAUNCH_EMBEDDED_SHIM",
    "SUBLAUNCH_EMBEDDED_SHIM_SHA256",
    "SUBLAUNCH_EMBEDDED_VALIDATOR",
    "SUBLAUNCH_PLANNER_SHA256",
    "SUBLAUNCH_WASMTIME_VERSION",
    "SUBLAUNCH_EXTENSION_BINDINGS",
];

/// Every `"SUBLAUNCH_…"` string literal in the sources of the host and the runner.
fn variables_in_sources() -> BTreeSet<String> {
    fn walk(dir: &Path, found: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for piece in text.split("\"SUBLAUNCH_").skip(1) {
                    let name: String = piece
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                        .collect();
                    // A whole literal only: `"SUBLAUNCH_RUNNER_"` is a prefix being matched.
                    if piece[name.len()..].starts_with('"') && !name.is_empty() && !name.ends_with('_') {
                        found.insert(format!("SUBLAUNCH_{name}"));
                    }
                }
            }
        }
    }
    let mut found = BTreeSet::new();
    for dir in ["host/src", "host/build.rs", "shim/src", "shim/protocol/src"] {
        let path = workspace().join(dir);
        if path.is_dir() {
            walk(&path, &mut found);
        }
    }
    found
}

#[test]
fn the_reference_documents_every_variable_the_programs_read_or_set() {
    let text = std::fs::read_to_string(workspace().join("docs/reference.md")).unwrap();
    let section = text
        .split("## Environment variables")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("docs/reference.md has an `## Environment variables` section");
    let found = variables_in_sources();
    assert!(found.contains("SUBLAUNCH_ROOT") && found.len() >= 20, "{found:?}");
    let missing: Vec<&String> = found
        .iter()
        .filter(|v| !INTERNAL_VARIABLES.contains(&v.as_str()))
        .filter(|v| !section.contains(&format!("`{v}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/reference.md, \"Environment variables\", does not name {missing:?}"
    );
}

#[test]
fn the_reference_documents_exactly_the_mcp_tools_and_their_parameters() {
    let scratch = Scratch::new("docs-mcp-tools");
    let mut session = sublaunch_tests::mcp_session::Session::start(&scratch);
    let listed = session.request("tools/list", serde_json::json!({}));
    let mut served = BTreeMap::new();
    for tool in listed["result"]["tools"].as_array().expect("tools/list answers tools") {
        let parameters: BTreeSet<String> = tool["inputSchema"]["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        served.insert(tool["name"].as_str().unwrap().to_owned(), parameters);
    }
    let text = std::fs::read_to_string(workspace().join("docs/reference.md")).unwrap();
    let section = text
        .split("## MCP tools")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("docs/reference.md has an `## MCP tools` section");
    let mut documented = BTreeMap::new();
    for row in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        let parameters: BTreeSet<String> = code_spans(cells[1]).into_iter().map(str::to_owned).collect();
        for tool in code_spans(cells[0]) {
            documented.insert(tool.to_owned(), parameters.clone());
        }
    }
    assert!(served.len() >= 9, "{served:?}");
    assert_eq!(
        documented, served,
        "docs/reference.md, \"MCP tools\" (left), is out of step with the tools `sublaunch mcp` serves (right)"
    );
}
