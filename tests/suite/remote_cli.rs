//! Remote placement end to end (placement-and-schemas.md §8 P-H5–P-H12): `sublaunch run
//! --machine` through a real OpenSSH server on 127.0.0.1, a fake `herdr` whose catalog names
//! the server by an ssh config alias, and the real shim. Stop, the failure cases and a noisy
//! login shell included.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;
use sublaunch_tests::cli::{executable, text, write};
use sublaunch_tests::launch_harness::{Scratch, pid_alive, wait_for, wait_terminal};
use sublaunch_tests::sshd::{Sshd, SshdOptions};

const ALIAS: &str = "testbox";

/// One test's world: the server, a client configuration naming it `testbox`, a fake herdr,
/// a private ControlMaster directory and a directory "on the machine".
struct Remote {
    scratch: Scratch,
    server: Sshd,
    control: tempfile::TempDir,
    remote_dir: PathBuf,
}

impl Remote {
    fn new(name: &str) -> Self {
        Self::with(name, &SshdOptions::default(), true)
    }

    fn with(name: &str, options: &SshdOptions, trust_host_key: bool) -> Self {
        let scratch = Scratch::trusting(name);
        let server = Sshd::start_with(options);
        server.client_home(&scratch.path().join("home"), ALIAS, trust_host_key);
        executable(
            &scratch.path().join("herdr"),
            &format!(
                "#!/bin/sh\n[ \"$1 $2 $3\" = 'machine list --json' ] || exit 2\n\
                 echo '{{\"machines\": [{{\"id\": \"m-01\", \"label\": \"{ALIAS}\", \"target\": \"{ALIAS}\"}}]}}'\n"
            ),
        );
        let remote_dir = scratch.path().join("on-the-machine");
        std::fs::create_dir_all(&remote_dir).unwrap();
        // Socket paths are short: a directory directly under /tmp.
        let control = tempfile::Builder::new().prefix("slc").tempdir_in("/tmp").unwrap();
        // A directory the user names must already be private: sublaunch never changes it.
        std::fs::set_permissions(
            control.path(),
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o700),
        )
        .unwrap();
        Self {
            scratch,
            server,
            control,
            remote_dir,
        }
    }

    fn cli(&self, args: &[&str]) -> Command {
        let mut command = self.scratch.cli(args);
        command
            .env("HERDR_BIN", self.scratch.path().join("herdr"))
            .env("SUBLAUNCH_SSH_CONFIG", self.scratch.path().join("home/.ssh/config"))
            .env("SUBLAUNCH_SSH_CONTROL_DIR", self.control.path());
        command
    }

    fn remote_dir(&self) -> String {
        self.remote_dir.to_string_lossy().into_owned()
    }

    /// `run --machine testbox --cwd <remote dir> …`.
    fn run(&self, args: &[&str], cwd: Option<&str>) -> Output {
        let dir = self.remote_dir();
        let mut all = vec!["run", "--machine", ALIAS, "--cwd", cwd.unwrap_or(&dir)];
        all.extend_from_slice(args);
        self.cli(&all).output().unwrap()
    }

    /// `run --machine testbox --cwd <remote dir> --agent shell --task true`, to adjust.
    fn shell_true_command(&self) -> Command {
        let dir = self.remote_dir();
        self.cli(&[
            "run",
            "--machine",
            ALIAS,
            "--cwd",
            &dir,
            "--agent",
            "shell",
            "--task",
            "true",
        ])
    }

    /// `run … --wait --json`: the end object.
    fn run_json(&self, args: &[&str], cwd: Option<&str>) -> Value {
        let mut all = args.to_vec();
        all.extend_from_slice(&["--wait", "--json"]);
        let output = self.run(&all, cwd);
        serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&output.stdout), text(&output.stderr)))
    }

    fn result(&self, end: &Value) -> Value {
        let id = end["runId"].as_str().unwrap();
        let path = self.scratch.results().join(format!("{id}.json"));
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
    }

    /// A project agent `name` running `adapter` with the program at `program`.
    fn agent(&self, name: &str, adapter: &str, program: &Path) {
        write(
            &self.scratch.work().join(format!(".sublaunch/agents/{name}.md")),
            &format!(
                "---\nname: {name}\nrunner:\n  type: external-cli\n  adapter: {adapter}\n  command: [{}]\n---\nBe brief.\n",
                program.display()
            ),
        );
    }
}

