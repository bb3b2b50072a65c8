//! The OS sandbox (rules G20, G28, G29, G30, G32, G36) against the real binaries: a `shell` agent in a scratch
//! home tries what a hostile agent would — `rm -rf ~`, a write outside its directory, a read
//! of `~/.ssh`, TCP to a loopback port off its list and on it, a signal to its own runner, a
//! write into sublaunch's run records — and each is denied while the run ends truthfully and
//! its records say which sandbox it ran in. The same script without the sandbox does all of
//! it (so every assertion can fail). A kernel that cannot give the sandbox (a test build
//! pretending an older Landlock ABI) fails the launch before the agent starts, unless best
//! effort was asked for.

use serde_json::Value;
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;
use sublaunch_tests::cli::{ok, text, waited_run_id};
use sublaunch_tests::launch_harness::{Scratch, status, wait_terminal};

const LIMIT: Duration = Duration::from_secs(60);

/// The probes: one line `NAME allowed|denied` each in `<work>/probes.txt`.
fn hostile_script(scratch: &Scratch, on: u16, off: u16) -> String {
    let home = scratch.path().join("home");
    format!(
        r#"runner=$PPID
probe() {{ if sh -c "$2" >/dev/null 2>&1; then echo "$1 allowed"; else echo "$1 denied"; fi >> probes.txt; }}
probe read-ssh 'cat {home}/.ssh/id_x'
probe write-outside 'echo x > {outside}'
probe write-records 'echo x > {root}/planted'
probe tcp-off 'exec 3<>/dev/tcp/127.0.0.1/{off}' 
probe tcp-on 'exec 3<>/dev/tcp/127.0.0.1/{on}'
probe signal-runner "kill -0 $runner"
probe write-tmp 'echo x > "$TMPDIR/scratch"'
probe write-inside 'echo x > inside.txt'
probe rm-home 'rm -rf {home}'
echo probed"#,
        home = home.display(),
        outside = scratch.path().join("outside.txt").display(),
        root = scratch.root().display(),
    )
    .replace("sh -c", "bash -c")
}

/// A scratch with a home holding a key and a file `rm -rf ~` would delete.
fn scratch_with_home(name: &str) -> Scratch {
    let scratch = Scratch::new(name);
    let home = scratch.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_x"), "secret").unwrap();
    std::fs::write(home.join("notes.txt"), "keep me").unwrap();
    scratch.create_root();
    scratch
}

fn probes(scratch: &Scratch) -> Vec<String> {
    sublaunch_tests::cli::lines(&scratch.work().join("probes.txt"))
}

fn listeners() -> (TcpListener, TcpListener) {
    let on = TcpListener::bind("127.0.0.1:0").unwrap();
    let off = TcpListener::bind("127.0.0.1:0").unwrap();
    (on, off)
}

fn port(listener: &TcpListener) -> u16 {
    listener.local_addr().unwrap().port()
}

fn step_sandbox(run_dir: &Path) -> Value {
    status(run_dir).unwrap()["steps"][0]["sandbox"].clone()
}

