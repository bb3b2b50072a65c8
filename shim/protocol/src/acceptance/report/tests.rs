use super::*;
use serde_json::json;
use std::time::{Duration, Instant};

fn full() -> Value {
    json!({
        "criteriaSatisfied": [{"id": "c1", "status": "satisfied", "evidence": "test passes"}],
        "changedFiles": ["src/a.rs"],
        "testsAddedOrUpdated": ["tests/a.rs"],
        "commandsRun": [{"command": "cargo test", "result": "passed", "summary": "12 passed"}],
        "validationOutput": ["12 passed"],
        "residualRisks": ["none"],
        "noStagedFiles": true,
        "diffSummary": "one fix",
        "reviewFindings": [],
        "manualNotes": "none"
    })
}

fn expected() -> AcceptanceReport {
    AcceptanceReport {
        criteria_satisfied: vec![CriterionClaim {
            id: Some("c1".into()),
            status: CriterionStatus::Satisfied,
            evidence: "test passes".into(),
        }],
        changed_files: Some(vec!["src/a.rs".into()]),
        tests_added_or_updated: Some(vec!["tests/a.rs".into()]),
        commands_run: Some(vec![CommandClaim {
            command: "cargo test".into(),
            result: CommandResult::Passed,
            summary: "12 passed".into(),
        }]),
        validation_output: Some(vec!["12 passed".into()]),
        residual_risks: Some(vec!["none".into()]),
        no_staged_files: Some(true),
        diff_summary: Some("one fix".into()),
        review_findings: Some(vec![]),
        manual_notes: Some("none".into()),
        notes: None,
    }
}

fn problems(value: Value) -> Vec<Diagnostic> {
    match parse_value(&value) {
        Ok(report) => panic!("expected problems, parsed {report:?}"),
        Err(problems) => problems,
    }
}

fn paths(value: Value) -> Vec<String> {
    problems(value).into_iter().map(|d| d.path).collect()
}

fn fenced(body: &str) -> String {
    format!("```acceptance-report\n{body}\n```\n")
}

const SMALL: &str = r#"{"criteriaSatisfied":[{"id":"c1","status":"satisfied","evidence":"ok"}]}"#;

fn small() -> AcceptanceReport {
    AcceptanceReport {
        criteria_satisfied: vec![CriterionClaim {
            id: Some("c1".into()),
            status: CriterionStatus::Satisfied,
            evidence: "ok".into(),
        }],
        ..AcceptanceReport::default()
    }
}

#[test]
fn a_valid_report_parses_and_serializes_back() {
    let report = parse_value(&full()).unwrap();
    assert_eq!(report, expected());
    assert_eq!(serde_json::to_value(&report).unwrap(), full());
    let back: AcceptanceReport = serde_json::from_value(full()).unwrap();
    assert_eq!(back, report);
}

#[test]
fn every_snake_case_key_is_read() {
    let value = json!({
        "criteria_satisfied": [{"id": "c1", "status": "satisfied", "evidence": "test passes"}],
        "changed_files": ["src/a.rs"],
        "tests_added_or_updated": ["tests/a.rs"],
        "commands_run": [{"command": "cargo test", "result": "passed", "summary": "12 passed"}],
        "validation_output": ["12 passed"],
        "residual_risks": ["none"],
        "no_staged_files": true,
        "diff_summary": "one fix",
        "review_findings": [],
        "manual_notes": "none"
    });
    assert_eq!(parse_value(&value).unwrap(), expected());
}

#[test]
fn a_key_given_in_both_spellings_is_a_problem() {
    let found = problems(json!({"changedFiles": ["a"], "changed_files": ["b"]}));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].path, "$.changedFiles");
    assert!(found[0].message.contains("twice"), "{}", found[0]);
}

#[test]
fn one_wrapper_object_is_unwrapped() {
    for key in ["acceptanceReport", "acceptance_report"] {
        let mut wrapper = Map::new();
        wrapper.insert(key.to_owned(), full());
        assert_eq!(parse_value(&Value::Object(wrapper)).unwrap(), expected(), "{key}");
    }
    // Only one: a wrapper in a wrapper is an unknown key of the report.
    let twice = json!({"acceptanceReport": {"acceptanceReport": full()}});
    assert_eq!(paths(twice), ["$.acceptanceReport"]);
}

