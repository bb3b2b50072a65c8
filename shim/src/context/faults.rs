//! The shim's fault points (§T `SUBLAUNCH_SHIM_FAULT`, feature `test-hooks` only; production
//! builds parse nothing and every [`Ctx::fire`] is a no-op).
//!
//! Actions that act at once: `exit:<n>` (releases the lease first, like every exit path),
//! `sigkill-self`, `hang` / `hang-noterm` (wait for a stop signal, which is then handled as the
//! phase handles any stop signal), `sleep:<ms>`, `wallclock:<±ms>`, `close-doorbell`, `no-namespace` (the agents spawned from then on
//! get no PID namespace, as where the kernel refuses one: G43).
//! Actions that modify the **next record write** — a `runner-startup.json` state before commit,
//! the first status, the result or the candidate after it: `token:<v>` / `token:null`,
//! `state:<name>`, `corrupt`, `skip-write`, `doorbell-only`. So `before-ready:token:null`
//! changes the `ready` write and `after-ready:token:wrong` the `acknowledged` write.

use crate::context::Ctx;
use crate::process::signals;
use sublaunch_protocol::os::clock::ShiftedClock;
use sublaunch_protocol::os::faults::{SHIM_FAULT_VAR, ShimAction, ShimFaults, ShimPoint};

/// How the next record write is altered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteModifier {
    /// `token:<v>` (`Some(Some(v))`) or `token:null` (`Some(None)`).
    pub token: Option<Option<String>>,
    /// `state:<name>`.
    pub state: Option<String>,
    /// `corrupt`: write non-JSON.
    pub corrupt: bool,
    /// `skip-write`: write nothing (and ring nothing).
    pub skip: bool,
    /// `doorbell-only`: ring without writing.
    pub doorbell_only: bool,
}

/// The configured hooks plus the pending write modifier.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    hooks: ShimFaults,
    modifier: WriteModifier,
    /// `no-namespace` fired: spawn agents as if the kernel refused a PID namespace (G43).
    no_namespace: bool,
}

impl Faults {
    /// The hooks from `SUBLAUNCH_SHIM_FAULT` (test-hooks builds; otherwise none).
    pub fn from_env() -> Result<Self, String> {
        Ok(Self {
            hooks: ShimFaults::from_setting(std::env::var(SHIM_FAULT_VAR).ok().as_deref())?,
            modifier: WriteModifier::default(),
            no_namespace: false,
        })
    }

    /// Whether the agents are spawned as if the kernel refused them a PID namespace.
    pub fn refuse_containment(&self) -> bool {
        self.no_namespace
    }

    /// Takes the pending write modifier.
    pub fn take_modifier(&mut self) -> WriteModifier {
        std::mem::take(&mut self.modifier)
    }
}

/// What firing a point left for the caller to handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fired {
    /// Carry on.
    Continue,
    /// A `hang` ended by this stop signal: handle it like any stop signal of the phase.
    Stopped(i32),
}

/// The parts of the shim a fault action touches (available before the configuration is
/// read, for the `start` and `after-config` points).
pub struct Parts<'a> {
    /// The hooks and the pending modifier.
    pub faults: &'a mut Faults,
    /// The doorbell (`close-doorbell`).
    pub doorbell: &'a mut crate::context::doorbell::Doorbell,
    /// The clock (`wallclock`).
    pub clock: &'a ShiftedClock,
    /// R4 while hanging.
    pub parent: &'a mut crate::context::parent::ParentMonitor,
    /// The lease, released by `exit:<n>`.
    pub lease: &'a mut Option<crate::context::HeldLease>,
}

/// Runs the actions configured at `point`, in order.
pub fn fire(parts: Parts<'_>, point: ShimPoint) -> Fired {
    let actions: Vec<ShimAction> = parts.faults.hooks.actions(point).into_iter().cloned().collect();
    for action in actions {
        match action {
            ShimAction::Exit(code) => {
                release(parts.lease);
                std::process::exit(code);
            }
            ShimAction::SigkillSelf => {
                let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
                loop {
                    signals::wait(&mut [], None);
                }
            }
            ShimAction::Hang => return hang(parts.parent, parts.lease),
            ShimAction::HangNoterm => {
                signals::ignore(libc::SIGTERM);
                return hang(parts.parent, parts.lease);
            }
            ShimAction::Sleep(duration) => signals::sleep(duration),
            ShimAction::Token(token) => parts.faults.modifier.token = Some(token),
            ShimAction::State(state) => parts.faults.modifier.state = Some(state),
            ShimAction::Corrupt => parts.faults.modifier.corrupt = true,
            ShimAction::SkipWrite => parts.faults.modifier.skip = true,
            ShimAction::DoorbellOnly => parts.faults.modifier.doorbell_only = true,
            ShimAction::Wallclock(delta) => parts.clock.shift_wall(delta),
            ShimAction::CloseDoorbell => parts.doorbell.close(),
            ShimAction::NoNamespace => parts.faults.no_namespace = true,
        }
    }
    Fired::Continue
}

