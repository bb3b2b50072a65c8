//! The model registry and resolution of explicit and configured models (model-and-thinking.md
//! M4–M14, M20; improvements M-I3, M-I5, M-I6, M-I10).
//!
//! Cost per lookup is a few linear scans (no quadratic work). A scan compares each entry's
//! raw text with the normalised query byte by byte, stopping at the first difference (most
//! entries differ in their first byte), without building the entry's normalised form. An
//! entry is normalised in full only when that is not enough (a date-stamp candidate, or
//! non-ASCII text), and then at most once per plan (a per-entry cache). Duplicate
//! provider/id pairs are folded within each candidate set, so the first one counts.

use crate::normalize::{Comparison, DateStamp, compare_normalized, norm, split_date};
use crate::thinking::{split_suffix, with_suffix};
use std::cell::OnceCell;
use sublaunch_contract::nearest::nearest;
use sublaunch_contract::{ErrorCode, ModelEntry, PlanError};

/// The largest context window taken as given: 2^53, the largest whole number every JSON
/// reader holds exactly.
const MAX_CONTEXT_WINDOW: f64 = 9_007_199_254_740_992.0;

/// The active model registry (`availableModels`) of one plan.
pub struct Registry<'r> {
    entries: &'r [ModelEntry],
    /// Normalised entries, per entry, filled on first need.
    normalized: OnceCell<Vec<OnceCell<NormalizedEntry>>>,
}

/// One entry normalised in full, its id split at its date stamp (M9).
#[derive(Debug)]
struct NormalizedEntry {
    /// `norm(provider)`.
    provider: String,
    /// `norm(id)`.
    id: String,
    /// Length of the stem: `norm(id)` without its date stamp.
    stem_len: usize,
    /// The date stamp.
    date: Option<DateStamp>,
}

impl NormalizedEntry {
    fn new(entry: &ModelEntry) -> Self {
        let id = norm(&entry.id);
        let (stem, date) = split_date(&id);
        let stem_len = stem.len();
        Self {
            provider: norm(&entry.provider),
            id,
            stem_len,
            date,
        }
    }

    fn stem(&self) -> &str {
        self.id.get(..self.stem_len).unwrap_or_default()
    }
}

/// A query split by provider qualification (M7).
struct Query<'q> {
    /// `norm` of the named provider, when the query is provider-qualified.
    provider: Option<String>,
    /// The id part (the whole query when it is not provider-qualified).
    id_part: &'q str,
}

impl<'r> Registry<'r> {
    /// The registry of a request; absent means empty (M1, M4).
    pub fn new(entries: Option<&'r [ModelEntry]>) -> Self {
        Self {
            entries: entries.unwrap_or_default(),
            normalized: OnceCell::new(),
        }
    }

    /// Whether there is no registry at all (M4: source strings are then used verbatim).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Resolves an explicit or configured source string (M5): the entry's full id, with the
    /// query's known thinking suffix kept when only the base resolved. `preferred` is the
    /// step's preferred provider, already normalised (M1). Failures are classified by M13.
    pub fn resolve(&self, query: &str, preferred: Option<&str>) -> Result<String, PlanError> {
        if let Some(entry) = self.base(query, preferred) {
            return Ok(self.full_id(entry));
        }
        let split = split_suffix(query);
        if let Some(level) = split.level
            && let Some(entry) = self.base(split.base, preferred)
        {
            return Ok(with_suffix(&self.full_id(entry), level));
        }
        Err(self.failure(query))
    }

    /// The `contextWindow` of the entry whose full id is exactly `full_id` (M20): `Ok(None)`
    /// without such an entry or window; an error naming the entry when the window is not a whole
    /// number from 1 to 2^53 (M-I18: a fraction or a huge float is no token count).
    pub fn context_limit(&self, full_id: &str) -> Result<Option<u64>, String> {
        let Some(window) = self
            .exact_full_id(full_id)
            .and_then(|i| self.entries.get(i))
            .and_then(|entry| entry.context_window)
        else {
            return Ok(None);
        };
        if window.fract() == 0.0 && (1.0..=MAX_CONTEXT_WINDOW).contains(&window) {
            // Exact: a whole number no larger than 2^53 is an integer the float holds exactly.
            return Ok(Some(window as u64));
        }
        Err(format!(
            "The model registry entry '{full_id}' has contextWindow {window}, which is not a whole number from 1 to 2^53; its context limit is left out."
        ))
    }

