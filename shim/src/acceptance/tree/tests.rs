//! With real git in temporary directories: every kind of change is found, in the user's
//! checkout and in a managed worktree, paths come through whatever bytes they hold, the
//! state key follows content alone, and no program an agent could plant runs.

use super::*;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

/// Runs the test's own git in `dir` (as the user or the agent would), isolated from the
/// machine's configuration; its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(["-c", "init.defaultBranch=master", "-c", "commit.gpgSign=false"])
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

fn write(path: &Path, text: impl AsRef<[u8]>) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

fn head(dir: &Path) -> String {
    git(dir, &["rev-parse", "HEAD"]).trim().to_owned()
}

/// `<tmp>/repo` with `files` committed.
fn repository(tmp: &Path, files: &[(&str, &str)]) -> PathBuf {
    let repo = tmp.join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    for (name, text) in files {
        write(&repo.join(name), text);
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "base"]);
    repo
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

#[test]
fn a_commit_a_change_an_untracked_file_and_a_staged_file_are_all_found() {
    let tmp = tempfile::tempdir().unwrap();
    let lines = "1\n2\n3\n";
    let repo = repository(
        tmp.path(),
        &[
            ("a", lines),
            ("b", lines),
            ("c", lines),
            ("d", lines),
            ("sub/keep", "k\n"),
            (".gitignore", "*.log\n"),
        ],
    );
    let start = start_point(Place::Checkout(&repo)).unwrap();
    assert_eq!(start.head, Some(head(&repo)));

    write(&repo.join("a"), "1\n2\n3\n4\n");
    git(&repo, &["commit", "-qam", "agent"]);
    write(&repo.join("b"), "1\n2\n3\n4\n");
    write(&repo.join("c"), "1\n2\n3\n4\n");
    git(&repo, &["add", "c"]);
    write(&repo.join("d"), "1\nX\n3\n4\n");
    write(&repo.join("sub/new file.txt"), "n\n");
    write(&repo.join("sub/debug.log"), "ignored\n");

    // From the step's directory below the top: the paths are still the repository's.
    let facts = facts(Place::Checkout(&repo.join("sub")), &start).unwrap();
    assert_eq!(facts.changed_files, strings(&["a", "b", "c", "d", "sub/new file.txt"]));
    assert_eq!(facts.staged_files, strings(&["c"]));
    assert!(facts.tests_touched.is_empty(), "{facts:?}");
    assert_eq!((facts.insertions, facts.deletions), (5, 1));
    assert_eq!(facts.head, Some(head(&repo)));
    assert_ne!(facts.head, start.head);
    assert_eq!(facts.state_key.len(), 64);
    assert_eq!(super::facts(Place::Checkout(&repo), &start).unwrap(), facts);

    // Nothing changed since a start point taken now.
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "all"]);
    let now = start_point(Place::Checkout(&repo)).unwrap();
    let quiet = super::facts(Place::Checkout(&repo), &now).unwrap();
    assert!(
        quiet.changed_files.is_empty() && quiet.staged_files.is_empty(),
        "{quiet:?}"
    );
    assert_eq!((quiet.insertions, quiet.deletions), (0, 0));
}

#[test]
fn test_files_are_counted_by_their_path() {
    for path in [
        "tests/it.rs",
        "crate/test/Main.java",
        "spec/models/user.rb",
        "src/__tests__/app.js",
        "src/test_parser.py",
        "src/parser_test.go",
        "src/app.test.ts",
        "src/app.spec.js",
        "lib/user_spec.rb",
        "test_",
    ] {
        assert!(looks_like_test(path), "{path}");
    }
    for path in [
        "src/main.rs",
        "src/contest.rs",
        "src/attest.go",
        "testing/helper.rs",
        "src/latest_version.txt",
        "Tests/Big.cs",
    ] {
        assert!(!looks_like_test(path), "{path}");
    }

    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path(), &[("src/lib.rs", "fn a() {}\n")]);
    let start = start_point(Place::Checkout(&repo)).unwrap();
    write(&repo.join("src/lib.rs"), "fn a() {}\nfn b() {}\n");
    write(&repo.join("tests/b.rs"), "#[test] fn b() {}\n");
    write(&repo.join("src/b_test.go"), "package b\n");
    let facts = facts(Place::Checkout(&repo), &start).unwrap();
    assert_eq!(
        facts.changed_files,
        strings(&["src/b_test.go", "src/lib.rs", "tests/b.rs"])
    );
    assert_eq!(facts.tests_touched, strings(&["src/b_test.go", "tests/b.rs"]));
}

