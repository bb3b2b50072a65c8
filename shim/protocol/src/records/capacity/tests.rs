use super::*;
use crate::files::atomic::Durability;
use crate::files::dir::Dir;
use crate::os::processes::{Processes, RealProcesses};
use crate::procinfo::{Liveness, own_start_identity};
use crate::records::status::{RunState, Status, write_status};
use std::collections::HashSet;
use std::num::NonZeroU32;
use std::sync::Mutex;

/// Pids listed as dead are dead; every other pid is alive when its identity is `linux:<pid>`
/// (or none is expected), else dead (a reused pid).
#[derive(Debug, Default)]
struct Oracle {
    dead: Mutex<HashSet<u32>>,
}

impl Oracle {
    fn kill(&self, pid: u32) {
        self.dead.lock().unwrap().insert(pid);
    }
}

impl Processes for Oracle {
    fn liveness(&self, pid: u32, expected_identity: Option<&str>) -> Liveness {
        let identity_matches = expected_identity.is_none_or(|id| id == format!("linux:{pid}"));
        if self.dead.lock().unwrap().contains(&pid) || !identity_matches {
            Liveness::Dead
        } else {
            Liveness::Alive
        }
    }
}

fn queue() -> (tempfile::TempDir, CapacityQueue) {
    let tmp = tempfile::tempdir().unwrap();
    let runs = Dir::open(tmp.path()).unwrap();
    let queue = CapacityQueue::open(&runs).unwrap();
    (tmp, queue)
}

/// Writes run `run`'s directory with a status in `state` naming its runner.
fn run_dir(queue: &CapacityQueue, run: &str, state: RunState, runner: Option<(u32, Option<&str>)>) {
    let runs = Dir::open(queue.dir().path().parent().unwrap()).unwrap();
    let dir = runs.ensure_child(run).unwrap();
    let status = Status {
        state: Some(state),
        pid: runner.map(|(pid, _)| pid),
        pid_start_identity: runner.and_then(|(_, identity)| identity.map(str::to_owned)),
        ..Status::default()
    };
    write_status(&dir, &status, Durability::Atomic).unwrap();
}

/// Takes a ticket for run `run` (whose directory and running status it writes first).
fn take(queue: &CapacityQueue, oracle: &Oracle, run: &str, pid: u32, cap: Option<u32>) -> Admission {
    let identity = format!("linux:{pid}");
    run_dir(queue, run, RunState::Running, Some((pid, Some(&identity))));
    queue
        .lock()
        .unwrap()
        .take(
            &TicketRequest {
                run_id: run,
                pid,
                pid_start_identity: Some(&identity),
                max_active: cap.and_then(NonZeroU32::new),
            },
            oracle,
        )
        .unwrap()
}

fn claimed(queue: &CapacityQueue) -> Vec<String> {
    let tickets = queue.tickets().unwrap();
    tickets.iter().filter(|t| t.claimed).map(|t| t.run_id.clone()).collect()
}

fn waiting(queue: &CapacityQueue) -> Vec<String> {
    let tickets = queue.tickets().unwrap();
    tickets
        .iter()
        .filter(|t| !t.claimed)
        .map(|t| t.run_id.clone())
        .collect()
}

#[test]
fn tickets_are_numbered_in_arrival_order_and_capped_runs_wait_behind_the_cap() {
    let (_tmp, queue) = queue();
    let oracle = Oracle::default();
    let admissions: Vec<Admission> = (1..=5)
        .map(|n| take(&queue, &oracle, &format!("shell-run{n}"), 100 + n, Some(2)))
        .collect();
    let seqs: Vec<u64> = admissions.iter().map(|a| a.ticket.seq).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5]);
    let positions: Vec<Option<usize>> = admissions.iter().map(|a| a.position).collect();
    assert_eq!(positions, vec![None, None, Some(1), Some(2), Some(3)]);
    assert_eq!(claimed(&queue), ["shell-run1", "shell-run2"]);
    assert!(
        queue.dir().read("0000000000000003-shell-run3").unwrap().is_some(),
        "the name carries the arrival number"
    );
}

#[test]
fn a_freed_slot_goes_to_the_oldest_waiting_ticket() {
    let (_tmp, queue) = queue();
    let oracle = Oracle::default();
    for n in 1..=4 {
        take(&queue, &oracle, &format!("shell-run{n}"), 100 + n, Some(2));
    }
    assert!(queue.release("shell-run2").unwrap());
    assert!(!queue.release("shell-run2").unwrap(), "a second release finds nothing");
    assert_eq!(claimed(&queue), ["shell-run1"], "a release promotes nobody by itself");
    queue.lock().unwrap().evaluate(&oracle).unwrap();
    assert_eq!(claimed(&queue), ["shell-run1", "shell-run3"]);
    assert_eq!(waiting(&queue), ["shell-run4"]);
    assert_eq!(queue_position(&queue.tickets().unwrap(), "shell-run4"), Some(1));
}

