//! The lowest layer: the shim's own process and the processes it starts, with no knowledge
//! of agents, steps or runs. Signals ([`signals`]), reaping ([`reaper`]), the ladders and the
//! sweep that end a process tree ([`tree`], sparing the kept ssh masters of [`masters`]), the
//! agents' environment ([`mod@env`]), pipes and bounded output ([`pipe`], [`streams`], [`input`]),
//! short helper processes ([`bounded`]), what a forked child is given ([`child_setup`]) and
//! the exit codes ([`exit`]).

pub mod bounded;
pub mod child_setup;
pub mod env;
pub mod exit;
pub mod input;
pub mod masters;
pub mod namespace;
pub mod pipe;
pub mod reaper;
pub mod signals;
pub mod streams;
pub mod tree;
