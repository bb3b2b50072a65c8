//! Choosing the saved machine a selector names (rule P6).

use super::catalog::{Catalog, Machine};
use sublaunch_contract::{ErrorCode, PlanError};

/// How many candidate ids an ambiguity message lists before summarising the rest.
const LISTED_CANDIDATES: usize = 10;

/// Selects the one machine the selector R names (P6): an exact id match wins (the first
/// entry with that id); otherwise every entry labelled R, disabled ones included, is a
/// candidate. Several candidates are ambiguous, none is not found, a disabled one is refused.
pub fn select<'c>(catalog: &'c Catalog, selector: &str, location: &str) -> Result<&'c Machine, PlanError> {
    let candidates: Vec<&Machine> = match catalog.first_with_id(selector) {
        Some(machine) => vec![machine],
        None => catalog.with_label(selector).collect(),
    };
    match candidates.as_slice() {
        [] => Err(not_found(catalog, selector, location)),
        [machine] if !machine.enabled => Err(PlanError::new(
            ErrorCode::MachineDisabled,
            format!(
                "Saved Herdr machine '{selector}' (wanted by {location}) is disabled; enable it with herdr machine enable {}.",
                machine.id
            ),
        )),
        [machine] => Ok(machine),
        several => Err(ambiguous(several, selector, location)),
    }
}

fn not_found(catalog: &Catalog, selector: &str, location: &str) -> PlanError {
    let enabled: Vec<&str> = catalog
        .machines()
        .iter()
        .filter(|m| m.enabled)
        .map(Machine::display_name)
        .collect();
    let saved = if enabled.is_empty() {
        "none".to_owned()
    } else {
        enabled.join(", ")
    };
    PlanError::new(
        ErrorCode::MachineNotFound,
        format!(
            "No saved Herdr machine matches '{selector}' (not found; wanted by {location}). Saved machines: {saved}. \
             Register one with herdr machine add <target> --label <name>."
        ),
    )
}

fn ambiguous(candidates: &[&Machine], selector: &str, location: &str) -> PlanError {
    let ids: Vec<&str> = candidates
        .iter()
        .take(LISTED_CANDIDATES)
        .map(|m| m.id.as_str())
        .collect();
    let rest = candidates.len().saturating_sub(LISTED_CANDIDATES);
    let more = if rest > 0 {
        format!(" and {rest} more")
    } else {
        String::new()
    };
    PlanError::new(
        ErrorCode::MachineAmbiguous,
        format!(
            "Saved Herdr machine '{selector}' (wanted by {location}) is ambiguous: {} saved machines carry that label (ids {}{more}); select one by its profile id.",
            candidates.len(),
            ids.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const CATALOG: &str = r#"[
        {"id": "w1", "label": "workmac", "target": "h1"},
        {"id": "d1", "label": "dup", "target": "d-a"},
        {"id": "d2", "label": "dup", "target": "d-b"},
        {"id": "o1", "label": "off", "target": "o", "enabled": false},
        {"id": "n1", "target": "n"},
        {"id": "x1", "label": "d1", "target": "x"},
        {"id": "half", "label": "mixed", "target": "m1", "enabled": false},
        {"id": "half2", "label": "mixed", "target": "m2"},
        {"id": "w1", "label": "shadow", "target": "h2"}
    ]"#;

    fn catalog() -> Catalog {
        Catalog::parse(CATALOG).expect("valid")
    }

    fn pick(selector: &str) -> Result<String, PlanError> {
        let catalog = catalog();
        select(&catalog, selector, "step 1").map(|m| m.target.clone())
    }

    #[test]
    fn p6_label_and_id_select_the_same_machine() {
        assert_eq!(pick("workmac"), Ok("h1".to_owned()));
        assert_eq!(pick("w1"), Ok("h1".to_owned()), "the first entry with the id wins");
        assert_eq!(pick("n1"), Ok("n".to_owned()));
    }

    #[test]
    fn p6_an_id_match_beats_a_label_match() {
        assert_eq!(pick("d1"), Ok("d-a".to_owned()));
    }

    #[test]
    fn p6_comparison_is_case_sensitive() {
        assert_eq!(pick("WorkMac").map_err(|e| e.code), Err(ErrorCode::MachineNotFound));
    }

    #[test]
    fn p6_shared_labels_are_ambiguous_even_with_a_disabled_candidate() {
        for selector in ["dup", "mixed"] {
            let error = pick(selector).expect_err("ambiguous");
            assert_eq!(error.code, ErrorCode::MachineAmbiguous);
            assert!(error.message.contains(&format!("'{selector}'")) && error.message.contains("ambiguous"));
        }
    }

    #[test]
    fn p6_not_found_lists_enabled_machines_in_catalog_order() {
        let error = pick("nope").expect_err("not found");
        assert_eq!(error.code, ErrorCode::MachineNotFound);
        assert!(error.message.contains("'nope'") && error.message.contains("not found"));
        assert!(
            error
                .message
                .contains("Saved machines: workmac, dup, dup, n1, d1, mixed, shadow."),
            "{}",
            error.message
        );
        assert!(error.message.contains("herdr machine add <target> --label <name>"));
        let empty = Catalog::parse("[]").expect("valid");
        let error = select(&empty, "nope", "step 1").expect_err("not found");
        assert!(error.message.contains("Saved machines: none"));
    }

    #[test]
    fn p6_a_disabled_machine_names_the_enable_command() {
        let error = pick("off").expect_err("disabled");
        assert_eq!(error.code, ErrorCode::MachineDisabled);
        assert!(error.message.contains("'off'") && error.message.contains("disabled"));
        assert!(error.message.contains("herdr machine enable o1"));
    }
}
