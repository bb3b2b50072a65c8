//! The capacity queue through the CLI and real runners: `SUBLAUNCH_MAX_ACTIVE` caps the runs
//! active at once under a state root; runs over the cap are recorded `queued`, start in
//! arrival order when a slot frees — after the launching processes have exited — and show
//! their place in `list`; `stop` takes a run out of the queue; a killed runner's slot is
//! reclaimed (X3); a launch that fails before commit leaves no ticket (H18). Every run blocks
//! on a FIFO the test opens, so each end happens when the test says.

use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sublaunch_tests::cli::{ok, text, write};
use sublaunch_tests::launch_harness::{Scratch, state, status, wait_for, wait_terminal};

const LIMIT: Duration = Duration::from_secs(60);

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

    /// Lets the task through once it reads: opens the write end and closes it (EOF).
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

/// The shell task of run `name`: notes its start in `agents.log`, waits at its gate, notes
/// its end.
fn gated_task(scratch: &Scratch, name: &str) -> String {
    let log = scratch.work().join("agents.log");
    let gate = scratch.work().join(format!("gate-{name}"));
    format!(
        "echo start {name} >> '{log}'; cat '{gate}' >/dev/null; echo end {name} >> '{log}'",
        log = log.display(),
        gate = gate.display()
    )
}

fn capped(scratch: &Scratch, cap: &str, args: &[&str]) -> Command {
    let mut command = scratch.cli(args);
    command.env("SUBLAUNCH_MAX_ACTIVE", cap);
    command
}

fn launch(scratch: &Scratch, cap: &str, run_id: &str, task: &str) {
    let out = ok(&capped(
        scratch,
        cap,
        &["run", "--agent", "shell", "--task", task, "--run-id", run_id],
    )
    .output()
    .unwrap());
    assert_eq!(out.trim(), run_id);
}

fn list(scratch: &Scratch) -> Vec<Value> {
    let out = ok(&scratch.cli(&["list", "--json"]).output().unwrap());
    serde_json::from_str::<Value>(&out)
        .unwrap()
        .as_array()
        .cloned()
        .unwrap()
}

/// `runId → (state, queuePosition)` of the active runs `list --json` shows.
fn listed(scratch: &Scratch) -> HashMap<String, (String, Option<u64>)> {
    list(scratch)
        .into_iter()
        .map(|row| {
            let id = row["runId"].as_str().unwrap().to_owned();
            let state = row["state"].as_str().unwrap_or_default().to_owned();
            (id, (state, row["queuePosition"].as_u64()))
        })
        .collect()
}

/// The run ids of the capacity tickets, in arrival order.
fn tickets(scratch: &Scratch) -> Vec<String> {
    let dir = scratch.runs().join(".capacity");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.len() > 17 && n.as_bytes()[..16].iter().all(u8::is_ascii_digit))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names.into_iter().map(|n| n[17..].to_owned()).collect()
}

fn agent_log(scratch: &Scratch) -> Vec<(String, String)> {
    std::fs::read_to_string(scratch.work().join("agents.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (what, who) = l.split_once(' ')?;
            Some((what.to_owned(), who.to_owned()))
        })
        .collect()
}

fn started(scratch: &Scratch) -> Vec<String> {
    agent_log(scratch)
        .into_iter()
        .filter(|(what, _)| what == "start")
        .map(|(_, who)| who)
        .collect()
}

/// The running runs by their status files, read twice: a sample counts only when both reads
/// agree, so a run that ended between two file reads while the next one started is not
/// mistaken for both running at once.
fn running_by_status(runs: &Path, ids: &[String]) -> Option<BTreeSet<String>> {
    let read = || -> BTreeSet<String> {
        ids.iter()
            .filter(|id| state(&runs.join(id)).as_deref() == Some("running"))
            .cloned()
            .collect()
    };
    let first = read();
    (first == read()).then_some(first)
}

fn run_id_of(name: &str) -> String {
    format!("shell-cap{name}")
}

