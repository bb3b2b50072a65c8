//! The project a working directory belongs to, and how far the user trusts it.
//!
//! Configuration found in a project — `.sublaunch/` and `.pi/`: settings, agent files, the
//! model registry, completion hooks, pi extensions — arrives with whatever was cloned, so it
//! takes effect only in a project the user trusts, as recorded in their own store
//! ([`store`], written by `sublaunch trust`). Configuration that runs a program (a completion
//! hook, an agent's own program, an agent taking a built-in's name, pi extensions) needs more:
//! the user's approval of that exact content, so that a change after `trust` is ignored until
//! approved again. A run started from inside a run trusts at most what its parent did
//! ([`lineage`]). User-level configuration and command-line flags are the user's own and are
//! never gated.
//!
//! A project is keyed by its root: the repository root when the working directory is in a
//! repository (a `.git` that belongs to the user or root), else the topmost directory up to
//! the search boundary that holds project configuration.

pub mod lineage;
pub mod store;

use crate::environment::Environment;
use crate::inputs::config_files::walk_boundary;
use lineage::{LINEAGE_VAR, Lineage};
use std::fmt;
use std::path::{Path, PathBuf};
use store::{Approval, ProgramKind, TrustStore, TrustedProject};
use sublaunch_protocol::records::config::ProjectConfig;

/// The project entries that count, relative to a directory on the way up: those sublaunch
/// reads, then those the agents it starts would read themselves (which they are told to leave
/// alone in an untrusted project, [`sublaunch_protocol::records::config::ProjectConfig`]).
const ENTRIES: [&str; 12] = [
    ".sublaunch/settings.json",
    ".sublaunch/models.json",
    ".sublaunch/agents",
    ".pi/settings.json",
    ".pi/agents",
    ".pi/extensions",
    ".pi/skills",
    ".pi/prompts",
    ".pi/SYSTEM.md",
    ".pi/APPEND_SYSTEM.md",
    ".claude/settings.json",
    ".claude/settings.local.json",
];

/// The project of a working directory and the user's trust in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Project {
    root: PathBuf,
    start: PathBuf,
    boundary: PathBuf,
    /// The project entries present: each kind's nearest, with the name it was looked for by.
    present: Vec<(&'static str, PathBuf)>,
    standing: Standing,
}

/// How far the user trusts a project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Trusted, with these approvals (already narrowed to the parent run's).
    Trusted(TrustedProject),
    /// Read as if trusted with every program approved: what `sublaunch trust` shows and
    /// records.
    Approving,
    /// Not trusted: its configuration is ignored.
    Untrusted(Distrust),
}

/// Why a project's configuration is ignored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Distrust {
    /// The user has not trusted it.
    NotTrusted,
    /// The user has, but the run this command runs inside did not.
    ParentRun,
    /// The record of trusted projects cannot be used.
    StoreUnreadable(String),
}

/// A piece of project configuration that runs a program as the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramItem {
    /// The file (or directory, for pi extensions) it is defined in.
    pub path: PathBuf,
    /// What kind of program.
    pub kind: ProgramKind,
    /// The SHA-256 of the content that decides what runs.
    pub sha256: String,
    /// What runs, in one line.
    pub shows: String,
}

/// Project configuration left out, and why. Shown once by every command that left it out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ignored {
    /// The file or directory left out.
    pub path: PathBuf,
    /// The program it defines, when only that was left out.
    pub kind: Option<ProgramKind>,
    /// Why.
    pub why: IgnoredWhy,
    /// The project's root (what `sublaunch trust` takes).
    pub root: PathBuf,
}

/// Why [`Ignored`] configuration was left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IgnoredWhy {
    /// The project is not trusted.
    Untrusted(Distrust),
    /// The project is trusted, this program was never approved.
    NotApproved {
        /// What it runs.
        shows: String,
    },
    /// The project is trusted, and this program changed since it was approved.
    Changed {
        /// What was approved.
        was: String,
        /// What it says now.
        now: String,
    },
}