/// G28, G29, G31: every hostile probe is denied, only the step's own directory, its temporary
/// directory and the listed port are usable, the run completes, and the status, the result
/// (JSON and text) and `status` say which sandbox the agent ran in.
#[test]
fn a_sandboxed_shell_agent_is_denied_everything_outside_its_workspace() {
    let scratch = scratch_with_home("sandbox-hostile");
    let (on, off) = listeners();
    let script = hostile_script(&scratch, port(&on), port(&off));
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--sandbox",
            "workspace",
            "--sandbox-port",
            &port(&on).to_string(),
            "--wait",
            "--task",
            &script,
        ])
        .output()
        .unwrap();
    let answer = ok(&output);
    assert!(answer.contains("probed"), "{answer}");
    assert!(
        text(&output.stderr).contains("('shell') sandbox: workspace (Landlock ABI"),
        "{}",
        text(&output.stderr)
    );
    let run_id = waited_run_id(&output);
    let probes = probes(&scratch);
    for denied in [
        "read-ssh",
        "write-outside",
        "write-records",
        "tcp-off",
        "signal-runner",
        "rm-home",
    ] {
        assert!(probes.contains(&format!("{denied} denied")), "{denied}: {probes:?}");
    }
    for allowed in ["tcp-on", "write-tmp", "write-inside"] {
        assert!(probes.contains(&format!("{allowed} allowed")), "{allowed}: {probes:?}");
    }
    let home = scratch.path().join("home");
    assert_eq!(std::fs::read_to_string(home.join("notes.txt")).unwrap(), "keep me");
    assert!(home.join(".ssh/id_x").exists() && !scratch.path().join("outside.txt").exists());
    assert!(!scratch.root().join("planted").exists());

    let run_dir = scratch.run_dir(&run_id);
    let end = wait_terminal(&run_dir, LIMIT);
    assert_eq!(end["state"], "complete", "{end}");
    let sandbox = step_sandbox(&run_dir);
    assert_eq!(sandbox["profile"], "workspace", "{sandbox}");
    assert_eq!(sandbox["ports"], serde_json::json!([port(&on)]), "{sandbox}");
    let enforced: Vec<&str> = sandbox["enforced"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for kind in ["files", "tcp-connect", "signals", "no-new-privs"] {
        assert!(enforced.contains(&kind), "{kind}: {sandbox}");
    }
    let writable: Vec<&str> = sandbox["writable"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let tmpdir = writable
        .iter()
        .find(|p| p.contains(&format!("sublaunch-{run_id}-0")))
        .expect("its tmpdir");
    assert!(
        !Path::new(tmpdir).exists(),
        "the step's temporary directory is removed at its end"
    );
    let notes = sandbox["notes"].to_string();
    assert!(notes.contains("UDP") && notes.contains("Unix"), "{sandbox}");

    let result = scratch.cli(&["result", "--json", &run_id]).output().unwrap();
    let result: Value = serde_json::from_str(&ok(&result)).unwrap();
    assert_eq!(result["steps"][0]["sandbox"]["profile"], "workspace", "{result}");
    let shown = scratch.cli(&["status", &run_id]).output().unwrap();
    let shown = ok(&shown);
    assert!(shown.contains("sandbox  shell: workspace (Landlock ABI"), "{shown}");
    let told = scratch.cli(&["result", &run_id]).output().unwrap();
    assert!(
        text(&told.stderr).contains("sandbox: workspace"),
        "{}",
        text(&told.stderr)
    );
}

/// The control: the same probes without `--sandbox` all succeed, so the test above can fail.
#[test]
fn the_same_script_unsandboxed_does_everything() {
    let scratch = scratch_with_home("sandbox-control");
    let (on, off) = listeners();
    let script = hostile_script(&scratch, port(&on), port(&off));
    let output = scratch
        .cli(&["run", "--agent", "shell", "--wait", "--task", &script])
        .output()
        .unwrap();
    ok(&output);
    let probes = probes(&scratch);
    for name in [
        "read-ssh",
        "write-outside",
        "write-records",
        "tcp-off",
        "tcp-on",
        "signal-runner",
        "rm-home",
    ] {
        assert!(probes.contains(&format!("{name} allowed")), "{name}: {probes:?}");
    }
    assert!(!scratch.path().join("home").exists());
    let run_dir = scratch.run_dir(&waited_run_id(&output));
    assert!(step_sandbox(&run_dir).is_null());
}

/// G29: an agent that really signals its runner (SIGKILL) cannot: the run ends complete; and
/// the run's revival keeps its sandbox.
#[test]
fn a_sandboxed_agent_cannot_kill_its_runner() {
    let scratch = scratch_with_home("sandbox-kill");
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--sandbox",
            "read-only",
            "--wait",
            "--task",
            "kill -KILL $PPID; echo still here",
        ])
        .output()
        .unwrap();
    let answer = ok(&output);
    assert!(answer.contains("still here"), "{answer}");
    let run_id = waited_run_id(&output);
    let end = wait_terminal(&scratch.run_dir(&run_id), LIMIT);
    assert_eq!(end["state"], "complete", "{end}");
    // Its revival runs in the same sandbox (the plan record carries it).
    let revived = scratch.cli(&["resume", &run_id, "--wait"]).output().unwrap();
    assert!(ok(&revived).contains("still here"));
    let sandbox = step_sandbox(&scratch.run_dir(&waited_run_id(&revived)));
    assert_eq!(sandbox["profile"], "read-only", "{sandbox}");
}

