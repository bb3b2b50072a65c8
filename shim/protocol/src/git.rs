//! The git commands sublaunch runs, built in one place for the host and the shim.
//!
//! A managed worktree is a directory an agent could write, and git reads programs to run from
//! what it finds there: the `.git` file names the repository whose configuration applies
//! (`core.fsmonitor`, hooks, diff drivers and filters all run programs), and `.gitattributes`
//! picks the filters and diff drivers. So a command that looks at an agent's worktree:
//! - names the repository itself ([`LinkedWorktree`]: git's own record of the worktree in the
//!   repository the user launched from, `<common dir>/worktrees/<name>`, passed as `--git-dir`
//!   and `GIT_COMMON_DIR`, with `--work-tree`) and never reads the worktree's `.git` file;
//! - turns off every program configuration could start in the commands sublaunch runs
//!   (status, diff, log, rev-parse, rev-list, symbolic-ref, branch -D, worktree remove/prune):
//!   `core.fsmonitor`, hooks (`branch -D` runs the reference-transaction hook), signature
//!   checks in `log` (`gpg.program`), and every transport (a partial clone fetches missing
//!   objects on demand, through ssh or a remote helper). The pager is off (`--no-pager`);
//!   callers add `--no-ext-diff --no-textconv` to diff and log;
//! - runs no filter an agent's `.gitattributes` names (status and diff pass files through
//!   their `clean` filter; so does the `git status` that `worktree remove` starts): every
//!   filter driver the repository's configuration defines is emptied (`-c
//!   filter.<name>.clean=` …, read with `git config --list` first), and attributes are read
//!   from the empty tree (`GIT_ATTR_SOURCE`, git 2.40 or later; older git ignores it), with no
//!   system or global attributes file;
//! - drops the environment variables that would send git to another repository, index,
//!   object store or configuration, or name programs (an agent's `GIT_DIR` inherited through
//!   a launch from inside a hook, say).
//!
//! The user's own configuration files still apply otherwise (identity, aliases are unused):
//! they are not the agent's to write. Making a worktree ([`At::UserCheckout`]) keeps the
//! user's hooks, filters and fsmonitor, so that a checkout made for an agent looks like one
//! the user would make (LFS smudging, line endings); no agent has run in it yet.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The empty tree of a SHA-1 repository (attributes read from it: none).
const EMPTY_TREE_SHA1: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
/// The empty tree of a SHA-256 repository.
const EMPTY_TREE_SHA256: &str = "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321";

/// Configuration given on every command that may look into an agent's worktree: each would
/// otherwise start a program (see the module documentation). Command-line `-c` wins over
/// every configuration file, and git hands it on to the git processes it starts itself.
const NO_PROGRAMS: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.attributesFile=/dev/null",
    "log.showSignature=false",
    "protocol.allow=never",
];

/// The git routing variables a runner never inherits (H10): they would point git at another
/// repository, work tree, index, object store or configuration. The host strips them from
/// the shim's environment; the git commands sublaunch runs drop more.
pub const ROUTING: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
    "GIT_GRAFT_FILE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_NAMESPACE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_PREFIX",
    "GIT_REPLACE_REF_BASE",
    "GIT_SHALLOW_FILE",
];

/// Dropped from the git commands sublaunch runs over agents' worktrees besides [`ROUTING`]:
/// they would change where git looks for a repository, quarantine objects or reads
/// attributes, or name programs for it to run.
const ROUTING_ENV: &[&str] = &[
    "GIT_QUARANTINE_PATH",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_ATTR_SOURCE",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIFF_OPTS",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PROXY_COMMAND",
];

/// The keys of a filter driver that name a program, and `required` (a required filter that
/// does not run fails the command).
const FILTER_KEYS: &[&str] = &["clean=", "smudge=", "process=", "required=false"];

/// The most of a worktree's `gitdir` record read (a path and a newline).
const RECORD_LIMIT: u64 = 64 * 1024;

