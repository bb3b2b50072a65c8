//! The cap of active runs from the environment: `SUBLAUNCH_MAX_ACTIVE` wins over the settings'
//! `subagents.maxActive`.

use std::num::NonZeroU32;

/// The variable that caps the runs active at once under the state root.
pub const MAX_ACTIVE_VAR: &str = "SUBLAUNCH_MAX_ACTIVE";

/// `SUBLAUNCH_MAX_ACTIVE` when set (an empty value counts as unset); anything but a whole
/// number above 0 is an error naming the variable.
pub fn max_active(env: &sublaunch::Environment) -> Result<Option<NonZeroU32>, String> {
    let Some(raw) = env.var(MAX_ACTIVE_VAR).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let text = raw.to_string_lossy();
    text.trim()
        .parse::<u32>()
        .ok()
        .and_then(NonZeroU32::new)
        .map(Some)
        .ok_or_else(|| {
            format!("{MAX_ACTIVE_VAR} must be a whole number above 0 (the most runs active at once), not '{text}'")
        })
}
