use super::*;
use crate::os::Os;
use crate::os::clock::ManualClock;
use crate::os::processes::RealProcesses;
use std::sync::Arc;

const PEER_OWNER: &str = include_str!("../../../fixtures/peer/lease-owner.json");

fn setup() -> (tempfile::TempDir, Dir, SessionLeases) {
    let tmp = tempfile::tempdir().unwrap();
    let os = Os::system()
        .with_clock(Arc::new(ManualClock::new(1_795_999_139_064)))
        .shared();
    let root = Dir::create_private_with(&tmp.path().join("root"), os).unwrap();
    let leases = SessionLeases::open(&root, DurabilityPolicy::standard()).unwrap();
    (tmp, root, leases)
}

fn me(oracle: &dyn Processes) -> LeaseIdentity<'_> {
    LeaseIdentity {
        pid: std::process::id(),
        hostname: crate::procinfo::hostname(),
        process_start_identity: crate::procinfo::own_start_identity(),
        oracle,
    }
}

fn request(session: &str) -> LeaseRequest {
    LeaseRequest {
        canonical_session_file: session.into(),
        run_id: "run-b".into(),
        source_run_id: "run-a".into(),
        parent_session_id: Some("p".into()),
    }
}

fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn plant_owner(root: &Path, session: &str, pid: u32, hostname: &str, token: &str) -> PathBuf {
    let dir = root.join("session-leases").join(lease_id(session));
    std::fs::create_dir_all(&dir).unwrap();
    let owner = serde_json::json!({"version": 1, "token": token, "canonicalSessionFile": session, "runId": "run-x", "sourceRunId": "run-w",
        "pid": pid, "hostname": hostname, "writerState": "none", "acquiredAt": "2026-11-30T00:38:59.064Z", "acquiredAtMs": 1, "updatedAtMs": 1});
    std::fs::write(dir.join("owner.json"), serde_json::to_vec_pretty(&owner).unwrap()).unwrap();
    dir
}

#[test]
fn k2_peer_owner_round_trips() {
    let value: serde_json::Value = serde_json::from_str(PEER_OWNER).unwrap();
    let owner: LeaseOwner = serde_json::from_str(PEER_OWNER).unwrap();
    assert_eq!(serde_json::to_value(&owner).unwrap(), value);
}

#[test]
fn r6a_acquire_writes_a_private_owner_and_releases_only_with_our_token() {
    let (tmp, _root, leases) = setup();
    let lease = leases.acquire(&request("/w/s.jsonl"), &me(&RealProcesses)).unwrap();
    let dir = tmp.path().join("root/session-leases").join(lease_id("/w/s.jsonl"));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(
        std::fs::metadata(dir.join("owner.json")).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let owner: LeaseOwner = serde_json::from_slice(&std::fs::read(dir.join("owner.json")).unwrap()).unwrap();
    assert_eq!(owner.token, lease.token());
    assert_eq!(owner.acquired_at, "2026-11-30T00:38:59.064Z");
    assert_eq!(owner.writer_state, WriterState::None);
    assert_eq!(leases.probe("/w/s.jsonl"), LeaseProbe::Owned);
    assert_eq!(
        std::fs::read_dir(tmp.path().join("root/session-leases"))
            .unwrap()
            .count(),
        1,
        "no candidate dir left"
    );
    assert!(lease.release().unwrap());
    assert!(!dir.exists());
    assert_eq!(leases.probe("/w/s.jsonl"), LeaseProbe::Free);
    assert_eq!(
        std::fs::read_dir(tmp.path().join("root/session-leases"))
            .unwrap()
            .count(),
        0,
        "nothing left behind"
    );
}

#[test]
fn r6a_release_with_a_foreign_token_leaves_the_lease() {
    let (tmp, _root, leases) = setup();
    let lease = leases.acquire(&request("/w/s.jsonl"), &me(&RealProcesses)).unwrap();
    let dir = tmp.path().join("root/session-leases").join(lease_id("/w/s.jsonl"));
    let mut owner: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("owner.json")).unwrap()).unwrap();
    owner["token"] = serde_json::json!("someone-else");
    std::fs::write(dir.join("owner.json"), owner.to_string()).unwrap();
    assert!(!lease.release().unwrap());
    assert!(dir.join("owner.json").exists());
}

