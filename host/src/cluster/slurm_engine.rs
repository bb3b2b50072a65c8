//! Slurm as an [`Engine`] (J7, J8, J9): `squeue -t all` for any number of jobs at once (without
//! `-t all` an ended job is silently left out), `scontrol show job -o` for the evidence of a
//! job that ended, the job-completion log for a job the controller already forgot, `scancel`
//! to cancel. Every command gets the configuration the job was submitted with.

use super::command::{self, CommandError};
use super::engine::{Cancel, Engine, JobLook};
use super::slurm::{JobRecord, JobState};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::Duration;
use sublaunch_protocol::records::cluster::{ClusterEvidence, ClusterJob, SLURM_CONF_ENV};

/// How long one Slurm command may take.
const DEADLINE: Duration = Duration::from_secs(20);

/// Slurm's commands, found on `PATH`.
#[derive(Clone, Debug, Default)]
pub struct Slurm {
    /// The `PATH` the commands are looked up in.
    path: Option<OsString>,
}

impl Slurm {
    /// Slurm's commands on `path`.
    pub fn new(path: Option<OsString>) -> Self {
        Self { path }
    }

    fn run(&self, program: &str, args: &[String], conf: Option<&str>) -> Result<command::Output, CommandError> {
        let mut env: Vec<(&str, OsString)> = Vec::new();
        if let Some(path) = &self.path {
            env.push(("PATH", path.clone()));
        }
        if let Some(conf) = conf {
            env.push((SLURM_CONF_ENV, conf.into()));
        }
        let program = crate::inputs::agents::locate_program(program, std::path::Path::new("/"), self.path.as_deref())
            .map_or_else(|_| program.to_owned(), |found| found.to_string_lossy().into_owned());
        command::run(&program, args, &env, DEADLINE)
    }

    /// One configuration's jobs.
    fn look_in(&self, conf: Option<&str>, ids: &[&str]) -> BTreeMap<String, JobLook> {
        let mut looks = BTreeMap::new();
        let args = vec![
            "--noheader".to_owned(),
            "--states=all".to_owned(),
            format!("--jobs={}", ids.join(",")),
            "--format=%i|%T|%r|%N".to_owned(),
        ];
        let listed = match self.run("squeue", &args, conf) {
            Ok(out) if out.success => out.stdout,
            // A job the controller forgot makes squeue refuse the whole list: each is then
            // asked about on its own.
            Ok(out) if forgotten(&out.stderr) => String::new(),
            Ok(out) => {
                let why = format!("squeue failed: {}", out.stderr.trim());
                return ids
                    .iter()
                    .map(|id| (id.to_string(), JobLook::Unknown(why.clone())))
                    .collect();
            }
            Err(e) => {
                return ids
                    .iter()
                    .map(|id| (id.to_string(), JobLook::Unknown(e.to_string())))
                    .collect();
            }
        };
        for line in listed.lines() {
            let mut fields = line.split('|');
            let (Some(id), Some(state), reason, node) = (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            let text = |v: Option<&str>| v.map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned);
            let state = JobState::parse(state);
            let look = match state {
                JobState::Pending => JobLook::Queued { reason: text(reason) },
                ref s if s.is_final() => self.evidence(conf, id.trim()),
                other => JobLook::Running {
                    state: other.name().to_owned(),
                    node: text(node),
                },
            };
            looks.insert(id.trim().to_owned(), look);
        }
        for id in ids {
            if !looks.contains_key(*id) {
                looks.insert(id.to_string(), self.evidence(conf, id));
            }
        }
        looks
    }