#[test]
fn string_booleans_are_read() {
    for (word, flag) in [("true", true), ("FALSE", false), (" True ", true), ("false", false)] {
        let report = parse_value(&json!({"noStagedFiles": word})).unwrap();
        assert_eq!(report.no_staged_files, Some(flag), "{word}");
    }
    let found = problems(json!({"noStagedFiles": "maybe"}));
    assert_eq!(found[0].path, "$.noStagedFiles");
    assert!(found[0].message.contains("'maybe'"), "{}", found[0]);
}

#[test]
fn one_string_is_a_list_of_one() {
    let report = parse_value(&json!({
        "changedFiles": "src/a.rs",
        "testsAddedOrUpdated": "tests/a.rs",
        "validationOutput": "ok",
        "residualRisks": "none",
        "reviewFindings": "clean"
    }))
    .unwrap();
    assert_eq!(report.changed_files, Some(vec!["src/a.rs".to_owned()]));
    assert_eq!(report.tests_added_or_updated, Some(vec!["tests/a.rs".to_owned()]));
    assert_eq!(report.validation_output, Some(vec!["ok".to_owned()]));
    assert_eq!(report.residual_risks, Some(vec!["none".to_owned()]));
    assert_eq!(report.review_findings, Some(vec!["clean".to_owned()]));
}

#[test]
fn one_object_is_a_list_of_one() {
    let report = parse_value(&json!({
        "criteriaSatisfied": {"id": "c1", "status": "met", "evidence": "e"},
        "commandsRun": {"command": "make", "result": "ok"}
    }))
    .unwrap();
    assert_eq!(report.criteria_satisfied.len(), 1);
    assert_eq!(report.commands_run.map(|c| c.len()), Some(1));
    let found = problems(json!({"commandsRun": {"command": "make", "result": "meh"}}));
    assert_eq!(found[0].path, "$.commandsRun.result");
}

#[test]
fn empty_strings_are_dropped() {
    let report = parse_value(&json!({
        "changedFiles": ["", "src/a.rs", "  "],
        "residualRisks": "",
        "manualNotes": "",
        "notes": " ",
        "diffSummary": "",
        "validationOutput": null
    }))
    .unwrap();
    assert_eq!(report.changed_files, Some(vec!["src/a.rs".to_owned()]));
    assert_eq!(report.residual_risks, Some(vec![]));
    assert_eq!(report.manual_notes, None);
    assert_eq!(report.notes, None);
    assert_eq!(report.diff_summary, None);
    assert_eq!(report.validation_output, None);
    assert_eq!(
        serde_json::to_value(&report).unwrap(),
        json!({"changedFiles": ["src/a.rs"], "residualRisks": []})
    );
}

#[test]
fn synonyms_are_read_whatever_their_case_and_separators() {
    let statuses = [
        ("satisfied", CriterionStatus::Satisfied),
        ("Met", CriterionStatus::Satisfied),
        ("done", CriterionStatus::Satisfied),
        ("PASS", CriterionStatus::Satisfied),
        ("passed", CriterionStatus::Satisfied),
        ("yes", CriterionStatus::Satisfied),
        ("not_satisfied", CriterionStatus::NotSatisfied),
        ("Not Satisfied", CriterionStatus::NotSatisfied),
        ("unsatisfied", CriterionStatus::NotSatisfied),
        ("unmet", CriterionStatus::NotSatisfied),
        ("fail", CriterionStatus::NotSatisfied),
        ("failed", CriterionStatus::NotSatisfied),
        ("no", CriterionStatus::NotSatisfied),
        ("not-applicable", CriterionStatus::NotApplicable),
        ("NOT_APPLICABLE", CriterionStatus::NotApplicable),
        ("N/A", CriterionStatus::NotApplicable),
        ("na", CriterionStatus::NotApplicable),
        (" skipped ", CriterionStatus::NotApplicable),
    ];
    for (word, status) in statuses {
        let value = json!({"criteriaSatisfied": [{"status": word, "evidence": "e"}]});
        let report = parse_value(&value).unwrap();
        assert_eq!(report.criteria_satisfied[0].status, status, "{word}");
        assert_eq!(report.criteria_satisfied[0].id, None);
    }
    let results = [
        ("passed", CommandResult::Passed),
        ("Pass", CommandResult::Passed),
        ("OK", CommandResult::Passed),
        ("success", CommandResult::Passed),
        ("succeeded", CommandResult::Passed),
        ("failed", CommandResult::Failed),
        ("fail", CommandResult::Failed),
        ("Error", CommandResult::Failed),
        ("failure", CommandResult::Failed),
        ("not-run", CommandResult::NotRun),
        ("not_run", CommandResult::NotRun),
        ("Not Run", CommandResult::NotRun),
        ("skipped", CommandResult::NotRun),
        ("notrun", CommandResult::NotRun),
    ];
    for (word, result) in results {
        let value = json!({"commandsRun": [{"command": "make", "result": word}]});
        let report = parse_value(&value).unwrap();
        let claim = &report.commands_run.unwrap()[0];
        assert_eq!(claim.result, result, "{word}");
        assert_eq!(claim.summary, "");
    }
}

