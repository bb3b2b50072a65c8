//! What git says a step changed: the structural evidence the runner holds an agent's claims
//! against (G77). Before the agent starts, [`start_point`] notes the commit checked out; after it
//! ends, [`facts`] lists the files changed since (committed, left uncommitted, untracked),
//! those left staged and those that look like tests, counts the lines, and gives a key of the
//! working tree's exact content, so that a verification command is not run twice on a tree
//! that did not change.
//!
//! An agent has written the directory, so every git command goes through
//! [`sublaunch_protocol::git::command`] (no hooks, fsmonitor, filters, external diff or
//! textconv, transports or routing environment), reaches a managed worktree through the
//! repository's record of it (never its `.git` file, as [`crate::step::worktree`] does), and
//! is bounded in time. Paths are read NUL-separated (`-z`): spaces, line breaks and bytes
//! that are not UTF-8 are kept.

use crate::process::bounded::{self, Finished};
use crate::step::worktree::{self, GIT, GIT_LIMIT};
use std::ffi::OsStr;
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use sublaunch_protocol::files::atomic::sha256_hex;
use sublaunch_protocol::git::{self as git_cmd, At, LinkedWorktree, Repository};
use sublaunch_protocol::records::config::StepWorktree;

/// The exit status git gives when it finds no repository (or refuses the one it found).
const NO_REPOSITORY: i32 = 128;
/// The piece of an untracked file hashed at a time: the key's memory stays bounded.
const CHUNK: u64 = 1024 * 1024;
/// The diff options every diff here takes: no program, no colour, whole-repository paths
/// whatever `diff.relative` says, renames found whatever `diff.renames` says, submodules
/// compared by commit.
const DIFF: &[&str] = &[
    "--no-ext-diff",
    "--find-renames",
    "--no-textconv",
    "--no-color",
    "--no-relative",
    "--ignore-submodules=dirty",
];
/// Directories whose files are tests.
const TEST_DIRS: &[&str] = &["test", "tests", "spec", "__tests__"];

/// Where a step runs.
#[derive(Clone, Copy, Debug)]
pub enum Place<'a> {
    /// A managed worktree the host made for the step (reached through the repository's record
    /// of it).
    Worktree(&'a StepWorktree),
    /// A directory of the user's own checkout (its top or below): the repository is located
    /// from there, and every command runs there with no configured program.
    Checkout(&'a Path),
}

/// What the step started from, taken before its agent starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StartPoint {
    /// The commit checked out (`None`: an unborn branch, no commit yet).
    pub head: Option<String>,
}

/// What git says the step changed, taken after its agent ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeFacts {
    /// Repository-relative paths changed since the start: in commits made since, in tracked
    /// files left uncommitted, and untracked files that are not ignored (a rename gives its
    /// new path). Sorted, each once; bytes that are not UTF-8 read as U+FFFD.
    pub changed_files: Vec<String>,
    /// Paths whose staged content differs from HEAD (and unmerged paths): left in the index.
    pub staged_files: Vec<String>,
    /// The changed files that look like tests ([`looks_like_test`]).
    pub tests_touched: Vec<String>,
    /// Lines added from the start commit to the working tree, in tracked files.
    pub insertions: u64,
    /// Lines removed from the start commit to the working tree, in tracked files.
    pub deletions: u64,
    /// The commit checked out (`None`: still an unborn branch).
    pub head: Option<String>,
    /// A SHA-256 (hex) of the working tree's exact content: HEAD, the tracked files'
    /// difference from it, and the names, kinds and contents of the untracked files that
    /// are not ignored. Equal trees give equal keys; a change of content gives another.
    pub state_key: String,
}

/// Why git could not say what a step changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TreeError {
    /// The directory is not in a git repository (or in one git refuses to read, such as
    /// one owned by another user): there is no git evidence, which is no failure of the
    /// step.
    NotGit {
        /// The directory.
        dir: PathBuf,
    },
    /// A git command failed, took too long, or said something unreadable.
    Git {
        /// What was asked (`git status`, `locating the worktree`…).
        what: String,
        /// Where.
        dir: PathBuf,
        /// Why it failed.
        why: String,
    },
}

impl fmt::Display for TreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotGit { dir } => write!(f, "{} is not in a git repository", dir.display()),
            Self::Git { what, dir, why } => write!(f, "{what} in {} failed: {why}", dir.display()),
        }
    }
}

impl std::error::Error for TreeError {}