    fn full_id(&self, entry: usize) -> String {
        self.entries
            .get(entry)
            .map(|e| format!("{}/{}", e.provider, e.id))
            .unwrap_or_default()
    }

    /// Entry `i` normalised in full, at most once per plan.
    fn normalized(&self, i: usize) -> Option<&NormalizedEntry> {
        let cells = self
            .normalized
            .get_or_init(|| self.entries.iter().map(|_| OnceCell::new()).collect());
        let entry = self.entries.get(i)?;
        Some(cells.get(i)?.get_or_init(|| NormalizedEntry::new(entry)))
    }

    /// Whether entry `i`'s provider normalises to `provider` (a normalised text).
    fn is_of_provider(&self, i: usize, provider: &str) -> bool {
        let Some(entry) = self.entries.get(i) else {
            return false;
        };
        compare_normalized(&entry.provider, provider, Comparison::Equals)
            .unwrap_or_else(|| self.normalized(i).is_some_and(|n| n.provider == provider))
    }

    /// Whether entry `i`'s normalised id equals (or starts with) `id` (a normalised text).
    fn id_compares(&self, i: usize, id: &str, comparison: Comparison) -> bool {
        let Some(entry) = self.entries.get(i) else {
            return false;
        };
        compare_normalized(&entry.id, id, comparison).unwrap_or_else(|| {
            self.normalized(i).is_some_and(|n| match comparison {
                Comparison::Equals => n.id == id,
                Comparison::StartsWith => n.id.starts_with(id),
            })
        })
    }

    /// BASE(q) of M5: stages M6–M12; the winning entry's position.
    fn base(&self, query: &str, preferred: Option<&str>) -> Option<usize> {
        if let Some(entry) = self.exact_full_id(query) {
            return Some(entry);
        }
        let parsed = self.parse(query);
        if parsed.provider.is_none()
            && let Some(found) = self.pick(self.exact_bare_id(query), preferred)
        {
            return Some(found);
        }
        if let Some(found) = self.pick(self.fuzzy_candidates(&parsed), preferred) {
            return Some(found);
        }
        let provider = parsed.provider.as_deref()?;
        self.provider_repeated_in_id(provider, query)
    }

    /// M6: an entry whose full id equals the query exactly (the first one, so duplicates
    /// never compete).
    fn exact_full_id(&self, query: &str) -> Option<usize> {
        self.entries.iter().position(|entry| is_full_id(entry, query))
    }

