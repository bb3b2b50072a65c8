//! The step's side of its acceptance contract (G76, G77, G79): the section of the prompt that
//! asks the agent for its report, the report taken out of the answer, the agent's claims
//! weighed against what git shows, and the evidence status they add up to. The verification
//! commands run above, in the supervisor (`supervise::verify`).

use crate::step::end::StepEnd;
use serde_json::Value;
use sublaunch_protocol::acceptance::report::{self, AcceptanceReport, CommandResult, CriterionStatus};
use sublaunch_protocol::records::acceptance::{
    AcceptanceRecord, CheckStatus, EvidenceStatus, ReviewStatus, RuntimeCheck, TreeEvidence, VerifyStatus,
};
use sublaunch_protocol::records::config::{AcceptanceLevel, AcceptancePlan, EvidenceKind};

/// What the task gets when the contract asks for a report: the criteria, the evidence, the
/// commands the runner will run itself, and the report's shape.
pub fn prompt_section(plan: &AcceptancePlan) -> String {
    let mut lines = vec![
        String::new(),
        "## Acceptance".to_owned(),
        format!(
            "Your work is accepted at level '{}' only with the evidence below.",
            plan.level
        ),
    ];
    if !plan.criteria.is_empty() {
        lines.push("Criteria:".to_owned());
        lines.extend(plan.criteria.iter().map(|c| format!("- {}: {}", c.id, c.must)));
    }
    if !plan.evidence.is_empty() {
        let kinds: Vec<&str> = plan.evidence.iter().map(|k| k.as_str()).collect();
        lines.push(format!("Evidence required: {}.", kinds.join(", ")));
    }
    if !plan.verify.is_empty() {
        lines.push("After you finish, the runner itself runs (your own claims about them do not count):".to_owned());
        lines.extend(plan.verify.iter().map(|v| format!("- {}: {}", v.id, v.command)));
    }
    if plan.level >= AcceptanceLevel::Checked {
        lines.push("Changed files and staged files are checked against git: leave nothing staged.".to_owned());
    }
    lines.push(
        "End your answer with a fenced block tagged acceptance-report holding this JSON (empty lists where nothing applies; criteria statuses: satisfied, not-satisfied, not-applicable; command results: passed, failed, not-run):".to_owned(),
    );
    lines.push("```acceptance-report".to_owned());
    lines.push(report::prompt_shape());
    lines.push("```".to_owned());
    lines.join("\n")
}

/// A new record of `plan`, before anything was found.
pub fn new_record(plan: &AcceptancePlan) -> AcceptanceRecord {
    AcceptanceRecord {
        level: plan.level,
        explicit: plan.explicit,
        origin: plan.origin.clone(),
        status: EvidenceStatus::Claimed,
        problems: Vec::new(),
        report: None,
        report_problems: Vec::new(),
        checks: Vec::new(),
        tree: None,
        verify: Vec::new(),
        review: None,
    }
}

/// The fenced report out of the agent's answer (G76): the fences go from the answer (the
/// output log keeps them), before anything else reads it.
pub fn take_fenced(end: &mut StepEnd) -> Option<Result<AcceptanceReport, Vec<report::Diagnostic>>> {
    let extracted = report::extract(&end.output);
    end.output = extracted.output;
    extracted.report
}

/// G76: the agent's report — from its structured value (`acceptanceReport`, taken out of it)
/// or the fenced one — checked against the contract.
pub fn take_report(
    end: &mut StepEnd,
    plan: &AcceptancePlan,
    fenced: Option<Result<AcceptanceReport, Vec<report::Diagnostic>>>,
) {
    let record = end.acceptance.get_or_insert_with(|| new_record(plan));
    let from_structured = end
        .structured
        .as_mut()
        .and_then(Value::as_object_mut)
        .and_then(|object| object.remove("acceptanceReport"));
    let parsed = match (from_structured, fenced) {
        (Some(value), _) => Some(report::parse_value(&value)),
        (None, found) => found,
    };
    if !plan.report {
        return;
    }
    match parsed {
        None => fail(record, "report", "the agent gave no acceptance report".to_owned()),
        Some(Err(problems)) => {
            let first = problems.first().map(ToString::to_string).unwrap_or_default();
            fail(record, "report", format!("the acceptance report is malformed: {first}"));
            record.report_problems = problems;
        }
        Some(Ok(report)) => {
            pass(record, "report", "the agent's acceptance report parses".to_owned());
            judge_claims(record, plan, &report);
            record.report = Some(report);
        }
    }
}