/// The commit `place` has checked out, before its agent starts.
pub fn start_point(place: Place<'_>) -> Result<StartPoint, TreeError> {
    let located = Located::find(place)?;
    let verify = ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"];
    let finished = located.ask("git rev-parse HEAD", &verify, None)?;
    // `--verify --quiet` exits 1, silently, when HEAD names no commit yet.
    let head = match finished.status.code() {
        Some(0) => Some(located.oid("git rev-parse HEAD", &finished.stdout)?),
        Some(1) => None,
        _ => return Err(located.failed("git rev-parse HEAD", format!("it ended with {}", finished.status))),
    };
    Ok(StartPoint { head })
}

/// What git says changed at `place` since `start`, after the step's agent ended.
pub fn facts(place: Place<'_>, start: &StartPoint) -> Result<TreeFacts, TreeError> {
    let located = Located::find(place)?;
    // The start point may have been kept anywhere: only a commit id goes on a command line.
    let start_head = match &start.head {
        Some(head) if is_oid(head) => Some(head.as_str()),
        Some(head) => {
            return Err(located.failed("reading the start point", format!("{head:?} is no commit id")));
        }
        None => None,
    };
    let status = Status::read(&located)?;
    let mut empty_tree = None;
    let base = match start_head {
        Some(head) => head.to_owned(),
        None => located.empty_tree(&mut empty_tree)?,
    };

    let mut changed: Vec<Vec<u8>> = status.tracked.clone();
    changed.extend(status.untracked.iter().cloned());
    if let Some(head) = &status.head
        && start_head != Some(head.as_str())
    {
        let mut args = vec!["diff", "--name-only", "-z"];
        args.extend(DIFF);
        args.extend([base.as_str(), head.as_str()]);
        let names = located.git("git diff (commits since the start)", &args)?;
        changed.extend(nul_separated(&names).map(<[u8]>::to_vec));
    }
    let changed_files = sorted_names(changed);
    let tests_touched = changed_files.iter().filter(|p| looks_like_test(p)).cloned().collect();

    let mut args = vec!["diff", "--shortstat"];
    args.extend(DIFF);
    args.push(base.as_str());
    let stat = located.git("git diff --shortstat", &args)?;
    let (insertions, deletions) = shortstat(&String::from_utf8_lossy(&stat));

    let state_key = state_key(&located, &status, &mut empty_tree)?;
    Ok(TreeFacts {
        changed_files,
        staged_files: sorted_names(status.staged),
        tests_touched,
        insertions,
        deletions,
        head: status.head,
        state_key,
    })
}

/// The step's diff for its reviewer (G81), at most `cap` bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diff {
    /// The patch from the start commit to the working tree (commits since, uncommitted
    /// changes), then each untracked file as a new file.
    pub text: String,
    /// The patch was longer than `cap` and was cut there.
    pub cut: bool,
}