impl Project {
    /// The project of `cwd` as `env` sees it: the user's records (`<config>/trusted/`) and the
    /// launching run's lineage, if any.
    pub fn open(cwd: &Path, env: &Environment) -> Self {
        let store = env.config_dir().map(|dir| TrustStore::new(&dir));
        // Set at all, even empty or garbled, means "inside a run": it then trusts nothing more.
        let lineage = env
            .var(LINEAGE_VAR)
            .map(|value| Lineage::parse(value.to_str().unwrap_or_default()));
        Self::open_with(cwd, env.home().as_deref(), store.as_ref(), lineage.as_ref())
    }

    /// [`Project::open`] with the store (`None`: nothing is trusted) and lineage given.
    pub fn open_with(cwd: &Path, home: Option<&Path>, store: Option<&TrustStore>, lineage: Option<&Lineage>) -> Self {
        let mut project = Self::locate(cwd, home);
        let record = match store {
            Some(store) => store.get(&project.root).map_err(|e| e.to_string()),
            None => Ok(None),
        };
        project.standing = match record {
            Err(problem) => Standing::Untrusted(Distrust::StoreUnreadable(problem)),
            Ok(record) => match (record, lineage) {
                (None, _) => Standing::Untrusted(Distrust::NotTrusted),
                (Some(trusted), None) => Standing::Trusted(trusted),
                (Some(trusted), Some(lineage)) => match lineage.narrow(&project.root, &trusted) {
                    Some(narrowed) => Standing::Trusted(narrowed),
                    None => Standing::Untrusted(Distrust::ParentRun),
                },
            },
        };
        project
    }

    /// The project of `cwd` read as `sublaunch trust` reads it: everything counts, so that
    /// what it would approve can be shown and recorded.
    pub fn open_for_approval(cwd: &Path, home: Option<&Path>) -> Self {
        let mut project = Self::locate(cwd, home);
        project.standing = Standing::Approving;
        project
    }

    /// A project whose configuration is read as the caller's own, programs included: for
    /// embedders that vouch for a directory themselves, and for tests.
    pub fn own(cwd: &Path, home: Option<&Path>) -> Self {
        Self::open_for_approval(cwd, home)
    }

    fn locate(cwd: &Path, home: Option<&Path>) -> Self {
        let start = cwd.to_owned();
        let boundary = walk_boundary(cwd, home).to_owned();
        let mut present = Vec::new();
        let mut topmost = None;
        for relative in ENTRIES {
            for dir in start.ancestors() {
                if dir.join(relative).exists() {
                    present.push((relative, dir.join(relative)));
                    if topmost.is_none_or(|top: &Path| top.starts_with(dir)) {
                        topmost = Some(dir);
                    }
                    break;
                }
                if dir == boundary {
                    break;
                }
            }
        }
        let repository = crate::inputs::config_files::repository_root(cwd);
        let root = repository.or(topmost).unwrap_or(cwd);
        let root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
        Self {
            root,
            start,
            boundary,
            present,
            standing: Standing::Untrusted(Distrust::NotTrusted),
        }
    }

    /// The project's root, the key of its trust.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How far the user trusts it.
    pub fn standing(&self) -> &Standing {
        &self.standing
    }

    /// Whether its configuration takes effect.
    pub fn is_trusted(&self) -> bool {
        !matches!(self.standing, Standing::Untrusted(_))
    }

    /// The project entries present, nearest of each kind (trusted or not).
    pub fn present(&self) -> impl Iterator<Item = &Path> {
        self.present.iter().map(|(_, path)| path.as_path())
    }

    /// The nearest project file or directory `relative` (`.sublaunch/settings.json`), when
    /// present and the project is trusted.
    pub fn entry(&self, relative: &str) -> Option<PathBuf> {
        if !self.is_trusted() {
            return None;
        }
        self.present
            .iter()
            .find(|(name, _)| *name == relative)
            .map(|(_, path)| path.clone())
    }

