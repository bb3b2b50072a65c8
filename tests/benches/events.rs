//! What the event stream and the outbox add to a run (issue 40), and how that grows with the
//! stream's history:
//!
//! 1. **Syncs per `run --wait`**: `sublaunch run --agent shell --task true --wait` under
//!    `strace -f -y`, its `fsync`/`fdatasync` calls counted by the file they sync — those on
//!    `events/` and `outbox/` are what this issue adds (goal: at most 1).
//! 2. **The stream's own cost**: one unsynced append (`launched`, `step-started`, …) and one end
//!    recorded (`record_end`: the intent, the synced append, the run's marker) on a root whose
//!    log holds 0, 10 000 and 100 000 events, against the floor measured in the same run: one
//!    line appended to a file and `fdatasync`ed, the least a durable end can cost.
//! 3. **End to end**: `run --wait` on a root whose log holds 0 and 100 000 events.
//!
//! Run: `scripts/bench-events.sh` (builds the release binaries, then
//! `cargo bench -p sublaunch-tests --bench events`). `SUBLAUNCH_BENCH_ROUNDS` sets the rounds
//! (default 101).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::records::status::{RunState, Status};
use sublaunch_protocol::records::stream::{self, Consumers, Stream, StreamEvent, What};
use sublaunch_tests::bench::{self, median, ms};
use sublaunch_tests::cli::ok;
use sublaunch_tests::launch_harness::Scratch;

/// A root whose event log holds `events` events of finished runs, written in the log's own
/// format, in segments as the appenders cut them.
fn seeded(name: &str, events: u64) -> Scratch {
    let scratch = Scratch::new(name);
    scratch.create_root();
    let dir = scratch.root().join(stream::STREAM_DIR);
    std::fs::create_dir_all(&dir).unwrap();
    let mut segment: Option<(std::fs::File, u64)> = None;
    for cursor in 1..=events {
        if segment.as_ref().is_none_or(|(_, size)| *size >= stream::SEGMENT_BYTES) {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(dir.join(format!("{cursor:020}.log")))
                .unwrap();
            segment = Some((file, 0));
        }
        let event = StreamEvent {
            cursor,
            at: 1_700_000_000_000 + cursor,
            run_id: format!("shell-{:08x}", cursor / 5),
            what: What::StepStarted {
                step: 0,
                agent: "shell".into(),
            },
        };
        let line = stream::encode(&event);
        let (file, size) = segment.as_mut().unwrap();
        file.write_all(&line).unwrap();
        *size += line.len() as u64;
    }
    scratch
}

/// A terminal run directory `id` under `root`, its status ended at `at`.
fn ended_run(root: &Path, id: &str, at: u64) -> (Dir, Status) {
    let path = root.join("runs").join(id);
    std::fs::create_dir_all(&path).unwrap();
    let mut status: Status = serde_json::from_value(serde_json::json!({"runId": id})).unwrap();
    status.mark_terminal(RunState::Complete, at, None, None);
    (Dir::open(&path).unwrap(), status)
}

fn timed_run(scratch: &Scratch) -> Duration {
    let started = Instant::now();
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", "true", "--wait"])
        .output()
        .expect("sublaunch run");
    let elapsed = started.elapsed();
    ok(&output);
    elapsed
}

/// The `fsync`/`fdatasync` calls of one `run --wait`, by what they sync: (stream and outbox,
/// everything else); `None` without strace.
fn syncs(scratch: &Scratch, hook: bool) -> Option<(usize, usize)> {
    let trace = scratch.path().join("strace.out");
    let program = sublaunch_tests::bin("sublaunch");
    let mut args = vec!["run", "--agent", "shell", "--task", "true", "--wait"];
    if hook {
        args.extend(["--on-end", "true"]);
    }
    let mut command = scratch.cli(&args);
    let envs: Vec<_> = command
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
        .collect();
    let cwd = command.get_current_dir().map(Path::to_owned);
    command = std::process::Command::new("strace");
    command
        .args(["-f", "-y", "-qq", "-e", "trace=fsync,fdatasync", "-o"])
        .arg(&trace)
        .arg(&program)
        .args(&args)
        .env_clear()
        .envs(envs);
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    let output = command.output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = std::fs::read_to_string(&trace).ok()?;
    let calls: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("fsync(") || l.contains("fdatasync("))
        .filter(|l| !l.contains("resumed>"))
        .collect();
    let ours = calls
        .iter()
        .filter(|l| l.contains("/events/") || l.contains("/events>") || l.contains("/outbox"))
        .count();
    Some((ours, calls.len() - ours))
}

