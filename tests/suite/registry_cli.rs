//! The model registry agrees with the agents, through the real `sublaunch` binary:
//!
//! - pi's own model list is a registry layer, read from the real pi that
//!   `scripts/setup-agents.sh` installs into `target/agents` (and compared with what that pi
//!   lists itself), cached, and rebuilt when pi changes;
//! - every built-in entry is one of pi's, with pi's figures;
//! - a registry file whose `contextWindow` is not a whole number from 1 to 2^53 is refused,
//!   naming the file and the entry (M20, M-I18);
//! - the model names in `--help` and in the README and docs/ resolve.

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use sublaunch_tests::bin;
use sublaunch_tests::launch_harness::cache_dir;

/// `target/agents/node_modules/.bin`, where `scripts/setup-agents.sh` installs pi; these
/// tests need it and fail, never skip, without it.
fn agents_bin() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/agents/node_modules/.bin");
    assert!(
        dir.join("pi").is_file() && dir.join("node").is_file(),
        "pi is not installed in {}: run scripts/setup-agents.sh (CI does) before these tests",
        dir.display()
    );
    dir
}

/// The pi-coding-agent package the installed `pi` runs from.
fn pi_package() -> PathBuf {
    let real = std::fs::canonicalize(agents_bin().join("pi")).unwrap();
    real.ancestors()
        .find(|dir| dir.join("package.json").is_file())
        .expect("pi's package directory")
        .to_owned()
}

/// A private HOME, pi agent directory and sublaunch cache, with `sublaunch` and `pi`
/// commands that see only them.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let sandbox = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        for dir in [sandbox.home(), sandbox.work(), sandbox.agent_dir()] {
            std::fs::create_dir_all(dir).unwrap();
        }
        sandbox
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn home(&self) -> PathBuf {
        self.path().join("home")
    }

    fn work(&self) -> PathBuf {
        self.path().join("work")
    }

    fn agent_dir(&self) -> PathBuf {
        self.path().join("pi-agent")
    }

    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `sublaunch ARGS` with `path` as `PATH` and this sandbox's own cache directory (set
    /// `SUBLAUNCH_CACHE_DIR` again to share the suite's planner cache).
    fn sublaunch(&self, args: &[&str], path: &str) -> Command {
        let mut command = Command::new(bin("sublaunch"));
        command
            .args(args)
            .current_dir(self.work())
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.home())
            .env("PI_CODING_AGENT_DIR", self.agent_dir())
            .env("SUBLAUNCH_CACHE_DIR", self.path().join("cache"));
        command
    }

    /// `sublaunch models …` resolving names, with the suite's shared planner cache.
    fn resolve(&self, args: &[&str], path: &str) -> Output {
        let mut full = vec!["models", "resolve"];
        full.extend_from_slice(args);
        self.sublaunch(&full, path)
            .env("SUBLAUNCH_CACHE_DIR", cache_dir())
            .output()
            .unwrap()
    }
}

/// The PATH without pi.
const NO_PI: &str = "/usr/bin:/bin";

/// The PATH with the installed pi (and its Node) first.
fn with_pi() -> String {
    format!("{}:/usr/bin:/bin", agents_bin().display())
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[track_caller]
fn json_of(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        stdout(output),
        stderr(output)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(output)))
}

/// `sublaunch models --json`: every entry, with its `source`.
fn registry(sandbox: &Sandbox, path: &str) -> Vec<Value> {
    let output = sandbox.sublaunch(&["models", "--json"], path).output().unwrap();
    json_of(&output).as_array().unwrap().clone()
}

fn full_id(entry: &Value) -> String {
    format!(
        "{}/{}",
        entry["provider"].as_str().unwrap(),
        entry["id"].as_str().unwrap()
    )
}

fn from_pi(entry: &Value) -> bool {
    entry["source"].as_str().is_some_and(|s| s.starts_with("pi "))
}

