//! What the elements of a `command` runner's argv template are to the programs that read
//! them: which one is a script for a shell (found behind wrappers such as `env`, `nice`,
//! `timeout 60` or `busybox`), and which ones a program runs as code (`python3 -c`,
//! `node -e`, the command of `ssh host …`) or may run as code because sublaunch cannot read
//! the options in front of them.
//!
//! Wrapper options are read as GNU getopt reads them, stopping at the first operand; an
//! option sublaunch does not know makes everything after it suspect rather than guessed at.

/// How the elements of a template are read.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reading {
    /// The element that is the script of a shell sublaunch recognised (`sh -c SCRIPT`,
    /// `env sh -c SCRIPT`): its placeholders become references to environment variables.
    pub script: Option<usize>,
    /// The elements a program runs as code, or may: no placeholder may stand in them.
    pub code: Vec<CodeArgument>,
}

/// An element a program runs as code.
#[derive(Debug, PartialEq, Eq)]
pub struct CodeArgument {
    /// Its index in the template.
    pub index: usize,
    /// Why it is code.
    pub why: CodeWhy,
}

/// Why an element is code.
#[derive(Debug, PartialEq, Eq)]
pub enum CodeWhy {
    /// The interpreter (named) runs it: `python3 -c CODE`, `node -e CODE`.
    Interpreter(String),
    /// The script of a shell (named) that an unknown program (named) starts: sublaunch cannot
    /// tell whether the program passes it on unchanged.
    ShellBehind { shell: String, program: String },
    /// The program (named) joins its arguments into a command line for a shell (`ssh host
    /// CMD`, `su -c CMD`, `watch CMD`).
    CommandLine(String),
    /// It follows an option (named) of a program (named) that sublaunch does not read.
    UnreadOption { program: String, option: String },
}

/// The shells whose `-c` argument is a script that reads `"${V}"` as sh does.
const SHELLS: [&str; 14] = [
    "sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "pdksh", "oksh", "ash", "hush", "yash", "posh", "lksh",
];

/// Reads `template`.
pub fn read(template: &[String]) -> Reading {
    let mut reading = Reading::default();
    read_from(template, 0, None, &mut reading);
    reading
}

/// The program name of an element (`/usr/bin/env` → `env`).
fn program_name(arg: &str) -> &str {
    arg.rsplit('/').next().unwrap_or(arg)
}

/// Reads the command that starts at `at`; `behind`: the unknown program that starts it.
fn read_from(argv: &[String], mut at: usize, behind: Option<&str>, reading: &mut Reading) {
    while let Some(program) = argv.get(at) {
        let name = program_name(program);
        if let Some(wrapper) = WRAPPERS.iter().find(|w| w.names.contains(&name)) {
            match wrapper.command_at(argv, at) {
                Ok(Some(next)) => {
                    at = next;
                    continue;
                }
                Ok(None) => return,
                Err(option) => return unread_after(argv, at, name, &option, reading),
            }
        }
        if name == "busybox" {
            // `busybox APPLET …`: the applet is the program.
            at += 1;
            continue;
        }
        if SHELLS.contains(&name) {
            match shell_script(argv, at) {
                Ok(Some(script)) => match behind {
                    None => reading.script = Some(script),
                    Some(program) => reading.code.push(CodeArgument {
                        index: script,
                        why: CodeWhy::ShellBehind {
                            shell: name.to_owned(),
                            program: program.to_owned(),
                        },
                    }),
                },
                Ok(None) => {}
                Err(option) => unread_after(argv, at, name, &option, reading),
            }
            return;
        }
        if let Some(interpreter) = interpreter(name) {
            return interpreter.read(argv, at, name, reading);
        }
        // An unknown program (`sudo`, `xargs`, `docker exec c`): a shell or an interpreter
        // among its arguments may be a command it starts.
        if behind.is_none()
            && let Some(started) = (at + 1..argv.len()).find(|&i| is_shell_or_interpreter(program_name(&argv[i])))
        {
            read_from(argv, started, Some(name), reading);
        }
        return;
    }
}

fn is_shell_or_interpreter(name: &str) -> bool {
    SHELLS.contains(&name) || name == "busybox" || interpreter(name).is_some()
}

