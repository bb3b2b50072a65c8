//! Bad input on the files sublaunch reads, generated: every run file, agent file, settings file
//! and chain file emptied, cut short, given the wrong JSON type, made huge, given invalid UTF-8,
//! or replaced by a symlink, a FIFO or a directory. Whatever the damage, every command ends (no
//! hang), never panics, and never changes another run's files; a command that refuses a
//! configuration file names it. The seed is printed so a failure replays.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use sublaunch_tests::cli::{text, write};
use sublaunch_tests::launch_harness::Scratch;

/// The kinds of damage.
const DAMAGE: [&str; 8] = [
    "empty",
    "cut",
    "wrong-type",
    "huge",
    "invalid-utf8",
    "symlink",
    "fifo",
    "directory",
];

/// A small seedable generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1) as u64) as usize
    }
}

fn seed() -> u64 {
    std::env::var("SUBLAUNCH_BAD_INPUT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(7, |d| d.as_nanos() as u64)
                | 1
        })
}

/// Replaces `path` (whose healthy bytes are `original`) with `damage`.
fn damage(path: &Path, damage: &str, original: &[u8], rng: &mut Rng) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_dir_all(path);
    match damage {
        "empty" => std::fs::write(path, b"").unwrap(),
        "cut" => std::fs::write(path, &original[..rng.below(original.len().max(1))]).unwrap(),
        "wrong-type" => std::fs::write(path, ["[1, 2]", "\"text\"", "42", "null"][rng.below(4)]).unwrap(),
        "huge" => std::fs::write(path, vec![b'{'; 2 * 1024 * 1024]).unwrap(),
        "invalid-utf8" => std::fs::write(path, b"\xff\xfe{\"a\": \"\xc3\x28\"}").unwrap(),
        "symlink" => std::os::unix::fs::symlink("/etc/hostname", path).unwrap(),
        "fifo" => {
            assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
        }
        _ => std::fs::create_dir(path).unwrap(),
    }
}

/// How a command ended.
struct Ended {
    code: Option<i32>,
    stderr: String,
}

/// Runs `command`, killing it after 20 s: a hang is a failure of its own.
fn bounded(mut command: Command, what: &str) -> Ended {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            let output = child.wait_with_output().unwrap();
            return Ended {
                code: output.status.code(),
                stderr: text(&output.stderr),
            };
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("{what} hung for 20 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn assert_no_panic(ended: &Ended, what: &str) {
    assert_ne!(ended.code, Some(101), "{what} panicked: {}", ended.stderr);
    assert!(!ended.stderr.contains("panicked"), "{what} panicked: {}", ended.stderr);
    assert!(ended.code.is_some(), "{what} was killed by a signal: {}", ended.stderr);
}

/// Every file under `dir` with its bytes (symlinks and special files by kind).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            out.extend(snapshot(&path));
        } else if meta.is_file() {
            out.insert(path.clone(), std::fs::read(&path).unwrap());
        } else {
            out.insert(path, b"<special>".to_vec());
        }
    }
    out
}

#[test]
fn e1_damaged_run_files_never_hang_panic_or_touch_another_run() {
    let seed = seed();
    eprintln!("bad run files: seed {seed} (replay with SUBLAUNCH_BAD_INPUT_SEED={seed})");
    let mut rng = Rng(seed);
    let scratch = Scratch::new("bad-run-files");
    let victim = scratch.finished_shell_run("echo victim");
    let bystander = scratch.finished_shell_run("echo bystander");
    let victim_dir = scratch.run_dir(&victim);
    let pristine = snapshot(&victim_dir);
    let bystander_before = snapshot(&scratch.run_dir(&bystander));
    let files: Vec<PathBuf> = pristine
        .keys()
        .filter(|p| !p.ends_with(".status.lock"))
        .cloned()
        .collect();
    let commands: [&[&str]; 5] = [
        &["status"],
        &["status", "--json"],
        &["wait", "--timeout", "1"],
        &["logs"],
        &["list", "--all"],
    ];
    for case in 0..40 {
        let file = &files[rng.below(files.len())];
        let kind = DAMAGE[rng.below(DAMAGE.len())];
        damage(file, kind, &pristine[file], &mut rng);
        let args = commands[rng.below(commands.len())];
        let mut full: Vec<&str> = args.to_vec();
        if args[0] != "list" {
            full.insert(1, &victim);
        }
        let what = format!(
            "case {case}: `sublaunch {}` with {} {kind}",
            full.join(" "),
            file.display()
        );
        let ended = bounded(scratch.cli(&full), &what);
        assert_no_panic(&ended, &what);
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if name == "status.json" && args[0] == "status" {
            assert_eq!(ended.code, Some(1), "{what}: {}", ended.stderr);
            assert!(
                ended.stderr.contains("status.json"),
                "{what} must name the file: {}",
                ended.stderr
            );
        }
        assert_eq!(
            snapshot(&scratch.run_dir(&bystander)),
            bystander_before,
            "{what} changed another run"
        );
        // Restore the victim for the next case.
        let _ = std::fs::remove_dir_all(file).or_else(|_| std::fs::remove_file(file));
        std::fs::write(file, &pristine[file]).unwrap();
    }
}

#[test]
fn e1_damaged_agent_settings_and_chain_files_are_named_and_never_hang_or_panic() {
    let seed = seed();
    eprintln!("bad configuration files: seed {seed} (replay with SUBLAUNCH_BAD_INPUT_SEED={seed})");
    let mut rng = Rng(seed);
    let scratch = Scratch::trusting("bad-config-files");
    assert!(
        Command::new("git")
            .args(["init", "-q"])
            .arg(scratch.work())
            .status()
            .unwrap()
            .success()
    );
    let agent = scratch.work().join(".sublaunch/agents/helper.md");
    let agent_text = "---\ndescription: helps\nrunner: shell\n---\nBe brief.\n";
    let settings = scratch.work().join(".sublaunch/settings.json");
    let settings_text = r#"{"defaultThinking": "low"}"#;
    let chain = scratch.work().join("chain.yaml");
    let chain_text = "steps:\n  - {agent: shell, task: 'echo one'}\n  - {agent: shell, task: 'echo two'}\n";
    for kind in DAMAGE {
        for (file, healthy, args) in [
            (
                &agent,
                agent_text,
                vec!["run", "--agent", "helper", "--task", "x", "--dry-run"],
            ),
            (
                &settings,
                settings_text,
                vec!["run", "--agent", "shell", "--task", "x", "--dry-run"],
            ),
            (&chain, chain_text, vec!["run", "--chain", "chain.yaml", "--dry-run"]),
        ] {
            for (path, healthy) in [(&agent, agent_text), (&settings, settings_text), (&chain, chain_text)] {
                let _ = std::fs::remove_file(path).or_else(|_| std::fs::remove_dir_all(path));
                write(path, healthy);
            }
            damage(file, kind, healthy.as_bytes(), &mut rng);
            let what = format!("`sublaunch {}` with {} {kind}", args.join(" "), file.display());
            let ended = bounded(scratch.cli(&args), &what);
            assert_no_panic(&ended, &what);
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            // A refusal says which file (a cut that leaves a valid shorter file is no error).
            if ended.code != Some(0) {
                assert!(
                    ended.stderr.contains(&name),
                    "{what} must name the file: {}",
                    ended.stderr
                );
            }
            let listed = bounded(scratch.cli(&["agents"]), &format!("`sublaunch agents` with {what}"));
            assert_no_panic(&listed, &what);
        }
    }
}
