//! "Read everything but these" with an allow-only mechanism (rule G23): Landlock can only
//! grant, so instead of one read rule on `/`, each directory on the way to a hidden path is
//! replaced by read rules on its other entries. The directories on the way can be entered but
//! not listed; the hidden paths cannot be opened at all.

use std::io;
use std::path::{Path, PathBuf};

/// The read roots that cover `/` but `hidden` (paths that do not exist are already hidden).
pub fn roots(hidden: &[PathBuf]) -> io::Result<Vec<PathBuf>> {
    let mut roots = vec![PathBuf::from("/")];
    for secret in hidden {
        let Ok(secret) = std::fs::canonicalize(secret) else {
            continue;
        };
        let Some(at) = roots.iter().position(|root| secret.starts_with(root)) else {
            continue;
        };
        let root = roots.swap_remove(at);
        if root != secret {
            split(&root, &secret, &mut roots)?;
        }
    }
    Ok(roots)
}

/// Replaces `dir` by its entries, descending towards `secret` and leaving it out.
fn split(dir: &Path, secret: &Path, roots: &mut Vec<PathBuf>) -> io::Result<()> {
    let Some(next) = secret.strip_prefix(dir).ok().and_then(|rest| rest.components().next()) else {
        return Ok(());
    };
    let toward = dir.join(next);
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path != toward {
            roots.push(path);
        }
    }
    if toward != secret {
        split(&toward, secret, roots)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hidden_path_and_its_ancestors_are_no_root_but_their_siblings_are() {
        let scratch = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(scratch.path()).unwrap();
        for dir in [".ssh", ".aws", "work"] {
            std::fs::create_dir(home.join(dir)).unwrap();
        }
        std::fs::write(home.join(".profile"), "").unwrap();
        let roots = roots(&[home.join(".ssh"), home.join(".aws"), home.join(".gnupg")]).unwrap();
        assert!(roots.contains(&home.join("work")) && roots.contains(&home.join(".profile")));
        assert!(
            !roots
                .iter()
                .any(|r| home.join(".ssh").starts_with(r) || home.join(".aws").starts_with(r))
        );
        assert!(!roots.contains(&PathBuf::from("/")));
    }
}
