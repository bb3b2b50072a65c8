//! The planner for embedders: every public vector through the three example hosts
//! — Node with jco (`examples/node/plan.mjs`), Python with wasmtime-py
//! (`examples/python/plan.py`) and a standalone Rust host made with `bindgen!`
//! (`examples/rust-host`) — must print what `sublaunch plan` prints (the same JSON document,
//! compared after ordering object keys canonically) and exit with the same code. A guest
//! that traps, spins past its deadline or hoards memory must come out as `planner-fault`.
//!
//! Node, npx, Python and their packages come from `scripts/setup-embedders.sh` (CI runs it);
//! when they are missing these tests fail and say so. The component is transpiled with jco
//! once per run, into this package's target tmp directory.
//!
//! `cargo test --test embedders -- --ignored --nocapture benchmark` (or
//! `scripts/bench-embedders.sh`) measures a warm plan call in each runtime.

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Instant;
use sublaunch_tests::{bin, vectors};

const SETUP: &str = "run scripts/setup-embedders.sh first (CI runs it before `cargo test`)";

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A scratch directory for this run, wiped when first used.
fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("embedders");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

/// The planner component, as `sublaunch component --out` writes it (the embedded one).
fn planner_wasm() -> &'static Path {
    static WASM: OnceLock<PathBuf> = OnceLock::new();
    WASM.get_or_init(|| {
        let wasm = scratch().join("planner.wasm");
        let output = Command::new(bin("sublaunch"))
            .args(["component", "--out"])
            .arg(&wasm)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "sublaunch component failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        wasm
    })
}

/// The test-only rogue planner that host/build.rs builds beside the real one.
fn rogue_wasm() -> PathBuf {
    let guest_target = match std::env::var_os("SUBLAUNCH_GUEST_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => bin("sublaunch").parent().and_then(Path::parent).unwrap().join("guest"),
    };
    let wasm = guest_target.join("wasm32-wasip2/guest/rogue_planner.wasm");
    assert!(wasm.is_file(), "the rogue planner is not built at {}", wasm.display());
    wasm
}

// --- the runtimes ----------------------------------------------------------------------

fn require(program: &str, args: &[&str], what: &str) {
    let ok = Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(ok, "{what} is missing ({program} {}): {SETUP}", args.join(" "));
}

/// `node`, checked to be there.
fn node() -> &'static str {
    static CHECKED: OnceLock<()> = OnceLock::new();
    CHECKED.get_or_init(|| require("node", &["--version"], "Node.js"));
    "node"
}

/// The Python with wasmtime-py: the setup script's venv, else `python3` (user site).
fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let venv = workspace().join("target/embedders/venv/bin/python");
        let python = if venv.is_file() { venv } else { PathBuf::from("python3") };
        let program = python.to_str().unwrap();
        require(
            program,
            &["-c", "import wasmtime.component"],
            "Python with the wasmtime package",
        );
        python
    })
}

/// Transpiles a component with the pinned jco (`npx jco transpile … --instantiation async`)
/// into a directory that Node loads as ES modules.
fn transpile(wasm: &Path, name: &str) -> PathBuf {
    let node_dir = workspace().join("examples/node");
    assert!(
        node_dir
            .join("node_modules/@bytecodealliance/jco/package.json")
            .is_file(),
        "jco is not installed in examples/node/node_modules: {SETUP}"
    );
    require("npx", &["--version"], "npx");
    let out = scratch().join(name);
    let output = Command::new("npx")
        .args(["--no-install", "jco", "transpile"])
        .arg(wasm)
        .arg("-o")
        .arg(&out)
        .args(["--name", "planner", "--instantiation", "async", "--quiet"])
        .current_dir(&node_dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "npx jco transpile failed ({SETUP}): {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // jco writes ES modules with a .js extension; outside a {"type": "module"} package,
    // Node 20 would read them as CommonJS.
    std::fs::write(out.join("package.json"), "{\"type\": \"module\"}\n").unwrap();
    out
}

fn node_planner() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        node();
        transpile(planner_wasm(), "node-planner")
    })
}

