use super::*;
use crate::os::Os;
use crate::os::clock::ManualClock;
use crate::os::random::SequenceRandom;
use crate::os::retry::{RecordingSleeper, RetryPolicy};
use crate::testing::{Op, ScriptedFs, temp_files};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::sync::Arc;

fn os_with(fs: Arc<ScriptedFs>) -> Os {
    Os::system().with_files(fs)
}

#[test]
fn a1_write_replaces_atomically_with_mode_0600() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = Dir::create_private(&tmp.path().join("a/b")).unwrap();
    dir.write("doc.json", b"one", Durability::Durable).unwrap();
    dir.write("doc.json", b"two", Durability::Atomic).unwrap();
    let path = tmp.path().join("a/b/doc.json");
    assert_eq!(std::fs::read(&path).unwrap(), b"two");
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::metadata(tmp.path().join("a/b")).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path().join("a/b")).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temp file is left behind");
}

#[test]
fn f38_a5_a_symlink_at_the_final_path_is_replaced_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let dir = Dir::create_private(&tmp.path().join("run")).unwrap();
    for name in ["status.json", "process-terminal.json"] {
        std::os::unix::fs::symlink(&victim, tmp.path().join("run").join(name)).unwrap();
        dir.write(name, b"{}", Durability::Durable).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        let meta = std::fs::symlink_metadata(tmp.path().join("run").join(name)).unwrap();
        assert!(meta.file_type().is_file(), "{name} is a regular file now");
        assert_eq!(meta.mode() & 0o777, 0o600);
    }
}

#[test]
fn a2_temp_names_stay_within_255_bytes() {
    let long = "x".repeat(250);
    let name = temp_name(&long, 4_194_304, 1_795_999_088_717, u64::MAX);
    assert!(name.len() <= 255, "{} bytes", name.len());
    assert!(name.starts_with('.') && name.ends_with(".tmp"));
    assert_eq!(
        temp_name("status.json", 7, 1, 0xab),
        ".status.json.7.1.00000000000000ab.tmp"
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = Dir::open(tmp.path()).unwrap();
    dir.write(&long, b"1", Durability::Atomic).unwrap();
    assert_eq!(std::fs::read(tmp.path().join(&long)).unwrap(), b"1");
}

#[test]
fn a2_temp_names_parse_back() {
    let name = temp_name("status.json", 4242, 1_000, 0xdead_beef);
    let parsed = parse_temp_name(OsStr::new(&name)).unwrap();
    assert_eq!(
        parsed,
        TempName {
            target: "status.json".into(),
            pid: 4242,
            epoch_ms: 1000
        }
    );
    assert_eq!(
        parse_temp_name(OsStr::new(".status.json.12.1795999088717.k3j2x9.tmp"))
            .unwrap()
            .pid,
        12,
        "upstream base-36 suffix"
    );
    for bad in ["status.json", ".x.tmp", ".a.b.c.tmp", ".a.pid.1.r.tmp", "..1.2.r.tmp"] {
        assert_eq!(parse_temp_name(OsStr::new(bad)), None, "{bad}");
    }
}

#[test]
fn a11_read_distinguishes_absent_from_present() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = Dir::create_private(tmp.path()).unwrap();
    assert_eq!(dir.read("missing.json").unwrap(), None);
    dir.write("x.json", b"1", Durability::Atomic).unwrap();
    assert_eq!(dir.read("x.json").unwrap().as_deref(), Some(&b"1"[..]));
}

#[test]
fn f37_a3_planted_symlink_at_the_predictable_temp_name_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let os = Os::system()
        .with_pid(4242)
        .with_clock(Arc::new(ManualClock::new(1_795_999_000_000)))
        .with_random(Arc::new(SequenceRandom::new([1, 2])))
        .shared();
    let predicted = temp_name("status.json", 4242, 1_795_999_000_000, 1);
    assert_eq!(predicted, ".status.json.4242.1795999000000.0000000000000001.tmp");
    std::os::unix::fs::symlink(&victim, run.join(&predicted)).unwrap();
    let dir = Dir::open_with(&run, os).unwrap();
    dir.write("status.json", b"{\"state\":\"running\"}", Durability::Atomic)
        .unwrap();
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"precious",
        "the link target is byte-identical"
    );
    let meta = std::fs::symlink_metadata(run.join("status.json")).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(meta.mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::read(run.join("status.json")).unwrap(),
        b"{\"state\":\"running\"}"
    );
    assert!(
        std::fs::symlink_metadata(run.join(&predicted))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the planted link is left alone"
    );
}

#[test]
fn a3_gives_up_after_eight_colliding_names() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"v").unwrap();
    let os = Os::system()
        .with_pid(1)
        .with_clock(Arc::new(ManualClock::new(5)))
        .with_random(Arc::new(SequenceRandom::new(1..=8)))
        .shared();
    for r in 1..=8u64 {
        std::os::unix::fs::symlink(&victim, run.join(temp_name("status.json", 1, 5, r))).unwrap();
    }
    let dir = Dir::open_with(&run, os).unwrap();
    let error = dir.write("status.json", b"{}", Durability::Atomic).unwrap_err();
    assert!(
        error.to_string().starts_with("EEXIST") || error.to_string().starts_with("ELOOP"),
        "{error}"
    );
    assert!(!run.join("status.json").exists());
    assert_eq!(std::fs::read(&victim).unwrap(), b"v");
}

