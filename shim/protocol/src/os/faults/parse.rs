//! Parsers of `SUBLAUNCH_SHIM_FAULT` and `SUBLAUNCH_HOST_FAULT` (§T), compiled only with the
//! `test-hooks` feature: `<point>:<action>[;<point>:<action>…]`.

use super::{AtStep, HOST_FAULT_VAR, HostAction, HostPoint, SHIM_FAULT_VAR, ShimAction, ShimPoint};
use crate::errors::errno_from_name;
use std::time::Duration;

/// Parses a host fault specification (empty → no faults).
pub fn host_faults(spec: &str) -> Result<Vec<(HostPoint, HostAction)>, String> {
    parse(spec, HOST_FAULT_VAR, HostPoint::ALL, HostPoint::as_str, host_action)
}

/// Parses a shim fault specification (empty → no faults).
pub fn shim_faults(spec: &str) -> Result<Vec<(ShimPoint, ShimAction)>, String> {
    parse(spec, SHIM_FAULT_VAR, ShimPoint::ALL, ShimPoint::as_str, shim_action)
}

fn parse<P: Copy, A>(
    spec: &str,
    variable: &str,
    points: &[P],
    name: fn(P) -> &'static str,
    action: fn(&str) -> Option<A>,
) -> Result<Vec<(P, A)>, String> {
    entries(spec)
        .map(|(entry, point, text)| {
            let error = |why: &str| format!("Invalid {variable} entry '{entry}': {why}.");
            let point = points
                .iter()
                .copied()
                .find(|p| name(*p) == point)
                .ok_or_else(|| error("unknown point"))?;
            Ok((point, action(text).ok_or_else(|| error("unknown action"))?))
        })
        .collect()
}

/// `(entry, point, action)` per non-empty `;`-separated entry; an entry without `:` has an
/// empty (unknown) action.
fn entries(spec: &str) -> impl Iterator<Item = (&str, &str, &str)> {
    spec.split(';')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|entry| match entry.split_once(':') {
            Some((point, action)) => (entry, point.trim(), action.trim()),
            None => (entry, entry, ""),
        })
}

fn parse_ms(text: &str) -> Option<Duration> {
    text.parse::<u64>().ok().map(Duration::from_millis)
}

fn host_action(action: &str) -> Option<HostAction> {
    if action == "corrupt" {
        return Some(HostAction::Corrupt);
    }
    if let Some(ms) = action.strip_prefix("sleep:") {
        return parse_ms(ms).map(HostAction::Sleep);
    }
    let (name, at) = match action.split_once('@') {
        Some((name, "write")) => (name, AtStep::Write),
        Some((name, "fsync")) => (name, AtStep::Fsync),
        Some((name, "rename")) => (name, AtStep::Rename),
        Some((name, "dirfsync")) => (name, AtStep::DirFsync),
        Some(_) => return None,
        None => (action, AtStep::Write),
    };
    errno_from_name(name).map(|errno| HostAction::Errno { errno, at })
}

