//! The remote half of a placed step (P-H7–P-H9): the marker lines and the `sh -c` script that
//! enters the machine's directory, announces itself and runs the adapter's command there.

use std::fmt::Write as _;

/// `Q(x)`: `x` in single quotes, every `'` inside turned into `'\''` (P-H7).
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The marker lines of one shim (P-H9), each embedding its random token so that banner, rc-file
/// or agent output cannot forge one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Markers {
    /// The remote shell is in the directory; the command starts next.
    pub ready: String,
    /// A captured final message starts on the next line.
    pub final_begin: String,
    /// The captured final message ended.
    pub final_end: String,
    /// Prefix of the git probe's JSON line.
    pub git: String,
    /// Prefix of the line naming the remote process group (sublaunch addition: `stop` ends
    /// the remote tree with it).
    pub pgid: String,
}

impl Markers {
    /// The markers of `token` (16 lowercase hex characters).
    pub fn new(token: &str) -> Self {
        Self {
            ready: format!("__pi_subagents_ready_{token}__"),
            final_begin: format!("__pi_subagents_final_begin_{token}__"),
            final_end: format!("__pi_subagents_final_end_{token}__"),
            git: format!("__pi_subagents_git_{token}__"),
            pgid: format!("__sublaunch_pgid_{token}__"),
        }
    }

    /// Markers with a fresh token: 8 bytes of the kernel's randomness as hex.
    pub fn random() -> std::io::Result<Self> {
        let mut bytes = [0u8; 8];
        let mut filled = 0;
        while filled < bytes.len() {
            match rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty()) {
                Ok(n) => filled += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let token = bytes.iter().fold(String::new(), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        });
        Ok(Self::new(&token))
    }
}

/// A local file the command names that must exist on the machine instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemoteFile {
    /// The agent writes its final message there (Codex's `--output-last-message`): a remote
    /// temp file, printed between the final markers afterwards (P-H8).
    Capture(String),
    /// The agent reads it (pi's system prompt file): a remote temp file holding `content`.
    Upload {
        /// The local file the command names.
        path: String,
        /// What the remote copy holds.
        content: String,
    },
}

impl RemoteFile {
    fn local_path(&self) -> &str {
        match self {
            Self::Capture(path) | Self::Upload { path, .. } => path,
        }
    }

    fn variable(&self) -> &'static str {
        match self {
            Self::Capture(_) => "pi_final",
            Self::Upload { .. } => "pi_upload",
        }
    }
}

/// The `cd` statement of P-H7 step 3.
pub fn cd_statement(cwd: &str) -> String {
    let dir = if cwd == "~" {
        "\"$HOME\"".to_owned()
    } else if let Some(rest) = cwd.strip_prefix("~/") {
        format!("\"$HOME\"{}", quote(&format!("/{rest}")))
    } else {
        quote(cwd)
    };
    format!("cd {dir} || exit 125")
}

/// One argument of the command: Q-quoted, with a local file's path replaced by its remote
/// variable wherever it occurs.
fn remote_argument(arg: &str, files: &[RemoteFile]) -> String {
    for file in files {
        let path = file.local_path();
        if !path.is_empty() && arg.contains(path) {
            let variable = format!("\"${}\"", file.variable());
            return arg.split(path).map(quote).collect::<Vec<_>>().join(&variable);
        }
    }
    quote(arg)
}

/// The git probe of P-H8: one GIT line inside a work tree, nothing elsewhere.
fn git_probe(markers: &Markers) -> String {
    format!(
        "if git rev-parse --is-inside-work-tree >/dev/null 2>&1 </dev/null; then \
         pi_h=$(git rev-parse --short HEAD 2>/dev/null </dev/null); \
         pi_b=$(git symbolic-ref --short -q HEAD 2>/dev/null </dev/null); \
         if [ -n \"$(git status --porcelain 2>/dev/null </dev/null | head -c 1)\" ]; then pi_d=true; else pi_d=false; fi; \
         printf '%s{{\"head\":\"%s\",\"branch\":\"%s\",\"dirty\":%s}}\\n' {} \"$pi_h\" \"$pi_b\" \"$pi_d\"; fi",
        quote(&markers.git)
    )
}

