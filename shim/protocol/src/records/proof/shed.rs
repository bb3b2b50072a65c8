//! What a run sheds once it ended and its proof is final (X10, issue 34): the files that are empty
//! or scratch from then on, so that an ended run keeps only what its readers and the spec
//! need (status, proof, candidate, events, the launch plan, the step outputs, the hook's
//! records) and a trivial run costs a few blocks less.
//!
//! Shed:
//! - `control/` when empty: the inbox of requests, which nobody reads after the end (R12); a
//!   late `stop` creates it again.
//! - `runner.stdout.log` and `runner.stderr.log` when empty: the shim's own output, read only
//!   for the stderr tail of a runner death, which an ended run no longer has to explain. Kept
//!   when the run has a completion hook (`hook.json`): a hook fired by a host after the end
//!   writes its helper's stderr there.
//!
//! - `scheduled-runner.json`: the configuration of a cluster job that never started (J8). It
//!   holds the runner's environment, tokens included, and no job will read it any more.
//!
//! Kept even when empty: `output-<n>.log`, which the result names (`outputFile`).

use crate::files::dir::Dir;
use crate::files::layout::names;
use crate::records::hook;
use std::io;

/// The runner's own logs, shed when empty.
const RUNNER_LOGS: [&str; 2] = [names::RUNNER_STDOUT_LOG, names::RUNNER_STDERR_LOG];

/// Removes the empty and scratch files of the ended run `run` (see the module); returns the
/// names removed. Call it only once the status is terminal and the proof final: a run still
/// going would lose its inbox and the files its runner writes to.
pub fn shed_scratch(run: &Dir) -> io::Result<Vec<&'static str>> {
    let mut removed = Vec::new();
    if run.remove_empty_dir(names::CONTROL_DIR)? {
        removed.push(names::CONTROL_DIR);
    }
    if run.unlink_claim(names::SCHEDULED_RUNNER_CONFIG)? {
        removed.push(names::SCHEDULED_RUNNER_CONFIG);
    }
    if run.stat(hook::SPEC_FILE)?.is_none() {
        for log in RUNNER_LOGS {
            if run.stat(log)?.is_some_and(|stat| stat.st_size == 0) && run.unlink_claim(log)? {
                removed.push(log);
            }
        }
    }
    Ok(removed)
}

/// [`shed_scratch`] as a step of a finalization: a failure is a warning, never the outcome's.
pub fn shed_after_end(run: &Dir, warnings: &mut Vec<String>) {
    if let Err(e) = shed_scratch(run) {
        warnings.push(format!("Failed to remove the ended run's scratch files: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_dir() -> (tempfile::TempDir, Dir) {
        let scratch = tempfile::tempdir().unwrap();
        let run = Dir::create_private(&scratch.path().join("run")).unwrap();
        (scratch, run)
    }

    #[test]
    fn empty_logs_and_inbox_go_and_everything_else_stays() {
        let (_scratch, run) = run_dir();
        run.ensure_child(names::CONTROL_DIR).unwrap();
        for name in [names::RUNNER_STDOUT_LOG, names::RUNNER_STDERR_LOG, "output-0.log"] {
            run.touch(name).unwrap();
        }
        assert_eq!(
            shed_scratch(&run).unwrap(),
            [names::CONTROL_DIR, names::RUNNER_STDOUT_LOG, names::RUNNER_STDERR_LOG]
        );
        assert!(
            run.stat("output-0.log").unwrap().is_some(),
            "the result names the step output"
        );
        assert!(
            shed_scratch(&run).unwrap().is_empty(),
            "a second pass finds nothing to shed"
        );
    }

    #[test]
    fn what_holds_something_stays() {
        let (_scratch, run) = run_dir();
        let control = run.ensure_child(names::CONTROL_DIR).unwrap();
        control.touch(names::CONTROL_STOP).unwrap();
        std::io::Write::write_all(&mut run.open_append(names::RUNNER_STDERR_LOG).unwrap(), b"died\n").unwrap();
        assert!(shed_scratch(&run).unwrap().is_empty());
        assert!(run.stat(names::RUNNER_STDERR_LOG).unwrap().is_some());
    }

    #[test]
    fn a_run_with_a_completion_hook_keeps_its_runner_logs() {
        let (_scratch, run) = run_dir();
        run.touch(hook::SPEC_FILE).unwrap();
        run.touch(names::RUNNER_STDERR_LOG).unwrap();
        assert!(shed_scratch(&run).unwrap().is_empty());
    }
}
