//! `integrate --ff` (G82): the repository's checked-out branch moved to the integration
//! branch — only when the checkout has no uncommitted changes to tracked files and the move
//! is a fast-forward, so nothing of the user's is merged, rewritten or lost. Run like every
//! other command of an integration, with no program of the repository's configuration.

use super::report::FastForward;
use crate::worktrees::Git;
use sublaunch_protocol::git::{At, Repository};

/// Fast-forwards the checkout of `repository` to `head`, or says why not.
pub fn run(git: &Git, repository: &Repository, head: Option<&str>) -> FastForward {
    let at = At::Repository(repository);
    let refused = |branch: Option<String>, reason: String| FastForward {
        done: false,
        branch,
        reason: Some(reason),
    };
    let Some(head) = head else {
        return refused(None, "nothing landed".into());
    };
    let branch = match git.ask(at, &["symbolic-ref", "--quiet", "--short", "HEAD"]) {
        Ok(Some(branch)) => branch.trim().to_owned(),
        Ok(None) => return refused(None, "the checkout is detached; there is no branch to move".into()),
        Err(e) => return refused(None, e.to_string()),
    };
    let current = match git.run(at, &["rev-parse", "--verify", "HEAD^{commit}"]) {
        Ok(current) => current.trim().to_owned(),
        Err(e) => return refused(Some(branch), e.to_string()),
    };
    if current == head {
        return FastForward {
            done: true,
            branch: Some(branch),
            reason: None,
        };
    }
    match git.run_status(at, &["merge-base", "--is-ancestor", &current, head]) {
        Ok((true, _)) => {}
        Ok((false, _)) => {
            return refused(
                Some(branch.clone()),
                format!("{branch} has commits the integration branch does not (not a fast-forward); merge it yourself"),
            );
        }
        Err(e) => return refused(Some(branch), e.to_string()),
    }
    match git.run(at, &["status", "--porcelain", "--untracked-files=no"]) {
        Ok(changes) if changes.trim().is_empty() => {}
        Ok(changes) => {
            let first: Vec<&str> = changes.lines().take(3).map(str::trim).collect();
            return refused(
                Some(branch),
                format!(
                    "the checkout has uncommitted changes ({}); commit or stash them first",
                    first.join(", ")
                ),
            );
        }
        Err(e) => return refused(Some(branch), e.to_string()),
    }
    match git.run(at, &["merge", "--ff-only", "--quiet", head]) {
        Ok(_) => FastForward {
            done: true,
            branch: Some(branch),
            reason: None,
        },
        Err(e) => refused(Some(branch), e.to_string()),
    }
}