    /// The evidence of a job that ended or that the queue no longer lists: the controller's
    /// record while it has one, else the job-completion log's last line, else "gone".
    fn evidence(&self, conf: Option<&str>, id: &str) -> JobLook {
        let args = vec![
            "show".to_owned(),
            "job".to_owned(),
            "--oneliner".to_owned(),
            id.to_owned(),
        ];
        match self.run("scontrol", &args, conf) {
            Ok(out) if out.success => match out.stdout.lines().find_map(JobRecord::parse) {
                Some(record) => return look_of(&record, "scontrol"),
                None => return JobLook::Unknown(format!("scontrol printed no record of job {id}")),
            },
            Ok(out) if forgotten(&out.stderr) => {}
            Ok(out) => return JobLook::Unknown(format!("scontrol failed: {}", out.stderr.trim())),
            Err(e) => return JobLook::Unknown(e.to_string()),
        }
        if let Some(record) = self
            .completion_log(conf)
            .and_then(|log| JobRecord::last_completion(&log, id))
        {
            return look_of(&record, "jobcomp");
        }
        JobLook::Ended(ClusterEvidence {
            engine: "slurm".into(),
            job_id: id.to_owned(),
            state: "GONE".into(),
            source: "none".into(),
            ..ClusterEvidence::default()
        })
    }

    /// The job-completion log's text, when the cluster keeps one in a file.
    fn completion_log(&self, conf: Option<&str>) -> Option<String> {
        let out = self
            .run("scontrol", &["show".to_owned(), "config".to_owned()], conf)
            .ok()?;
        let setting = |key: &str| {
            out.stdout.lines().find_map(|line| {
                let (name, value) = line.split_once('=')?;
                (name.trim() == key).then(|| value.trim().to_owned())
            })
        };
        if setting("JobCompType").as_deref() != Some("jobcomp/filetxt") {
            return None;
        }
        std::fs::read_to_string(setting("JobCompLoc")?).ok()
    }
}

/// Whether Slurm's complaint says it does not know the job (any more).
fn forgotten(stderr: &str) -> bool {
    stderr.contains("Invalid job id")
}

/// A record as a look: ended with its evidence when its state is final, else alive.
fn look_of(record: &JobRecord, source: &str) -> JobLook {
    match &record.state {
        JobState::Pending => JobLook::Queued {
            reason: record.reason.clone(),
        },
        state if state.is_final() => JobLook::Ended(ClusterEvidence {
            engine: "slurm".into(),
            job_id: record.job_id.clone(),
            state: state.name().to_owned(),
            exit_status: record.exit_code.map(|c| c.status),
            signal: record.exit_code.map(|c| c.signal),
            reason: record.reason.clone(),
            node: record.node_list.clone(),
            start_time: record.start_time.clone(),
            end_time: record.end_time.clone(),
            source: source.to_owned(),
        }),
        state => JobLook::Running {
            state: state.name().to_owned(),
            node: record.node_list.clone(),
        },
    }
}

impl Engine for Slurm {
    fn look(&self, jobs: &[&ClusterJob]) -> BTreeMap<String, JobLook> {
        let mut by_conf: BTreeMap<Option<&str>, Vec<&str>> = BTreeMap::new();
        for job in jobs.iter().filter(|j| j.engine == "slurm" && !j.job_id.is_empty()) {
            by_conf.entry(job.conf.as_deref()).or_default().push(&job.job_id);
        }
        let mut looks = BTreeMap::new();
        for (conf, ids) in by_conf {
            looks.extend(self.look_in(conf, &ids));
        }
        looks
    }

    fn cancel(&self, job: &ClusterJob, how: Cancel) -> Result<(), String> {
        let mut args = Vec::new();
        if how == Cancel::AskRunner {
            args.extend(["--batch".to_owned(), "--signal=TERM".to_owned()]);
        }
        args.push(job.job_id.clone());
        let out = self
            .run("scancel", &args, job.conf.as_deref())
            .map_err(|e| e.to_string())?;
        // A job that already ended cannot be cancelled, and needs not be.
        if out.success || out.stderr.contains("already completing or completed") || forgotten(&out.stderr) {
            Ok(())
        } else {
            Err(format!("scancel failed: {}", out.stderr.trim()))
        }
    }
}