/// G32: a kernel whose Landlock cannot restrict TCP ports (ABI 3, pretended by a test
/// build) fails a launch with a port list before the agent starts, naming what is missing;
/// with best effort the agent runs and the record says what was left out.
#[test]
fn a_sandbox_the_kernel_cannot_give_fails_the_launch_unless_best_effort() {
    let scratch = scratch_with_home("sandbox-abi");
    let marker = scratch.work().join("ran.txt");
    let task = format!("echo ran > {}", marker.display());
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--sandbox",
            "workspace",
            "--sandbox-port",
            "443",
            "--wait",
            "--task",
            &task,
        ])
        .env("SUBLAUNCH_SHIM_LANDLOCK_ABI", "3")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert!(
        said.contains("this kernel's Landlock ABI 3 cannot restrict TCP ports; the port list needs ABI 4"),
        "{said}"
    );
    assert!(!marker.exists(), "the agent must not have started");

    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--sandbox",
            "workspace",
            "--sandbox-port",
            "443",
            "--sandbox-best-effort",
            "--wait",
            "--task",
            &task,
        ])
        .env("SUBLAUNCH_SHIM_LANDLOCK_ABI", "3")
        .output()
        .unwrap();
    ok(&output);
    assert!(marker.exists());
    let sandbox = step_sandbox(&scratch.run_dir(&waited_run_id(&output)));
    assert_eq!(sandbox["landlockAbi"], 3, "{sandbox}");
    assert_eq!(sandbox["bestEffort"], true, "{sandbox}");
    let enforced = sandbox["enforced"].to_string();
    assert!(
        enforced.contains("files") && !enforced.contains("tcp-connect"),
        "{sandbox}"
    );
    assert!(
        sandbox["notes"]
            .to_string()
            .contains("best effort: this kernel's Landlock ABI 3"),
        "{sandbox}"
    );
}

/// G30: a step whose directory holds sublaunch's run records cannot be sandboxed: the launch
/// fails instead of giving the agent the records to write.
#[test]
fn a_workspace_that_holds_the_run_records_is_refused() {
    let scratch = scratch_with_home("sandbox-root");
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--sandbox",
            "workspace",
            "--cwd",
            "..",
            "--wait",
            "--task",
            "echo hi",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert!(said.contains("holds sublaunch's run records"), "{said}");
}

/// G28: the sandbox needs no privileges: an ordinary user's agent is confined the same way
/// (its own key unreadable, nothing written outside its directory), and the run completes.
#[test]
fn an_ordinary_users_agent_is_sandboxed_the_same_way() {
    let scratch = scratch_with_home("sandbox-user");
    let home = scratch.path().join("home");
    let outside = scratch.path().join("outside.txt");
    let task = format!(
        "cat {key} && echo read-key; echo x > {outside} && echo wrote-outside; echo x > inside.txt && echo wrote-inside",
        key = home.join(".ssh/id_x").display(),
        outside = outside.display(),
    );
    let output = scratch
        .cli_unprivileged(&[
            "run",
            "--agent",
            "shell",
            "--sandbox",
            "workspace",
            "--wait",
            "--task",
            &task,
        ])
        .output()
        .unwrap();
    let answer = ok(&output);
    assert!(answer.contains("wrote-inside"), "{answer}");
    assert!(!answer.contains("read-key") && !answer.contains("secret"), "{answer}");
    assert!(!answer.contains("wrote-outside") && !outside.exists(), "{answer}");
    let end = wait_terminal(&scratch.run_dir(&waited_run_id(&output)), LIMIT);
    assert_eq!(end["state"], "complete", "{end}");
}

