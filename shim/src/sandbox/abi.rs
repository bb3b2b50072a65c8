//! The kernel's Landlock ABI, and (test builds only) a pretended older one, so tests show
//! what a launch does on a kernel that lacks part of the sandbox (rule G32).

/// The variable that makes a test build's runner pretend the kernel offers at most this
/// Landlock ABI (`0`: none).
pub const PRETEND_ABI_VAR: &str = "SUBLAUNCH_SHIM_LANDLOCK_ABI";

/// The Landlock ABI this kernel offers (0: none).
pub fn kernel_abi() -> u32 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only returns
    // a number.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    u32::try_from(version).unwrap_or(0)
}

/// The ABI the sandbox is built for: the kernel's, or less in a test build told to pretend.
pub fn effective() -> u32 {
    let kernel = kernel_abi();
    #[cfg(feature = "test-hooks")]
    if let Some(pretend) = std::env::var(PRETEND_ABI_VAR).ok().and_then(|v| v.parse::<u32>().ok()) {
        return kernel.min(pretend);
    }
    kernel
}

/// The crate's name for ABI `n` (the newest it knows above that).
pub fn to_crate(n: u32) -> landlock::ABI {
    use landlock::ABI;
    match n {
        0 => ABI::Unsupported,
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        6 => ABI::V6,
        _ => ABI::V7,
    }
}