#[test]
fn a4_durable_writes_fsync_file_then_dir_and_atomic_writes_none() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = ScriptedFs::new();
    let dir = Dir::open_with(tmp.path(), os_with(fs.clone()).shared()).unwrap();
    dir.write("a.json", b"1", Durability::Atomic).unwrap();
    assert_eq!(fs.calls(Op::Fsync), 0);
    dir.write("b.json", b"1", Durability::Durable).unwrap();
    assert_eq!(fs.calls(Op::Fsync), 2);
}

/// A4: staged writes fsync their files, and the durable write after them in the same
/// directory makes every name durable with one directory fsync.
#[test]
fn a4_staged_writes_share_the_next_directory_fsync() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = ScriptedFs::new();
    let dir = Dir::open_with(tmp.path(), os_with(fs.clone()).shared()).unwrap();
    dir.write("status.json", b"1", Durability::Durable.staged()).unwrap();
    assert_eq!(fs.calls(Op::Fsync), 1, "the file only");
    let path = std::fs::canonicalize(tmp.path()).unwrap();
    assert!(fs.durable().is_empty(), "a power loss now may lose the new name");
    dir.write("proceed.json", b"1", Durability::Durable).unwrap();
    assert_eq!(fs.calls(Op::Fsync), 3);
    let durable = fs.durable();
    assert!(durable.contains(&path.join("status.json")) && durable.contains(&path.join("proceed.json")));
    assert_eq!(
        Durability::Atomic.staged(),
        Durability::Atomic,
        "an atomic write stays atomic"
    );
}

#[test]
fn f15_a4_fsync_failure_means_the_file_never_becomes_visible() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = ScriptedFs::new();
    fs.fail_next(Op::Fsync, [Errno::IO]);
    let dir = Dir::open_with(tmp.path(), os_with(fs.clone()).shared()).unwrap();
    let error = dir
        .write("runner-startup-proceed.json", b"{}", Durability::Durable)
        .unwrap_err();
    assert!(error.to_string().starts_with("EIO"), "{error}");
    assert_eq!(fs.calls(Op::Rename), 0, "rename only after a successful fsync");
    assert!(!tmp.path().join("runner-startup-proceed.json").exists());
    assert!(temp_files(tmp.path()).is_empty());
}

#[test]
fn a8_no_temp_left_after_a_failure_at_each_step() {
    for (op, errno) in [
        (Op::Write, Errno::NOSPC),
        (Op::Fsync, Errno::IO),
        (Op::Rename, Errno::ACCESS),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("status.json"), b"old").unwrap();
        let fs = ScriptedFs::new();
        let dir = Dir::open_with(tmp.path(), os_with(fs.clone()).shared()).unwrap();
        fs.fail_next(op, [errno]);
        let error = dir.write("status.json", b"new", Durability::Durable).unwrap_err();
        assert_eq!(crate::errors::errno(&error), Some(errno.raw_os_error()), "{op:?}");
        assert!(
            temp_files(tmp.path()).is_empty(),
            "{op:?}: {:?}",
            temp_files(tmp.path())
        );
        assert_eq!(
            std::fs::read(tmp.path().join("status.json")).unwrap(),
            b"old",
            "{op:?}: old document intact"
        );
    }
}

#[test]
fn a8_a_cleanup_error_never_masks_the_write_error() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = ScriptedFs::new();
    fs.fail_next(Op::Write, [Errno::NOSPC]);
    fs.fail_next(Op::Unlink, [Errno::IO]);
    let dir = Dir::open_with(tmp.path(), os_with(fs.clone()).shared()).unwrap();
    let error = dir.write("x.json", b"1", Durability::Atomic).unwrap_err();
    assert!(error.to_string().starts_with("ENOSPC"), "{error}");
    assert_eq!(fs.calls(Op::Unlink), 1, "cleanup was attempted");
}

#[test]
fn a8_after_a_successful_rename_no_cleanup_is_attempted() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = ScriptedFs::new();
    let dir = Dir::open_with(tmp.path(), os_with(fs.clone()).shared()).unwrap();
    dir.write("x.json", b"1", Durability::Durable).unwrap();
    assert_eq!(fs.calls(Op::Unlink), 0);
}

#[test]
fn a10_short_writes_are_completed() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = ScriptedFs::new();
    fs.set_write_chunk(3);
    let dir = Dir::open_with(tmp.path(), os_with(fs.clone()).shared()).unwrap();
    dir.write("x.json", b"0123456789", Durability::Atomic).unwrap();
    assert_eq!(std::fs::read(tmp.path().join("x.json")).unwrap(), b"0123456789");
    assert_eq!(fs.calls(Op::Write), 4);
}

