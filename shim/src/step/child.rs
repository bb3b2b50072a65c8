//! One running agent of a step (R10–R13): its pipes, output parser, tails and log, and the
//! state of its termination (exit seen, ladder, X8 sweep). Several exist at once when a
//! parallel group runs; the supervisor (the layer above) drives them all from one `ppoll`
//! loop.

use crate::adapter::OutputParser;
use crate::process::pipe::{Pipe, Stream};
use crate::process::streams::{OutputLog, STDERR_TAIL_BYTES, Tail};
use crate::process::tree::{SweepOutcome, TreeKiller};
use crate::remote::RemoteChild;
use std::time::Instant;

/// The output machinery of one agent.
pub struct ChildIo {
    /// stdout.
    pub stdout: Pipe,
    /// stderr.
    pub stderr: Pipe,
    /// The adapter's reader of stdout.
    pub parser: Box<dyn OutputParser>,
    /// The end of stdout (the parser's `tail_bytes`).
    pub stdout_tail: Tail,
    /// The last 128 KiB of stderr (R11).
    pub stderr_tail: Tail,
    /// `output-<n>.log`.
    pub log: OutputLog,
    /// The R11 protocol limit was hit: stdout is only drained and counted.
    pub protocol_failed: bool,
    /// When data last arrived (X7).
    pub last_data: Instant,
    /// Its standard input, when it takes messages while it runs.
    pub input: Option<crate::process::input::AgentInput>,
    /// The checkpoint was written to its input.
    pub checkpointed: bool,
}

impl ChildIo {
    /// The machinery for pipes `stdout`/`stderr` read by `parser`, logging to `log`.
    pub fn new(stdout: Pipe, stderr: Pipe, parser: Box<dyn OutputParser>, log: OutputLog) -> Self {
        let tail = parser.tail_bytes();
        Self {
            stdout,
            stderr,
            parser,
            stdout_tail: Tail::new(tail),
            stderr_tail: Tail::new(STDERR_TAIL_BYTES),
            log,
            protocol_failed: false,
            last_data: Instant::now(),
            input: None,
            checkpointed: false,
        }
    }

    /// The pipe of `stream`, with the parser (borrowed together).
    pub fn pipe_and_parser(&mut self, stream: Stream) -> (&mut Pipe, &mut dyn OutputParser) {
        let pipe = match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        };
        (pipe, self.parser.as_mut())
    }

    /// Whether either pipe is still read.
    pub fn any_open(&self) -> bool {
        self.stdout.is_open() || self.stderr.is_open()
    }
}

impl std::fmt::Debug for ChildIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildIo")
            .field("stdout", &self.stdout)
            .field("stderr", &self.stderr)
            .field("protocol_failed", &self.protocol_failed)
            .finish_non_exhaustive()
    }
}

/// One spawned agent and where its supervision stands.
#[derive(Debug)]
pub struct ChildRun {
    /// Flat step index.
    pub index: usize,
    /// Agent name.
    pub agent: String,
    /// Its pid (= its process group).
    pub pid: u32,
    /// Monotonic start.
    pub started: Instant,
    /// Wall ms at start.
    pub started_wall: u64,
    /// Its output.
    pub io: ChildIo,
    /// When its exit was reaped.
    pub exit_seen: Option<Instant>,
    /// The ladder against its group.
    pub killer: Option<TreeKiller>,
    /// When the ladder decided.
    pub killer_done_at: Option<Instant>,
    /// The X8 sweep after its group emptied.
    pub swept: Option<SweepOutcome>,
    /// The R11 protocol failure message.
    pub protocol: Option<String>,
    /// A stop aimed at this child alone (a failFast sibling failed), with its message.
    pub cancel: Option<String>,
    /// The budget it (or the run) crossed: it is stopped and its step fails.
    pub budget: Option<crate::step::budget::Exceeded>,
    /// What its agent reported spending, read from its parser once after each read of its
    /// output, so that the checks of one pass of the event loop share one copy.
    pub spent: crate::adapter::Spent,
    /// What of its usage the ledger holds already (U1), and when it was appended.
    pub ledgered: sublaunch_protocol::records::usage::Usage,
    /// When its usage was last appended to the ledger.
    pub ledgered_at: Option<Instant>,
    /// When its text so far was last looked at to be saved beside the run, and a digest of the
    /// text saved (D2).
    pub partial_saved: Option<(Instant, u64)>,
    /// Its conversation handle is in the status (D2).
    pub session_recorded: bool,
    /// The last rate limit its CLI reported that the runner struck against the provider.
    pub rate_limited: Option<crate::adapter::RateLimited>,
    /// Stopped to be run again after its provider's cooldown: refused before doing any work.
    pub rate_limit_stop: bool,
    /// The machine it runs on, when placed.
    pub remote: Option<RemoteChild>,
    /// What ends its process tree with the runner (G43).
    pub containment: crate::process::namespace::Containment,
    /// Its pid as the host names it, for the records (G45).
    pub host_pid: u32,
    /// The verification command it is, when it is one rather than an agent (G78).
    pub gate: Option<Box<crate::step::gate::Gate>>,
}

impl ChildRun {
    /// A child just spawned: nothing about its end known yet, no stop aimed at it alone.
    #[allow(clippy::too_many_arguments)]
    pub fn started(
        index: usize,
        agent: String,
        pid: u32,
        started_wall: u64,
        io: ChildIo,
        remote: Option<RemoteChild>,
        containment: crate::process::namespace::Containment,
        host_pid: u32,
    ) -> Self {
        Self {
            index,
            agent,
            pid,
            started: Instant::now(),
            started_wall,
            io,
            exit_seen: None,
            killer: None,
            killer_done_at: None,
            swept: None,
            protocol: None,
            cancel: None,
            budget: None,
            spent: crate::adapter::Spent::default(),
            ledgered: sublaunch_protocol::records::usage::Usage::default(),
            ledgered_at: None,
            partial_saved: None,
            session_recorded: false,
            rate_limited: None,
            rate_limit_stop: false,
            remote,
            containment,
            host_pid,
            gate: None,
        }
    }

    /// Whether everything about this agent is settled: reaped, pipes closed, group verified
    /// and swept.
    pub fn is_done(&self) -> bool {
        self.exit_seen.is_some() && !self.io.any_open() && self.swept.is_some()
    }
}
