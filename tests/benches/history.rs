//! What a state root full of ended runs costs every command (issue 34): a root holding N ended
//! runs in their final form plus a few active ones, beside a root holding one ended run and
//! the same active ones, measured in the same run and interleaved round by round.
//!
//! The N runs are clones, not launches: one real trivial run is launched and waited for, then
//! everything it left that is named after it (its run directory, its result, its result-index
//! and terminal-run entries, and whatever index entries the build at hand leaves) is copied N
//! times with the run id rewritten in the names and in the documents. Indexes that are shared
//! files rather than per-run entries are left to the build's own repair: the history index is
//! removed and `list --all` runs once on each root after filling, rebuilding it from the run
//! directories, and the run-id index is removed and rebuilt by the first `status <prefix>`,
//! before measuring.
//!
//! Measured on both roots: `run` (until committed), `list`, `list --all`, `list --all --limit
//! 50` (when the build has `--limit`), `status ID`, `status <prefix>`, `wait ID` and `result ID`
//! of an ended run, `stop` of an active run, and the MCP `list` and `status` tools. Printed as
//! a Markdown table of medians, with the disk a trivial run takes.
//!
//! Run: `scripts/bench-history.sh` (builds the release binaries, then
//! `cargo bench -p sublaunch-tests --bench history`). `SUBLAUNCH_BENCH_RUNS` sets N (default
//! 1 000; 100 000 for the record), `SUBLAUNCH_BENCH_ROUNDS` the rounds (default 10).

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};
use sublaunch_tests::bench::{self, median, ms};
use sublaunch_tests::cli::{ok, text};
use sublaunch_tests::launch_harness::Scratch;
use sublaunch_tests::mcp_session::Session;

/// Active runs kept in each root while measuring (besides the one each `stop` round starts).
const ACTIVE: usize = 3;
/// The task of an active run: outlives the benchmark, which stops it.
const ACTIVE_TASK: &str = "sleep 600";

fn cli(scratch: &Scratch, args: &[&str]) -> Output {
    scratch.cli(args).output().expect("sublaunch")
}

fn timed(scratch: &Scratch, args: &[&str]) -> Duration {
    let started = Instant::now();
    let output = cli(scratch, args);
    let elapsed = started.elapsed();
    ok(&output);
    elapsed
}

/// `run --agent shell --task TASK` (returns once committed); the run id it prints.
fn launch(scratch: &Scratch, task: &str) -> String {
    let output = cli(scratch, &["run", "--agent", "shell", "--task", task, "--json"]);
    let printed: Value = serde_json::from_str(&ok(&output)).expect("run --json prints JSON");
    printed["runId"]
        .as_str()
        .unwrap_or_else(|| panic!("no run id in {printed}"))
        .to_owned()
}

/// One trivial run, launched, waited for and reconciled: what an ended run leaves. The CLI
/// that launched it is gone before the end, so the next command that lists runs writes its
/// final proof (S13); clones of a run before that would each be repaired on the first `list`.
fn ended_run(scratch: &Scratch) -> String {
    let id = launch(scratch, "true");
    ok(&cli(scratch, &["wait", &id]));
    ok(&cli(scratch, &["list", "--all"]));
    id
}

/// A file or directory a run left, relative to the root, with what it holds.
enum Left {
    /// A file's bytes.
    File(Vec<u8>),
    /// A directory's files, relative to it.
    Dir(BTreeMap<PathBuf, Vec<u8>>),
}

/// Everything under `root` named after `id` (a directory named after it is taken whole); and
/// the other files that mention it (shared indexes the clones do not reach).
fn left_by(root: &Path, id: &str) -> (BTreeMap<PathBuf, Left>, Vec<PathBuf>) {
    let (mut named, mut mentioning) = (BTreeMap::new(), Vec::new());
    let mut pending = vec![root.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read the root").flatten() {
            let path = entry.path();
            let relative = path.strip_prefix(root).expect("under the root").to_owned();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if entry.file_name().to_string_lossy().contains(id) {
                let left = if is_dir {
                    Left::Dir(files_under(&path))
                } else {
                    Left::File(std::fs::read(&path).expect("read a run file"))
                };
                named.insert(relative, left);
            } else if is_dir {
                pending.push(path);
            } else if std::fs::read(&path).is_ok_and(|bytes| find(&bytes, id.as_bytes()).is_some()) {
                mentioning.push(relative);
            }
        }
    }
    (named, mentioning)
}

