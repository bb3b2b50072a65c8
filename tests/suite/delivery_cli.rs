//! The end of a run delivered exactly once (D6, D7), the event stream (D4, D5) and a refused
//! launch's one word (D3), against
//! the real binaries: a hook that fails twice then succeeds is delivered once, with one key
//! for every attempt and a backoff between automatic attempts; a machine that "reboots"
//! (every process of the run killed, the state root kept) while the hook runs delivers the
//! end after, at the next command; `sublaunch events` shows every lifecycle event of a run in
//! order; and a follower killed and restarted at random while 1 000 runs end sees every end
//! once past its cursor.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use sublaunch_tests::cli::{executable, ok, text};
use sublaunch_tests::launch_harness::{Scratch, read_json, status, wait_for, wait_terminal};

const LIMIT: Duration = Duration::from_secs(60);

/// The events of the root, as `sublaunch events --json` prints them.
fn events(scratch: &Scratch) -> Vec<Value> {
    ok(&scratch.cli(&["events", "--json"]).output().unwrap())
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

fn of_run<'a>(events: &'a [Value], id: &str, kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["runId"] == id && e["type"] == kind)
        .collect()
}

/// A hook that appends `<delivery id> <attempt>` to `calls.log` and exits with the code the
/// next line of `codes` gives (0 once they run out).
fn counting_hook(scratch: &Scratch, codes: &[i32]) -> String {
    let codes_file = scratch.path().join("codes");
    let lines: Vec<String> = codes.iter().map(ToString::to_string).collect();
    sublaunch_tests::cli::write(&codes_file, &format!("{}\n", lines.join("\n")));
    let script = executable(
        &scratch.path().join("hook.sh"),
        &format!(
            "#!/bin/sh\ncat >/dev/null\necho \"$SUBLAUNCH_DELIVERY_ID $SUBLAUNCH_DELIVERY_ATTEMPT\" >> {log}\ncode=$(head -n 1 {codes})\nsed -i 1d {codes}\nexit ${{code:-0}}\n",
            log = calls_log(scratch).display(),
            codes = codes_file.display()
        ),
    );
    format!("sh {}", script.display())
}

fn calls_log(scratch: &Scratch) -> std::path::PathBuf {
    scratch.path().join("calls.log")
}

fn calls(scratch: &Scratch) -> Vec<String> {
    std::fs::read_to_string(calls_log(scratch))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn outbox(scratch: &Scratch) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(scratch.root().join("outbox"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json"))
        .collect();
    names.sort();
    names
}

fn code(output: &Output) -> Option<i32> {
    output.status.code()
}

#[test]
fn d7_a_hook_that_fails_twice_then_succeeds_is_delivered_once() {
    let scratch = Scratch::new("deliver-retry");
    let hook = counting_hook(&scratch, &[1, 1]);
    let launched = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "echo done",
            "--wait",
            "--on-end",
            &hook,
        ])
        .output()
        .unwrap();
    assert_eq!(ok(&launched).trim(), "done");
    let id = status_of_only_run(&scratch);
    let key = format!("{id}.1");
    // The runner's attempt failed: the end waits in the outbox, backing off.
    assert_eq!(calls(&scratch), vec![format!("{key} 1")]);
    assert_eq!(outbox(&scratch), vec![format!("{key}.json")]);
    let entry = read_json(&scratch.root().join("outbox").join(format!("{key}.json"))).unwrap();
    assert_eq!(entry["attempts"], 1);
    assert!(
        entry["nextAttemptAt"].as_u64().unwrap() > entry_time(&scratch, &id),
        "{entry}"
    );
    // A look before the backoff passed does not try it again.
    ok(&scratch.cli(&["list"]).output().unwrap());
    ok(&scratch.cli(&["status", &id]).output().unwrap());
    assert_eq!(calls(&scratch).len(), 1, "tried again before its backoff");
    // `deliver` tries it now: the second attempt fails too (exit 1), the third succeeds.
    let second = scratch.cli(&["deliver"]).output().unwrap();
    assert_eq!(code(&second), Some(1), "{}", text(&second.stdout));
    assert!(
        text(&second.stdout).contains(&format!("{key}: attempt 2 failed: the hook exited with code 1")),
        "{}",
        text(&second.stdout)
    );
    let third = scratch.cli(&["deliver", &id]).output().unwrap();
    assert!(
        ok(&third).contains(&format!("{key}: delivered to the hook (attempt 3)")),
        "{}",
        text(&third.stdout)
    );
    // Delivered: never again, whoever looks.
    assert!(outbox(&scratch).is_empty());
    assert_eq!(
        ok(&scratch.cli(&["deliver"]).output().unwrap()).trim(),
        "nothing to deliver"
    );
    ok(&scratch.cli(&["list", "--all"]).output().unwrap());
    ok(&scratch.cli(&["status", &id]).output().unwrap());
    assert_eq!(
        calls(&scratch),
        vec![format!("{key} 1"), format!("{key} 2"), format!("{key} 3")],
        "one key for every attempt, and no attempt after the one that succeeded"
    );
    let outcome = read_json(&scratch.run_dir(&id).join("hook-end.json")).unwrap();
    assert_eq!(
        (outcome["deliveryId"].as_str(), outcome["attempt"].as_u64()),
        (Some(key.as_str()), Some(3))
    );
    assert_eq!(outcome["firedBy"], "command");
    // The stream tells the same story.
    let all = events(&scratch);
    let failed: Vec<u64> = of_run(&all, &id, "delivery-failed")
        .iter()
        .map(|e| e["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(failed, vec![1, 2]);
    let delivered = of_run(&all, &id, "delivered");
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0]["deliveryId"], key.as_str());
    assert_eq!(delivered[0]["attempt"], 3);
    // The run itself is untouched by its hook.
    assert_eq!(status(&scratch.run_dir(&id)).unwrap()["state"], "complete");
}

