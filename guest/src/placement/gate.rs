//! The runner and host gate of placement (rules P2, P17): which children may be placed at all.
//! It runs before every other placement rule, so its refusal wins over selector, catalog,
//! settings and cwd errors.

use crate::children::Child;
use crate::runner;
use sublaunch_contract::{AdapterId, Agent, ErrorCode, PlanError};

/// The external-cli adapters whose quoting sublaunch owns and which may therefore run on a
/// saved machine (P2 step 2, README "sublaunch additions": `shell`), in the order messages
/// list them.
fn code_owned_adapters() -> impl Iterator<Item = &'static str> {
    AdapterId::EXTERNAL
        .into_iter()
        .filter(|a| a.is_code_owned())
        .map(AdapterId::id)
}

/// Platform names that mean a Windows host (P17). `windows` is the contract's name; `win32`
/// is Node's, accepted too so that a host passing it cannot slip past the refusal.
const WINDOWS_PLATFORMS: [&str; 2] = ["windows", "win32"];

/// Refuses a child that cannot be placed (P2 steps 1–4, in that order): a runner that is
/// neither native nor external-cli, an external-cli adapter sublaunch does not own, a managed
/// worktree (J12: not on a cluster, whose nodes share the file system the worktree is made
/// on), or a Windows host. `machine` is the requested value as given (untrimmed).
pub fn check(
    child: &Child<'_>,
    agent: &Agent,
    machine: &str,
    platform: Option<&str>,
    on_cluster: bool,
) -> Result<(), PlanError> {
    let refuse = |reason: String| {
        Err(PlanError::new(
            ErrorCode::MachineRunnerUnsupported,
            format!(
                "Agent '{}' ({}) cannot be placed on machine '{machine}': {reason}.",
                agent.name,
                child.position.describe()
            ),
        ))
    };
    match runner::runner_type(agent) {
        None | Some("native") => {}
        Some("external-cli") => {
            let adapter = agent.runner.as_ref().and_then(|r| r.adapter.as_deref());
            if !adapter
                .and_then(AdapterId::external)
                .is_some_and(AdapterId::is_code_owned)
            {
                return refuse(generic_adapter_reason(adapter));
            }
        }
        Some(other) => {
            return refuse(format!(
                "runner type '{other}' cannot run on a saved machine; only native agents and the \
                 code-owned external-cli adapters can"
            ));
        }
    }
    if child.worktree && !on_cluster {
        return refuse(
            "a managed worktree is a local git checkout and cannot be combined with a machine; \
             drop worktree or the machine"
                .to_owned(),
        );
    }
    if platform.is_some_and(|p| WINDOWS_PLATFORMS.contains(&p)) {
        return refuse(
            "placement on saved machines is not supported on a Windows host (no StreamLocal \
             forwarding; rules P2, P17)"
                .to_owned(),
        );
    }
    Ok(())
}

fn generic_adapter_reason(adapter: Option<&str>) -> String {
    let which = match adapter {
        Some(id) => format!("adapter '{id}' is a generic external-cli command"),
        None => "an external-cli runner without an adapter is a generic external-cli command".to_owned(),
    };
    format!(
        "{which}, whose quoting sublaunch does not own; placeable adapters are {}",
        code_owned_adapters().collect::<Vec<_>>().join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::children::{ChildFields, Position};
    use sublaunch_contract::Runner;

    fn child(worktree: bool) -> Child<'static> {
        Child {
            position: Position::Sequential { step: 0 },
            path: "steps[0]".to_owned(),
            fields: ChildFields {
                agent: "a",
                task: "t",
                model: None,
                thinking: None,
                machine: None,
                cwd: None,
                output_schema: None,
                ..ChildFields::default()
            },
            group_machine: None,
            worktree,
            group_permissions: None,
        }
    }

    fn agent(kind: Option<&str>, adapter: Option<&str>) -> Agent {
        Agent {
            name: "a".to_owned(),
            runner: Some(Runner {
                kind: kind.map(str::to_owned),
                adapter: adapter.map(str::to_owned),
            }),
            ..Agent::default()
        }
    }

    fn refusal(result: Result<(), PlanError>) -> String {
        let error = result.expect_err("refused");
        assert_eq!(error.code, ErrorCode::MachineRunnerUnsupported);
        error.message
    }

    #[test]
    fn p2_native_and_code_owned_adapters_pass() {
        assert!(
            check(
                &child(false),
                &Agent {
                    name: "a".into(),
                    ..Agent::default()
                },
                "m",
                None,
                false
            )
            .is_ok()
        );
        assert!(check(&child(false), &agent(None, None), "m", None, false).is_ok());
        assert!(check(&child(false), &agent(Some("native"), None), "m", None, false).is_ok());
        for id in code_owned_adapters() {
            assert!(
                check(
                    &child(false),
                    &agent(Some("external-cli"), Some(id)),
                    "m",
                    Some("linux"),
                    false
                )
                .is_ok()
            );
        }
    }

    #[test]
    fn p2_step1_other_runner_types_are_named() {
        let message = refusal(check(
            &child(false),
            &agent(Some("external-job"), None),
            "  m ",
            None,
            false,
        ));
        assert!(message.contains("'a'") && message.contains("'  m '") && message.contains("external-job"));
    }

    #[test]
    fn p2_step2_generic_external_cli_lists_every_adapter() {
        for adapter in [None, Some("gemini-agent"), Some("Claude-Code")] {
            let message = refusal(check(
                &child(false),
                &agent(Some("external-cli"), adapter),
                "m",
                None,
                false,
            ));
            assert!(message.contains("generic external-cli"));
            for id in code_owned_adapters() {
                assert!(message.contains(id), "{message} lacks {id}");
            }
        }
    }

    #[test]
    fn p2_step_order_runner_then_worktree_then_windows() {
        let job = agent(Some("external-job"), None);
        assert!(refusal(check(&child(true), &job, "m", Some("windows"), false)).contains("external-job"));
        let native = agent(None, None);
        assert!(refusal(check(&child(true), &native, "m", Some("windows"), false)).contains("worktree"));
        // J12: a cluster's nodes share the worktree's file system.
        assert!(check(&child(true), &native, "slurm", None, true).is_ok());
        assert!(refusal(check(&child(false), &native, "m", Some("windows"), false)).contains("Windows"));
        assert!(refusal(check(&child(false), &native, "m", Some("win32"), false)).contains("Windows"));
        assert!(check(&child(false), &native, "m", Some("darwin"), false).is_ok());
    }
}