/// The three example hosts.
#[derive(Clone, Copy, Debug)]
enum Host {
    Node,
    Python,
    Wasmtime,
}

impl Host {
    /// The command that plans with `component` (the planner, or the rogue one).
    fn command(self, rogue: bool) -> Command {
        match self {
            Host::Node => {
                let dir = if rogue {
                    static DIR: OnceLock<PathBuf> = OnceLock::new();
                    DIR.get_or_init(|| {
                        node();
                        transpile(&rogue_wasm(), "node-rogue")
                    })
                } else {
                    node_planner()
                };
                let mut command = Command::new(node());
                command.arg(workspace().join("examples/node/plan.mjs")).arg(dir);
                command
            }
            Host::Python => {
                let mut command = Command::new(python());
                command.arg(workspace().join("examples/python/plan.py"));
                command.arg(if rogue { rogue_wasm() } else { planner_wasm().to_owned() });
                command
            }
            Host::Wasmtime => {
                let mut command = Command::new(bin("sublaunch-rust-host-example"));
                command.arg(if rogue { rogue_wasm() } else { planner_wasm().to_owned() });
                command
            }
        }
    }
}

/// Runs a command with `stdin`, collecting its output.
fn run(mut command: Command, stdin: &[u8]) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {command:?} ({e}): {SETUP}"));
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin); // a refusing reader may close the pipe early
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}

/// Plans every request (one JSON document per line) in one `--batch` process; returns each
/// request's exit code and printed text (without the final newline).
fn run_batch(host: Host, rogue: bool, requests: &[String]) -> Vec<(i64, String)> {
    let mut command = host.command(rogue);
    command.arg("--batch");
    let output = run(command, (requests.join("\n") + "\n").as_bytes());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{host:?} --batch failed ({:?}): {stderr}",
        output.status
    );
    let results: Vec<(i64, String)> = stdout
        .lines()
        .map(|line| {
            let result: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{host:?} printed a bad line ({e}): {line}"));
            (
                result["exit"].as_i64().unwrap(),
                result["output"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        results.len(),
        requests.len(),
        "{host:?} answered {} of {} requests; stderr: {stderr}",
        results.len(),
        requests.len()
    );
    results
}

// --- what `sublaunch plan` prints --------------------------------------------------------

struct Expected {
    name: String,
    request: String,
    exit: i64,
    stdout: String,
}

/// Every public vector's request (one line of JSON) and what `sublaunch plan` printed.
fn expected() -> &'static [Expected] {
    static ALL: OnceLock<Vec<Expected>> = OnceLock::new();
    ALL.get_or_init(|| {
        let cache = scratch().join("sublaunch-cache");
        vectors::all()
            .into_iter()
            .map(|(file, vector)| {
                let request = serde_json::to_string(&vector.request).unwrap();
                let mut command = Command::new(bin("sublaunch"));
                command.arg("plan").env("SUBLAUNCH_CACHE_DIR", &cache);
                let output = run(command, request.as_bytes());
                let exit = i64::from(output.status.code().expect("sublaunch plan exited"));
                assert!(matches!(exit, 0 | 1), "{}: sublaunch plan exited {exit}", vector.name);
                Expected {
                    name: format!("{file}: {}", vector.name),
                    request,
                    exit,
                    stdout: String::from_utf8(output.stdout).unwrap(),
                }
            })
            .collect()
    })
}

/// A JSON document with every object's keys in order, printed with two-space indentation.
fn canonical(text: &str) -> Result<String, String> {
    fn sort(value: Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(String, Value)> = map.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(entries.into_iter().map(|(k, v)| (k, sort(v))).collect())
            }
            Value::Array(items) => Value::Array(items.into_iter().map(sort).collect()),
            other => other,
        }
    }
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e}): {text}"))?;
    Ok(serde_json::to_string_pretty(&sort(value)).unwrap())
}