fn error_of(end: &Value) -> String {
    end["steps"][0]["error"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_shell_step_runs_in_the_machines_directory() {
    let remote = Remote::new("remote-shell");
    let end = remote.run_json(&["--agent", "shell", "--task", "pwd; echo \"it's remote\""], None);
    assert_eq!(end["state"], "complete", "{end}");
    let result = remote.result(&end);
    let step = &result["results"][0];
    assert_eq!(
        step["output"],
        format!("{}\nit's remote", remote.remote_dir()),
        "{result}"
    );
    assert_eq!(step["machine"]["id"], ALIAS);
    assert_eq!(step["machine"]["cwd"], remote.remote_dir());

    // A git work tree on the machine is described (P-H8 probe).
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(&remote.remote_dir)
            .output()
            .unwrap();
        assert!(status.status.success(), "{}", text(&status.stderr));
    };
    git(&["init", "-q"]);
    git(&["commit", "-q", "--allow-empty", "-m", "x"]);
    let end = remote.run_json(&["--agent", "shell", "--task", "touch new-file"], None);
    let step = remote.result(&end)["results"][0].clone();
    assert_eq!(step["remoteGit"]["branch"], "main", "{step}");
    assert_eq!(step["remoteGit"]["dirty"], true, "{step}");
}

#[test]
fn adapter_steps_get_their_prompt_and_final_message_over_ssh() {
    let remote = Remote::new("remote-adapters");
    let bin = remote.scratch.path().join("remote-bin");
    executable(
        &bin.join("claude"),
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > claude.argv\ncat > claude.stdin\n\
         echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done by remote claude\"}'\n",
    );
    executable(
        &bin.join("codex"),
        "#!/bin/sh\nout=; prev=; for a; do [ \"$prev\" = --output-last-message ] && out=$a; prev=$a; done\n\
         cat > codex.stdin\nprintf 'final from codex\\nsecond line' > \"$out\"\n\
         echo '{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"not the final one\"}}'\n",
    );
    remote.agent("rclaude", "claude-code", &bin.join("claude"));
    remote.agent("rcodex", "codex-exec", &bin.join("codex"));

    let end = remote.run_json(&["--agent", "rclaude", "--task", "review 'this'"], None);
    assert_eq!(end["state"], "complete", "{end}");
    let stdin = std::fs::read_to_string(remote.remote_dir.join("claude.stdin")).unwrap();
    assert_eq!(stdin, "review 'this'", "the prompt reached the remote CLI's stdin");
    let argv = std::fs::read_to_string(remote.remote_dir.join("claude.argv")).unwrap();
    assert!(argv.starts_with("-p\n--output-format\nstream-json\n"), "{argv}");
    assert!(argv.contains("--append-system-prompt\nBe brief.\n"), "{argv}");
    assert_eq!(remote.result(&end)["results"][0]["output"], "done by remote claude");

    // pi's system prompt file is local: it is uploaded to a remote temp file for the run.
    executable(
        &bin.join("pi"),
        "#!/bin/sh\nprev=; for a; do [ \"$prev\" = --append-system-prompt ] && cp \"$a\" pi.system; prev=$a; done\n\
         printf '{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"done by remote pi\"}],\"stopReason\":\"stop\"}}\\n'\n",
    );
    write(
        &remote.scratch.work().join(".sublaunch/agents/rpi.md"),
        &format!(
            "---\nname: rpi\nrunner:\n  type: native\n  command: [{}]\n---\nYou are 'remote'.\n",
            bin.join("pi").display()
        ),
    );
    let end = remote.run_json(&["--agent", "rpi", "--task", "hello"], None);
    assert_eq!(end["state"], "complete", "{end}");
    assert_eq!(remote.result(&end)["results"][0]["output"], "done by remote pi");
    let system = std::fs::read_to_string(remote.remote_dir.join("pi.system")).unwrap();
    assert_eq!(
        system, "You are 'remote'.\n",
        "the system prompt reached the machine as written"
    );

    let end = remote.run_json(&["--agent", "rcodex", "--task", "fix"], None);
    assert_eq!(end["state"], "complete", "{end}");
    let output = remote.result(&end)["results"][0]["output"].clone();
    assert_eq!(
        output, "final from codex\nsecond line",
        "the remote final message came back between the markers"
    );
}

#[test]
fn stop_ends_the_remote_process_tree() {
    let remote = Remote::new("remote-stop");
    let output = remote.run(&["--agent", "shell", "--task", "sleep 4242 & sleep 4243; wait"], None);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let id = text(&output.stdout).lines().next().unwrap().trim().to_owned();
    let sleepers = || -> Vec<u32> {
        let mut pids = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            if cmdline == b"sleep\x004242\x00" || cmdline == b"sleep\x004243\x00" {
                pids.push(pid);
            }
        }
        pids
    };
    let pids = wait_for("both remote sleeps", Duration::from_secs(20), || {
        let pids = sleepers();
        (pids.len() == 2).then_some(pids)
    });
    let stop = remote.cli(&["stop", &id]).output().unwrap();
    assert!(stop.status.success(), "{}", text(&stop.stderr));
    let status = wait_terminal(&remote.scratch.run_dir(&id), Duration::from_secs(30));
    assert_eq!(status["state"], "stopped", "{status}");
    for pid in pids {
        assert!(
            !pid_alive(pid),
            "remote process {pid} was left running: {}",
            std::fs::read_to_string(remote.scratch.run_dir(&id).join("runner.stderr.log")).unwrap_or_default()
        );
    }
}