/// Marks every element after `at` as code: `program`'s `option` is one sublaunch does not
/// read, so it cannot tell what runs them.
fn unread_after(argv: &[String], at: usize, program: &str, option: &str, reading: &mut Reading) {
    reading.code.extend((at + 1..argv.len()).map(|index| CodeArgument {
        index,
        why: CodeWhy::UnreadOption {
            program: program.to_owned(),
            option: option.to_owned(),
        },
    }));
}

/// The index of a shell's script: the first operand after its options when they include
/// `-c` (which may be bundled, as in `-ec` or `-lc`). `Err`: an option sublaunch cannot read.
fn shell_script(argv: &[String], at: usize) -> Result<Option<usize>, String> {
    let mut saw_c = false;
    let mut i = at + 1;
    while let Some(arg) = argv.get(i) {
        match arg.as_str() {
            "--" | "-" => return Ok(saw_c.then_some(i + 1).filter(|&s| s < argv.len())),
            "--rcfile" | "--init-file" | "--emulate" => i += 2,
            // bash and dash refuse a long option they do not know; zsh's are on/off names.
            long if long.starts_with("--") => i += 1,
            flags if flags.len() > 1 && (flags.starts_with('-') || flags.starts_with('+')) => {
                saw_c |= flags.contains('c');
                // `-o NAME` and bash's `-O NAME` take the next element, also bundled
                // (`-eo pipefail`).
                i += 1 + flags.matches(['o', 'O']).count();
            }
            _ => return Ok(saw_c.then_some(i)),
        }
    }
    Ok(None)
}

/// A program that runs the command after its options and operands (`nice -n 5 CMD`).
struct Wrapper {
    names: &'static [&'static str],
    /// Short options without an argument.
    flags: &'static str,
    /// Short options with an argument (attached, or the next element).
    with_argument: &'static str,
    long_flags: &'static [&'static str],
    long_with_argument: &'static [&'static str],
    /// Options after which the program runs no command (`ionice -p PID`, `command -v`).
    no_command: &'static str,
    long_no_command: &'static [&'static str],
    /// Operands before the command (`timeout DURATION CMD`).
    operands: usize,
    /// The operand is a number (`chrt PRIORITY CMD`); anything else is not read.
    numeric_operand: bool,
    /// `NAME=VALUE` operands come before the command (`env`).
    assignments: bool,
    /// `-N` is an option (`nice -10 CMD`).
    numeric_option: bool,
}

const NO_WRAPPER: Wrapper = Wrapper {
    names: &[],
    flags: "",
    with_argument: "",
    long_flags: &[],
    long_with_argument: &[],
    no_command: "",
    long_no_command: &[],
    operands: 0,
    numeric_operand: false,
    assignments: false,
    numeric_option: false,
};

/// The wrappers sublaunch reads, with their options as coreutils and util-linux define them.
const WRAPPERS: [Wrapper; 12] = [
    Wrapper {
        names: &["env"],
        flags: "i0v",
        with_argument: "uC",
        long_flags: &[
            "ignore-environment",
            "null",
            "debug",
            "default-signal",
            "ignore-signal",
            "block-signal",
        ],
        long_with_argument: &["unset", "chdir"],
        long_no_command: &["list-signal-handling"],
        assignments: true,
        ..NO_WRAPPER
    },
    Wrapper {
        names: &["nice"],
        with_argument: "n",
        long_with_argument: &["adjustment"],
        numeric_option: true,
        ..NO_WRAPPER
    },
    Wrapper {
        names: &["timeout"],
        flags: "fpv",
        with_argument: "ks",
        long_flags: &["foreground", "preserve-status", "verbose"],
        long_with_argument: &["kill-after", "signal"],
        operands: 1,
        ..NO_WRAPPER
    },
    Wrapper {
        names: &["nohup"],
        ..NO_WRAPPER
    },
    Wrapper {
        names: &["stdbuf"],
        with_argument: "ioe",
        long_with_argument: &["input", "output", "error"],
        ..NO_WRAPPER
    },
    Wrapper {
        names: &["ionice"],
        flags: "t",
        with_argument: "cn",
        long_flags: &["ignore"],
        long_with_argument: &["class", "classdata"],
        no_command: "pPu",
        long_no_command: &["pid", "pgid", "uid"],
        ..NO_WRAPPER
    },
    Wrapper {
        names: &["setsid"],
        flags: "cfw",
        long_flags: &["ctty", "fork", "wait"],
        ..NO_WRAPPER
    },
    Wrapper {
        names: &["chrt"],
        flags: "abdefiorRv",
        with_argument: "TPD",
        long_flags: &[
            "all-tasks",
            "batch",
            "deadline",
            "fifo",
            "idle",
            "other",
            "rr",
            "reset-on-fork",
            "verbose",
        ],
        long_with_argument: &["sched-runtime", "sched-period", "sched-deadline"],
        no_command: "mp",
        long_no_command: &["max", "pid"],
        operands: 1,
        numeric_operand: true,
        ..NO_WRAPPER
    },
    Wrapper {
        names: &["taskset"],
        flags: "ac",
        long_flags: &["all-tasks", "cpu-list"],
        no_command: "p",
        long_no_command: &["pid"],
        operands: 1,
        ..NO_WRAPPER
    },
    Wrapper {
        names: &["time"],
        flags: "apqv",
        with_argument: "fo",
        long_flags: &["append", "portability", "quiet", "verbose"],
        long_with_argument: &["format", "output"],
        no_command: "V",
        ..NO_WRAPPER
    },
    Wrapper {
        names: &["command"],
        flags: "p",
        no_command: "vV",
        ..NO_WRAPPER
    },
    Wrapper {
        names: &["exec"],
        flags: "cl",
        with_argument: "a",
        ..NO_WRAPPER
    },
];

