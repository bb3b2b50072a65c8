//! The files a step's agent reads before its task, in the form each agent understands: pi
//! takes them as `@file` arguments (it puts their contents before the prompt itself); every
//! other agent gets a preamble naming them, which its own file tools then read.

/// The task with a preamble naming `reads` (the task unchanged when there are none).
pub fn with_preamble(task: &str, reads: &[String]) -> String {
    if reads.is_empty() {
        return task.to_owned();
    }
    let mut text = String::from("Before you start, read these files:\n");
    for read in reads {
        text.push_str("- ");
        text.push_str(read);
        text.push('\n');
    }
    text.push('\n');
    text.push_str(task);
    text
}

/// pi's arguments for `reads`: `@file` each.
pub fn pi_arguments(reads: &[String]) -> impl Iterator<Item = String> + '_ {
    reads.iter().map(|read| format!("@{read}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preamble_names_each_file_before_the_task() {
        assert_eq!(with_preamble("do it", &[]), "do it");
        let reads = ["/a/b.md".to_owned(), "~/notes".to_owned()];
        assert_eq!(
            with_preamble("do it", &reads),
            "Before you start, read these files:\n- /a/b.md\n- ~/notes\n\ndo it"
        );
        assert_eq!(pi_arguments(&reads).collect::<Vec<_>>(), ["@/a/b.md", "@~/notes"]);
    }
}