#[test]
fn six_launchers_that_exit_at_once_share_two_slots_in_arrival_order() {
    let scratch = Scratch::new("capacity-six");
    let names: Vec<String> = (1..=6).map(|n| n.to_string()).collect();
    let gates: HashMap<String, Gate> = names
        .iter()
        .map(|n| (run_id_of(n), Gate::new(&scratch, &run_id_of(n))))
        .collect();
    // Six `sublaunch run` processes at once; each exits as soon as its run is committed.
    let launchers: Vec<(String, std::process::Child)> = names
        .iter()
        .map(|n| {
            let id = run_id_of(n);
            let task = gated_task(&scratch, &id);
            let child = capped(
                &scratch,
                "2",
                &["run", "--agent", "shell", "--task", &task, "--run-id", &id],
            )
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
            (id, child)
        })
        .collect();
    for (id, child) in launchers {
        let out = child.wait_with_output().unwrap();
        assert_eq!(ok(&out).trim(), id, "the launcher prints the id and exits");
    }
    let ids: Vec<String> = names.iter().map(|n| run_id_of(n)).collect();

    // Observers: `list --json` and the status files, sampled until the last run ends.
    let done = Arc::new(AtomicBool::new(false));
    let peaks = Arc::new(Mutex::new((0usize, 0usize, 0usize)));
    let observer = {
        let (done, peaks, ids) = (done.clone(), peaks.clone(), ids.clone());
        let runs = scratch.runs();
        let cli = scratch.cli(&["list", "--json"]);
        let (program, args, envs, cwd) = (
            cli.get_program().to_owned(),
            cli.get_args().map(ToOwned::to_owned).collect::<Vec<_>>(),
            cli.get_envs()
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
                .collect::<Vec<_>>(),
            cli.get_current_dir().unwrap().to_owned(),
        );
        std::thread::spawn(move || {
            let running_listed = || -> BTreeSet<String> {
                let out = Command::new(&program)
                    .args(&args)
                    .env_clear()
                    .envs(envs.iter().cloned())
                    .current_dir(&cwd)
                    .output()
                    .unwrap();
                let rows: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
                rows.as_array()
                    .into_iter()
                    .flatten()
                    .filter(|r| r["state"] == "running")
                    .filter_map(|r| r["runId"].as_str().map(str::to_owned))
                    .collect()
            };
            while !done.load(Ordering::Relaxed) {
                let listed = running_listed();
                let again = running_listed();
                let by_status = running_by_status(&runs, &ids);
                let mut peaks = peaks.lock().unwrap();
                if listed == again {
                    peaks.0 = peaks.0.max(listed.len());
                }
                if let Some(set) = by_status {
                    peaks.1 = peaks.1.max(set.len());
                }
                peaks.2 += 1;
            }
        })
    };

    // Arrival order is the tickets' order; the first two arrivals run, the others wait with
    // their places.
    let order = wait_for("six tickets", LIMIT, || {
        let order = tickets(&scratch);
        (order.len() == 6).then_some(order)
    });
    let first_two = wait_for("two agents started", LIMIT, || {
        let s = started(&scratch);
        (s.len() >= 2).then_some(s)
    });
    assert_eq!(
        first_two.iter().cloned().collect::<BTreeSet<_>>(),
        order[..2].iter().cloned().collect::<BTreeSet<_>>(),
        "the first two arrivals hold the slots"
    );
    let places = wait_for("the queued runs listed with their places", LIMIT, || {
        let rows = listed(&scratch);
        let places: Vec<Option<u64>> = order[2..].iter().map(|id| rows.get(id)?.1).collect();
        places.iter().all(Option::is_some).then_some(places)
    });
    assert_eq!(places, vec![Some(1), Some(2), Some(3), Some(4)]);
    for id in &order[2..] {
        assert_eq!(state(&scratch.run_dir(id)).as_deref(), Some("queued"), "{id}");
        assert!(
            status(&scratch.run_dir(id)).unwrap()["pid"].as_u64().is_some(),
            "a queued run names its runner"
        );
    }
    let human = text(&scratch.cli(&["list"]).output().unwrap().stdout);
    assert!(
        human.contains("queued (1st)") && human.contains("queued (4th)"),
        "{human}"
    );

    // The observer sees the cap reached while the first two hold their slots, so that its
    // "never more than two" below is not the verdict of samples that all fell between runs.
    wait_for("list to show the two running runs", LIMIT, || {
        (peaks.lock().unwrap().0 == 2).then_some(())
    });

    // Releasing the oldest running run lets exactly the next arrival start, each time.
    for (i, id) in order.iter().enumerate() {
        gates[id].open();
        let expected = (i + 3).min(6);
        let s = wait_for("the next arrival started", LIMIT, || {
            let s = started(&scratch);
            (s.len() >= expected).then_some(s)
        });
        if let Some(next) = order.get(i + 2) {
            assert_eq!(&s[i + 2], next, "starts follow arrival order: {s:?} vs {order:?}");
        }
    }
    for id in &ids {
        assert_eq!(wait_terminal(&scratch.run_dir(id), LIMIT)["state"], "complete", "{id}");
    }
    done.store(true, Ordering::Relaxed);
    observer.join().unwrap();
    let (listed_peak, status_peak, samples) = *peaks.lock().unwrap();
    assert!(samples > 3, "the observer sampled while the runs ran ({samples})");
    assert_eq!(listed_peak, 2, "list never showed more than two running");
    assert!(
        status_peak <= 2,
        "the status files never said more than two running ({status_peak})"
    );
    // The agents themselves: never more than two between their start and end lines.
    let mut live = 0usize;
    let mut most = 0usize;
    for (what, _) in agent_log(&scratch) {
        live = if what == "start" { live + 1 } else { live - 1 };
        most = most.max(live);
    }
    assert_eq!(most, 2, "{:?}", agent_log(&scratch));
    wait_for("every run gave its ticket back", LIMIT, || {
        tickets(&scratch).is_empty().then_some(())
    });
}

