//! `sublaunch-shim`: the detached runner.

fn main() {
    std::process::exit(sublaunch_shim::main());
}
