//! A CLI that follows conventions (issue 35): the task from standard input, a file or a
//! positional argument; did-you-mean for subcommands and flags; one error style
//! (`sublaunch <command>: …`) with no run id for a run that never existed; chain files that
//! cannot run refused before launch; the exit codes scripts rely on; `prune` asking first;
//! `--json` one document; completions and man pages generated from the CLI's definition.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use sublaunch_tests::cli::{ok, text, write};
use sublaunch_tests::launch_harness::{Scratch, names_in};

/// `sublaunch ARGS` with `input` on its standard input.
fn with_stdin(scratch: &Scratch, args: &[&str], input: &[u8]) -> Output {
    let mut child = scratch
        .cli(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// The run directories (not the indexes beside them).
fn run_names(scratch: &Scratch) -> Vec<String> {
    let runs = scratch.runs();
    if !runs.exists() {
        return Vec::new();
    }
    names_in(&runs).into_iter().filter(|n| !n.starts_with('.')).collect()
}

/// A refused command: its exit code must be `code`, its stdout empty, and no run directory
/// may have been made beyond the `before` ones; its stderr.
fn refused_after(scratch: &Scratch, before: &[String], output: &Output, code: i32) -> String {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    assert!(text(&output.stdout).is_empty(), "{}", text(&output.stdout));
    assert_eq!(run_names(scratch), before, "a refused command launched nothing");
    stderr
}

/// [`refused_after`] in a state root without runs.
fn refused(scratch: &Scratch, output: &Output, code: i32) -> String {
    refused_after(scratch, &[], output, code)
}

/// #6: `--task -`, `--task-file`, a positional task, and short flags.
#[test]
fn a_task_comes_from_standard_input_a_file_or_an_argument() {
    let scratch = Scratch::new("conv-task");
    let waited = |args: &[&str], input: &[u8]| ok(&with_stdin(&scratch, args, input));
    assert_eq!(
        waited(
            &["run", "--agent", "shell", "--task", "-", "--wait"],
            b"echo from-stdin\n"
        ),
        "from-stdin\n"
    );
    let file = write(&scratch.path().join("task.sh"), "echo line-1\necho 'line 2'\n\n");
    let file = file.to_str().unwrap();
    assert_eq!(
        waited(&["run", "--agent", "shell", "--task-file", file, "--wait"], b""),
        "line-1\nline 2\n"
    );
    assert_eq!(
        waited(
            &["run", "--agent", "shell", "--task-file", "-", "--wait"],
            b"echo piped-file\n"
        ),
        "piped-file\n"
    );
    assert_eq!(
        waited(&["run", "--agent", "shell", "echo positional", "--wait"], b""),
        "positional\n"
    );
    assert_eq!(
        waited(&["run", "-a", "shell", "-t", "echo short", "-w"], b""),
        "short\n"
    );
    let before = run_names(&scratch);
    let refused = |output: &Output, code: i32| refused_after(&scratch, &before, output, code);

    // A task of two unquoted words: what to do instead.
    let two = with_stdin(&scratch, &["run", "--agent", "shell", "echo", "hi"], b"");
    assert_eq!(
        refused(&two, 2),
        "sublaunch run: unexpected argument 'hi' found\n\n  tip: the task is one argument: quote a task of several words (sublaunch run --agent shell 'echo hi'), or use --task TEXT, --task - (standard input) or --task-file FILE\n\nUsage: sublaunch run [OPTIONS] [TASK]\n\nFor more information, try '--help'.\n"
    );
    let follow_up = with_stdin(&scratch, &["resume", "shell-x", "now fix it"], b"");
    assert!(
        refused(&follow_up, 2).starts_with(
            "sublaunch resume: unexpected argument 'now fix it' found\n\n  tip: a follow-up is given with --task: sublaunch resume RUN_ID --task 'now fix it'\n"
        ),
        "{}",
        text(&follow_up.stderr)
    );
    let none = with_stdin(&scratch, &["run", "--agent", "shell"], b"");
    assert_eq!(
        refused(&none, 2),
        "sublaunch run: no task: give it as an argument (sublaunch run --agent shell 'echo hi'), with --task TEXT, --task - (standard input) or --task-file FILE\n"
    );
    let empty = with_stdin(&scratch, &["run", "--agent", "shell", "--task", "-"], b"\n\n");
    assert_eq!(
        refused(&empty, 2),
        "sublaunch run: --task -: standard input: the task is empty\n"
    );
    let nul = with_stdin(&scratch, &["run", "--agent", "shell", "--task", "-"], b"echo a\0b\n");
    assert_eq!(
        refused(&nul, 2),
        "sublaunch run: --task -: standard input: the task contains a NUL byte, which no program can be given\n"
    );
    let missing = scratch.path().join("missing.md");
    let output = with_stdin(
        &scratch,
        &["run", "--agent", "shell", "--task-file", missing.to_str().unwrap()],
        b"",
    );
    assert_eq!(
        refused(&output, 2),
        format!(
            "sublaunch run: --task-file {}: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
}

/// clap's did-you-mean, said in the one error style.
#[test]
fn a_mistyped_subcommand_or_flag_gets_a_suggestion() {
    let scratch = Scratch::new("conv-typo");
    let output = scratch.cli(&["stauts", "x"]).output().unwrap();
    let stderr = refused(&scratch, &output, 2);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines[0], "sublaunch: unrecognized subcommand 'stauts'", "{stderr}");
    assert!(
        lines[2].starts_with("  tip: some similar subcommands exist: ") && lines[2].contains("'status'"),
        "{stderr}"
    );
    let output = scratch
        .cli(&["run", "--agent", "shell", "--tsk", "x"])
        .output()
        .unwrap();
    let stderr = refused(&scratch, &output, 2);
    assert!(
        stderr.starts_with(
            "sublaunch run: unexpected argument '--tsk' found\n\n  tip: a similar argument exists: '--task'\n"
        ),
        "{stderr}"
    );
    let output = scratch.cli(&["worktrees", "prune", "--forse"]).output().unwrap();
    let stderr = refused(&scratch, &output, 2);
    assert!(
        stderr.starts_with("sublaunch worktrees prune: unexpected argument '--forse' found\n\n  tip: a similar argument exists: '--force'\n"),
        "{stderr}"
    );
}

/// #24, #25: an empty chain file and a NUL byte in a task are refused before launch, naming
/// the file and the place.
#[test]
fn chain_files_that_cannot_run_are_refused_saying_where() {
    let scratch = Scratch::new("conv-chain");
    let empty = write(&scratch.path().join("empty.yaml"), "");
    let comments = write(&scratch.path().join("comments.yaml"), "# nothing yet\n");
    let nul = write(
        &scratch.path().join("nul.yaml"),
        "steps:\n  - agent: shell\n    task: echo one\n  - parallel:\n      - agent: shell\n        task: \"printf 'tab\\there\\0'\"\n",
    );
    for (file, says) in [
        (&empty, "the file is empty: a chain file needs `steps:`"),
        (&comments, "the file holds nothing: a chain file needs `steps:`"),
        (
            &nul,
            "steps[1].parallel[0].task: contains a NUL byte, which no program can be given",
        ),
    ] {
        let output = scratch
            .cli(&["run", "--chain", file.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(
            refused(&scratch, &output, 2),
            format!("sublaunch run: {}: {says}\n", file.display())
        );
        let dry = scratch
            .cli(&["run", "--chain", file.to_str().unwrap(), "--dry-run"])
            .output()
            .unwrap();
        assert_eq!(dry.status.code(), Some(2), "a dry run refuses it too");
    }
}

/// #15, #16: a refused launch says `sublaunch run: <what>: <why>`, exits 2, and names no run
/// id (none exists), whatever refused it.
#[test]
fn launch_refusals_speak_one_style_and_name_no_run() {
    let scratch = Scratch::new("conv-refusals");
    let missing = scratch.path().join("no/such/dir");
    let work = scratch.work();
    let not_git = scratch.path().join("plain");
    std::fs::create_dir_all(&not_git).unwrap();
    for (args, says) in [
        (
            vec!["--cwd", missing.to_str().unwrap()],
            format!("the working directory {} does not exist", missing.display()),
        ),
        (
            vec!["--output", "out/x.txt"],
            format!(
                "step 1 shell writes its answer to {}, and its directory {} does not exist",
                work.join("out/x.txt").display(),
                work.join("out").display()
            ),
        ),
        (
            vec!["--worktree", "--cwd", not_git.to_str().unwrap()],
            format!(
                "step 1 shell asks for a managed worktree, but its directory {} is not inside a git repository",
                not_git.display()
            ),
        ),
    ] {
        let mut all = vec!["run", "--agent", "shell", "--task", "true"];
        all.extend_from_slice(&args);
        let output = scratch.cli(&all).output().unwrap();
        assert_eq!(
            refused(&scratch, &output, 2),
            format!("sublaunch run: {says}\n"),
            "{args:?}"
        );
    }
}

/// A launch undone before its runner started (here: a runner that cannot be executed) left
/// no run, so it names none: exit 1, `sublaunch run: the run could not start: …`.
#[test]
fn a_launch_undone_before_its_runner_started_names_no_run() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = Scratch::new("conv-not-spawned");
    let shim = scratch.path().join("not-executable-shim");
    std::fs::copy(sublaunch_tests::bin("sublaunch-shim"), &shim).unwrap();
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o644)).unwrap();
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", "true"])
        .env("SUBLAUNCH_SHIM", &shim)
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "sublaunch run: the run could not start: async runner did not produce a pid for cwd: {}: ",
            scratch.work().display()
        )) && !stderr.contains("Failed to start async run"),
        "{stderr}"
    );
    assert_eq!(run_names(&scratch), Vec::<String>::new(), "no run is left");
}