#[test]
fn f40_rename_eperm_twice_with_retry_enabled_takes_three_calls() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = ScriptedFs::new();
    fs.fail_next(Op::Rename, [Errno::PERM, Errno::PERM]);
    let sleeper = Arc::new(RecordingSleeper::default());
    let os = os_with(fs.clone())
        .with_sleeper(sleeper.clone())
        .with_retry(RetryPolicy::platform_default().enabled(true));
    let dir = Dir::open_with(tmp.path(), os.shared()).unwrap();
    dir.write("status.json", b"{}", Durability::Atomic).unwrap();
    assert_eq!(fs.calls(Op::Rename), 3);
    assert_eq!(sleeper.waits_ms(), vec![10, 25]);
    assert_eq!(std::fs::read(tmp.path().join("status.json")).unwrap(), b"{}");
    assert!(temp_files(tmp.path()).is_empty());
}

#[test]
fn f40_linux_default_returns_the_first_eperm() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = ScriptedFs::new();
    fs.fail_next(Op::Rename, [Errno::PERM, Errno::PERM]);
    let sleeper = Arc::new(RecordingSleeper::default());
    let dir = Dir::open_with(tmp.path(), os_with(fs.clone()).with_sleeper(sleeper.clone()).shared()).unwrap();
    let error = dir.write("status.json", b"{}", Durability::Atomic).unwrap_err();
    assert!(error.to_string().starts_with("EPERM"), "{error}");
    assert_eq!(fs.calls(Op::Rename), 1);
    assert!(sleeper.waits_ms().is_empty());
    assert!(temp_files(tmp.path()).is_empty());
    assert!(!tmp.path().join("status.json").exists());
}

#[test]
fn f40_enoent_is_never_retried() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = ScriptedFs::new();
    fs.fail_next(Op::Rename, [Errno::NOENT]);
    let sleeper = Arc::new(RecordingSleeper::default());
    let os = os_with(fs.clone())
        .with_sleeper(sleeper.clone())
        .with_retry(RetryPolicy::platform_default().enabled(true));
    let dir = Dir::open_with(tmp.path(), os.shared()).unwrap();
    assert!(dir.write("status.json", b"{}", Durability::Atomic).is_err());
    assert_eq!(fs.calls(Op::Rename), 1);
    assert!(sleeper.waits_ms().is_empty());
}

#[test]
fn a7_six_eperms_walk_the_default_ladder_and_exhaustion_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = ScriptedFs::new();
    fs.fail_next(Op::Rename, [Errno::PERM; 6]);
    let sleeper = Arc::new(RecordingSleeper::default());
    let os = os_with(fs.clone())
        .with_sleeper(sleeper.clone())
        .with_retry(RetryPolicy::platform_default().enabled(true));
    let dir = Dir::open_with(tmp.path(), os.shared()).unwrap();
    dir.write("a.json", b"1", Durability::Atomic).unwrap();
    assert_eq!(fs.calls(Op::Rename), 7);
    assert_eq!(sleeper.waits_ms(), vec![10, 25, 50, 100, 200, 500]);

    fs.fail_next(Op::Rename, [Errno::BUSY; 10]);
    let error = dir.write("b.json", b"1", Durability::Atomic).unwrap_err();
    assert!(error.to_string().starts_with("EBUSY"));
    assert!(!tmp.path().join("b.json").exists(), "target absent");
    assert!(temp_files(tmp.path()).is_empty(), "temp removed");
}

#[test]
fn a6_mkdir_is_retried_only_when_enabled() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = ScriptedFs::new();
    fs.fail_next(Op::Mkdir, [Errno::BUSY]);
    let sleeper = Arc::new(RecordingSleeper::default());
    let os = os_with(fs.clone())
        .with_sleeper(sleeper.clone())
        .with_retry(RetryPolicy::platform_default().enabled(true));
    Dir::create_private_with(&tmp.path().join("x"), os.shared()).unwrap();
    assert_eq!(sleeper.waits_ms(), vec![10]);

    fs.fail_next(Op::Mkdir, [Errno::BUSY]);
    assert!(Dir::create_private_with(&tmp.path().join("y"), os_with(fs.clone()).shared()).is_err());
}

#[test]
fn a4_directories_created_for_durable_records_are_fsynced_into_their_parents() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = ScriptedFs::new();
    let dir = Dir::open_with(tmp.path(), os_with(fs.clone()).shared()).unwrap();
    dir.ensure_path_synced(&["a", "b"]).unwrap();
    assert_eq!(fs.calls(Op::Fsync), 2, "each new directory's parent");
    dir.ensure_path_synced(&["a", "b"]).unwrap();
    assert_eq!(fs.calls(Op::Fsync), 2, "nothing new, nothing to sync");
    dir.ensure_path(&["c"]).unwrap();
    assert_eq!(fs.calls(Op::Fsync), 2, "the plain variant does not sync");
    fs.fail_next(Op::Fsync, [Errno::IO]);
    let error = dir.ensure_path_synced(&["d"]).unwrap_err();
    assert!(error.to_string().starts_with("EIO"), "{error}");
}
