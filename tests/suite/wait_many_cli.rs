//! Run ids by unique prefix across the run commands, and `wait` on several runs (`--all`,
//! `--any`, `--timeout`, `--json`), against the real shim. The runs block on FIFOs the test
//! opens, so every end happens when the test says, never after a guessed sleep.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;
use sublaunch_tests::cli::{ok, text};
use sublaunch_tests::launch_harness::{Scratch, state, status, wait_for, wait_terminal};

const LIMIT: Duration = Duration::from_secs(60);

fn launch(scratch: &Scratch, task: &str) -> String {
    ok(&scratch
        .cli(&["run", "--agent", "shell", "--task", task])
        .output()
        .unwrap())
    .trim()
    .to_owned()
}

fn launch_as(scratch: &Scratch, run_id: &str, task: &str) {
    let out = ok(&scratch
        .cli(&["run", "--agent", "shell", "--task", task, "--run-id", run_id])
        .output()
        .unwrap());
    assert_eq!(out.trim(), run_id);
}

fn cli(scratch: &Scratch, args: &[&str]) -> Output {
    scratch.cli(args).output().unwrap()
}

/// A FIFO in the work directory: a task that reads it blocks until the test opens it.
struct Gate {
    path: PathBuf,
}

impl Gate {
    fn new(scratch: &Scratch, name: &str) -> Self {
        let path = scratch.work().join(format!("gate-{name}"));
        assert!(Command::new("mkfifo").arg(&path).status().unwrap().success());
        Self { path }
    }

    /// Shell text that returns once the gate is opened.
    fn blocks(&self) -> String {
        format!("cat '{}' >/dev/null", self.path.display())
    }

    /// Lets the task through: opens the write end once the task reads, and closes it (EOF).
    fn open(&self) {
        let nonblock = i32::try_from(rustix::fs::OFlags::NONBLOCK.bits()).unwrap();
        let writer = wait_for("a task reading the gate", LIMIT, || {
            std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(nonblock)
                .open(&self.path)
                .ok()
        });
        drop(writer);
    }
}

/// A `sublaunch wait` in the background, its stdout read line by line as it comes.
struct Waiting {
    child: Child,
    lines: Receiver<String>,
}