/// Writes a file only its owner can write, in a directory others cannot write: settings and
/// agents are read from such files only.
fn private_file(path: &Path, content: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
    std::fs::set_permissions(path.parent().unwrap(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
}

/// G20: the settings' default, the agent's frontmatter and a chain step combine into the
/// tightest sandbox (the agent's read-only, the step's port), and `run --dry-run` shows it with
/// its paths and where each part came from.
#[test]
fn settings_frontmatter_and_a_chain_step_combine_into_the_tightest_sandbox() {
    let scratch = scratch_with_home("sandbox-sources");
    let config = scratch.path().join("home/.config/sublaunch");
    private_file(
        &config.join("settings.json"),
        &serde_json::json!({"subagents": {"sandbox": "workspace"}}).to_string(),
    );
    private_file(
        &config.join("agents/careful.md"),
        "---\nname: careful\nrunner: {type: external-cli, adapter: shell}\nsandbox: read-only\n---\n",
    );
    let chain = scratch.path().join("chain.json");
    std::fs::write(
        &chain,
        serde_json::json!({"steps": [
            {"agent": "careful", "task": "true", "sandbox": {"profile": "workspace", "ports": [443]}},
            {"agent": "shell", "task": "true"}
        ]})
        .to_string(),
    )
    .unwrap();
    let output = scratch
        .cli(&["run", "--chain", chain.to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    let plan: Value = serde_json::from_str(&ok(&output)).unwrap();
    let first = &plan["steps"][0]["sandbox"];
    assert_eq!(first["profile"], "read-only", "{first}");
    assert_eq!(first["ports"], serde_json::json!([443]), "{first}");
    assert_eq!(first["writeWorkdir"], false, "{first}");
    let hidden = scratch.path().join("home/.ssh").to_string_lossy().into_owned();
    assert!(
        first["hidden"].as_array().unwrap().contains(&Value::from(hidden)),
        "{first}"
    );
    let sources = first["sources"].to_string();
    for source in [
        "settings subagents.sandbox",
        "agents[careful].sandbox",
        "steps[0].sandbox",
    ] {
        assert!(sources.contains(source), "{source}: {first}");
    }
    // The second step has only the settings' default.
    assert_eq!(plan["steps"][1]["sandbox"]["profile"], "workspace", "{plan}");

    // A profile nobody knows is refused at its source.
    private_file(
        &config.join("settings.json"),
        &serde_json::json!({"subagents": {"sandbox": "strict"}}).to_string(),
    );
    let output = scratch
        .cli(&["run", "--agent", "shell", "--dry-run", "--task", "true"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert!(
        said.contains("subagents.sandbox") && said.contains("'strict'"),
        "{said}"
    );
}

/// G28, G35: a managed worktree is the step's writable directory under `workspace`, and the
/// agent can commit there, but not plant a hook in the repository.
#[test]
fn a_sandboxed_step_writes_in_its_worktree() {
    let scratch = scratch_with_home("sandbox-worktree");
    let work = scratch.init_repo();
    sublaunch_tests::cli::git(
        &work,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "base",
        ],
    );
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--worktree",
            "--sandbox",
            "workspace",
            "--wait",
            "--task",
            "echo x > made.txt && git add made.txt && git -c user.name=a -c user.email=a@e commit -qm made && echo made; \
             echo '#!/bin/sh' > \"$(git rev-parse --git-common-dir)/hooks/post-checkout\" || echo no-hooks",
        ])
        .output()
        .unwrap();
    assert_eq!(ok(&output).trim(), "made\nno-hooks");
    let run_id = waited_run_id(&output);
    assert!(
        scratch
            .root()
            .join("worktrees")
            .join(&run_id)
            .join("1/made.txt")
            .exists()
    );
    assert!(!work.join("made.txt").exists());
    // The commit is on the step's branch; the repository's hooks stayed out of reach.
    let branch = format!("sublaunch/{run_id}/1");
    let subject = sublaunch_tests::cli::git(&work, &["log", "-1", "--format=%s", &branch]);
    assert_eq!(subject.trim(), "made");
    assert!(!work.join(".git/hooks/post-checkout").exists());
}

/// G20, G28: the MCP `run` tool's `sandbox` parameter sandboxes the run, and its answer says so.
#[test]
fn the_mcp_run_tool_takes_a_sandbox() {
    let scratch = scratch_with_home("sandbox-mcp");
    let transcript = crate::mcp_cli::drive(
        &scratch,
        serde_json::json!([
            {"tool": "run", "arguments": {"agent": "shell", "task": "echo x > written.txt; echo done", "sandbox": "read-only", "wait": true}},
            {"tool": "run", "arguments": {"agent": "shell", "task": "true", "sandbox": "strict"}},
        ]),
    );
    let calls = transcript["calls"].as_array().unwrap();
    assert_eq!(
        calls[0]["json"]["steps"][0]["sandbox"]["profile"], "read-only",
        "{}",
        calls[0]
    );
    assert!(
        !scratch.work().join("written.txt").exists(),
        "read-only: nothing written"
    );
    assert!(calls[1]["isError"].as_bool().unwrap(), "{}", calls[1]);
    assert!(calls[1]["text"].as_str().unwrap().contains("strict"), "{}", calls[1]);
}

/// G24: a step placed on another machine cannot be sandboxed from here: the plan is refused,
/// naming the sandbox's source.
#[test]
fn a_placed_step_with_a_sandbox_is_refused() {
    let scratch = scratch_with_home("sandbox-placed");
    let herdr = sublaunch_tests::cli::executable(
        &scratch.path().join("herdr"),
        "#!/bin/sh\necho '{\"machines\": [{\"id\": \"m-01\", \"label\": \"box\", \"target\": \"box\"}]}'\n",
    );
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--machine",
            "box",
            "--cwd",
            "/srv",
            "--sandbox",
            "workspace",
            "--dry-run",
            "--task",
            "true",
        ])
        .env("HERDR_BIN", &herdr)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let said = text(&output.stdout);
    assert!(
        said.contains("cannot be applied to a step placed on another machine") && said.contains("run --sandbox"),
        "{said}"
    );
}

/// G49: a sandboxed tree is always contained. Where the kernel refuses a PID namespace (a test
/// hook plays the refusal) the sandboxed launch fails before its agent starts; with best effort
/// it runs, and its record says which containment it got.
#[test]
fn a_sandboxed_step_without_a_pid_namespace_fails_unless_best_effort() {
    let scratch = scratch_with_home("sandbox-contained");
    let marker = scratch.work().join("ran.txt");
    let task = format!("echo ran > {}", marker.display());
    let launch = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--agent",
            "shell",
            "--sandbox",
            "workspace",
            "--wait",
            "--task",
            &task,
        ];
        args.extend_from_slice(extra);
        let mut command = scratch.cli(&args);
        command.env(
            sublaunch_tests::launch_harness::SHIM_FAULT_ENV,
            "before-agent-spawn:no-namespace",
        );
        command.output().unwrap()
    };
    let refused = launch(&[]);
    assert!(!refused.status.success());
    let said = format!("{}{}", text(&refused.stdout), text(&refused.stderr));
    assert!(said.contains("containment is required"), "{said}");
    assert!(!marker.exists(), "the agent must not have started");

    let output = launch(&["--sandbox-best-effort"]);
    ok(&output);
    assert!(marker.exists());
    let st = status(&scratch.run_dir(&waited_run_id(&output))).unwrap();
    assert_eq!(
        st["steps"][0]["externalProcess"]["containment"], "process-group",
        "{st}"
    );
    assert_eq!(st["steps"][0]["sandbox"]["profile"], "workspace", "{st}");
}

