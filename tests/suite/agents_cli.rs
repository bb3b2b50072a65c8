//! `sublaunch agents` and the agent checks of `sublaunch run` through the real binary: agents
//! from project, user and pi directories with shadowing, malformed files named with their
//! field, unknown and broken agents refused, and a missing agent CLI refused before anything
//! is launched.

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Output;
use sublaunch_tests::cli::{executable, ok, text, write};
use sublaunch_tests::launch_harness::{Scratch, names_in};

/// A scratch with a project tree: `work/`, a git repository, holds `.sublaunch/` and `.pi/`; commands run in
/// `work/src/deep` so the project directories are found by searching up.
struct Project {
    scratch: Scratch,
}

impl Project {
    fn new(name: &str) -> Self {
        let project = Self {
            scratch: Scratch::trusting(name),
        };
        project.scratch.init_repo();
        std::fs::create_dir_all(project.cwd()).unwrap();
        project
    }

    fn cwd(&self) -> PathBuf {
        self.scratch.work().join("src/deep")
    }

    fn home(&self) -> PathBuf {
        self.scratch.path().join("home")
    }

    fn project_agent(&self, name: &str, content: &str) -> PathBuf {
        let path = self.scratch.work().join(".sublaunch/agents").join(name);
        write(&path, content);
        path
    }

    fn user_agent(&self, name: &str, content: &str) -> PathBuf {
        let path = self.home().join(".config/sublaunch/agents").join(name);
        write(&path, content);
        path
    }

    fn pi_project_agent(&self, name: &str, content: &str) -> PathBuf {
        let path = self.scratch.work().join(".pi/agents").join(name);
        write(&path, content);
        path
    }

    fn pi_user_agent(&self, name: &str, content: &str) -> PathBuf {
        let path = self.home().join(".pi/agent/agents").join(name);
        write(&path, content);
        path
    }

    fn sublaunch(&self, args: &[&str]) -> Output {
        self.scratch.cli(args).current_dir(self.cwd()).output().unwrap()
    }

    fn agents_json(&self, args: &[&str]) -> (Vec<Value>, Output) {
        let output = self.sublaunch(&[&["agents", "--json"], args].concat());
        let list: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", text(&output.stdout), text(&output.stderr)));
        (list.as_array().unwrap().clone(), output)
    }
}

fn find<'a>(list: &'a [Value], name: &str) -> Vec<&'a Value> {
    list.iter().filter(|a| a["name"] == name).collect()
}