fn main() {
    let Some(rounds) = bench::rounds(101) else { return };
    // 1. Syncs per run.
    let plain = seeded("bench-events-syncs", 0);
    timed_run(&plain);
    match (syncs(&plain, false), syncs(&plain, true)) {
        (Some((ours, rest)), Some((ours_hooked, rest_hooked))) => {
            println!("| `run --wait` | syncs on `events/` and `outbox/` | every other sync |");
            println!("|---|---|---|");
            println!("| no hook | {ours} | {rest} |");
            println!("| `--on-end true` | {ours_hooked} | {rest_hooked} |");
            println!();
        }
        _ => println!("(strace is not available: the syncs are not counted)\n"),
    }
    // 2. The stream's cost as its history grows, against one synced line.
    let sizes = [0u64, 10_000, 100_000];
    let roots: Vec<Scratch> = sizes.iter().map(|n| seeded(&format!("bench-events-{n}"), *n)).collect();
    let floor_dir = Scratch::new("bench-events-floor");
    floor_dir.create_root();
    let floor_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(floor_dir.root().join("floor.log"))
        .unwrap();
    let line = vec![b'x'; 200];
    let mut floor = Vec::new();
    let mut appends = vec![Vec::new(); sizes.len()];
    let mut ends = vec![Vec::new(); sizes.len()];
    for round in 0..rounds {
        let started = Instant::now();
        (&floor_file).write_all(&line).unwrap();
        floor_file.sync_data().unwrap();
        floor.push(started.elapsed());
        for (i, scratch) in roots.iter().enumerate() {
            let root = scratch.root();
            let stream = Stream::under(&root);
            let started = Instant::now();
            stream.append("shell-bench", 1, What::Started { pid: 1 }).unwrap();
            appends[i].push(started.elapsed());
            let (run, status) = ended_run(&root, &format!("shell-b{round:07}"), 10 + round as u64);
            let started = Instant::now();
            stream::record_end(&root, &run, &status, Consumers::default()).unwrap();
            ends[i].push(started.elapsed());
        }
    }
    let floor = median(floor);
    println!(
        "| events in the log | one event appended | one end recorded (synced) | floor: one line + `fdatasync` | end ÷ floor |"
    );
    println!("|---|---|---|---|---|");
    for ((n, appended), ended) in sizes.iter().zip(appends).zip(ends) {
        let (appended, ended) = (median(appended), median(ended));
        println!(
            "| {n} | {} | {} | {} | {:.2} |",
            ms(appended),
            ms(ended),
            ms(floor),
            ended.as_secs_f64() / floor.as_secs_f64()
        );
    }
    println!();
    // 3. End to end, on an empty log and a long one.
    let rounds_e2e = rounds.min(31);
    let (empty, long) = (
        seeded("bench-events-e2e-0", 0),
        seeded("bench-events-e2e-100k", 100_000),
    );
    let (mut on_empty, mut on_long) = (Vec::new(), Vec::new());
    for _ in 0..rounds_e2e {
        on_empty.push(timed_run(&empty));
        on_long.push(timed_run(&long));
    }
    println!("| `run --wait` | 0 events in the log | 100 000 events in the log |");
    println!("|---|---|---|");
    println!(
        "| median of {rounds_e2e} | {} | {} |",
        ms(median(on_empty)),
        ms(median(on_long))
    );
}