/// The report answers every criterion as satisfied (or not applicable) and carries every
/// kind of evidence asked for.
fn judge_claims(record: &mut AcceptanceRecord, plan: &AcceptancePlan, report: &AcceptanceReport) {
    for criterion in &plan.criteria {
        let claim = report
            .criteria_satisfied
            .iter()
            .find(|c| c.id.as_deref() == Some(criterion.id.as_str()));
        let id = format!("criterion {}", criterion.id);
        match claim.map(|c| c.status) {
            Some(CriterionStatus::Satisfied | CriterionStatus::NotApplicable) => {
                pass(record, &id, "claimed".to_owned());
            }
            Some(CriterionStatus::NotSatisfied) => {
                fail(
                    record,
                    &id,
                    format!("the agent says '{}' is not satisfied", criterion.must),
                );
            }
            None => fail(record, &id, format!("the report does not answer '{}'", criterion.must)),
        }
    }
    let missing: Vec<&str> = plan
        .evidence
        .iter()
        .filter(|kind| !carries(report, **kind))
        .map(|kind| kind.as_str())
        .collect();
    if missing.is_empty() {
        if !plan.evidence.is_empty() {
            pass(record, "evidence", "every kind asked for is in the report".to_owned());
        }
    } else {
        fail(
            record,
            "evidence",
            format!("the report lacks evidence: {}", missing.join(", ")),
        );
    }
}

/// Whether `report` carries evidence of `kind` (G72; an explicit empty list of files or tests says
/// none apply, and counts).
fn carries(report: &AcceptanceReport, kind: EvidenceKind) -> bool {
    let listed = |list: &Option<Vec<String>>| list.as_ref().is_some_and(|l| !l.is_empty());
    let text = |text: &Option<String>| text.as_ref().is_some_and(|t| !t.trim().is_empty());
    match kind {
        EvidenceKind::ChangedFiles => report.changed_files.is_some(),
        EvidenceKind::TestsAdded => report.tests_added_or_updated.is_some(),
        EvidenceKind::CommandsRun => report.commands_run.as_ref().is_some_and(|c| !c.is_empty()),
        EvidenceKind::ValidationOutput => listed(&report.validation_output),
        EvidenceKind::ResidualRisks => listed(&report.residual_risks),
        EvidenceKind::NoStagedFiles => report.no_staged_files == Some(true),
        EvidenceKind::DiffSummary => text(&report.diff_summary),
        EvidenceKind::ReviewFindings => report.review_findings.is_some(),
        EvidenceKind::ManualNotes => text(&report.manual_notes) || text(&report.notes),
    }
}

