//! Run ids: `<agent-slug>-<8 lowercase base36 random chars>`, always valid per
//! `layout::validate_run_id` (a letter or digit first, then `[a-z0-9-]`).

use sublaunch_protocol::os::random::{OsRandom, RandomSource};

/// Longest agent slug kept in a run id.
const SLUG_MAX: usize = 40;
/// Random base36 characters after the slug.
const SUFFIX_LEN: usize = 8;

/// A new run id for `agent` from the OS random source.
pub fn new_run_id(agent: &str) -> String {
    new_run_id_with(agent, &OsRandom)
}

/// A new run id for `agent` from `random` (the seam of the launch options).
pub fn new_run_id_with(agent: &str, random: &dyn RandomSource) -> String {
    format!("{}-{}", slug(agent), base36_suffix(random))
}

/// The agent name reduced to `[a-z0-9-]`: other characters become `-`, runs of `-` collapse,
/// no leading or trailing `-`, at most 40 characters; `run` when nothing is left.
pub fn slug(agent: &str) -> String {
    let mut out = String::new();
    for c in agent.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.len() >= SLUG_MAX {
            break;
        }
    }
    let trimmed = out.trim_end_matches('-');
    if trimmed.is_empty() {
        "run".to_owned()
    } else {
        trimmed.to_owned()
    }
}

fn base36_suffix(random: &dyn RandomSource) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    // 36^8 < 2^42: one 64-bit value gives all eight digits with negligible bias.
    let mut value = random.next_u64();
    (0..SUFFIX_LEN)
        .map(|_| {
            let digit = DIGITS[usize::try_from(value % 36).unwrap_or(0)];
            value /= 36;
            char::from(digit)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sublaunch_protocol::files::layout::validate_run_id;
    use sublaunch_protocol::os::random::SequenceRandom;

    #[test]
    fn ids_are_valid_and_named_after_the_agent() {
        for agent in ["shell", "Code Reviewer", "--x--", "", "ünï", "a/b..c", &"x".repeat(90)] {
            let id = new_run_id(agent);
            validate_run_id(&id).unwrap();
            let (slug_part, suffix) = id.rsplit_once('-').unwrap();
            assert_eq!(suffix.len(), 8);
            assert!(suffix.bytes().all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()));
            assert!(slug_part.len() <= SLUG_MAX);
        }
        assert_eq!(slug("Code Reviewer"), "code-reviewer");
        assert_eq!(slug("--x--"), "x");
        assert_eq!(slug("ünï"), "n");
        assert_eq!(new_run_id_with("shell", &SequenceRandom::new([0])), "shell-00000000");
        assert_ne!(new_run_id("shell"), new_run_id("shell"));
    }
}