#[test]
fn a_killed_runner_frees_its_slot_for_the_next_queued_run() {
    let scratch = Scratch::new("capacity-kill");
    let (a, b) = (run_id_of("a"), run_id_of("b"));
    let _gate = Gate::new(&scratch, &a);
    launch(&scratch, "1", &a, &gated_task(&scratch, &a));
    let ran_b = scratch.work().join("ran-b");
    launch(&scratch, "1", &b, &format!("touch '{}'", ran_b.display()));
    wait_for("a's agent started", LIMIT, || {
        (!started(&scratch).is_empty()).then_some(())
    });
    assert_eq!(state(&scratch.run_dir(&b)).as_deref(), Some("queued"));
    assert_eq!(listed(&scratch)[&b], ("queued".to_owned(), Some(1)));
    assert!(!ran_b.exists());
    let shim = status(&scratch.run_dir(&a)).unwrap()["pid"].as_u64().unwrap();
    assert!(
        Command::new("kill")
            .args(["-9", &shim.to_string()])
            .status()
            .unwrap()
            .success()
    );
    // Nobody observes a's runner: b's runner reclaims the dead ticket on its own.
    assert_eq!(wait_terminal(&scratch.run_dir(&b), LIMIT)["state"], "complete");
    assert!(ran_b.exists(), "b's agent ran");
    let rows = list(&scratch);
    assert!(rows.is_empty(), "a is recorded failed, nothing stays active: {rows:?}");
    assert_eq!(state(&scratch.run_dir(&a)).as_deref(), Some("failed"));
    wait_for("b's ticket given back, a's reclaimed", LIMIT, || {
        tickets(&scratch).is_empty().then_some(())
    });
}

#[test]
fn stop_takes_a_queued_run_out_of_the_queue() {
    let scratch = Scratch::new("capacity-stop");
    let (a, b, c) = (run_id_of("a"), run_id_of("b"), run_id_of("c"));
    let gate = Gate::new(&scratch, &a);
    launch(&scratch, "1", &a, &gated_task(&scratch, &a));
    let ran = |name: &str| scratch.work().join(format!("ran-{name}"));
    launch(&scratch, "1", &b, &format!("touch '{}'", ran("b").display()));
    launch(&scratch, "1", &c, &format!("touch '{}'", ran("c").display()));
    let rows = listed(&scratch);
    assert_eq!(rows[&b], ("queued".to_owned(), Some(1)));
    assert_eq!(rows[&c], ("queued".to_owned(), Some(2)));
    let status_text = ok(&scratch.cli(&["status", &c]).output().unwrap());
    assert!(status_text.contains("2nd in line"), "{status_text}");

    let out = ok(&scratch.cli(&["stop", &b]).output().unwrap());
    assert_eq!(out.trim(), format!("{b}: stopped"));
    let stopped = wait_terminal(&scratch.run_dir(&b), LIMIT);
    assert_eq!(stopped["state"], "stopped", "{stopped}");
    assert!(!ran("b").exists(), "the stopped run's agent never ran");
    assert!(!scratch.run_dir(&b).join("output-0.log").exists(), "no agent output");
    let rows = listed(&scratch);
    assert_eq!(rows[&c], ("queued".to_owned(), Some(1)), "c moved up");
    assert!(!rows.contains_key(&b));
    assert_eq!(tickets(&scratch), [a.clone(), c.clone()]);

    gate.open();
    assert_eq!(wait_terminal(&scratch.run_dir(&a), LIMIT)["state"], "complete");
    assert_eq!(wait_terminal(&scratch.run_dir(&c), LIMIT)["state"], "complete");
    assert!(ran("c").exists());
    let wait = scratch.cli(&["wait", &c]).output().unwrap();
    assert!(wait.status.success(), "{}", text(&wait.stderr));
}

