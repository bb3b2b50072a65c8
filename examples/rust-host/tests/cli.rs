//! The example host's command line. (Planning through it is checked against every public
//! vector by the workspace's tests/embedders.rs; this file also makes `cargo test` build the
//! binary those tests run.)

use std::process::Command;

const EXE: &str = env!("CARGO_BIN_EXE_sublaunch-rust-host-example");

#[test]
fn without_a_component_path_it_prints_usage_and_exits_2() {
    let output = Command::new(EXE).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("usage:"));
}

#[test]
fn a_file_that_is_not_a_component_is_refused_with_exit_2() {
    let not_wasm = std::env::current_exe().unwrap(); // this test binary: not a component
    let output = Command::new(EXE).arg(not_wasm).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot load the planner component"));
}
