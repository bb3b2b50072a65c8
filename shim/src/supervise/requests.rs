//! What is asked of the run while it runs: stop signals and SIGUSR2 (X9), SIGUSR1 (a cluster
//! job's time limit is near, J10), the control inbox
//! (R12) and the deadline each become a typed [`Request`]; [`Requests`] keeps what arrived,
//! and [`Requests::ending`] says how it ends the run. The supervisor and the capacity wait
//! ([`super::queue`]) take requests the same way.

use crate::process::signals;
use crate::step::end::STOP_BY_USER_MESSAGE;

/// Who asked the run to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopBy {
    /// A stop signal to the runner (X9).
    Signal(i32),
    /// `control/stop.json` (R12).
    User,
}

impl StopBy {
    /// The stop message a step ended by this stop records.
    pub fn message(self) -> String {
        match self {
            Self::Signal(signal) => format!("Subagent stopped: runner received {}.", signals::name(signal)),
            Self::User => STOP_BY_USER_MESSAGE.to_owned(),
        }
    }
}

/// One request to the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// Stop every agent and start nothing new (a stop signal, `stop.json`).
    Stop(StopBy),
    /// The deadline passed, or `timeout.json` arrived.
    Timeout,
    /// Interrupt the agents and wait for an explicit next action (SIGUSR2, `interrupt.json`).
    Interrupt,
}

/// Whether the ladders already running keep their grace. A stop signal to a run that is
/// already stopping (or timed out) skips it (X9).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Escalation {
    /// The ladders go on at their pace.
    #[default]
    Graceful,
    /// Every running ladder goes to SIGKILL now.
    SkipGrace,
}

/// How the requests received so far end the run, the strongest first: a stop outranks a
/// timeout, which outranks an interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending<'a> {
    /// Stopped, with the first stop's message.
    Stopped(&'a str),
    /// Timed out.
    TimedOut,
    /// Interrupted.
    Interrupted,
}

/// The requests received so far. Each is kept, not only the strongest: a step's end records
/// them all (a stopped step also says it timed out when the deadline passed too).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requests {
    /// The first stop's message.
    stop: Option<String>,
    timed_out: bool,
    interrupted: bool,
    /// J10: the timeout is the cluster engine's warning that the job's time limit is near.
    at_job_time_limit: bool,
    /// The stop is the runner's own, for a crossed spend limit.
    by_limit: bool,
}

impl Requests {
    /// Takes `request`; says whether it asks running ladders to skip their grace.
    pub fn receive(&mut self, request: Request) -> Escalation {
        match request {
            Request::Stop(by) => {
                let stopping = self.stop.is_some() || self.timed_out;
                self.stop.get_or_insert_with(|| by.message());
                match by {
                    StopBy::Signal(_) if stopping => Escalation::SkipGrace,
                    _ => Escalation::Graceful,
                }
            }
            Request::Timeout => {
                self.timed_out = true;
                Escalation::Graceful
            }
            Request::Interrupt => {
                self.interrupted = true;
                Escalation::Graceful
            }
        }
    }

    /// A stop the runner decides itself (a spend limit was crossed), with its message.
    pub fn stop_for(&mut self, message: String) {
        if self.stop.is_none() {
            self.stop = Some(message);
            self.by_limit = true;
        }
    }

    /// Whether the stop is the runner's own, for a crossed spend limit.
    pub fn stopped_by_limit(&self) -> bool {
        self.by_limit
    }

    /// Takes the signals received since the last call (stop signals in order, then SIGUSR2).
    pub fn take_signals(&mut self) -> Escalation {
        let received = signals::take();
        let mut escalation = Escalation::Graceful;
        for signal in received.stops() {
            if self.receive(Request::Stop(StopBy::Signal(signal))) == Escalation::SkipGrace {
                escalation = Escalation::SkipGrace;
            }
        }
        if received.count(libc::SIGUSR2) > 0 {
            self.receive(Request::Interrupt);
        }
        // J10: only a cluster engine sends it (`sbatch --signal=B:USR1@…`), before the job's
        // time limit; the run then ends as at its own deadline, while its agents can still
        // be ended gracefully and its end recorded.
        if received.count(libc::SIGUSR1) > 0 {
            self.at_job_time_limit = true;
            self.receive(Request::Timeout);
        }
        escalation
    }

    /// Adds the requests of `other` (received earlier elsewhere); a stop message already here
    /// wins.
    pub fn merge(&mut self, other: Self) {
        if let Some(stop) = other.stop {
            self.stop.get_or_insert(stop);
        }
        self.timed_out |= other.timed_out;
        self.interrupted |= other.interrupted;
        self.at_job_time_limit |= other.at_job_time_limit;
    }

    /// Whether the timeout came from the cluster job's time limit (J10).
    pub fn at_job_time_limit(&self) -> bool {
        self.at_job_time_limit
    }

    /// How the run ends, if a request ends it.
    pub fn ending(&self) -> Option<Ending<'_>> {
        if let Some(message) = &self.stop {
            Some(Ending::Stopped(message))
        } else if self.timed_out {
            Some(Ending::TimedOut)
        } else if self.interrupted {
            Some(Ending::Interrupted)
        } else {
            None
        }
    }

    /// Whether no further step may start.
    pub fn ends_run(&self) -> bool {
        self.ending().is_some()
    }

    /// The first stop's message, if a stop arrived.
    pub fn stop_message(&self) -> Option<&str> {
        self.stop.as_deref()
    }

    /// Whether the run timed out (whatever else arrived).
    pub fn timed_out(&self) -> bool {
        self.timed_out
    }

    /// Whether an interrupt arrived (whatever else arrived).
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_stop_signal_skips_the_grace_and_the_first_message_wins() {
        let mut requests = Requests::default();
        assert_eq!(requests.receive(Request::Stop(StopBy::User)), Escalation::Graceful);
        assert_eq!(
            requests.receive(Request::Stop(StopBy::Signal(libc::SIGTERM))),
            Escalation::SkipGrace
        );
        assert_eq!(requests.ending(), Some(Ending::Stopped(STOP_BY_USER_MESSAGE)));
    }

    #[test]
    fn a_stop_signal_after_a_timeout_skips_the_grace_but_a_user_stop_does_not() {
        let mut requests = Requests::default();
        requests.receive(Request::Timeout);
        assert_eq!(requests.receive(Request::Stop(StopBy::User)), Escalation::Graceful);
        let mut requests = Requests::default();
        requests.receive(Request::Timeout);
        assert_eq!(
            requests.receive(Request::Stop(StopBy::Signal(libc::SIGINT))),
            Escalation::SkipGrace
        );
    }

    #[test]
    fn a_stop_outranks_a_timeout_which_outranks_an_interrupt_and_all_are_kept() {
        let mut requests = Requests::default();
        assert_eq!(requests.ending(), None);
        requests.receive(Request::Interrupt);
        assert_eq!(requests.ending(), Some(Ending::Interrupted));
        requests.receive(Request::Timeout);
        assert_eq!(requests.ending(), Some(Ending::TimedOut));
        let mut other = Requests::default();
        other.receive(Request::Stop(StopBy::User));
        requests.merge(other);
        assert_eq!(requests.ending(), Some(Ending::Stopped(STOP_BY_USER_MESSAGE)));
        assert!(requests.timed_out() && requests.interrupted());
    }
}