/// The exit codes of the reference: 0 success, 1 the run failed, 2 usage or refused before
/// launch, 3 no such run, 124 a wait's time ran out.
#[test]
fn exit_codes_scripts_can_rely_on() {
    let scratch = Scratch::new("conv-exit");
    let code = |args: &[&str]| scratch.cli(args).output().unwrap().status.code();
    assert_eq!(code(&["run", "--agent", "shell", "--task", "true", "--wait"]), Some(0));
    assert_eq!(
        code(&["run", "--agent", "shell", "--task", "exit 3", "--wait"]),
        Some(1)
    );
    assert_eq!(
        code(&["run", "--agent", "shell", "--task", "x", "--timeout", "soon"]),
        Some(2)
    );
    assert_eq!(code(&["run", "--agent", "no-such-agent", "--task", "x"]), Some(2));
    assert_eq!(code(&["status", "shell-nosuchrun"]), Some(3));
    let slow = ok(&scratch
        .cli(&["run", "--agent", "shell", "--task", "sleep 30"])
        .output()
        .unwrap());
    let slow = slow.trim();
    let waited = scratch.cli(&["wait", slow, "--timeout", "200ms"]).output().unwrap();
    assert_eq!(
        (waited.status.code(), text(&waited.stderr)),
        (
            Some(2),
            "sublaunch wait: invalid value '200ms' for '--timeout <DURATION>': '200ms' has an unknown unit 'ms' (use s, m, h, d or w)\n\nFor more information, try '--help'.\n".to_owned()
        ),
    );
    let waited = scratch.cli(&["wait", slow, "--timeout", "1s"]).output().unwrap();
    assert_eq!(waited.status.code(), Some(124), "{}", text(&waited.stderr));
    ok(&scratch.cli(&["stop", slow]).output().unwrap());
    // A stop not recorded in time is 124 too: an agent that ignores SIGTERM outlasts a 1s
    // wait (the runner kills it 3 s after the SIGTERM).
    let stubborn = ok(&scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "trap '' TERM; echo up; while :; do sleep 0.1; done",
        ])
        .output()
        .unwrap());
    let stubborn = stubborn.trim();
    sublaunch_tests::launch_harness::wait_for("the agent to start", std::time::Duration::from_secs(20), || {
        std::fs::read_to_string(scratch.run_dir(stubborn).join("output-0.log"))
            .ok()
            .filter(|out| out.contains("up"))
    });
    let stopped = scratch.cli(&["stop", stubborn, "--timeout", "1s"]).output().unwrap();
    assert_eq!(
        (stopped.status.code(), text(&stopped.stderr)),
        (
            Some(124),
            format!("sublaunch stop: run '{stubborn}' did not record its end within 1s\n")
        )
    );
    let ended = scratch.cli(&["wait", stubborn]).output().unwrap();
    assert_eq!(
        (ended.status.code(), text(&ended.stdout)),
        (Some(15), format!("{stubborn}: stopped\n"))
    );
}

