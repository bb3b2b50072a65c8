//! What Slurm says about a job, read field by field (J5): the one-line records of
//! `scontrol show job -o` and of the job-completion log (`jobcomp/filetxt`), which share the
//! `Key=Value` format, and the job states of `squeue`.
//!
//! Values are not escaped by Slurm, and `JobName`, `Command` and `WorkDir` may hold spaces, so
//! a value runs up to the next ` Key=` whose key is one Slurm writes, not to the next space.

use std::collections::BTreeMap;

/// A job's state as Slurm names it (`squeue` JOB STATE CODES).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Waiting in the queue.
    Pending,
    /// Running on its nodes.
    Running,
    /// Suspended by an administrator or a preemption.
    Suspended,
    /// Ended, its processes and epilog not yet gone: the final state is not known yet.
    Completing,
    /// Its batch script exited 0.
    Completed,
    /// Its batch script exited non-zero or was killed by a signal.
    Failed,
    /// Cancelled (`scancel`, or an administrator).
    Cancelled,
    /// Ran past its time limit.
    Timeout,
    /// A node it ran on failed.
    NodeFail,
    /// Preempted by a job of a higher priority.
    Preempted,
    /// Its nodes could not be booted.
    BootFail,
    /// Not started before its deadline.
    Deadline,
    /// Killed for running out of memory.
    OutOfMemory,
    /// A transient state (`REQUEUED`, `CONFIGURING`, `SIGNALING`, …): alive, look again.
    Transient(String),
    /// A name this version does not know; never taken as an end.
    Other(String),
}

impl JobState {
    /// Parses a state name as `squeue -o %T` and the records print it.
    pub fn parse(name: &str) -> Self {
        match name.trim() {
            "PENDING" => Self::Pending,
            "RUNNING" => Self::Running,
            "SUSPENDED" => Self::Suspended,
            "COMPLETING" => Self::Completing,
            "COMPLETED" => Self::Completed,
            "FAILED" => Self::Failed,
            "CANCELLED" => Self::Cancelled,
            "TIMEOUT" => Self::Timeout,
            "NODE_FAIL" => Self::NodeFail,
            "PREEMPTED" => Self::Preempted,
            "BOOT_FAIL" => Self::BootFail,
            "DEADLINE" => Self::Deadline,
            "OUT_OF_MEMORY" => Self::OutOfMemory,
            transient @ ("REQUEUED" | "REQUEUE_FED" | "REQUEUE_HOLD" | "RESIZING" | "RESV_DEL_HOLD" | "REVOKED"
            | "SIGNALING" | "SPECIAL_EXIT" | "STAGE_OUT" | "STOPPED" | "CONFIGURING") => {
                Self::Transient(transient.to_owned())
            }
            other => Self::Other(other.to_owned()),
        }
    }

    /// Whether the job has ended for good: no process of it runs or will run.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            Self::Completed
                | Self::Failed
                | Self::Cancelled
                | Self::Timeout
                | Self::NodeFail
                | Self::Preempted
                | Self::BootFail
                | Self::Deadline
                | Self::OutOfMemory
        )
    }

    /// The name Slurm uses.
    pub fn name(&self) -> &str {
        match self {
            Self::Pending => "PENDING",
            Self::Running => "RUNNING",
            Self::Suspended => "SUSPENDED",
            Self::Completing => "COMPLETING",
            Self::Completed => "COMPLETED",
            Self::Failed => "FAILED",
            Self::Cancelled => "CANCELLED",
            Self::Timeout => "TIMEOUT",
            Self::NodeFail => "NODE_FAIL",
            Self::Preempted => "PREEMPTED",
            Self::BootFail => "BOOT_FAIL",
            Self::Deadline => "DEADLINE",
            Self::OutOfMemory => "OUT_OF_MEMORY",
            Self::Transient(name) | Self::Other(name) => name,
        }
    }
}

/// A job's `ExitCode=STATUS:SIGNAL`: the batch script's exit status, or the signal that
/// killed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitCode {
    /// The exit status (0 when killed by a signal).
    pub status: u32,
    /// The signal that killed it (0 when it exited).
    pub signal: u32,
}

