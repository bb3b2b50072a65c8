//! Which branches of a run may land (G82): those of the steps that worked in a managed
//! worktree, in step order, each with the commit its step ended at — or, for the rest, why
//! not (the step failed, its acceptance was rejected, it committed nothing). Steps that
//! shared one worktree are one branch, as its last step left it.

use super::IntegrateError;
use super::gate::Command;
use super::report::Outcome;
use std::path::Path;
use sublaunch_protocol::records::results::{ResultPayload, StepResult};
use sublaunch_protocol::records::step_record::step_label;

/// One branch of the run.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The step, as messages name it (`step 1.2 writer`).
    pub label: String,
    /// The request step (0-based).
    pub step_index: Option<u32>,
    /// The task of a parallel group (0-based).
    pub task_index: Option<u32>,
    /// Its agent.
    pub agent: String,
    /// The branch (`sublaunch/<run>/<name>`).
    pub branch: String,
    /// The commit the worktree was made at.
    pub base: String,
    /// The commit the step ended at, when it committed anything.
    pub commit: Option<String>,
    /// Why it may not land (the step failed, its acceptance was rejected, nothing committed).
    pub refusal: Option<Outcome>,
    /// The step's directory relative to the worktree's top (`.` at the top).
    pub dir: String,
    /// The commands its acceptance contract verified, which gate its merge.
    pub gates: Vec<Command>,
}

/// The branches of a run, and the repository and base they share.
#[derive(Clone, Debug)]
pub struct Candidates {
    /// The repository's main working tree.
    pub repository: String,
    /// The commit the first worktree was made at (the run's base).
    pub base: String,
    /// In step order.
    pub candidates: Vec<Candidate>,
}

impl Candidates {
    /// The branches of the run whose result is `payload`.
    pub fn of(payload: &ResultPayload) -> Result<Self, IntegrateError> {
        let mut out: Vec<Candidate> = Vec::new();
        let mut repository: Option<String> = None;
        for step in &payload.results {
            let Some(worktree) = &step.facts.worktree else { continue };
            if worktree.branch.is_empty() {
                continue;
            }
            match &repository {
                None => repository = Some(worktree.repository.clone()),
                Some(first) if *first != worktree.repository => {
                    return Err(IntegrateError::Repositories {
                        run_id: payload.id.clone(),
                        first: first.clone(),
                        second: worktree.repository.clone(),
                    });
                }
                Some(_) => {}
            }
            let candidate = candidate(step);
            // A step that continued in the worktree of the step before it carries that
            // step's work on: the branch is one candidate, as its last step left it.
            match out.iter_mut().find(|c| c.branch == candidate.branch) {
                Some(earlier) => {
                    let commit = candidate.commit.clone().or_else(|| earlier.commit.clone());
                    // "Nothing committed" of one step is not the branch's, when another did.
                    let keep = |r: &Option<Outcome>| {
                        r.clone()
                            .filter(|r| commit.is_none() || !matches!(r, Outcome::NothingToLand { .. }))
                    };
                    *earlier = Candidate {
                        refusal: keep(&candidate.refusal).or_else(|| keep(&earlier.refusal)),
                        gates: merged_gates(&earlier.gates, &candidate.gates),
                        commit,
                        ..candidate
                    };
                }
                None => out.push(candidate),
            }
        }
        let (Some(repository), Some(first)) = (repository, out.first()) else {
            return Err(IntegrateError::NoWorktrees(payload.id.clone()));
        };
        Ok(Self {
            repository,
            base: first.base.clone(),
            candidates: out,
        })
    }
}

fn candidate(step: &StepResult) -> Candidate {
    let worktree = step.facts.worktree.as_ref().expect("a worktree step");
    let label = match step.facts.step_index {
        Some(index) => step_label(index, step.facts.task_index, &step.agent),
        None => format!("step 1 {}", step.agent),
    };
    let commit = worktree
        .head_commit
        .clone()
        .filter(|_| worktree.commit_count > 0)
        .or_else(|| worktree.commits.last().map(|c| c.sha.clone()));
    let dir = relative(&worktree.path, &worktree.cwd);
    let refusal = if !step.success {
        let why = step.error.as_deref().unwrap_or("it did not complete");
        Some(Outcome::NotAccepted {
            reason: format!("the step failed: {}", first_line(why)),
        })
    } else if let Some(record) = step.facts.acceptance.as_ref().filter(|r| !r.reached()) {
        Some(Outcome::NotAccepted {
            reason: format!("its acceptance is {}", record.summary()),
        })
    } else if commit.is_none() {
        let left = worktree.uncommitted.changed_files + worktree.uncommitted.untracked_files;
        Some(Outcome::NothingToLand {
            reason: if left > 0 {
                format!(
                    "nothing was committed ({left} files changed and left uncommitted in {})",
                    worktree.path
                )
            } else {
                "nothing was committed".to_owned()
            },
        })
    } else {
        None
    };
    let gates = step
        .facts
        .acceptance
        .iter()
        .filter(|record| record.explicit)
        .flat_map(|record| &record.verify)
        .map(|verify| Command {
            command: verify.command.clone(),
            dir: relative(&worktree.path, &verify.cwd),
        })
        .collect();
    Candidate {
        label,
        step_index: step.facts.step_index,
        task_index: step.facts.task_index,
        agent: step.agent.clone(),
        branch: worktree.branch.clone(),
        base: worktree.base_commit.clone(),
        commit,
        refusal,
        dir,
        gates,
    }
}

