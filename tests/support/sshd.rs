//! A real OpenSSH server on 127.0.0.1 for the remote-placement tests.
//!
//! [`Sshd::start`] generates a host key and a user key in a private directory, writes an
//! `sshd_config` listening on a free loopback port, starts `/usr/sbin/sshd -D -e` and waits
//! until it reports that it listens. [`Sshd::client_home`] prepares a HOME whose
//! `~/.ssh/config` names the server as an alias (the way a Herdr catalog target names a
//! machine), with a `known_hosts` that trusts exactly its host key. Strict host key checking
//! stays on, so a test can also build a HOME that does not know the key.
//!
//! `.ci/run` installs openssh-server; without `/usr/sbin/sshd` these tests fail with a
//! message saying so.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The sshd binary.
pub const SSHD: &str = "/usr/sbin/sshd";

/// How the test server treats logins.
#[derive(Clone, Debug, Default)]
pub struct SshdOptions {
    /// A program run instead of every session's command (`ForceCommand`); it gets the
    /// original command in `SSH_ORIGINAL_COMMAND`. Used to simulate a noisy login shell.
    pub force_command: Option<PathBuf>,
    /// Do not authorise the test user's key (authentication fails).
    pub refuse_key: bool,
}

/// A running test sshd; stopped when dropped.
pub struct Sshd {
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl Sshd {
    /// Starts a server with default options.
    pub fn start() -> Self {
        Self::start_with(&SshdOptions::default())
    }

    /// Starts a server.
    pub fn start_with(options: &SshdOptions) -> Self {
        assert!(
            Path::new(SSHD).is_file(),
            "{SSHD} is missing: install openssh-server (.ci/run does: apt-get install openssh-server)"
        );
        let dir = tempfile::tempdir().expect("a temp dir for sshd");
        let path = |name: &str| dir.path().join(name);
        keygen(&path("host_ed25519"));
        keygen(&path("id_ed25519"));
        let public = std::fs::read_to_string(path("id_ed25519.pub")).unwrap();
        let authorized = if options.refuse_key { String::new() } else { public };
        write_private(&path("authorized_keys"), &authorized);
        // Privilege separation needs this directory when sshd runs as root.
        let _ = std::fs::create_dir_all("/run/sshd");
        for _ in 0..5 {
            let port = free_port();
            let config = format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {host}\nPidFile {pid}\nAuthorizedKeysFile {keys}\n\
                 StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
                 PermitRootLogin prohibit-password\nUsePAM no\nPrintMotd no\nPrintLastLog no\nAllowTcpForwarding yes\n\
                 MaxStartups 100\nMaxSessions 100\nLogLevel VERBOSE\n{force}",
                host = path("host_ed25519").display(),
                pid = path("sshd.pid").display(),
                keys = path("authorized_keys").display(),
                force = options
                    .force_command
                    .as_ref()
                    .map(|c| format!("ForceCommand {}\n", c.display()))
                    .unwrap_or_default(),
            );
            write_private(&path("sshd_config"), &config);
            let mut child = Command::new(SSHD)
                .args(["-D", "-e", "-f"])
                .arg(path("sshd_config"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("starting sshd");
            if wait_listening(&mut child, port) {
                return Self {
                    dir,
                    port,
                    child: Some(child),
                };
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("sshd did not start on a free loopback port");
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The user's private key.
    pub fn identity(&self) -> PathBuf {
        self.dir.path().join("id_ed25519")
    }

    /// The server's host public key line (`ssh-ed25519 AAAA…`).
    pub fn host_key(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("host_ed25519.pub")).unwrap();
        text.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
    }

    /// Writes a HOME under `home` whose `~/.ssh/config` maps `alias` to this server and whose
    /// `known_hosts` trusts its host key (unless `trust_host_key` is false).
    pub fn client_home(&self, home: &Path, alias: &str, trust_host_key: bool) {
        let ssh = home.join(".ssh");
        std::fs::create_dir_all(&ssh).unwrap();
        std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o700)).unwrap();
        let user = current_user();
        let config = format!(
            "Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {identity}\n  \
             IdentitiesOnly yes\n  UserKnownHostsFile {known}\n  GlobalKnownHostsFile /dev/null\n",
            port = self.port,
            identity = self.identity().display(),
            known = ssh.join("known_hosts").display(),
        );
        write_private(&ssh.join("config"), &config);
        let known = if trust_host_key {
            format!("[127.0.0.1]:{} {}\n", self.port, self.host_key())
        } else {
            String::new()
        };
        write_private(&ssh.join("known_hosts"), &known);
    }

    /// Stops the server and every session it serves (the connection drops for clients).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Sessions run in sshd's descendants, in their own sessions: end them all.
            for pid in descendants(child.id()) {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .stderr(Stdio::null())
                    .status();
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}

fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "sublaunch-test", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .expect("running ssh-keygen (install openssh-client)");
    assert!(status.success(), "ssh-keygen failed for {}", path.display());
}

fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Reads sshd's log until it says it listens on `port` (or exits, or 10 s pass).
fn wait_listening(child: &mut Child, port: u16) -> bool {
    let stderr = child.stderr.take().expect("stderr is piped");
    let (tx, rx) = mpsc::channel();
    let want = format!("Server listening on 127.0.0.1 port {port}");
    std::thread::spawn(move || {
        let mut told = false;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if !told && line.contains(&want) {
                let _ = tx.send(true);
                told = true;
            }
        }
        if !told {
            let _ = tx.send(false);
        }
    });
    rx.recv_timeout(Duration::from_secs(10)).unwrap_or(false)
}

/// The name of the user running the tests.
pub fn current_user() -> String {
    let output = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Every live descendant of `root` (from /proc), deepest last.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The fields after the last ')' are: state ppid …
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok());
        if let Some(ppid) = ppid {
            parents.push((pid, ppid));
        }
    }
    let mut found = vec![root];
    let mut index = 0;
    while index < found.len() {
        let parent = found[index];
        found.extend(parents.iter().filter(|(_, ppid)| *ppid == parent).map(|(pid, _)| *pid));
        index += 1;
    }
    found.remove(0);
    found
}
