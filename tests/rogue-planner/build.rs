//! Same link settings as the real planner (guest/build.rs), so that the no-op calls of the
//! benchmarks cost what a real call's sandbox costs.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg-cdylib=-zstack-size=131072");
    }
}