impl Waiting {
    fn spawn(scratch: &Scratch, args: &[&str]) -> Self {
        let mut child = scratch
            .cli(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Self { child, lines }
    }

    /// The next line on stdout.
    fn next_line(&self) -> String {
        self.lines.recv_timeout(LIMIT).expect("a line from `sublaunch wait`")
    }

    /// Waits for the exit: the exit code, the lines not read yet and stderr.
    fn finish(mut self) -> (Option<i32>, Vec<String>, String) {
        let exit = wait_for("`sublaunch wait` to exit", LIMIT, || self.child.try_wait().unwrap());
        let mut rest = Vec::new();
        loop {
            match self.lines.recv_timeout(LIMIT) {
                Ok(line) => rest.push(line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!("stdout of `sublaunch wait` stays open"),
            }
        }
        let mut stderr = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        (exit.code(), rest, stderr)
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `list`, `list --all` and `status ID` in loops until stopped, beside a wait.
struct Observers {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<usize>>,
}

impl Observers {
    fn start(scratch: &Scratch, run_id: &str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let commands: [Vec<String>; 3] = [
            vec!["list".into()],
            vec!["list".into(), "--all".into()],
            vec!["status".into(), run_id.into()],
        ];
        let threads = commands
            .into_iter()
            .map(|args| {
                let (stop, env, work) = (stop.clone(), scratch.cli_env(), scratch.work());
                std::thread::spawn(move || {
                    let mut rounds = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let output = Command::new(sublaunch_tests::bin("sublaunch"))
                            .args(&args)
                            .current_dir(&work)
                            .env_clear()
                            .envs(env.clone())
                            .output()
                            .expect("an observer");
                        assert!(output.status.success(), "{args:?}: {}", text(&output.stderr));
                        rounds += 1;
                    }
                    rounds
                })
            })
            .collect();
        Self { stop, threads }
    }

    /// Stops the loops; how many commands they ran.
    fn finish(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.threads.into_iter().map(|t| t.join().expect("observer")).sum()
    }
}

#[test]
fn every_run_command_takes_a_unique_prefix_and_prints_the_full_id() {
    let scratch = Scratch::new("ids-prefix");
    for (id, task) in [
        ("alpha", "echo zero"),
        ("alpha-one", "echo one"),
        ("alpha-two", "echo two"),
    ] {
        launch_as(&scratch, id, task);
        wait_terminal(&scratch.run_dir(id), LIMIT);
    }

    // A unique prefix stands for the whole id, and the whole id is what is printed.
    let human = ok(&cli(&scratch, &["status", "alpha-o"]));
    assert!(human.contains("run      alpha-one\n"), "{human}");
    let json: Value = serde_json::from_str(&ok(&cli(&scratch, &["status", "alpha-o", "--json"]))).unwrap();
    assert_eq!(json["runId"], "alpha-one");
    assert_eq!(json["result"]["answer"], "one", "the result of the full id: {json:#}");
    assert_eq!(ok(&cli(&scratch, &["wait", "alpha-o"])), "alpha-one: complete\n");
    let json: Value = serde_json::from_str(&ok(&cli(&scratch, &["wait", "alpha-t", "--json"]))).unwrap();
    assert_eq!(json["runId"], "alpha-two");
    assert_eq!(json["result"]["answer"], "two", "{json:#}");
    assert_eq!(
        ok(&cli(&scratch, &["stop", "alpha-o"])),
        "alpha-one: complete (already ended)\n"
    );
    assert_eq!(ok(&cli(&scratch, &["logs", "alpha-t"])), "two\n");
    assert_eq!(ok(&cli(&scratch, &["result", "alpha-t"])), "two\n");

    // An exact id wins over the longer ids it begins.
    assert!(ok(&cli(&scratch, &["status", "alpha"])).contains("run      alpha\n"));
    assert_eq!(ok(&cli(&scratch, &["wait", "alpha"])), "alpha: complete\n");
    assert_eq!(ok(&cli(&scratch, &["result", "alpha"])), "zero\n");
    assert_eq!(ok(&cli(&scratch, &["logs", "alpha"])), "zero\n");

    // An ambiguous prefix names its candidates (a usage error, exit 2); an unknown one says so
    // (no such run, exit 3).
    for command in ["status", "wait", "stop", "logs", "result", "resume"] {
        let ambiguous = cli(&scratch, &[command, "alpha-"]);
        assert_eq!(ambiguous.status.code(), Some(2), "{command}");
        assert_eq!(
            text(&ambiguous.stderr),
            format!("sublaunch {command}: run id prefix 'alpha-' is ambiguous: alpha-one, alpha-two\n")
        );
        let three = text(&cli(&scratch, &[command, "al"]).stderr);
        assert!(
            three.contains("'al' is ambiguous: alpha, alpha-one, alpha-two"),
            "{three}"
        );
        let unknown = cli(&scratch, &[command, "beta"]);
        assert_eq!(unknown.status.code(), Some(3), "{command}");
        assert_eq!(
            text(&unknown.stderr),
            format!("sublaunch {command}: unknown run 'beta'\n")
        );
    }

    // A live run stopped by its prefix; a finished one resumed by its prefix.
    let gate = Gate::new(&scratch, "live");
    launch_as(&scratch, "gated-run", &gate.blocks());
    assert_eq!(ok(&cli(&scratch, &["stop", "gated"])), "gated-run: stopped\n");
    assert_eq!(state(&scratch.run_dir("gated-run")).as_deref(), Some("stopped"));
    let resumed: Value = serde_json::from_str(&ok(&cli(&scratch, &["resume", "alpha-o", "--wait", "--json"]))).unwrap();
    assert_eq!(resumed["state"], "complete", "{resumed:#}");
    assert_eq!(
        resumed["result"]["answer"], "one",
        "alpha-one's steps again: {resumed:#}"
    );
}

#[test]
fn wait_all_prints_each_run_once_as_it_ends_and_fails_when_one_failed() {
    let scratch = Scratch::new("wait-all");
    let (gate_a, gate_b) = (Gate::new(&scratch, "a"), Gate::new(&scratch, "b"));
    let a = launch(&scratch, &format!("{}; echo a", gate_a.blocks()));
    let b = launch(&scratch, &format!("{}; echo b; exit 3", gate_b.blocks()));
    let c = launch(&scratch, "echo c");
    wait_terminal(&scratch.run_dir(&c), LIMIT);
    // `a` twice and `c` also by a prefix: each is waited for once.
    let c_prefix = &c[..c.len() - 3];
    let waiting = Waiting::spawn(&scratch, &["wait", &a, &b, &c, &a, c_prefix]);
    assert_eq!(waiting.next_line(), format!("{c}: complete"), "the ended run first");
    gate_a.open();
    assert_eq!(waiting.next_line(), format!("{a}: complete"));
    gate_b.open();
    assert_eq!(waiting.next_line(), format!("{b}: failed"));
    let (code, rest, stderr) = waiting.finish();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(rest.is_empty(), "each run once: {rest:?}");
    let error = status(&scratch.run_dir(&b)).unwrap()["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(stderr.contains(&error), "the failed run's error on stderr: {stderr}");
    assert!(!stderr.contains('\u{1b}'), "no progress block: {stderr:?}");

    // All complete: exit 0.
    let all = cli(&scratch, &["wait", "--all", &a, &c]);
    assert_eq!(all.status.code(), Some(0));
    assert_eq!(ok(&all), format!("{a}: complete\n{c}: complete\n"));
}

#[test]
fn wait_any_returns_at_the_first_end_and_leaves_the_others_running() {
    let scratch = Scratch::new("wait-any");
    let gates = [
        Gate::new(&scratch, "a"),
        Gate::new(&scratch, "b"),
        Gate::new(&scratch, "c"),
    ];
    let [a, b, c] = gates
        .each_ref()
        .map(|gate| launch(&scratch, &format!("{}; echo done", gate.blocks())));
    let waiting = Waiting::spawn(&scratch, &["wait", "--any", &a, &b, &c]);
    gates[1].open();
    assert_eq!(waiting.next_line(), format!("{b}: complete"));
    let (code, rest, stderr) = waiting.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(rest.is_empty(), "only the first end: {rest:?}");
    for other in [&a, &c] {
        assert_eq!(state(&scratch.run_dir(other)).as_deref(), Some("running"), "{other}");
    }

    // The first to end failed: exit 1.
    let failing = launch(&scratch, "exit 5");
    let (code, lines, _) = Waiting::spawn(&scratch, &["wait", "--any", &a, &failing, &c]).finish();
    assert_eq!(code, Some(1));
    assert_eq!(lines, [format!("{failing}: failed")]);
    for (gate, id) in [(&gates[0], &a), (&gates[2], &c)] {
        assert_eq!(state(&scratch.run_dir(id)).as_deref(), Some("running"), "{id}");
        gate.open();
        assert_eq!(wait_terminal(&scratch.run_dir(id), LIMIT)["state"], "complete");
    }
}

#[test]
fn wait_timeout_exits_124_naming_the_runs_still_running() {
    let scratch = Scratch::new("wait-timeout");
    let (gate_a, gate_b) = (Gate::new(&scratch, "a"), Gate::new(&scratch, "b"));
    let a = launch(&scratch, &gate_a.blocks());
    let b = launch(&scratch, &gate_b.blocks());
    let quick = launch(&scratch, "true");
    wait_terminal(&scratch.run_dir(&quick), LIMIT);

    let (code, lines, stderr) = Waiting::spawn(&scratch, &["wait", &a, &quick, &b, "--timeout", "0.5"]).finish();
    assert_eq!(code, Some(124));
    assert_eq!(lines, [format!("{quick}: complete")]);
    assert_eq!(
        stderr,
        format!("sublaunch wait: run '{a}' is still active\nsublaunch wait: run '{b}' is still active\n")
    );

    let (code, lines, stderr) = Waiting::spawn(&scratch, &["wait", "--any", &a, &b, "--timeout", "0.3"]).finish();
    assert_eq!(code, Some(124));
    assert!(lines.is_empty(), "{lines:?}");
    assert!(
        stderr.contains(&format!("'{a}'")) && stderr.contains(&format!("'{b}'")),
        "{stderr}"
    );
    gate_a.open();
    gate_b.open();
}

#[test]
fn wait_json_prints_an_object_per_run_as_it_ends() {
    let scratch = Scratch::new("wait-json");
    let a = launch(&scratch, "echo alpha");
    let b = launch(&scratch, "echo beta; exit 2");
    let output = cli(&scratch, &["wait", "--all", "--json", &a, &b]);
    assert_eq!(output.status.code(), Some(1));
    let objects: Vec<Value> = text(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert_eq!(objects.len(), 2, "{objects:?}");
    let by_id = |id: &str| objects.iter().find(|o| o["runId"] == id).expect(id).clone();
    let (first, second) = (by_id(&a), by_id(&b));
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["error", "failureKind", "result", "runId", "state"]);
    assert_eq!(first["state"], "complete");
    assert_eq!(first["error"], Value::Null);
    assert_eq!(first["result"]["success"], true);
    assert_eq!(first["result"]["answer"], "alpha");
    assert_eq!(second["state"], "failed");
    assert!(second["error"].is_string(), "{second:#}");
    assert_eq!(second["result"]["success"], false);
    assert_eq!(second["result"]["steps"][0]["exitCode"], 2);
}

#[test]
fn wait_ends_when_a_waited_runs_shim_is_killed_beside_observers() {
    let scratch = Scratch::new("wait-killed");
    scratch.create_root();
    let (gate_a, gate_b) = (Gate::new(&scratch, "a"), Gate::new(&scratch, "b"));
    let a = launch(&scratch, &gate_a.blocks());
    let b = launch(&scratch, &gate_b.blocks());
    let observers = Observers::start(&scratch, &a);
    let waiting = Waiting::spawn(&scratch, &["wait", &a, &b]);
    let shim = status(&scratch.run_dir(&a)).unwrap()["pid"].as_u64().unwrap();
    assert!(
        Command::new("kill")
            .args(["-KILL", &shim.to_string()])
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(waiting.next_line(), format!("{a}: failed"));
    gate_b.open();
    assert_eq!(waiting.next_line(), format!("{b}: complete"));
    let (code, rest, stderr) = waiting.finish();
    assert!(observers.finish() > 0, "the observers ran beside the wait");
    assert_eq!(code, Some(19), "{stderr}");
    assert!(rest.is_empty(), "{rest:?}");
    assert!(
        stderr.contains(&format!("Async runner process {shim} ")),
        "the dead runner's error: {stderr}"
    );
    assert_eq!(state(&scratch.run_dir(&a)).as_deref(), Some("failed"));
}
