//! The precompiled-component cache: private, keyed, and never trusted; a matching hash is
//! stamped so that an unchanged entry is not hashed on every load.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;
use sublaunch::engine::artifact_cache::{ArtifactCache, CHECKED_SUFFIX, CacheOutcome, DEFAULT_SETTLE, EntryCheck};
use sublaunch::engine::planner::{EMBEDDED_COMPONENT, EMBEDDED_COMPONENT_SHA256, engine};
use sublaunch::{Limits, Options, Planner};

fn load(dir: &Path) -> Planner {
    Planner::embedded(Options {
        cache: Some(ArtifactCache::new(dir)),
        ..Options::default()
    })
    .unwrap()
}

fn entry(dir: &Path) -> PathBuf {
    dir.join(ArtifactCache::entry_name(
        &engine(&Limits::default(), Options::default().instance_pool).unwrap(),
        EMBEDDED_COMPONENT_SHA256,
    ))
}

/// The planner answers after any cache outcome.
fn assert_plans(planner: &Planner) {
    let request = r#"{"cwd":"/c","mode":"single","agents":[{"name":"w"}],"steps":[{"agent":"w","task":"t"}]}"#;
    assert!(planner.plan_json(request).is_ok());
}

#[test]
fn first_load_stores_a_private_entry_and_the_second_hits_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cache/components");
    let first = load(&dir);
    assert_eq!(first.cache_report().0, CacheOutcome::Stored);
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(
        std::fs::metadata(entry(&dir)).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let second = load(&dir);
    assert_eq!(second.cache_report(), (CacheOutcome::Hit, None));
    assert_plans(&second);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "one entry, no temp files");
}

/// Damages the entry with `damage`, reloads, and checks the entry was rebuilt.
fn rebuilt_after(damage: impl FnOnce(&Path), reason: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("components");
    load(&dir);
    damage(&entry(&dir));
    let planner = load(&dir);
    let (outcome, note) = planner.cache_report();
    assert_eq!(outcome, CacheOutcome::Stored, "{reason}: the entry is rebuilt");
    assert!(note.unwrap_or_default().contains(reason), "{reason}: {note:?}");
    assert_plans(&planner);
    assert_eq!(
        load(&dir).cache_report().0,
        CacheOutcome::Hit,
        "{reason}: the rebuilt entry is used"
    );
}

#[test]
fn a_corrupt_entry_is_rebuilt() {
    rebuilt_after(
        |path| {
            let mut bytes = std::fs::read(path).unwrap();
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0xff;
            std::fs::write(path, bytes).unwrap();
        },
        "corrupt",
    );
}

#[test]
fn a_truncated_entry_is_rebuilt() {
    rebuilt_after(
        |path| {
            let bytes = std::fs::read(path).unwrap();
            std::fs::write(path, &bytes[..bytes.len() / 3]).unwrap();
        },
        "corrupt or truncated",
    );
}

#[test]
fn a_foreign_entry_is_rebuilt() {
    rebuilt_after(
        |path| std::fs::write(path, b"\x7fELF not ours at all").unwrap(),
        "corrupt",
    );
}

#[test]
fn an_entry_writable_by_others_is_rebuilt() {
    rebuilt_after(
        |path| std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).unwrap(),
        "writable by others",
    );
}

#[test]
fn a_symlinked_entry_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"keep me").unwrap();
    rebuilt_after(
        |path| {
            std::fs::remove_file(path).unwrap();
            std::os::unix::fs::symlink(&victim, path).unwrap();
        },
        "Too many levels of symbolic links",
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
}

#[test]
fn a_wrongly_owned_entry_is_rebuilt() {
    if !rustix::process::getuid().is_root() {
        eprintln!("skipped: changing a file's owner needs root");
        return;
    }
    rebuilt_after(
        |path| rustix::fs::chown(path, Some(rustix::fs::Uid::from_raw(65534)), None).unwrap(),
        "owned by uid 65534",
    );
}