#[test]
fn a_renamed_file_is_known_by_its_new_path() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(
        tmp.path(),
        &[
            ("old.txt", "some text that moves\n"),
            ("other.txt", "other text that moves\n"),
        ],
    );
    let start = start_point(Place::Checkout(&repo)).unwrap();
    git(&repo, &["mv", "old.txt", "moved.txt"]);
    git(&repo, &["commit", "-qm", "rename"]);
    git(&repo, &["mv", "other.txt", "other-moved.txt"]);
    let facts = facts(Place::Checkout(&repo), &start).unwrap();
    assert_eq!(facts.changed_files, strings(&["moved.txt", "other-moved.txt"]));
    assert_eq!(facts.staged_files, strings(&["other-moved.txt"]));
    assert_eq!((facts.insertions, facts.deletions), (0, 0));
}

#[test]
fn paths_with_spaces_line_breaks_and_bytes_that_are_not_utf8_come_through() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path(), &[("with space.txt", "s\n"), ("line\nbreak.txt", "l\n")]);
    let start = start_point(Place::Checkout(&repo)).unwrap();
    write(&repo.join("with space.txt"), "s\nt\n");
    write(&repo.join("line\nbreak.txt"), "l\nm\n");
    git(&repo, &["add", "line\nbreak.txt"]);
    let latin1 = repo.join(OsStr::from_bytes(b"caf\xe9.txt"));
    write(&latin1, "c\n");
    write(&repo.join("new\ndir/tab\there"), "t\n");

    let facts = facts(Place::Checkout(&repo), &start).unwrap();
    assert_eq!(
        facts.changed_files,
        strings(&[
            "caf\u{fffd}.txt",
            "line\nbreak.txt",
            "new\ndir/tab\there",
            "with space.txt"
        ])
    );
    assert_eq!(facts.staged_files, strings(&["line\nbreak.txt"]));
    assert_eq!((facts.insertions, facts.deletions), (2, 0));

    // The file whose name is not UTF-8 is read by its own name.
    write(&latin1, "d\n");
    let after = super::facts(Place::Checkout(&repo), &start).unwrap();
    assert_ne!(after.state_key, facts.state_key);
}

#[test]
fn the_state_key_follows_the_content_of_the_tree_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path(), &[("t", "tracked\n"), ("s", "staged\n")]);
    write(&repo.join("t"), "tracked, changed\n");
    write(&repo.join("u"), "untracked\n");
    let big: Vec<u8> = (0..1_500_000u32).map(|i| (i % 251) as u8).collect();
    write(&repo.join("big.bin"), &big);
    let start = start_point(Place::Checkout(&repo)).unwrap();
    let key = || facts(Place::Checkout(&repo), &start).unwrap().state_key;
    let first = key();
    assert_eq!(key(), first, "the same tree, the same key");

    // The same content in another clone at the same commit: the same key.
    let clone = tmp.path().join("clone");
    git(
        tmp.path(),
        &["clone", "-q", repo.to_str().unwrap(), clone.to_str().unwrap()],
    );
    for name in ["t", "u", "big.bin"] {
        std::fs::copy(repo.join(name), clone.join(name)).unwrap();
    }
    assert_eq!(facts(Place::Checkout(&clone), &start).unwrap().state_key, first);

    // One byte of an untracked file, then put back (its times have changed: only content
    // counts).
    write(&repo.join("u"), "untrackee\n");
    assert_ne!(key(), first);
    write(&repo.join("u"), "untracked\n");
    assert_eq!(key(), first);

    // One byte far into a big untracked file.
    let mut changed = big.clone();
    changed[1_400_000] ^= 1;
    write(&repo.join("big.bin"), &changed);
    assert_ne!(key(), first);
    write(&repo.join("big.bin"), &big);
    assert_eq!(key(), first);

    // One byte of a tracked file; staging it changes no content, so not the key either.
    write(&repo.join("s"), "staged!\n");
    let tracked = key();
    assert_ne!(tracked, first);
    git(&repo, &["add", "s"]);
    assert_eq!(key(), tracked);
    write(&repo.join("s"), "staged\n");
    git(&repo, &["add", "s"]);
    assert_eq!(key(), first);

    // A mode, a link and a new empty file are content too.
    std::fs::set_permissions(repo.join("u"), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_ne!(key(), first);
    std::fs::set_permissions(repo.join("u"), std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(key(), first);
    std::os::unix::fs::symlink("t", repo.join("link")).unwrap();
    let linked = key();
    assert_ne!(linked, first);
    std::fs::remove_file(repo.join("link")).unwrap();
    std::os::unix::fs::symlink("u", repo.join("link")).unwrap();
    assert_ne!(key(), linked);
    std::fs::remove_file(repo.join("link")).unwrap();
    write(&repo.join("empty"), "");
    assert_ne!(key(), first);
    std::fs::remove_file(repo.join("empty")).unwrap();

    // A new commit with the same content is another HEAD, so another key.
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "empty"]);
    assert_ne!(key(), first);
}

