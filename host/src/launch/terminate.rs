//! Pre-proceed termination of the shim (X1): SIGTERM, wait up to the grace for the exit
//! watcher; SIGKILL, wait again. Before each signal the watcher is asked first, so a shim that
//! is already reaped is never signalled (F58). Waits are async timers (X2).

use super::exit_watcher::{ProcessControl, SignalOutcome, TermSignal};
use std::time::Duration;

/// What the termination did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Termination {
    /// The exit was observed by the end (`terminationObserved`).
    pub observed: bool,
    /// Signals actually sent, in order.
    pub sent: Vec<TermSignal>,
    /// Signal errors (F27: `EPERM`), for diagnostics.
    pub errors: Vec<String>,
}

/// Terminates the shim per X1 with `grace` after each signal.
pub async fn terminate_runner(control: &dyn ProcessControl, grace: Duration) -> Termination {
    let mut report = Termination::default();
    for signal in [TermSignal::Term, TermSignal::Kill] {
        if control.exit().is_some() {
            report.observed = true;
            return report;
        }
        match control.signal(signal) {
            SignalOutcome::AlreadyReaped => {
                report.observed = true;
                return report;
            }
            SignalOutcome::Sent => report.sent.push(signal),
            SignalOutcome::Failed(e) => report.errors.push(format!("{signal:?}: {e}")),
        }
        if tokio::time::timeout(grace, control.wait_exit()).await.is_ok() {
            report.observed = true;
            return report;
        }
    }
    report.observed = control.exit().is_some();
    report
}