#[test]
fn unreachable_untrusted_and_unauthenticated_machines_fail_with_hints() {
    // Nothing listens: the server is stopped before the run.
    let mut remote = Remote::new("remote-refused");
    remote.server.stop();
    let end = remote.run_json(&["--agent", "shell", "--task", "true"], None);
    assert_eq!(end["state"], "failed");
    let error = error_of(&end);
    assert!(
        error.contains("Connection refused") && error.contains("could not reach 'testbox'"),
        "{error}"
    );
    assert!(error.contains("never entered"), "{error}");

    let remote = Remote::with("remote-hostkey", &SshdOptions::default(), false);
    let end = remote.run_json(&["--agent", "shell", "--task", "true"], None);
    let error = error_of(&end);
    assert!(
        error.contains("Host key verification failed") && error.contains("host key of 'testbox'"),
        "{error}"
    );

    let options = SshdOptions {
        refuse_key: true,
        ..SshdOptions::default()
    };
    let remote = Remote::with("remote-auth", &options, true);
    let end = remote.run_json(&["--agent", "shell", "--task", "true"], None);
    let error = error_of(&end);
    assert!(
        error.contains("Permission denied") && error.contains("could not authenticate"),
        "{error}"
    );
}

#[test]
fn a_missing_remote_directory_or_cli_is_named() {
    let remote = Remote::new("remote-missing");
    let end = remote.run_json(&["--agent", "shell", "--task", "true"], Some("/nonexistent/project"));
    assert_eq!(end["state"], "failed");
    let error = error_of(&end);
    assert!(
        error.contains("exited with code 125") && error.contains("nothing at /nonexistent/project"),
        "{error}"
    );

    remote.agent("ghost", "claude-code", Path::new("/opt/none/claude"));
    let end = remote.run_json(&["--agent", "ghost", "--task", "hi"], None);
    assert_eq!(end["state"], "failed");
    let error = error_of(&end);
    assert!(
        error.contains("exited with code 127") && error.contains("missing on 'testbox'"),
        "{error}"
    );
}

#[test]
fn a_dropped_connection_ends_the_run_failed() {
    let mut remote = Remote::new("remote-drop");
    let output = remote.run(&["--agent", "shell", "--task", "echo started; sleep 4244"], None);
    let id = text(&output.stdout).lines().next().unwrap().trim().to_owned();
    let run_dir = remote.scratch.run_dir(&id);
    wait_for("the remote agent's first line", Duration::from_secs(20), || {
        let log = std::fs::read_to_string(run_dir.join("output-0.log")).unwrap_or_default();
        log.contains("started").then_some(())
    });
    remote.server.stop();
    let status = wait_terminal(&run_dir, Duration::from_secs(30));
    assert_eq!(status["state"], "failed", "{status}");
    let error = status["error"].as_str().unwrap_or_default();
    assert!(error.contains("code 255") && error.contains("dropped"), "{error}");
}