/// Compares one host's answer with `sublaunch plan`'s; `None` when they match.
fn difference(want: &Expected, exit: i64, printed: &str) -> Option<String> {
    if exit != want.exit {
        return Some(format!(
            "{}: exit {exit}, sublaunch plan exit {}\n  got: {printed}",
            want.name, want.exit
        ));
    }
    match (canonical(&want.stdout), canonical(printed)) {
        (Ok(a), Ok(b)) if a == b => None,
        (Ok(a), Ok(b)) => Some(format!("{}:\n  sublaunch plan: {a}\n  host: {b}", want.name)),
        (a, b) => Some(format!("{}: {a:?} / {b:?}", want.name)),
    }
}

fn every_vector_matches(host: Host) {
    let all = expected();
    assert!(all.len() >= 100, "only {} public vectors found", all.len());
    let requests: Vec<String> = all.iter().map(|e| e.request.clone()).collect();
    let results = run_batch(host, false, &requests);
    let mut failures = Vec::new();
    let mut byte_identical = 0;
    for (want, (exit, printed)) in all.iter().zip(&results) {
        match difference(want, *exit, printed) {
            Some(problem) => failures.push(problem),
            None if format!("{printed}\n") == want.stdout => byte_identical += 1,
            None => {}
        }
    }
    eprintln!(
        "{host:?}: {} of {} vectors match sublaunch plan ({byte_identical} byte for byte before key ordering)",
        all.len() - failures.len(),
        all.len()
    );
    assert!(
        failures.is_empty(),
        "{host:?}: {} of {} vectors differ from sublaunch plan:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

#[test]
fn node_with_jco_prints_what_sublaunch_plan_prints_for_every_vector() {
    every_vector_matches(Host::Node);
}

#[test]
fn python_with_wasmtime_py_prints_what_sublaunch_plan_prints_for_every_vector() {
    every_vector_matches(Host::Python);
}

#[test]
fn the_bindgen_rust_host_prints_what_sublaunch_plan_prints_for_every_vector() {
    every_vector_matches(Host::Wasmtime);
}

/// The printed outcome with any parse position left out of its error message (inserting a
/// registry moves them).
fn unplaced(printed: &str) -> String {
    let Ok(mut value) = serde_json::from_str::<Value>(printed) else {
        return printed.to_owned();
    };
    if let Some(message) = value.pointer_mut("/error/message")
        && let Some(text) = message.as_str()
    {
        *message = Value::from(text.split(" at line ").next().unwrap_or(text));
    }
    canonical(&value.to_string()).unwrap()
}

/// Every vector without its own registry, planned by `host` in one `planner-session` holding
/// a 500-entry registry, prints what the host library plans for the same request with that
/// registry in it.
fn every_vector_matches_in_a_session(host: Host) {
    let planner = sublaunch::Planner::embedded(sublaunch::Options::default()).unwrap();
    let mut registry: Vec<Value> = vectors::all()
        .iter()
        .filter_map(|(_, v)| v.request.get("availableModels")?.as_array().cloned())
        .flatten()
        .take(400)
        .collect();
    registry.extend(
        (registry.len()..500)
            .map(|i| serde_json::json!({"provider": format!("filler{}", i % 7), "id": format!("model-{i}")})),
    );
    let file = scratch().join(format!("session-registry-{host:?}.json"));
    std::fs::write(&file, Value::Array(registry.clone()).to_string()).unwrap();
    let (mut requests, mut wanted) = (Vec::new(), Vec::new());
    for (_, vector) in vectors::all() {
        let mut bare = vector.request.clone();
        let Some(object) = bare.as_object_mut() else { continue };
        object.remove("availableModels");
        let mut with = bare.clone();
        with["availableModels"] = Value::Array(registry.clone());
        let expected = match planner.plan_json(&with.to_string()) {
            Ok(plan) => (0, plan),
            Err(error) => (1, sublaunch::contract::render(&Err(error))),
        };
        requests.push(bare.to_string());
        wanted.push((vector.name, expected));
    }
    let mut command = host.command(false);
    command.arg("--batch").arg("--session").arg(&file);
    let output = run(command, (requests.join("\n") + "\n").as_bytes());
    assert!(
        output.status.success(),
        "{host:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        lines.len(),
        wanted.len(),
        "{host:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    for (line, (name, (exit, printed))) in lines.iter().zip(&wanted) {
        assert_eq!(line["exit"], *exit, "{host:?} {name}: {line}");
        assert_eq!(
            unplaced(line["output"].as_str().unwrap()),
            unplaced(printed),
            "{host:?} {name}"
        );
    }
}

#[test]
fn node_with_jco_plans_in_a_planner_session_what_the_host_plans_with_the_registry() {
    every_vector_matches_in_a_session(Host::Node);
}

#[test]
fn python_with_wasmtime_py_plans_in_a_planner_session_what_the_host_plans_with_the_registry() {
    every_vector_matches_in_a_session(Host::Python);
}

/// The documented mode: one request on stdin, the document on stdout, exit 0 or 1.
#[test]
fn the_single_request_mode_prints_and_exits_like_sublaunch_plan() {
    let all = expected();
    let plan = all.iter().find(|e| e.exit == 0).expect("a vector with a plan");
    let error = all.iter().find(|e| e.exit == 1).expect("a vector with an error");
    for host in [Host::Node, Host::Python, Host::Wasmtime] {
        for want in [plan, error] {
            let output = run(host.command(false), want.request.as_bytes());
            let printed = String::from_utf8_lossy(&output.stdout);
            let exit = i64::from(output.status.code().unwrap_or(-1));
            assert!(printed.ends_with('\n'), "{host:?}: {printed:?}");
            if let Some(problem) = difference(want, exit, printed.trim_end_matches('\n')) {
                panic!(
                    "{host:?} single mode: {problem}\nstderr: {}",
                    String::from_utf8_lossy(&output.stderr)
                );
            }
        }
    }
}

// --- faults ------------------------------------------------------------------------------

/// Sends the rogue planner's selectors; each answer must be `planner-fault` whose message
/// contains the given fragments, and a harmless request afterwards must still be planned.
fn faults_are_planner_faults(host: Host, cases: &[(&str, &[&str])]) {
    let mut requests: Vec<String> = cases.iter().map(|(cwd, _)| format!("{{\"cwd\":\"{cwd}\"}}")).collect();
    requests.push("{\"cwd\":\"/fine\"}".to_owned());
    let results = run_batch(host, true, &requests);
    for ((cwd, fragments), (exit, printed)) in cases.iter().zip(&results) {
        assert_eq!(*exit, 1, "{host:?} {cwd}: {printed}");
        let document: Value = serde_json::from_str(printed).unwrap();
        assert_eq!(document["error"]["code"], "planner-fault", "{host:?} {cwd}: {printed}");
        let message = document["error"]["message"].as_str().unwrap();
        for fragment in *fragments {
            assert!(
                message.contains(fragment),
                "{host:?} {cwd}: {message:?} lacks {fragment:?}"
            );
        }
        assert_eq!(
            canonical(printed).unwrap(),
            *printed,
            "{host:?} {cwd}: not printed like sublaunch plan"
        );
    }
    let (exit, printed) = results.last().unwrap();
    assert_eq!(
        (*exit, printed.as_str()),
        (0, "{\"steps\":[]}"),
        "{host:?} stopped serving after faults"
    );
}

const TRAP: (&str, &[&str]) = (
    "/trap",
    &["The planner trapped", "unreachable", "rogue planner is about to trap"],
);
const PANIC: (&str, &[&str]) = ("/panic", &["The planner trapped", "rogue planner panicked on purpose"]);
const DEADLINE: (&str, &[&str]) = ("/loop", &["exceeded its deadline", "fuel budget of 4000000000 units"]);
const MEMORY: (&str, &[&str]) = ("/alloc", &["reached its memory cap of 256 MiB", "memory allocation of"]);

#[test]
fn python_reports_the_deadline_the_memory_cap_and_traps_as_planner_fault() {
    faults_are_planner_faults(Host::Python, &[DEADLINE, TRAP, MEMORY, PANIC]);
}

#[test]
fn node_reports_traps_and_panics_as_planner_fault_with_the_guest_stderr() {
    // jco has no fuel: a spinning planner would block Node (see examples/node/plan.mjs).
    faults_are_planner_faults(Host::Node, &[TRAP, PANIC]);
}

#[test]
fn the_rust_host_reports_the_deadline_the_memory_cap_and_traps_as_planner_fault() {
    faults_are_planner_faults(Host::Wasmtime, &[DEADLINE, TRAP, MEMORY, PANIC]);
}

// --- benchmark ---------------------------------------------------------------------------

/// Best and median of per-round means (µs per call).
fn best_and_median(mut rounds: Vec<f64>) -> (f64, f64) {
    rounds.sort_by(f64::total_cmp);
    (rounds[0], rounds[rounds.len() / 2])
}

/// Per-call latency of a warm `plan-json` call on the same request in each runtime, as a
/// Markdown table (scripts/bench-embedders.sh runs it). Each runtime warms up, then runs
/// ROUNDS rounds of CALLS calls; the best round is compared (the box may be busy).
#[test]
#[ignore = "a benchmark: scripts/bench-embedders.sh"]
fn benchmark_warm_plan_calls() {
    let request_path = std::env::var_os("SUBLAUNCH_BENCH_REQUEST")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("examples/plan/chain.json"));
    let number = |name: &str, default: u32| std::env::var(name).ok().and_then(|n| n.parse().ok()).unwrap_or(default);
    let (calls, rounds) = (
        number("SUBLAUNCH_BENCH_CALLS", 2000),
        number("SUBLAUNCH_BENCH_ROUNDS", 5),
    );
    let request = std::fs::read_to_string(&request_path).unwrap();

    // Rust: the sublaunch host library (one engine, InstancePre, a fresh Store per call).
    let planner = sublaunch::Planner::embedded(sublaunch::Options::default()).unwrap();
    let rust_plan = planner.plan_json(&request).expect("the benchmark request plans");
    for _ in 0..calls / 10 {
        planner.plan_json(&request).unwrap();
    }
    let rust_rounds = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..calls {
                std::hint::black_box(planner.plan_json(std::hint::black_box(&request)).unwrap());
            }
            start.elapsed().as_secs_f64() * 1e6 / f64::from(calls)
        })
        .collect();
    let mut rows = vec![(
        "Rust: sublaunch `Planner::plan_json` (fresh Store per call)".to_owned(),
        best_and_median(rust_rounds),
    )];

    // Node and Python time themselves in-process (examples/*/bench.*).
    let benches = [
        (
            "Node: jco, instantiated once",
            node(),
            "examples/node/bench.mjs",
            node_planner().to_owned(),
        ),
        (
            "Python: wasmtime-py, instantiated once",
            python().to_str().unwrap(),
            "examples/python/bench.py",
            planner_wasm().to_owned(),
        ),
    ];
    for (label, program, script, component) in benches {
        let mut command = Command::new(program);
        command
            .arg(workspace().join(script))
            .arg(component)
            .args([calls.to_string(), rounds.to_string()]);
        let output = run(command, request.as_bytes());
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{label}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let result: Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(
            canonical(result["plan"].as_str().unwrap()),
            canonical(&rust_plan),
            "{label} planned differently"
        );
        let times = result["rounds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_f64().unwrap())
            .collect();
        rows.push((label.to_owned(), best_and_median(times)));
    }

    let rust_best = rows[0].1.0;
    println!(
        "\nWarm `plan-json` call on {} ({} bytes): best of {rounds} rounds of {calls} calls\n",
        request_path
            .strip_prefix(workspace())
            .unwrap_or(&request_path)
            .display(),
        request.len()
    );
    println!("| runtime | µs per call (best) | median round | best vs Rust |\n|---|---:|---:|---:|");
    for (label, (best, median)) in &rows {
        println!("| {label} | {best:.1} | {median:.1} | {:.2}× |", best / rust_best);
    }
}