/// What changed at `place` since `start` as a patch, cut at `cap` bytes: the commits made
/// since and what is left uncommitted (`git diff <start>`), then the untracked files that are
/// not ignored, each shown whole as a new file.
pub fn diff(place: Place<'_>, start: &StartPoint, cap: usize) -> Result<Diff, TreeError> {
    let located = Located::find(place)?;
    let mut empty_tree = None;
    let base = match &start.head {
        Some(head) if is_oid(head) => head.clone(),
        Some(head) => {
            return Err(located.failed("reading the start point", format!("{head:?} is no commit id")));
        }
        None => located.empty_tree(&mut empty_tree)?,
    };
    let mut args = vec!["diff", "--patch"];
    args.extend(DIFF);
    args.push(base.as_str());
    let mut text = located.git("git diff (the step's work)", &args)?;
    let status = Status::read(&located)?;
    let top = located.top()?;
    for path in &status.untracked {
        if text.len() > cap {
            break;
        }
        let name = String::from_utf8_lossy(path);
        let mut content = Vec::new();
        // Only a regular file is shown (a link's target or a directory is named): the agent
        // may have left anything there.
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(top.join(OsStr::from_bytes(path)));
        let regular = match opened {
            Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => {
                let limit = u64::try_from(cap.saturating_sub(text.len()) + 1).unwrap_or(u64::MAX);
                file.take(limit).read_to_end(&mut content).is_ok()
            }
            _ => false,
        };
        text.extend_from_slice(format!("diff --git a/{name} b/{name}\nnew file (untracked)\n").as_bytes());
        if regular {
            text.extend_from_slice(format!("--- /dev/null\n+++ b/{name}\n").as_bytes());
            for line in String::from_utf8_lossy(&content).lines() {
                text.extend_from_slice(format!("+{line}\n").as_bytes());
            }
        } else {
            text.extend_from_slice(b"(not a regular file; not shown)\n");
        }
    }
    let cut = text.len() > cap;
    let mut text = String::from_utf8_lossy(&text).into_owned();
    if cut {
        let mut end = cap.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    Ok(Diff { text, cut })
}

/// Whether the repository-relative `path` looks like a test: a directory (or the file)
/// named `test`, `tests`, `spec` or `__tests__`, or a file named `test_*`, `*_test.*`,
/// `*.test.*`, `*.spec.*` or `*_spec.*` (names compared as written, case and all).
pub fn looks_like_test(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    path.split('/').any(|part| TEST_DIRS.contains(&part))
        || name.starts_with("test_")
        || ["_test.", ".test.", ".spec.", "_spec."]
            .iter()
            .any(|infix| name.contains(infix))
}

/// Where the git commands run, once located.
enum Located {
    /// A managed worktree, through the repository's record of it.
    Worktree(LinkedWorktree),
    /// A directory of the user's checkout, in a located repository.
    Checkout(Repository),
}

impl Located {
    fn find(place: Place<'_>) -> Result<Self, TreeError> {
        match place {
            Place::Worktree(step) => worktree::locate(step)
                .map(Self::Worktree)
                .map_err(|why| TreeError::Git {
                    what: "locating the worktree".to_owned(),
                    dir: PathBuf::from(&step.path),
                    why,
                }),
            Place::Checkout(dir) => locate_checkout(dir).map(Self::Checkout),
        }
    }

    fn at(&self) -> At<'_> {
        match self {
            Self::Worktree(worktree) => At::Worktree(worktree),
            Self::Checkout(repository) => At::Repository(repository),
        }
    }

    fn failed(&self, what: &str, why: String) -> TreeError {
        TreeError::Git {
            what: what.to_owned(),
            dir: self.at().dir().to_owned(),
            why,
        }
    }

    /// Runs `git args…` here, `stdin` fed to it; how it ended (the caller judges).
    fn ask(&self, what: &str, args: &[&str], stdin: Option<Vec<u8>>) -> Result<Finished, TreeError> {
        let mut command = git_cmd::command(GIT, self.at());
        command.args(args);
        bounded::run(command, stdin, GIT_LIMIT).map_err(|why| self.failed(what, why))
    }

    /// Runs `git args…` here; its output, byte for byte.
    fn git(&self, what: &str, args: &[&str]) -> Result<Vec<u8>, TreeError> {
        let finished = self.ask(what, args, None)?;
        if !finished.status.success() {
            return Err(self.failed(what, format!("it ended with {}", finished.status)));
        }
        Ok(finished.stdout)
    }

    /// The commit id git printed (one line).
    fn oid(&self, what: &str, output: &[u8]) -> Result<String, TreeError> {
        let text = String::from_utf8_lossy(output);
        let oid = text.trim_end();
        if is_oid(oid) {
            Ok(oid.to_owned())
        } else {
            Err(self.failed(what, format!("it printed {oid:?}, no commit id")))
        }
    }

    /// The repository's empty tree (the base of an unborn branch), asked once.
    fn empty_tree(&self, known: &mut Option<String>) -> Result<String, TreeError> {
        if let Some(tree) = known {
            return Ok(tree.clone());
        }
        let what = "git hash-object (the empty tree)";
        let finished = self.ask(what, &["hash-object", "-t", "tree", "--stdin"], Some(Vec::new()))?;
        if !finished.status.success() {
            return Err(self.failed(what, format!("it ended with {}", finished.status)));
        }
        let tree = self.oid(what, &finished.stdout)?;
        *known = Some(tree.clone());
        Ok(tree)
    }

    /// The top of the working tree, where the repository-relative paths start.
    fn top(&self) -> Result<PathBuf, TreeError> {
        match self {
            Self::Worktree(worktree) => Ok(worktree.work_tree.clone()),
            Self::Checkout(_) => {
                let out = self.git("git rev-parse --show-toplevel", &["rev-parse", "--show-toplevel"])?;
                // One line break ends the path; any other belongs to it.
                let path = out.strip_suffix(b"\n").unwrap_or(&out);
                if path.is_empty() {
                    return Err(self.failed("git rev-parse --show-toplevel", "it printed nothing".to_owned()));
                }
                Ok(PathBuf::from(OsStr::from_bytes(path)))
            }
        }
    }
}

