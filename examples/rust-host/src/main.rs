//! Plans a sublaunch launch from any Rust program: the planner WebAssembly component, run by
//! wasmtime, with bindings generated from `wit/planner.wit` by `bindgen!`. It uses neither
//! the `sublaunch` host crate nor `sublaunch-contract`: the WIT is the whole contract.
//!
//! ```sh
//! sublaunch component --out planner.wasm
//! cargo build --workspace     # builds this example too, sharing the workspace's wasmtime
//! target/debug/sublaunch-rust-host-example planner.wasm < request.json
//! ```
//!
//! reads one PlanRequest (JSON) on standard input and prints exactly what `sublaunch plan`
//! prints: the LaunchPlan (exit 0) or `{"error": {"code", "message"}}` (exit 1).
//!
//! The component may import only `wasi:io` and `wasi:cli` (what Rust's std uses for panic
//! messages); anything else is refused at load. Its WASI context has no arguments, no
//! environment, no preopened directories, a closed stdin, and a stderr kept in memory for
//! error messages. Each call gets a fresh `Store` with a fuel budget (its deadline) and a
//! memory cap; a trap, the deadline or the cap prints a `planner-fault` error.
//!
//! `--batch` (used by the tests) plans one request per input line and writes one line per
//! request: `{"exit": 0|1, "output": "<what the single mode prints>"}`.

use std::io::{BufRead, Read, Write};
use std::process::ExitCode;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store, StoreLimits, StoreLimitsBuilder, Trap};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

wasmtime::component::bindgen!({
    world: "planner-component",
    path: "../../wit/planner.wit",
});

use exports::sublaunch::planner::types::ErrorCode;

/// Fuel (roughly, WebAssembly instructions) per call: a few seconds of planning.
const FUEL: u64 = 4_000_000_000;
/// Cap on the guest's linear memory.
const MEMORY_BYTES: usize = 256 * 1024 * 1024;

/// What one call's store holds: the (empty) WASI context, the captured stderr, the limits.
struct Sandbox {
    wasi: WasiCtx,
    table: ResourceTable,
    stderr: MemoryOutputPipe,
    limits: StoreLimits,
}

impl WasiView for Sandbox {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// The compiled component, linked once; every call instantiates it in a fresh store.
struct Planner {
    engine: Engine,
    pre: PlannerComponentPre<Sandbox>,
}

impl Planner {
    fn load(path: &str) -> wasmtime::Result<Self> {
        let mut config = Config::new();
        config.consume_fuel(true);
        let engine = Engine::new(&config)?;
        let component = Component::from_file(&engine, path)?;
        for (name, _) in component.component_type().imports(&engine) {
            if !(name.starts_with("wasi:io/") || name.starts_with("wasi:cli/")) {
                wasmtime::bail!("the planner component imports {name}, which this host does not grant");
            }
        }
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        let pre = PlannerComponentPre::new(linker.instantiate_pre(&component)?)?;
        Ok(Self { engine, pre })
    }

    /// Plans one PlanRequest JSON text; returns the exit code and the text to print.
    fn plan_json(&self, request: &str) -> (u8, String) {
        let stderr = MemoryOutputPipe::new(64 * 1024);
        let sandbox = Sandbox {
            wasi: WasiCtx::builder().stderr(stderr.clone()).build(),
            table: ResourceTable::new(),
            stderr,
            limits: StoreLimitsBuilder::new().memory_size(MEMORY_BYTES).build(),
        };
        let mut store = Store::new(&self.engine, sandbox);
        store.limiter(|sandbox| &mut sandbox.limits);
        let outcome = store
            .set_fuel(FUEL)
            .and_then(|()| self.pre.instantiate(&mut store))
            .and_then(|planner| planner.sublaunch_planner_planner().call_plan_json(&mut store, request));
        match outcome {
            Ok(Ok(plan)) => (0, plan),
            Ok(Err(error)) => (1, error_document(&wit_name(error.code), &error.message)),
            Err(fault) => (1, error_document("planner-fault", &fault_message(&fault, store.data()))),
        }
    }
}

/// Says which limit stopped the guest, or what the trap was, plus what it wrote to stderr.
fn fault_message(fault: &wasmtime::Error, sandbox: &Sandbox) -> String {
    let stderr = String::from_utf8_lossy(&sandbox.stderr.contents()).trim().to_owned();
    let mut message = if fault.downcast_ref::<Trap>() == Some(&Trap::OutOfFuel) {
        format!("The planner exceeded its deadline: it used its whole fuel budget of {FUEL} units.")
    } else if stderr.contains("memory allocation of") {
        // What std prints when the store refuses to grow memory.
        format!(
            "The planner reached its memory cap of {} MiB.",
            MEMORY_BYTES / (1024 * 1024)
        )
    } else {
        format!("The planner trapped: {}.", fault.root_cause())
    };
    if !stderr.is_empty() {
        message.push_str(&format!(" Guest stderr: {stderr}"));
    }
    message
}

/// The WIT name of an error code (`ErrorCode::InvalidRequest` → `invalid-request`).
/// bindgen gives an enum a `name()` only when it is itself a function's error type.
fn wit_name(code: ErrorCode) -> String {
    let debug = format!("{code:?}");
    let case = debug.rsplit("::").next().unwrap_or(&debug);
    let mut name = String::new();
    for (i, c) in case.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('-');
        }
        name.push(c.to_ascii_lowercase());
    }
    name
}

/// `sublaunch plan`'s error output: two-space pretty JSON.
fn error_document(code: &str, message: &str) -> String {
    let document = serde_json::json!({ "error": { "code": code, "message": message } });
    serde_json::to_string_pretty(&document).expect("a JSON value serialises")
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, batch) = match args.as_slice() {
        [path] => (path, false),
        [path, flag] if flag == "--batch" => (path, true),
        _ => {
            eprintln!("usage: sublaunch-rust-host-example PLANNER_WASM [--batch] < request.json");
            return ExitCode::from(2);
        }
    };
    let planner = match Planner::load(path) {
        Ok(planner) => planner,
        Err(error) => {
            eprintln!("cannot load the planner component {path}: {error:?}");
            return ExitCode::from(2);
        }
    };
    let mut stdout = std::io::stdout().lock();
    if batch {
        for line in std::io::stdin().lock().lines() {
            let line = line.expect("standard input is readable");
            if line.trim().is_empty() {
                continue;
            }
            let (exit, output) = planner.plan_json(&line);
            let result = serde_json::json!({ "exit": exit, "output": output });
            writeln!(stdout, "{result}").expect("standard output is writable");
            stdout.flush().expect("standard output is writable");
        }
        return ExitCode::SUCCESS;
    }
    let mut request = Vec::new();
    if let Err(error) = std::io::stdin().read_to_end(&mut request) {
        eprintln!("cannot read the request from standard input: {error}");
        return ExitCode::from(2);
    }
    let (exit, output) = planner.plan_json(&String::from_utf8_lossy(&request));
    writeln!(stdout, "{output}").expect("standard output is writable");
    ExitCode::from(exit)
}
