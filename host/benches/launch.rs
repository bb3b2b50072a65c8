//! Launch benchmarks (host side), each against a floor measured in the same run:
//! - the library launch until the shim has committed, against a bare spawn + exit of
//!   `/bin/true` from Rust (and one durable write, the storage floor), with default
//!   durability and with `SUBLAUNCH_DURABILITY=strict`;
//! - the CLI: `sublaunch run --agent shell --task true` (prints the id once committed) and
//!   `sublaunch run --wait --agent shell --task true` end to end;
//! - a revival launch through the full handshake;
//! - the launch with a capacity cap set (not reached) beside one without;
//! - launches per second with 8 concurrent launchers;
//! - the RSS of a shim supervising a sleeping agent.
//!
//! Needs the shim: `cargo build --release -p sublaunch-shim` (or `$SUBLAUNCH_SHIM`).
//! Run: `cargo bench -p sublaunch --bench launch`

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use sublaunch::contract::{LaunchPlan, PlanStep};
use sublaunch::launch::{Launch, LaunchOptions, launch, tokio};
use sublaunch_protocol::files::atomic::Durability;
use sublaunch_protocol::files::durability::DurabilityPolicy;
use sublaunch_protocol::os::faults::HostFaults;
use sublaunch_protocol::records::config::RevivalLease;
use support::{Summary, header, measure, row};

const SAMPLES: usize = 40;

