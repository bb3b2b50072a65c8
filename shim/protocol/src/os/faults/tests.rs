use super::files::{FaultyFiles, Rule};
use super::*;
use crate::files::atomic::Durability;
use crate::testing::temp_files;

fn host(spec: &str) -> HostFaults {
    HostFaults::parse(spec).unwrap()
}

fn dir(path: &std::path::Path) -> Arc<Dir> {
    Arc::new(Dir::open(path).unwrap())
}

#[test]
fn t_no_faults_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let run = dir(tmp.path());
    let faults = HostFaults::none();
    assert_eq!(faults.sleep_before(HostPoint::Capacity), None);
    assert!(faults.step_error(HostPoint::Index).is_none());
    faults
        .write(&run, HostPoint::Cfg, "cfg.json", b"{}", Durability::Durable)
        .unwrap();
    assert_eq!(std::fs::read(tmp.path().join("cfg.json")).unwrap(), b"{}");
    assert!(Arc::ptr_eq(&faults.dir(&run, HostPoint::ALL).unwrap(), &run));
    assert!(ShimFaults::none().is_empty());
}

#[test]
fn t_sleep_corrupt_and_step_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let faults = host("logs:sleep:300;logs:sleep:200;cfg:corrupt;capacity:EPERM");
    assert_eq!(faults.sleep_before(HostPoint::Logs), Some(Duration::from_millis(500)));
    faults
        .write(&dir(tmp.path()), HostPoint::Cfg, "cfg.json", b"{}", Durability::Atomic)
        .unwrap();
    let written = std::fs::read(tmp.path().join("cfg.json")).unwrap();
    assert_eq!(written, CORRUPT_PAYLOAD);
    assert!(serde_json::from_slice::<serde_json::Value>(&written).is_err());
    let error = faults.step_error(HostPoint::Capacity).unwrap().to_string();
    assert!(error.starts_with("EPERM"), "{error}");
}

#[test]
fn f12_an_errno_fault_fires_at_its_step_and_leaves_no_temp_file() {
    for (spec, durability, fails) in [
        ("sidecar:ENOSPC", Durability::Atomic, true),
        ("sidecar:ENOSPC@fsync", Durability::Durable, true),
        ("sidecar:ENOSPC@fsync", Durability::Atomic, false),
        ("sidecar:ENOSPC@rename", Durability::Atomic, true),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let run = dir(tmp.path());
        let result = host(spec).write(&run, HostPoint::Sidecar, "process-terminal.json", b"{}", durability);
        assert_eq!(result.is_err(), fails, "{spec} {durability:?}");
        if let Err(error) = result {
            assert!(error.to_string().starts_with("ENOSPC"), "{error}");
            assert!(!tmp.path().join("process-terminal.json").exists());
        }
        assert!(temp_files(tmp.path()).is_empty(), "{spec}");
        run.write("other.json", b"{}", durability).unwrap();
    }
}

#[test]
fn multi_document_steps_fail_only_their_documents() {
    let tmp = tempfile::tempdir().unwrap();
    let run = dir(tmp.path());
    let proof = host("proof:ENOSPC").dir(&run, &[HostPoint::Proof]).unwrap();
    let error = proof
        .write("process-terminal.json", b"{}", Durability::Atomic)
        .unwrap_err();
    assert!(error.to_string().starts_with("ENOSPC"), "{error}");
    proof.write("status.json", b"{\"a\":1}", Durability::Durable).unwrap();

    let overlay = host("overlay:EIO@fsync").dir(&run, &[HostPoint::Overlay]).unwrap();
    let error = overlay.write("status.json", b"{}", Durability::Durable).unwrap_err();
    assert!(error.to_string().starts_with("EIO"), "{error}");
    assert_eq!(std::fs::read(tmp.path().join("status.json")).unwrap(), b"{\"a\":1}");
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["status.json"]);
}

#[test]
fn f42_a_full_disk_fails_creation_only_while_the_flag_exists() {
    let tmp = tempfile::tempdir().unwrap();
    let flag = tmp.path().join("full");
    std::fs::write(&flag, "").unwrap();
    let run_dir = tmp.path().join("run");
    std::fs::create_dir(&run_dir).unwrap();
    let rule = Rule::new(
        Some(vec!["status.json".into(), "run-1".into()]),
        Errno::NOSPC,
        AtStep::Create,
    );
    let files = FaultyFiles::new(vec![rule.while_exists(flag.clone())]);
    let os = crate::os::Os::system().with_files(Arc::new(files)).shared();
    let run = Dir::open_with(&run_dir, os).unwrap();
    let error = run.write("status.json", b"{}", Durability::Atomic).unwrap_err();
    assert!(error.to_string().starts_with("ENOSPC"), "{error}");
    assert!(run.open_append("run-1").is_err(), "the marker is a document too");
    run.write("result.json", b"{}", Durability::Atomic).unwrap();
    std::fs::remove_file(&flag).unwrap();
    run.write("status.json", b"{}", Durability::Atomic).unwrap();
    run.open_append("run-1").unwrap();
}

#[test]
fn t_parse_errors_name_the_variable_and_entry() {
    assert_eq!(
        HostFaults::parse("cfg:EWHAT").unwrap_err(),
        "Invalid SUBLAUNCH_HOST_FAULT entry 'cfg:EWHAT': unknown action."
    );
    assert_eq!(
        ShimFaults::from_setting(Some("nowhere:hang")).unwrap_err(),
        "Invalid SUBLAUNCH_SHIM_FAULT entry 'nowhere:hang': unknown point."
    );
}

#[test]
fn a4_a_directory_fsync_fault_fires_after_the_document_is_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let run = dir(tmp.path());
    let faults = host("proceed:EIO@dirfsync");
    let error = faults
        .write(&run, HostPoint::Proceed, "proceed.json", b"{}", Durability::Durable)
        .unwrap_err();
    assert!(error.to_string().starts_with("EIO"), "{error}");
    assert!(
        tmp.path().join("proceed.json").exists(),
        "renamed before the directory fsync failed"
    );
    assert!(temp_files(tmp.path()).is_empty());
    faults
        .write(&run, HostPoint::Proceed, "proceed.json", b"{}", Durability::Atomic)
        .unwrap();
}