fn release(lease: &mut Option<crate::context::HeldLease>) {
    if let Some(held) = lease.take()
        && let Err(e) = held.lease.release()
    {
        eprintln!("sublaunch-shim: cannot release the session lease: {e}");
    }
}

/// Sleeps until a stop signal arrives (the test parent still counts, R4).
fn hang(parent: &mut crate::context::parent::ParentMonitor, lease: &mut Option<crate::context::HeldLease>) -> Fired {
    loop {
        let received = signals::take();
        if let Some(signal) = received.stops().first() {
            return Fired::Stopped(*signal);
        }
        if parent.gone(std::time::Instant::now()) {
            release(lease);
            crate::process::exit::report("the test parent process exited.");
            std::process::exit(crate::process::exit::RECORDING_FAILED);
        }
        let timeout = parent
            .due()
            .map(|due| due.saturating_duration_since(std::time::Instant::now()));
        signals::wait(&mut [], timeout);
    }
}

impl Ctx {
    /// Runs the actions configured at `point` (see [`fire`]).
    pub fn fire(&mut self, point: ShimPoint) -> Fired {
        fire(
            Parts {
                faults: &mut self.faults,
                doorbell: &mut self.doorbell,
                clock: &self.clock,
                parent: &mut self.parent,
                lease: &mut self.lease,
            },
            point,
        )
    }
}

/// The variable naming a file whose number shifts the runner's wall clock, read at each look
/// (test-hooks builds): a test moves a waiting run's day forward (U9).
#[cfg(feature = "test-hooks")]
pub const CLOCK_FILE_VAR: &str = "SUBLAUNCH_SHIM_TEST_CLOCK_FILE";

/// The runner's clock: the system's, shifted by the number in `SUBLAUNCH_SHIM_TEST_CLOCK_FILE`
/// in test-hooks builds.
pub fn test_clock() -> std::sync::Arc<dyn sublaunch_protocol::os::clock::Clock> {
    #[cfg(feature = "test-hooks")]
    if let Some(path) = std::env::var_os(CLOCK_FILE_VAR).filter(|v| !v.is_empty()) {
        return std::sync::Arc::new(sublaunch_protocol::os::clock::FileShiftedClock::new(path.into()));
    }
    std::sync::Arc::new(sublaunch_protocol::os::clock::SystemClock)
}

/// The flag-file variable of a simulated full disk.
#[cfg(feature = "test-hooks")]
pub const DISK_FULL_VAR: &str = "SUBLAUNCH_SHIM_TEST_ENOSPC";
/// What the full disk fails (comma-separated; default `status,marker`).
#[cfg(feature = "test-hooks")]
pub const DISK_FULL_TARGETS_VAR: &str = "SUBLAUNCH_SHIM_TEST_ENOSPC_TARGETS";

/// A simulated full disk for the A9/I7 rows (F42, F46; test-hooks builds): while the file
/// named by `SUBLAUNCH_SHIM_TEST_ENOSPC` exists, creating the temp files of `status.json`
/// (target `status`) or the run's active-run marker (target `marker`) fails with `ENOSPC`.
#[cfg(feature = "test-hooks")]
pub fn disk_full_files(run_id: &str) -> Option<std::sync::Arc<dyn sublaunch_protocol::os::files::Files>> {
    use std::path::PathBuf;
    use std::sync::Arc;
    use sublaunch_protocol::os::faults::AtStep;
    use sublaunch_protocol::os::faults::files::{FaultyFiles, Rule};
    let flag = PathBuf::from(std::env::var_os(DISK_FULL_VAR).filter(|v| !v.is_empty())?);
    let targets = std::env::var(DISK_FULL_TARGETS_VAR).unwrap_or_else(|_| "status,marker".into());
    let documents = targets
        .split(',')
        .filter_map(|target| match target.trim() {
            "status" => Some(sublaunch_protocol::files::layout::names::STATUS.to_owned()),
            "marker" => Some(run_id.to_owned()),
            _ => None,
        })
        .collect();
    let rule = Rule::new(Some(documents), rustix::io::Errno::NOSPC, AtStep::Create).while_exists(flag);
    Some(Arc::new(FaultyFiles::new(vec![rule])))
}