fn main() {
    let shim = shim_path();
    let scratch = std::env::temp_dir().join(format!("sublaunch-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let work = scratch.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let runtime = sublaunch::launch::runtime().unwrap();

    header("Launch until the shim committed (library, one `shell` step running `true`)");
    let floor = measure(3, SAMPLES, || {
        Command::new("/bin/true").status().unwrap();
    });
    row("floor: spawn + exit of /bin/true from Rust", floor, floor);
    // What storage costs: the launch commit makes about two of these durable (the run's name
    // in <runs>, the initial status and the proceed file sharing one directory fsync).
    let fsync_dir = sublaunch_protocol::files::dir::Dir::create_private(&scratch.join("fsync-floor")).unwrap();
    let durable = measure(3, SAMPLES, || {
        fsync_dir.write("doc.json", &[b'x'; 1024], Durability::Durable).unwrap();
    });
    row(
        "floor: one durable write of 1 KiB (fsync file, rename, fsync directory)",
        durable,
        floor,
    );
    // What a file creation costs right now: on ext4 without a journal, the inode allocator
    // skips every inode freed in the last minute or more in the directory's block group, one
    // buffer lookup each, so this moves with everything else deleting files on the machine.
    let mut serial = 0_u64;
    let create = measure(3, SAMPLES, || {
        serial += 1;
        let name = format!("created-{serial}");
        fsync_dir.write(&name, b"", Durability::Atomic).unwrap();
        fsync_dir.remove(&name).unwrap();
    });
    row(
        "floor: create (as a document: temp file, rename) and remove an empty file",
        create,
        floor,
    );
    for (name, policy) in [
        (
            "library launch → committed (default durability)",
            DurabilityPolicy::standard(),
        ),
        (
            "library launch → committed (SUBLAUNCH_DURABILITY=strict)",
            DurabilityPolicy::strict(),
        ),
    ] {
        let root = scratch.join(format!("root-{}", policy.is_strict()));
        let summary = timed(SAMPLES, |_| {
            let mut opts = options(&root, &shim);
            opts.durability = Some(policy);
            time_to_commit(&runtime, plan("true", &work), opts)
        });
        row(name, summary, floor);
    }
    // Capacity queue: every launch takes a ticket; with a cap set (here never reached) the
    // ticket is also weighed against the queue under its lock.
    for (name, cap) in [
        ("library launch → committed, no cap (ticket taken at once)", None),
        (
            "library launch → committed, cap 1000 set (not reached)",
            std::num::NonZeroU32::new(1000),
        ),
    ] {
        let root = scratch.join(format!("root-cap-{}", cap.is_some()));
        let summary = timed(SAMPLES, |_| {
            let mut capped = plan("true", &work);
            capped.limits.max_active = cap;
            time_to_commit(&runtime, capped, options(&root, &shim))
        });
        row(name, summary, floor);
    }
    let revival_root = scratch.join("root-revival");
    let session = work.join("session.json");
    std::fs::write(&session, b"{}").unwrap();
    let revival = timed(SAMPLES, |_| {
        let mut revived = plan("true", &work);
        revived.caller.revival_lease = Some(RevivalLease {
            session_file: session.to_string_lossy().into_owned(),
            run_id: String::new(),
            source_run_id: "bench-source".into(),
            parent_session_id: None,
        });
        time_to_commit(&runtime, revived, options(&revival_root, &shim))
    });
    row("revival launch → committed (ready/ack/confirm/proceed)", revival, floor);

    header("CLI (planner load included; warm component cache)");
    let cli_root = scratch.join("root-cli");
    let cli = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sublaunch"));
        command
            .args(args)
            .current_dir(&work)
            .env("SUBLAUNCH_ROOT", &cli_root)
            .env("SUBLAUNCH_SHIM", &shim)
            .env("SUBLAUNCH_CACHE_DIR", scratch.join("cache"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    };
    // A machine's component cache is normally long settled: its entry gets the stamp that
    // spares later loads the hash only once it is DEFAULT_SETTLE old, so the first CLI run
    // compiles it, the bench waits that long, and the next run writes the stamp.
    assert!(
        cli(&["run", "--agent", "shell", "--task", "true", "--dry-run"])
            .status()
            .unwrap()
            .success()
    );
    std::thread::sleep(sublaunch::engine::artifact_cache::DEFAULT_SETTLE + Duration::from_millis(100));
    let dry = measure(2, SAMPLES, || {
        assert!(
            cli(&["run", "--agent", "shell", "--task", "true", "--dry-run"])
                .status()
                .unwrap()
                .success()
        );
    });
    let async_run = measure(2, SAMPLES, || {
        assert!(
            cli(&["run", "--agent", "shell", "--task", "true"])
                .status()
                .unwrap()
                .success()
        );
    });
    let waited = measure(2, SAMPLES, || {
        assert!(
            cli(&["run", "--wait", "--agent", "shell", "--task", "true"])
                .status()
                .unwrap()
                .success()
        );
    });
    row("floor: spawn + exit of /bin/true from Rust", floor, floor);
    row("`sublaunch run --dry-run` (plan only)", dry, floor);
    row(
        "`sublaunch run --agent shell --task true` (until committed)",
        async_run,
        floor,
    );
    row(
        "`sublaunch run --wait --agent shell --task true` (end to end)",
        waited,
        floor,
    );

    header("Throughput: 8 concurrent launchers (library, until committed)");
    let total = 160;
    let root = scratch.join("root-concurrent");
    let started = Instant::now();
    runtime.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for launcher in 0..8 {
            let (root, shim, work) = (root.clone(), shim.clone(), work.clone());
            set.spawn(async move {
                let mut handles = Vec::new();
                for _ in 0..total / 8 {
                    let launched = launch(plan("true", &work), options(&root, &shim)).await.unwrap();
                    launched.handle.committed().await.unwrap();
                    handles.push(launched.handle);
                }
                for handle in handles {
                    handle.finished().await.unwrap();
                }
                launcher
            });
        }
        while set.join_next().await.is_some() {}
    });
    let elapsed = started.elapsed();
    println!(
        "| {total} launches by 8 concurrent launchers (committed and finalized) | {:.1} launches/s | {:.2} ms per launch | {total} | |",
        f64::from(total) / elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1000.0 / f64::from(total)
    );

    header("Memory: RSS of a shim supervising `sleep 5`");
    let root = scratch.join("root-rss");
    let mut rss: Vec<u64> = (0..5)
        .map(|_| {
            runtime.block_on(async {
                let launched = launch(plan("sleep 5", &work), options(&root, &shim)).await.unwrap();
                launched.handle.committed().await.unwrap();
                tokio::time::sleep(Duration::from_millis(300)).await;
                let kib = vm_rss_kib(launched.pid);
                launched.handle.finished().await.unwrap();
                kib
            })
        })
        .collect();
    rss.sort_unstable();
    println!(
        "| shim VmRSS while its agent sleeps | {} KiB | {} KiB (max) | 5 | |",
        rss[2], rss[4]
    );

    let _ = std::fs::remove_dir_all(&scratch);
}

/// Times `samples` runs of `op` (which returns the measured part itself) after 3 warm-ups.
fn timed(samples: usize, mut op: impl FnMut(usize) -> Duration) -> Summary {
    for i in 0..3 {
        op(i);
    }
    let mut times: Vec<Duration> = (0..samples).map(&mut op).collect();
    times.sort();
    Summary {
        median: times[times.len() / 2],
        p90: times[times.len() * 9 / 10],
        samples,
    }
}

/// Launches `plan` and returns the time until the shim committed; waits for the run to end
/// outside the measured part.
fn time_to_commit(runtime: &tokio::runtime::Runtime, plan: Launch, opts: LaunchOptions) -> Duration {
    runtime.block_on(async {
        let start = Instant::now();
        let launched = launch(plan, opts).await.unwrap();
        launched.handle.committed().await.unwrap();
        let elapsed = start.elapsed();
        launched.handle.finished().await.unwrap();
        elapsed
    })
}

fn options(root: &Path, shim: &Path) -> LaunchOptions {
    let mut options = LaunchOptions::at(root, shim);
    // The shim inherits this process's environment, as under the CLI.
    options.environment = sublaunch::Environment::from_process();
    options.faults = Some(HostFaults::none());
    options.durability = Some(DurabilityPolicy::standard());
    options
}

/// A launch of one shell step running `task` in `cwd`, under the session `bench`.
fn plan(task: &str, cwd: &Path) -> Launch {
    let mut launch = Launch::new(LaunchPlan::single(PlanStep::local(
        "shell",
        task,
        &cwd.to_string_lossy(),
    )));
    launch.caller.session_id = Some("bench".into());
    launch
}

/// `$SUBLAUNCH_SHIM`, else `sublaunch-shim` beside this profile's binaries.
fn shim_path() -> PathBuf {
    if let Some(path) = std::env::var_os("SUBLAUNCH_SHIM") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().unwrap();
    let candidate = exe.parent().and_then(Path::parent).unwrap().join("sublaunch-shim");
    assert!(
        candidate.is_file(),
        "{} is missing: run `cargo build --release -p sublaunch-shim` first or set SUBLAUNCH_SHIM",
        candidate.display()
    );
    candidate
}

fn vm_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