fn shim_action(action: &str) -> Option<ShimAction> {
    let (verb, arg) = action.split_once(':').map_or((action, None), |(v, a)| (v, Some(a)));
    Some(match (verb, arg) {
        ("exit", Some(code)) => ShimAction::Exit(code.parse().ok()?),
        ("sigkill-self", None) => ShimAction::SigkillSelf,
        ("hang", None) => ShimAction::Hang,
        ("hang-noterm", None) => ShimAction::HangNoterm,
        ("sleep", Some(ms)) => ShimAction::Sleep(parse_ms(ms)?),
        ("token", Some("null")) => ShimAction::Token(None),
        ("token", Some(value)) => ShimAction::Token(Some(value.to_owned())),
        ("state", Some(name)) if !name.is_empty() => ShimAction::State(name.to_owned()),
        ("corrupt", None) => ShimAction::Corrupt,
        ("skip-write", None) => ShimAction::SkipWrite,
        ("doorbell-only", None) => ShimAction::DoorbellOnly,
        ("wallclock", Some(delta)) => ShimAction::Wallclock(delta.strip_prefix('+').unwrap_or(delta).parse().ok()?),
        ("close-doorbell", None) => ShimAction::CloseDoorbell,
        ("no-namespace", None) => ShimAction::NoNamespace,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::io::Errno;

    #[test]
    fn t_host_faults_of_the_fault_matrix_parse() {
        assert_eq!(
            host_faults("status-initial:ENOSPC").unwrap(),
            vec![(
                HostPoint::StatusInitial,
                HostAction::Errno {
                    errno: Errno::NOSPC,
                    at: AtStep::Write
                }
            )]
        );
        assert_eq!(
            host_faults("sidecar:EIO@fsync").unwrap(),
            vec![(
                HostPoint::Sidecar,
                HostAction::Errno {
                    errno: Errno::IO,
                    at: AtStep::Fsync
                }
            )]
        );
        assert_eq!(
            host_faults("status-initial:ENOSPC;startup-failure:ENOSPC;proof:ENOSPC")
                .unwrap()
                .len(),
            3,
            "F10"
        );
        assert_eq!(
            host_faults("logs:sleep:300").unwrap(),
            vec![(HostPoint::Logs, HostAction::Sleep(Duration::from_millis(300)))]
        );
        assert_eq!(
            host_faults("cfg:corrupt; proceed:EACCES@rename ;").unwrap(),
            vec![
                (HostPoint::Cfg, HostAction::Corrupt),
                (
                    HostPoint::Proceed,
                    HostAction::Errno {
                        errno: Errno::ACCESS,
                        at: AtStep::Rename
                    }
                ),
            ]
        );
        assert_eq!(host_faults("").unwrap(), vec![]);
    }

    #[test]
    fn t_host_fault_errors_name_the_entry() {
        assert_eq!(
            host_faults("nowhere:EIO").unwrap_err(),
            "Invalid SUBLAUNCH_HOST_FAULT entry 'nowhere:EIO': unknown point."
        );
        assert_eq!(
            host_faults("cfg:EWHAT").unwrap_err(),
            "Invalid SUBLAUNCH_HOST_FAULT entry 'cfg:EWHAT': unknown action."
        );
        assert!(host_faults("cfg:EIO@close").is_err());
        assert!(host_faults("cfg").is_err());
    }

    #[test]
    fn t_shim_faults_of_the_fault_matrix_parse() {
        let cases: Vec<(&str, ShimPoint, ShimAction)> = vec![
            ("start:exit:9", ShimPoint::Start, ShimAction::Exit(9)),
            (
                "before-commit:sigkill-self",
                ShimPoint::BeforeCommit,
                ShimAction::SigkillSelf,
            ),
            ("before-ready:hang", ShimPoint::BeforeReady, ShimAction::Hang),
            (
                "before-ready:hang-noterm",
                ShimPoint::BeforeReady,
                ShimAction::HangNoterm,
            ),
            (
                "before-exit:sleep:300",
                ShimPoint::BeforeExit,
                ShimAction::Sleep(Duration::from_millis(300)),
            ),
            (
                "before-ready:token:null",
                ShimPoint::BeforeReady,
                ShimAction::Token(None),
            ),
            (
                "after-ready:token:wrong",
                ShimPoint::AfterReady,
                ShimAction::Token(Some("wrong".into())),
            ),
            (
                "after-ready:state:confirmed",
                ShimPoint::AfterReady,
                ShimAction::State("confirmed".into()),
            ),
            ("after-ready:corrupt", ShimPoint::AfterReady, ShimAction::Corrupt),
            ("after-ready:skip-write", ShimPoint::AfterReady, ShimAction::SkipWrite),
            (
                "before-ready:doorbell-only",
                ShimPoint::BeforeReady,
                ShimAction::DoorbellOnly,
            ),
            (
                "after-commit:wallclock:+3600000",
                ShimPoint::AfterCommit,
                ShimAction::Wallclock(3_600_000),
            ),
            (
                "after-commit:wallclock:-5",
                ShimPoint::AfterCommit,
                ShimAction::Wallclock(-5),
            ),
            (
                "after-confirmed:close-doorbell",
                ShimPoint::AfterConfirmed,
                ShimAction::CloseDoorbell,
            ),
            (
                "after-acknowledged:exit:42",
                ShimPoint::AfterAcknowledged,
                ShimAction::Exit(42),
            ),
        ];
        for (spec, point, action) in cases {
            assert_eq!(shim_faults(spec).unwrap(), vec![(point, action)], "{spec}");
        }
        assert!(shim_faults("start:exit").is_err());
        assert!(shim_faults("start:explode").is_err());
        assert!(shim_faults("somewhere:hang").is_err());
    }
}