/// One job record: what `scontrol show job -o` prints while the controller knows the job,
/// and what the job-completion log keeps after it forgot it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRecord {
    /// The job id.
    pub job_id: String,
    /// Its state (`JobState=`).
    pub state: JobState,
    /// Why it waits or how it ended (`Reason=`: `Priority`, `Resources`, `NonZeroExitCode`,
    /// `TimeLimit`, …); absent in the completion log.
    pub reason: Option<String>,
    /// `ExitCode=`.
    pub exit_code: Option<ExitCode>,
    /// The nodes it ran on (`NodeList=`), absent while pending.
    pub node_list: Option<String>,
    /// `StartTime=`, as Slurm prints it (local time), absent when unknown.
    pub start_time: Option<String>,
    /// `EndTime=`, as Slurm prints it, absent when unknown.
    pub end_time: Option<String>,
    /// How often it was requeued (`Restarts=`).
    pub restarts: Option<u32>,
}

/// Keys Slurm writes in these records, the ones a value may be followed by; a ` Word=` inside
/// a value whose word is not among them stays part of the value.
const KNOWN_KEYS: &[&str] = &[
    "JobId",
    "ArrayJobId",
    "HetJobId",
    "JobName",
    "Name",
    "UserId",
    "GroupId",
    "MCS_label",
    "Priority",
    "Nice",
    "Account",
    "QOS",
    "JobState",
    "Reason",
    "Dependency",
    "Requeue",
    "Restarts",
    "BatchFlag",
    "Reboot",
    "ExitCode",
    "DerivedExitCode",
    "RunTime",
    "TimeLimit",
    "TimeMin",
    "SubmitTime",
    "EligibleTime",
    "AccrueTime",
    "StartTime",
    "EndTime",
    "Deadline",
    "SuspendTime",
    "SecsPreSuspend",
    "LastSchedEval",
    "Scheduler",
    "Partition",
    "AllocNode:Sid",
    "ReqNodeList",
    "ExcNodeList",
    "NodeList",
    "BatchHost",
    "NumNodes",
    "NumCPUs",
    "NumTasks",
    "CPUs/Task",
    "ReqB:S:C:T",
    "TRES",
    "Socks/Node",
    "NtasksPerN:B:S:C",
    "CoreSpec",
    "MinCPUsNode",
    "MinMemoryCPU",
    "MinMemoryNode",
    "MinTmpDiskNode",
    "Features",
    "DelayBoot",
    "OverSubscribe",
    "Contiguous",
    "Licenses",
    "Network",
    "Command",
    "WorkDir",
    "StdErr",
    "StdIn",
    "StdOut",
    "Power",
    "NodeCnt",
    "ProcCnt",
    "ReservationName",
    "Tres",
    "WcKey",
    "Cluster",
    "Comment",
    "MemPerTres",
    "TresPerNode",
];

impl JobRecord {
    /// Parses one record line; `None` when it has no `JobId` or no `JobState`.
    pub fn parse(line: &str) -> Option<Self> {
        let fields = fields(line);
        let text = |key: &str| {
            fields
                .get(key)
                .map(|v| v.trim())
                .filter(|v| !v.is_empty() && !matches!(*v, "(null)" | "None" | "Unknown" | "N/A"))
                .map(str::to_owned)
        };
        Some(Self {
            job_id: text("JobId")?,
            state: JobState::parse(&text("JobState")?),
            reason: text("Reason"),
            exit_code: text("ExitCode").and_then(|code| {
                let (status, signal) = code.split_once(':')?;
                Some(ExitCode {
                    status: status.parse().ok()?,
                    signal: signal.parse().ok()?,
                })
            }),
            node_list: text("NodeList"),
            start_time: text("StartTime"),
            end_time: text("EndTime"),
            restarts: text("Restarts").and_then(|r| r.parse().ok()),
        })
    }

    /// The last record of `job_id` in a job-completion log's text (a requeued job has
    /// several; the last is its end).
    pub fn last_completion(log: &str, job_id: &str) -> Option<Self> {
        let prefix = format!("JobId={job_id} ");
        log.lines()
            .rev()
            .filter(|line| line.starts_with(&prefix))
            .find_map(Self::parse)
    }
}