    /// M7: provider qualification by `/` (first occurrence), else `:` then `.` (first
    /// occurrence at a position > 0); the prefix must normalise to a registered provider.
    fn parse<'q>(&self, query: &'q str) -> Query<'q> {
        let qualified = |prefix: &str, rest: &'q str| {
            let provider = norm(prefix);
            let registered = (0..self.entries.len()).any(|i| self.is_of_provider(i, &provider));
            registered.then_some(Query {
                provider: Some(provider),
                id_part: rest,
            })
        };
        let whole = Query {
            provider: None,
            id_part: query,
        };
        if let Some((prefix, rest)) = query.split_once('/') {
            return qualified(prefix, rest).unwrap_or(whole);
        }
        [':', '.']
            .into_iter()
            .find_map(|separator| {
                let (at, _) = query.match_indices(separator).find(|(at, _)| *at > 0)?;
                qualified(query.get(..at)?, query.get(at + 1..)?)
            })
            .unwrap_or(whole)
    }

    /// M8 candidates: entries whose id equals the whole query exactly.
    fn exact_bare_id(&self, query: &str) -> Vec<usize> {
        let matching = self.entries.iter().enumerate().filter(|(_, e)| e.id == query);
        self.first_of_each_pair(matching.map(|(i, _)| i).collect())
    }

    /// M9 candidates (registry order), with the M10 provider restriction and the date tiers
    /// of M-I6: same (stem, date) first, else same stem with a date on exactly one side.
    /// Two different dates never match.
    fn fuzzy_candidates(&self, query: &Query<'_>) -> Vec<usize> {
        let wanted = norm(query.id_part);
        let (stem, date) = split_date(&wanted);
        let mut same = Vec::new();
        let mut dated_undated = Vec::new();
        for i in 0..self.entries.len() {
            // Cheap necessary conditions first: norm(id) starts with the stem (M9), and the
            // entry is of the named provider (M10).
            let provider = query.provider.as_deref();
            if !self.id_compares(i, stem, Comparison::StartsWith)
                || provider.is_some_and(|p| !self.is_of_provider(i, p))
            {
                continue;
            }
            let Some(normalized) = self.normalized(i) else {
                continue;
            };
            if normalized.stem() != stem {
                continue;
            }
            if normalized.date == date {
                same.push(i);
            } else if normalized.date.is_some() != date.is_some() {
                dated_undated.push(i);
            }
        }
        self.first_of_each_pair(if same.is_empty() { dated_undated } else { same })
    }

    /// M12 (M-I5): for a provider-qualified query, the one entry of that provider whose
    /// normalised id equals the normalised whole query.
    fn provider_repeated_in_id(&self, provider: &str, query: &str) -> Option<usize> {
        let wanted = norm(query);
        let matching = (0..self.entries.len())
            .filter(|&i| self.id_compares(i, &wanted, Comparison::Equals) && self.is_of_provider(i, provider));
        match self.first_of_each_pair(matching.collect()).as_slice() {
            [only] => Some(*only),
            _ => None,
        }
    }

    /// M11 (and M8): a preferred provider decides when exactly one candidate is of it
    /// (M-I10); otherwise a single candidate wins; otherwise nothing does.
    fn pick(&self, candidates: Vec<usize>, preferred: Option<&str>) -> Option<usize> {
        if let Some(preferred) = preferred {
            let mut of_preferred = candidates.iter().filter(|&&c| self.is_of_provider(c, preferred));
            if let (Some(&only), None) = (of_preferred.next(), of_preferred.next()) {
                return Some(only);
            }
        }
        match candidates.as_slice() {
            [only] => Some(*only),
            _ => None,
        }
    }

    /// Folds duplicate provider/id pairs in a candidate set (registry order), keeping the
    /// first of each (§2). O(k log k) in the number of candidates.
    fn first_of_each_pair(&self, candidates: Vec<usize>) -> Vec<usize> {
        if candidates.len() < 2 {
            return candidates;
        }
        let key = |i: &usize| self.entries.get(*i).map(|e| (e.provider.as_str(), e.id.as_str()));
        let mut kept = candidates;
        kept.sort_by(|a, b| key(a).cmp(&key(b)).then(a.cmp(b)));
        kept.dedup_by(|later, earlier| key(later) == key(earlier));
        kept.sort_unstable();
        kept
    }

    /// M13: `ambiguous-model` when the fuzzy candidate set of the query without its suffix
    /// has several members (M-I3), else `unknown-model` with an optional suggestion.
    fn failure(&self, query: &str) -> PlanError {
        let split = split_suffix(query);
        let parsed = self.parse(split.base);
        let candidates = self.fuzzy_candidates(&parsed);
        if candidates.len() >= 2 {
            let ids: Vec<String> = candidates.iter().map(|&c| self.full_id(c)).collect();
            return PlanError::new(
                ErrorCode::AmbiguousModel,
                format!(
                    "Ambiguous subagent model '{query}': it matches {}. Name the provider: write the model as provider/id (such as '{}'), or give the agent a preferred provider (modelProvider: in its agent file).",
                    ids.join(", "),
                    ids[0]
                ),
            );
        }
        let mut message =
            format!("Unknown subagent model '{query}': no entry in the active model registry matches it.");
        if let Some(suggestion) = self.suggestion(&parsed).or_else(|| self.nearest(split.base)) {
            let suffix = split
                .level
                .map(|level| format!(":{}", level.name()))
                .unwrap_or_default();
            message.push_str(&format!(" Did you mean '{suggestion}{suffix}'?"));
        }
        PlanError::new(ErrorCode::UnknownModel, message)
    }

    /// A mistyped model's nearest full id (`anthropic/claude-sonet-4-5`), else the full id of
    /// the nearest id (`claude-sonet-4-5`): few edits, or only a difference in case.
    fn nearest(&self, query: &str) -> Option<String> {
        let full_ids: Vec<String> = (0..self.entries.len()).map(|i| self.full_id(i)).collect();
        if let Some(full_id) = nearest(query, full_ids.iter().map(String::as_str)) {
            return Some(full_id.to_owned());
        }
        let id = nearest(query, self.entries.iter().map(|e| e.id.as_str()))?;
        let entry = self.entries.iter().position(|e| e.id == id)?;
        Some(self.full_id(entry))
    }

    /// M13 suggestion: the id part of a provider-qualified query resolved against the whole
    /// registry without a preference, when that lands on another provider.
    fn suggestion(&self, parsed: &Query<'_>) -> Option<String> {
        let named = parsed.provider.as_deref()?;
        let entry = self.base(parsed.id_part, None)?;
        (!self.is_of_provider(entry, named)).then(|| self.full_id(entry))
    }
}

