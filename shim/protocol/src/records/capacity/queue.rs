//! The queue of one `<runs>` directory: reading its tickets (a snapshot, no lock), removing
//! one's own ticket (no lock: a removal only frees capacity), and, under the queue's `flock`,
//! taking a ticket and settling the queue — reclaiming the tickets that no longer stand for a
//! live runner of an active run, and promoting waiting ones in arrival order.
//!
//! A ticket is honoured only while its runner lives (pid and start identity, X3), its run
//! directory exists, and the run's status is not terminal and, once it names the run's runner,
//! names this ticket's (pid and start identity). A leftover of a run that ended or was pruned,
//! or a ticket written for no run or for another process (an agent can write in the state
//! root), therefore holds no slot.

use super::ticket::{TICKET_VERSION, Ticket, parse_ticket_name};
use crate::errors::{has_errno, os_error};
use crate::files::atomic::Durability;
use crate::files::dir::{Dir, FILE_MODE};
use crate::files::doc::{ReadDoc, to_pretty_bytes};
use crate::files::layout::names;
use crate::os::files::retry_eintr;
use crate::os::processes::Processes;
use crate::procinfo::Liveness;
use crate::records::status::read_status;
use rustix::fd::OwnedFd;
use rustix::fs::{self, FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;
use std::io;
use std::num::NonZeroU32;
use std::path::Path;

/// `<runs>/.capacity`.
#[derive(Debug)]
pub struct CapacityQueue {
    dir: Dir,
    /// `<runs>`, where the tickets' runs are.
    runs: Dir,
}

/// What a launch asks of the queue.
#[derive(Clone, Copy, Debug)]
pub struct TicketRequest<'a> {
    /// The run.
    pub run_id: &'a str,
    /// Its runner's pid.
    pub pid: u32,
    /// Its runner's start identity.
    pub pid_start_identity: Option<&'a str>,
    /// The cap in force for this run (`None`: no cap, the run holds a slot at once).
    pub max_active: Option<NonZeroU32>,
}

/// The ticket a launch took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admission {
    /// The ticket as written.
    pub ticket: Ticket,
    /// Its place among the waiting tickets (1 = next), when it waits.
    pub position: Option<usize>,
}

impl CapacityQueue {
    /// Opens `<runs>/.capacity`, creating it (0700) when missing.
    pub fn open(runs: &Dir) -> io::Result<Self> {
        Ok(Self {
            dir: runs.ensure_child(names::CAPACITY_DIR)?,
            runs: runs.try_clone()?,
        })
    }