/// Why a worktree's repository could not be located.
#[derive(Debug, thiserror::Error)]
pub enum LocateError {
    /// `git rev-parse` named no repository for the checkout.
    #[error("git names no repository for {checkout}")]
    NoRepository {
        /// The user's checkout.
        checkout: PathBuf,
    },
    /// A file or directory of the repository could not be read.
    #[error("cannot read {path}: {error}")]
    Unreadable {
        /// What could not be read.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The repository has no record of the worktree (`git worktree list` does not show it).
    #[error(
        "the repository {common_dir} has no record of the worktree {work_tree} ('git worktree list' does not show it)"
    )]
    NotRegistered {
        /// The worktree.
        work_tree: PathBuf,
        /// Where the repository keeps its worktrees' records.
        common_dir: PathBuf,
    },
}

/// A repository as git names it from the user's checkout: where it keeps its objects, refs and
/// worktree records (the common directory), and which hash it uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repository {
    /// The user's checkout (its main working tree, or whichever checkout a launch started in).
    pub checkout: PathBuf,
    /// The common git directory.
    pub common_dir: PathBuf,
    empty_tree: &'static str,
    /// The filter drivers its configuration defines ([`Repository::set_filters`]).
    filters: Vec<String>,
}

/// A linked worktree, as the repository records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkedWorktree {
    /// The repository it belongs to.
    pub repository: Repository,
    /// Its administrative directory, `<common dir>/worktrees/<name>`.
    pub git_dir: PathBuf,
    /// Its working tree.
    pub work_tree: PathBuf,
}

