//! `sublaunch logs RUN_ID [--follow]`: prints the run's `output-<n>.log` files in step order;
//! `--follow` keeps streaming what is appended until the run is terminal.

use super::runs::{find_run, open_store, status_of};
use super::waiting::look_and_watch;
use super::watch::RunWatcher;
use std::io::{Read, Seek, SeekFrom, Write};
use std::process::ExitCode;
use std::sync::Arc;
use sublaunch::launch::reconcile::RunStore;
use sublaunch::launch::tokio;
use sublaunch_runfiles::dir::Dir;
use sublaunch_runfiles::layout::names;

/// Arguments of `sublaunch logs`.
#[derive(clap::Args)]
pub struct Args {
    /// The run id.
    run_id: String,
    /// Keep printing new output until the run ends.
    #[arg(long, short = 'f')]
    follow: bool,
}

/// Runs `sublaunch logs`.
pub fn run(args: Args) -> ExitCode {
    let store = match open_store("logs") {
        Ok(store) => store,
        Err(code) => return code,
    };
    let run = match find_run(&store, &args.run_id, "logs") {
        Ok(run) => run,
        Err(code) => return code,
    };
    let mut offsets = Vec::new();
    if let Err(e) = copy_new_output(&run, &mut offsets) {
        eprintln!("sublaunch logs: {e}");
        return ExitCode::FAILURE;
    }
    if !args.follow {
        return ExitCode::SUCCESS;
    }
    let runtime = match sublaunch::launch::runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("sublaunch logs: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(follow(&Arc::new(store), &Arc::new(run), &mut offsets))
}

async fn follow(store: &Arc<RunStore>, run: &Arc<Dir>, offsets: &mut Vec<u64>) -> ExitCode {
    let mut watcher = RunWatcher::new(run.path());
    loop {
        // Ends only once the run is terminal; the final copy catches the last bytes.
        let ended = look_and_watch(store, run, &mut watcher).await.is_some();
        let (dir, mut moved) = (run.clone(), std::mem::take(offsets));
        let copied = tokio::task::spawn_blocking(move || {
            let result = copy_new_output(&dir, &mut moved);
            (result, moved)
        })
        .await;
        let result = match copied {
            Ok((result, moved)) => {
                *offsets = moved;
                result
            }
            Err(e) => Err(std::io::Error::other(e.to_string())),
        };
        if let Err(e) = result {
            eprintln!("sublaunch logs: {e}");
            return ExitCode::FAILURE;
        }
        if ended {
            return ExitCode::SUCCESS;
        }
        watcher.changed().await;
    }
}

/// Copies what was appended to each step's output since `offsets`, in step order.
fn copy_new_output(run: &Dir, offsets: &mut Vec<u64>) -> std::io::Result<()> {
    let steps = status_of(run).map_or_else(|| count_output_files(run), |s| s.step_count());
    offsets.resize(offsets.len().max(steps), 0);
    let mut stdout = std::io::stdout().lock();
    for (step, offset) in offsets.iter_mut().enumerate() {
        let Some(mut file) = run.open_read(&names::output_log(step))? else {
            continue;
        };
        file.seek(SeekFrom::Start(*offset))?;
        let mut buffer = Vec::new();
        file.read_to_end(&mut buffer)?;
        *offset += u64::try_from(buffer.len()).unwrap_or(0);
        stdout.write_all(&buffer)?;
    }
    stdout.flush()
}

/// Without a status: the number of consecutive `output-<n>.log` files from 0.
fn count_output_files(run: &Dir) -> usize {
    (0..)
        .take_while(|n| run.stat(&names::output_log(*n)).ok().flatten().is_some())
        .count()
}