    /// Opens `<runs>/.capacity` when it exists.
    pub fn open_existing(runs: &Dir) -> io::Result<Option<Self>> {
        match runs.open_child(names::CAPACITY_DIR)? {
            Some(dir) => Ok(Some(Self {
                dir,
                runs: runs.try_clone()?,
            })),
            None => Ok(None),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Blocks until the queue's lock is held (async callers run this on a blocking thread).
    pub fn lock(&self) -> io::Result<QueueLock<'_>> {
        let path = self.dir.join(names::CAPACITY_LOCK);
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = retry_eintr(|| {
            self.dir.os().files.openat(
                self.dir.fd(),
                Path::new(names::CAPACITY_LOCK),
                flags,
                Mode::from_raw_mode(FILE_MODE),
            )
        })
        .map_err(|e| os_error(e, "open", &path))?;
        retry_eintr(|| fs::flock(&fd, FlockOperation::LockExclusive)).map_err(|e| os_error(e, "flock", &path))?;
        Ok(QueueLock { fd, queue: self })
    }

    /// The tickets in arrival order. Files that are not tickets of this format are left out.
    pub fn tickets(&self) -> io::Result<Vec<Ticket>> {
        let mut tickets = Vec::new();
        for entry in self.dir.entries()? {
            if entry.file_type != FileType::RegularFile {
                continue;
            }
            let Some(name) = entry.name.to_str() else { continue };
            let Some((seq, run_id)) = parse_ticket_name(name) else {
                continue;
            };
            // Gone since the listing (its run ended), or unreadable: not a ticket any more.
            let Ok(Some(bytes)) = self.dir.read(name) else { continue };
            if let Ok(ticket) = serde_json::from_slice::<Ticket>(&bytes)
                && ticket.seq == seq
                && ticket.run_id == run_id
            {
                tickets.push(ticket);
            }
        }
        tickets.sort_by_key(|t| t.seq);
        Ok(tickets)
    }

    /// The file name of `run_id`'s ticket, when it has one.
    pub fn ticket_name_of(&self, run_id: &str) -> io::Result<Option<String>> {
        Ok(self
            .dir
            .entries()?
            .into_iter()
            .filter_map(|e| e.name.into_string().ok())
            .find(|name| parse_ticket_name(name).is_some_and(|(_, id)| id == run_id)))
    }

    /// `run_id`'s ticket, when it has one.
    pub fn find(&self, run_id: &str) -> io::Result<Option<Ticket>> {
        Ok(self.tickets()?.into_iter().find(|t| t.run_id == run_id))
    }

    /// Whether `ticket` stands for a live runner of an active run (see the module
    /// documentation). Where the run cannot be read for another reason than its absence, the
    /// ticket is kept: the runner's liveness still decides.
    fn honoured(&self, ticket: &Ticket, oracle: &dyn Processes) -> bool {
        // X3: the pid and its start identity, so a reused pid does not keep a slot.
        if oracle.liveness(ticket.pid, ticket.pid_start_identity.as_deref()) == Liveness::Dead {
            return false;
        }
        let run = match self.runs.open_child(&ticket.run_id) {
            Ok(Some(run)) => run,
            Ok(None) => return false,
            // A symbolic link or a file where the run directory should be: no run.
            Err(e) if has_errno(&e, Errno::LOOP) || has_errno(&e, Errno::NOTDIR) => return false,
            Err(_) => return true,
        };
        let status = match read_status(&run) {
            Ok(ReadDoc::Present(status)) => status,
            // A run directory always holds a valid status (it is created with one).
            Ok(ReadDoc::Absent | ReadDoc::Corrupt(_)) => return false,
            Err(_) => return true,
        };
        if status.is_terminal() {
            return false;
        }
        // Until the launch writes the initial status, the run names no runner (the ticket is
        // taken first, so that status can say `queued`); from then on it must be this one.
        match status.pid {
            None => true,
            Some(pid) => {
                pid == ticket.pid
                    && (status.pid_start_identity.is_none() || status.pid_start_identity == ticket.pid_start_identity)
            }
        }
    }

    /// Removes `run_id`'s ticket; returns whether it had one. Needs no lock: removing a ticket
    /// only frees capacity, and the next evaluation sees it gone.
    pub fn release(&self, run_id: &str) -> io::Result<bool> {
        let Some(name) = self.ticket_name_of(run_id)? else {
            return Ok(false);
        };
        self.dir.remove(&name)?;
        Ok(true)
    }
}

/// The held lock of a [`CapacityQueue`]; dropping it (or the holder's death) releases it.
#[derive(Debug)]
pub struct QueueLock<'a> {
    fd: OwnedFd,
    queue: &'a CapacityQueue,
}

