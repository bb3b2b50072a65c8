//! JSON documents: written pretty-printed with two-space indentation and no trailing newline
//! (upstream `JSON.stringify(v, null, 2)`); read as Absent / Corrupt / Present (A11) — a
//! corrupt document is never mistaken for an empty one.

use crate::files::atomic::Durability;
use crate::files::dir::Dir;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io;

/// The outcome of reading a JSON document (A11).
#[derive(Clone, Debug, PartialEq)]
pub enum ReadDoc<T> {
    /// The file does not exist (`ENOENT`).
    Absent,
    /// The file exists but is not valid JSON or not of the expected shape.
    Corrupt(Corrupt),
    /// The parsed document.
    Present(T),
}

/// The bytes and parse error of a corrupt document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Corrupt {
    /// The file's bytes, untouched.
    pub bytes: Vec<u8>,
    /// The parse error.
    pub error: String,
}

impl<T> ReadDoc<T> {
    /// The document when present.
    pub fn present(self) -> Option<T> {
        match self {
            Self::Present(v) => Some(v),
            _ => None,
        }
    }

    /// Whether the file is absent.
    pub fn is_absent(&self) -> bool {
        matches!(self, Self::Absent)
    }

    /// Maps the present document.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> ReadDoc<U> {
        match self {
            Self::Absent => ReadDoc::Absent,
            Self::Corrupt(c) => ReadDoc::Corrupt(c),
            Self::Present(v) => ReadDoc::Present(f(v)),
        }
    }
}

/// Serializes `value` as two-space pretty JSON without a trailing newline.
pub fn to_pretty_bytes<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    // Serializing our own types into a Vec cannot fail (no non-string map keys are used).
    serde_json::to_vec_pretty(value)
        .unwrap_or_else(|e| format!("{{\"serializationError\":{:?}}}", e.to_string()).into_bytes())
}

/// Parses bytes into a `ReadDoc` (never `Absent`).
pub fn parse_doc<T: DeserializeOwned>(bytes: Vec<u8>) -> ReadDoc<T> {
    match serde_json::from_slice(&bytes) {
        Ok(v) => ReadDoc::Present(v),
        Err(e) => ReadDoc::Corrupt(Corrupt {
            bytes,
            error: e.to_string(),
        }),
    }
}

impl Dir {
    /// Reads the JSON document `name` (no symlink followed). Unreadable files (permission,
    /// a symlink, a directory) are I/O errors, distinct from corrupt contents.
    pub fn read_doc<T: DeserializeOwned>(&self, name: &str) -> io::Result<ReadDoc<T>> {
        Ok(match self.read(name)? {
            None => ReadDoc::Absent,
            Some(bytes) => parse_doc(bytes),
        })
    }

    /// Atomically writes `value` as pretty JSON to `name` (A-rules).
    pub fn write_doc<T: Serialize + ?Sized>(&self, name: &str, value: &T, durability: Durability) -> io::Result<()> {
        self.write(name, &to_pretty_bytes(value), durability)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::atomic::Durability;
    use serde_json::{Value, json};

    #[test]
    fn writes_two_space_pretty_without_trailing_newline() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open(tmp.path()).unwrap();
        dir.write_doc("a.json", &json!({"state": "pending", "version": 1}), Durability::Atomic)
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("a.json")).unwrap(),
            "{\n  \"state\": \"pending\",\n  \"version\": 1\n}"
        );
    }

    #[test]
    fn a11_absent_corrupt_present_are_distinct() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open(tmp.path()).unwrap();
        assert!(dir.read_doc::<Value>("x.json").unwrap().is_absent());
        std::fs::write(tmp.path().join("x.json"), b"not-json").unwrap();
        match dir.read_doc::<Value>("x.json").unwrap() {
            ReadDoc::Corrupt(c) => assert_eq!(c.bytes, b"not-json"),
            other => panic!("{other:?}"),
        }
        std::fs::write(tmp.path().join("x.json"), b"{\"a\":1}\n").unwrap();
        assert_eq!(
            dir.read_doc::<Value>("x.json").unwrap().present(),
            Some(json!({"a": 1})),
            "a trailing newline is accepted"
        );
        std::fs::create_dir(tmp.path().join("d.json")).unwrap();
        assert!(
            dir.read_doc::<Value>("d.json").is_err(),
            "unreadable is an error, not corrupt"
        );
    }
}