/// The id of the one run under the root.
fn status_of_only_run(scratch: &Scratch) -> String {
    let names: Vec<String> = std::fs::read_dir(scratch.runs())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    names[0].clone()
}

fn entry_time(scratch: &Scratch, id: &str) -> u64 {
    status(&scratch.run_dir(id)).unwrap()["endedAt"].as_u64().unwrap()
}

#[test]
fn d7_an_end_whose_machine_rebooted_before_delivery_is_delivered_at_the_next_command() {
    let scratch = Scratch::new("deliver-reboot");
    // The first attempt hangs (the machine goes down while it runs); later ones succeed.
    let started = scratch.path().join("hook-started");
    let script = executable(
        &scratch.path().join("hook.sh"),
        &format!(
            "#!/bin/sh\ncat >/dev/null\necho \"$SUBLAUNCH_DELIVERY_ID $SUBLAUNCH_DELIVERY_ATTEMPT\" >> {log}\nif [ ! -e {started} ]; then : > {started}; exec tail -f /dev/null; fi\n",
            log = calls_log(&scratch).display(),
            started = started.display()
        ),
    );
    let boot = scratch.path().join("boot-id");
    sublaunch_tests::cli::write(&boot, "first-boot");
    let cli = |args: &[&str]| {
        let mut command = scratch.cli(args);
        command.env("SUBLAUNCH_TEST_BOOT_ID_FILE", &boot);
        command
    };
    let hook = format!("sh {}", script.display());
    let id = ok(
        &cli(&["run", "--agent", "shell", "--task", "echo done", "--on-end", &hook])
            .output()
            .unwrap(),
    )
    .trim()
    .to_owned();
    let run = scratch.run_dir(&id);
    wait_for("the hook to start", LIMIT, || started.exists().then_some(()));
    assert_eq!(status(&run).unwrap()["state"], "complete");
    let key = format!("{id}.1");
    assert_eq!(
        outbox(&scratch),
        vec![format!("{key}.json")],
        "the end is in the outbox first"
    );
    // The machine goes down: the runner and its hook die at once; the state root stays.
    let shim = status(&run).unwrap()["pid"].as_u64().unwrap() as u32;
    // (The hook dies with its runner: it was started to.)
    std::process::Command::new("kill")
        .args(["-KILL", &shim.to_string()])
        .status()
        .unwrap();
    wait_for("the runner to be gone", LIMIT, || {
        (!sublaunch_tests::launch_harness::pid_alive(shim)).then_some(())
    });
    sublaunch_tests::cli::write(&boot, "second-boot");
    // The next command delivers it (in the background: its deliverer outlives the command).
    ok(&cli(&["list"]).output().unwrap());
    let outcome = wait_for("the end to be delivered", LIMIT, || {
        read_json(&run.join("hook-end.json")).filter(|o| o["exitCode"] == 0)
    });
    assert_eq!(outcome["deliveryId"], key.as_str());
    assert_eq!(
        outcome["attempt"], 1,
        "the cut attempt recorded nothing: this is its first whole one"
    );
    assert_eq!(outcome["firedBy"], "reconciler");
    wait_for("the outbox to empty", LIMIT, || {
        outbox(&scratch).is_empty().then_some(())
    });
    assert_eq!(calls(&scratch), vec![format!("{key} 1"), format!("{key} 1")]);
    // Never again.
    assert_eq!(ok(&cli(&["deliver"]).output().unwrap()).trim(), "nothing to deliver");
    ok(&cli(&["list", "--all"]).output().unwrap());
    assert_eq!(calls(&scratch).len(), 2);
    let all = events(&scratch);
    assert_eq!(of_run(&all, &id, "ended").len(), 1);
    assert_eq!(of_run(&all, &id, "delivered").len(), 1);
}

