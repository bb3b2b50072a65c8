//! R1/R2: where the runner configuration comes from and how it is validated.
//!
//! `sublaunch-shim <cfgPath>`, else `$SUBLAUNCH_RUNNER_CONFIG`, else the configuration on stdin
//! until EOF; `sublaunch-shim --scheduled <cfgPath>` is a cluster job's start (J7). A file is unlinked right after it is read (it holds tokens), valid or not.
//! Validation is `sublaunch_protocol::records::config::parse_runner_config` (R2 messages, no value
//! echoed); the caller turns an error into exit 2 with `Subagent runner error: …`.

use std::io::Read;
use std::path::PathBuf;
use sublaunch_protocol::records::config::{ConfigError, RunnerConfig, parse_runner_config, read_runner_config_file};

/// The environment variable naming the configuration file (R1).
pub const RUNNER_CONFIG_ENV: &str = "SUBLAUNCH_RUNNER_CONFIG";

/// Where the configuration is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A file (argument or environment), unlinked after reading.
    File(PathBuf),
    /// Standard input until EOF.
    Stdin,
    /// A cluster job's start: the run is committed, its records exist (J7).
    Scheduled(PathBuf),
}

impl Source {
    /// Whether this start is a cluster job's.
    pub fn is_scheduled(&self) -> bool {
        matches!(self, Self::Scheduled(_))
    }
}

/// R1: the first argument, else `$SUBLAUNCH_RUNNER_CONFIG`, else stdin.
pub fn source(args: &[std::ffi::OsString], env: Option<std::ffi::OsString>) -> Source {
    if args.get(1).is_some_and(|a| a == crate::run::cluster::SCHEDULED_ARG) {
        return Source::Scheduled(args.get(2).map(PathBuf::from).unwrap_or_default());
    }
    match args.get(1) {
        Some(path) if !path.is_empty() => Source::File(PathBuf::from(path)),
        _ => match env.filter(|v| !v.is_empty()) {
            Some(path) => Source::File(PathBuf::from(path)),
            None => Source::Stdin,
        },
    }
}

/// Reads and validates the configuration (R1, R2).
pub fn read(source: &Source) -> Result<RunnerConfig, ConfigError> {
    match source {
        Source::File(path) | Source::Scheduled(path) => read_runner_config_file(path),
        Source::Stdin => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut bytes)
                .map_err(|e| ConfigError(format!("Invalid runner configuration: cannot read standard input: {e}")))?;
            parse_runner_config(&bytes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    #[test]
    fn r1_argument_then_environment_then_stdin() {
        let args = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            source(&args(&["shim", "/a.json"]), Some("/b.json".into())),
            Source::File("/a.json".into())
        );
        assert_eq!(
            source(&args(&["shim"]), Some("/b.json".into())),
            Source::File("/b.json".into())
        );
        assert_eq!(source(&args(&["shim"]), Some("".into())), Source::Stdin);
        assert_eq!(source(&args(&["shim"]), None), Source::Stdin);
        assert_eq!(
            source(&args(&["shim", "--scheduled", "/c.json"]), Some("/b.json".into())),
            Source::Scheduled("/c.json".into())
        );
    }
}
