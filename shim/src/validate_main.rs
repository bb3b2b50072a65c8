//! `sublaunch-validate`: validates one step's structured output for the shim (see
//! `sublaunch_shim::step::validator`). Reads `{"schema", "text"}` on stdin, writes the verdict on
//! stdout.

use std::io::{Read, Write};

fn main() {
    let mut request = Vec::new();
    if std::io::stdin().read_to_end(&mut request).is_err() {
        std::process::exit(2);
    }
    let verdict = sublaunch_shim::step::validator::verdict(&request);
    let mut out = std::io::stdout().lock();
    if serde_json::to_writer(&mut out, &verdict).is_err() || out.flush().is_err() {
        std::process::exit(2);
    }
}
