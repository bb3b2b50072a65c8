//! The working directory of a placed child on its machine (rules P11, P12, Q3, Q4, Q6).

use crate::{jsstr, paths};
use sublaunch_contract::{ErrorCode, PlanError};

/// Resolves the remote cwd candidate (P11). `input` is the child's remote cwd input (L5),
/// `root` the settings root (P10), `machine_name` the display name for the no-root message.
/// A remote-absolute input is used as given; anything else is joined under the root (a
/// relative path may climb out of it, Q3; `~user/x` is relative, Q6). Without a root only a
/// remote-absolute input works (`machine-no-root`).
pub fn resolve(input: Option<&str>, root: Option<&str>, machine_name: &str) -> Result<String, PlanError> {
    let input = input.map(jsstr::trim).unwrap_or_default();
    if !input.is_empty() && paths::is_remote_absolute(input) {
        return Ok(input.to_owned());
    }
    match root {
        Some(root) if input.is_empty() => Ok(root.to_owned()),
        Some(root) => Ok(paths::join(root, input)),
        None => Err(PlanError::new(
            ErrorCode::MachineNoRoot,
            format!(
                "Machine '{machine_name}' has no project directory: set subagents.machines.{machine_name}.cwd in settings, \
                 or pass an absolute cwd on that machine (/… or ~/…)."
            ),
        )),
    }
}

/// Validates the resolved candidate and returns the placed cwd (P12): TRIM(candidate) must be
/// remote-absolute and free of control characters; trailing slashes are removed (`//` → `/`,
/// P-I3). Absolute paths are not otherwise normalised (Q4).
pub fn validate(candidate: &str, selector: &str) -> Result<String, PlanError> {
    let cwd = jsstr::trim(candidate);
    if !paths::is_remote_absolute(cwd) {
        return Err(PlanError::new(
            ErrorCode::InvalidRemoteCwd,
            format!(
                "The working directory on machine '{selector}' must be an absolute path (/…, ~ or ~/…); it resolved to {}.",
                jsstr::json_quote(cwd)
            ),
        ));
    }
    if jsstr::has_control(cwd) {
        return Err(PlanError::new(
            ErrorCode::InvalidRemoteCwd,
            format!(
                "The working directory on machine '{selector}' contains control characters: {}.",
                jsstr::json_quote(cwd)
            ),
        ));
    }
    Ok(paths::strip_trailing_slashes(cwd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(input: Option<&str>, root: Option<&str>) -> Result<String, PlanError> {
        validate(&resolve(input, root, "workmac")?, "workmac")
    }

    #[test]
    fn p11_remote_absolute_input_needs_no_root() {
        assert_eq!(placed(Some("/srv/other"), None), Ok("/srv/other".into()));
        assert_eq!(placed(Some(" ~/x/ "), None), Ok("~/x".into()));
        assert_eq!(placed(Some("~"), Some("/r")), Ok("~".into()));
        assert_eq!(placed(Some("/srv//x/./y"), Some("/r")), Ok("/srv//x/./y".into()), "Q4");
    }

    #[test]
    fn p11_relative_input_joins_the_root() {
        let root = Some("/home/nico/proj");
        assert_eq!(
            placed(Some("packages/api"), root),
            Ok("/home/nico/proj/packages/api".into())
        );
        assert_eq!(placed(Some("../shared/lib"), root), Ok("/home/nico/shared/lib".into()));
        assert_eq!(placed(Some("../../../../etc"), root), Ok("/etc".into()), "Q3");
        assert_eq!(placed(Some("a/"), root), Ok("/home/nico/proj/a".into()));
        assert_eq!(placed(Some("~user/x"), Some("~")), Ok("~/~user/x".into()), "Q6");
    }

    #[test]
    fn p11_absent_or_blank_input_uses_the_root_itself() {
        assert_eq!(placed(None, Some("/r")), Ok("/r".into()));
        assert_eq!(placed(Some("  "), Some("~/p")), Ok("~/p".into()));
        assert_eq!(placed(Some(""), Some("/")), Ok("/".into()));
    }

    #[test]
    fn p11_without_a_root_fails_closed() {
        for input in [None, Some(""), Some("packages/api"), Some("~user/x"), Some("..")] {
            let error = resolve(input, None, "workmac").expect_err("no root");
            assert_eq!(error.code, ErrorCode::MachineNoRoot);
            assert!(error.message.contains("subagents.machines.workmac.cwd"));
        }
    }

    #[test]
    fn p12_a_join_that_leaves_the_tilde_root_is_refused() {
        let error = placed(Some("../.."), Some("~/proj")).expect_err("refused");
        assert_eq!(error.code, ErrorCode::InvalidRemoteCwd);
        assert!(
            error.message.contains("'workmac'")
                && error.message.contains("absolute")
                && error.message.contains("\".\"")
        );
        assert!(placed(Some(".."), Some("~")).is_err());
    }

    #[test]
    fn p12_control_characters_are_refused() {
        for input in ["/srv/a\u{1}b", "sub\u{7F}dir", "a\nb"] {
            let error = placed(Some(input), Some("/r")).expect_err("refused");
            assert_eq!(error.code, ErrorCode::InvalidRemoteCwd);
            assert!(error.message.contains("'workmac'") && error.message.contains("control characters"));
        }
    }

    #[test]
    fn p12_slash_only_paths_become_root_p_i3() {
        assert_eq!(placed(Some("//"), None), Ok("/".into()));
        assert_eq!(placed(Some("///"), None), Ok("/".into()));
        assert_eq!(placed(Some("~/"), None), Ok("~".into()));
    }
}