impl QueueLock<'_> {
    /// Takes a ticket for `request`: the next arrival number; an uncapped run holds a slot at
    /// once, a capped one is admitted behind the tickets already waiting, when fewer than its
    /// cap hold a slot (dead runners' tickets reclaimed first).
    pub fn take(&mut self, request: &TicketRequest<'_>, oracle: &dyn Processes) -> io::Result<Admission> {
        let ticket = Ticket {
            version: TICKET_VERSION,
            run_id: request.run_id.to_owned(),
            seq: self.next_seq()?,
            pid: request.pid,
            pid_start_identity: request.pid_start_identity.map(str::to_owned),
            max_active: request.max_active.map(NonZeroU32::get),
            claimed: request.max_active.is_none(),
        };
        if ticket.claimed {
            self.write(&ticket)?;
            return Ok(Admission { ticket, position: None });
        }
        let tickets = self.settle(oracle, Some(ticket))?;
        let ticket = tickets
            .iter()
            .find(|t| t.run_id == request.run_id)
            .cloned()
            .ok_or_else(|| io::Error::other("the new capacity ticket vanished"))?;
        Ok(Admission {
            position: queue_position(&tickets, request.run_id),
            ticket,
        })
    }

    /// Reclaims the tickets that no longer stand for a live runner of an active run and
    /// promotes waiting tickets; returns the tickets that remain, in arrival order.
    pub fn evaluate(&mut self, oracle: &dyn Processes) -> io::Result<Vec<Ticket>> {
        self.settle(oracle, None)
    }

    fn settle(&self, oracle: &dyn Processes, new: Option<Ticket>) -> io::Result<Vec<Ticket>> {
        let mut tickets = Vec::new();
        for ticket in self.queue.tickets()? {
            if self.queue.honoured(&ticket, oracle) {
                tickets.push(ticket);
            } else {
                self.queue.dir.remove(&ticket.file_name())?;
            }
        }
        let new_run = new.as_ref().map(|t| t.run_id.clone());
        tickets.extend(new);
        tickets.sort_by_key(|t| t.seq);
        let promoted = promote(&mut tickets);
        for (i, ticket) in tickets.iter().enumerate() {
            if promoted.contains(&i) || new_run.as_deref() == Some(ticket.run_id.as_str()) {
                self.write(ticket)?;
            }
        }
        Ok(tickets)
    }

    fn write(&self, ticket: &Ticket) -> io::Result<()> {
        // Tickets need no fsync: after a power loss no runner holding one is alive.
        (self.queue.dir).write(&ticket.file_name(), &to_pretty_bytes(ticket), Durability::Atomic)
    }

    /// The next arrival number, kept in the lock file (a readable number; when it is not, the
    /// newest ticket's number is the base).
    fn next_seq(&self) -> io::Result<u64> {
        let path = self.queue.dir.join(names::CAPACITY_LOCK);
        let mut buf = [0u8; 32];
        let read = retry_eintr(|| rustix::io::pread(&self.fd, &mut buf, 0)).map_err(|e| os_error(e, "read", &path))?;
        let stored = std::str::from_utf8(&buf[..read])
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok());
        let last = match stored {
            Some(last) => last,
            None => {
                retry_eintr(|| fs::ftruncate(&self.fd, 0)).map_err(|e| os_error(e, "truncate", &path))?;
                self.queue.tickets()?.last().map_or(0, |t| t.seq)
            }
        };
        let next = last.saturating_add(1);
        let text = format!("{next:020}\n");
        retry_eintr(|| rustix::io::pwrite(&self.fd, text.as_bytes(), 0)).map_err(|e| os_error(e, "write", &path))?;
        Ok(next)
    }
}

impl Drop for QueueLock<'_> {
    fn drop(&mut self) {
        let _ = fs::flock(&self.fd, FlockOperation::Unlock);
    }
}

/// Promotes waiting tickets in arrival order while fewer than a ticket's cap hold a slot; the
/// first that cannot be promoted holds back those behind it (nobody overtakes). Returns the
/// indices promoted.
pub fn promote(tickets: &mut [Ticket]) -> Vec<usize> {
    let mut claimed = tickets.iter().filter(|t| t.claimed).count();
    let mut promoted = Vec::new();
    for (i, ticket) in tickets.iter_mut().enumerate() {
        if ticket.claimed {
            continue;
        }
        let fits = ticket
            .max_active
            .is_none_or(|cap| claimed < usize::try_from(cap.max(1)).unwrap_or(usize::MAX));
        if !fits {
            break;
        }
        ticket.claimed = true;
        claimed += 1;
        promoted.push(i);
    }
    promoted
}

/// `run_id`'s place among the waiting tickets (1 = next), when it waits.
pub fn queue_position(tickets: &[Ticket], run_id: &str) -> Option<usize> {
    tickets
        .iter()
        .filter(|t| !t.claimed)
        .position(|t| t.run_id == run_id)
        .map(|p| p + 1)
}
