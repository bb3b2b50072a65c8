//! One step's agent, above the adapters and placed steps: spawning it ([`spawn`]), where it
//! stands while it runs ([`child`], its budgets in [`budget`]), the text it is given
//! ([`placeholders`]), how it ended ([`end`]) and the judging of its output ([`verdict`],
//! [`structured`], [`validator`], [`model_check`]), its answer copied to a file
//! ([`output_file`]), what it left in its worktree ([`worktree`]), and the evidence its
//! acceptance contract asks for ([`acceptance`]).

pub mod acceptance;
pub mod budget;
pub mod child;
pub mod end;
pub mod gate;
pub mod model_check;
pub mod output_file;
pub mod placeholders;
pub mod spawn;
pub mod structured;
pub mod validator;
pub mod verdict;
pub mod worktree;
