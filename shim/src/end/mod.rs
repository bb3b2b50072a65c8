//! How a run ends: each step's outcome and its judging (adapter verdict, structured output, model check), the end records, the completion hook and the exit code.

pub mod exit;
pub mod hook;
pub mod model_check;
pub mod output_file;
pub mod record;
pub mod step_end;
pub mod structured;
pub mod validator;
pub mod verdict;
pub mod worktree;