impl Wrapper {
    /// Where the command it runs starts (`None`: it runs none); `Err`: an option sublaunch
    /// cannot read.
    fn command_at(&self, argv: &[String], at: usize) -> Result<Option<usize>, String> {
        let mut i = at + 1;
        while let Some(arg) = argv.get(i) {
            if arg == "--" {
                i += 1;
                break;
            }
            if arg == "-" && self.assignments {
                // `env -`: `env -i`.
                i += 1;
                continue;
            }
            if let Some(long) = arg.strip_prefix("--") {
                let (name, value) = match long.split_once('=') {
                    Some((name, _)) => (name, true),
                    None => (long, false),
                };
                if matches!(name, "help" | "version") || self.long_no_command.contains(&name) {
                    return Ok(None);
                }
                if self.long_flags.contains(&name) {
                    i += 1;
                } else if self.long_with_argument.contains(&name) {
                    i += if value { 1 } else { 2 };
                } else {
                    // Unknown, or an abbreviation getopt would accept.
                    return Err(arg.clone());
                }
                continue;
            }
            if arg.len() < 2 || !arg.starts_with('-') {
                break;
            }
            if self.numeric_option
                && arg[1..]
                    .trim_start_matches(['-', '+'])
                    .bytes()
                    .all(|b| b.is_ascii_digit())
            {
                i += 1;
                continue;
            }
            let mut step = 1;
            for (k, option) in arg.char_indices().skip(1) {
                if self.no_command.contains(option) {
                    return Ok(None);
                }
                if self.with_argument.contains(option) {
                    if k + option.len_utf8() == arg.len() {
                        step = 2;
                    }
                    break;
                }
                if !self.flags.contains(option) {
                    return Err(format!("-{option}"));
                }
            }
            i += step;
        }
        for _ in 0..self.operands {
            match argv.get(i) {
                None => return Ok(None),
                Some(operand) if self.numeric_operand && !operand.bytes().all(|b| b.is_ascii_digit()) => {
                    return Err(operand.clone());
                }
                Some(_) => i += 1,
            }
        }
        if self.assignments {
            while argv.get(i).is_some_and(|a| a.contains('=')) {
                i += 1;
            }
        }
        Ok((i < argv.len()).then_some(i))
    }
}

/// How a program that runs code from its arguments takes it.
#[derive(Clone, Copy)]
enum Interpreter {
    /// Code follows these short options (bundled too: `perl -lne CODE`, `-eCODE`) and long
    /// ones (`--eval CODE`, `--eval=CODE`), anywhere in the arguments.
    Options {
        short: &'static str,
        long: &'static [&'static str],
        /// The program hands the code to a shell (`su -c`), rather than running it itself.
        command_line: bool,
    },
    /// Every argument is part of a command line for a shell (`watch CMD`).
    AllArguments,
    /// `ssh [options] DESTINATION COMMAND…`.
    Ssh,
    /// Python: `-c CODE` ends the options, as does the script.
    Python,
    /// awk: the first operand is the program, unless `-f` or `-e` gives it.
    Awk,
    /// sed: `-e SCRIPT`, else the first operand is the script.
    Sed,
}