fn files_under(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).expect("read a run directory").flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(dir).expect("under the directory").to_owned();
                files.insert(relative, std::fs::read(&path).expect("read a run file"));
            }
        }
    }
    files
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `bytes` with every `from` replaced by `to`.
fn rewrite(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    let (from, to) = (from.as_bytes(), to.as_bytes());
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while let Some(at) = find(rest, from) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(to);
        rest = &rest[at + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

fn rewrite_path(path: &Path, from: &str, to: &str) -> PathBuf {
    PathBuf::from(path.to_string_lossy().replace(from, to))
}

/// Writes `bytes` as the run files are written: 0600, in 0700 directories.
fn plant(path: &Path, bytes: &[u8]) {
    if let Some(parent) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .expect("create a run directory");
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
    std::io::Write::write_all(&mut file, bytes).expect("write a run file");
}

/// The id of clone `n`: the template's agent slug and 8 base36 characters spread over the
/// whole range (so that prefixes are as varied as random ids'), never `template`'s.
fn clone_id(template: &str, n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let slug = template.rsplit_once('-').map_or("run", |(slug, _)| slug);
    // A multiplier prime to 2 and 3 is a bijection modulo 36^8 = 2^16·3^16: distinct n give
    // distinct ids.
    let mut value = (n.wrapping_mul(2_654_435_761).wrapping_add(1)) % 36u64.pow(8);
    let suffix: String = (0..8)
        .map(|_| {
            let digit = DIGITS[usize::try_from(value % 36).expect("a digit")];
            value /= 36;
            char::from(digit)
        })
        .collect();
    format!("{slug}-{suffix}")
}

/// Fills `root` with `count` clones of what run `template` left, on two threads; the ids.
fn fill(root: &Path, template: &str, left: &BTreeMap<PathBuf, Left>, count: u64) -> Vec<String> {
    let ids: Vec<String> = (0..count)
        .map(|n| clone_id(template, n))
        .filter(|id| id != template && !id.starts_with(&template[..template.len() - 2]))
        .collect();
    std::thread::scope(|scope| {
        for half in ids.chunks(ids.len().div_ceil(2).max(1)) {
            scope.spawn(move || {
                for id in half {
                    for (path, what) in left {
                        let target = root.join(rewrite_path(path, template, id));
                        match what {
                            Left::File(bytes) => plant(&target, &rewrite(bytes, template, id)),
                            Left::Dir(files) => {
                                for (file, bytes) in files {
                                    plant(
                                        &target.join(rewrite_path(file, template, id)),
                                        &rewrite(bytes, template, id),
                                    );
                                }
                            }
                        }
                    }
                }
            });
        }
    });
    ids
}

/// `du -sk PATHS…`, in KB.
fn disk_kb(paths: &[PathBuf]) -> u64 {
    du_total("-skc", paths)
}

/// The bytes the files under `paths` hold (`du -sbc`): what a run writes, whatever the
/// filesystem's block size makes of it.
fn written_bytes(paths: &[PathBuf]) -> u64 {
    du_total("-sbc", paths)
}

/// The total line of `du FLAGS PATHS…`.
fn du_total(flags: &str, paths: &[PathBuf]) -> u64 {
    let output = std::process::Command::new("du")
        .arg(flags)
        .args(paths)
        .output()
        .expect("du");
    let out = text(&output.stdout);
    let total = out.lines().last().and_then(|l| l.split_whitespace().next());
    total.and_then(|t| t.parse().ok()).expect("du prints a total")
}

/// One of the two roots: its ended run, its active runs, an MCP session.
struct Root {
    scratch: Scratch,
    ended: String,
    prefix: String,
    active: Vec<String>,
    mcp: Session,
}

impl Root {
    fn new(scratch: Scratch, ended: String) -> Root {
        let active = (0..ACTIVE).map(|_| launch(&scratch, ACTIVE_TASK)).collect();
        // The history index is a shared file the clones are not in: it goes, and `list --all`
        // once rebuilds it from the run directories (the documented rebuild path, I12), as a
        // build whose indexes need the runs registered would.
        let _ = std::fs::remove_dir_all(scratch.runs().join(".history"));
        let started = std::time::Instant::now();
        ok(&cli(&scratch, &["list", "--all", "--limit", "1"]));
        eprintln!("history rebuilt in {:.1} s", started.elapsed().as_secs_f64());
        // So is the run-id index (I14): the first prefix builds it.
        let _ = std::fs::remove_dir_all(scratch.runs().join(".ids"));
        let prefix = ended[..ended.len() - 2].to_owned();
        let started = std::time::Instant::now();
        ok(&cli(&scratch, &["status", &prefix]));
        eprintln!("run-id index built in {:.1} s", started.elapsed().as_secs_f64());
        let mcp = Session::start(&scratch);
        Root {
            scratch,
            ended,
            prefix,
            active,
            mcp,
        }
    }

    fn tool(&mut self, name: &str, arguments: Value) -> Duration {
        let started = Instant::now();
        let response = self
            .mcp
            .request("tools/call", json!({"name": name, "arguments": arguments}));
        let elapsed = started.elapsed();
        assert_eq!(response["result"]["isError"], false, "{response}");
        elapsed
    }

    /// `stop` of an active run started for it (only the stop is timed).
    fn stop(&mut self) -> Duration {
        let id = launch(&self.scratch, ACTIVE_TASK);
        timed(&self.scratch, &["stop", &id])
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        for id in &self.active {
            let _ = cli(&self.scratch, &["stop", id]);
        }
    }
}

/// One measured command: its label and how to time it on a root.
struct Measure {
    label: &'static str,
    time: fn(&mut Root) -> Duration,
}

fn measures(with_limit: bool) -> Vec<Measure> {
    let mut all = vec![
        Measure {
            label: "`run --agent shell --task true` (until committed)",
            time: |r| timed(&r.scratch, &["run", "--agent", "shell", "--task", "true"]),
        },
        Measure {
            label: "`list` (active runs)",
            time: |r| timed(&r.scratch, &["list"]),
        },
        Measure {
            label: "`list --all`",
            time: |r| timed(&r.scratch, &["list", "--all"]),
        },
    ];
    if with_limit {
        all.push(Measure {
            label: "`list --all --limit 50`",
            time: |r| timed(&r.scratch, &["list", "--all", "--limit", "50"]),
        });
    }
    all.extend([
        Measure {
            label: "`status ID` (ended run)",
            time: |r| timed(&r.scratch, &["status", &r.ended]),
        },
        Measure {
            label: "`status <prefix>` (ended run)",
            time: |r| timed(&r.scratch, &["status", &r.prefix]),
        },
        Measure {
            label: "`wait ID` (ended run)",
            time: |r| timed(&r.scratch, &["wait", &r.ended]),
        },
        Measure {
            label: "`result ID`",
            time: |r| timed(&r.scratch, &["result", &r.ended]),
        },
        Measure {
            label: "`stop ID` (active run)",
            time: Root::stop,
        },
        Measure {
            label: "MCP `list` tool (active runs)",
            time: |r| r.tool("list", json!({})),
        },
        Measure {
            label: "MCP `status` tool (ended run)",
            time: |r| {
                let id = r.ended.clone();
                r.tool("status", json!({"run_id": id}))
            },
        },
    ]);
    all
}

fn main() {
    let Some(rounds) = bench::rounds(10) else {
        return;
    };
    let count: u64 = std::env::var("SUBLAUNCH_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000);

    let full = Scratch::new("bench-history-full");
    let template = ended_run(&full);
    let (left, mentioning) = left_by(&full.root(), &template);
    let filling = Instant::now();
    let clones = fill(&full.root(), &template, &left, count);
    let filled_in = filling.elapsed();
    // The clones read as what they are: ended runs with a result.
    let sample = clones.last().expect("at least one clone");
    ok(&cli(&full, &["status", sample]));
    ok(&cli(&full, &["result", sample]));

    let empty = Scratch::new("bench-history-empty");
    let lone = ended_run(&empty);
    let run_dir = empty.run_dir(&lone);
    let result = empty.results().join(format!("{lone}.json"));
    let (run_kb, result_kb) = (disk_kb(std::slice::from_ref(&run_dir)), disk_kb(&[result]));
    let entries: Vec<PathBuf> = left_by(&empty.root(), &lone).0.into_keys().collect();
    let entry_paths: Vec<PathBuf> = entries.iter().map(|e| empty.root().join(e)).collect();
    let all_kb = disk_kb(&entry_paths);
    let all_written = written_bytes(&entry_paths);

    let warming = Instant::now();
    let mut roots = [Root::new(empty, lone), Root::new(full, template)];
    let warmed_in = warming.elapsed();
    let with_limit = text(&cli(&roots[0].scratch, &["list", "--help"]).stdout).contains("--limit");
    let measures = measures(with_limit);
    // One of each first: the planner's artifact cache and the page cache warm up.
    for root in &mut roots {
        for measure in &measures {
            (measure.time)(root);
        }
    }
    let mut samples: Vec<[Vec<Duration>; 2]> = measures.iter().map(|_| Default::default()).collect();
    for _ in 0..rounds {
        for (measure, samples) in measures.iter().zip(&mut samples) {
            for (root, samples) in roots.iter_mut().zip(samples.iter_mut()) {
                samples.push((measure.time)(root));
            }
        }
    }

    let clones = clones.len() + 1;
    println!(
        "{clones} ended runs made in {:.1} s; `list --all` and {ACTIVE} active runs per root after \
         filling: {:.1} s; {rounds} rounds.",
        filled_in.as_secs_f64(),
        warmed_in.as_secs_f64()
    );
    if !with_limit {
        println!("`list --all --limit 50`: not measured, this build's `list` has no `--limit`.");
    }
    if !mentioning.is_empty() {
        println!(
            "Shared files mentioning the template run (not cloned; `list --all` ran once after \
             filling): {}",
            mentioning
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    println!(
        "Per run: {}",
        entries
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!();
    println!("| command | 1 ended run | {clones} ended runs | × 1 run |\n|---|---:|---:|---:|");
    for (measure, samples) in measures.iter().zip(samples) {
        let [one, many] = samples.map(median);
        println!(
            "| {} | {} | {} | {:.2} |",
            measure.label,
            ms(one),
            ms(many),
            many.as_secs_f64() / one.as_secs_f64()
        );
    }
    println!(
        "| disk per trivial run (`du -sk`) | {all_kb} KB: {run_kb} KB run directory, {result_kb} KB result, {} KB \
         index entries; {:.1} KB written (`du -sb`) | | |",
        all_kb - run_kb - result_kb,
        all_written as f64 / 1024.0
    );
    print_layout(&run_dir);
}

/// The files of a trivial run's directory with their sizes: what the disk per run is made of.
fn print_layout(run_dir: &Path) {
    let mut files: Vec<(PathBuf, u64)> = files_under(run_dir)
        .into_iter()
        .map(|(path, bytes)| (path, bytes.len() as u64))
        .collect();
    files.sort();
    println!();
    println!(
        "Files of a trivial run's directory (bytes): {}",
        files
            .iter()
            .map(|(path, size)| format!("{} {size}", path.display()))
            .collect::<Vec<_>>()
            .join(", ")
    );
}