#[test]
fn a_directory_outside_any_repository_is_not_git() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("plain");
    std::fs::create_dir(&dir).unwrap();
    let error = start_point(Place::Checkout(&dir)).unwrap_err();
    assert_eq!(error, TreeError::NotGit { dir: dir.clone() });
    assert_eq!(
        error.to_string(),
        format!("{} is not in a git repository", dir.display())
    );
    let error = facts(Place::Checkout(&dir), &StartPoint::default()).unwrap_err();
    assert_eq!(error, TreeError::NotGit { dir: dir.clone() });

    // A directory that is not there is another failure, and says where.
    let gone = tmp.path().join("gone");
    let error = start_point(Place::Checkout(&gone)).unwrap_err();
    assert!(matches!(error, TreeError::Git { .. }), "{error}");
    assert!(error.to_string().contains(&gone.display().to_string()), "{error}");

    // So is a managed worktree whose repository is gone.
    let step = StepWorktree {
        path: dir.to_str().unwrap().to_owned(),
        branch: "sublaunch/r/s".to_owned(),
        base_commit: "0".repeat(40),
        repository: gone.to_str().unwrap().to_owned(),
    };
    let error = start_point(Place::Worktree(&step)).unwrap_err();
    assert!(
        matches!(&error, TreeError::Git { what, .. } if what == "locating the worktree"),
        "{error}"
    );
    assert!(error.to_string().contains(&dir.display().to_string()), "{error}");

    // A start point that is no commit id never reaches a command line.
    let repo = repository(tmp.path(), &[("a", "a\n")]);
    let bad = StartPoint {
        head: Some("--output=/tmp/x".to_owned()),
    };
    let error = facts(Place::Checkout(&repo), &bad).unwrap_err();
    assert!(error.to_string().contains("is no commit id"), "{error}");
}

#[test]
fn an_unborn_branch_starts_from_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    let start = start_point(Place::Checkout(&repo)).unwrap();
    assert_eq!(start, StartPoint { head: None });

    write(&repo.join("staged"), "s\n");
    git(&repo, &["add", "staged"]);
    let unborn = facts(Place::Checkout(&repo), &start).unwrap();
    assert_eq!(unborn.head, None);
    assert_eq!(unborn.changed_files, strings(&["staged"]));
    assert_eq!(unborn.staged_files, strings(&["staged"]));
    assert_eq!(unborn.insertions, 1);
    assert_eq!(unborn.state_key.len(), 64);

    git(&repo, &["commit", "-qm", "first"]);
    write(&repo.join("untracked"), "u\n");
    let born = facts(Place::Checkout(&repo), &start).unwrap();
    assert_eq!(born.head, Some(head(&repo)));
    assert_eq!(born.changed_files, strings(&["staged", "untracked"]));
    assert!(born.staged_files.is_empty(), "{born:?}");
    assert_eq!(born.insertions, 1);
}

/// A program that notes each time it runs in `<tmp>/PWNED` (and passes its input through,
/// as a filter would).
fn trap(tmp: &Path) -> PathBuf {
    let script = tmp.join("trap.sh");
    write(
        &script,
        format!("#!/bin/sh\necho \"$0 $*\" >> '{}/PWNED'\nexec cat\n", tmp.display()),
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// Makes `file`'s modification time old, so that git must read its content again (through
/// its filter, were one to run).
fn make_stat_dirty(file: &Path) {
    std::fs::File::options()
        .write(true)
        .open(file)
        .unwrap()
        .set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000))
        .unwrap();
}

