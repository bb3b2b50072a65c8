//! The commit (R5, R6, K12, K14): after the proceed control was accepted the shim deletes the
//! ack, confirm and proceed files, records the revival lease in the candidate (so a shim that
//! dies later leaves `canonical-session-lease-active` evidence, X11), sends `committed` on the
//! doorbell and closes fd 3. What `sublaunch resume` needs is the host's `launch-plan.json`,
//! written before the spawn; the shim adds nothing to it, so the agent's spawn waits for no
//! file of its own here.

use crate::context::Ctx;
use sublaunch_protocol::files::durability::DocKind;
use sublaunch_protocol::files::layout::names;

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
                let mut candidate = crate::run::end::record::read_candidate(ctx, &run);
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
        }
        Err(e) => eprintln!("sublaunch-shim: cannot open the run directory at commit: {e}"),
    }
    ctx.doorbell.ring("committed");
    ctx.doorbell.close();
}
