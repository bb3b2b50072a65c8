//! What `sublaunch run` hands the planner (host side): the model registry
//! files, the settings files, and the Herdr catalog from a fake `herdr` — all through the
//! real binary, with `--dry-run` printing the plan instead of launching.

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use sublaunch_tests::bin;

/// A private HOME with its config, cache and project directories.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let sandbox = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(sandbox.project()).unwrap();
        // `work/project` is a repository: project settings and registries are searched for
        // from `sub/` up to its root.
        let status = std::process::Command::new("git")
            .args(["init", "-q"])
            .arg(sandbox.dir.path().join("work/project"))
            .status()
            .unwrap();
        assert!(status.success());
        sandbox
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("work/project/sub")
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// A fake `herdr` that runs `script` (sh) and records each call in `calls`.
    fn herdr(&self, script: &str) -> PathBuf {
        let path = self.dir.path().join("bin/herdr");
        let calls = self.dir.path().join("herdr-calls");
        self.write(
            &path,
            &format!("#!/bin/sh\necho \"$@\" >> '{}'\n{script}\n", calls.display()),
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn herdr_calls(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("herdr-calls")).map_or(0, |s| s.lines().count())
    }

    fn sublaunch(&self, args: &[&str]) -> Command {
        let mut command = Command::new(bin("sublaunch"));
        command
            .args(args)
            .current_dir(self.project())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.home())
            .env("SUBLAUNCH_CACHE_DIR", self.dir.path().join("cache"));
        command
    }

    /// Runs `sublaunch` after trusting the project as it is (the user of these tests trusts
    /// their project; trust itself is tested in `trust_cli`).
    fn run(&self, args: &[&str], env: &[(&str, &Path)]) -> Output {
        let mut trust = self.sublaunch(&["trust"]);
        for (key, value) in env {
            trust.env(key, value);
        }
        // A project with broken files cannot be trusted; the command reports them itself.
        let _ = trust.output().unwrap();
        let mut command = self.sublaunch(args);
        for (key, value) in env {
            command.env(key, value);
        }
        command.output().unwrap()
    }
}

fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

const CATALOG: &str = r#"[{"id":"m1","label":"workmac","target":"nico@workmac.local","session":"default","enabled":true},{"id":"m2","label":"evil","target":"-oProxyCommand=touch /tmp/pwned","enabled":true}]"#;

