//! An agent's output as it arrives (R11): drained in bounded reads, logged, kept in tails,
//! split into lines for the adapter's parser and `events.jsonl`, and cut off at the protocol
//! line limit.

use super::Supervisor;
use crate::adapter::{self, ParsedLine};
use crate::context::Ctx;
use crate::process::pipe::{self, Stream};
use crate::process::streams::{PROTOCOL_LINE_LIMIT, protocol_limit_message};
use crate::step::child::ChildRun;
use std::time::Instant;
use sublaunch_protocol::records::events;

impl Supervisor {
    /// Reads what `stream` has (bounded per wake so signals and timers stay responsive).
    pub(super) fn drain(&mut self, ctx: &Ctx, child: &mut ChildRun, stream: Stream) {
        let mut buf = [0u8; 64 * 1024];
        for _ in 0..16 {
            match child.io.pipe_and_parser(stream).0.read(&mut buf) {
                pipe::Read::Data(n) => {
                    let failed_before = child.io.protocol_failed;
                    self.on_data(ctx, child, stream, &buf[..n]);
                    if child.io.protocol_failed && !failed_before {
                        // Start the X6 ladder before reading on: the agent is still blocked
                        // on its full pipe and gets the SIGTERM (R11).
                        return;
                    }
                }
                pipe::Read::Eof => {
                    self.close_pipe(ctx, child, stream);
                    return;
                }
                pipe::Read::Empty => return,
            }
        }
    }

    fn on_data(&mut self, ctx: &Ctx, child: &mut ChildRun, stream: Stream, data: &[u8]) {
        let io = &mut child.io;
        io.last_data = Instant::now();
        io.log.write(data);
        let wall = ctx.now_wall();
        self.book.touch_activity(wall);
        match stream {
            Stream::Stdout => io.stdout_tail.push(data),
            Stream::Stderr => io.stderr_tail.push(data),
        }
        if stream == Stream::Stdout && io.protocol_failed {
            // Drained and counted (in `Pipe::read`), no longer split (R11).
            return;
        }
        let wants_lines = !self.events.is_truncated() || (stream == Stream::Stdout && io.parser.needs_lines());
        let origin = Origin {
            run_id: &ctx.cfg.id,
            index: child.index,
            agent: &child.agent,
            wall,
        };
        let events = &mut self.events;
        let (pipe, parser) = io.pipe_and_parser(stream);
        if wants_lines {
            pipe.lines.push(data, |line, full| {
                emit_line(events, parser, stream, line, full, &origin);
            });
        } else {
            pipe.lines.skip(data);
        }
        if stream == Stream::Stdout && pipe.lines.pending() > PROTOCOL_LINE_LIMIT {
            let message = protocol_limit_message(pipe.lines.pending());
            pipe.lines.abandon();
            io.protocol_failed = true;
            eprintln!("sublaunch-shim: {message}");
            child.protocol.get_or_insert(message);
        }
    }

    pub(super) fn close_pipe(&mut self, ctx: &Ctx, child: &mut ChildRun, stream: Stream) {
        let io = &mut child.io;
        let origin = Origin {
            run_id: &ctx.cfg.id,
            index: child.index,
            agent: &child.agent,
            wall: ctx.now_wall(),
        };
        let skip = stream == Stream::Stdout && io.protocol_failed;
        let events = &mut self.events;
        let (pipe, parser) = io.pipe_and_parser(stream);
        if !pipe.is_open() {
            return;
        }
        if skip {
            pipe.lines.abandon();
        } else {
            pipe.lines.finish(|line, full| {
                emit_line(events, parser, stream, line, full, &origin);
            });
        }
        pipe.close();
    }
}

/// Where a line came from.
struct Origin<'a> {
    run_id: &'a str,
    index: usize,
    agent: &'a str,
    wall: u64,
}

fn emit_line(
    events: &mut events::EventLog,
    parser: &mut dyn adapter::OutputParser,
    stream: Stream,
    line: &[u8],
    full: usize,
    origin: &Origin<'_>,
) {
    let parsed = match stream {
        Stream::Stdout => parser.stdout_line(line, full),
        Stream::Stderr => ParsedLine::Text,
    };
    match parsed {
        ParsedLine::Ignore => {}
        ParsedLine::Event(value) => {
            let mut event = events::Event::from_value(value);
            if event.get("ts").is_none() {
                event = event.with("ts", origin.wall);
            }
            let event = event
                .with("subagentSource", "child")
                .with("subagentRunId", origin.run_id)
                .with("subagentStepIndex", origin.index)
                .with("subagentAgent", origin.agent)
                .with("observedAt", origin.wall);
            events.append_diagnostic(&event);
        }
        ParsedLine::Text => {
            if events.is_truncated() {
                return;
            }
            let kind = match stream {
                Stream::Stdout => events::Stream::Stdout,
                Stream::Stderr => events::Stream::Stderr,
            };
            let text = String::from_utf8_lossy(line);
            let mut event = events::child_line(kind, origin.wall, &text, origin.run_id, origin.index, origin.agent);
            if full > line.len() {
                event = event.with("lineBytes", full);
            }
            events.append_diagnostic(&event);
        }
    }
}