/// pi's own way of writing a token count in `--list-models` (`200K`, `1M`, `1.0M`).
fn pi_token_count(count: f64) -> String {
    if count >= 1_000_000.0 {
        let millions = count / 1_000_000.0;
        return if millions.fract() == 0.0 {
            format!("{millions}M")
        } else {
            format!("{millions:.1}M")
        };
    }
    if count >= 1_000.0 {
        let thousands = count / 1_000.0;
        return if thousands.fract() == 0.0 {
            format!("{thousands}K")
        } else {
            format!("{thousands:.1}K")
        };
    }
    format!("{count}")
}

/// The API-key variables of the providers the comparison with pi covers (pi lists only the
/// models of providers it has a key for; the values are placeholders no request is made with).
const PROVIDER_KEYS: [(&str, &str); 9] = [
    ("anthropic", "ANTHROPIC_API_KEY"),
    ("openai", "OPENAI_API_KEY"),
    ("google", "GEMINI_API_KEY"),
    ("xai", "XAI_API_KEY"),
    ("mistral", "MISTRAL_API_KEY"),
    ("deepseek", "DEEPSEEK_API_KEY"),
    ("groq", "GROQ_API_KEY"),
    ("openrouter", "OPENROUTER_API_KEY"),
    ("vercel-ai-gateway", "AI_GATEWAY_API_KEY"),
];

#[test]
fn pis_own_model_list_is_a_registry_layer_that_agrees_with_pi() {
    let sandbox = Sandbox::new();
    // The user's pi configuration counts too: a custom provider and an override.
    sandbox.write(
        "pi-agent/models.json",
        r#"{
          // pi reads comments and trailing commas here
          "providers": {
            "ollama": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "local",
                       "models": [{"id": "llama3.1:8b"}, {"id": "qwen-coder", "reasoning": true, "contextWindow": 64000},]},
            "anthropic": {"modelOverrides": {"claude-haiku-4-5": {"contextWindow": 150000}}},
          },
        }"#,
    );
    let list_models = || {
        let mut pi = Command::new(agents_bin().join("pi"));
        pi.arg("--list-models")
            .current_dir(sandbox.work())
            .env_clear()
            .env("PATH", with_pi())
            .env("HOME", sandbox.home())
            .env("PI_CODING_AGENT_DIR", sandbox.agent_dir())
            .env("PI_OFFLINE", "1");
        for (_, key) in PROVIDER_KEYS {
            pi.env(key, "placeholder");
        }
        let listed = pi.output().unwrap();
        assert!(listed.status.success(), "pi --list-models: {}", stderr(&listed));
        listed
    };
    // pi 0.85.1 sometimes leaves a provider out of `--list-models` while other pi processes
    // start (seen with xai on a loaded machine; never when it runs alone): ask again, a bounded
    // number of times, until every provider that has a key is listed.
    let complete = |listed: &std::process::Output| {
        PROVIDER_KEYS.iter().all(|(provider, _)| {
            stdout(listed)
                .lines()
                .any(|line| line.split_whitespace().next() == Some(provider))
        })
    };
    let mut listed = list_models();
    for _ in 0..5 {
        if complete(&listed) {
            break;
        }
        listed = list_models();
    }
    // provider → id → (context, thinking) as pi prints them.
    let mut by_pi: BTreeMap<String, BTreeMap<String, (String, String)>> = BTreeMap::new();
    for line in stdout(&listed).lines().skip(1) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        if let [provider, id, context, _, thinking, _] = cells[..] {
            by_pi
                .entry(provider.to_owned())
                .or_default()
                .insert(id.to_owned(), (context.to_owned(), thinking.to_owned()));
        }
    }
    for provider in PROVIDER_KEYS.iter().map(|(p, _)| *p).chain(["ollama"]) {
        assert!(
            by_pi.get(provider).is_some_and(|m| !m.is_empty()),
            "pi listed no model of {provider}:\n{}",
            stdout(&listed)
        );
    }

    let entries = registry(&sandbox, &with_pi());
    let mut by_us: BTreeMap<String, BTreeMap<String, (String, String)>> = BTreeMap::new();
    for entry in entries.iter().filter(|e| from_pi(e)) {
        let context = entry["contextWindow"].as_f64().map_or("-".into(), pi_token_count);
        let thinking = if entry["reasoning"] == json!(true) { "yes" } else { "no" };
        by_us
            .entry(entry["provider"].as_str().unwrap().to_owned())
            .or_default()
            .insert(entry["id"].as_str().unwrap().to_owned(), (context, thinking.to_owned()));
    }
    for (provider, models) in &by_pi {
        assert_eq!(
            by_us.get(provider),
            Some(models),
            "the registry's pi layer and pi itself disagree about provider {provider}"
        );
    }
    // The custom models are labelled with the file that added them.
    let custom = entries.iter().find(|e| full_id(e) == "ollama/qwen-coder").unwrap();
    let models_json = sandbox.agent_dir().join("models.json");
    assert!(
        custom["source"]
            .as_str()
            .unwrap()
            .ends_with(&format!("({})", models_json.display())),
        "{custom}"
    );
    // pi's layer comes before the built-in one: the override wins over the built-in figure.
    let haiku: Vec<&Value> = entries
        .iter()
        .filter(|e| full_id(e) == "anthropic/claude-haiku-4-5")
        .collect();
    assert_eq!(haiku.len(), 1, "a provider/id is listed once: {haiku:?}");
    assert_eq!(haiku[0]["contextWindow"], 150_000.0);

    // The issue's case: pi has no anthropic/claude-sonnet-4 (it would fuzzy-match it to
    // another model), so sublaunch refuses it before anything is launched and paid for.
    let output = sandbox.resolve(&["anthropic/claude-sonnet-4", "--json"], &with_pi());
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    assert_eq!(json_of_error(&output)["error"]["code"], "unknown-model");
    // A model only pi knows resolves, with pi's context window.
    let output = sandbox.resolve(&["ollama/qwen-coder:high"], &with_pi());
    let text = stdout(&output);
    assert!(
        output.status.success() && text.starts_with("ollama/qwen-coder:high\n") && text.contains("64000 tokens"),
        "{text}{}",
        stderr(&output)
    );
}