/// The interpreter named `name`, if it is one.
fn interpreter(name: &str) -> Option<Interpreter> {
    let options = |short, long| {
        Some(Interpreter::Options {
            short,
            long,
            command_line: false,
        })
    };
    let family = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    match family {
        "python" | "pypy" => Some(Interpreter::Python),
        "node" | "nodejs" | "bun" => options("ep", &["--eval", "--print"]),
        "perl" => options("eE", &[]),
        "ruby" | "lua" | "luajit" | "Rscript" | "R" | "osascript" | "racket" | "groovy" | "scala" | "elixir"
        | "clojure" => options("e", &["--eval"]),
        "php" => options("rBRE", &[]),
        "julia" => options("eE", &["--eval", "--print"]),
        "fish" => options("cC", &["--command", "--init-command"]),
        "csh" | "tcsh" | "rc" | "es" | "nu" | "elvish" | "xonsh" | "expect" | "guile" => {
            options("c", &["--commands", "--command"])
        }
        "pwsh" | "powershell" => options(
            "",
            &["-c", "-command", "-commandwithargs", "-cwa", "-encodedcommand", "-ec"],
        ),
        "sbcl" | "ecl" | "clisp" => options("", &["--eval", "-x"]),
        "awk" | "gawk" | "mawk" | "nawk" | "original-awk" => Some(Interpreter::Awk),
        "sed" | "gsed" => Some(Interpreter::Sed),
        "su" | "runuser" | "flock" | "script" => Some(Interpreter::Options {
            short: "c",
            long: &["--command", "--session-command"],
            command_line: true,
        }),
        "watch" | "parallel" => Some(Interpreter::AllArguments),
        "ssh" => Some(Interpreter::Ssh),
        _ => None,
    }
}

impl Interpreter {
    /// Marks the code arguments of the interpreter `name` at `at`.
    fn read(self, argv: &[String], at: usize, name: &str, reading: &mut Reading) {
        let (indices, command_line) = match self {
            Self::Options {
                short,
                long,
                command_line,
            } => (code_arguments(argv, at + 1, short, long), command_line),
            Self::AllArguments => ((at + 1..argv.len()).collect(), true),
            Self::Ssh => match ssh_destination(argv, at) {
                Ok(destination) => (destination.map_or(Vec::new(), |d| (d + 1..argv.len()).collect()), true),
                Err(option) => return unread_after(argv, at, name, &option, reading),
            },
            Self::Python => match python_code(argv, at) {
                Ok(index) => (index.into_iter().collect(), false),
                // An option sublaunch does not know: a `-c` anywhere may be Python's.
                Err(from) => (code_arguments(argv, from, "c", &[]), false),
            },
            Self::Awk => (awk_code(argv, at), false),
            Self::Sed => (sed_code(argv, at), false),
        };
        reading.code.extend(
            indices
                .into_iter()
                .filter(|&index| index < argv.len())
                .map(|index| CodeArgument {
                    index,
                    why: if command_line {
                        CodeWhy::CommandLine(name.to_owned())
                    } else {
                        CodeWhy::Interpreter(name.to_owned())
                    },
                }),
        );
    }
}

/// The elements from `from` on that follow a code option: `-X CODE` or `-XCODE` for a letter
/// of `short` (also at the end of a bundle, `-lne CODE`), `--long CODE`, `--long=CODE`.
fn code_arguments(argv: &[String], from: usize, short: &str, long: &[&str]) -> Vec<usize> {
    let mut code = Vec::new();
    let mut i = from;
    while let Some(arg) = argv.get(i) {
        let lower = arg.to_ascii_lowercase();
        if long.contains(&lower.as_str()) {
            code.push(i + 1);
            i += 2;
            continue;
        }
        if long
            .iter()
            .any(|l| lower.starts_with(&format!("{l}=")) || lower.starts_with(&format!("{l}:")))
        {
            code.push(i);
            i += 1;
            continue;
        }
        if arg.len() > 1
            && arg.starts_with('-')
            && !arg.starts_with("--")
            && let Some(k) = arg[1..].find(|c| short.contains(c)).map(|k| k + 1)
        {
            let last = k + 1 == arg.len();
            code.push(if last { i + 1 } else { i });
            i += if last { 2 } else { 1 };
            continue;
        }
        i += 1;
    }
    code
}