#[test]
fn no_fsmonitor_filter_or_diff_program_the_agent_could_plant_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path(), &[("a", "a\n"), ("b", "b\n")]);
    let wt = tmp.path().join("wt");
    git(&repo, &["worktree", "add", "-q", "-b", "step", wt.to_str().unwrap()]);
    let step = StepWorktree {
        path: wt.to_str().unwrap().to_owned(),
        branch: "step".to_owned(),
        base_commit: head(&repo),
        repository: repo.to_str().unwrap().to_owned(),
    };
    let checkout_start = start_point(Place::Checkout(&repo)).unwrap();
    let worktree_start = start_point(Place::Worktree(&step)).unwrap();

    let trap = trap(tmp.path());
    let trap = trap.to_str().unwrap();
    for (key, value) in [
        ("core.fsmonitor", trap.to_owned()),
        ("diff.external", trap.to_owned()),
        ("filter.evil.clean", format!("{trap} clean")),
        ("filter.evil.smudge", format!("{trap} smudge")),
        ("filter.evil.required", "true".to_owned()),
        ("diff.evil.textconv", format!("{trap} textconv")),
        ("diff.evil.command", format!("{trap} command")),
    ] {
        git(&repo, &["config", key, &value]);
    }
    for dir in [&repo, &wt] {
        write(&dir.join(".gitattributes"), "* filter=evil diff=evil\n");
        write(&dir.join("a"), "a changed\n");
        write(&dir.join("new"), "n\n");
        make_stat_dirty(&dir.join("b"));
    }
    let pwned = tmp.path().join("PWNED");

    let checkout = facts(Place::Checkout(&repo), &checkout_start).unwrap();
    let worktree = facts(Place::Worktree(&step), &worktree_start).unwrap();
    assert!(
        !pwned.exists(),
        "{}",
        std::fs::read_to_string(&pwned).unwrap_or_default()
    );
    // They read the trees all the same: `b`, unchanged, read unfiltered, is not changed.
    for facts in [&checkout, &worktree] {
        assert_eq!(
            facts.changed_files,
            strings(&[".gitattributes", "a", "new"]),
            "{facts:?}"
        );
        assert_eq!((facts.insertions, facts.deletions), (1, 1));
    }

    // The control: the user's own git, in the same checkout, runs the trap (the
    // fsmonitor, the filter, the diff driver).
    for args in [["status", "--porcelain"], ["diff", "a"]] {
        let _ = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .stdin(Stdio::null())
            .output()
            .unwrap();
    }
    let ran = std::fs::read_to_string(&pwned).unwrap_or_default();
    assert!(ran.contains("trap.sh 2 "), "the control ran no fsmonitor: {ran:?}");
    assert!(ran.contains("trap.sh clean"), "the control ran no filter: {ran:?}");
    assert!(
        ran.contains("trap.sh command a "),
        "the control ran no diff driver: {ran:?}"
    );
}

#[test]
fn a_managed_worktree_is_read_through_the_repositorys_record_of_it() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path(), &[("a", "a\n")]);
    let base = head(&repo);
    let wt = tmp.path().join("wt dir");
    git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "sublaunch/run/step",
            wt.to_str().unwrap(),
        ],
    );
    let step = StepWorktree {
        path: wt.to_str().unwrap().to_owned(),
        branch: "sublaunch/run/step".to_owned(),
        base_commit: base.clone(),
        repository: repo.to_str().unwrap().to_owned(),
    };
    let start = start_point(Place::Worktree(&step)).unwrap();
    assert_eq!(start.head, Some(base.clone()));

    write(&wt.join("src/lib.rs"), "pub fn f() {}\n");
    git(&wt, &["add", "src/lib.rs"]);
    git(&wt, &["commit", "-qm", "agent"]);
    let agent_head = head(&wt);
    write(&wt.join("a"), "a\nmore\n");
    write(&wt.join("tests/it.rs"), "#[test] fn it() {}\n");
    // What the user does in the main checkout meanwhile is no part of the step.
    write(&repo.join("main-only"), "m\n");
    // The agent points the worktree's `.git` file elsewhere: it is never read.
    write(&wt.join(".git"), "gitdir: /nonexistent/elsewhere\n");

    let facts = facts(Place::Worktree(&step), &start).unwrap();
    assert_eq!(facts.changed_files, strings(&["a", "src/lib.rs", "tests/it.rs"]));
    assert_eq!(facts.tests_touched, strings(&["tests/it.rs"]));
    assert!(facts.staged_files.is_empty(), "{facts:?}");
    assert_eq!(facts.head, Some(agent_head));
    assert_eq!((facts.insertions, facts.deletions), (2, 0));
    assert_eq!(
        super::facts(Place::Worktree(&step), &start).unwrap().state_key,
        facts.state_key
    );
}

#[test]
fn git_output_is_read_as_git_writes_it() {
    let out = b"# branch.oid (initial)\0# branch.head master\0\
        1 A. N... 000000 100644 100644 0000 1111 new file\0\
        1 .M N... 100644 100644 100644 1111 1111 edited\0\
        2 R. N... 100644 100644 100644 1111 1111 R100 to\0from\0\
        u UU N... 100644 100644 100644 100644 1 2 3 both\0\
        ? dir/\0? x y\0";
    let status = Status::parse(out);
    assert_eq!(status.head, None);
    assert_eq!(
        sorted_names(status.tracked),
        strings(&["both", "edited", "new file", "to"])
    );
    assert_eq!(sorted_names(status.staged), strings(&["both", "new file", "to"]));
    assert_eq!(sorted_names(status.untracked), strings(&["dir/", "x y"]));
    assert_eq!(shortstat(" 3 files changed, 7 insertions(+), 1 deletion(-)\n"), (7, 1));
    assert_eq!(shortstat(" 1 file changed, 2 deletions(-)\n"), (0, 2));
    assert_eq!(shortstat(""), (0, 0));
    assert!(is_oid(&"a".repeat(40)) && is_oid(&"0".repeat(64)));
    assert!(!is_oid("HEAD") && !is_oid(&"A".repeat(40)) && !is_oid(&"a".repeat(41)));
}