#[test]
fn a_noisy_login_shell_cannot_forge_markers() {
    let scratch = tempfile::tempdir().unwrap();
    let noisy = scratch.path().join("noisy-login");
    executable(
        &noisy,
        "#!/bin/sh\necho 'Welcome! Last login: yesterday'\necho '__pi_subagents_ready_0000000000000000__'\n\
         echo 'rc noise' >&2\nexec /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"\n",
    );
    let options = SshdOptions {
        force_command: Some(noisy),
        ..SshdOptions::default()
    };
    let remote = Remote::with("remote-noisy", &options, true);
    let end = remote.run_json(&["--agent", "shell", "--task", "echo clean output"], None);
    assert_eq!(end["state"], "complete", "{end}");
    assert_eq!(remote.result(&end)["results"][0]["output"], "clean output");
}

/// The ControlMaster processes of `control` (title `ssh: <dir>/<hash> [mux]`).
fn masters(control: &Path) -> Vec<u32> {
    let prefix = format!("ssh: {}/", control.display());
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let title = text(&std::fs::read(entry.path().join("cmdline")).unwrap_or_default()).replace('\0', " ");
        if title.starts_with(&prefix) && title.trim_end().ends_with("[mux]") {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn the_next_launch_to_the_machine_reuses_its_connection() {
    let remote = Remote::new("remote-reuse");
    let end = remote.run_json(&["--agent", "shell", "--task", "true"], None);
    assert_eq!(end["state"], "complete", "{end}");
    let first = masters(remote.control.path());
    assert_eq!(first.len(), 1, "the master outlived the shim's X8 sweep: {first:?}");
    let end = remote.run_json(&["--agent", "shell", "--task", "echo again"], None);
    assert_eq!(end["state"], "complete", "{end}");
    assert_eq!(
        masters(remote.control.path()),
        first,
        "the same master served the second launch"
    );
}

#[test]
fn a_missing_ssh_client_is_refused_before_launch() {
    let remote = Remote::new("remote-no-ssh");
    let output = remote
        .shell_true_command()
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert_eq!(
        stderr,
        "sublaunch run: steps placed on a machine run through ssh, and 'ssh' is not on PATH (/nonexistent).\nInstall the OpenSSH client.\n"
    );
    assert!(!remote.scratch.runs().exists() || std::fs::read_dir(remote.scratch.runs()).unwrap().next().is_none());
}

#[test]
fn previous_reaches_a_placed_shell_step_as_data() {
    let remote = Remote::new("remote-hostile");
    let value = "$(touch PWNED); `touch PWNED` 'it''s' \"q\"\n-n";
    let source = remote.remote_dir.join("value.txt");
    std::fs::write(&source, value).unwrap();
    let chain = write(
        &remote.scratch.work().join("hostile.yaml"),
        &format!(
            "steps:\n  - {{agent: shell, task: 'cat {}'}}\n  - {{agent: shell, task: \"printf '%s' {{previous}} > got.out\"}}\n",
            source.display()
        ),
    );
    let end = remote.run_json(&["--chain", &chain.to_string_lossy()], None);
    assert_eq!(end["state"], "complete", "{end}");
    assert_eq!(
        std::fs::read_to_string(remote.remote_dir.join("got.out")).unwrap(),
        value
    );
    assert!(!remote.remote_dir.join("PWNED").exists());
}

#[test]
fn a_control_directory_others_can_reach_is_refused_and_left_as_it_is() {
    use std::os::unix::fs::PermissionsExt;
    let remote = Remote::new("remote-control-dir");
    let shared = tempfile::Builder::new().prefix("slc").tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let output = remote
        .shell_true_command()
        .env("SUBLAUNCH_SSH_CONTROL_DIR", shared.path())
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(0));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "the ssh control directory {} (SUBLAUNCH_SSH_CONTROL_DIR) is not private: other users can reach it (mode 0755)",
            shared.path().display()
        )),
        "{stderr}"
    );
    let mode = std::fs::metadata(shared.path()).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o755, "never chmodded");
    assert_eq!(
        std::fs::read_dir(shared.path()).unwrap().count(),
        0,
        "no socket was made there"
    );
}
