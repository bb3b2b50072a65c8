//! The execution groups of a run: the configuration's steps in flat order, where consecutive
//! tasks of one parallel group (same `stepIndex`, each with a `taskIndex`) form one group and
//! every other step is a group of its own.

use super::RunnerConfig;

/// A run of consecutive steps executed together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Flat index of the first step.
    pub start: usize,
    /// How many steps.
    pub len: usize,
    /// Whether they are the tasks of a parallel group.
    pub parallel: bool,
}

impl Group {
    /// The flat indices of the group's steps.
    pub fn indices(&self) -> std::ops::Range<usize> {
        self.start..self.start + self.len
    }
}

impl RunnerConfig {
    /// The steps that start first: the first group's (U7: a launch waits for their providers).
    pub fn first_group(&self) -> Option<Group> {
        groups(self).into_iter().next()
    }
}

/// The groups of `cfg`, in order.
pub fn groups(cfg: &RunnerConfig) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    let mut last_key: Option<u32> = None;
    for (index, step) in cfg.steps.iter().enumerate() {
        let key = step.task_index.and(step.step_index);
        match (out.last_mut(), key) {
            (Some(group), Some(k)) if group.parallel && last_key == Some(k) => group.len += 1,
            _ => out.push(Group {
                start: index,
                len: 1,
                parallel: key.is_some(),
            }),
        }
        last_key = key;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::config::StepConfig;

    #[test]
    fn tasks_of_one_step_form_a_group() {
        let step = |s: u32, t: Option<u32>| {
            let mut c = StepConfig::shell("x", "/", Default::default());
            c.set_position(s, t);
            c
        };
        let mut cfg: RunnerConfig = serde_json::from_value(serde_json::json!({
            "configVersion": 1, "id": "r", "steps": [], "resultPath": "/r.json", "cwd": "/", "asyncDir": "/a",
            "runnerProcessInstanceId": "i"
        }))
        .unwrap();
        cfg.steps = vec![
            step(0, None),
            step(1, Some(0)),
            step(1, Some(1)),
            step(2, Some(0)),
            step(3, None),
        ];
        let got: Vec<(usize, usize, bool)> = groups(&cfg).iter().map(|g| (g.start, g.len, g.parallel)).collect();
        assert_eq!(got, [(0, 1, false), (1, 2, true), (3, 1, true), (4, 1, false)]);
    }
}
