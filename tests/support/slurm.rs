//! A real single-node Slurm cluster on loopback for the cluster-placement tests.
//!
//! [`SlurmCluster::shared`] starts one cluster per test binary (munged, slurmctld, slurmd)
//! from a generated `slurm.conf` in a private directory: two free loopback ports, its own
//! state and spool directories, the job-completion log in `jobcomp.txt`, and a node line
//! taken verbatim from `slurmd -C`, so the node's CPUs and memory match the machine. It runs
//! without cgroups (`proctrack/linuxproc`, `task/none`), with `OverSubscribe=FORCE` so that
//! many jobs share the node's cores. [`SlurmCluster::private`] starts one for a test that
//! changes the cluster's state (a node set down), stopped when dropped. Tests address a
//! cluster only through its configuration file ([`SlurmCluster::env`]): `SLURM_CONF` is read
//! by every Slurm command and both daemons.
//!
//! The daemons run in the foreground as children of a thread that lives as long as the test
//! process, with `PR_SET_PDEATHSIG`, so they end with the test binary even when it is killed.
//! munged is shared by every cluster and left running (one key, one realm).
//!
//! `.ci/run` installs slurm-wlm and munge; without `/usr/sbin/slurmctld` these tests fail
//! with a message saying so.

use crate::sshd::free_port;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

/// The controller daemon.
pub const SLURMCTLD: &str = "/usr/sbin/slurmctld";
/// The node daemon.
pub const SLURMD: &str = "/usr/sbin/slurmd";
/// The authentication daemon.
pub const MUNGED: &str = "/usr/sbin/munged";
/// The partition every generated cluster has.
pub const PARTITION: &str = "debug";

/// How long a cluster may take to have an idle node.
const READY_LIMIT: Duration = Duration::from_secs(60);

/// A running test cluster; a private one is stopped when dropped.
pub struct SlurmCluster {
    dir: tempfile::TempDir,
    node: String,
    daemons: Mutex<Vec<Child>>,
}