/// Where a git command runs, and with how much of the repository's configuration.
#[derive(Clone, Copy, Debug)]
pub enum At<'a> {
    /// The user's checkout with everything the user configured (hooks, filters, fsmonitor):
    /// only before any agent ran in the worktrees involved (planning and making them).
    UserCheckout(&'a Path),
    /// The user's checkout of a located repository, running no configured program (from
    /// there `worktree remove` looks into an agent's worktree).
    Repository(&'a Repository),
    /// An agent's worktree, through the repository's record of it, running no configured
    /// program.
    Worktree(&'a LinkedWorktree),
}

impl At<'_> {
    /// The directory the command runs in (for messages).
    pub fn dir(&self) -> &Path {
        match self {
            Self::UserCheckout(dir) => dir,
            Self::Repository(repository) => &repository.checkout,
            Self::Worktree(worktree) => &worktree.work_tree,
        }
    }
}

/// `program` (git) set up to run at `at`; the caller adds the subcommand and its arguments.
/// Standard input, output and error are left to the caller.
pub fn command(program: impl AsRef<OsStr>, at: At<'_>) -> Command {
    let mut command = base(program);
    match at {
        At::UserCheckout(dir) => {
            command.arg("-C").arg(dir);
        }
        At::Repository(repository) => {
            no_programs(&mut command, Some(repository));
            command.arg("-C").arg(&repository.checkout);
        }
        At::Worktree(worktree) => {
            no_programs(&mut command, Some(&worktree.repository));
            command
                .env("GIT_COMMON_DIR", &worktree.repository.common_dir)
                .arg("-C")
                .arg(&worktree.work_tree)
                .arg(flag("--git-dir=", &worktree.git_dir))
                .arg(flag("--work-tree=", &worktree.work_tree));
        }
    }
    command
}

/// git without the routing environment, prompts, optional locks or a pager.
fn base(program: impl AsRef<OsStr>) -> Command {
    let mut command = Command::new(program);
    for name in ROUTING.iter().chain(ROUTING_ENV) {
        command.env_remove(name);
    }
    // Reading commands never take the index lock an agent's own git may hold, and nothing
    // waits for a password prompt no one sees.
    command
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .arg("--no-pager");
    command
}

/// Turns off what would start a program; `repository` (once located) adds its filters and
/// its empty tree.
fn no_programs(command: &mut Command, repository: Option<&Repository>) {
    for setting in NO_PROGRAMS {
        command.arg("-c").arg(setting);
    }
    command.env("GIT_ATTR_NOSYSTEM", "1");
    let Some(repository) = repository else { return };
    for name in &repository.filters {
        for key in FILTER_KEYS {
            command.arg("-c").arg(format!("filter.{name}.{key}"));
        }
    }
    command.env("GIT_ATTR_SOURCE", repository.empty_tree);
}

fn flag(name: &str, path: &Path) -> OsString {
    let mut flag = OsString::from(name);
    flag.push(path);
    flag
}

impl Repository {
    /// The arguments of [`Repository::query`] after its options (for messages).
    pub const QUERY: &[&str] = &["rev-parse", "--git-common-dir", "--show-object-format"];

    /// The command, at [`At::Repository`], whose output [`Repository::set_filters`] reads:
    /// the names of every configuration key (NUL-terminated).
    pub const FILTERS_QUERY: &[&str] = &["config", "--list", "--name-only", "-z"];

    /// The command whose output [`Repository::parse`] reads: the common directory and the
    /// hash of the repository of `checkout` (no attributes are read, so none are needed).
    pub fn query(program: impl AsRef<OsStr>, checkout: &Path) -> Command {
        // As At::Repository, before the hash (so the empty tree) is known.
        let mut command = base(program);
        no_programs(&mut command, None);
        command.arg("-C").arg(checkout).args(Self::QUERY);
        command
    }

    /// The repository of `checkout` from the output of [`Repository::query`].
    pub fn parse(checkout: &Path, output: &str) -> Result<Self, LocateError> {
        let mut lines = output.lines();
        let common = lines
            .next()
            .filter(|l| !l.is_empty())
            .ok_or_else(|| LocateError::NoRepository {
                checkout: checkout.to_owned(),
            })?;
        // Relative to the checkout (`.git`) unless git printed it absolute; a git too old to
        // know `--show-object-format` echoes it, and knows SHA-1 only.
        let common_dir = checkout.join(common);
        let common_dir = std::fs::canonicalize(&common_dir).map_err(|error| LocateError::Unreadable {
            path: common_dir,
            error,
        })?;
        let empty_tree = if lines.next() == Some("sha256") {
            EMPTY_TREE_SHA256
        } else {
            EMPTY_TREE_SHA1
        };
        Ok(Self {
            checkout: checkout.to_owned(),
            common_dir,
            empty_tree,
            filters: Vec::new(),
        })
    }

    /// Takes the filter drivers from the output of [`Repository::FILTERS_QUERY`]: each
    /// `filter.<name>.<key>`. A name with `=` (or a line break) cannot be given with `-c` (git 2.40 or later
    /// still reads no attribute that could name it).
    pub fn set_filters(&mut self, listing: &str) {
        let mut filters: Vec<String> = listing
            .split('\0')
            .filter_map(|key| key.strip_prefix("filter.")?.rsplit_once('.'))
            .map(|(name, _)| name)
            .filter(|name| !name.is_empty() && !name.contains(['=', '\n']))
            .map(str::to_owned)
            .collect();
        filters.sort();
        filters.dedup();
        self.filters = filters;
    }

    /// The worktree at `work_tree`, found among the repository's records of its worktrees
    /// (each `worktrees/<name>/gitdir` names the `.git` file of one).
    pub fn worktree(&self, work_tree: &Path) -> Result<LinkedWorktree, LocateError> {
        let unreadable = |path: &Path| {
            let path = path.to_owned();
            move |error| LocateError::Unreadable { path, error }
        };
        let wanted = std::fs::canonicalize(work_tree).map_err(unreadable(work_tree))?;
        let records = self.common_dir.join("worktrees");
        let entries = match std::fs::read_dir(&records) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(self.not_registered(work_tree));
            }
            Err(e) => return Err(unreadable(&records)(e)),
        };
        for entry in entries {
            let git_dir = entry.map_err(unreadable(&records))?.path();
            let Some(dot_git) = read_record(&git_dir.join("gitdir")) else {
                continue;
            };
            // Absolute, or (worktree.useRelativePaths) relative to the record's directory.
            let named = git_dir.join(dot_git);
            let Some(top) = named.parent() else { continue };
            if std::fs::canonicalize(top).is_ok_and(|top| top == wanted) {
                return Ok(LinkedWorktree {
                    repository: self.clone(),
                    git_dir,
                    work_tree: work_tree.to_owned(),
                });
            }
        }
        Err(self.not_registered(work_tree))
    }

    fn not_registered(&self, work_tree: &Path) -> LocateError {
        LocateError::NotRegistered {
            work_tree: work_tree.to_owned(),
            common_dir: self.common_dir.clone(),
        }
    }
}

/// The path a `gitdir` record holds; `None` for a record that is missing, too long, not
/// UTF-8 or empty (git's own `worktree prune` deals with those).
fn read_record(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    file.take(RECORD_LIMIT).read_to_string(&mut text).ok()?;
    let text = text.trim_end_matches(['\n', '\r']);
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests;