#[test]
fn wait_waits_through_the_queue() {
    let scratch = Scratch::new("capacity-wait");
    let a = run_id_of("a");
    let gate = Gate::new(&scratch, &a);
    launch(&scratch, "1", &a, &gated_task(&scratch, &a));
    let waiting = capped(
        &scratch,
        "1",
        &["run", "--wait", "--agent", "shell", "--task", "echo after-the-queue"],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    wait_for("the second run queued", LIMIT, || {
        listed(&scratch)
            .values()
            .any(|(s, p)| s == "queued" && *p == Some(1))
            .then_some(())
    });
    gate.open();
    let out: Output = waiting.wait_with_output().unwrap();
    assert_eq!(ok(&out).trim(), "after-the-queue");
    assert_eq!(wait_terminal(&scratch.run_dir(&a), LIMIT)["state"], "complete");
}

#[test]
fn a_launch_that_fails_before_commit_leaves_no_ticket() {
    let scratch = Scratch::new("capacity-fault");
    let a = run_id_of("a");
    let gate = Gate::new(&scratch, &a);
    launch(&scratch, "1", &a, &gated_task(&scratch, &a));
    // Queued behind a, and with a slot of its own (no cap): both kinds give their ticket back.
    for cap in ["1", ""] {
        let out = capped(&scratch, cap, &["run", "--agent", "shell", "--task", "echo never"])
            .env("SUBLAUNCH_HOST_FAULT", "proceed:EACCES")
            .output()
            .unwrap();
        assert!(!out.status.success(), "the launch fails");
        assert!(
            text(&out.stderr).contains("Failed to authorize async runner startup"),
            "{}",
            text(&out.stderr)
        );
        assert_eq!(
            tickets(&scratch),
            std::slice::from_ref(&a),
            "cap {cap:?}: only the running run holds a ticket"
        );
    }
    gate.open();
    assert_eq!(wait_terminal(&scratch.run_dir(&a), LIMIT)["state"], "complete");
    wait_for("a's ticket given back", LIMIT, || {
        tickets(&scratch).is_empty().then_some(())
    });
}

#[test]
fn bad_caps_are_refused_naming_where_they_come_from() {
    let scratch = Scratch::trusting("capacity-bad");
    for value in ["0", "two", "-1", "1.5"] {
        let out = capped(&scratch, value, &["run", "--agent", "shell", "--task", "echo hi"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{value}");
        let err = text(&out.stderr);
        assert!(
            err.contains("SUBLAUNCH_MAX_ACTIVE must be a whole number above 0") && err.contains(value),
            "{err}"
        );
    }
    let settings = write(
        &scratch.work().join(".sublaunch/settings.json"),
        r#"{"subagents": {"maxActive": 0}}"#,
    );
    let out = scratch
        .cli(&["run", "--agent", "shell", "--task", "echo hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains(&settings.display().to_string())
            && err.contains("subagents.maxActive must be a whole number above 0"),
        "{err}"
    );
    // The variable wins over the settings file.
    let out = capped(
        &scratch,
        "3",
        &["run", "--wait", "--agent", "shell", "--task", "echo hi"],
    )
    .output()
    .unwrap();
    assert_eq!(ok(&out).trim(), "hi");
    // A valid settings cap is used: a run over it waits.
    write(&settings, r#"{"subagents": {"maxActive": 1}}"#);
    let a = run_id_of("a");
    let gate = Gate::new(&scratch, &a);
    let out = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            &gated_task(&scratch, &a),
            "--run-id",
            &a,
        ])
        .output()
        .unwrap();
    assert_eq!(ok(&out).trim(), a);
    let b = run_id_of("b");
    let out = scratch
        .cli(&["run", "--agent", "shell", "--task", "echo b", "--run-id", &b])
        .output()
        .unwrap();
    assert_eq!(ok(&out).trim(), b);
    assert_eq!(listed(&scratch)[&b], ("queued".to_owned(), Some(1)));
    gate.open();
    assert_eq!(wait_terminal(&scratch.run_dir(&b), LIMIT)["state"], "complete");
}

#[test]
fn a_ticket_written_for_no_run_holds_no_slot() {
    let scratch = Scratch::new("capacity-forged");
    // What an agent (running as the user) could leave in the queue: a ticket for a run that
    // does not exist, naming a pid that is always alive and claiming a slot.
    let queue = scratch.runs().join(".capacity");
    std::fs::create_dir_all(&queue).unwrap();
    write(
        &queue.join("0000000000000001-ghost"),
        r#"{"version":1,"runId":"ghost","seq":1,"pid":1,"claimed":true}"#,
    );
    let run = run_id_of("after-ghost");
    let ran = scratch.work().join("ran");
    launch(&scratch, "1", &run, &format!("touch '{}'", ran.display()));
    assert_eq!(wait_terminal(&scratch.run_dir(&run), LIMIT)["state"], "complete");
    assert!(ran.exists(), "the run started despite the forged ticket");
    assert!(
        !queue.join("0000000000000001-ghost").exists(),
        "the forged ticket was reclaimed"
    );
}