#[test]
fn a_cache_directory_owned_by_someone_else_is_not_used() {
    if !rustix::process::getuid().is_root() {
        eprintln!("skipped: changing a directory's owner needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("components");
    load(&dir);
    rustix::fs::chown(&dir, Some(rustix::fs::Uid::from_raw(65534)), None).unwrap();
    let planner = load(&dir);
    let (outcome, note) = planner.cache_report();
    assert_eq!(outcome, CacheOutcome::Uncached);
    assert!(note.unwrap_or_default().contains("owned by uid 65534"), "{note:?}");
    assert_plans(&planner);
    assert_eq!(
        std::fs::metadata(&dir).unwrap().uid(),
        65534,
        "the foreign directory is left alone"
    );
}

#[test]
fn a_loose_cache_directory_of_ours_is_made_private() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("components");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(load(&dir).cache_report().0, CacheOutcome::Stored);
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
}

fn cached(dir: &Path, settle: Duration) -> sublaunch::engine::artifact_cache::Loaded {
    let engine = engine(&Limits::default(), Options::default().instance_pool).unwrap();
    ArtifactCache::new(dir)
        .settle(settle)
        .load_or_compile(&engine, EMBEDDED_COMPONENT, EMBEDDED_COMPONENT_SHA256)
        .unwrap()
}

fn stamp(dir: &Path) -> PathBuf {
    let mut name = entry(dir).into_os_string();
    name.push(CHECKED_SUFFIX);
    PathBuf::from(name)
}

#[test]
fn an_entry_whose_hash_matched_is_not_hashed_again_while_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("components");
    assert_eq!(cached(&dir, Duration::ZERO).outcome, CacheOutcome::Stored);
    let second = cached(&dir, Duration::ZERO);
    assert_eq!(
        (second.outcome, second.check),
        (CacheOutcome::Hit, Some(EntryCheck::Hashed))
    );
    assert_eq!(
        std::fs::metadata(stamp(&dir)).unwrap().permissions().mode() & 0o777,
        0o600,
        "the stamp is private"
    );
    let third = cached(&dir, Duration::ZERO);
    assert_eq!(
        (third.outcome, third.check),
        (CacheOutcome::Hit, Some(EntryCheck::Stamped))
    );
}

#[test]
fn an_entry_changed_recently_is_not_stamped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("components");
    cached(&dir, DEFAULT_SETTLE);
    for _ in 0..2 {
        let loaded = cached(&dir, DEFAULT_SETTLE);
        assert_eq!(
            (loaded.outcome, loaded.check),
            (CacheOutcome::Hit, Some(EntryCheck::Hashed))
        );
    }
    assert!(
        !stamp(&dir).exists(),
        "a change in the same tick as the stamp could go unseen"
    );
}

#[test]
fn a_stamped_entry_that_was_replaced_or_grew_is_hashed_and_rebuilt() {
    for damage in ["replaced by a corrupt copy of the same size", "appended to"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("components");
        cached(&dir, Duration::ZERO);
        cached(&dir, Duration::ZERO);
        assert!(stamp(&dir).is_file(), "{damage}: stamped");
        let path = entry(&dir);
        let mut bytes = std::fs::read(&path).unwrap();
        if damage == "appended to" {
            let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            std::io::Write::write_all(&mut file, b"x").unwrap();
        } else {
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0xff;
            let copy = dir.join("copy");
            std::fs::write(&copy, &bytes).unwrap();
            std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o600)).unwrap();
            std::fs::rename(&copy, &path).unwrap();
        }
        let loaded = cached(&dir, Duration::ZERO);
        assert_eq!(loaded.outcome, CacheOutcome::Stored, "{damage}: rebuilt");
        assert!(loaded.note.unwrap_or_default().contains("corrupt"), "{damage}");
        let again = cached(&dir, Duration::ZERO);
        assert_eq!(
            (again.outcome, again.check),
            (CacheOutcome::Hit, Some(EntryCheck::Hashed)),
            "{damage}"
        );
    }
}

#[test]
fn a_stamp_others_can_write_is_not_believed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("components");
    cached(&dir, Duration::ZERO);
    cached(&dir, Duration::ZERO);
    std::fs::set_permissions(stamp(&dir), std::fs::Permissions::from_mode(0o666)).unwrap();
    let loaded = cached(&dir, Duration::ZERO);
    assert_eq!(
        (loaded.outcome, loaded.check),
        (CacheOutcome::Hit, Some(EntryCheck::Hashed)),
        "anyone could have written that stamp"
    );
}
