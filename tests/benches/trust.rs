//! What project trust costs a command, and how that grows with the project and with the
//! number of projects trusted. Measured in the same run, interleaved round by round:
//!
//! - the floor: `sublaunch agents` and `sublaunch run --agent shell --task true` in a
//!   directory without project configuration;
//! - the same in a project of 40 agent files (10 of them with programs of their own, 2 in
//!   place of built-ins), a completion hook and 20 pi extension files: untrusted (read and
//!   ignored), trusted (every program's content hashed and checked), and trusted among
//!   10 000 other trusted projects;
//! - `sublaunch trust` of that project.
//!
//! Run: `scripts/bench-trust.sh` (builds the release binaries, then
//! `cargo bench -p sublaunch-tests --bench trust`). `SUBLAUNCH_BENCH_ROUNDS` sets the rounds
//! (default 30); medians are printed as a Markdown table.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use sublaunch::inputs::project::store::{TrustStore, TrustedProject};
use sublaunch_tests::bench::{self, median, ms};
use sublaunch_tests::cli::write;
use sublaunch_tests::launch_harness::Scratch;

fn timed(scratch: &Scratch, dir: &Path, args: &[&str]) -> Duration {
    let started = Instant::now();
    let output = scratch.cli(args).current_dir(dir).output().unwrap();
    let elapsed = started.elapsed();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    elapsed
}

/// A repository with 40 agents, a hook and pi extensions, in `dir`.
fn project(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    write(
        &dir.join(".sublaunch/settings.json"),
        r#"{"subagents":{"onEnd":"true"}}"#,
    );
    for i in 0..40 {
        let runner = match i {
            0 => "name: shell\nrunner:\n  type: command\n  command: [sh, -c, 'echo {task}']\n".to_owned(),
            1 => "name: claude\n".to_owned(),
            2..10 => format!("runner:\n  type: command\n  command: [tool-{i}, --prompt, '{{task}}']\n"),
            _ => String::new(),
        };
        let body = "You review changes carefully.\n".repeat(40);
        write(
            &dir.join(format!(".sublaunch/agents/agent-{i}.md")),
            &format!("---\ndescription: agent {i}\n{runner}tools: read, grep\n---\n{body}"),
        );
    }
    for i in 0..20 {
        write(
            &dir.join(format!(".pi/extensions/ext-{i}/index.ts")),
            &"export default function (pi) {}\n".repeat(50),
        );
    }
    dir.to_owned()
}

fn main() {
    let Some(rounds) = bench::rounds(30) else {
        return;
    };
    let scratch = Scratch::new("bench-trust");
    let bare = scratch.work().join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    let untrusted = project(&scratch.work().join("untrusted"));
    let trusted = project(&scratch.work().join("trusted"));
    let crowded = project(&scratch.work().join("crowded"));
    let config = scratch.path().join("home/.config/sublaunch");
    let store = TrustStore::new(&config);
    // 10 000 other projects trusted beside `crowded`'s own record (which `trust` writes).
    for i in 0..10_000 {
        store
            .record(&TrustedProject {
                root: PathBuf::from(format!("/projects/p{i}")),
                approved: Vec::new(),
            })
            .unwrap();
    }
    let agents = ["agents"];
    let run = ["run", "--agent", "shell", "--task", "true"];
    timed(&scratch, &trusted, &["trust"]);
    timed(&scratch, &crowded, &["trust"]);
    // One of each first: the planner's artifact cache warms up.
    timed(&scratch, &bare, &run);
    timed(&scratch, &trusted, &run);

    let mut samples: [Vec<Duration>; 10] = Default::default();
    for _ in 0..rounds {
        samples[0].push(timed(&scratch, &bare, &agents));
        samples[1].push(timed(&scratch, &untrusted, &agents));
        samples[2].push(timed(&scratch, &trusted, &agents));
        samples[3].push(timed(&scratch, &crowded, &agents));
        samples[4].push(timed(&scratch, &bare, &run));
        samples[5].push(timed(&scratch, &untrusted, &run));
        samples[6].push(timed(&scratch, &trusted, &run));
        samples[7].push(timed(&scratch, &crowded, &run));
        samples[8].push(timed(&scratch, &trusted, &["trust"]));
        samples[9].push(timed(&scratch, &bare, &["--version"]));
    }
    let [
        agents_bare,
        agents_untrusted,
        agents_trusted,
        agents_crowded,
        run_bare,
        run_untrusted,
        run_trusted,
        run_crowded,
        trust,
        version,
    ] = samples.map(median);
    let ratio = |d: Duration, floor: Duration| format!("{:.2}", d.as_secs_f64() / floor.as_secs_f64());
    println!("| measurement | median | × floor |\n|---|---|---|");
    println!("| `sublaunch --version` (process start) | {} | |", ms(version));
    println!(
        "| floor: `agents`, no project configuration | {} | 1.00 |",
        ms(agents_bare)
    );
    println!(
        "| `agents`, untrusted project (40 agents ignored) | {} | {} |",
        ms(agents_untrusted),
        ratio(agents_untrusted, agents_bare)
    );
    println!(
        "| `agents`, trusted project (40 agents, 10 programs checked) | {} | {} |",
        ms(agents_trusted),
        ratio(agents_trusted, agents_bare)
    );
    println!(
        "| `agents`, trusted among 10 000 trusted projects | {} | {} |",
        ms(agents_crowded),
        ratio(agents_crowded, agents_bare)
    );
    println!(
        "| floor: `run --agent shell --task true`, no project configuration | {} | 1.00 |",
        ms(run_bare)
    );
    println!(
        "| `run …`, untrusted project | {} | {} |",
        ms(run_untrusted),
        ratio(run_untrusted, run_bare)
    );
    println!(
        "| `run …`, trusted project (hook, 10 programs, 20 extension files hashed) | {} | {} |",
        ms(run_trusted),
        ratio(run_trusted, run_bare)
    );
    println!(
        "| `run …`, trusted among 10 000 trusted projects | {} | {} |",
        ms(run_crowded),
        ratio(run_crowded, run_bare)
    );
    println!(
        "| `trust` of the project | {} | {} |",
        ms(trust),
        ratio(trust, agents_bare)
    );
}