/// Whether `full_id` is `provider/id` of this entry (no allocation).
fn is_full_id(entry: &ModelEntry, full_id: &str) -> bool {
    full_id.len() == entry.provider.len() + 1 + entry.id.len()
        && full_id
            .strip_prefix(entry.provider.as_str())
            .and_then(|rest| rest.strip_prefix('/'))
            == Some(entry.id.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entry(provider: &str, id: &str) -> ModelEntry {
        ModelEntry {
            provider: provider.to_owned(),
            id: id.to_owned(),
            ..ModelEntry::default()
        }
    }

    fn registry(pairs: &[(&str, &str)]) -> Vec<ModelEntry> {
        pairs.iter().map(|(p, i)| entry(p, i)).collect()
    }

    fn worked_example() -> Vec<ModelEntry> {
        registry(&[
            ("openai", "gpt-5-mini"),
            ("anthropic", "claude-sonnet-4"),
            ("anthropic", "claude-haiku-4-5"),
            ("github-copilot", "gpt-5-mini"),
        ])
    }

    fn resolve(entries: &[ModelEntry], query: &str, preferred: Option<&str>) -> Result<String, PlanError> {
        Registry::new(Some(entries)).resolve(query, preferred)
    }

    #[test]
    fn m6_exact_full_id_wins() {
        let entries = worked_example();
        assert_eq!(
            resolve(&entries, "openai/gpt-5-mini", None).unwrap(),
            "openai/gpt-5-mini"
        );
    }

    #[test]
    fn m7_slash_colon_and_dot_name_a_provider() {
        let entries = worked_example();
        for query in [
            "anthropic/claude-sonnet-4",
            "anthropic:claude-sonnet-4",
            "anthropic.claude-sonnet-4",
        ] {
            assert_eq!(
                resolve(&entries, query, None).unwrap(),
                "anthropic/claude-sonnet-4",
                "{query}"
            );
        }
        assert_eq!(
            resolve(&entries, "Anthropic.Claude.Haiku.4.5", None).unwrap(),
            "anthropic/claude-haiku-4-5"
        );
    }

    #[test]
    fn m7_unregistered_prefix_makes_an_owner_name_id() {
        let entries = registry(&[("huggingface", "thinkingmachines/Inkling"), ("openai", "gpt-5.5")]);
        assert_eq!(
            resolve(&entries, "thinkingmachines/inkling", None).unwrap(),
            "huggingface/thinkingmachines/Inkling"
        );
        assert_eq!(resolve(&entries, "gpt-5.5", None).unwrap(), "openai/gpt-5.5");
    }

    #[test]
    fn m7_separator_counts_only_after_position_zero() {
        let entries = registry(&[("openai", "gpt-5")]);
        assert!(resolve(&entries, ":openai", None).is_err());
        assert_eq!(resolve(&entries, ".openai.gpt-5", None).unwrap(), "openai/gpt-5");
    }

    #[test]
    fn m8_m11_preference_breaks_ties_only() {
        let entries = worked_example();
        assert_eq!(
            resolve(&entries, "gpt-5-mini", Some("github-copilot")).unwrap(),
            "github-copilot/gpt-5-mini"
        );
        assert_eq!(
            resolve(&entries, "claude-sonnet-4", Some("github-copilot")).unwrap(),
            "anthropic/claude-sonnet-4"
        );
        let error = resolve(&entries, "gpt-5-mini", Some("anthropic")).unwrap_err();
        assert_eq!(error.code, ErrorCode::AmbiguousModel);
    }

    #[test]
    fn m13_i3_ambiguity_lists_candidates_in_registry_order() {
        let error = resolve(&worked_example(), "GPT-5-Mini", None).unwrap_err();
        assert_eq!(
            error.message,
            "Ambiguous subagent model 'GPT-5-Mini': it matches openai/gpt-5-mini, github-copilot/gpt-5-mini. Name the provider: write the model as provider/id (such as 'openai/gpt-5-mini'), or give the agent a preferred provider (modelProvider: in its agent file)."
        );
    }

    #[test]
    fn m9_tiers_prefer_same_date_then_dated_undated() {
        let entries = registry(&[
            ("anthropic", "claude-3-5-sonnet-20240620"),
            ("anthropic", "claude-3-5-sonnet-20241022"),
            ("anthropic", "claude-haiku-4-5"),
            ("anthropic", "claude-haiku-4-5-20251001"),
        ]);
        assert_eq!(
            resolve(&entries, "claude-3-5-sonnet-2024-10-22", None).unwrap(),
            "anthropic/claude-3-5-sonnet-20241022"
        );
        // Undated query: tier A holds the undated entry only.
        assert_eq!(
            resolve(&entries, "claude-haiku-4.5", None).unwrap(),
            "anthropic/claude-haiku-4-5"
        );
        // Two dated entries for an undated query: ambiguity, never an arbitrary pick (M-I10).
        let error = resolve(&entries, "claude-3-5-sonnet", Some("anthropic")).unwrap_err();
        assert_eq!(error.code, ErrorCode::AmbiguousModel);
        // Different dates never match.
        let error = resolve(&entries, "claude-3-5-sonnet-20250101", None).unwrap_err();
        assert_eq!(error.code, ErrorCode::UnknownModel);
    }

    #[test]
    fn m9_dated_query_matches_undated_entry() {
        let entries = registry(&[("anthropic", "claude-haiku-4-5")]);
        assert_eq!(
            resolve(&entries, "claude-haiku-4-5-20251001", None).unwrap(),
            "anthropic/claude-haiku-4-5"
        );
    }

    #[test]
    fn m10_m13_named_provider_is_binding_and_suggests() {
        let error = resolve(&worked_example(), "openai/claude-sonnet-4:high", None).unwrap_err();
        assert_eq!(error.code, ErrorCode::UnknownModel);
        assert_eq!(
            error.message,
            "Unknown subagent model 'openai/claude-sonnet-4:high': no entry in the active model registry matches it. Did you mean 'anthropic/claude-sonnet-4:high'?"
        );
    }

    #[test]
    fn m13_no_suggestion_when_the_id_part_is_ambiguous_or_unknown() {
        let entries = worked_example();
        let error = resolve(&entries, "anthropic/gpt-5-mini", None).unwrap_err();
        assert!(!error.message.contains("Did you mean"), "{}", error.message);
        let error = resolve(&entries, "anthropic/nothing", None).unwrap_err();
        assert!(!error.message.contains("Did you mean"));
    }

    #[test]
    fn a_mistyped_model_gets_the_nearest_name() {
        let entries = worked_example();
        let error = resolve(&entries, "anthropic/claude-sonet-4:high", None).unwrap_err();
        assert_eq!(error.code, ErrorCode::UnknownModel);
        assert!(
            error
                .message
                .ends_with("Did you mean 'anthropic/claude-sonnet-4:high'?"),
            "{}",
            error.message
        );
        let error = resolve(&entries, "claude-sonet-4", None).unwrap_err();
        assert!(
            error.message.ends_with("Did you mean 'anthropic/claude-sonnet-4'?"),
            "a bare id is matched against the ids: {}",
            error.message
        );
        let error = resolve(&entries, "something-else-entirely", None).unwrap_err();
        assert!(!error.message.contains("Did you mean"), "{}", error.message);
    }

    #[test]
    fn m5_suffix_survives_resolution() {
        let entries = worked_example();
        assert_eq!(
            resolve(&entries, "claude-haiku-4.5:low", None).unwrap(),
            "anthropic/claude-haiku-4-5:low"
        );
        let error = resolve(&entries, "nothing:high", None).unwrap_err();
        assert!(error.message.starts_with("Unknown subagent model 'nothing:high'"));
    }

    #[test]
    fn m12_i5_ids_that_repeat_their_provider() {
        let entries = registry(&[("openrouter", "openrouter/auto-beta"), ("openrouter", "auto")]);
        assert_eq!(
            resolve(&entries, "openrouter/auto-beta", None).unwrap(),
            "openrouter/openrouter/auto-beta"
        );
        assert_eq!(
            resolve(&entries, "OpenRouter/Auto_Beta", None).unwrap(),
            "openrouter/openrouter/auto-beta"
        );
        // An ordinary id of that provider keeps winning (the fuzzy stage runs first).
        assert_eq!(resolve(&entries, "openrouter/auto", None).unwrap(), "openrouter/auto");
    }

    #[test]
    fn duplicates_count_once_first_wins() {
        let mut entries = registry(&[("openai", "gpt-5"), ("openai", "gpt-5")]);
        entries[0].context_window = Some(1000.0);
        entries[1].context_window = Some(2000.0);
        let registry = Registry::new(Some(&entries));
        assert_eq!(registry.resolve("GPT-5", None).unwrap(), "openai/gpt-5");
        assert_eq!(registry.resolve("gpt-5", None).unwrap(), "openai/gpt-5");
        assert_eq!(registry.context_limit("openai/gpt-5"), Ok(Some(1000)));
    }

    #[test]
    fn m20_i18_context_limit_needs_a_whole_number_from_1_to_2_pow_53() {
        let mut entries = registry(&[("a", "x"), ("a", "y"), ("a", "z"), ("a", "f"), ("a", "top"), ("a", "n")]);
        for (entry, window) in entries
            .iter_mut()
            .zip([0.0, -5.0, 1e300, 1.5, MAX_CONTEXT_WINDOW, f64::NAN])
        {
            entry.context_window = Some(window);
        }
        let registry = Registry::new(Some(&entries));
        for id in ["a/x", "a/y", "a/z", "a/f", "a/n"] {
            let error = registry.context_limit(id).unwrap_err();
            assert!(
                error.contains(&format!("'{id}'")) && error.contains("not a whole number"),
                "{error}"
            );
        }
        assert_eq!(registry.context_limit("a/top"), Ok(Some(1 << 53)));
        assert_eq!(registry.context_limit("a/missing"), Ok(None));
    }

    #[test]
    fn empty_and_whitespace_names_never_panic() {
        let entries = registry(&[("", ""), (" ", " "), ("", "x"), ("p", "")]);
        let registry = Registry::new(Some(&entries));
        for query in [
            "/", " / ", "/x", "p/", "x", "-", ".", ":", "p:", "p.", "é", "::high", "/:high",
        ] {
            let _ = registry.resolve(query, Some(""));
        }
        assert_eq!(registry.resolve("/x", None).unwrap(), "/x");
    }

    #[test]
    fn non_ascii_entries_are_normalised_in_full() {
        let entries = registry(&[("Ünï", "Módèl.X"), ("ünï", "módèl-y-20250101")]);
        assert_eq!(resolve(&entries, "ünï/MÓDÈL_X", None).unwrap(), "Ünï/Módèl.X");
        assert_eq!(resolve(&entries, "módèl-x", None).unwrap(), "Ünï/Módèl.X");
        assert_eq!(
            resolve(&entries, "ÜNÏ:Módèl.Y:high", None).unwrap(),
            "ünï/módèl-y-20250101:high"
        );
    }

    #[test]
    fn ten_thousand_entries_resolve() {
        let entries: Vec<ModelEntry> = (0..10_000)
            .map(|i| entry(&format!("provider-{}", i % 50), &format!("model-{i}")))
            .collect();
        let registry = Registry::new(Some(&entries));
        assert_eq!(registry.resolve("Model_9999", None).unwrap(), "provider-49/model-9999");
        assert_eq!(
            registry.resolve("provider-3:model.53", None).unwrap(),
            "provider-3/model-53"
        );
        let same: Vec<ModelEntry> = (0..10_000).map(|_| entry("p", "m")).collect();
        assert_eq!(Registry::new(Some(&same)).resolve("M", None).unwrap(), "p/m");
    }

    fn name() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9._éÉ-]{1,8}"
    }

    fn generated_registry() -> impl Strategy<Value = Vec<ModelEntry>> {
        proptest::collection::vec((name(), "[a-zA-Z0-9._/éÉ-]{1,12}"), 1..12)
            .prop_map(|pairs| pairs.into_iter().map(|(p, i)| entry(&p, &i)).collect())
    }

    proptest! {
        /// M10: a provider-qualified query only ever resolves to an entry of that provider.
        #[test]
        fn a_qualified_query_never_resolves_to_another_provider(
            entries in generated_registry(),
            pick in any::<prop::sample::Index>(),
            id in "[a-zA-Z0-9._/-]{1,12}(:high)?",
            preferred in proptest::option::of(name()),
        ) {
            let provider = &entries[pick.index(entries.len())].provider;
            let query = format!("{provider}/{id}");
            let preferred = preferred.map(|p| norm(&p));
            if let Ok(resolved) = resolve(&entries, &query, preferred.as_deref()) {
                let base = split_suffix(&resolved).base;
                let owner = entries.iter().find(|e| is_full_id(e, base)).map(|e| norm(&e.provider));
                prop_assert_eq!(owner, Some(norm(provider)), "{} -> {}", query, resolved);
            }
        }

        /// M6: resolving a resolved full id returns it unchanged (suffix included).
        #[test]
        fn resolving_a_resolved_full_id_is_stable(
            entries in generated_registry(),
            pick in any::<prop::sample::Index>(),
            upper in any::<bool>(),
            suffix in proptest::option::of(Just(":high")),
            random in proptest::option::of("[a-zA-Z0-9._/:-]{1,16}"),
            preferred in proptest::option::of(name()),
        ) {
            let e = &entries[pick.index(entries.len())];
            let id = if upper { e.id.to_uppercase().replace('-', ".") } else { e.id.clone() };
            let query = random.unwrap_or_else(|| format!("{id}{}", suffix.unwrap_or_default()));
            let preferred = preferred.map(|p| norm(&p));
            if let Ok(resolved) = resolve(&entries, &query, preferred.as_deref()) {
                prop_assert_eq!(resolve(&entries, &resolved, None).unwrap(), resolved.clone());
                prop_assert_eq!(resolve(&entries, &resolved, preferred.as_deref()).unwrap(), resolved.clone());
            }
        }

        /// M6: every entry's full id resolves to itself.
        #[test]
        fn every_full_id_resolves_to_itself(entries in generated_registry(), pick in any::<prop::sample::Index>()) {
            let e = &entries[pick.index(entries.len())];
            let full = format!("{}/{}", e.provider, e.id);
            prop_assert_eq!(resolve(&entries, &full, None).unwrap(), full);
        }
    }
}