/// The script run by the machine's `sh -c` (P-H7 + P-H8): PATH and the `exports` (values a shell
/// step reads from its environment, each Q-quoted), `cd`, the process-group and READY lines,
/// then `argv` with `files` moved to the machine, its status, the captured final message,
/// the git probe and `exit` with the command's status.
pub fn script(markers: &Markers, cwd: &str, exports: &[(&str, &str)], argv: &[String], files: &[RemoteFile]) -> String {
    let mut statements = vec!["export PATH=\"$HOME/.local/bin:/opt/homebrew/bin:/usr/local/bin:$PATH\"".to_owned()];
    statements.extend(
        exports
            .iter()
            .map(|(name, value)| format!("export {name}={}", quote(value))),
    );
    statements.extend([
        cd_statement(cwd),
        format!(
            "pi_pg=$(ps -o pgid= -p $$ 2>/dev/null </dev/null | tr -d ' '); printf '%s%s\\n' {} \"${{pi_pg:-$$}}\"",
            quote(&markers.pgid)
        ),
        format!("printf '%s\\n' {}", quote(&markers.ready)),
    ]);
    for file in files {
        match file {
            RemoteFile::Capture(_) => statements
                .push("pi_final=$(mktemp \"${TMPDIR:-/tmp}/pi-subagents-final.XXXXXX\") || exit 126".to_owned()),
            RemoteFile::Upload { content, .. } => {
                statements
                    .push("pi_upload=$(mktemp \"${TMPDIR:-/tmp}/sublaunch-upload.XXXXXX\") || exit 126".to_owned());
                statements.push(format!("printf '%s' {} >\"$pi_upload\"", quote(content)));
            }
        }
    }
    let command: Vec<String> = argv.iter().map(|arg| remote_argument(arg, files)).collect();
    statements.push(command.join(" "));
    statements.push("pi_status=$?".to_owned());
    for file in files {
        match file {
            RemoteFile::Capture(_) => {
                statements.push(format!("printf '%s\\n' {}", quote(&markers.final_begin)));
                statements.push("cat \"$pi_final\"".to_owned());
                statements.push(format!("printf '\\n%s\\n' {}", quote(&markers.final_end)));
                statements.push("rm -f \"$pi_final\"".to_owned());
            }
            RemoteFile::Upload { .. } => statements.push("rm -f \"$pi_upload\"".to_owned()),
        }
    }
    statements.push(git_probe(markers));
    statements.push("exit $pi_status".to_owned());
    statements.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h7_quoting_survives_single_quotes() {
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(cd_statement("~"), "cd \"$HOME\" || exit 125");
        assert_eq!(cd_statement("~/a b"), "cd \"$HOME\"'/a b' || exit 125");
        assert_eq!(cd_statement("/srv/x"), "cd '/srv/x' || exit 125");
    }

    #[test]
    fn h8_local_paths_become_remote_variables() {
        let files = [RemoteFile::Capture("/run/last-message-0.txt".into())];
        assert_eq!(
            remote_argument("--out=/run/last-message-0.txt", &files),
            "'--out='\"$pi_final\"''"
        );
        assert_eq!(remote_argument("plain", &files), "'plain'");
    }

    #[test]
    fn h9_markers_embed_the_token_and_differ_per_shim() {
        let a = Markers::random().unwrap();
        let b = Markers::random().unwrap();
        assert_ne!(a, b);
        let token = a
            .ready
            .trim_start_matches("__pi_subagents_ready_")
            .trim_end_matches("__");
        assert_eq!(token.len(), 16);
        assert!(token.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    }
}