#[test]
fn ids_are_kept_verbatim() {
    let value = json!({"criteriaSatisfied": [{"id": " Criterion-1 ", "status": "met", "evidence": "e"}]});
    let report = parse_value(&value).unwrap();
    assert_eq!(report.criteria_satisfied[0].id.as_deref(), Some(" Criterion-1 "));
}

#[test]
fn an_unknown_key_is_named() {
    let found = problems(json!({"changedFiles": [], "confidence": "high"}));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].path, "$.confidence");
    assert!(found[0].message.contains("criteriaSatisfied"), "{}", found[0]);
    assert_eq!(paths(json!({"odd key": 1})), ["$['odd key']"]);
    assert_eq!(
        paths(json!({"commandsRun": [{"command": "make", "result": "ok", "exitCode": 0}]})),
        ["$.commandsRun[0].exitCode"]
    );
    assert_eq!(
        paths(json!({"criteriaSatisfied": [{"status": "met", "evidence": "e", "why": "x"}]})),
        ["$.criteriaSatisfied[0].why"]
    );
}

#[test]
fn an_unknown_enum_value_names_the_accepted_ones() {
    let found = problems(json!({"commandsRun": [
        {"command": "a", "result": "passed"},
        {"command": "b", "result": "maybe"}
    ]}));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].path, "$.commandsRun[1].result");
    assert!(found[0].message.contains("'maybe'"), "{}", found[0]);
    assert!(found[0].message.contains("passed, failed or not-run"), "{}", found[0]);
    assert_eq!(
        found[0].to_string(),
        format!("$.commandsRun[1].result: {}", found[0].message)
    );
    let found = problems(json!({"criteriaSatisfied": [{"status": "kind of", "evidence": "e"}]}));
    assert_eq!(found[0].path, "$.criteriaSatisfied[0].status");
    assert!(
        found[0].message.contains("satisfied, not-satisfied or not-applicable"),
        "{}",
        found[0]
    );
}

#[test]
fn a_wrong_type_is_named_at_its_path() {
    let cases = [
        (json!({"changedFiles": 3}), "$.changedFiles", "a number"),
        (json!({"changedFiles": ["a", 3]}), "$.changedFiles[1]", "a number"),
        (json!({"noStagedFiles": 1}), "$.noStagedFiles", "a number"),
        (json!({"diffSummary": ["a"]}), "$.diffSummary", "a list"),
        (json!({"criteriaSatisfied": "all"}), "$.criteriaSatisfied", "a string"),
        (
            json!({"criteriaSatisfied": ["all"]}),
            "$.criteriaSatisfied[0]",
            "a string",
        ),
        (
            json!({"criteriaSatisfied": [{"id": 1, "status": "met", "evidence": "e"}]}),
            "$.criteriaSatisfied[0].id",
            "a number",
        ),
        (
            json!({"criteriaSatisfied": [{"status": true, "evidence": "e"}]}),
            "$.criteriaSatisfied[0].status",
            "a boolean",
        ),
        (
            json!({"commandsRun": [{"command": "a", "result": "ok", "summary": {}}]}),
            "$.commandsRun[0].summary",
            "an object",
        ),
    ];
    for (value, path, kind) in cases {
        let found = problems(value);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, path);
        assert!(found[0].message.ends_with(kind), "{}", found[0]);
    }
}