fn json_of_error(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(output)))
}

#[test]
fn every_builtin_entry_is_one_of_pis_with_pis_figures() {
    let sandbox = Sandbox::new();
    let builtin = registry(&sandbox, NO_PI);
    assert!(builtin.len() >= 20, "{builtin:?}");
    assert!(builtin.iter().all(|e| e["source"] == "built-in"));
    let with_pi = registry(&sandbox, &with_pi());
    let pis: BTreeMap<String, &Value> = with_pi.iter().filter(|e| from_pi(e)).map(|e| (full_id(e), e)).collect();
    let mut wrong = Vec::new();
    for entry in &builtin {
        let id = full_id(entry);
        match pis.get(&id) {
            None => wrong.push(format!("{id}: pi does not know it")),
            Some(pi) => {
                for field in ["name", "reasoning", "thinkingLevels", "contextWindow"] {
                    if entry[field] != pi[field] {
                        wrong.push(format!("{id}: {field} is {} here, {} in pi", entry[field], pi[field]));
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "host/data/models.json is out of step with pi {}:\n{}",
        pis.values().next().map_or("?", |e| e["source"].as_str().unwrap()),
        wrong.join("\n")
    );
}

/// A copy of the installed pi whose files a test may change: its package.json and entry
/// script, and its catalog package (package.json and the catalog's JSON files).
fn pi_farm(root: &Path) -> PathBuf {
    let real_package = pi_package();
    let package = root.join("node_modules/@earendil-works/pi-coding-agent");
    std::fs::create_dir_all(package.join("dist/bundle")).unwrap();
    std::fs::copy(real_package.join("package.json"), package.join("package.json")).unwrap();
    std::fs::copy(
        real_package.join("dist/bundle/cli.js"),
        package.join("dist/bundle/cli.js"),
    )
    .unwrap();
    let real_catalog = real_package
        .ancestors()
        .map(|dir| dir.join("node_modules/@earendil-works/pi-ai"))
        .find(|dir| dir.join("package.json").is_file())
        .expect("pi's catalog package");
    let catalog = root.join("node_modules/@earendil-works/pi-ai");
    std::fs::create_dir_all(catalog.join("dist/providers/data")).unwrap();
    std::fs::copy(real_catalog.join("package.json"), catalog.join("package.json")).unwrap();
    for file in std::fs::read_dir(real_catalog.join("dist/providers/data")).unwrap() {
        let file = file.unwrap();
        std::fs::copy(file.path(), catalog.join("dist/providers/data").join(file.file_name())).unwrap();
    }
    let bin = root.join("node_modules/.bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink("../@earendil-works/pi-coding-agent/dist/bundle/cli.js", bin.join("pi")).unwrap();
    bin
}

#[test]
fn the_pi_layer_is_cached_and_rebuilt_when_pi_changes() {
    let sandbox = Sandbox::new();
    let bin = pi_farm(&sandbox.path().join("farm"));
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let package_json = sandbox
        .path()
        .join("farm/node_modules/@earendil-works/pi-coding-agent/package.json");
    let version = serde_json::from_slice::<Value>(&std::fs::read(&package_json).unwrap()).unwrap()["version"]
        .as_str()
        .unwrap()
        .to_owned();

    let first = registry(&sandbox, &path);
    assert!(
        first.iter().any(|e| e["source"] == format!("pi {version}")),
        "pi's layer is read from the farm"
    );
    let cache = sandbox.path().join("cache/pi-models");
    let files: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap_or_else(|e| panic!("no cache in {}: {e}", cache.display()))
        .map(|f| f.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");

    // A warm run takes the layer from the cache: an entry planted there is listed.
    let mut cached: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    cached["models"]["entries"]
        .as_array_mut()
        .expect("the cache holds the layer's entries")
        .push(json!({"model": {"provider": "cache", "id": "proof"}, "source": "pi cached"}));
    std::fs::write(&files[0], serde_json::to_vec(&cached).unwrap()).unwrap();
    let warm = registry(&sandbox, &path);
    assert!(
        warm.iter().any(|e| full_id(e) == "cache/proof"),
        "the cache was not used"
    );

    // A new pi version (with a new model in its catalog) is noticed: the layer is read again.
    let text = std::fs::read_to_string(&package_json).unwrap();
    let bumped = text.replacen(
        &format!("\"version\": \"{version}\""),
        "\"version\": \"99.0.0-farm\"",
        1,
    );
    assert_ne!(text, bumped, "the farm's package.json names its version");
    std::fs::write(&package_json, bumped).unwrap();
    let anthropic = sandbox
        .path()
        .join("farm/node_modules/@earendil-works/pi-ai/dist/providers/data/anthropic.json");
    let mut catalog: Value = serde_json::from_slice(&std::fs::read(&anthropic).unwrap()).unwrap();
    catalog["anthropic-messages"]["claude-farm-1"] = json!({
        "id": "claude-farm-1", "name": "Farm 1", "provider": "anthropic", "reasoning": true,
        "contextWindow": 123456});
    std::fs::write(&anthropic, catalog.to_string()).unwrap();
    let rebuilt = registry(&sandbox, &path);
    assert!(
        !rebuilt.iter().any(|e| full_id(e) == "cache/proof"),
        "the stale cache was used"
    );
    let farm = rebuilt
        .iter()
        .find(|e| full_id(e) == "anthropic/claude-farm-1")
        .expect("the new model is listed");
    assert_eq!(
        (&farm["source"], &farm["contextWindow"]),
        (&json!("pi 99.0.0-farm"), &json!(123456.0))
    );

    // A pi whose catalog cannot be read is a warning, never an error.
    std::fs::remove_file(
        sandbox
            .path()
            .join("farm/node_modules/@earendil-works/pi-ai/dist/providers/data/.manifest.json"),
    )
    .unwrap();
    let output = sandbox.sublaunch(&["models", "--json"], &path).output().unwrap();
    let entries = json_of(&output);
    assert!(entries.as_array().unwrap().iter().all(|e| e["source"] == "built-in"));
    assert!(
        stderr(&output).contains("warning: pi's model list is not in the registry"),
        "{}",
        stderr(&output)
    );
}

/// M20, M-I18: a context window is a whole number of tokens from 1 to 2^53; a registry
/// file holding anything else is refused, naming the file, the JSON path and the entry.
#[test]
fn m20_m_i18_a_registry_file_with_a_bad_context_window_is_refused() {
    let sandbox = Sandbox::new();
    let good = r#"{"provider": "acme", "id": "fine", "contextWindow": 1000}"#;
    for bad in ["1.5", "0", "-1", "1e300", "\"big\"", "9007199254740993", "true", "{}"] {
        let file = sandbox.write(
            "home/.config/sublaunch/models.json",
            &format!(
                r#"{{"models": [{good}, {good}, {good}, {{"provider": "acme", "id": "rocket-1", "contextWindow": {bad}}}]}}"#
            ),
        );
        for args in [
            &["models"][..],
            // A run whose plan picks a model reads the registry (a shell run does not).
            &[
                "run",
                "--dry-run",
                "--agent",
                "pi",
                "--task",
                "hi",
                "--model",
                "acme/fine",
            ][..],
        ] {
            let output = sandbox.sublaunch(args, NO_PI).output().unwrap();
            let message = stderr(&output);
            assert_eq!(output.status.code(), Some(2), "{bad}: {args:?}: {message}");
            assert!(!message.contains("panicked"), "{message}");
            for part in [
                file.display().to_string(),
                "models[3].contextWindow".into(),
                "acme/rocket-1".into(),
                "whole number".into(),
            ] {
                assert!(message.contains(&part), "{bad}: {args:?}: no {part:?} in {message}");
            }
        }
    }
    // 2^53 is the largest context window there is, and it reaches the plan exactly.
    sandbox.write(
        "home/.config/sublaunch/models.json",
        r#"[{"provider": "acme", "id": "rocket-1", "contextWindow": 9007199254740992}]"#,
    );
    let output = sandbox.resolve(&["acme/rocket-1", "--json"], NO_PI);
    assert_eq!(json_of(&output)["contextLimit"], json!(9_007_199_254_740_992_u64));
}

/// M20, M-I18: in a request (no registry file involved) such a context window is no
/// context window: the plan leaves `contextLimit` out and warns, naming the entry.
#[test]
fn m20_m_i18_a_request_with_a_bad_context_window_plans_without_a_limit() {
    let sandbox = Sandbox::new();
    for bad in ["1.5", "1e300", "0"] {
        let request = format!(
            r#"{{"cwd": "/c", "mode": "single", "agents": [{{"name": "w"}}],
                "steps": [{{"agent": "w", "task": "t", "model": "acme/rocket-1"}}],
                "availableModels": [{{"provider": "acme", "id": "rocket-1", "contextWindow": {bad}}}]}}"#
        );
        let file = sandbox.write("request.json", &request);
        let output = sandbox
            .sublaunch(&["plan", "--request", file.to_str().unwrap()], NO_PI)
            .env("SUBLAUNCH_CACHE_DIR", cache_dir())
            .output()
            .unwrap();
        let plan = json_of(&output);
        assert_eq!(plan["steps"][0]["model"], "acme/rocket-1");
        assert_eq!(plan["steps"][0].get("contextLimit"), None, "{bad}: {plan}");
        let warnings = plan["warnings"].to_string();
        assert!(warnings.contains("acme/rocket-1"), "{bad}: {warnings}");
    }
}

/// The backticked examples of the `--help` lines that talk about model names.
fn help_model_names() -> BTreeSet<String> {
    let sandbox = Sandbox::new();
    let mut names = BTreeSet::new();
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["plan", "--help"],
        &["models", "--help"],
        &["models", "resolve", "--help"],
    ] {
        let output = sandbox.sublaunch(args, NO_PI).output().unwrap();
        for line in stdout(&output).lines() {
            let lower = line.to_lowercase();
            if !(lower.contains("model") && lower.contains("e.g.")) {
                continue;
            }
            names.extend(line.split('`').skip(1).step_by(2).map(str::to_owned));
        }
    }
    names
}

#[test]
fn the_model_names_in_help_resolve_with_and_without_pi() {
    let names = help_model_names();
    assert!(names.len() >= 2, "no model examples found in --help: {names:?}");
    let sandbox = Sandbox::new();
    for path in [NO_PI.to_owned(), with_pi()] {
        for name in &names {
            let output = sandbox.resolve(&[name], &path);
            assert!(
                output.status.success(),
                "`{name}`, shown in --help, does not resolve (PATH {path}): {}{}",
                stdout(&output),
                stderr(&output)
            );
        }
    }
}

/// The fenced code blocks of the README and of the pages under `docs/` (drafts left out).
fn readme_code() -> Vec<String> {
    fn pages(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() && entry.file_name() != "drafts" {
                pages(&path, found);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    pages(&root.join("docs"), &mut files);
    let text: String = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap() + "\n")
        .collect();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.starts_with("```") {
            match current.take() {
                Some(block) => blocks.push(block),
                None => current = Some(String::new()),
            }
        } else if let Some(block) = &mut current {
            block.push_str(line);
            block.push('\n');
        }
    }
    blocks
}

#[test]
fn the_model_names_in_readme_examples_resolve() {
    let sandbox = Sandbox::new();
    let mut checked = 0;
    for block in readme_code() {
        let lines: Vec<&str> = block.lines().collect();
        // `$ sublaunch models resolve ARGS` and the output shown under it.
        for (i, line) in lines.iter().enumerate() {
            let Some(command) = line.trim().strip_prefix("$ sublaunch models resolve ") else {
                continue;
            };
            let args: Vec<&str> = command.split('#').next().unwrap().split_whitespace().collect();
            let shown = lines.get(i + 1).copied().unwrap_or_default();
            for path in [NO_PI.to_owned(), with_pi()] {
                let shows_error = shown.trim().starts_with(r#"{"error": {"code": ""#);
                // The error document is printed with --json (without, a line on stderr).
                let mut args = args.clone();
                if shows_error && !args.contains(&"--json") {
                    args.push("--json");
                }
                let output = sandbox.resolve(&args, &path);
                if let Some(error) = shown.trim().strip_prefix(r#"{"error": {"code": ""#) {
                    let code = error.split('"').next().unwrap();
                    assert_eq!(
                        json_of_error(&output)["error"]["code"],
                        code,
                        "docs: sublaunch models resolve {command} (PATH {path})"
                    );
                } else {
                    assert_eq!(
                        stdout(&output).lines().next(),
                        Some(shown.trim()),
                        "docs: sublaunch models resolve {command} (PATH {path}): {}",
                        stderr(&output)
                    );
                }
                checked += 1;
            }
        }
        // Model names in examples of agents, chains and plans (`model: X`, `"model": "X"`,
        // `--model X`); an agent's `modelProvider` in the same block breaks ties as it would.
        let provider = lines
            .iter()
            .find_map(|l| l.trim().strip_prefix("modelProvider:"))
            .map(|p| p.split('#').next().unwrap().trim().to_owned());
        let mut names = Vec::new();
        for line in &lines {
            for (marker, end) in [
                ("\"model\": \"", '"'),
                ("\"requestedModel\": \"", '"'),
                ("model: ", '}'),
                ("--model ", ' '),
            ] {
                for piece in line.split(marker).skip(1) {
                    let name = piece.split([end, '#', ',', '\n']).next().unwrap().trim();
                    if !name.is_empty() && !line.trim_start().starts_with("modelProvider") {
                        names.push(name.to_owned());
                    }
                }
            }
        }
        for name in names {
            let mut args = vec![name.as_str()];
            if let Some(provider) = &provider {
                args.extend(["--provider", provider]);
            }
            let output = sandbox.resolve(&args, NO_PI);
            assert!(
                output.status.success(),
                "the docs name the model `{name}`, which does not resolve: {}",
                stdout(&output)
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} model examples were found in the docs");
}