/// The index of Python's `-c` code, if any; `Err(i)`: an option at `i` sublaunch does not know.
fn python_code(argv: &[String], at: usize) -> Result<Option<usize>, usize> {
    let mut i = at + 1;
    while let Some(arg) = argv.get(i) {
        if arg == "-" || !arg.starts_with('-') {
            return Ok(None);
        }
        if arg == "--" {
            return Ok(None);
        }
        if let Some(long) = arg.strip_prefix("--") {
            match long.split_once('=').map_or(long, |(name, _)| name) {
                "help" | "version" | "help-env" | "help-xoptions" | "help-all" => i += 1,
                "check-hash-based-pycs" => i += if long.contains('=') { 1 } else { 2 },
                _ => return Err(i),
            }
            continue;
        }
        let mut step = 1;
        for (k, option) in arg.char_indices().skip(1) {
            let last = k + 1 == arg.len();
            match option {
                'c' => return Ok(Some(if last { i + 1 } else { i })),
                'm' => return Ok(None),
                'W' | 'X' | 'Q' => {
                    step = if last { 2 } else { 1 };
                    break;
                }
                'b' | 'B' | 'd' | 'E' | 'h' | 'i' | 'I' | 'O' | 'P' | 'q' | 's' | 'S' | 'u' | 'v' | 'V' | 'x' | '?'
                | 'R' | 't' | 'U' | '3' => {}
                _ => return Err(i),
            }
        }
        i += step;
    }
    Ok(None)
}

/// The indices of awk's program text: `-e`/`--source` arguments, else the first operand
/// (unless `-f` names a program file).
fn awk_code(argv: &[String], at: usize) -> Vec<usize> {
    let mut code = Vec::new();
    let mut program_given = false;
    let mut i = at + 1;
    while let Some(arg) = argv.get(i) {
        if arg == "--" {
            i += 1;
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = long.split_once('=').map_or((long, false), |(name, _)| (name, true));
            let next = if value { i } else { i + 1 };
            match name {
                "source" => {
                    code.push(next);
                    program_given = true;
                }
                "file" | "exec" => program_given = true,
                "field-separator" | "assign" | "include" | "load" => {}
                _ => {
                    i += 1;
                    continue;
                }
            }
            i = next + 1;
            continue;
        }
        if arg.len() < 2 || !arg.starts_with('-') {
            break;
        }
        let mut step = 1;
        for (k, option) in arg.char_indices().skip(1) {
            let last = k + 1 == arg.len();
            let argument = if last { i + 1 } else { i };
            match option {
                'e' => {
                    code.push(argument);
                    program_given = true;
                }
                'f' | 'E' => program_given = true,
                'F' | 'v' | 'i' | 'l' | 'W' => {}
                _ => continue,
            }
            step = if last { 2 } else { 1 };
            break;
        }
        i += step;
    }
    if !program_given {
        code.push(i);
    }
    code
}

/// The indices of sed's script: `-e`/`--expression` arguments, else the first operand
/// (unless `-f` names a script file). GNU sed reads options after operands too.
fn sed_code(argv: &[String], at: usize) -> Vec<usize> {
    let mut code = Vec::new();
    let mut operands = Vec::new();
    let mut program_given = false;
    let mut i = at + 1;
    while let Some(arg) = argv.get(i) {
        if arg == "--" {
            operands.extend(i + 1..argv.len());
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = long.split_once('=').map_or((long, false), |(name, _)| (name, true));
            let next = if value { i } else { i + 1 };
            match name {
                "expression" => {
                    code.push(next);
                    program_given = true;
                    i = next + 1;
                }
                "file" => {
                    program_given = true;
                    i = next + 1;
                }
                "line-length" => i = next + 1,
                _ => i += 1,
            }
            continue;
        }
        if arg.len() < 2 || !arg.starts_with('-') {
            operands.push(i);
            i += 1;
            continue;
        }
        let mut step = 1;
        for (k, option) in arg.char_indices().skip(1) {
            let last = k + 1 == arg.len();
            match option {
                'e' => {
                    code.push(if last { i + 1 } else { i });
                    program_given = true;
                }
                'f' => program_given = true,
                'l' => {}
                // `-i[SUFFIX]`: the rest of the element is the suffix.
                'i' => break,
                _ => continue,
            }
            step = if last { 2 } else { 1 };
            break;
        }
        i += step;
    }
    if !program_given {
        code.extend(operands.first());
    }
    code
}