#[test]
fn registry_files_layer_over_the_builtin_registry() {
    let sandbox = Sandbox::new();
    let user = sandbox.home().join(".config/sublaunch/models.json");
    sandbox.write(&user, r#"[{"provider":"acme","id":"rocket-1","contextWindow":1000}]"#);
    let project = sandbox.dir.path().join("work/project/.sublaunch/models.json");
    sandbox.write(
        &project,
        r#"{"models":[{"provider":"acme","id":"rocket-1","contextWindow":2000}]}"#,
    );

    let listed = sandbox.run(&["models", "--json"], &[]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let models = stdout_json(&listed);
    let ids: Vec<String> = models
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}/{}", m["provider"], m["id"]))
        .collect();
    assert_eq!(ids[0], r#""acme"/"rocket-1""#);
    assert_eq!(models[0]["contextWindow"], 2000.0, "the project layer comes first");
    assert!(
        ids.iter().any(|id| id.contains("anthropic")),
        "the built-in registry is kept"
    );

    // The first duplicate wins in the planner: the project's context window.
    let resolved = sandbox.run(&["models", "resolve", "acme/rocket-1", "--json"], &[]);
    assert_eq!(stdout_json(&resolved)["contextLimit"], 2000);

    // A replacing --models file is all there is.
    let only = sandbox.dir.path().join("only.json");
    sandbox.write(&only, r#"{"replace":true,"models":[{"provider":"solo","id":"one"}]}"#);
    let listed = sandbox.run(&["models", "--json", "--models", only.to_str().unwrap()], &[]);
    assert_eq!(stdout_json(&listed).as_array().unwrap().len(), 1);
}

#[test]
fn a_bad_registry_file_is_an_error_naming_the_file_and_path() {
    let sandbox = Sandbox::new();
    let user = sandbox.home().join(".config/sublaunch/models.json");
    sandbox.write(
        &user,
        r#"{"models":[{"provider":"a","id":"b"},{"provider":"a","id":42}]}"#,
    );
    let output = sandbox.run(&["models"], &[]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains(&user.display().to_string()), "{message}");
    assert!(message.contains("models[1].id"), "{message}");
}

#[test]
fn models_resolve_shows_the_resolution_or_the_planner_error() {
    let sandbox = Sandbox::new();
    let output = sandbox.run(&["models", "resolve", "openai:gpt-5-mini:high"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.starts_with("openai/gpt-5-mini:high\n"), "{text}");
    assert!(text.contains("thinking: high"), "{text}");

    // #23: a person gets the error on stderr, as every command says one; JSON with --json.
    let output = sandbox.run(&["models", "resolve", "gpt-5-mini"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty(), "{}", String::from_utf8_lossy(&output.stdout));
    let said = stderr(&output);
    assert!(
        said.starts_with("sublaunch models: Ambiguous subagent model 'gpt-5-mini': it matches ")
            && said.ends_with("(modelProvider: in its agent file).\n")
            && said.lines().count() == 1,
        "{said}"
    );
    let output = sandbox.run(&["models", "resolve", "gpt-5-mini", "--json"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stdout_json(&output)["error"]["code"], "ambiguous-model");
    let output = sandbox.run(
        &["models", "resolve", "gpt-5-mini", "--provider", "github-copilot"],
        &[],
    );
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("github-copilot/gpt-5-mini"));
}

#[test]
fn plan_with_registry_fills_in_the_effective_registry() {
    let sandbox = Sandbox::new();
    let request = sandbox.dir.path().join("request.json");
    sandbox.write(
        &request,
        r#"{"cwd":"/c","mode":"single","agents":[{"name":"w","model":"claude-haiku-4-5"}],"steps":[{"agent":"w","task":"t"}]}"#,
    );
    let as_given = sandbox.run(&["plan", "--request", request.to_str().unwrap()], &[]);
    assert_eq!(
        stdout_json(&as_given)["steps"][0]["model"],
        "claude-haiku-4-5",
        "no registry: verbatim (M4)"
    );
    let filled = sandbox.run(
        &["plan", "--with-registry", "--request", request.to_str().unwrap()],
        &[],
    );
    assert_eq!(stdout_json(&filled)["steps"][0]["model"], "anthropic/claude-haiku-4-5");
}

#[test]
fn thinking_ceilings_come_from_settings_and_the_command_line() {
    let sandbox = Sandbox::new();
    let settings = sandbox.home().join(".config/sublaunch/settings.json");
    sandbox.write(&settings, r#"{"subagents":{"maxThinking":"high"}}"#);
    // `shell` takes no model, so plan a native agent through `plan` with the settings'
    // ceiling applied by `run`: use models resolve, which reads the same settings.
    let output = sandbox.run(&["models", "resolve", "openai/gpt-5-mini:max", "--json"], &[]);
    assert_eq!(stdout_json(&output)["error"]["code"], "thinking-above-ceiling");
    let output = sandbox.run(&["models", "resolve", "openai/gpt-5-mini:high"], &[]);
    assert!(output.status.success());
    // run --max-thinking reaches the planner as a ceiling too.
    let output = sandbox.run(
        &[
            "run",
            "--dry-run",
            "--agent",
            "shell",
            "--task",
            "true",
            "--max-thinking",
            "turbo",
        ],
        &[],
    );
    assert_eq!(stdout_json(&output)["error"]["code"], "invalid-thinking-level");
}

#[test]
fn the_catalog_is_read_only_when_something_is_placed() {
    let sandbox = Sandbox::new();
    let herdr = sandbox.herdr(&format!("echo '{CATALOG}'"));
    let local = sandbox.run(
        &["run", "--dry-run", "--agent", "shell", "--task", "true"],
        &[("HERDR_BIN", &herdr)],
    );
    assert!(local.status.success(), "{}", stderr(&local));
    assert_eq!(sandbox.herdr_calls(), 0, "P16: no machine, no herdr call");

    let placed = sandbox.run(
        &[
            "run",
            "--dry-run",
            "--agent",
            "shell",
            "--task",
            "true",
            "--machine",
            "workmac",
            "--cwd",
            "~/proj",
        ],
        &[("HERDR_BIN", &herdr)],
    );
    assert!(placed.status.success(), "{}", stderr(&placed));
    assert_eq!(sandbox.herdr_calls(), 1);
    let step = &stdout_json(&placed)["steps"][0];
    assert_eq!(step["machine"]["target"], "nico@workmac.local");
    assert_eq!(step["machine"]["cwd"], "~/proj");
    assert_eq!(step["cwd"], "~/proj");
}

#[test]
fn an_unsafe_catalog_target_never_reaches_a_plan() {
    let sandbox = Sandbox::new();
    let herdr = sandbox.herdr(&format!("echo '{CATALOG}'"));
    let output = sandbox.run(
        &[
            "run",
            "--dry-run",
            "--agent",
            "shell",
            "--task",
            "true",
            "--machine",
            "evil",
            "--cwd",
            "/srv",
        ],
        &[("HERDR_BIN", &herdr)],
    );
    assert_eq!(output.status.code(), Some(2), "refused before launch");
    assert_eq!(stdout_json(&output)["error"]["code"], "unsafe-ssh-target");
}

#[test]
fn the_machine_root_comes_from_settings_with_pi_settings_as_fallback() {
    let sandbox = Sandbox::new();
    let herdr = sandbox.herdr(&format!("echo '{CATALOG}'"));
    let args = [
        "run",
        "--dry-run",
        "--agent",
        "shell",
        "--task",
        "true",
        "--machine",
        "workmac",
    ];
    // No settings: no root.
    let output = sandbox.run(&args, &[("HERDR_BIN", &herdr)]);
    assert_eq!(stdout_json(&output)["error"]["code"], "machine-no-root");
    // pi's user settings are read when sublaunch's are absent.
    let pi = sandbox.home().join(".pi/agent/settings.json");
    sandbox.write(&pi, r#"{"subagents":{"machines":{"workmac":{"cwd":"~/from-pi"}}}}"#);
    let output = sandbox.run(&args, &[("HERDR_BIN", &herdr)]);
    assert_eq!(stdout_json(&output)["steps"][0]["cwd"], "~/from-pi");
    // The project's settings override the user's root.
    let project = sandbox.dir.path().join("work/project/.sublaunch/settings.json");
    sandbox.write(&project, r#"{"subagents":{"machines":{"m1":{"cwd":"/srv/project"}}}}"#);
    let output = sandbox.run(&args, &[("HERDR_BIN", &herdr)]);
    assert_eq!(stdout_json(&output)["steps"][0]["cwd"], "/srv/project");
}

#[test]
fn malformed_settings_are_an_error_naming_the_file() {
    let sandbox = Sandbox::new();
    let project = sandbox.dir.path().join("work/project/.sublaunch/settings.json");
    // Trusted while it was whole, then broken.
    sandbox.write(&project, "{}");
    assert!(sandbox.run(&["agents"], &[]).status.success());
    sandbox.write(&project, r#"{"subagents": {"machines": }"#);
    let output = sandbox.run(&["run", "--dry-run", "--agent", "shell", "--task", "true"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(&project.display().to_string()),
        "{}",
        stderr(&output)
    );
}

#[test]
fn settings_with_prototype_keys_are_ordinary_keys() {
    let sandbox = Sandbox::new();
    let herdr = sandbox.herdr(r#"echo '[{"id":"c1","label":"constructor","target":"host-c","enabled":true}]'"#);
    let settings = sandbox.home().join(".config/sublaunch/settings.json");
    sandbox.write(
        &settings,
        r#"{"subagents":{"machines":{"__proto__":{"cwd":"/p"},"constructor":{"cwd":"/c"}}}}"#,
    );
    let output = sandbox.run(
        &[
            "run",
            "--dry-run",
            "--agent",
            "shell",
            "--task",
            "true",
            "--machine",
            "constructor",
        ],
        &[("HERDR_BIN", &herdr)],
    );
    assert_eq!(stdout_json(&output)["steps"][0]["cwd"], "/c", "{}", stderr(&output));
}

/// Runs a placed dry run against a fake herdr and returns the error text on stderr.
fn herdr_failure(script: &str, extra_env: &[(&str, &Path)]) -> String {
    let sandbox = Sandbox::new();
    let herdr = sandbox.herdr(script);
    let mut env = vec![("HERDR_BIN", herdr.as_path())];
    env.extend_from_slice(extra_env);
    let output = sandbox.run(
        &[
            "run",
            "--dry-run",
            "--agent",
            "shell",
            "--task",
            "t",
            "--machine",
            "workmac",
        ],
        &env,
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    stderr(&output)
}

#[test]
fn a_herdr_that_exits_1_is_a_clear_error() {
    let message = herdr_failure("echo 'not logged in' >&2; exit 1", &[]);
    assert!(message.contains("exited with code 1: not logged in"), "{message}");
}

#[test]
fn a_herdr_that_hangs_times_out() {
    let timeout = Path::new("300");
    let message = herdr_failure("exec sleep 30", &[("SUBLAUNCH_HERDR_TIMEOUT_MS", timeout)]);
    assert!(message.contains("did not finish within 0.3 s"), "{message}");
}

#[test]
fn a_herdr_that_prints_2_mib_is_refused() {
    let message = herdr_failure("head -c 2097152 /dev/zero | tr '\\0' x", &[]);
    assert!(message.contains("more than 1024 KiB"), "{message}");
}

#[test]
fn a_missing_herdr_is_a_clear_error() {
    let sandbox = Sandbox::new();
    let missing = sandbox.dir.path().join("no/herdr");
    let output = sandbox.run(
        &[
            "run",
            "--dry-run",
            "--agent",
            "shell",
            "--task",
            "t",
            "--machine",
            "workmac",
        ],
        &[("HERDR_BIN", &missing)],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("Herdr CLI not found"), "{}", stderr(&output));
}

#[test]
fn a_herdr_that_prints_garbage_gets_the_planner_catalog_error() {
    let sandbox = Sandbox::new();
    let herdr = sandbox.herdr("echo 'Welcome to herdr! {oops'");
    let output = sandbox.run(
        &[
            "run",
            "--dry-run",
            "--agent",
            "shell",
            "--task",
            "t",
            "--machine",
            "workmac",
        ],
        &[("HERDR_BIN", &herdr)],
    );
    let error = &stdout_json(&output)["error"];
    assert_eq!(error["code"], "invalid-machine-catalog");
    assert!(error["message"].as_str().unwrap().contains("parse"), "{error}");
}

/// A person gets a planning error as one line on stderr; `--json` keeps the document on stdout.
/// A task of whitespace only is refused before anything is planned.
#[test]
fn run_reports_a_planning_error_as_one_line_and_refuses_an_empty_task() {
    let sandbox = Sandbox::new();
    let args = ["run", "--agent", "pi", "--model", "nonexistent/zzz", "--task", "x"];
    let output = sandbox.run(&args, &[]);
    assert_eq!(output.status.code(), Some(2), "refused before launch");
    assert!(
        output.stdout.is_empty(),
        "nothing on stdout: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    let text = stderr(&output);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.starts_with("sublaunch run: Unknown subagent model 'nonexistent/zzz'"),
        "{text}"
    );

    let mut with_json = args.to_vec();
    with_json.push("--json");
    let output = sandbox.run(&with_json, &[]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stdout_json(&output)["error"]["code"], "unknown-model");

    let output = sandbox.run(&["run", "--agent", "shell", "--task", " \t "], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stderr(&output), "sublaunch run: the task is empty\n");
}

/// `run --agent Claude`, `--agent shel`: the nearest agent name, case first.
#[test]
fn an_unknown_agent_gets_the_nearest_name() {
    let sandbox = Sandbox::new();
    for (asked, meant) in [
        ("Claude", "claude"),
        ("shel", "shell"),
        ("CODEX-writer", "codex-writer"),
    ] {
        let output = sandbox.run(&["run", "--agent", asked, "--task", "x"], &[]);
        assert_eq!(output.status.code(), Some(2));
        let text = stderr(&output);
        assert!(
            text.contains(&format!(
                "unknown agent '{asked}' (did you mean '{meant}'?); known agents: "
            )),
            "{text}"
        );
    }
    let output = sandbox.run(&["run", "--agent", "reviewer", "--task", "x"], &[]);
    assert!(!stderr(&output).contains("did you mean"), "{}", stderr(&output));
}

/// A mistyped model gets the nearest registry name; an ambiguous one says how `run` names a
/// model unambiguously (it has no --provider).
#[test]
fn a_mistyped_or_ambiguous_model_says_what_to_write() {
    let sandbox = Sandbox::new();
    let models = sandbox.dir.path().join("models.json");
    sandbox.write(
        &models,
        r#"[{"provider": "lab", "id": "fake-model"}, {"provider": "other", "id": "fake-model"},
            {"provider": "anthropic", "id": "claude-sonnet-4-5"}]"#,
    );
    let models = models.to_string_lossy().into_owned();
    let run = |model: &str| {
        let output = sandbox.run(
            &[
                "run", "--agent", "pi", "--model", model, "--task", "x", "--models", &models,
            ],
            &[],
        );
        assert_eq!(output.status.code(), Some(2));
        stderr(&output)
    };
    let text = run("anthropic/claude-sonet-4-5");
    assert!(
        text.contains("Unknown subagent model 'anthropic/claude-sonet-4-5'")
            && text.contains("Did you mean 'anthropic/claude-sonnet-4-5'?"),
        "{text}"
    );
    let text = run("fake-modle:high");
    assert!(text.contains("Did you mean 'lab/fake-model:high'?"), "{text}");
    let text = run("fake-model");
    assert!(
        text.contains("it matches lab/fake-model, other/fake-model")
            && text.contains("provider/id (such as 'lab/fake-model')")
            && text.contains("modelProvider:")
            && !text.contains("set a preferred provider"),
        "{text}"
    );
}

/// `run --agent claude --model … --thinking …` is planned for Claude Code and Codex (the real
/// CLIs get them in `real_cli_runs`); a level the CLI has no name for becomes its nearest, and
/// the run says so; a shell step refuses a model, saying what to do.
#[test]
fn coding_agent_clis_take_a_model_and_thinking_level_per_launch() {
    let sandbox = Sandbox::new();
    let plan = |args: &[&str]| {
        let mut all = vec!["run", "--dry-run", "--task", "hi"];
        all.extend_from_slice(args);
        // The CLIs on PATH: a dry run checks their programs as the launch does.
        sublaunch_tests::real_agents::require_installed();
        let path = std::path::PathBuf::from(format!(
            "{}:/usr/bin:/bin",
            sublaunch_tests::real_agents::bin_dir().display()
        ));
        let output = sandbox.run(&all, &[("PATH", &path)]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        stdout_json(&output)
    };
    let claude = plan(&[
        "--agent",
        "claude",
        "--model",
        "anthropic/claude-sonnet-4-5",
        "--thinking",
        "high",
    ]);
    assert_eq!(claude["steps"][0]["model"], "anthropic/claude-sonnet-4-5");
    assert_eq!(claude["steps"][0]["thinking"], "high");
    let codex = plan(&["--agent", "codex-writer", "--model", "openai/gpt-5-mini:max"]);
    assert_eq!(codex["steps"][0]["model"], "openai/gpt-5-mini");
    assert_eq!(codex["steps"][0]["thinking"], "xhigh", "Codex's nearest to max");
    assert!(
        codex["warnings"][0]
            .as_str()
            .is_some_and(|w| w.contains("Codex has no thinking level 'max'")),
        "{codex}"
    );

    let output = sandbox.run(
        &["run", "--agent", "claude", "--model", "openai/gpt-5", "--task", "hi"],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("runs anthropic models only"),
        "{}",
        stderr(&output)
    );
    let output = sandbox.run(&["run", "--agent", "shell", "--model", "a/b", "--task", "hi"], &[]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(
        text.contains("does not support: model override") && text.contains("drop --model"),
        "{text}"
    );
}

/// A shell step with an output schema: the refusal names the file and the JSON path, and
/// says what to do instead; it is bad input (exit 2).
#[test]
fn a_shell_steps_schema_is_refused_naming_the_file_and_the_way_out() {
    let sandbox = Sandbox::new();
    sandbox.write(
        &sandbox.project().join("so.yaml"),
        "steps:\n  - agent: shell\n    task: echo '{}'\n    outputSchema: {type: object}\n",
    );
    let output = sandbox.run(&["run", "--chain", "so.yaml"], &[]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(
        text.starts_with("sublaunch run: so.yaml: Agent 'shell'")
            && text.contains("structured output (steps[0].outputSchema)")
            && text.contains("runner.type: command"),
        "{text}"
    );
}

/// A chain file with a parallel group among its steps is a chain in `status --json`, and a
/// chain of one step is one too; parallel mode is parallel.
#[test]
fn status_shows_the_mode_the_file_asked_for() {
    let sandbox = Sandbox::new();
    let mode_of = |file: &str, text: &str| {
        sandbox.write(&sandbox.project().join(file), text);
        let output = sandbox.run(&["run", "--chain", file, "--wait"], &[]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let id = stderr(&output).lines().next().unwrap_or_default().to_owned();
        let status = sandbox.run(&["status", &id, "--json"], &[]);
        stdout_json(&status)["mode"].clone()
    };
    let group = "  - parallel:\n      - {agent: shell, task: 'echo b'}\n      - {agent: shell, task: 'echo c'}\n";
    assert_eq!(
        mode_of(
            "c.yaml",
            &format!("mode: chain\nsteps:\n  - {{agent: shell, task: 'echo a'}}\n{group}")
        ),
        "chain"
    );
    assert_eq!(
        mode_of("one.yaml", "mode: chain\nsteps:\n  - {agent: shell, task: 'echo a'}\n"),
        "chain"
    );
    assert_eq!(
        mode_of(
            "p.yaml",
            "mode: parallel\nsteps:\n  - {agent: shell, task: 'echo a'}\n  - {agent: shell, task: 'echo b'}\n"
        ),
        "parallel"
    );
}