impl SlurmCluster {
    /// The cluster shared by every test of this binary, started on first use.
    pub fn shared() -> &'static SlurmCluster {
        static SHARED: OnceLock<SlurmCluster> = OnceLock::new();
        SHARED.get_or_init(|| Self::start(1, &[], &[]))
    }

    /// A cluster of its own, for a test that changes the cluster's state.
    pub fn private() -> SlurmCluster {
        Self::private_with(&[])
    }

    /// A cluster of its own whose `slurm.conf` sets each `(key, value)` of `settings` instead
    /// of the default, or in addition to the defaults (`("MinJobAge", "2")`: ended jobs are
    /// forgotten within seconds).
    pub fn private_with(settings: &[(&str, &str)]) -> SlurmCluster {
        Self::private_with_lines(settings, &[])
    }

    /// [`SlurmCluster::private_with`], and `lines` added to `slurm.conf` as they are, with
    /// `{node}` replaced by the node's name (more partitions, for instance).
    pub fn private_with_lines(settings: &[(&str, &str)], lines: &[&str]) -> SlurmCluster {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(2);
        Self::start(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed), settings, lines)
    }

    /// Starts cluster number `index` (its job ids start at `index * 100000 + 1`, so ids never
    /// coincide across the clusters of one test binary).
    fn start(index: u32, settings: &[(&str, &str)], lines: &[&str]) -> SlurmCluster {
        for daemon in [SLURMCTLD, SLURMD, MUNGED] {
            assert!(
                Path::new(daemon).is_file(),
                "{daemon} is missing: install slurm-wlm and munge (.ci/run does: apt-get install slurm-wlm munge)"
            );
        }
        ensure_munged();
        let dir = tempfile::Builder::new()
            .prefix("sublaunch-slurm-")
            .tempdir()
            .expect("a temp dir for the cluster");
        let path = |name: &str| dir.path().join(name);
        for sub in ["state", "spool"] {
            std::fs::create_dir(path(sub)).unwrap();
        }
        let hardware = node_line();
        let node = hardware
            .split_whitespace()
            .find_map(|field| field.strip_prefix("NodeName="))
            .expect("slurmd -C names the node")
            .to_owned();
        let config = format!(
            "ClusterName=sublaunch{index}\n\
             SlurmctldHost=localhost\n\
             SlurmctldPort={controller}\n\
             SlurmdPort={node_port}\n\
             SlurmUser=root\nSlurmdUser=root\n\
             AuthType=auth/munge\nCredType=cred/munge\n\
             StateSaveLocation={state}\nSlurmdSpoolDir={spool}\n\
             SlurmctldPidFile={dir}/slurmctld.pid\nSlurmdPidFile={dir}/slurmd.pid\n\
             SlurmctldLogFile={dir}/slurmctld.log\nSlurmdLogFile={dir}/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\nDefMemPerCPU=64\n\
             MpiDefault=none\nAccountingStorageType=accounting_storage/none\n\
             JobCompType=jobcomp/filetxt\nJobCompLoc={dir}/jobcomp.txt\n\
             JobAcctGatherType=jobacct_gather/linux\n\
             JobRequeue=0\nMinJobAge=30\nKillWait=5\nReturnToService=2\nSlurmdTimeout=30\nInactiveLimit=0\n\
             FirstJobId={first}\n\
             {hardware} NodeAddr=127.0.0.1 State=UNKNOWN\n\
             PartitionName={PARTITION} Nodes={node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:64\n",
            controller = free_port(),
            node_port = free_port(),
            state = path("state").display(),
            spool = path("spool").display(),
            dir = dir.path().display(),
            first = index * 100_000 + 1,
        );
        let mut config: String = config
            .lines()
            .map(|line| {
                let key = line.split('=').next().unwrap_or_default();
                match settings.iter().find(|(k, _)| *k == key) {
                    Some((k, v)) => format!("{k}={v}\n"),
                    None => format!("{line}\n"),
                }
            })
            .collect();
        for (key, value) in settings {
            if !config.lines().any(|line| line.starts_with(&format!("{key}="))) {
                config.push_str(&format!("{key}={value}\n"));
            }
        }
        for line in lines {
            config.push_str(&line.replace("{node}", &node));
            config.push('\n');
        }
        std::fs::write(path("slurm.conf"), config).unwrap();
        std::fs::set_permissions(path("slurm.conf"), std::fs::Permissions::from_mode(0o644)).unwrap();
        let cluster = SlurmCluster {
            dir,
            node,
            daemons: Mutex::new(Vec::new()),
        };
        let conf = cluster.conf();
        let daemons = [(SLURMCTLD, vec!["-D", "-i"]), (SLURMD, vec!["-D"])]
            .into_iter()
            .map(|(program, args)| {
                let mut command = Command::new(program);
                command
                    .args(args)
                    .env("SLURM_CONF", &conf)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null());
                spawn_kept(command)
            })
            .collect();
        *cluster.daemons.lock().unwrap() = daemons;
        cluster.wait_idle();
        cluster
    }

    /// The cluster's `slurm.conf`.
    pub fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    /// The job-completion log slurmctld appends to.
    pub fn jobcomp(&self) -> PathBuf {
        self.dir.path().join("jobcomp.txt")
    }

    /// The node's name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The environment a Slurm command needs to reach this cluster.
    pub fn env(&self) -> [(&'static str, PathBuf); 1] {
        [("SLURM_CONF", self.conf())]
    }

    /// Runs a Slurm client command (`sbatch`, `squeue`, `scontrol`, `scancel`) against it.
    pub fn command(&self, program: &str, args: &[&str]) -> Output {
        Command::new(program)
            .args(args)
            .env("SLURM_CONF", self.conf())
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("running {program}: {e}"))
    }

    /// A job's state as `squeue -t all` shows it (`PENDING`, `RUNNING`, `COMPLETED`, …), or
    /// `None` once the controller has forgotten it.
    pub fn job_state(&self, job: &str) -> Option<String> {
        let output = self.command("squeue", &["-h", "-t", "all", "-j", job, "-o", "%T"]);
        let state = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        (output.status.success() && !state.is_empty()).then_some(state)
    }

    /// Kills the node's daemon (`slurmd`) as a crash would: the jobs' processes stay.
    pub fn kill_node_daemon(&self) {
        let mut daemons = self.daemons.lock().unwrap();
        if let Some(slurmd) = daemons.get_mut(1) {
            let _ = slurmd.kill();
            let _ = slurmd.wait();
        }
    }

    /// The pids of a job's processes on the node (`scontrol listpids`).
    pub fn job_pids(&self, job: &str) -> Vec<u32> {
        let output = self.command("scontrol", &["listpids", job]);
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .skip(1)
            .filter_map(|line| line.split_whitespace().next()?.parse().ok())
            .collect()
    }

    /// The daemons' logs, for a failure message.
    pub fn logs(&self) -> String {
        ["slurmctld.log", "slurmd.log"]
            .iter()
            .map(|name| {
                let text = std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(30).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                format!("== {name}\n{}", tail.join("\n"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Waits until the node is idle (the controller sees slurmd and accepts jobs).
    fn wait_idle(&self) {
        let started = Instant::now();
        loop {
            let output = self.command("sinfo", &["-h", "-N", "-n", &self.node, "-o", "%T"]);
            let state = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            // One line per partition the node is in.
            if !state.is_empty() && state.lines().all(|line| matches!(line.trim(), "idle" | "mixed")) {
                return;
            }
            assert!(
                started.elapsed() < READY_LIMIT,
                "the test Slurm cluster's node is '{state}' after {READY_LIMIT:?}:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Cancels its jobs and stops its daemons.
    fn stop(&self) {
        let _ = self.command("scancel", &["--full", "-u", "root"]);
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            let output = self.command("squeue", &["-h", "-o", "%i"]);
            if !output.status.success() || output.stdout.iter().all(u8::is_ascii_whitespace) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        for mut child in self.daemons.lock().unwrap().drain(..) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for SlurmCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The first line of `slurmd -C`: `NodeName=… CPUs=… … RealMemory=…`.
fn node_line() -> String {
    let output = Command::new(SLURMD)
        .arg("-C")
        .stdin(Stdio::null())
        .output()
        .expect("running slurmd -C");
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .next()
        .filter(|line| line.starts_with("NodeName="))
        .unwrap_or_else(|| panic!("slurmd -C printed no node line: {text}"))
        .to_owned()
}

/// Starts munged as the `munge` user unless one answers already, and waits until a
/// credential round trip succeeds.
fn ensure_munged() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        if munge_works() {
            return;
        }
        let shell = "install -d -o munge -g munge -m 0755 /run/munge && \
                     install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge && \
                     { [ -s /etc/munge/munge.key ] || runuser -u munge -- mungekey --create --keyfile=/etc/munge/munge.key; } && \
                     runuser -u munge -- /usr/sbin/munged";
        let output = Command::new("sh")
            .args(["-c", shell])
            .stdin(Stdio::null())
            .output()
            .expect("starting munged");
        let started = Instant::now();
        while !munge_works() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "munged did not answer: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    });
}

fn munge_works() -> bool {
    Command::new("sh")
        .args(["-c", "munge -n | unmunge"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Spawns `command` from a thread that lives as long as the test process, with the kernel
/// told to kill it when that thread (so the process) is gone.
fn spawn_kept(mut command: Command) -> Child {
    type Request = (Command, mpsc::Sender<std::io::Result<Child>>);
    static KEEPER: OnceLock<Mutex<mpsc::Sender<Request>>> = OnceLock::new();
    let keeper = KEEPER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("slurm-daemons".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
                // The sender lives in a static: this thread never gets here.
                loop {
                    std::thread::park();
                }
            })
            .expect("the daemons' thread");
        Mutex::new(tx)
    });
    // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe and touches no parent memory.
    unsafe {
        command.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(std::io::Error::from)
        });
    }
    let (tx, rx) = mpsc::channel();
    keeper
        .lock()
        .unwrap()
        .send((command, tx))
        .expect("the daemons' thread runs");
    rx.recv()
        .expect("the daemons' thread answers")
        .unwrap_or_else(|e| panic!("starting a Slurm daemon: {e}"))
}
