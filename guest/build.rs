//! Link settings of the planner component.
//!
//! A wasm32 Rust program reserves 1 MiB of linear memory for its shadow stack by default.
//! The planner needs far less (its deepest path, JSON nested 128 levels, stays under 64 KiB),
//! and every plan call starts from a fresh instance whose used memory the host must zero, so
//! a 128 KiB stack keeps each call's memory — and its cost — small.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg-cdylib=-zstack-size=131072");
    }
}