/// G36: an `offline` agent (root's, and an ordinary user's) starts in an empty network namespace, so UDP (which Landlock does
/// not restrict) is refused as well as TCP and nothing reaches a loopback listener; the record
/// says so. Without the sandbox the same datagram arrives; with best effort and no namespace
/// the record says the hole is open, and it is.
#[test]
fn an_offline_agent_cannot_send_udp() {
    let scratch = scratch_with_home("sandbox-offline-udp");
    let listener = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = format!(
        r#"if bash -c 'echo leak > /dev/udp/127.0.0.1/{port}' 2>/dev/null; then echo udp-allowed; else echo udp-denied; fi"#
    );
    let received = || {
        let mut buffer = [0_u8; 64];
        let mut count = 0;
        while listener.recv(&mut buffer).is_ok() {
            count += 1;
        }
        count
    };
    let run = |extra: &[&str], fault: Option<&str>| {
        let mut args = vec!["run", "--agent", "shell", "--wait", "--task", &task];
        args.extend_from_slice(extra);
        let mut command = scratch.cli(&args);
        if let Some(fault) = fault {
            command.env(sublaunch_tests::launch_harness::SHIM_FAULT_ENV, fault);
        }
        let output = command.output().unwrap();
        let answer = ok(&output);
        (answer, scratch.run_dir(&waited_run_id(&output)))
    };

    let (answer, run_dir) = run(&["--sandbox", "offline"], None);
    assert!(answer.contains("udp-denied"), "{answer}");
    assert_eq!(received(), 0, "a datagram left the offline sandbox");
    let sandbox = step_sandbox(&run_dir);
    assert!(
        sandbox["enforced"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "network-namespace"),
        "{sandbox}"
    );
    assert!(!sandbox.to_string().contains("UDP"), "{sandbox}");

    let (answer, _) = run(&[], None);
    assert!(answer.contains("udp-allowed"), "{answer}");
    assert_eq!(received(), 1);

    let (answer, run_dir) = run(
        &["--sandbox", "offline", "--sandbox-best-effort"],
        Some("before-agent-spawn:no-namespace"),
    );
    assert!(answer.contains("udp-allowed"), "{answer}");
    assert_eq!(received(), 1);
    let sandbox = step_sandbox(&run_dir);
    assert!(
        !sandbox["enforced"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "network-namespace"),
        "{sandbox}"
    );
    assert!(sandbox["notes"].to_string().contains("UDP"), "{sandbox}");

    // An ordinary user's agent gets the network namespace inside its user namespace.
    let output = scratch
        .cli_unprivileged(&[
            "run",
            "--agent",
            "shell",
            "--sandbox",
            "offline",
            "--wait",
            "--task",
            &task,
        ])
        .output()
        .unwrap();
    assert!(ok(&output).contains("udp-denied"));
    assert_eq!(received(), 0);
}