#[test]
fn the_top_level_must_be_an_object() {
    for value in [json!([]), json!("report"), json!(null), json!(1)] {
        let found = problems(value);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, "$");
    }
    assert_eq!(paths(json!({"acceptanceReport": []})), ["$"]);
}

#[test]
fn a_missing_field_is_named() {
    assert_eq!(
        paths(json!({"criteriaSatisfied": [{"id": "c1", "evidence": "e"}]})),
        ["$.criteriaSatisfied[0].status"]
    );
    assert_eq!(
        paths(json!({"criteriaSatisfied": [{"id": "c1", "status": "met"}]})),
        ["$.criteriaSatisfied[0].evidence"]
    );
    assert_eq!(
        paths(json!({"commandsRun": [{"result": "ok"}]})),
        ["$.commandsRun[0].command"]
    );
    assert_eq!(
        paths(json!({"commandsRun": [{"command": "make", "result": null}]})),
        ["$.commandsRun[0].result"]
    );
    let found = problems(json!({"criteriaSatisfied": [{}]}));
    assert!(found[0].message.contains("missing"), "{}", found[0]);
}

#[test]
fn every_problem_is_reported() {
    let found = paths(json!({
        "criteria_satisfied": [
            {"id": "c1", "status": "met", "evidence": "e"},
            {"id": "c2", "status": "perhaps"},
            7
        ],
        "changedFiles": [1, "a", false],
        "noStagedFiles": "sure",
        "commandsRun": [{"command": "make", "result": "ok", "exit": 0}],
        "mood": "good"
    }));
    let mut sorted = found.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "$.changedFiles[0]",
            "$.changedFiles[2]",
            "$.commandsRun[0].exit",
            "$.criteriaSatisfied[1].evidence",
            "$.criteriaSatisfied[1].status",
            "$.criteriaSatisfied[2]",
            "$.mood",
            "$.noStagedFiles",
        ]
    );
}

#[test]
fn a_flood_of_problems_is_counted_not_listed() {
    let flood: Vec<u32> = (0..100_000).collect();
    let found = problems(json!({"changedFiles": flood}));
    assert_eq!(found.len(), MAX_DIAGNOSTICS + 1);
    assert!(
        found[MAX_DIAGNOSTICS].message.contains("99950 more"),
        "{:?}",
        found.last()
    );
    let long_key = "k".repeat(10_000);
    let found = problems(json!({ long_key: 1 }));
    assert!(found[0].path.len() < 300, "{}", found[0].path);
}

#[test]
fn the_prompt_shape_is_a_report_with_one_entry_per_list() {
    let shape = prompt_shape();
    assert!(shape.starts_with("{\n  \"criteriaSatisfied\": [\n    {\n"), "{shape}");
    let value: Value = serde_json::from_str(&shape).unwrap();
    let report = parse_value(&value).unwrap();
    assert_eq!(report.criteria_satisfied.len(), 1);
    assert_eq!(report.commands_run.as_ref().map(Vec::len), Some(1));
    for list in [
        &report.changed_files,
        &report.tests_added_or_updated,
        &report.validation_output,
        &report.residual_risks,
        &report.review_findings,
    ] {
        assert_eq!(list.as_ref().map(Vec::len), Some(1));
    }
    assert_eq!(report.no_staged_files, Some(true));
    assert!(report.diff_summary.is_some() && report.manual_notes.is_some());
}

#[test]
fn extract_takes_the_block_out_of_the_answer() {
    let text = "Fixed the bug.\n\n```acceptance-report\n{\"criteriaSatisfied\":[{\"id\":\"c1\",\"status\":\"satisfied\",\"evidence\":\"test passes\"}],\n \"changedFiles\":[\"src/a.rs\"],\"testsAddedOrUpdated\":[\"tests/a.rs\"],\n \"commandsRun\":[{\"command\":\"cargo test\",\"result\":\"passed\",\"summary\":\"12 passed\"}],\n \"validationOutput\":[\"12 passed\"],\"residualRisks\":[\"none\"],\"noStagedFiles\":true,\n \"diffSummary\":\"one fix\",\"reviewFindings\":[],\"manualNotes\":\"none\"}\n```\n";
    let extracted = extract(text);
    assert_eq!(extracted.output, "Fixed the bug.");
    assert_eq!(extracted.report, Some(Ok(expected())));
}

