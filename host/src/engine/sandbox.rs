//! What the planner component is granted: nothing but a place for std to write panic
//! messages.
//!
//! The linker holds `wasi:io` streams and the `wasi:cli` interfaces that Rust's standard
//! library imports on `wasm32-wasip2`, backed by a context with no environment, no arguments,
//! an empty stdin and in-memory stdout/stderr. Filesystem, sockets, clocks, random and http
//! are not linked at all: a component that imports them is refused at load (see
//! [`check_imports`]), and any other import traps when called.

use anyhow::bail;
use wasmtime::component::{Component, HasData, Linker, ResourceTable};
use wasmtime::{Engine, ResourceLimiter};
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::p2::bindings::{cli, sync};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// WASI interfaces a planner component must not import: it computes, and nothing else.
pub const FORBIDDEN_IMPORTS: [&str; 5] = [
    "wasi:filesystem/",
    "wasi:sockets/",
    "wasi:random/",
    "wasi:clocks/",
    "wasi:http/",
];

/// How much guest stdout/stderr is kept for error messages.
const CAPTURE_BYTES: usize = 64 * 1024;

/// Per-call state of one planner store.
pub struct Sandbox {
    wasi: WasiCtx,
    table: ResourceTable,
    stderr: MemoryOutputPipe,
    pub(crate) memory: MemoryCap,
}

impl Sandbox {
    /// A fresh sandbox whose linear memories may grow to `memory_bytes` in total.
    pub fn new(memory_bytes: usize) -> Self {
        let stderr = MemoryOutputPipe::new(CAPTURE_BYTES);
        let wasi = WasiCtx::builder()
            .stdout(MemoryOutputPipe::new(CAPTURE_BYTES))
            .stderr(stderr.clone())
            .build();
        Self {
            wasi,
            table: ResourceTable::new(),
            stderr,
            memory: MemoryCap::new(memory_bytes),
        }
    }

    /// What the guest wrote to stderr (lossy UTF-8, trimmed).
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.contents()).trim().to_owned()
    }
}

impl WasiView for Sandbox {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

struct Streams;

fn table(sandbox: &mut Sandbox) -> &mut ResourceTable {
    &mut sandbox.table
}

impl HasData for Streams {
    type Data<'a> = &'a mut ResourceTable;
}

/// The linker every planner instance is created from.
pub fn linker(engine: &Engine) -> anyhow::Result<Linker<Sandbox>> {
    let mut linker = Linker::new(engine);
    let l = &mut linker;
    let to_anyhow = |e: wasmtime::Error| anyhow::anyhow!("{e:?}");
    sync::io::error::add_to_linker::<Sandbox, Streams>(l, table).map_err(to_anyhow)?;
    sync::io::poll::add_to_linker::<Sandbox, Streams>(l, table).map_err(to_anyhow)?;
    sync::io::streams::add_to_linker::<Sandbox, Streams>(l, table).map_err(to_anyhow)?;
    cli::exit::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli).map_err(to_anyhow)?;
    cli::environment::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli).map_err(to_anyhow)?;
    cli::stdin::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli).map_err(to_anyhow)?;
    cli::stdout::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli).map_err(to_anyhow)?;
    cli::stderr::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli).map_err(to_anyhow)?;
    cli::terminal_input::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli).map_err(to_anyhow)?;
    cli::terminal_output::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli).map_err(to_anyhow)?;
    cli::terminal_stdin::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli).map_err(to_anyhow)?;
    cli::terminal_stdout::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli).map_err(to_anyhow)?;
    cli::terminal_stderr::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli).map_err(to_anyhow)?;
    Ok(linker)
}

/// The names of the interfaces a component imports, e.g. `wasi:io/streams@0.2.6`.
pub fn imports(engine: &Engine, component: &Component) -> Vec<String> {
    component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// Refuses a component that imports a capability the sandbox never grants.
pub fn check_imports(engine: &Engine, component: &Component) -> anyhow::Result<()> {
    let forbidden: Vec<String> = imports(engine, component)
        .into_iter()
        .filter(|name| FORBIDDEN_IMPORTS.iter().any(|prefix| name.starts_with(prefix)))
        .collect();
    if !forbidden.is_empty() {
        bail!(
            "the planner component imports {}, which the planner sandbox does not grant",
            forbidden.join(", ")
        );
    }
    Ok(())
}

/// A cap on the size of each of a store's linear memories that remembers being hit, so a
/// resulting trap can be reported as the memory cap rather than as a guest bug.
pub struct MemoryCap {
    limit: usize,
    hit: bool,
}

impl MemoryCap {
    fn new(limit: usize) -> Self {
        Self { limit, hit: false }
    }

    /// The cap in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether the guest asked for more than the cap.
    pub fn was_hit(&self) -> bool {
        self.hit
    }
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.limit {
            self.hit = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 1 << 20)
    }
}