/// G77: the agent's claims against what git shows of the step's work (`None`: the step's
/// directory is not in a git repository, `Err`: git could not say).
pub fn judge_tree(record: &mut AcceptanceRecord, plan: &AcceptancePlan, tree: Result<Option<TreeEvidence>, String>) {
    let tree = match tree {
        Ok(Some(tree)) => tree,
        Ok(None) => {
            fail(
                record,
                "git",
                "the step's directory is not in a git repository, so its work cannot be checked (use level attested)"
                    .to_owned(),
            );
            return;
        }
        Err(why) => {
            fail(
                record,
                "git",
                format!("git could not tell what the step changed: {why}"),
            );
            return;
        }
    };
    let report = record.report.clone().unwrap_or_default();
    if let Some(claimed) = &report.changed_files {
        let unchanged: Vec<&str> = claimed
            .iter()
            .map(|f| f.trim_start_matches("./"))
            .filter(|f| {
                !tree
                    .changed_files
                    .iter()
                    .any(|c| c == f || c.ends_with(&format!("/{f}")))
            })
            .collect();
        if unchanged.is_empty() {
            pass(
                record,
                "changed-files",
                format!("{} changed file(s), as reported", tree.changed_files.len()),
            );
        } else {
            fail(
                record,
                "changed-files",
                format!("the report names files git shows unchanged: {}", unchanged.join(", ")),
            );
        }
    }
    if plan.evidence.contains(&EvidenceKind::NoStagedFiles) {
        if tree.staged_files.is_empty() {
            pass(record, "no-staged-files", "nothing is staged".to_owned());
        } else {
            fail(
                record,
                "no-staged-files",
                format!("files are left staged: {}", tree.staged_files.join(", ")),
            );
        }
    }
    if plan.evidence.contains(&EvidenceKind::TestsAdded) {
        if tree.tests_touched.is_empty() {
            fail(
                record,
                "tests-added",
                "git shows no test file added or changed".to_owned(),
            );
        } else {
            pass(
                record,
                "tests-added",
                format!("tests changed: {}", tree.tests_touched.join(", ")),
            );
        }
    }
    record.tree = Some(tree);
}

/// After the verification commands: a report that says a command passed which failed when
/// the runner ran it is a false claim (G78).
pub fn judge_command_claims(record: &mut AcceptanceRecord) {
    let Some(report) = record.report.clone() else { return };
    let failed: Vec<String> = record
        .verify
        .iter()
        .filter(|v| v.status != VerifyStatus::Passed)
        .filter(|v| {
            report
                .commands_run
                .iter()
                .flatten()
                .any(|claim| claim.result == CommandResult::Passed && claim.command.trim() == v.command.trim())
        })
        .map(|v| v.command.clone())
        .collect();
    for command in failed {
        fail(
            record,
            "commands-run",
            format!("the report says '{command}' passed; it did not when the runner ran it"),
        );
    }
}

/// G79: the status the findings add up to.
pub fn conclude(record: &mut AcceptanceRecord, plan: &AcceptancePlan) {
    let failed = record.checks.iter().any(|c| c.status == CheckStatus::Failed)
        || record.verify.iter().any(|v| v.status != VerifyStatus::Passed);
    record.status = if failed {
        EvidenceStatus::Rejected
    } else if plan.level == AcceptanceLevel::Verified && !record.verify.is_empty() {
        EvidenceStatus::Verified
    } else if plan.level >= AcceptanceLevel::Checked && record.tree.is_some() {
        EvidenceStatus::Checked
    } else if record.report.is_some() {
        EvidenceStatus::Attested
    } else {
        EvidenceStatus::Claimed
    };
    for verify in record.verify.iter().filter(|v| v.status != VerifyStatus::Passed) {
        let how = match (verify.status, verify.exit_code, verify.signal.as_deref()) {
            (VerifyStatus::TimedOut, ..) => "ran out of time".to_owned(),
            (VerifyStatus::Stopped, ..) => "was stopped with the run".to_owned(),
            (VerifyStatus::NotStarted, ..) => format!("could not start: {}", verify.error.clone().unwrap_or_default()),
            (VerifyStatus::Failed, ..) if verify.error.is_some() => {
                format!("exited 0, but: {}", verify.error.clone().unwrap_or_default())
            }
            (_, Some(code), _) => format!("failed (exit {code})"),
            (_, None, Some(signal)) => format!("was killed by {signal}"),
            _ => "failed".to_owned(),
        };
        let problem = format!("{} '{}' {how}", verify.id, verify.command);
        if !record.problems.contains(&problem) {
            record.problems.push(problem);
        }
    }
}