#[test]
fn removal_leaves_one_blank_line_between_paragraphs() {
    let text = format!("Before.\n\n{}\nAfter.\n", fenced(SMALL));
    let extracted = extract(&text);
    assert_eq!(extracted.output, "Before.\n\nAfter.\n");
    let text = format!("Before.\n{}After.", fenced(SMALL));
    assert_eq!(extract(&text).output, "Before.\nAfter.");
    let text = format!("\n{}\n\nAfter.\n", fenced(SMALL));
    assert_eq!(extract(&text).output, "After.\n");
    assert_eq!(extract(&fenced(SMALL)).output, "");
}

#[test]
fn the_info_string_is_matched_by_its_first_word_in_any_case() {
    for info in [
        "acceptance-report",
        "Acceptance_Report",
        "ACCEPTANCE-REPORT json",
        "  acceptance-report  ",
    ] {
        let text = format!("Done.\n```{info}\n{SMALL}\n```");
        let extracted = extract(&text);
        assert_eq!(extracted.output, "Done.", "{info}");
        assert_eq!(extracted.report, Some(Ok(small())), "{info}");
    }
    for info in ["acceptance-reports", "json acceptance-report", "acceptance"] {
        let text = format!("Done.\n```{info}\n{SMALL}\n```");
        assert_eq!(
            extract(&text),
            Extracted {
                output: text.clone(),
                report: None
            },
            "{info}"
        );
    }
}

#[test]
fn a_body_that_is_not_json_is_one_problem_at_the_root() {
    let extracted = extract("Done.\n```acceptance-report\n{\"changedFiles\": [,]}\n```\n");
    assert_eq!(extracted.output, "Done.");
    let found = extracted.report.unwrap().unwrap_err();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].path, "$");
    assert!(found[0].message.contains("not JSON"), "{}", found[0]);
    assert!(found[0].message.contains("line 1 column 19"), "{}", found[0]);
    let empty = extract("```acceptance-report\n```").report.unwrap().unwrap_err();
    assert!(empty[0].message.contains("not JSON"), "{}", empty[0]);
}

#[test]
fn an_unclosed_block_runs_to_the_end_and_is_a_problem() {
    let text = format!("Done.\n\n```acceptance-report\n{SMALL}\n\nmore words\n");
    let extracted = extract(&text);
    assert_eq!(extracted.output, "Done.");
    let found = extracted.report.unwrap().unwrap_err();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].path, "$");
    assert!(found[0].message.contains("not closed"), "{}", found[0]);
    // A shorter fence does not close a longer one.
    let text = format!("Done.\n````acceptance-report\n{SMALL}\n```\n");
    assert!(
        extract(&text).report.unwrap().unwrap_err()[0]
            .message
            .contains("not closed")
    );
}

#[test]
fn the_last_of_two_blocks_wins_and_both_go() {
    let first = r#"{"changedFiles": ["first"]}"#;
    let text = format!("One.\n\n{}\nTwo.\n\n{}", fenced(first), fenced(SMALL));
    let extracted = extract(&text);
    assert_eq!(extracted.output, "One.\n\nTwo.");
    assert_eq!(extracted.report, Some(Ok(small())));
    // A broken last block is not replaced by an earlier good one.
    let text = format!("{}{}", fenced(SMALL), fenced("nope"));
    assert!(extract(&text).report.unwrap().is_err());
}

