//! The shim binary is built for the tests that drive it.

#[test]
fn the_binary_is_built() {
    assert!(std::path::Path::new(env!("CARGO_BIN_EXE_sublaunch-shim")).is_file());
}