#[test]
fn tickets_of_dead_runners_are_reclaimed_so_they_hold_no_slot() {
    let (_tmp, queue) = queue();
    let oracle = Oracle::default();
    for n in 1..=3 {
        take(&queue, &oracle, &format!("shell-run{n}"), 100 + n, Some(1));
    }
    oracle.kill(101);
    let remaining = queue.lock().unwrap().evaluate(&oracle).unwrap();
    assert_eq!(remaining.len(), 2);
    assert_eq!(claimed(&queue), ["shell-run2"]);
    assert!(
        queue.find("shell-run1").unwrap().is_none(),
        "the dead runner's ticket is gone"
    );
    // A waiting ticket whose runner died is reclaimed too, and does not block the others.
    oracle.kill(103);
    take(&queue, &oracle, "shell-run4", 104, Some(2));
    assert_eq!(claimed(&queue), ["shell-run2", "shell-run4"]);
}

#[test]
fn a_reused_pid_does_not_keep_a_slot() {
    let (_tmp, queue) = queue();
    let oracle = Oracle::default();
    take(&queue, &oracle, "shell-run1", 101, Some(1));
    // The ticket names another start identity than the live process with that pid has.
    let mut ticket = queue.find("shell-run1").unwrap().unwrap();
    ticket.pid_start_identity = Some("linux:999".into());
    queue
        .dir()
        .write(
            &ticket.file_name(),
            &crate::files::doc::to_pretty_bytes(&ticket),
            crate::files::atomic::Durability::Atomic,
        )
        .unwrap();
    let admission = take(&queue, &oracle, "shell-run2", 102, Some(1));
    assert!(admission.ticket.claimed);
    assert_eq!(claimed(&queue), ["shell-run2"]);
}

#[test]
fn uncapped_runs_hold_a_slot_at_once_and_count_against_capped_ones() {
    let (_tmp, queue) = queue();
    let oracle = Oracle::default();
    assert!(take(&queue, &oracle, "shell-free1", 101, None).ticket.claimed);
    assert!(take(&queue, &oracle, "shell-free2", 102, None).ticket.claimed);
    let capped = take(&queue, &oracle, "shell-capped", 103, Some(2));
    assert!(!capped.ticket.claimed, "two uncapped runs fill a cap of 2");
    assert!(take(&queue, &oracle, "shell-free3", 104, None).ticket.claimed);
    queue.release("shell-free1").unwrap();
    queue.release("shell-free2").unwrap();
    queue.lock().unwrap().evaluate(&oracle).unwrap();
    assert!(queue.find("shell-capped").unwrap().unwrap().claimed);
}

#[test]
fn promotion_keeps_arrival_order_even_when_a_later_ticket_would_fit() {
    let ticket = |n: u64, cap: Option<u32>, claimed: bool| Ticket {
        version: 1,
        run_id: format!("shell-run{n}"),
        seq: n,
        pid: 1,
        pid_start_identity: None,
        max_active: cap,
        claimed,
    };
    let mut tickets = vec![
        ticket(1, Some(3), true),
        ticket(2, Some(3), true),
        ticket(3, Some(1), false),
        ticket(4, Some(3), false),
    ];
    assert!(
        promote(&mut tickets).is_empty(),
        "run4 fits its cap but waits behind run3"
    );
    tickets.remove(0);
    assert!(
        promote(&mut tickets).is_empty(),
        "one slot held: run3's cap of 1 is full"
    );
    tickets.remove(0);
    assert_eq!(
        promote(&mut tickets),
        vec![0, 1],
        "run3 first, then run4 beside it (its cap is 3)"
    );
    assert!(promote(&mut tickets).is_empty(), "promotion is idempotent");
}

#[test]
fn the_arrival_number_survives_an_emptied_queue_and_a_lost_counter() {
    let (_tmp, queue) = queue();
    let oracle = Oracle::default();
    take(&queue, &oracle, "shell-run1", 101, Some(1));
    take(&queue, &oracle, "shell-run2", 102, Some(1));
    queue.release("shell-run1").unwrap();
    queue.release("shell-run2").unwrap();
    assert_eq!(take(&queue, &oracle, "shell-run3", 103, Some(1)).ticket.seq, 3);
    queue
        .dir()
        .write(
            crate::files::layout::names::CAPACITY_LOCK,
            b"garbage",
            crate::files::atomic::Durability::Atomic,
        )
        .unwrap();
    assert_eq!(take(&queue, &oracle, "shell-run4", 104, Some(1)).ticket.seq, 4);
    assert_eq!(waiting(&queue), ["shell-run4"]);
}

