//! The answer text an agent produced before its step ended without a final answer (D2): the
//! text of each model message in order, the one still streaming last. Bounded: past
//! [`PARTIAL_BYTES`] the earliest text goes, as the latest says most of where the work stood.

/// The most text kept.
pub const PARTIAL_BYTES: usize = 64 * 1024;

/// The text so far.
#[derive(Debug, Default)]
pub struct PartialText {
    said: String,
    saying: String,
}

impl PartialText {
    /// A finished message's text (what was streaming of it is replaced).
    pub fn said(&mut self, text: &str) {
        self.saying.clear();
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        if !self.said.is_empty() {
            self.said.push_str("\n\n");
        }
        self.said.push_str(text);
        if self.said.len() > PARTIAL_BYTES {
            let cut = floor_boundary(&self.said, self.said.len() - PARTIAL_BYTES);
            self.said.drain(..cut);
        }
    }

    /// The text of the message still streaming, as it stands.
    pub fn saying(&mut self, text: &str) {
        self.saying.clear();
        let start = floor_boundary(text, text.len().saturating_sub(PARTIAL_BYTES));
        self.saying.push_str(&text[start..]);
    }

    /// Everything so far (`None`: no text at all).
    pub fn text(&self) -> Option<String> {
        let saying = self.saying.trim();
        let text = match (self.said.is_empty(), saying.is_empty()) {
            (true, true) => return None,
            (false, true) => self.said.clone(),
            (true, false) => saying.to_owned(),
            (false, false) => format!("{}\n\n{saying}", self.said),
        };
        let start = floor_boundary(&text, text.len().saturating_sub(PARTIAL_BYTES));
        Some(text[start..].to_owned())
    }
}

/// The first char boundary at or after `at`.
fn floor_boundary(text: &str, mut at: usize) -> usize {
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_in_order_the_streaming_one_last_and_bounded() {
        let mut partial = PartialText::default();
        assert_eq!(partial.text(), None);
        partial.said("First I read the code.");
        partial.saying("The bug is in");
        assert_eq!(
            partial.text().as_deref(),
            Some("First I read the code.\n\nThe bug is in")
        );
        partial.said("The bug is in the lexer.");
        assert_eq!(
            partial.text().as_deref(),
            Some("First I read the code.\n\nThe bug is in the lexer.")
        );
        partial.said(&"é".repeat(PARTIAL_BYTES));
        let text = partial.text().unwrap();
        assert!(text.len() <= PARTIAL_BYTES && text.ends_with('é'), "{}", text.len());
    }
}