#[test]
fn d4_events_show_a_runs_life_in_order_and_resume_after_a_cursor() {
    let scratch = Scratch::new("events-order");
    let id = scratch.finished_shell_run("echo hi");
    let all = events(&scratch);
    let kinds: Vec<&str> = all
        .iter()
        .filter(|e| e["runId"] == id.as_str())
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        vec!["launched", "started", "step-started", "step-ended", "ended"]
    );
    let cursors: Vec<u64> = all.iter().map(|e| e["cursor"].as_u64().unwrap()).collect();
    assert_eq!(
        cursors,
        (1..=cursors.len() as u64).collect::<Vec<_>>(),
        "dense and ordered"
    );
    let ended = of_run(&all, &id, "ended")[0];
    assert_eq!(ended["state"], "complete");
    assert_eq!(ended["deliveryId"], format!("{id}.1"));
    // A failed run's end says why, in one word.
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", "exit 3", "--wait"])
        .output()
        .unwrap();
    assert_eq!(code(&output), Some(1), "{}", text(&output.stderr));
    let failed = sublaunch_tests::cli::waited_run_id(&output);
    let since = cursors.last().unwrap().to_string();
    let newer: Vec<Value> = ok(&scratch.cli(&["events", "--json", "--since", &since]).output().unwrap())
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(newer.iter().all(|e| e["runId"] == failed.as_str()), "{newer:?}");
    let ended = newer.iter().find(|e| e["type"] == "ended").unwrap();
    assert_eq!(ended["failureKind"], "agent-error");
    // The text form names each event on one line.
    let lines = ok(&scratch.cli(&["events", "--since", &since]).output().unwrap());
    assert!(
        lines
            .lines()
            .any(|l| l.contains(&failed) && l.contains("ended") && l.contains("failed (agent-error)")),
        "{lines}"
    );
}

/// A follower of `sublaunch events --follow --json --since CURSOR`: the lines it printed are
/// read as they come.
struct Follower {
    child: Child,
    reader: std::thread::JoinHandle<()>,
}