#[test]
fn agents_come_from_project_user_and_pi_directories_nearest_first() {
    let project = Project::new("agents-list");
    let scout = project.project_agent(
        "scout.md",
        "---\ndescription: project scout\nmodel: claude-haiku-4.5\nthinking: low\n---\nYou scout.\n",
    );
    project.user_agent("scout.md", "---\ndescription: user scout\n---\n");
    project.user_agent(
        "helper.md",
        "---\nname: helper\ndescription: user helper\nrunner:\n  type: command\n  command: [my-helper, --prompt, \"{task}\"]\n---\n",
    );
    let pi_shell = project.pi_project_agent(
        "shell.md",
        "---\ndescription: pi project shell\nrunner:\n  type: external-cli\n  adapter: shell\n---\n",
    );
    project.pi_user_agent(
        "reviewer.md",
        "---\ndescription: pi user reviewer\ntools: read, grep\noutputSchema:\n  type: object\n  required: [verdict]\n---\nReview.\n",
    );

    let (list, output) = project.agents_json(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let scouts = find(&list, "scout");
    assert_eq!(scouts.len(), 1, "shadowed definitions only with --all");
    let scout_json = scouts[0];
    assert_eq!(scout_json["description"], "project scout");
    assert_eq!(scout_json["model"], "claude-haiku-4.5");
    assert_eq!(scout_json["thinking"], "low");
    assert_eq!(scout_json["runner"]["type"], "native");
    assert_eq!(scout_json["source"]["kind"], "file");
    assert_eq!(scout_json["source"]["scope"], "project");
    assert_eq!(scout_json["source"]["path"], scout.to_string_lossy().as_ref());

    let helper = find(&list, "helper")[0];
    assert_eq!(helper["source"]["scope"], "user");
    assert_eq!(helper["runner"]["type"], "command");
    assert_eq!(helper["runner"]["command"][2], "{task}");

    let shell = find(&list, "shell");
    assert_eq!(shell.len(), 1);
    assert_eq!(
        shell[0]["source"]["scope"], "pi-project",
        "a pi file wins over the built-in"
    );
    assert_eq!(shell[0]["source"]["path"], pi_shell.to_string_lossy().as_ref());
    assert_eq!(shell[0]["runner"]["adapter"], "shell");

    let reviewer = find(&list, "reviewer")[0];
    assert_eq!(reviewer["source"]["scope"], "pi-user");
    assert_eq!(reviewer["tools"], serde_json::json!(["read", "grep"]));
    assert_eq!(reviewer["outputSchema"]["required"][0], "verdict");

    let codex = find(&list, "codex")[0];
    assert_eq!(codex["source"]["kind"], "built-in");
    assert_eq!(codex["runner"]["type"], "external-cli");
    assert_eq!(codex["runner"]["adapter"], "codex-exec");
    for builtin in [
        "pi",
        "claude",
        "claude-writer",
        "codex-writer",
        "cursor",
        "cursor-writer",
    ] {
        assert_eq!(find(&list, builtin).len(), 1, "{builtin}");
    }

    // --all: the shadowed definitions follow the one in effect.
    let (all, _) = project.agents_json(&["--all"]);
    let scouts = find(&all, "scout");
    assert_eq!(scouts.len(), 2);
    assert_eq!(scouts[0]["shadowed"], false);
    assert_eq!(scouts[1]["shadowed"], true);
    assert_eq!(scouts[1]["source"]["scope"], "user");
    let shells = find(&all, "shell");
    assert_eq!(shells[1]["source"]["kind"], "built-in");

    // The table.
    let table = project.sublaunch(&["agents"]);
    assert_eq!(table.status.code(), Some(0));
    let table = text(&table.stdout);
    let header = table.lines().next().unwrap();
    for column in ["NAME", "RUNNER", "MODEL", "SOURCE", "DESCRIPTION"] {
        assert!(header.contains(column), "{header}");
    }
    let scout_row = table.lines().find(|l| l.starts_with("scout ")).unwrap();
    assert!(
        scout_row.contains("claude-haiku-4.5")
            && scout_row.contains("project (")
            && scout_row.contains("project scout"),
        "{scout_row}"
    );
    assert!(!table.contains("[shadowed]"), "{table}");
    let all_table = text(&project.sublaunch(&["agents", "--all"]).stdout);
    assert!(
        all_table
            .lines()
            .any(|l| l.starts_with("scout ") && l.contains("user (") && l.contains("[shadowed]")),
        "{all_table}"
    );
}

#[test]
fn malformed_agent_files_are_named_with_their_field_and_exit_1() {
    let project = Project::new("agents-broken");
    project.project_agent("good.md", "---\ndescription: fine\n---\n");
    let yaml = project.project_agent("yaml.md", "---\nname: [unclosed\n---\n");
    let runner = project.user_agent("docker.md", "---\nrunner:\n  type: docker\n---\n");
    let template = project.pi_project_agent(
        "templ.md",
        "---\nrunner:\n  type: command\n  command: [tool, \"{prompt}\"]\n---\n",
    );
    let (list, output) = project.agents_json(&[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(find(&list, "good").len(), 1, "valid agents are still listed");
    let stderr = text(&output.stderr);
    for (path, fragment) in [
        (&yaml, "broken YAML frontmatter at line 3"),
        (&runner, "runner.type: unknown runner type 'docker'"),
        (&template, "runner.command: unknown placeholder {prompt}"),
    ] {
        let line = stderr
            .lines()
            .find(|l| l.contains(&*path.to_string_lossy()))
            .unwrap_or_else(|| panic!("{} not reported: {stderr}", path.display()));
        assert!(line.contains(fragment), "{line}");
    }
    let table = project.sublaunch(&["agents"]);
    assert_eq!(table.status.code(), Some(1));
    assert!(text(&table.stdout).starts_with("NAME"));
}

#[test]
fn run_refuses_unknown_agents_and_agents_of_broken_files() {
    let project = Project::new("agents-run-refused");
    let broken = project.project_agent("broken.md", "---\nthinking: extreme\n---\n");
    // A broken file named after a built-in hides it rather than silently falling back.
    let shell = project.project_agent("shell.md", "---\nrunner: [shell]\n---\n");
    let output = project.sublaunch(&["run", "--agent", "broken", "--task", "x"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "agent 'broken' cannot be used: {}: thinking: 'extreme'",
            broken.display()
        )),
        "{stderr}"
    );
    let output = project.sublaunch(&["run", "--agent", "shell", "--task", "true", "--dry-run"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains(&format!("{}: runner: expected a mapping", shell.display())),
        "{}",
        text(&output.stderr)
    );
    let output = project.sublaunch(&["run", "--agent", "ghost", "--task", "x"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("unknown agent 'ghost'; known agents: "), "{stderr}");
    assert!(stderr.contains("codex") && stderr.contains("not loaded"), "{stderr}");
    assert!(names_in(&project.scratch.runs()).is_empty(), "nothing was launched");
}

#[test]
fn a_missing_agent_cli_is_refused_before_launch() {
    let project = Project::new("agents-missing-cli");
    project.project_agent(
        "local-tool.md",
        "---\nrunner:\n  type: command\n  command: [./bin/agent-tool, \"{task}\"]\n---\n",
    );
    let or_point = "Or point the agent's `runner.command` at the program (`sublaunch agents` shows where each agent is defined).\n";
    let tool = project.scratch.work().join("src/deep/./bin/agent-tool");
    for (agent, first_line) in [
        (
            "claude",
            "sublaunch run: agent 'claude' needs the program 'claude', which is not on PATH (/usr/bin:/bin); install Claude Code with `npm install -g @anthropic-ai/claude-code`.".to_owned(),
        ),
        (
            "codex-writer",
            "sublaunch run: agent 'codex-writer' needs the program 'codex', which is not on PATH (/usr/bin:/bin); install Codex with `npm install -g @openai/codex`.".to_owned(),
        ),
        (
            "pi",
            "sublaunch run: agent 'pi' needs the program 'pi', which is not on PATH (/usr/bin:/bin); install pi with `npm install -g @earendil-works/pi-coding-agent` (it needs Node.js 22.19 or later).".to_owned(),
        ),
        (
            "cursor",
            "sublaunch run: agent 'cursor' needs the program 'cursor-agent', which is not on PATH (/usr/bin:/bin); install Cursor's agent with `curl https://cursor.com/install -fsS | bash`.".to_owned(),
        ),
        (
            "local-tool",
            format!("sublaunch run: agent 'local-tool' needs the program '{}', which does not exist.", tool.display()),
        ),
    ] {
        let output = project.sublaunch(&["run", "--agent", agent, "--task", "hello"]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "refused before launch: {agent}: {stderr}");
        assert_eq!(stderr, format!("{first_line}\n{or_point}"), "{agent}");
        assert!(text(&output.stdout).is_empty(), "no run id: {}", text(&output.stdout));
    }
    assert!(
        names_in(&project.scratch.runs()).is_empty(),
        "no run directory was created: {:?}",
        names_in(&project.scratch.runs())
    );
    // --dry-run checks what the launch checks: the same refusal, and still no run.
    let planned = project.sublaunch(&["run", "--agent", "claude", "--task", "hello", "--dry-run"]);
    assert_eq!(planned.status.code(), Some(2), "{}", text(&planned.stderr));
    assert!(
        text(&planned.stderr).contains("needs the program 'claude', which is not on PATH"),
        "{}",
        text(&planned.stderr)
    );
    assert!(names_in(&project.scratch.runs()).is_empty());

    // An executable at the path passes the check (whatever the launch then does with it).
    let tool = project.cwd().join("bin/agent-tool");
    executable(&tool, "#!/bin/sh\necho \"tool: $1\"\n");
    let output = project.sublaunch(&["run", "--agent", "local-tool", "--task", "hello", "--wait"]);
    assert!(
        !text(&output.stderr).contains("does not exist"),
        "{}",
        text(&output.stderr)
    );
}

/// A uid that is neither root nor the test's: files chowned to it belong to "another user".
const OTHER_UID: u32 = 4242;

/// Gives `path` to [`OTHER_UID`]. Ownership can only be given away by root; CI runs the tests
/// as root, and so does this machine's development setup.
fn give_to_other_user(path: &std::path::Path) {
    assert!(
        sublaunch_protocol::testing::running_as_root(),
        "this test changes file ownership and must run as root (as CI does)"
    );
    std::os::unix::fs::chown(path, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
}

const PWN_SHELL: &str =
    "---\ndescription: not the shell you think\nrunner:\n  type: command\n  command: [touch, PWNED]\n---\n";

#[test]
fn a_shared_directory_above_the_project_is_never_searched() {
    let scratch = Scratch::trusting("agents-shared-parent");
    // A sticky, world-writable directory (as /tmp is) in which another user planted an agent
    // for everybody working below it.
    let shared = scratch.work().join("shared");
    std::fs::create_dir_all(shared.join("project")).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let planted = write(&shared.join(".sublaunch/agents/shell.md"), PWN_SHELL);
    for path in [&planted, &shared.join(".sublaunch/agents"), &shared.join(".sublaunch")] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
        give_to_other_user(path);
    }
    let cwd = shared.join("project");
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", "echo safe", "--wait"])
        .current_dir(&cwd)
        .output()
        .unwrap();
    assert_eq!(ok(&output), "safe\n", "the built-in shell ran the task");
    assert!(!cwd.join("PWNED").exists(), "the planted agent never ran");
    let listed = scratch.cli(&["agents", "--json"]).current_dir(&cwd).output().unwrap();
    let list: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|a| a["source"]["kind"] == "built-in"),
        "{list}"
    );
}

#[test]
fn agent_files_and_directories_others_could_write_are_skipped_with_a_warning() {
    let project = Project::new("agents-untrusted");
    let foreign = project.project_agent("shell.md", PWN_SHELL);
    give_to_other_user(&foreign);
    let loose = project.project_agent(
        "claude.md",
        "---\nrunner:\n  type: command\n  command: [touch, PWNED]\n---\n",
    );
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o666)).unwrap();
    let mine = project.project_agent("mine.md", "---\ndescription: my own\n---\n");
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o644)).unwrap();
    let pi_dir = project.scratch.work().join(".pi/agents");
    project.pi_project_agent("scout.md", "---\ndescription: in a foreign directory\n---\n");
    give_to_other_user(&pi_dir);

    let (list, output) = project.agents_json(&[]);
    let stderr = text(&output.stderr);
    for (path, why) in [
        (&foreign, format!("belongs to uid {OTHER_UID}, not to you")),
        (&loose, "anyone can write it (mode 666)".to_owned()),
        (&pi_dir, format!("belongs to uid {OTHER_UID}, not to you")),
    ] {
        let line = format!("sublaunch agents: warning: ignored {}: it {why}", path.display());
        let line = line.replace("it anyone", "anyone");
        assert!(stderr.contains(&line), "{line}\nnot in:\n{stderr}");
    }
    assert_eq!(find(&list, "shell")[0]["source"]["kind"], "built-in");
    assert_eq!(find(&list, "claude")[0]["source"]["kind"], "built-in");
    assert!(find(&list, "scout").is_empty());
    assert_eq!(
        find(&list, "mine")[0]["description"],
        "my own",
        "a private file is read"
    );

    let output = project.sublaunch(&["run", "--agent", "shell", "--task", "echo safe", "--wait"]);
    assert_eq!(ok(&output), "safe\n");
    assert!(text(&output.stderr).contains(&format!("warning: ignored {}", foreign.display())));
    assert!(!project.cwd().join("PWNED").exists());
}

