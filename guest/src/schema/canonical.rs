//! A canonical text of JSON values, so that "distinct values" (P-S3: `enum`, `type`,
//! `required`) can be checked with an ordered map in O(n log n) instead of pairwise.
//!
//! Two values have the same canonical text iff they are equal as JSON Schema (and upstream's
//! JavaScript deep equality) compares them: object member order does not matter, numbers
//! compare by value (`1` equals `1.0`, `0` equals `-0`). The walk is iterative, so no nesting
//! depth can overflow the stack.

use serde_json::Value;

/// One step of the canonical writer.
enum Work<'v> {
    Value(&'v Value),
    Key(&'v str),
    Text(&'static str),
}

/// The canonical text of `value`.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    let mut stack = vec![Work::Value(value)];
    while let Some(work) = stack.pop() {
        match work {
            Work::Text(text) => out.push_str(text),
            Work::Key(key) => push_string(&mut out, key),
            Work::Value(value) => push_value(&mut out, &mut stack, value),
        }
    }
    out
}

fn push_value<'v>(out: &mut String, stack: &mut Vec<Work<'v>>, value: &'v Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => out.push_str(&canonical_number(number.as_f64().unwrap_or(f64::NAN))),
        Value::String(text) => push_string(out, text),
        Value::Array(items) => {
            out.push('[');
            stack.push(Work::Text("]"));
            for (index, item) in items.iter().enumerate().rev() {
                stack.push(Work::Value(item));
                if index > 0 {
                    stack.push(Work::Text(","));
                }
            }
        }
        Value::Object(members) => {
            out.push('{');
            stack.push(Work::Text("}"));
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            for (index, (key, member)) in sorted.into_iter().enumerate().rev() {
                stack.push(Work::Value(member));
                stack.push(Work::Text(":"));
                stack.push(Work::Key(key));
                if index > 0 {
                    stack.push(Work::Text(","));
                }
            }
        }
    }
}

/// Numbers compare by their JavaScript value: integers and floats alike become an `f64`.
fn canonical_number(number: f64) -> String {
    let number = if number == 0.0 { 0.0 } else { number };
    format!("{number:?}")
}

fn push_string(out: &mut String, text: &str) {
    out.push_str(&crate::jsstr::json_quote(text));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn s3_equal_values_share_a_canonical_text() {
        assert_eq!(
            canonical(&json!({"a": 1, "b": [true, null]})),
            canonical(&json!({"b": [true, null], "a": 1.0}))
        );
        assert_eq!(canonical(&json!(0)), canonical(&json!(-0.0)));
        assert_eq!(canonical(&json!("x")), "\"x\"");
    }

    #[test]
    fn s3_different_values_differ() {
        let values = [
            json!(1),
            json!("1"),
            json!([1]),
            json!({"1": 1}),
            json!(null),
            json!(false),
            json!([]),
            json!({}),
            json!([1, 2]),
            json!([2, 1]),
        ];
        let texts: std::collections::BTreeSet<String> = values.iter().map(canonical).collect();
        assert_eq!(texts.len(), values.len());
        assert_ne!(canonical(&json!({"a,": 1})), canonical(&json!({"a": ",1"})));
    }

    #[test]
    fn s3_canonical_is_iterative() {
        let mut deep = json!(1);
        for _ in 0..10_000 {
            deep = Value::Array(vec![deep]);
        }
        assert_eq!(canonical(&deep).len(), 20_003, "10 000 bracket pairs around 1.0");
        // Drop without recursing through 10 000 levels.
        let mut value = deep;
        while let Value::Array(mut items) = value {
            value = items.pop().unwrap_or(Value::Null);
        }
    }
}
