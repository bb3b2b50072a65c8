//! The OS sandbox of one agent (rules G28, G29, G30, G31, G32): Landlock file, TCP and scope rules plus
//! `no_new_privs`, for every adapter alike. The ruleset is built before the fork
//! ([`prepare`]), where paths can be opened and errors reported; the forked child only
//! applies it ([`enter`]) with two async-signal-safe system calls, so the agent and
//! everything it starts run inside it. The planner decided the profile and its paths; this
//! module only applies them and records what the kernel really enforced.

mod abi;
mod reads;
pub mod step;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr, RulesetCreatedAttr,
    Scope, path_beneath_rules,
};
use rustix::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use sublaunch_protocol::records::sandbox::{AppliedSandbox, SandboxPlan, SandboxProfile};

pub use crate::process::child_setup::{Entry, enter};
pub use abi::{PRETEND_ABI_VAR, kernel_abi};

/// The Landlock ABI that restricts truncation (files are not fully covered below it).
const FILES_ABI: u32 = 3;
/// The Landlock ABI that restricts TCP ports.
const NET_ABI: u32 = 4;
/// The Landlock ABI that scopes signals and abstract Unix sockets.
const SCOPE_ABI: u32 = 6;

/// The hole every Landlock ABI up to 8 leaves in the network rules (rule G31).
pub const NETWORK_HOLE: &str = "UDP (DNS included) and pathname Unix sockets (e.g. $SSH_AUTH_SOCK) are not restricted: Landlock restricts TCP only";

/// What an `offline` agent in a network namespace of its own can still reach (rule G36).
pub const OFFLINE_HOLE: &str =
    "pathname Unix sockets (e.g. $SSH_AUTH_SOCK) are not restricted: they are files, not network";

/// The record's name for the empty network namespace of an `offline` agent (rule G36).
const NETWORK_NAMESPACE: &str = "network-namespace";

/// Where one step's sandbox is: the plan and the paths only the runner knows.
#[derive(Clone, Debug)]
pub struct Where<'a> {
    /// The planner's decision.
    pub plan: &'a SandboxPlan,
    /// The step's directory (its worktree's top, when it has one).
    pub workdir: &'a Path,
    /// The step's own temporary directory (created here).
    pub tmpdir: PathBuf,
    /// Files and directories the runner itself hands the agent to write (Codex's last message).
    pub agent_files: Vec<PathBuf>,
    /// sublaunch's state root, never writable inside (rule G30).
    pub state_root: &'a Path,
}

/// A ruleset ready to apply in the forked agent, and the record of what it enforces.
#[derive(Debug)]
pub struct Prepared {
    /// The Landlock ruleset (`None`: best effort on a kernel without Landlock).
    ruleset: Option<OwnedFd>,
    /// What the agent runs in, for the step's records.
    pub applied: AppliedSandbox,
    /// The step's temporary directory (`TMPDIR` for the agent).
    pub tmpdir: PathBuf,
    /// The state root of the runs the agent launches (`<run>/nested`), when it may.
    pub nested_root: Option<PathBuf>,
    /// `offline`: the agent's PID namespace comes with an empty network namespace (G36).
    own_network: bool,
}

/// Builds the ruleset of `at` before the fork: every path opened, the kernel's ABI checked.
/// A sandbox the kernel cannot give in full is an error naming what is missing, unless the
/// plan accepts best effort (then the record's notes say what was left out).
pub fn prepare(at: &Where<'_>) -> Result<Prepared, String> {
    let plan = at.plan;
    let kernel = abi::effective();
    let needed = if plan.ports.is_some() {
        SCOPE_ABI.max(NET_ABI)
    } else {
        SCOPE_ABI
    };
    let mut notes = Vec::new();
    if kernel < needed {
        let missing = missing(kernel, plan.ports.is_some());
        if !plan.best_effort {
            return Err(format!(
                "Cannot sandbox the agent: {missing}. (bestEffort runs it with what the kernel has.)"
            ));
        }
        notes.push(format!("best effort: {missing}"));
    }
    std::fs::create_dir_all(&at.tmpdir)
        .and_then(|()| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&at.tmpdir, std::fs::Permissions::from_mode(0o700))
        })
        .map_err(|e| {
            format!(
                "Cannot sandbox the agent: cannot create its temporary directory {}: {e}",
                at.tmpdir.display()
            )
        })?;
    let writable = writable(at)?;
    let hidden: Vec<PathBuf> = plan.hidden.iter().map(PathBuf::from).collect();
    check_hidden(&writable, &hidden)?;
    let mut applied = AppliedSandbox {
        profile: plan.profile.as_str().to_owned(),
        landlock_abi: kernel,
        ports: plan.ports.clone(),
        best_effort: plan.best_effort,
        writable: writable.iter().map(|p| p.display().to_string()).collect(),
        hidden: plan.hidden.clone(),
        ..AppliedSandbox::default()
    };
    let ruleset = if kernel == 0 {
        None
    } else {
        Some(build(at, kernel, &writable, &hidden, &mut applied.enforced)?)
    };
    applied.enforced.push("no-new-privs".into());
    if (1..FILES_ABI).contains(&kernel) {
        notes.push(format!(
            "files can still be truncated outside the writable paths (Landlock ABI {kernel} < 3)"
        ));
    }
    // G36: an offline agent also gets an empty network namespace (only its loopback, down),
    // which closes what Landlock leaves open: UDP, DNS included. Recorded as enforced here;
    // a spawn that ends up without a namespace takes it back (`lost_network_namespace`).
    let own_network = plan.profile == SandboxProfile::Offline;
    if own_network {
        applied.enforced.push(NETWORK_NAMESPACE.into());
        notes.push(OFFLINE_HOLE.into());
    } else if plan.ports.is_some() && kernel >= NET_ABI {
        notes.push(NETWORK_HOLE.into());
    }
    applied.notes = notes;
    Ok(Prepared {
        ruleset,
        applied,
        tmpdir: at.tmpdir.clone(),
        nested_root: None,
        own_network,
    })
}

