//! Builds the planner component (guest/, for wasm32-wasip2) and embeds it in the host.
//!
//! `cargo build` and `cargo test` need no manual step: this script installs the
//! `wasm32-wasip2` target when it is missing, runs a nested cargo build of the guest in its
//! own target directory (the outer build holds the lock on the main one), and hands the
//! component to the host through `OUT_DIR`. It also builds the test-only `rogue-planner`
//! component, which the host's fault tests load to exercise traps and limits.
//!
//! The runner binaries (`sublaunch-shim`, `sublaunch-validate`) are built the same way and
//! embedded too, so that `cargo run -p sublaunch` and `cargo install` give a `sublaunch` that
//! can launch runs on its own: `cargo run` builds only the package's own binary, and the
//! shim is another package.

use sha2::{Digest, Sha256};
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest_dir
        .parent()
        .expect("host/ lives in the workspace root")
        .to_owned();
    for input in [
        "guest",
        "wit",
        "contract",
        "tests/rogue-planner",
        "shim",
        "Cargo.lock",
        "Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", workspace.join(input).display());
    }
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let target_dir = guest_target_dir(&out_dir);

    println!(
        "cargo:rustc-env=SUBLAUNCH_WASMTIME_VERSION={}",
        locked_version(&workspace, "wasmtime")
    );
    ensure_target_installed();
    build_guests(&workspace, &target_dir);

    let built = target_dir.join(TARGET).join("guest");
    let planner = embed(&built.join("sublaunch_planner.wasm"), &out_dir.join("planner.wasm"));
    println!("cargo:rustc-env=SUBLAUNCH_PLANNER_SHA256={planner}");
    println!(
        "cargo:rustc-env=SUBLAUNCH_PLANNER_WASM_PATH={}",
        built.join("sublaunch_planner.wasm").display()
    );
    println!(
        "cargo:rustc-env=SUBLAUNCH_ROGUE_PLANNER_WASM={}",
        built.join("rogue_planner.wasm").display()
    );

    let runner_dir = build_runner(&workspace, &target_dir.with_file_name("runner"));
    for (binary, var) in [
        ("sublaunch-shim", "SUBLAUNCH_EMBEDDED_SHIM"),
        ("sublaunch-validate", "SUBLAUNCH_EMBEDDED_VALIDATOR"),
    ] {
        let destination = out_dir.join(binary);
        let sha = embed(&runner_dir.join(binary), &destination);
        println!("cargo:rustc-env={var}={}", destination.display());
        println!("cargo:rustc-env={var}_SHA256={sha}");
    }
}

/// Builds the runner binaries for the host target with the outer build's profile (release
/// for `cargo install` and benchmarks, dev otherwise) and returns their directory.
fn build_runner(workspace: &Path, target_dir: &Path) -> PathBuf {
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let mut command = nested_cargo(workspace);
    command
        .args(["build", "--locked", "-p", "sublaunch-shim", "--bins"])
        .args(if release { &["--release"][..] } else { &[][..] })
        .arg("--target-dir")
        .arg(target_dir)
        // The copies are only ever executed: no debug information to carry around.
        .env("CARGO_PROFILE_DEV_DEBUG", "false")
        .env("CARGO_PROFILE_DEV_STRIP", "debuginfo")
        .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo");
    let status = command.status().expect("running the nested cargo build of the runner");
    assert!(status.success(), "building the runner binaries failed ({status})");
    target_dir.join(if release { "release" } else { "debug" })
}

/// `<target>/guest`, beside the outer build's profile directories.
fn guest_target_dir(out_dir: &Path) -> PathBuf {
    if let Some(dir) = env::var_os("SUBLAUNCH_GUEST_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    // OUT_DIR = <target>/[<triple>/]<profile>/build/<package>-<hash>/out
    let cross = env::var("TARGET").ok() != env::var("HOST").ok();
    let target = out_dir.ancestors().nth(if cross { 5 } else { 4 });
    target.expect("OUT_DIR has cargo's layout").join("guest")
}

fn ensure_target_installed() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let libdir = Command::new(&rustc)
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if libdir.is_some_and(|dir| dir.is_dir()) {
        return;
    }
    let status = Command::new("rustup").args(["target", "add", TARGET]).status();
    match status {
        Ok(status) if status.success() => {}
        Ok(status) => panic!("`rustup target add {TARGET}` failed ({status}); install the target and build again"),
        Err(error) => panic!(
            "the {TARGET} target is missing and rustup could not be run ({error}); install the target and build again"
        ),
    }
}

fn build_guests(workspace: &Path, target_dir: &Path) {
    let mut command = nested_cargo(workspace);
    command
        .args(["build", "--locked", "--profile", "guest", "--target", TARGET])
        .args(["-p", "sublaunch-planner", "-p", "rogue-planner"])
        .arg("--target-dir")
        .arg(target_dir);
    let status = command.status().expect("running the nested cargo build of the planner");
    assert!(status.success(), "building the planner component failed ({status})");
}

/// A cargo command in the workspace without the outer build's settings, which belong to the
/// outer build (its target, flags, profile overrides and features), not to the nested one.
fn nested_cargo(workspace: &Path) -> Command {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(workspace);
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "RUSTC_WORKSPACE_WRAPPER",
    ] {
        command.env_remove(var);
    }
    for (key, _) in env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_PROFILE_") || key.starts_with("CARGO_FEATURE_") {
            command.env_remove(key.as_ref());
        }
    }
    command
}

/// Copies a built binary or component into OUT_DIR and returns its SHA-256 (hex).
fn embed(source: &Path, destination: &Path) -> String {
    let bytes = std::fs::read(source).unwrap_or_else(|e| panic!("reading the built binary {}: {e}", source.display()));
    std::fs::write(destination, &bytes).expect("writing the embedded binary into OUT_DIR");
    Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The version of `package` recorded in Cargo.lock (part of the artifact-cache key).
fn locked_version(workspace: &Path, package: &str) -> String {
    let lock = std::fs::read_to_string(workspace.join("Cargo.lock")).expect("reading Cargo.lock");
    let header = format!("name = \"{package}\"\nversion = \"");
    let start = lock.find(&header).expect("the package is in Cargo.lock") + header.len();
    lock[start..].split('"').next().unwrap_or_default().to_owned()
}
