//! Working directories of children (rules L5–L9).

use crate::children::Child;
use crate::paths;
use sublaunch_contract::{Mode, PlanRequest};

/// The request-level inputs every child's working directory derives from.
pub struct Workdirs<'r> {
    request_cwd: &'r str,
    mode: Mode,
    launch_machine: bool,
    launch_cwd: Option<&'r str>,
}

/// Where an unplaced child runs: its cwd (L7) and requested cwd (L9).
#[derive(Debug, PartialEq, Eq)]
pub struct LocalDir {
    /// The resolved local directory.
    pub cwd: String,
    /// The directory as requested.
    pub requested_cwd: String,
}

impl<'r> Workdirs<'r> {
    /// Reads the request-level inputs (the shape check has made every cwd a string).
    pub fn new(request: &'r PlanRequest) -> Self {
        let launch = request.launch.as_ref();
        Self {
            request_cwd: &request.cwd,
            mode: request.mode,
            launch_machine: launch.is_some_and(|l| l.machine.is_some()),
            launch_cwd: launch.and_then(|l| l.cwd.as_ref()).and_then(|c| c.as_text()),
        }
    }

    /// Whether `launch.cwd` names a directory on the machine for a child that is (or is not)
    /// placed (rule L6).
    fn launch_cwd_is_remote(&self, placed: bool) -> bool {
        self.launch_machine || (self.mode == Mode::Single && placed)
    }

    /// The remote cwd input of a placed child (rule L5): its own cwd, else the launch's
    /// remote cwd.
    pub fn remote_input<'c>(&self, child: &Child<'c>) -> Option<&'c str>
    where
        'r: 'c,
    {
        let own = child.fields.cwd.and_then(|c| c.as_text());
        own.or_else(|| self.launch_cwd.filter(|_| self.launch_cwd_is_remote(true)))
    }

    /// The local directory of an unplaced child (rules L6, L7, L9).
    pub fn local(&self, child: &Child<'_>) -> LocalDir {
        let base = if self.launch_cwd_is_remote(false) {
            self.request_cwd.to_owned()
        } else {
            paths::resolve_local(self.request_cwd, self.launch_cwd)
        };
        let own = child.fields.cwd.and_then(|c| c.as_text());
        let cwd = paths::resolve_local(&base, own);
        let single_launch_cwd = self
            .launch_cwd
            .filter(|_| self.mode == Mode::Single && !self.launch_machine);
        let requested_cwd = own
            .filter(|c| !c.is_empty())
            .or(single_launch_cwd.filter(|c| !c.is_empty()))
            .map_or_else(|| cwd.clone(), str::to_owned);
        LocalDir { cwd, requested_cwd }
    }
}
