//! "Did you mean …?": the known name nearest to a mistyped one, shared by the planner (models,
//! M13) and the host (agents). A name that differs only in case is nearest of all; otherwise the
//! fewest edits (insert, delete, replace, or swap two neighbours), and only when they are few
//! for the length of the name, so that a name that is nothing like any known one gets no
//! suggestion.

/// The candidate nearest to `query`, when one is near enough: equal ignoring case, else the
/// fewest edits (at most a third of the query's length, and at least one); the first of equals
/// in the candidates' order.
pub fn nearest<'c>(query: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let query: Vec<char> = query.to_lowercase().chars().collect();
    let allowed = (query.len() / 3).max(1);
    let mut best: Option<(usize, &'c str)> = None;
    for candidate in candidates {
        let lowered: Vec<char> = candidate.to_lowercase().chars().collect();
        // Lengths far apart need at least that many edits: skip without counting.
        if lowered.len().abs_diff(query.len()) > allowed {
            continue;
        }
        let distance = edits(&query, &lowered);
        if distance <= allowed && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// The number of single-character edits from `a` to `b`, a swap of neighbours counting as one
/// (optimal string alignment distance).
fn edits(a: &[char], b: &[char]) -> usize {
    // Three rows of the table: two back (for swaps), the previous one, the current one.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut value = (previous[j] + 1).min(current[j - 1] + 1).min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                value = value.min(before[j - 2] + 1);
            }
            current[j] = value;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(text: &str) -> Vec<char> {
        text.chars().collect()
    }

    #[test]
    fn edits_count_inserts_deletes_replacements_and_swaps() {
        assert_eq!(edits(&chars("shel"), &chars("shell")), 1);
        assert_eq!(
            edits(&chars("fake-modle"), &chars("fake-model")),
            1,
            "a swap is one edit"
        );
        assert_eq!(edits(&chars("kitten"), &chars("sitting")), 3);
        assert_eq!(edits(&chars(""), &chars("abc")), 3);
        assert_eq!(edits(&chars("same"), &chars("same")), 0);
    }

    #[test]
    fn the_nearest_name_is_suggested_only_when_it_is_near() {
        let agents = ["jsoner", "shell", "pi", "claude", "codex"];
        assert_eq!(nearest("shel", agents), Some("shell"));
        assert_eq!(nearest("Claude", agents), Some("claude"), "case alone is nearest");
        assert_eq!(nearest("CODEX", agents), Some("codex"));
        assert_eq!(nearest("reviewer", agents), None, "nothing like any of them");
        assert_eq!(
            nearest(
                "anthropic/claude-sonet-4-5",
                ["anthropic/claude-haiku-4-5", "anthropic/claude-sonnet-4-5"]
            ),
            Some("anthropic/claude-sonnet-4-5")
        );
        assert_eq!(nearest("x", std::iter::empty()), None);
    }
}