/// #32: `prune` without a choice of runs asks on a terminal, and elsewhere wants `--yes`.
#[test]
fn prune_of_everything_asks_first() {
    let scratch = Scratch::new("conv-prune");
    let first = scratch.finished_shell_run("echo one");
    let second = scratch.finished_shell_run("echo two");
    let output = scratch.cli(&["prune"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "sublaunch prune: this removes every ended run: confirm with --yes, or choose runs with --older-than or --state (--dry-run shows what would go)\n"
    );
    assert!(scratch.run_dir(&first).exists() && scratch.run_dir(&second).exists());

    let no = in_terminal(&scratch, "prune", "n\n");
    assert!(no.contains("Remove 2 ended runs, "), "{no}");
    assert!(no.contains(&format!("  {first} (complete, ended ")), "{no}");
    assert!(no.contains("nothing removed"), "{no}");
    assert!(scratch.run_dir(&first).exists() && scratch.run_dir(&second).exists());

    let yes = in_terminal(&scratch, "prune", "y\n");
    assert!(yes.contains("removed 2 runs, "), "{yes}");
    assert!(!scratch.run_dir(&first).exists() && !scratch.run_dir(&second).exists());
}

/// #32: what `prune` asked about is all it removes: a run that ends while the question is
/// open is spared, however prunable it has become by the answer.
#[test]
fn prune_removes_only_the_runs_it_asked_about() {
    let scratch = Scratch::new("conv-prune-race");
    let listed = scratch.finished_shell_run("echo listed");
    let gate = scratch.path().join("gate");
    assert!(Command::new("mkfifo").arg(&gate).status().unwrap().success());
    let task = format!("read line < {}; echo late", gate.display());
    let late = ok(&scratch
        .cli(&["run", "--agent", "shell", "--task", &task])
        .output()
        .unwrap());
    let late = late.trim().to_owned();

    let command = format!("{} prune", sublaunch_tests::bin("sublaunch").display());
    let mut prune = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .current_dir(scratch.work())
        .env_clear()
        .envs(scratch.cli_env())
        .env("TERM", "xterm")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script(1) from util-linux runs the terminal tests");
    let shown = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let shown = shown.clone();
        let mut stdout = prune.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = std::io::Read::read(&mut stdout, &mut chunk) {
                shown.lock().unwrap().push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        })
    };
    let limit = std::time::Duration::from_secs(20);
    sublaunch_tests::launch_harness::wait_for("the question", limit, || {
        shown.lock().unwrap().contains("[y/N]").then_some(())
    });
    assert!(
        shown.lock().unwrap().contains("Remove 1 ended run, "),
        "{}",
        shown.lock().unwrap()
    );
    // The second run ends while the question is open, and becomes prunable.
    std::fs::write(
        &gate, "go
",
    )
    .unwrap();
    sublaunch_tests::launch_harness::wait_for("the late run to be prunable", limit, || {
        let dry = ok(&scratch.cli(&["prune", "--dry-run"]).output().unwrap());
        dry.contains(&format!("would remove {late} (")).then_some(())
    });
    prune.stdin.as_mut().unwrap().write_all(b"y\n").unwrap();
    assert!(prune.wait().unwrap().success());
    reader.join().unwrap();
    let shown = shown.lock().unwrap().replace('\r', "");
    assert!(shown.contains("removed 1 run, "), "{shown}");
    assert!(!scratch.run_dir(&listed).exists(), "{shown}");
    assert!(
        scratch.run_dir(&late).exists(),
        "the run that ended after the question stays: {shown}"
    );
}