/// The repository of the user's checkout `dir`, with its filter drivers known; no
/// configured program runs (an agent has been writing there).
fn locate_checkout(dir: &Path) -> Result<Repository, TreeError> {
    let failed = |what: &str, why: String| TreeError::Git {
        what: what.to_owned(),
        dir: dir.to_owned(),
        why,
    };
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(failed("locating the repository", "it is not a directory".to_owned())),
        Err(e) => return Err(failed("locating the repository", e.to_string())),
    }
    let what = "git rev-parse --git-common-dir";
    let finished = bounded::run(Repository::query(GIT, dir), None, GIT_LIMIT).map_err(|why| failed(what, why))?;
    if finished.status.code() == Some(NO_REPOSITORY) {
        return Err(TreeError::NotGit { dir: dir.to_owned() });
    }
    if !finished.status.success() {
        return Err(failed(what, format!("it ended with {}", finished.status)));
    }
    let mut repository = match Repository::parse(dir, &String::from_utf8_lossy(&finished.stdout)) {
        Ok(repository) => repository,
        Err(git_cmd::LocateError::NoRepository { .. }) => return Err(TreeError::NotGit { dir: dir.to_owned() }),
        Err(e) => return Err(failed(what, e.to_string())),
    };
    let mut keys = git_cmd::command(GIT, At::Repository(&repository));
    keys.args(Repository::FILTERS_QUERY);
    let listing = worktree::run(keys, Repository::FILTERS_QUERY[0]).map_err(|why| failed("git config --list", why))?;
    repository.set_filters(&listing);
    Ok(repository)
}

/// What `git status` says, paths as raw bytes.
struct Status {
    /// The commit checked out.
    head: Option<String>,
    /// Tracked paths with uncommitted changes (staged or not, unmerged; renames' new paths).
    tracked: Vec<Vec<u8>>,
    /// Paths whose index entry differs from HEAD, and unmerged paths.
    staged: Vec<Vec<u8>>,
    /// Untracked paths, not ignored (a directory git does not enter, such as a nested
    /// repository, ends with `/`).
    untracked: Vec<Vec<u8>>,
}

impl Status {
    fn read(located: &Located) -> Result<Self, TreeError> {
        // A submodule counts as changed when it is at another commit, not for changes inside
        // it (those would need git run through its `.git` file).
        let out = located.git(
            "git status",
            &[
                "status",
                "--porcelain=v2",
                "--branch",
                "--untracked-files=all",
                "--ignore-submodules=dirty",
                "--renames",
                "-z",
            ],
        )?;
        Ok(Self::parse(&out))
    }

    /// Reads `status --porcelain=v2 --branch -z` output.
    fn parse(out: &[u8]) -> Self {
        let mut status = Self {
            head: None,
            tracked: Vec::new(),
            staged: Vec::new(),
            untracked: Vec::new(),
        };
        let mut records = nul_separated(out);
        while let Some(record) = records.next() {
            if let Some(oid) = record.strip_prefix(b"# branch.oid ") {
                status.head = std::str::from_utf8(oid)
                    .ok()
                    .filter(|oid| is_oid(oid))
                    .map(str::to_owned);
            } else if let Some(rest) = record.strip_prefix(b"1 ") {
                // XY sub mH mI mW hH hI path
                status.entry(rest, 7, false);
            } else if let Some(rest) = record.strip_prefix(b"2 ") {
                // XY sub mH mI mW hH hI Xscore path, then the original path as its own field.
                status.entry(rest, 8, false);
                records.next();
            } else if let Some(rest) = record.strip_prefix(b"u ") {
                // XY sub m1 m2 m3 mW h1 h2 h3 path
                status.entry(rest, 9, true);
            } else if let Some(path) = record.strip_prefix(b"? ") {
                status.untracked.push(path.to_vec());
            }
        }
        status
    }

    /// A changed tracked entry: `fields` fields (the first `XY`), then the path.
    fn entry(&mut self, rest: &[u8], fields: usize, unmerged: bool) {
        let mut parts = rest.splitn(fields + 1, |b| *b == b' ');
        let index_changed = parts.next().and_then(|xy| xy.first()).is_some_and(|x| *x != b'.');
        let Some(path) = parts.nth(fields - 1).filter(|p| !p.is_empty()) else {
            return;
        };
        self.tracked.push(path.to_vec());
        if unmerged || index_changed {
            self.staged.push(path.to_vec());
        }
    }
}