    /// The directory upward searches start from.
    pub fn start(&self) -> &Path {
        &self.start
    }

    /// Where upward searches for project files end.
    pub fn boundary(&self) -> &Path {
        &self.boundary
    }

    /// The configuration this command leaves out because the project is not trusted: one
    /// notice per entry present.
    pub fn ignored(&self) -> Vec<Ignored> {
        let Standing::Untrusted(distrust) = &self.standing else {
            return Vec::new();
        };
        self.present
            .iter()
            .map(|(_, path)| Ignored {
                path: path.clone(),
                kind: None,
                why: IgnoredWhy::Untrusted(distrust.clone()),
                root: self.root.clone(),
            })
            .collect()
    }

    /// Whether `item` may run: the project is trusted and the user approved this content.
    pub fn check(&self, item: &ProgramItem) -> Result<(), Ignored> {
        let ignored = |why| Ignored {
            path: item.path.clone(),
            kind: Some(item.kind),
            why,
            root: self.root.clone(),
        };
        let trusted = match &self.standing {
            Standing::Approving => return Ok(()),
            Standing::Untrusted(distrust) => return Err(ignored(IgnoredWhy::Untrusted(distrust.clone()))),
            Standing::Trusted(trusted) => trusted,
        };
        let approval = self.approval(item);
        let same_place = |a: &&Approval| a.file == approval.file && a.kind == approval.kind;
        if trusted
            .approved
            .iter()
            .any(|a| same_place(&a) && a.sha256 == approval.sha256)
        {
            return Ok(());
        }
        Err(ignored(match trusted.approved.iter().find(same_place) {
            Some(old) => IgnoredWhy::Changed {
                was: old.shows.clone(),
                now: item.shows.clone(),
            },
            None => IgnoredWhy::NotApproved {
                shows: item.shows.clone(),
            },
        }))
    }

    /// `item` as the store records it (its file relative to the root).
    pub fn approval(&self, item: &ProgramItem) -> Approval {
        let canonical = item.path.canonicalize().unwrap_or_else(|_| item.path.clone());
        let file = canonical
            .strip_prefix(&self.root)
            .map(Path::to_owned)
            .unwrap_or(canonical);
        Approval {
            file,
            kind: item.kind,
            sha256: item.sha256.clone(),
            shows: item.shows.clone(),
        }
    }

    /// The project's pi extensions, when present and not approved as they are.
    pub fn unapproved_pi_extensions(&self) -> Option<Ignored> {
        let dir = self.entry(".pi/extensions")?;
        self.check(&ProgramItem::pi_extensions(&dir)).err()
    }

    /// Whether the agents of a run launched here may load their own configuration from the
    /// project: only when the user trusts it and approved its pi extensions as they are.
    pub fn agents_config(&self) -> ProjectConfig {
        if self.is_trusted() && self.unapproved_pi_extensions().is_none() {
            ProjectConfig::Load
        } else {
            ProjectConfig::Ignore
        }
    }

    /// What the shim of a run launched here is handed so that its agents' `sublaunch` trusts
    /// no more than this run: the lineage variable and its value.
    pub fn lineage_var(&self) -> (std::ffi::OsString, std::ffi::OsString) {
        (LINEAGE_VAR.into(), self.lineage().to_var().into())
    }

    /// What a run launched here may trust at most: this project with the approvals in effect,
    /// or nothing.
    pub fn lineage(&self) -> Lineage {
        match &self.standing {
            Standing::Trusted(trusted) => Lineage {
                projects: vec![trusted.clone()],
            },
            Standing::Approving | Standing::Untrusted(_) => Lineage::default(),
        }
    }
}