/// G33: a runner SIGKILLed while its sandboxed step runs cannot remove the step's temporary
/// directory; the `status` that finds the run dead and marks it failed does.
#[test]
fn a_killed_runners_temporary_directory_goes_with_its_repair() {
    let scratch = scratch_with_home("sandbox-killed-tmp");
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--sandbox",
            "workspace",
            "--task",
            "echo x > \"$TMPDIR/left\"; exec sleep 300",
        ])
        .output()
        .unwrap();
    let run_id = ok(&output).lines().next().unwrap().trim().to_owned();
    let run_dir = scratch.run_dir(&run_id);
    let wanted = format!("sublaunch-{run_id}-0");
    let tmpdir = sublaunch_tests::launch_harness::wait_for("the step's temporary directory", LIMIT, || {
        let st = status(&run_dir)?;
        st["steps"][0]["externalProcess"]["containment"].as_str()?;
        let tmpdir = st["steps"][0]["sandbox"]["writable"]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .find(|p| p.ends_with(&wanted))
            .map(std::path::PathBuf::from)?;
        tmpdir.join("left").exists().then_some(tmpdir)
    });
    let pid = status(&run_dir).unwrap()["pid"].as_u64().unwrap();
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    sublaunch_tests::launch_harness::wait_for("the runner's end", LIMIT, || {
        (!Path::new(&format!("/proc/{pid}")).exists()).then_some(())
    });
    assert!(tmpdir.exists(), "nothing removed it before the repair");
    let shown = text(&scratch.cli(&["status", &run_id]).output().unwrap().stdout);
    assert_eq!(status(&run_dir).unwrap()["state"], "failed", "{shown}");
    assert!(!tmpdir.exists(), "{} is left", tmpdir.display());
}
