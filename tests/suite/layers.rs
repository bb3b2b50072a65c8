//! The rooms of the code stay layered, and run records are read by field: the top-level
//! folders of the host library and of the runner import one way (no folder reaches one that
//! reaches it back, directly or around a longer loop), and no code outside tests reads or
//! writes a step's fields in an untyped `extra` map by string key.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())) {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The file's code without comments (doc links name modules without importing them).
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module path of a file under `src` (`runs/store.rs` → `[runs, store]`,
/// `launch/mod.rs` → `[launch]`).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_owned());
    }
    parts
}

fn ident_at(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The first segments of every path `code` names from the crate root: `crate::a::…`,
/// `crate::{a, b::…}`, and `super::` chains that climb to the root from `module`.
fn root_segments(code: &str, module: &[String]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut add_group = |rest: &str| {
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut start_of_item = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => start_of_item = true,
                    c if c.is_whitespace() => {}
                    _ if depth == 1 && start_of_item => {
                        found.insert(ident_at(&group[i..]));
                        start_of_item = false;
                    }
                    _ => start_of_item = false,
                }
            }
        } else {
            found.insert(ident_at(rest));
        }
    };
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        add_group(&code[at + "crate::".len()..]);
    }
    for (at, _) in code.match_indices("super::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut rest = &code[at..];
        let mut climbs = 0;
        while let Some(next) = rest.strip_prefix("super::") {
            climbs += 1;
            rest = next;
        }
        if climbs == module.len() {
            add_group(rest);
        }
    }
    found
}

/// Folder → the other folders its code names, over the top-level modules of `src`.
fn arrows(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files = rust_files(src);
    let tops: BTreeSet<String> = files
        .iter()
        .filter_map(|f| module_path(src, f).first().cloned())
        .collect();
    let mut arrows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let module = module_path(src, file);
        let Some(from) = module.first() else {
            continue; // lib.rs / main.rs: the crate root declares every folder
        };
        for to in root_segments(&code_of(file), &module) {
            if &to != from && tops.contains(&to) {
                arrows.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    arrows
}

/// The loops of `arrows` (each as the folders on it), found by depth-first search.
fn loops(arrows: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn visit(
        node: &str,
        arrows: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        if let Some(at) = path.iter().position(|p| p == node) {
            found.push(path[at..].to_vec());
            return;
        }
        if done.contains(node) {
            return;
        }
        path.push(node.to_owned());
        for next in arrows.get(node).into_iter().flatten() {
            visit(next, arrows, path, done, found);
        }
        path.pop();
        done.insert(node.to_owned());
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in arrows.keys() {
        visit(node, arrows, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

fn describe(arrows: &BTreeMap<String, BTreeSet<String>>) -> String {
    arrows
        .iter()
        .map(|(from, to)| format!("  {from} -> {}", to.iter().cloned().collect::<Vec<_>>().join(", ")))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_host_library_folders_import_one_way() {
    let arrows = arrows(&repo().join("host/src"));
    let loops = loops(&arrows);
    assert!(
        loops.is_empty(),
        "host/src folders that reach each other back: {loops:?}\narrows:\n{}",
        describe(&arrows)
    );
}

#[test]
fn the_runner_folders_import_one_way() {
    let arrows = arrows(&repo().join("shim/src"));
    let loops = loops(&arrows);
    assert!(
        loops.is_empty(),
        "shim/src folders that reach each other back: {loops:?}\narrows:\n{}",
        describe(&arrows)
    );
}

/// The scanner itself: it sees grouped imports and `super::` climbs, and reports a loop.
#[test]
fn the_scanner_sees_grouped_imports_climbs_and_loops() {
    let module = vec!["launch".to_owned(), "reconcile".to_owned()];
    let found = root_segments(
        "use crate::{runs::store::RunStore, inputs};\nuse super::super::worktrees::x;\nfn f() { crate::engine::go() }",
        &module,
    );
    let expected: BTreeSet<String> = ["runs", "inputs", "worktrees", "engine"].map(str::to_owned).into();
    assert_eq!(found, expected);
    let mut arrows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    arrows.entry("a".into()).or_default().insert("b".into());
    arrows.entry("b".into()).or_default().insert("c".into());
    assert!(loops(&arrows).is_empty());
    arrows.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        loops(&arrows),
        vec![vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]]
    );
}

/// Run records are typed: production code never reaches into an `extra` map by string key
/// (that map keeps only other writers' fields, for writing them back).
#[test]
fn no_run_record_field_is_read_by_string_key() {
    let mut hits = Vec::new();
    for crate_src in ["host/src", "shim/src", "shim/protocol/src"] {
        for file in rust_files(&repo().join(crate_src)) {
            if file.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let code = code_of(&file);
            let production = code.split("#[cfg(test)]").next().unwrap_or_default();
            for (number, line) in production.lines().enumerate() {
                let compact: String = line.split_whitespace().collect();
                if [
                    ".extra.get(",
                    ".extra.insert(",
                    ".extra[",
                    ".extra.remove(",
                    ".extra.entry(",
                ]
                .iter()
                .any(|p| compact.contains(p))
                {
                    hits.push(format!("{}:{}: {}", file.display(), number + 1, line.trim()));
                }
            }
        }
    }
    assert!(hits.is_empty(), "string-keyed record fields:\n{}", hits.join("\n"));
}