/// The key of the working tree's content (see [`TreeFacts::state_key`]).
fn state_key(located: &Located, status: &Status, empty_tree: &mut Option<String>) -> Result<String, TreeError> {
    let against = match &status.head {
        Some(head) => head.clone(),
        None => located.empty_tree(empty_tree)?,
    };
    let mut args = vec!["diff", "--binary"];
    args.extend(DIFF);
    args.push(against.as_str());
    let diff = located.git("git diff --binary", &args)?;
    // Each field fixed in form, names and contents hashed: no two trees share the text.
    let mut text = String::from("sublaunch tree state 1\n");
    text.push_str(&format!("head {}\n", status.head.as_deref().unwrap_or("unborn")));
    text.push_str(&format!("tracked {} {}\n", sha256_hex(&diff), diff.len()));
    let mut untracked = status.untracked.clone();
    untracked.sort();
    untracked.dedup();
    if !untracked.is_empty() {
        let top = located.top()?;
        for path in &untracked {
            let kind = untracked_content(&top.join(OsStr::from_bytes(path)));
            text.push_str(&format!("untracked {} {kind}\n", sha256_hex(path)));
        }
    }
    Ok(sha256_hex(text.as_bytes()))
}

/// An untracked file's kind and content, read without following a link or blocking on a
/// FIFO. A file that cannot be read is known by what `lstat` says of it (size, times, inode:
/// a write changes its change time), so its key still changes with it.
fn untracked_content(path: &Path) -> String {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return "gone".to_owned(),
        Err(e) => return format!("unreadable {:?}", e.kind()),
    };
    let kind = meta.file_type();
    if kind.is_symlink() {
        return match std::fs::read_link(path) {
            Ok(target) => format!("link {}", sha256_hex(target.as_os_str().as_bytes())),
            Err(_) => stat_only("link", &meta),
        };
    }
    if kind.is_dir() {
        // A directory git does not enter (a nested repository): its name alone.
        return "dir".to_owned();
    }
    if !kind.is_file() {
        return stat_only("special", &meta);
    }
    let opened = File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let read = opened.and_then(|mut file| {
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::other("no longer a regular file"));
        }
        let executable = meta.mode() & 0o111 != 0;
        Ok(format!(
            "{} {}",
            if executable { "exec" } else { "file" },
            content_digest(&mut file)?
        ))
    });
    read.unwrap_or_else(|_| stat_only("file", &meta))
}

/// What `lstat` says of a file whose content is not read.
fn stat_only(kind: &str, meta: &std::fs::Metadata) -> String {
    format!(
        "{kind}-stat {} {} {} {}.{} {}.{}",
        meta.mode(),
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec()
    )
}

/// The SHA-256 of the list of the SHA-256s of the file's [`CHUNK`]s, and its length: the
/// memory it takes stays bounded whatever the file's size.
fn content_digest(file: &mut File) -> io::Result<String> {
    let mut digests = String::new();
    let mut total: u64 = 0;
    let mut chunk = Vec::new();
    loop {
        chunk.clear();
        let read = (&mut *file).take(CHUNK).read_to_end(&mut chunk)?;
        if read == 0 {
            break;
        }
        total = total.saturating_add(read as u64);
        digests.push_str(&sha256_hex(&chunk));
        if (read as u64) < CHUNK {
            break;
        }
    }
    Ok(format!("{} {total}", sha256_hex(digests.as_bytes())))
}

/// The lines added and removed, from `diff --shortstat` (`N files changed, I insertions(+),
/// D deletions(-)`; a part is left out when it is zero).
fn shortstat(text: &str) -> (u64, u64) {
    let (mut insertions, mut deletions) = (0, 0);
    for part in text.split(',') {
        let mut words = part.split_whitespace();
        let (Some(n), Some(what)) = (words.next().and_then(|n| n.parse::<u64>().ok()), words.next()) else {
            continue;
        };
        if what.starts_with("insertion") {
            insertions = n;
        } else if what.starts_with("deletion") {
            deletions = n;
        }
    }
    (insertions, deletions)
}

/// The non-empty NUL-separated fields of `out`.
fn nul_separated(out: &[u8]) -> impl Iterator<Item = &[u8]> {
    out.split(|b| *b == 0).filter(|field| !field.is_empty())
}

/// Paths as text, sorted, each once.
fn sorted_names(paths: Vec<Vec<u8>>) -> Vec<String> {
    let mut names: Vec<String> = paths
        .into_iter()
        .map(|path| String::from_utf8_lossy(&path).into_owned())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Whether `text` is a commit id (SHA-1 or SHA-256, lowercase hex).
fn is_oid(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests;
