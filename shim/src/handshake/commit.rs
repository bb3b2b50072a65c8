//! The commit (R5, R6, K12, K14): after the proceed control was accepted the shim deletes the
//! ack, confirm and proceed files, records the revival lease in the candidate (so a shim that
//! dies later leaves `canonical-session-lease-active` evidence, X11), writes `session.json` for
//! `sublaunch resume`, sends `committed` on the doorbell and closes fd 3.

use crate::start::context::Ctx;
use serde_json::json;
use sublaunch_protocol::durability::DocKind;
use sublaunch_protocol::layout::names;

/// `<run>/session.json`: what `sublaunch resume` needs to revive this run.
pub const SESSION_FILE: &str = "session.json";

/// Performs the commit steps; every failure is logged, none undoes the commit (K7).
pub fn commit(ctx: &mut Ctx) {
    match ctx.open_run() {
        Ok(run) => {
            for name in [
                names::RUNNER_STARTUP_ACK,
                names::RUNNER_STARTUP_CONFIRM,
                names::RUNNER_STARTUP_PROCEED,
            ] {
                if let Err(e) = run.remove(name) {
                    eprintln!("sublaunch-shim: cannot remove {name}: {e}");
                }
            }
            if let Some(held) = &ctx.lease {
                let mut candidate = crate::end::record::read_candidate(ctx, &run);
                candidate.session_file = Some(held.session_file.clone());
                candidate.revival_lease_token = Some(held.lease.token().to_owned());
                if let Err(e) = run.write_doc(
                    names::PROCESS_TERMINAL_CANDIDATE,
                    &candidate,
                    ctx.policy.for_kind(DocKind::InitialCandidate),
                ) {
                    eprintln!("sublaunch-shim: cannot record the session lease in the candidate: {e}");
                }
            }
            if let Err(e) = run.write_doc(
                SESSION_FILE,
                &session_document(ctx),
                ctx.policy.for_kind(DocKind::Other),
            ) {
                eprintln!("sublaunch-shim: cannot write {SESSION_FILE}: {e}");
            }
        }
        Err(e) => eprintln!("sublaunch-shim: cannot open the run directory at commit: {e}"),
    }
    ctx.doorbell.ring("committed");
    ctx.doorbell.close();
}

/// `{version:1, runId, agent, cwd, steps:[{agent, task}]}`.
pub fn session_document(ctx: &Ctx) -> serde_json::Value {
    let steps: Vec<_> = ctx
        .cfg
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| json!({"agent": ctx.agent_name(i), "task": step.task.clone().unwrap_or_default()}))
        .collect();
    json!({
        "version": 1,
        "runId": ctx.cfg.id,
        "agent": ctx.agent_name(0),
        "cwd": ctx.cfg.cwd,
        "steps": steps,
    })
}
