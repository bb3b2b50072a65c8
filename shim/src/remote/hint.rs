//! P-H12: one operator hint for a placed step that failed, from its exit code and stderr; the
//! first matching cause wins.

use sublaunch_protocol::records::config::AdapterId;

/// What a hint needs to know about the step.
#[derive(Clone, Debug)]
pub struct HintInput<'a> {
    /// The machine's catalog id.
    pub machine: &'a str,
    /// The ssh target.
    pub target: &'a str,
    /// The directory on the machine.
    pub cwd: &'a str,
    /// The adapter id (`claude-code-writer` …).
    pub adapter: &'a str,
    /// Whether READY was seen.
    pub ready: bool,
    /// The step's exit code (ssh's, or the remote command's).
    pub exit_code: Option<i32>,
    /// The step's stderr (its tail).
    pub stderr: &'a str,
}

/// The hint for `input`, if a cause is recognised; writer adapters also get a note that their
/// changes live on the machine.
pub fn failure_hint(input: &HintInput<'_>) -> Option<String> {
    let cause = cause(input);
    let writer = AdapterId::from_id(input.adapter)
        .is_some_and(AdapterId::is_writer)
        .then(|| {
            format!(
                "Changes made by this agent live on '{}' at {}.",
                input.machine, input.cwd
            )
        });
    let parts: Vec<String> = [cause, writer].into_iter().flatten().collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

fn cause(input: &HintInput<'_>) -> Option<String> {
    let err = input.stderr.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| err.contains(n));
    let (machine, target) = (input.machine, input.target);
    if has(&["host key verification failed", "remote host identification has changed"]) {
        return Some(format!(
            "Hint: the host key of '{machine}' is not trusted here. Connect once with `ssh {target}` to check and accept it (sublaunch keeps StrictHostKeyChecking on)."
        ));
    }
    if has(&[
        "permission denied",
        "publickey",
        "too many authentication failures",
        "no such identity",
        "password",
    ]) {
        return Some(format!(
            "Hint: ssh could not authenticate to '{machine}'. Check the identity with `ssh {target} true` (ssh-add, IdentityFile); sublaunch never prompts for a password."
        ));
    }
    if has(&[
        "could not resolve hostname",
        "connection refused",
        "connection timed out",
        "no route to host",
        "operation timed out",
        "network is unreachable",
    ]) {
        return Some(format!(
            "Hint: ssh could not reach '{machine}' ({target}). Check that it is up and that `ssh {target} true` works."
        ));
    }
    if has(&[
        "is not recognized as an internal or external command",
        "the term 'sh' is not recognized",
        "'sh' is not recognized",
    ]) {
        return Some(format!(
            "Hint: '{machine}' is not a POSIX host; sublaunch needs `sh` there."
        ));
    }
    if input.exit_code == Some(125) || (!input.ready && has(&["cd:", "can't cd"])) {
        return Some(format!(
            "Hint: nothing at {} on '{machine}'. Clone the repository there first, or give a directory that exists on the machine (--cwd, or subagents.machines.<name>.cwd in settings).",
            input.cwd
        ));
    }
    if input.exit_code == Some(127) || err.trim_end().ends_with("not found") || has(&["command not found"]) {
        return Some(format!(
            "Hint: the agent's program is missing on '{machine}'. Install it there, or point the agent's runner.command at its absolute path on the machine."
        ));
    }
    if input.exit_code == Some(255) && input.ready {
        return Some(format!(
            "Hint: the connection to '{machine}' dropped while the agent ran (ssh exited 255)."
        ));
    }
    if has(&[
        "not logged in",
        "please log in",
        "api key",
        "unauthorized",
        "authentication required",
    ]) {
        return Some(format!(
            "Hint: log in to the agent's CLI on '{machine}' (its credentials are the machine's own)."
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input<'a>(exit_code: Option<i32>, stderr: &'a str, ready: bool) -> HintInput<'a> {
        HintInput {
            machine: "box",
            target: "box",
            cwd: "~/w",
            adapter: "claude-code-writer",
            ready,
            exit_code,
            stderr,
        }
    }

    #[test]
    fn h12_first_matching_cause_wins_and_writers_get_the_note() {
        let hint = failure_hint(&input(Some(255), "Host key verification failed.\r\n", false)).unwrap();
        assert!(
            hint.contains("host key of 'box'") && hint.contains("live on 'box' at ~/w"),
            "{hint}"
        );
        let hint = failure_hint(&input(
            Some(255),
            "user@127.0.0.1: Permission denied (publickey).",
            false,
        ))
        .unwrap();
        assert!(hint.contains("could not authenticate"), "{hint}");
        let hint = failure_hint(&input(
            Some(255),
            "ssh: connect to host 127.0.0.1 port 9: Connection refused",
            false,
        ))
        .unwrap();
        assert!(hint.contains("could not reach"), "{hint}");
        let hint = failure_hint(&input(Some(125), "sh: 1: cd: can't cd to /nope", false)).unwrap();
        assert!(hint.contains("nothing at ~/w"), "{hint}");
        let hint = failure_hint(&input(Some(127), "sh: 1: claude: not found", true)).unwrap();
        assert!(hint.contains("missing on 'box'"), "{hint}");
        let hint = failure_hint(&input(
            Some(255),
            "Connection to 127.0.0.1 closed by remote host.",
            true,
        ))
        .unwrap();
        assert!(hint.contains("dropped"), "{hint}");
    }
}