fn follow(scratch: &Scratch, since: u64, seen: &Arc<std::sync::Mutex<Vec<Value>>>) -> Follower {
    let mut child = scratch
        .cli(&["events", "--follow", "--json", "--since", &since.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let seen = seen.clone();
    let reader = std::thread::spawn(move || {
        // Only whole lines count: a line cut by the kill was not handled.
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if let Ok(event) = serde_json::from_str::<Value>(&line) {
                seen.lock().unwrap().push(event);
            }
        }
    });
    Follower { child, reader }
}

#[test]
fn d5_a_follower_killed_and_restarted_at_random_sees_each_of_1000_ends_once_past_its_cursor() {
    const RUNS: usize = 1000;
    const LAUNCHERS: usize = 4;
    let scratch = Scratch::new("events-follow");
    let seen = Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let done = Arc::new(AtomicBool::new(false));
    // Launches never wait: runs end while others start, and while the follower restarts.
    let launchers: Vec<_> = (0..LAUNCHERS)
        .map(|_| {
            let command = scratch.cli(&["run", "--agent", "shell", "--task", "true"]);
            let program = command.get_program().to_owned();
            let args: Vec<_> = command.get_args().map(ToOwned::to_owned).collect();
            let envs: Vec<_> = command
                .get_envs()
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
                .collect();
            let cwd = command.get_current_dir().map(Path::to_owned);
            std::thread::spawn(move || {
                for _ in 0..RUNS / LAUNCHERS {
                    let mut launch = std::process::Command::new(&program);
                    launch.args(&args).env_clear().envs(envs.clone());
                    if let Some(cwd) = &cwd {
                        launch.current_dir(cwd);
                    }
                    let output = launch.output().unwrap();
                    assert!(output.status.success(), "{}", text(&output.stderr));
                }
            })
        })
        .collect();
    let mut rng = seed();
    eprintln!("follower kill seed {}", rng.0);
    let mut cursor = 0u64;
    let mut restarts = 0;
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut handled: Vec<Value> = Vec::new();
    while !done.load(Ordering::Relaxed) {
        let mut follower = follow(&scratch, cursor, &seen);
        // Killed at a random moment: 5 ms to 400 ms after it started.
        let wait = Duration::from_millis(5 + rng.below(395));
        std::thread::sleep(wait);
        let _ = follower.child.kill();
        let _ = follower.child.wait();
        let _ = follower.reader.join();
        restarts += 1;
        // The consumer resumes after the last event it handled.
        let batch: Vec<Value> = std::mem::take(&mut *seen.lock().unwrap());
        for event in batch {
            let at = event["cursor"].as_u64().unwrap();
            assert!(at > cursor, "cursor {at} seen again after {cursor}");
            cursor = at;
            handled.push(event);
        }
        let ends = handled.iter().filter(|e| e["type"] == "ended").count();
        let launched_all = launchers.iter().all(std::thread::JoinHandle::is_finished);
        if launched_all && ends >= RUNS {
            done.store(true, Ordering::Relaxed);
        }
        assert!(Instant::now() < deadline, "{ends} ends seen after {restarts} restarts");
    }
    for launcher in launchers {
        launcher.join().unwrap();
    }
    let mut ends: BTreeMap<String, usize> = BTreeMap::new();
    for event in handled.iter().filter(|e| e["type"] == "ended") {
        *ends.entry(event["runId"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    assert_eq!(ends.len(), RUNS, "every run's end was seen");
    assert!(ends.values().all(|n| *n == 1), "an end seen twice: {ends:?}");
    let cursors: BTreeSet<u64> = handled.iter().map(|e| e["cursor"].as_u64().unwrap()).collect();
    assert_eq!(cursors.len(), handled.len(), "no event twice");
    assert_eq!(*cursors.iter().next().unwrap(), 1);
    assert_eq!(cursors.len() as u64, *cursors.iter().last().unwrap(), "no event missed");
    assert!(restarts > 3, "the follower was restarted {restarts} times");
    eprintln!("{restarts} restarts");
    // Every run ended complete, as its end said.
    for id in ends.keys().take(20) {
        assert_eq!(wait_terminal(&scratch.run_dir(id), LIMIT)["state"], "complete");
    }
}

/// A small deterministic generator, seeded from the clock (printed, so a failure replays).
struct Rng(u64);

fn seed() -> Rng {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    Rng(nanos | 1)
}

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

#[test]
fn d3_a_refused_launch_says_refused_in_its_json() {
    let scratch = Scratch::new("refused-json");
    for args in [
        vec!["run", "--agent", "nope", "--task", "x", "--json"],
        vec![
            "run",
            "--agent",
            "shell",
            "--task",
            "x",
            "--cwd",
            "/no/such/dir",
            "--json",
        ],
    ] {
        let output = scratch.cli(&args).output().unwrap();
        assert_eq!(code(&output), Some(2), "{}", text(&output.stderr));
        let refusal: Value =
            serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&output.stdout)));
        assert_eq!(refusal["failureKind"], "refused", "{refusal}");
        assert!(!refusal["error"].to_string().is_empty());
        assert!(!text(&output.stderr).is_empty(), "people still read it on stderr");
    }
    // Nothing ran, so the stream has nothing.
    assert!(events(&scratch).is_empty());
}