/// The reviewer's prompt (G81): what it reviews (the step's task and the contract's
/// criteria), the step's diff (`cut`: it was longer and was cut), that it changes nothing,
/// and the block it must end with.
pub fn review_prompt(plan: &AcceptancePlan, task: &str, diff: &str, cut: bool) -> String {
    let mut lines = vec![
        "# Review".to_owned(),
        "Review the work another agent did for the task below. Read the diff and, where it helps, the files in this directory; change nothing.".to_owned(),
        String::new(),
        "## The task it was given".to_owned(),
        task.to_owned(),
        String::new(),
        "## What the work must meet".to_owned(),
    ];
    if plan.criteria.is_empty() {
        lines.push("- it does what the task asks, correctly and completely".to_owned());
    } else {
        lines.extend(plan.criteria.iter().map(|c| format!("- {}: {}", c.id, c.must)));
    }
    lines.push(String::new());
    lines.push("## The diff of its work (from where it started, uncommitted and untracked files included)".to_owned());
    if diff.trim().is_empty() {
        lines.push("(git shows no change)".to_owned());
    } else {
        lines.push("```diff".to_owned());
        lines.push(diff.trim_end().to_owned());
        lines.push("```".to_owned());
    }
    if cut {
        lines.push("(The diff was longer and was cut here; read the files for the rest.)".to_owned());
    }
    lines.push(String::new());
    lines.push(
        "End your answer with a fenced block tagged review-findings holding this JSON: one entry per finding (severity blocking: the work must not be accepted as it is; minor: worth fixing, not blocking), file optional, and the verdict accept or reject:".to_owned(),
    );
    lines.push(sublaunch_protocol::acceptance::review::prompt_shape());
    lines.join("\n")
}

/// The evidence status with the review (G81), once the level's own is known: a review that
/// passed makes the work `reviewed`; a required one that rejected it, or could not give a
/// verdict, rejects it; a required one that never ran leaves it `review-required`. A review
/// that is not required is only shown.
pub fn judge_review(record: &mut AcceptanceRecord, plan: &AcceptancePlan) {
    let Some(gate) = &plan.review else { return };
    if record.status == EvidenceStatus::Rejected {
        return;
    }
    match &record.review {
        Some(review) if review.status == ReviewStatus::Passed => record.status = EvidenceStatus::Reviewed,
        // Stopped with the run: the review was asked for and has not run to its end.
        Some(review) if review.status == ReviewStatus::Stopped && gate.required => {
            record.status = EvidenceStatus::ReviewRequired;
            let problem = review.summary();
            if !record.problems.contains(&problem) {
                record.problems.push(problem);
            }
        }
        Some(review) if gate.required => {
            record.status = EvidenceStatus::Rejected;
            let problem = review.summary();
            if !record.problems.contains(&problem) {
                record.problems.push(problem);
            }
        }
        Some(_) => {}
        None if gate.required => {
            record.status = EvidenceStatus::ReviewRequired;
            let problem = format!("the required review by {} was not run", gate.agent);
            if !record.problems.contains(&problem) {
                record.problems.push(problem);
            }
        }
        None => {}
    }
}

/// The failure text of a step whose explicit contract was not met.
pub fn failure(record: &AcceptanceRecord, label: &str) -> String {
    let mut text = format!(
        "The work of {label} was not accepted ({} asked, {}): {}.",
        record.level,
        record.status.as_str(),
        record.problems.join("; ")
    );
    if let Some(tail) = record
        .verify
        .iter()
        .find(|v| v.status != VerifyStatus::Passed && !v.output_tail.is_empty())
        .map(|v| &v.output_tail)
    {
        text = format!("{text}\n\n{tail}");
    }
    text
}

fn pass(record: &mut AcceptanceRecord, id: &str, message: String) {
    record.checks.push(RuntimeCheck {
        id: id.to_owned(),
        status: CheckStatus::Passed,
        message,
    });
}

fn fail(record: &mut AcceptanceRecord, id: &str, message: String) {
    record.problems.push(message.clone());
    record.checks.push(RuntimeCheck {
        id: id.to_owned(),
        status: CheckStatus::Failed,
        message,
    });
}