#[test]
fn tilde_and_longer_fences_work() {
    let text = format!("Done.\n~~~acceptance-report\n{SMALL}\n~~~\n");
    let extracted = extract(&text);
    assert_eq!(extracted.output, "Done.");
    assert_eq!(extracted.report, Some(Ok(small())));
    // A longer fence keeps a shorter one (and one of the other char) inside as content,
    // and is closed by a yet longer one, indented up to three spaces.
    let body = "{\"notes\": \"a\n```\n~~~~~\nb\"}";
    let text = format!("Done.\n   `````acceptance-report\n{body}\n   ``````  \nAfter.");
    let extracted = extract(&text);
    assert_eq!(extracted.output, "Done.\nAfter.");
    // The raw newlines inside the string make the body invalid JSON, which proves it ran
    // up to the right fence.
    assert!(
        extracted.report.unwrap().unwrap_err()[0]
            .message
            .contains("control character")
    );
    let text = format!("Done.\n````acceptance-report\n{SMALL}\n````\n");
    assert_eq!(extract(&text).report, Some(Ok(small())));
}

#[test]
fn a_fence_indented_four_spaces_is_not_a_fence() {
    let text = format!("Done.\n    ```acceptance-report\n    {SMALL}\n    ```\n");
    assert_eq!(extract(&text).report, None);
    assert_eq!(extract(&text).output, text);
}

#[test]
fn other_code_blocks_are_left_alone() {
    let json_block = format!("Look:\n\n```json\n{SMALL}\n```\n\nDone.\n");
    assert_eq!(
        extract(&json_block),
        Extracted {
            output: json_block.clone(),
            report: None
        }
    );
    let text = format!("{json_block}\n{}", fenced(SMALL));
    let extracted = extract(&text);
    assert_eq!(extracted.output, json_block.trim_end());
    assert_eq!(extracted.report, Some(Ok(small())));
    // A report fence shown inside another code block is that block's text.
    let shown = format!("Asked for:\n````markdown\n{}````\n", fenced(SMALL));
    assert_eq!(extract(&shown).report, None);
    assert_eq!(extract(&shown).output, shown);
}

#[test]
fn without_a_block_the_output_is_unchanged() {
    for text in [
        "",
        "\n\n",
        "Done.\n\n\n",
        "  trailing spaces  \r\n\r\n",
        "```\nunclosed code\n",
        "acceptance-report\n{}\n",
    ] {
        let extracted = extract(text);
        assert_eq!(extracted.output, text);
        assert_eq!(extracted.report, None);
    }
}

#[test]
fn non_ascii_text_around_the_block_is_kept() {
    let text = format!("Готово ✅ — 修正しました。\r\n\r\n```acceptance-report\r\n{SMALL}\r\n```\r\n\r\nß 🎉\r\n");
    let extracted = extract(&text);
    assert_eq!(extracted.output, "Готово ✅ — 修正しました。\r\n\r\nß 🎉\r\n");
    assert_eq!(extracted.report, Some(Ok(small())));
    let value = json!({"criteriaSatisfied": [{"status": "ébahi", "evidence": "é"}], "ключ": 1});
    let found = problems(value);
    assert!(found.iter().any(|d| d.path == "$['ключ']"), "{found:?}");
    assert!(found.iter().any(|d| d.message.contains("'ébahi'")), "{found:?}");
}

#[test]
fn a_megabyte_of_garbage_does_not_panic_and_is_quick() {
    // A deterministic mix of fence runs, multi-byte chars, brackets and line endings.
    let pieces = [
        "```",
        "~~~",
        "`",
        "acceptance-report",
        "ACCEPTANCE_REPORT",
        "\n",
        "\r\n",
        "   ",
        "{",
        "[",
        "\"",
        "é",
        "🎉",
        "\u{0}",
        "}",
        "]",
        "\t",
        "x",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut garbage = String::new();
    while garbage.len() < 1 << 20 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        garbage.push_str(pieces[(state % pieces.len() as u64) as usize]);
    }
    let nested = format!("```acceptance-report\n{}\n```\n", "[".repeat(1 << 20));
    let one_line = "`".repeat(1 << 20);
    let many_blocks = "```acceptance-report\n{}\n```\n".repeat(40_000);
    let started = Instant::now();
    for text in [&garbage, &nested, &one_line, &many_blocks] {
        let extracted = extract(text);
        assert!(extracted.output.len() <= text.len());
    }
    assert!(extract(&nested).report.unwrap().is_err());
    assert_eq!(extract(&many_blocks).output, "");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}
