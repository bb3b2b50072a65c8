//! What running runs may still spend (U9): one reservation per run that is held to a spend
//! limit, `<root>/usage/reservations/<runId>.json`, taken under the usage lock
//! (`<root>/usage/.lock`, an `flock`) together with the check that it fits, so that two
//! launches never both take the last dollar. A reservation shrinks as the run's steps end (what
//! they spent is in the ledger by then) and goes when the run ends. The reservation of a runner
//! that died is released by the next one who looks (the same liveness test as capacity tickets:
//! pid and start identity), or by `status`/`list` repairing the run.

use super::totals::ledger_used;
use super::{Amount, Per, Shortfall, SpendPlan, first_shortfall};
use crate::files::atomic::Durability;
use crate::files::dir::Dir;
use crate::files::doc::ReadDoc;
use crate::files::lock::FileLock;
use crate::os::processes::Processes;
use crate::procinfo::Liveness;
use crate::records::ledger::{LEDGER_DIR, Ledger};
use rustix::fs::FileType;
use serde::{Deserialize, Serialize};
use std::io;

/// `<root>/usage/reservations`.
pub const RESERVATIONS_DIR: &str = "reservations";
/// The usage lock's file in `<root>/usage`.
const LOCK: &str = ".lock";

/// One run's reservation.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Reservation {
    /// The run.
    pub run: String,
    /// Its tree's root run.
    pub tree_root: String,
    /// The agents of its steps.
    pub agents: Vec<String>,
    /// The providers of its steps.
    pub providers: Vec<String>,
    /// What it may still spend.
    pub amount: Amount,
    /// Its runner's pid.
    pub pid: u32,
    /// Its runner's start identity.
    pub pid_start_identity: Option<String>,
    /// When it was taken (epoch ms).
    pub at: u64,
}

/// Whether a run fits, and what it was held to.
#[derive(Clone, Debug, PartialEq)]
pub enum Admission {
    /// Reserved: what others had spent and reserved, per limit of the plan, when it was taken.
    Reserved(Vec<Amount>),
    /// It does not fit.
    Short(Shortfall),
}

/// A runner asking for a reservation.
#[derive(Clone, Copy, Debug)]
pub struct Runner<'a> {
    /// The run.
    pub run: &'a str,
    /// Its runner's pid.
    pub pid: u32,
    /// Its runner's start identity.
    pub pid_start_identity: Option<&'a str>,
}

/// The reservations and the ledger of one state root.
#[derive(Debug)]
pub struct SpendBook {
    usage: Dir,
    reservations: Dir,
    ledger: Ledger,
}

impl SpendBook {
    /// The book under `<root>`, creating `<root>/usage/reservations` when missing.
    pub fn open(root: &Dir) -> io::Result<Self> {
        let reservations = root.ensure_path(&[LEDGER_DIR, RESERVATIONS_DIR])?;
        let usage = root
            .open_path(&[LEDGER_DIR])?
            .ok_or_else(|| io::Error::other("the usage directory went away"))?;
        Ok(Self {
            ledger: Ledger::under(root.path()),
            usage,
            reservations,
        })
    }

    /// Blocks until the usage lock is held.
    pub fn lock(&self) -> io::Result<FileLock> {
        FileLock::exclusive(&self.usage, LOCK)
    }

    /// Whether `plan`'s run would fit now, without reserving (the launching host's look, which
    /// decides whether the run is recorded `queued`).
    pub fn check(
        &self,
        run: &str,
        plan: &SpendPlan,
        now: u64,
        processes: &dyn Processes,
    ) -> io::Result<Option<Shortfall>> {
        let _lock = self.lock()?;
        let others = self.others(run, plan, now, processes)?;
        Ok(first_shortfall(plan, &others, now))
    }

    /// Reserves `plan.estimate` for `runner` when the run fits under every limit binding it.
    pub fn reserve(
        &self,
        runner: Runner<'_>,
        plan: &SpendPlan,
        now: u64,
        processes: &dyn Processes,
    ) -> io::Result<Admission> {
        let _lock = self.lock()?;
        let others = self.others(runner.run, plan, now, processes)?;
        if let Some(short) = first_shortfall(plan, &others, now) {
            return Ok(Admission::Short(short));
        }
        let reservation = Reservation {
            run: runner.run.to_owned(),
            tree_root: plan.tree_root.clone(),
            agents: plan.agents.clone(),
            providers: plan.providers.clone(),
            amount: plan.estimate,
            pid: runner.pid,
            pid_start_identity: runner.pid_start_identity.map(str::to_owned),
            at: now,
        };
        self.reservations
            .write_doc(&file_name(runner.run), &reservation, Durability::Atomic)?;
        Ok(Admission::Reserved(others))
    }