/// The `Key=Value` fields of a line, a value running to the next known key.
fn fields(line: &str) -> BTreeMap<&str, &str> {
    // Where each known key starts: at the line's start or after a space.
    let mut starts: Vec<(usize, &str)> = Vec::new();
    for key in KNOWN_KEYS {
        let pattern = format!("{key}=");
        let mut from = 0;
        while let Some(found) = line[from..].find(&pattern) {
            let at = from + found;
            if at == 0 || line.as_bytes()[at - 1] == b' ' {
                starts.push((at, key));
            }
            from = at + pattern.len();
        }
    }
    starts.sort_unstable();
    let mut fields = BTreeMap::new();
    for (i, &(at, key)) in starts.iter().enumerate() {
        let value_start = at + key.len() + 1;
        let end = starts.get(i + 1).map_or(line.len(), |&(next, _)| next);
        if value_start <= end {
            fields.entry(key).or_insert(line[value_start..end].trim_end());
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `scontrol show job -o` of a job whose script exited 3, as Slurm 22.05 printed it.
    const SHOWN: &str = "JobId=1 JobName=sl run x UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=FAILED Reason=NonZeroExitCode Dependency=(null) Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=3:0 RunTime=00:00:02 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-12-05T10:28:20 EligibleTime=2026-12-05T10:28:20 AccrueTime=2026-12-05T10:28:20 StartTime=2026-12-05T10:28:22 EndTime=2026-12-05T10:28:24 Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-05T10:28:22 Scheduler=Main Partition=debug AllocNode:Sid=localhost:4175 ReqNodeList=(null) ExcNodeList=(null) NodeList=vm BatchHost=vm NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,mem=64M,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryCPU=64M MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=YES Contiguous=0 Licenses=(null) Network=(null) Command=(null) WorkDir=/tmp/a dir StdErr=/tmp/sl1/j-1.out StdIn=/dev/null StdOut=/tmp/sl1/j-1.out Power= ";

    /// The job-completion log's line for the same job.
    const COMPLETED: &str = "JobId=1 UserId=root(0) GroupId=root(0) Name=sbatch JobState=FAILED Partition=debug TimeLimit=UNLIMITED StartTime=2026-12-05T10:28:22 EndTime=2026-12-05T10:28:24 NodeList=vm NodeCnt=1 ProcCnt=1 WorkDir=/tmp/sl1 ReservationName= Tres=cpu=1,mem=64M,node=1,billing=1 Account= QOS= WcKey= Cluster=unknown SubmitTime=2026-12-05T10:28:20 EligibleTime=2026-12-05T10:28:20 DerivedExitCode=0:0 ExitCode=3:0 ";

    #[test]
    fn j5_a_shown_job_is_read_field_by_field_with_spaces_in_values() {
        let record = JobRecord::parse(SHOWN).unwrap();
        assert_eq!(record.job_id, "1");
        assert_eq!(record.state, JobState::Failed);
        assert_eq!(record.reason.as_deref(), Some("NonZeroExitCode"));
        assert_eq!(record.exit_code, Some(ExitCode { status: 3, signal: 0 }));
        assert_eq!(record.node_list.as_deref(), Some("vm"));
        assert_eq!(record.restarts, Some(0));
        assert_eq!(record.end_time.as_deref(), Some("2026-12-05T10:28:24"));
        assert_eq!(fields(SHOWN).get("JobName"), Some(&"sl run x"));
        assert_eq!(fields(SHOWN).get("WorkDir"), Some(&"/tmp/a dir"));
        assert_eq!(
            fields(SHOWN).get("TRES"),
            Some(&"cpu=1,mem=64M,node=1,billing=1"),
            "a value holding '=' stays whole"
        );
    }

    #[test]
    fn j5_the_completion_log_keeps_the_last_record_of_a_job() {
        let requeued = COMPLETED
            .replace("JobState=FAILED", "JobState=PENDING")
            .replace("ExitCode=3:0", "ExitCode=0:0");
        let other = COMPLETED.replace("JobId=1 ", "JobId=11 ");
        let log = format!("{requeued}\n{COMPLETED}\n{other}\n");
        let record = JobRecord::last_completion(&log, "1").unwrap();
        assert_eq!(record.state, JobState::Failed);
        assert_eq!(record.exit_code, Some(ExitCode { status: 3, signal: 0 }));
        assert_eq!(record.reason, None);
        assert_eq!(JobRecord::last_completion(&log, "2"), None);
        assert_eq!(JobRecord::last_completion(&log, "11").unwrap().job_id, "11");
    }

    #[test]
    fn j5_only_ended_states_are_final_and_unknown_ones_never_are() {
        for name in [
            "COMPLETED",
            "FAILED",
            "CANCELLED",
            "TIMEOUT",
            "NODE_FAIL",
            "PREEMPTED",
            "BOOT_FAIL",
            "DEADLINE",
            "OUT_OF_MEMORY",
        ] {
            let state = JobState::parse(name);
            assert!(state.is_final(), "{name}");
            assert_eq!(state.name(), name);
        }
        for name in [
            "PENDING",
            "RUNNING",
            "SUSPENDED",
            "COMPLETING",
            "REQUEUED",
            "CONFIGURING",
            "SOMETHING_NEW",
        ] {
            assert!(!JobState::parse(name).is_final(), "{name}");
        }
        assert_eq!(
            JobRecord::parse("JobId=1 Reason=None"),
            None,
            "a record without a state"
        );
    }
}
