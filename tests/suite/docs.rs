//! The rule index (`docs/rules.md`) and the code agree: every rule id the code cites has a
//! line there, every line there is cited by the code, and each line names a file that exists
//! and cites its id.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The id families: two-part prefixes first, so `P-H5` is not read as `H5`.
const PREFIXES: [&str; 4] = ["M-I", "P-I", "P-H", "P-S"];
const LETTERS: &str = "ACDEFGHIJKLMNPQRSTUWX";

/// The rule ids in `text`: a family prefix and one or two digits, standing alone (not part of
/// a longer word such as `E2BIG` or `sha256`).
fn rule_ids(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let joins = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    let mut ids = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if i > 0 && joins(bytes[i - 1]) {
            i += 1;
            continue;
        }
        let prefix = PREFIXES
            .iter()
            .find(|p| bytes[i..].starts_with(p.as_bytes()))
            .map(|p| p.len())
            .or_else(|| LETTERS.as_bytes().contains(&bytes[i]).then_some(1));
        if let Some(len) = prefix {
            let digits = bytes[i + len..]
                .iter()
                .take(2)
                .take_while(|b| b.is_ascii_digit())
                .count();
            let end = i + len + digits;
            let ends_alone = bytes
                .get(end)
                .is_none_or(|b| !(b.is_ascii_alphanumeric() || *b == b'_'));
            if digits > 0 && ends_alone {
                ids.push(String::from_utf8_lossy(&bytes[i..end]).into_owned());
                i = end;
                continue;
            }
        }
        i += 1;
    }
    ids
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file of the workspace's crates and tests (build output and installed packages
/// left out).
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if !matches!(name.to_str(), Some("target" | "node_modules" | ".venv" | "vectors")) {
                sources(&path, found);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// id → the files (relative to the workspace) that cite it.
fn citations() -> BTreeMap<String, BTreeSet<String>> {
    let root = workspace();
    let mut files = Vec::new();
    for dir in ["contract", "guest", "host", "shim", "tests", "examples"] {
        sources(&root.join(dir), &mut files);
    }
    let mut cited: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let relative = file.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
        for id in rule_ids(&text) {
            cited.entry(id).or_default().insert(relative.clone());
        }
    }
    cited
}

/// id → the files its line in `docs/rules.md` names.
fn index() -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(workspace().join("docs/rules.md")).unwrap();
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| id ")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        assert_eq!(cells.len(), 3, "a row is `| id | rule | files |`: {line}");
        assert!(!cells[1].is_empty(), "{line}: no description");
        let files = cells[2].split(", ").map(|f| f.trim_matches('`').to_owned()).collect();
        assert!(
            rows.insert(cells[0].to_owned(), files).is_none(),
            "{} is listed twice",
            cells[0]
        );
    }
    rows
}

#[test]
fn the_rule_index_lists_exactly_the_ids_the_code_cites() {
    let cited = citations();
    let index = index();
    let unlisted: Vec<_> = cited
        .iter()
        .filter(|(id, _)| !index.contains_key(*id))
        .map(|(id, files)| {
            format!(
                "{id} (cited in {})",
                files.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    let uncited: Vec<&String> = index.keys().filter(|id| !cited.contains_key(*id)).collect();
    assert!(
        unlisted.is_empty() && uncited.is_empty(),
        "docs/rules.md is out of step with the code.\nCited but not listed: {unlisted:#?}\nListed but cited nowhere: {uncited:?}"
    );
    for (id, files) in &index {
        for file in files {
            assert!(
                cited[id].contains(file),
                "docs/rules.md says {file} implements {id}, but {file} does not cite it"
            );
        }
    }
}

#[test]
fn rule_ids_are_read_as_whole_words() {
    assert_eq!(
        rule_ids("(H3, P-H5–P-H12) K14: M-I3 and E2BIG, sha256, F01, X11. P-S3"),
        ["H3", "P-H5", "P-H12", "K14", "M-I3", "F01", "X11", "P-S3"]
    );
}