impl ProgramItem {
    /// A completion hook `command` set in the settings file `path`.
    pub fn completion_hook(path: &Path, command: &str, timeout_ms: Option<u64>) -> Self {
        let content = format!("{command}\0{}", timeout_ms.map(|t| t.to_string()).unwrap_or_default());
        Self {
            path: path.to_owned(),
            kind: ProgramKind::CompletionHook,
            sha256: sublaunch_protocol::files::atomic::sha256_hex(content.as_bytes()),
            shows: command.to_owned(),
        }
    }

    /// The agent file `path` (its whole content decides what runs), showing `shows`.
    pub fn agent_file(path: &Path, kind: ProgramKind, bytes: &[u8], shows: String) -> Self {
        Self {
            path: path.to_owned(),
            kind,
            sha256: sublaunch_protocol::files::atomic::sha256_hex(bytes),
            shows,
        }
    }

    /// The pi extensions under `dir`: every file's relative path and content, in order.
    pub fn pi_extensions(dir: &Path) -> Self {
        let mut files = Vec::new();
        collect_files(dir, dir, &mut files, 0);
        files.sort();
        let mut content = Vec::new();
        for relative in &files {
            content.extend_from_slice(relative.as_os_str().as_encoded_bytes());
            content.push(0);
            let bytes = crate::inputs::config_files::read_bytes(&dir.join(relative))
                .ok()
                .flatten()
                .unwrap_or_default();
            content.extend_from_slice(sublaunch_protocol::files::atomic::sha256_hex(&bytes).as_bytes());
            content.push(b'\n');
        }
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        Self {
            path: dir.to_owned(),
            kind: ProgramKind::PiExtensions,
            sha256: sublaunch_protocol::files::atomic::sha256_hex(&content),
            shows: format!("{} file(s): {}", files.len(), names.join(", ")),
        }
    }
}

/// The regular files below `dir` (relative to `base`), symlinks not followed, at most 16
/// levels and 4096 files: a hostile tree cannot make this walk long.
fn collect_files(base: &Path, dir: &Path, files: &mut Vec<PathBuf>, depth: usize) {
    if depth > 16 || files.len() >= 4096 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else { continue };
        let path = entry.path();
        if kind.is_dir() {
            collect_files(base, &path, files, depth + 1);
        } else if kind.is_file()
            && let Ok(relative) = path.strip_prefix(base)
        {
            files.push(relative.to_owned());
        }
    }
}

/// `path` as a shell word the user can paste.
fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    if !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%".contains(&b))
    {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

impl fmt::Display for Ignored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let trust = format!("sublaunch trust {}", shell_word(&self.root));
        let what = match self.kind {
            Some(kind) => format!("{} in {}", kind.label(), self.path.display()),
            None => self.path.display().to_string(),
        };
        match &self.why {
            IgnoredWhy::Untrusted(Distrust::NotTrusted) => write!(
                f,
                "ignored {what}: the project {} is not trusted; run `{trust}` if you trust it",
                self.root.display()
            ),
            IgnoredWhy::Untrusted(Distrust::ParentRun) => write!(
                f,
                "ignored {what}: the run this command was started from does not trust the project {}, and a run never trusts more than the run that started it",
                self.root.display()
            ),
            IgnoredWhy::Untrusted(Distrust::StoreUnreadable(problem)) => write!(
                f,
                "ignored {what}: the record of trusted projects cannot be used ({problem})"
            ),
            IgnoredWhy::NotApproved { shows } => write!(
                f,
                "ignored {what}: it runs `{shows}`, which you have not approved; run `{trust}` to approve it"
            ),
            IgnoredWhy::Changed { was, now } if was == now => write!(
                f,
                "ignored {what}: its content changed since you approved it (it runs `{now}`); run `{trust}` to approve the new content"
            ),
            IgnoredWhy::Changed { was, now } => write!(
                f,
                "ignored {what}: it changed since you approved it (was `{was}`, now `{now}`); run `{trust}` to approve the new content"
            ),
        }
    }
}

#[cfg(test)]
mod tests;