#[test]
fn f20_live_owner_conflicts_with_the_exact_text_and_is_untouched() {
    let (tmp, _root, leases) = setup();
    let dir = plant_owner(
        &tmp.path().join("root"),
        "/w/s.jsonl",
        std::process::id(),
        &crate::procinfo::hostname(),
        "tok-1",
    );
    let before = std::fs::read(dir.join("owner.json")).unwrap();
    let error = leases
        .acquire(
            &request("/w/s.jsonl"),
            &LeaseIdentity {
                pid: 1,
                ..me(&RealProcesses)
            },
        )
        .unwrap_err();
    let expected = format!(
        "Direct revival of session '/w/s.jsonl' is already owned by run 'run-x' (source run 'run-w', pid {} on {}). Wait for that revival to finish or start a separate continuation without reusing this session file.",
        std::process::id(),
        crate::procinfo::hostname()
    );
    assert_eq!(error.to_string(), expected);
    assert_eq!(std::fs::read(dir.join("owner.json")).unwrap(), before);
    assert_eq!(
        std::fs::read_dir(tmp.path().join("root/session-leases"))
            .unwrap()
            .count(),
        1,
        "candidate cleaned up"
    );
}

#[test]
fn r6a_conflict_names_the_parent_session_and_owners_on_other_hosts_are_never_stale() {
    let owner: LeaseOwner = serde_json::from_str(PEER_OWNER).unwrap();
    assert!(conflict_message("/s", &owner).contains(
        "(source run 'bench-revival-00-5mkcfn-source', parent session 'bench-session', pid 17345 on <HOSTNAME>)"
    ));
    let (tmp, _root, leases) = setup();
    plant_owner(
        &tmp.path().join("root"),
        "/w/s.jsonl",
        dead_pid(),
        "another-host",
        "tok",
    );
    assert!(matches!(
        leases.acquire(&request("/w/s.jsonl"), &me(&RealProcesses)),
        Err(LeaseError::Conflict(_))
    ));
}

#[test]
fn f60_stale_owner_is_tombstoned_and_the_lease_reclaimed() {
    let (tmp, _root, leases) = setup();
    plant_owner(
        &tmp.path().join("root"),
        "/w/s.jsonl",
        dead_pid(),
        &crate::procinfo::hostname(),
        "old-token",
    );
    let lease = leases.acquire(&request("/w/s.jsonl"), &me(&RealProcesses)).unwrap();
    let base = tmp.path().join("root/session-leases").join(lease_id("/w/s.jsonl"));
    let tombstone = PathBuf::from(format!("{}.stale-old-token", base.display()));
    assert!(tombstone.join("owner.json").exists(), "tombstone keeps the old owner");
    let owner: LeaseOwner = serde_json::from_slice(&std::fs::read(base.join("owner.json")).unwrap()).unwrap();
    assert_eq!(owner.token, lease.token());
}

#[test]
fn r6a_unreadable_owner_is_a_conflict() {
    let (tmp, _root, leases) = setup();
    let dir = tmp.path().join("root/session-leases").join(lease_id("/w/s.jsonl"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("owner.json"), b"{").unwrap();
    let error = leases
        .acquire(&request("/w/s.jsonl"), &me(&RealProcesses))
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(
            "Direct revival of session '/w/s.jsonl' is already owned by another run with unreadable owner metadata"
        ),
        "{error}"
    );
    assert!(matches!(leases.probe("/w/s.jsonl"), LeaseProbe::Unreadable(_)));
}

#[test]
fn r10_writer_state_updates_keep_the_token() {
    let (tmp, _root, leases) = setup();
    let mut lease = leases.acquire(&request("/w/s.jsonl"), &me(&RealProcesses)).unwrap();
    lease
        .set_writer(WriterState::Running, Some(77), Some("linux:5".into()), 9)
        .unwrap();
    let dir = tmp.path().join("root/session-leases").join(lease_id("/w/s.jsonl"));
    let owner: LeaseOwner = serde_json::from_slice(&std::fs::read(dir.join("owner.json")).unwrap()).unwrap();
    assert_eq!(
        (owner.writer_state, owner.writer_pid, owner.updated_at_ms),
        (WriterState::Running, Some(77), 9)
    );
    assert!(lease.release().unwrap());
}

#[test]
fn r6a_a_live_writer_keeps_a_dead_owner_from_being_stale() {
    let owner = LeaseOwner {
        writer_state: WriterState::Running,
        writer_pid: Some(std::process::id()),
        pid: dead_pid(),
        hostname: crate::procinfo::hostname(),
        ..serde_json::from_str(PEER_OWNER).unwrap()
    };
    let identity = me(&RealProcesses);
    assert!(!is_stale(&owner, &LeaseIdentity { pid: 1, ..identity }));
    let owner = LeaseOwner {
        writer_pid: Some(dead_pid()),
        ..owner
    };
    assert!(is_stale(
        &owner,
        &LeaseIdentity {
            pid: 1,
            ..me(&RealProcesses)
        }
    ));
}