impl Prepared {
    /// The entry the forked agent uses; valid while `self` lives.
    pub fn entry(&self) -> Entry {
        Entry::new(self.ruleset.as_ref().map(AsRawFd::as_raw_fd), self.own_network)
    }
}

/// Corrects the record of an `offline` agent that was started without a namespace (best
/// effort, or Codex in its own sandbox): no network namespace, so Landlock's hole is open.
/// Whether the record changed.
pub fn lost_network_namespace(applied: &mut AppliedSandbox) -> bool {
    let before = applied.enforced.len();
    applied.enforced.retain(|e| e != NETWORK_NAMESPACE);
    if applied.enforced.len() == before {
        return false;
    }
    applied.notes.retain(|n| n != OFFLINE_HOLE);
    applied.notes.push(NETWORK_HOLE.into());
    true
}

/// What a kernel with Landlock ABI `abi` lacks for the sandbox, in the user's words.
fn missing(abi: u32, ports: bool) -> String {
    if abi == 0 {
        return "this kernel offers no Landlock (not built in, or not enabled at boot); the sandbox needs Landlock ABI 6"
            .into();
    }
    if ports && abi < NET_ABI {
        return format!("this kernel's Landlock ABI {abi} cannot restrict TCP ports; the port list needs ABI 4");
    }
    if abi < FILES_ABI {
        return format!("this kernel's Landlock ABI {abi} cannot stop files being truncated; the sandbox needs ABI 3");
    }
    format!(
        "this kernel's Landlock ABI {abi} cannot keep the agent from signalling its runner or other processes (signal and abstract-socket scoping); the sandbox needs ABI 6"
    )
}

/// The writable paths: the step's directory (unless read-only), its temporary directory, the
/// CLI's state, the runner's files for the agent, `/dev/null`. None may hold the state root.
fn writable(at: &Where<'_>) -> Result<Vec<PathBuf>, String> {
    let mut paths = Vec::new();
    if at.plan.write_workdir {
        paths.push(at.workdir.to_path_buf());
    }
    paths.push(at.tmpdir.clone());
    paths.extend(at.plan.state_paths.iter().map(PathBuf::from));
    paths.extend(at.agent_files.iter().cloned());
    paths.push(PathBuf::from("/dev/null"));
    let root = std::fs::canonicalize(at.state_root).unwrap_or_else(|_| at.state_root.to_path_buf());
    let mut existing = Vec::new();
    for path in paths {
        // A path that does not exist yet gets no rule: the runner does not guess whether the
        // CLI would make a file or a directory there (the guide says to run the CLI once).
        let Ok(real) = std::fs::canonicalize(&path) else {
            continue;
        };
        let handed = at.agent_files.contains(&path);
        if !handed && (root.starts_with(&real)) {
            return Err(format!(
                "Cannot sandbox the agent: {} would be writable and it holds sublaunch's run records ({}), which no agent may write.",
                path.display(),
                at.state_root.display()
            ));
        }
        if !existing.contains(&real) {
            existing.push(real);
        }
    }
    Ok(existing)
}

/// Refuses a writable path that holds a hidden one: Landlock only adds rights, so the secret
/// would be readable there.
fn check_hidden(writable: &[PathBuf], hidden: &[PathBuf]) -> Result<(), String> {
    for secret in hidden {
        let Ok(secret) = std::fs::canonicalize(secret) else {
            continue;
        };
        if let Some(dir) = writable.iter().find(|dir| secret.starts_with(dir)) {
            return Err(format!(
                "Cannot sandbox the agent: {} would be writable and it holds {}, which the sandbox must hide.",
                dir.display(),
                secret.display()
            ));
        }
    }
    Ok(())
}

/// The Landlock ruleset for ABI `abi`, noting each kind of rule it enforces.
fn build(
    at: &Where<'_>,
    abi_number: u32,
    writable: &[PathBuf],
    hidden: &[PathBuf],
    enforced: &mut Vec<String>,
) -> Result<OwnedFd, String> {
    let fail = |e: &dyn std::fmt::Display| format!("Cannot sandbox the agent: Landlock: {e}");
    let abi = abi::to_crate(abi_number);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| fail(&e))?;
    enforced.push("files".into());
    let ports = at.plan.ports.as_ref().filter(|_| abi_number >= NET_ABI);
    if ports.is_some() {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi)).map_err(|e| fail(&e))?;
        enforced.extend(["tcp-connect".into(), "tcp-bind".into()]);
    }
    if abi_number >= SCOPE_ABI {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(|e| fail(&e))?;
        enforced.extend(["signals".into(), "abstract-unix-sockets".into()]);
    }
    let mut created = ruleset.create().map_err(|e| fail(&e))?;
    let readable = reads::roots(hidden).map_err(|e| fail(&e))?;
    created = created
        .add_rules(path_beneath_rules(&readable, AccessFs::from_read(abi)))
        .map_err(|e| fail(&e))?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
        .map_err(|e| fail(&e))?;
    for &port in ports.into_iter().flatten() {
        created = created
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(|e| fail(&e))?;
    }
    Option::<OwnedFd>::from(created).ok_or_else(|| fail(&"the kernel enforced nothing"))
}

/// Silences the unused-import lint for `Access` (the trait brings `from_all`).
const _: fn(ABI) -> landlock::BitFlags<AccessFs> = <AccessFs as Access>::from_all;
