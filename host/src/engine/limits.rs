//! What one plan call may use: the guest's memory cap and its fuel deadline, in one place.

/// Resource limits of one plan call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Cap on the guest's linear memory, in bytes.
    pub memory_bytes: usize,
    /// Fuel (roughly, WebAssembly instructions) one call may use: the call's deadline.
    pub fuel: u64,
}

impl Default for Limits {
    /// 256 MiB and 4·10⁹ units of fuel (a few seconds): far above what a 16 MiB request with
    /// a 10 000-entry registry needs.
    fn default() -> Self {
        Self {
            memory_bytes: 256 * 1024 * 1024,
            fuel: 4_000_000_000,
        }
    }
}