    /// Shrinks `run`'s reservation to what is left of its estimate after it spent `spent` (which
    /// the ledger now holds).
    pub fn settle(&self, run: &str, estimate: Amount, spent: Amount) -> io::Result<()> {
        let _lock = self.lock()?;
        let name = file_name(run);
        if let ReadDoc::Present(mut reservation) = self.reservations.read_doc::<Reservation>(&name)? {
            reservation.amount = estimate.minus(spent);
            self.reservations.write_doc(&name, &reservation, Durability::Atomic)?;
        }
        Ok(())
    }

    /// Releases `run`'s reservation.
    pub fn release(&self, run: &str) -> io::Result<()> {
        self.reservations.remove(&file_name(run))
    }

    /// What the ledger and the other live reservations hold against each of `plan`'s limits;
    /// dead runners' reservations are removed on the way.
    fn others(&self, run: &str, plan: &SpendPlan, now: u64, processes: &dyn Processes) -> io::Result<Vec<Amount>> {
        let mut used = ledger_used(
            &self.usage,
            &self.ledger,
            &plan.limits,
            &plan.tree_root,
            now,
            plan.utc_offset_s,
        )?;
        for reservation in self.live(processes)? {
            if reservation.run == run {
                continue;
            }
            for (limit, sum) in plan.limits.iter().zip(used.iter_mut()) {
                let bound = limit
                    .provider
                    .as_ref()
                    .is_none_or(|p| reservation.providers.contains(p))
                    && limit.agent.as_ref().is_none_or(|a| reservation.agents.contains(a))
                    && (limit.per != Per::Tree || reservation.tree_root == plan.tree_root);
                if bound {
                    *sum = sum.plus(reservation.amount);
                }
            }
        }
        Ok(used)
    }

    /// The reservations whose runners live; the others are removed.
    pub fn live(&self, processes: &dyn Processes) -> io::Result<Vec<Reservation>> {
        let mut live = Vec::new();
        for entry in self.reservations.entries()? {
            if entry.file_type != FileType::RegularFile {
                continue;
            }
            let Some(name) = entry.name.to_str().filter(|n| n.ends_with(".json")) else {
                continue;
            };
            let reservation = match self.reservations.read_doc::<Reservation>(name)? {
                ReadDoc::Present(reservation) => reservation,
                // A reservation cut short by a crash holds nothing.
                _ => {
                    self.reservations.remove(name)?;
                    continue;
                }
            };
            if processes.liveness(reservation.pid, reservation.pid_start_identity.as_deref()) == Liveness::Dead {
                self.reservations.remove(name)?;
                continue;
            }
            live.push(reservation);
        }
        Ok(live)
    }
}

/// `<runId>.json` (run ids are checked names).
fn file_name(run: &str) -> String {
    format!("{run}.json")
}

#[cfg(test)]
mod tests {
    use super::super::{Per, SpendLimit};
    use super::*;
    use crate::os::processes::RealProcesses;

    fn plan(estimate: f64) -> SpendPlan {
        SpendPlan {
            limits: vec![SpendLimit {
                per: Per::Day,
                cost_usd: Some(1.0),
                tokens: None,
                provider: None,
                agent: None,
            }],
            estimate: Amount {
                cost_usd: estimate,
                tokens: 0,
            },
            tree_root: "r".into(),
            ..SpendPlan::default()
        }
    }

    #[test]
    fn reservations_share_the_allowance_and_a_dead_runners_is_released() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Dir::open(tmp.path()).unwrap();
        let book = SpendBook::open(&root).unwrap();
        let me = Runner {
            run: "r1",
            pid: std::process::id(),
            pid_start_identity: None,
        };
        assert!(matches!(
            book.reserve(me, &plan(0.6), 0, &RealProcesses).unwrap(),
            Admission::Reserved(_)
        ));
        let two = Runner { run: "r2", ..me };
        let Admission::Short(short) = book.reserve(two, &plan(0.6), 0, &RealProcesses).unwrap() else {
            panic!("r2 fits beside r1's reservation");
        };
        assert_eq!(short.reason(), "spend limit: $0.60 of $1.00 used today");
        // r1 spent 0.1 of its 0.6: 0.5 stays reserved.
        book.settle(
            "r1",
            plan(0.6).estimate,
            Amount {
                cost_usd: 0.1,
                tokens: 0,
            },
        )
        .unwrap();
        assert!(matches!(
            book.reserve(two, &plan(0.5), 0, &RealProcesses).unwrap(),
            Admission::Reserved(_)
        ));
        book.release("r2").unwrap();
        // A runner that died holds nothing.
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        gone.wait().unwrap();
        let dead = Runner {
            run: "r3",
            pid: gone.id(),
            pid_start_identity: None,
        };
        book.release("r1").unwrap();
        assert!(matches!(
            book.reserve(dead, &plan(0.9), 0, &RealProcesses).unwrap(),
            Admission::Reserved(_)
        ));
        assert!(matches!(
            book.reserve(two, &plan(0.9), 0, &RealProcesses).unwrap(),
            Admission::Reserved(_)
        ));
        assert_eq!(book.live(&RealProcesses).unwrap().len(), 1);
    }
}