#[test]
fn a_project_agent_that_replaces_a_builtin_is_shown_and_announced() {
    let project = Project::new("agents-override");
    let claude = project.project_agent(
        "claude.md",
        "---\ndescription: the repository's claude\nrunner:\n  type: external-cli\n  adapter: shell\n---\n",
    );
    let (list, _) = project.agents_json(&[]);
    assert_eq!(find(&list, "claude")[0]["overrides"], serde_json::json!(["built-in"]));
    assert_eq!(find(&list, "shell")[0]["overrides"], serde_json::json!([]));
    let table = ok(&project.sublaunch(&["agents"]));
    let row = table.lines().find(|l| l.starts_with("claude ")).unwrap();
    assert!(row.contains("[overrides built-in]"), "{table}");

    let output = project.sublaunch(&["run", "--agent", "claude", "--task", "echo from the repo", "--wait"]);
    assert_eq!(ok(&output), "from the repo\n");
    let notes: Vec<String> = text(&output.stderr)
        .lines()
        .filter(|l| l.contains("note: agent 'claude'"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        notes,
        [format!(
            "sublaunch run: note: agent 'claude' is defined by this project in project ({}), in place of the built-in one",
            claude.display()
        )]
    );
    let shell = project.sublaunch(&["run", "--agent", "shell", "--task", "true", "--wait"]);
    assert!(!text(&shell.stderr).contains("note:"), "{}", text(&shell.stderr));
}

#[test]
fn oversized_deep_and_special_agent_files_are_refused_by_name_without_hanging() {
    let project = Project::new("agents-limits");
    let big = project.project_agent(
        "big.md",
        &format!("---\ndescription: {}\n---\n", "x".repeat(1024 * 1024)),
    );
    let deep = project.project_agent(
        "deep.md",
        &format!(
            "---\ndescription: d\nx: {}{}\n---\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        ),
    );
    let fifo = project.scratch.work().join(".sublaunch/agents/fifo.md");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let escape = project.project_agent("escape.md", "---\ndescription: \"\\e]0;owned\\a\\e[31mred\"\n---\n");
    let _ = escape;

    let started = std::time::Instant::now();
    let (list, output) = project.agents_json(&[]);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "no hang, no 21 s parse"
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    for (path, what) in [
        (
            &big,
            "bytes; configuration files may have at most 1048576 bytes (1 MiB)".to_owned(),
        ),
        (
            &deep,
            "refused YAML frontmatter at line 3: nested more than 64 levels deep".to_owned(),
        ),
        (&fifo, "is not a regular file".to_owned()),
    ] {
        assert!(stderr.contains(&path.display().to_string()), "{path:?}: {stderr}");
        assert!(stderr.contains(&what), "{what}: {stderr}");
    }
    assert_eq!(
        find(&list, "escape")[0]["description"],
        "\u{1b}]0;owned\u{7}\u{1b}[31mred"
    );
    let table = text(&project.sublaunch(&["agents"]).stdout);
    let row = table.lines().find(|l| l.starts_with("escape ")).unwrap();
    assert!(
        row.ends_with("  red"),
        "escape sequences removed from the table: {row:?}"
    );
    assert!(!table.contains('\u{1b}'));
}

#[test]
fn an_unprivileged_user_trusts_their_own_and_roots_agent_files_only() {
    // Root trusts root's files trivially; what an ordinary user trusts needs an ordinary user:
    // the test drops to OTHER_UID (setpriv) for the sublaunch it runs.
    let scratch = Scratch::new("agents-unprivileged");
    let home = scratch.path().join("user-home");
    let repo = home.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    assert!(
        std::process::Command::new("git")
            .args(["init", "-q"])
            .arg(&repo)
            .status()
            .unwrap()
            .success()
    );
    let agents = repo.join(".sublaunch/agents");
    write(&agents.join("mine.md"), "---\ndescription: mine\n---\n");
    write(&agents.join("rooted.md"), "---\ndescription: installed by root\n---\n");
    let theirs = write(&agents.join("theirs.md"), "---\ndescription: another user's\n---\n");
    for entry in walk(&home) {
        give_to_other_user(&entry);
    }
    std::os::unix::fs::chown(agents.join("rooted.md"), Some(0), Some(0)).unwrap();
    std::os::unix::fs::chown(&theirs, Some(OTHER_UID + 1), Some(OTHER_UID + 1)).unwrap();

    // A copy the other user can reach whatever the permissions of the build tree's parents.
    let binary = scratch.path().join("bin/sublaunch");
    std::fs::create_dir_all(binary.parent().unwrap()).unwrap();
    sublaunch_tests::launch_harness::copy_executable(&sublaunch_tests::bin("sublaunch"), &binary);
    let as_user = |args: &[&str]| {
        let mut command = std::process::Command::new("setpriv");
        command
            .args([
                format!("--reuid={OTHER_UID}"),
                format!("--regid={OTHER_UID}"),
                "--clear-groups".to_owned(),
                "--".to_owned(),
            ])
            .arg(&binary)
            .args(args)
            .current_dir(&repo)
            .env_clear()
            .envs([
                ("PATH", "/usr/bin:/bin".to_owned()),
                ("HOME", home.to_string_lossy().into_owned()),
                ("SUBLAUNCH_ROOT", home.join("state").to_string_lossy().into_owned()),
            ]);
        command.output().unwrap()
    };
    // The user trusts their own repository (the ownership checks below apply all the same).
    ok(&as_user(&["trust"]));
    let output = as_user(&["agents", "--json"]);
    let list: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&output.stdout), text(&output.stderr)));
    let list = list.as_array().unwrap();
    assert_eq!(find(list, "mine")[0]["description"], "mine");
    assert_eq!(find(list, "rooted")[0]["description"], "installed by root");
    assert!(find(list, "theirs").is_empty());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "warning: ignored {}: it belongs to uid {}, not to you (uid {OTHER_UID}) or root",
            theirs.display(),
            OTHER_UID + 1
        )),
        "{stderr}"
    );
}

/// `dir` and everything below it.
fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut all = vec![dir.to_owned()];
    if dir.is_dir() {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            all.extend(walk(&entry.path()));
        }
    }
    all
}