/// The index of ssh's destination (`None`: there is none); `Err`: an option sublaunch
/// cannot read.
fn ssh_destination(argv: &[String], at: usize) -> Result<Option<usize>, String> {
    const FLAGS: &str = "46AaCfGgKkMNnqsTtVvXxYy";
    const WITH_ARGUMENT: &str = "BbcDEeFIiJLlmOoPpQRSWw";
    let mut i = at + 1;
    while let Some(arg) = argv.get(i) {
        if arg == "--" {
            return Ok((i + 1 < argv.len()).then_some(i + 1));
        }
        if arg.len() < 2 || !arg.starts_with('-') {
            return Ok(Some(i));
        }
        let mut step = 1;
        for (k, option) in arg.char_indices().skip(1) {
            if WITH_ARGUMENT.contains(option) {
                step = if k + 1 == arg.len() { 2 } else { 1 };
                break;
            }
            if !FLAGS.contains(option) {
                return Err(arg.clone());
            }
        }
        i += step;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_argv(argv: &[&str]) -> Reading {
        read(&argv.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>())
    }

    fn script(argv: &[&str]) -> Option<usize> {
        let reading = read_argv(argv);
        assert!(reading.code.is_empty(), "{argv:?}: {:?}", reading.code);
        reading.script
    }

    fn code(argv: &[&str]) -> Vec<usize> {
        let reading = read_argv(argv);
        assert_eq!(reading.script, None, "{argv:?}");
        reading.code.iter().map(|c| c.index).collect()
    }

    #[test]
    fn a_bare_shell_script_is_found() {
        assert_eq!(script(&["sh", "-c", "x {task}"]), Some(2));
        assert_eq!(script(&["/bin/bash", "-e", "-o", "pipefail", "-c", "x"]), Some(5));
        assert_eq!(script(&["bash", "--norc", "-eo", "pipefail", "-c", "x"]), Some(5));
        assert_eq!(script(&["bash", "-O", "extglob", "-c", "x"]), Some(4));
        assert_eq!(script(&["bash", "-ec", "x"]), Some(2));
        assert_eq!(script(&["bash", "-lc", "x"]), Some(2));
        assert_eq!(script(&["sh", "-ec", "x", "sh", "{task}"]), Some(2));
        assert_eq!(script(&["sh", "-c", "--", "x"]), Some(3));
        assert_eq!(script(&["zsh", "--emulate", "sh", "-c", "x"]), Some(4));
        assert_eq!(script(&["sh", "script.sh", "{task}"]), None);
        assert_eq!(script(&["agent", "-c", "{task}"]), None);
    }

    #[test]
    fn the_shell_behind_a_wrapper_is_found() {
        let cases: [(&[&str], usize); 20] = [
            (&["env", "sh", "-c", "x"], 3),
            (&["/usr/bin/env", "-i", "A=1", "B=2", "bash", "-lc", "x"], 6),
            (
                &["env", "-u", "HOME", "-C", "/tmp", "--unset=X", "--", "sh", "-c", "x"],
                9,
            ),
            (&["env", "-iuHOME", "-", "X=1", "sh", "-c", "x"], 6),
            (&["nice", "sh", "-c", "x"], 3),
            (&["nice", "-n", "5", "sh", "-c", "x"], 5),
            (&["nice", "-10", "--adjustment=3", "sh", "-c", "x"], 5),
            (&["timeout", "60", "sh", "-c", "x"], 4),
            (
                &[
                    "timeout",
                    "-k",
                    "5",
                    "-s",
                    "KILL",
                    "--foreground",
                    "1m",
                    "sh",
                    "-ec",
                    "x",
                ],
                9,
            ),
            (&["nohup", "sh", "-c", "x"], 3),
            (&["stdbuf", "-oL", "-e", "0", "sh", "-c", "x"], 6),
            (&["busybox", "sh", "-c", "x"], 3),
            (&["ionice", "-c", "3", "sh", "-c", "x"], 5),
            (&["setsid", "-w", "sh", "-c", "x"], 4),
            (&["chrt", "-o", "0", "sh", "-c", "x"], 5),
            (&["taskset", "-c", "0-3", "sh", "-c", "x"], 5),
            (&["time", "-p", "sh", "-c", "x"], 4),
            (&["command", "-p", "sh", "-c", "x"], 4),
            (&["exec", "-a", "name", "sh", "-c", "x"], 5),
            (
                &["env", "nice", "-n", "1", "timeout", "5", "nohup", "/bin/sh", "-c", "x"],
                9,
            ),
        ];
        for (argv, at) in cases {
            assert_eq!(script(argv), Some(at), "{argv:?}");
        }
        // Wrappers that run nothing, or run a program that is not a shell.
        assert_eq!(script(&["env"]), None);
        assert_eq!(script(&["ionice", "-p", "1", "sh", "-c", "x"]), None);
        assert_eq!(script(&["env", "agent", "-c", "{task}"]), None);
    }

    #[test]
    fn code_arguments_of_interpreters_are_found() {
        assert_eq!(code(&["python3", "-c", "print(1)", "{task}"]), [2]);
        assert_eq!(code(&["python3", "-u", "-cprint(1)"]), [2]);
        assert_eq!(code(&["python3.12", "-W", "ignore", "-c", "x"]), [4]);
        assert_eq!(code(&["python3", "tool.py", "-c", "{task}"]), Vec::<usize>::new());
        assert_eq!(code(&["python3", "-m", "tool", "-c", "{task}"]), Vec::<usize>::new());
        assert_eq!(code(&["python3", "--weird", "tool.py", "-c", "{task}"]), [4]);
        assert_eq!(code(&["env", "python3", "-c", "x"]), [3]);
        assert_eq!(code(&["node", "-e", "x", "{task}"]), [2]);
        assert_eq!(code(&["node", "--eval=x"]), [1]);
        assert_eq!(code(&["node", "-r", "mod", "--print", "x"]), [4]);
        assert_eq!(code(&["perl", "-lne", "x", "file"]), [2]);
        assert_eq!(code(&["perl", "-Mstrict", "-e", "x", "-e", "y"]), [3, 5]);
        assert_eq!(code(&["ruby", "-e", "x"]), [2]);
        assert_eq!(code(&["awk", "-F:", "-v", "x=1", "{print}", "file"]), [4]);
        assert_eq!(code(&["awk", "-f", "prog.awk", "{task}"]), Vec::<usize>::new());
        assert_eq!(code(&["sed", "-n", "s/a/b/p", "file"]), [2]);
        assert_eq!(code(&["sed", "-i.bak", "-e", "s/a/b/", "file"]), [3]);
        assert_eq!(code(&["ssh", "-p", "22", "host", "echo", "x"]), [4, 5]);
        assert_eq!(code(&["su", "-", "bob", "-c", "x"]), [4]);
        assert_eq!(code(&["watch", "-n", "1", "x"]), [1, 2, 3]);
        let reading = read_argv(&["fish", "-c", "x"]);
        assert_eq!(reading.code[0].why, CodeWhy::Interpreter("fish".into()));
    }

    #[test]
    fn a_shell_behind_an_unknown_program_or_option_is_code() {
        let reading = read_argv(&["sudo", "-u", "bob", "sh", "-c", "x {task}", "sh", "{task}"]);
        assert_eq!(reading.script, None);
        assert_eq!(
            reading.code,
            [CodeArgument {
                index: 5,
                why: CodeWhy::ShellBehind {
                    shell: "sh".into(),
                    program: "sudo".into()
                }
            }]
        );
        assert_eq!(code(&["xargs", "-0", "python3", "-c", "x"]), [4]);
        for (argv, option) in [
            (&["env", "-S", "sh -c 'x'"][..], "-S"),
            (&["env", "--split-string=sh -c x"][..], "--split-string=sh -c x"),
            (&["nice", "--adj=3", "sh", "-c", "x"][..], "--adj=3"),
            (&["timeout", "-z", "5", "sh", "-c", "x"][..], "-z"),
            (&["chrt", "--other", "sh", "-c", "x"][..], "sh"),
        ] {
            let reading = read_argv(argv);
            assert_eq!(reading.script, None, "{argv:?}");
            assert_eq!(reading.code.len(), argv.len() - 1, "{argv:?}");
            assert_eq!(
                reading.code[0].why,
                CodeWhy::UnreadOption {
                    program: program_name(argv[0]).into(),
                    option: option.into()
                },
                "{argv:?}"
            );
        }
    }
}
