//! With real git: a worktree is found by the repository's record of it even after its `.git`
//! file was rewritten, and no program the repository's configuration or an agent's
//! `.gitattributes` names runs — while the same commands in the user's own mode do run them.

use super::*;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;

/// Runs plain git (the test's own, as a user would) in `dir`; its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `command` with `args`; its stdout, or its stderr as the error.
fn run(mut command: Command, args: &[&str]) -> Result<String, String> {
    let out = command.args(args).stdin(Stdio::null()).output().unwrap();
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The repository of `checkout`, located as the host and the shim do.
fn located(checkout: &Path) -> Repository {
    let output = run(Repository::query("git", checkout), &[]).unwrap();
    let mut repository = Repository::parse(checkout, &output).unwrap();
    let keys = run(command("git", At::Repository(&repository)), Repository::FILTERS_QUERY).unwrap();
    repository.set_filters(&keys);
    repository
}

fn locate(repository: &Path, work_tree: &Path) -> LinkedWorktree {
    located(repository).worktree(work_tree).unwrap()
}

/// `<tmp>/repo` with one commit (`a`), and a worktree of it at `<tmp>/wt` on branch `wt`.
fn repository(tmp: &Path, format: &str) -> (PathBuf, PathBuf) {
    let repo = tmp.join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(
        &repo,
        &[
            "init",
            "-q",
            "--initial-branch=master",
            &format!("--object-format={format}"),
        ],
    );
    std::fs::write(repo.join("a"), "a\n").unwrap();
    git(&repo, &["add", "a"]);
    git(&repo, &["commit", "-qm", "base"]);
    let wt = tmp.join("wt");
    git(&repo, &["worktree", "add", "-q", "-b", "wt", wt.to_str().unwrap()]);
    (repo, wt)
}

#[test]
fn a_worktree_is_found_by_the_repositorys_record_and_its_dot_git_file_is_never_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, wt) = repository(tmp.path(), "sha1");
    std::fs::write(wt.join("c"), "c\n").unwrap();
    git(&wt, &["add", "c"]);
    git(&wt, &["commit", "-qm", "agent"]);
    // The agent points its `.git` at a copy of the repository, still on the base branch.
    let evil = tmp.path().join("evil");
    git(
        tmp.path(),
        &["clone", "-q", "--bare", repo.to_str().unwrap(), evil.to_str().unwrap()],
    );
    git(&evil, &["config", "core.bare", "false"]);
    std::fs::write(wt.join(".git"), format!("gitdir: {}\n", evil.display())).unwrap();
    assert_eq!(git(&wt, &["symbolic-ref", "--short", "HEAD"]).trim(), "master");

    let worktree = locate(&repo, &wt);
    assert_eq!(
        worktree.git_dir,
        std::fs::canonicalize(repo.join(".git/worktrees/wt")).unwrap()
    );
    assert_eq!(worktree.work_tree, wt);
    let at = At::Worktree(&worktree);
    assert_eq!(
        run(command("git", at), &["symbolic-ref", "--short", "HEAD"])
            .unwrap()
            .trim(),
        "wt"
    );
    let subjects = run(command("git", at), &["log", "--format=%s", "master..HEAD"]).unwrap();
    assert_eq!(subjects, "agent\n");
    assert_eq!(at.dir(), wt);

    // A directory the repository has no record of is refused, naming both.
    let stray = tmp.path().join("stray");
    std::fs::create_dir(&stray).unwrap();
    let error = located(&repo).worktree(&stray).unwrap_err();
    assert!(matches!(error, LocateError::NotRegistered { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains(&format!("no record of the worktree {}", stray.display()))
    );
}

/// A program that notes each time it runs in `<tmp>/PWNED` (and passes its input through,
/// as a filter or textconv would).
fn trap(tmp: &Path) -> PathBuf {
    let script = tmp.join("trap.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$0 $*\" >> {}/PWNED\nexec cat\n", tmp.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// Everything the repository at `repo` (configuration and hooks, both in its common
/// directory) and the agent's worktree `wt` (attributes) can name to run, pointed at `trap`.
fn plant(repo: &Path, wt: &Path, trap: &Path) {
    let trap = trap.to_str().unwrap();
    let hooks = repo.join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    for hook in ["reference-transaction", "post-checkout", "post-index-change"] {
        std::os::unix::fs::symlink(trap, hooks.join(hook)).unwrap();
    }
    for (key, value) in [
        ("core.fsmonitor", trap.to_owned()),
        ("core.hooksPath", hooks.to_str().unwrap().to_owned()),
        ("diff.external", trap.to_owned()),
        ("filter.evil.clean", format!("{trap} clean")),
        ("filter.evil.smudge", format!("{trap} smudge")),
        ("diff.evil.textconv", format!("{trap} textconv")),
        ("diff.evil.command", format!("{trap} command")),
        ("log.showSignature", "true".to_owned()),
        ("gpg.program", trap.to_owned()),
    ] {
        git(repo, &["config", key, &value]);
    }
    std::fs::write(wt.join(".gitattributes"), "* filter=evil diff=evil\n").unwrap();
}

/// The commands sublaunch runs over a worktree and its repository, at `worktree` and
/// `repository`; each result (some fail, which is fine: only what ran matters).
fn sublaunch_commands(worktree: At<'_>, repository: At<'_>, wt: &Path) -> Vec<Result<String, String>> {
    // Stat-dirty with unchanged content: git must read the file again, through its filter.
    let touch = || {
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        std::fs::File::options()
            .write(true)
            .open(wt.join("a"))
            .unwrap()
            .set_modified(old)
            .unwrap();
    };
    let mut results = Vec::new();
    touch();
    results.push(run(
        command("git", worktree),
        &["status", "--porcelain=v2", "--branch", "--ignore-submodules=dirty"],
    ));
    touch();
    results.push(run(
        command("git", worktree),
        &["diff", "--no-ext-diff", "--no-textconv", "--shortstat", "HEAD"],
    ));
    results.push(run(command("git", worktree), &["log", "--format=%H%x1f%s", "HEAD"]));
    results.push(run(command("git", repository), &["branch", "other"]));
    results.push(run(command("git", repository), &["branch", "-D", "other"]));
    touch();
    results.push(run(
        command("git", repository),
        &["worktree", "remove", wt.to_str().unwrap()],
    ));
    results
}

#[test]
fn no_program_the_repository_or_the_agents_attributes_name_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, wt) = repository(tmp.path(), "sha1");
    let trap = trap(tmp.path());
    plant(&repo, &wt, &trap);
    let pwned = tmp.path().join("PWNED");

    // The control: the same commands as the user's own git runs them start the trap.
    let results = sublaunch_commands(At::UserCheckout(&wt), At::UserCheckout(&repo), &wt);
    let ran = std::fs::read_to_string(&pwned).unwrap_or_default();
    let fsmonitor = format!("{} 2 ", trap.display());
    for what in [" clean", "/reference-transaction ", fsmonitor.as_str()] {
        assert!(ran.contains(what), "the control ran no {what:?}: {ran}\n{results:?}");
    }
    std::fs::remove_file(&pwned).unwrap();

    let repository = located(&repo);
    assert_eq!(repository.filters, ["evil"]);
    let worktree = repository.worktree(&wt).unwrap();
    let results = sublaunch_commands(At::Worktree(&worktree), At::Repository(&repository), &wt);
    assert!(
        !pwned.exists(),
        "{}\n{results:?}",
        std::fs::read_to_string(&pwned).unwrap_or_default()
    );
    // The emptied drivers hold alone (all that guards a git older than 2.40, which ignores
    // the empty tree's attributes).
    std::fs::File::options()
        .write(true)
        .open(wt.join("a"))
        .unwrap()
        .set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(999_999_999))
        .unwrap();
    let mut status = command("git", At::Worktree(&worktree));
    status.env_remove("GIT_ATTR_SOURCE");
    run(status, &["status", "--porcelain"]).unwrap();
    assert!(
        !pwned.exists(),
        "{}",
        std::fs::read_to_string(&pwned).unwrap_or_default()
    );
    // They did their work: status and diff saw the unchanged file as unchanged, and the
    // worktree, whose only change is an untracked file, was not removed.
    assert!(
        results[0]
            .as_ref()
            .unwrap()
            .contains("# branch.head wt\n? .gitattributes"),
        "{results:?}"
    );
    assert_eq!(results[1].as_ref().unwrap(), "");
    assert!(results[4].is_ok(), "{results:?}");
    assert!(
        results[5]
            .as_ref()
            .unwrap_err()
            .contains("contains modified or untracked files")
    );
}

#[test]
fn a_sha256_repository_gets_its_own_empty_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, wt) = repository(tmp.path(), "sha256");
    let worktree = locate(&repo, &wt);
    let status = run(
        command("git", At::Worktree(&worktree)),
        &["status", "--porcelain=v2", "--branch"],
    );
    assert!(
        status.as_ref().is_ok_and(|s| s.contains("# branch.head wt")),
        "{status:?}"
    );
}

#[test]
fn what_git_says_about_a_repository_is_read_as_it_says_it() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join(".git")).unwrap();
    let old_git = Repository::parse(tmp.path(), ".git\n--show-object-format\n").unwrap();
    assert_eq!(old_git.empty_tree, EMPTY_TREE_SHA1);
    assert_eq!(
        old_git.common_dir,
        std::fs::canonicalize(tmp.path().join(".git")).unwrap()
    );
    let mut repository = old_git;
    repository.set_filters(
        "core.bare\0filter.lfs.clean\0filter.lfs.required\0filter.a.b.process\0filter.x=y.clean\0filter.clean\0",
    );
    assert_eq!(repository.filters, ["a.b", "lfs"]);
    let error = Repository::parse(tmp.path(), "").unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("git names no repository for {}", tmp.path().display())
    );
}