/// Runs `sublaunch ARGS` in a pty (`script(1)`), typing `input`; what the terminal showed.
fn in_terminal(scratch: &Scratch, args: &str, input: &str) -> String {
    let command = format!("{} {args}", sublaunch_tests::bin("sublaunch").display());
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .current_dir(scratch.work())
        .env_clear()
        .envs(scratch.cli_env())
        .env("TERM", "xterm")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script(1) from util-linux runs the terminal tests");
    child.stdin.as_mut().unwrap().write_all(input.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    text(&output.stdout).replace('\r', "")
}

/// `--json` prints one document where a command does not stream: `worktrees --json` (the
/// flag on the command itself, not only on `list`) is one array.
#[test]
fn json_is_one_document() {
    let scratch = Scratch::new("conv-json");
    for args in [
        &["worktrees", "--json"][..],
        &["worktrees", "list", "-j"],
        &["worktrees", "prune", "--json"],
    ] {
        assert_eq!(ok(&scratch.cli(args).output().unwrap()), "[]\n", "{args:?}");
    }
}

/// Completions for bash, zsh and fish, and man pages, from an installed binary; bash's
/// completes a subcommand and a flag, and the man page renders.
#[test]
fn completions_and_man_pages_come_from_the_cli_definition() {
    let scratch = Scratch::new("conv-generated");
    let bash = ok(&scratch.cli(&["completions", "bash"]).output().unwrap());
    let script = write(&scratch.path().join("sublaunch.bash"), &bash);
    let complete = |words: &str| {
        let probe = format!(
            "source {}; complete -p sublaunch >/dev/null || exit 9; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); COMP_LINE='{words}'; COMP_POINT=${{#COMP_LINE}}; _sublaunch sublaunch \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        );
        let output = Command::new("bash").args(["--norc", "-c", &probe]).output().unwrap();
        assert!(output.status.success(), "{words}: {}", text(&output.stderr));
        text(&output.stdout)
    };
    assert_eq!(complete("sublaunch sta"), "status\n");
    assert!(complete("sublaunch run --ta").lines().any(|w| w == "--task-file"));
    assert_eq!(complete("sublaunch wo"), "worktrees\n");

    let zsh = ok(&scratch.cli(&["completions", "zsh"]).output().unwrap());
    assert!(
        zsh.starts_with("#compdef sublaunch\n") && zsh.contains("--task-file=[Read the task from FILE"),
        "{}",
        &zsh[..200]
    );
    let fish = ok(&scratch.cli(&["completions", "fish"]).output().unwrap());
    assert!(
        fish.contains("complete -c sublaunch") && fish.contains("-l task-file"),
        "{}",
        &fish[..200]
    );

    let page = ok(&scratch.cli(&["man"]).output().unwrap());
    assert!(
        page.contains(".TH sublaunch 1") && page.contains(".SH SUBCOMMANDS"),
        "{page}"
    );
    let dir = scratch.path().join("man1");
    ok(&scratch.cli(&["man", dir.to_str().unwrap()]).output().unwrap());
    for name in [
        "sublaunch.1",
        "sublaunch-run.1",
        "sublaunch-worktrees-prune.1",
        "sublaunch-completions.1",
    ] {
        assert!(dir.join(name).is_file(), "{name}");
    }
    let rendered = render(&dir.join("sublaunch-run.1"));
    assert!(
        rendered.contains("sublaunch-run - Plan and launch a background run"),
        "{rendered}"
    );
    assert!(rendered.contains("-a, --agent <AGENT>"), "{rendered}");
    assert!(rendered.contains("--task-file <FILE>"), "{rendered}");
}

/// The page as a terminal shows it (groff's man macros), without its formatting.
fn render(page: &Path) -> String {
    let output = Command::new("groff")
        .args(["-man", "-Tascii", "-P", "-cbou"])
        .arg(page)
        .output()
        .expect("groff renders the man pages");
    assert!(output.status.success(), "{}", text(&output.stderr));
    text(&output.stdout)
}