fn merged_gates(earlier: &[Command], later: &[Command]) -> Vec<Command> {
    let mut out = earlier.to_vec();
    for command in later {
        if !out.contains(command) {
            out.push(command.clone());
        }
    }
    out
}

/// `dir` relative to `top` (`.` when it is the top, or not under it).
fn relative(top: &str, dir: &str) -> String {
    match Path::new(dir).strip_prefix(top) {
        Ok(rest) if !rest.as_os_str().is_empty() => rest.display().to_string(),
        _ => ".".to_owned(),
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text).trim()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sublaunch_protocol::records::step_record::{CommitLine, WorktreeReport};

    fn step(index: u32, task: Option<u32>, branch: &str, commits: usize, success: bool) -> StepResult {
        let mut step = StepResult {
            agent: "writer".into(),
            success,
            ..StepResult::default()
        };
        step.facts.step_index = Some(index);
        step.facts.task_index = task;
        step.facts.worktree = Some(WorktreeReport {
            path: "/wt/x".into(),
            cwd: "/wt/x/sub".into(),
            branch: branch.into(),
            repository: "/repo".into(),
            base_commit: "base".into(),
            head_commit: Some(format!("{branch}-head")),
            commits: (0..commits)
                .map(|n| CommitLine {
                    sha: format!("c{n}"),
                    subject: String::new(),
                })
                .collect(),
            commit_count: commits as u64,
            ..WorktreeReport::default()
        });
        step
    }

    fn payload(results: Vec<StepResult>) -> ResultPayload {
        serde_json::from_value(serde_json::json!({
            "lifecycleArtifactVersion": 3, "id": "r1", "agent": "writer", "mode": "parallel",
            "success": true, "state": "complete", "summary": "", "results": [], "exitCode": 0,
            "timestamp": 0, "durationMs": 0, "cwd": "/", "asyncDir": "/", "sessionId": "s"
        }))
        .map(|mut p: ResultPayload| {
            p.results = results;
            p
        })
        .expect("a payload")
    }

    #[test]
    fn failed_steps_and_empty_branches_are_kept_with_the_reason_they_do_not_land() {
        let found = Candidates::of(&payload(vec![
            step(0, Some(0), "b1", 1, true),
            step(0, Some(1), "b2", 1, false),
            step(0, Some(2), "b3", 0, true),
        ]))
        .expect("candidates");
        assert_eq!(found.candidates.len(), 3);
        assert!(found.candidates[0].refusal.is_none());
        assert_eq!(found.candidates[0].commit.as_deref(), Some("b1-head"));
        assert_eq!(found.candidates[0].dir, "sub");
        assert!(matches!(found.candidates[1].refusal, Some(Outcome::NotAccepted { .. })));
        assert!(matches!(
            found.candidates[2].refusal,
            Some(Outcome::NothingToLand { .. })
        ));
        assert_eq!(found.candidates[1].label, "step 1.2 writer");
    }

    #[test]
    fn steps_sharing_a_worktree_are_one_branch_as_the_last_left_it() {
        let mut second = step(1, None, "b1", 2, true);
        second.facts.worktree.as_mut().expect("worktree").head_commit = Some("later".into());
        let found = Candidates::of(&payload(vec![step(0, None, "b1", 1, true), second])).expect("candidates");
        assert_eq!(found.candidates.len(), 1);
        assert_eq!(found.candidates[0].commit.as_deref(), Some("later"));
    }

    #[test]
    fn a_run_without_worktrees_or_across_repositories_is_refused() {
        let mut plain = step(0, None, "b1", 1, true);
        plain.facts.worktree = None;
        assert!(matches!(
            Candidates::of(&payload(vec![plain])),
            Err(IntegrateError::NoWorktrees(_))
        ));
        let mut other = step(0, Some(1), "b2", 1, true);
        other.facts.worktree.as_mut().expect("worktree").repository = "/elsewhere".into();
        assert!(matches!(
            Candidates::of(&payload(vec![step(0, Some(0), "b1", 1, true), other])),
            Err(IntegrateError::Repositories { .. })
        ));
    }
}
