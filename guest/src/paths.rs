//! POSIX path primitives of placement-and-schemas.md §1.5, computed lexically (the planner
//! never touches a filesystem).

/// REMOTE_ABS: absolute on a remote machine: starts with `/`, or is `~`, or starts with `~/`.
/// (`~user/x` is not remote-absolute, rule Q6.)
pub fn is_remote_absolute(s: &str) -> bool {
    s.starts_with('/') || s == "~" || s.starts_with("~/")
}

/// STRIP_TRAILING: removes trailing `/` from a path longer than one unit; a path made only of
/// slashes becomes `/` (rule P-I3).
pub fn strip_trailing_slashes(s: &str) -> String {
    if crate::jsstr::utf16_len(s) <= 1 {
        return s.to_owned();
    }
    let stripped = s.trim_end_matches('/');
    if stripped.is_empty() {
        "/".to_owned()
    } else {
        stripped.to_owned()
    }
}

/// Lexical POSIX normalisation: collapses repeated `/`, drops `.` segments and lets `..`
/// remove the previous real segment (dropped above an absolute root, kept at the start of a
/// relative path); an empty relative result is `.`; a trailing `/` of the input is kept.
pub fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => match segments.last() {
                Some(&last) if last != ".." => {
                    segments.pop();
                }
                _ if absolute => {}
                _ => segments.push(".."),
            },
            other => segments.push(other),
        }
    }
    let mut out = segments.join("/");
    if absolute {
        out.insert(0, '/');
    } else if out.is_empty() {
        out.push('.');
    }
    if path.ends_with('/') && !out.ends_with('/') {
        out.push('/');
    }
    out
}

/// PJOIN: joins `a` and `b` with one `/` and normalises the result lexically.
pub fn join(a: &str, b: &str) -> String {
    normalize(&format!("{a}/{b}"))
}

/// LRESOLVE: resolves a local path `x` against `base`: absent or empty gives `base`, an
/// absolute `x` is returned unchanged, anything else is `base/x` normalised without a
/// trailing slash.
pub fn resolve_local(base: &str, x: Option<&str>) -> String {
    match x {
        None | Some("") => base.to_owned(),
        Some(x) if x.starts_with('/') => x.to_owned(),
        Some(x) => {
            let joined = join(base, x);
            if joined.len() > 1 {
                joined.trim_end_matches('/').to_owned()
            } else {
                joined
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_matches_the_spec_examples() {
        assert_eq!(join("/home/nico/proj", "../shared/lib"), "/home/nico/shared/lib");
        assert_eq!(join("~", "a/b"), "~/a/b");
        assert_eq!(join("~/proj", "../.."), ".");
        assert_eq!(join("/home//nico/./proj", "a"), "/home/nico/proj/a");
        assert_eq!(join("/r", "./"), "/r/");
    }

    #[test]
    fn normalize_handles_roots_and_relative_climbs() {
        assert_eq!(normalize("/../a"), "/a");
        assert_eq!(normalize("../a"), "../a");
        assert_eq!(normalize("a/../../b"), "../b");
        assert_eq!(normalize("/"), "/");
        assert_eq!(normalize("//"), "/");
        assert_eq!(normalize("a/.."), ".");
    }

    #[test]
    fn strip_trailing_keeps_a_root() {
        assert_eq!(strip_trailing_slashes("~/x/"), "~/x");
        assert_eq!(strip_trailing_slashes("~/"), "~");
        assert_eq!(strip_trailing_slashes("/"), "/");
        assert_eq!(strip_trailing_slashes("//"), "/");
        assert_eq!(strip_trailing_slashes("///"), "/");
    }

    #[test]
    fn resolve_local_follows_lresolve() {
        assert_eq!(resolve_local("/code/repo", None), "/code/repo");
        assert_eq!(resolve_local("/code/repo", Some("")), "/code/repo");
        assert_eq!(resolve_local("/code/repo", Some("/abs//x/")), "/abs//x/");
        assert_eq!(resolve_local("/code/repo", Some("sub/")), "/code/repo/sub");
        assert_eq!(resolve_local("/code/repo", Some("../other")), "/code/other");
        assert_eq!(resolve_local("/code", Some("..")), "/");
    }
}
