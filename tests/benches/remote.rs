//! Remote launch benchmark: `sublaunch run --machine … --wait` of a `shell` step on
//! a real loopback sshd, the first launch to a machine (a new ControlMaster connection) and
//! the second (reusing it), against `ssh <alias> true` measured in the same run.
//!
//! Run: `scripts/bench-remote.sh` (builds the release binaries, then
//! `cargo bench -p sublaunch-tests --bench remote`). `SUBLAUNCH_BENCH_ROUNDS` sets the rounds
//! (default 15); medians are printed as a Markdown table.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use sublaunch_tests::bench::{self, median};
use sublaunch_tests::launch_harness::Scratch;
use sublaunch_tests::sshd::Sshd;

fn timed(command: &mut Command) -> Duration {
    let started = Instant::now();
    let output = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("spawn");
    let elapsed = started.elapsed();
    assert!(
        output.status.success(),
        "{:?}: {}",
        command,
        String::from_utf8_lossy(&output.stderr)
    );
    elapsed
}

fn ssh_true(config: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new("ssh");
    command
        .arg("-F")
        .arg(config)
        .args(["-T", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"])
        .args(extra)
        .args(["testbox", "true"]);
    command
}

fn main() {
    let Some(rounds) = bench::rounds(15) else {
        return;
    };
    let server = Sshd::start();
    let scratch = Scratch::new("bench-remote");
    let home = scratch.path().join("home");
    server.client_home(&home, "testbox", true);
    let config = home.join(".ssh/config");
    let herdr = scratch.path().join("herdr");
    std::fs::write(
        &herdr,
        "#!/bin/sh\necho '{\"machines\":[{\"id\":\"m\",\"label\":\"testbox\",\"target\":\"testbox\"}]}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&herdr, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let remote_dir = scratch.path().join("remote");
    std::fs::create_dir_all(&remote_dir).unwrap();
    let remote_dir = remote_dir.to_string_lossy().into_owned();
    let launch = |control: &Path, machine: bool| {
        let mut args = vec!["run", "--agent", "shell", "--task", "true", "--wait"];
        if machine {
            args.extend(["--machine", "testbox", "--cwd", &remote_dir]);
        }
        let mut command = scratch.cli(&args);
        command
            .env("HERDR_BIN", &herdr)
            .env("SUBLAUNCH_SSH_CONFIG", &config)
            .env("SUBLAUNCH_SSH_CONTROL_DIR", control);
        timed(&mut command)
    };
    // Warm the planner cache and the page cache.
    let warm = private_dir();
    launch(warm.path(), true);
    launch(warm.path(), false);

    let (mut bare, mut local, mut first, mut second) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut muxed = Vec::new();
    for _ in 0..rounds {
        bare.push(timed(&mut ssh_true(
            &config,
            &["-o", "ControlMaster=no", "-o", "ControlPath=none"],
        )));
        local.push(launch(warm.path(), false));
        let control = private_dir();
        first.push(launch(control.path(), true));
        second.push(launch(control.path(), true));
        let socket_dir = control.path().to_string_lossy().into_owned();
        let control_path = format!("ControlPath={socket_dir}/%C");
        muxed.push(timed(&mut ssh_true(
            &config,
            &["-o", "ControlMaster=no", "-o", &control_path],
        )));
        // End this round's master so the next first launch connects anew.
        let _ = Command::new("ssh")
            .arg("-F")
            .arg(&config)
            .args(["-o", &format!("ControlPath={socket_dir}/%C"), "-O", "exit", "testbox"])
            .stderr(Stdio::null())
            .status();
    }
    let floor = median(bare);
    let row = |name: &str, d: Duration| {
        println!(
            "| {name} | {:.2} ms | {:.2}x |",
            d.as_secs_f64() * 1e3,
            d.as_secs_f64() / floor.as_secs_f64()
        );
    };
    println!("rounds: {rounds}\n");
    println!("| measurement (median) | time | vs `ssh testbox true` |");
    println!("|---|---|---|");
    row("`ssh testbox true` (new connection; floor)", floor);
    row("`ssh testbox true` over the open master", median(muxed));
    row("local `run --agent shell --task true --wait`", median(local));
    row(
        "remote `run --machine testbox … --wait`, first launch (new master)",
        median(first),
    );
    row(
        "remote `run --machine testbox … --wait`, second launch (reused master)",
        median(second),
    );
}

/// A ControlMaster directory as a user would name one: short (under /tmp) and private.
fn private_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new().prefix("slb").tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}
