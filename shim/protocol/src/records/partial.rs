//! `<run>/partial-<n>.json`: the text step `n`'s agent had produced, saved by the runner while
//! the step runs (D2), so that a run whose runner died with it — killed, or the machine went
//! down — still keeps what its agent said. The step's end puts the text in the result and
//! removes the file.

use crate::files::atomic::Durability;
use crate::files::dir::Dir;
use crate::files::doc::ReadDoc;
use serde::{Deserialize, Serialize};
use std::io;

/// The saved text of one step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartialOutput {
    /// Always 1.
    pub version: u32,
    /// The step (flat index).
    pub step: usize,
    /// What the agent had said.
    pub text: String,
}

/// `partial-<n>.json`.
pub fn file_name(step: usize) -> String {
    format!("partial-{step}.json")
}

/// Saves step `step`'s text (durable: it is for when everything else died).
pub fn save(run: &Dir, step: usize, text: &str) -> io::Result<()> {
    let doc = PartialOutput {
        version: 1,
        step,
        text: text.to_owned(),
    };
    run.write_doc(&file_name(step), &doc, Durability::Durable)
}

/// Step `step`'s saved text, when there is one.
pub fn read(run: &Dir, step: usize) -> Option<String> {
    match run.read_doc::<PartialOutput>(&file_name(step)) {
        Ok(ReadDoc::Present(doc)) if doc.step == step => Some(doc.text),
        _ => None,
    }
}

/// Removes step `step`'s saved text (its end recorded it).
pub fn discard(run: &Dir, step: usize) -> io::Result<()> {
    run.remove(&file_name(step))
}