#[test]
fn foreign_files_are_not_tickets() {
    let (_tmp, queue) = queue();
    let dir = queue.dir();
    for name in [
        "notes",
        "0000000000000001-",
        "00000000000000x1-shell-a",
        ".0000000000000001-shell-a.tmp",
    ] {
        dir.write(name, b"{}", crate::files::atomic::Durability::Atomic)
            .unwrap();
    }
    dir.write(
        "0000000000000002-shell-b",
        b"not json",
        crate::files::atomic::Durability::Atomic,
    )
    .unwrap();
    assert!(queue.tickets().unwrap().is_empty());
    assert_eq!(parse_ticket_name("0000000000000012-shell-a1"), Some((12, "shell-a1")));
}

#[test]
fn real_processes_are_judged_by_pid_and_start_identity() {
    let (_tmp, queue) = queue();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let me = std::process::id();
    let identity = own_start_identity();
    for (run, pid) in [("shell-gone", dead), ("shell-me", me)] {
        let identity = identity.as_deref().filter(|_| pid == me);
        run_dir(&queue, run, RunState::Running, Some((pid, identity)));
    }
    let mut lock = queue.lock().unwrap();
    for (run, pid) in [("shell-gone", dead), ("shell-me", me)] {
        lock.take(
            &TicketRequest {
                run_id: run,
                pid,
                pid_start_identity: identity.as_deref().filter(|_| pid == me),
                max_active: NonZeroU32::new(1),
            },
            &RealProcesses,
        )
        .unwrap();
    }
    let remaining = lock.evaluate(&RealProcesses).unwrap();
    assert_eq!(
        remaining.iter().map(|t| t.run_id.as_str()).collect::<Vec<_>>(),
        ["shell-me"]
    );
    assert!(remaining[0].claimed);
}

#[test]
fn a_ticket_for_no_run_or_an_ended_one_holds_no_slot() {
    let (_tmp, queue) = queue();
    let oracle = Oracle::default();
    // Forged: a run that does not exist, naming a live pid (1 always lives).
    let forged = Ticket {
        version: 1,
        run_id: "ghost".into(),
        seq: 1,
        pid: 1,
        pid_start_identity: None,
        max_active: Some(1),
        claimed: true,
    };
    let write = |ticket: &Ticket| {
        queue
            .dir()
            .write(
                &ticket.file_name(),
                &crate::files::doc::to_pretty_bytes(ticket),
                Durability::Atomic,
            )
            .unwrap();
    };
    write(&forged);
    // Stale: the ticket of a run that ended without giving it back.
    let ended = Ticket {
        run_id: "shell-ended".into(),
        seq: 2,
        pid: 2,
        pid_start_identity: Some("linux:2".into()),
        ..forged.clone()
    };
    run_dir(&queue, "shell-ended", RunState::Complete, Some((2, Some("linux:2"))));
    write(&ended);
    // Still preliminary: the launch took the ticket before writing the status naming its
    // runner; the ticket stands.
    run_dir(&queue, "shell-starting", RunState::Queued, None);
    let starting = Ticket {
        run_id: "shell-starting".into(),
        seq: 3,
        pid: 3,
        pid_start_identity: Some("linux:3".into()),
        ..forged.clone()
    };
    write(&starting);
    // Borrowed: a live run's id, but another runner than the one its status names.
    assert_eq!(take(&queue, &oracle, "shell-live", 4, None).ticket.seq, 4);
    let borrowed = Ticket {
        run_id: "shell-live".into(),
        seq: 10,
        pid: 1,
        pid_start_identity: Some("linux:1".into()),
        ..forged.clone()
    };
    write(&borrowed);
    assert_eq!(queue.tickets().unwrap().len(), 5);

    let admission = take(&queue, &oracle, "shell-new", 6, Some(3));
    assert!(admission.ticket.claimed, "only the live and the starting run count");
    assert_eq!(claimed(&queue), ["shell-starting", "shell-live", "shell-new"]);
    assert!(queue.find("ghost").unwrap().is_none());
    assert!(queue.find("shell-ended").unwrap().is_none());
    assert!(
        queue.tickets().unwrap().iter().all(|t| t.pid != 1),
        "the borrowed ticket is gone, the live run's own one stays"
    );
}
