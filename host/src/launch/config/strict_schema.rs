//! Whether an output schema can be sent as a strict JSON schema, as Codex sends
//! `--output-schema` (OpenAI's structured outputs): the root is an object, and every object
//! lists all its properties in `required` and forbids others (`additionalProperties: false`).
//! Codex does not check this itself; the API refuses such a schema only once the run has
//! started, so sublaunch refuses it before launching.

use serde_json::Value;

/// The first part of `schema` a strict schema cannot have, named by its JSON path.
pub fn strict_problem(schema: &Value) -> Option<String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Some("$: the root must be an object schema (\"type\": \"object\")".into());
    }
    problem_at(schema, "$")
}

fn problem_at(schema: &Value, path: &str) -> Option<String> {
    let Value::Object(map) = schema else { return None };
    let is_object = map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties");
    if is_object {
        if map.get("additionalProperties") != Some(&Value::Bool(false)) {
            return Some(format!("{path}: an object must have \"additionalProperties\": false"));
        }
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if let Some(Value::Object(properties)) = map.get("properties") {
            if let Some(optional) = properties.keys().find(|k| !required.contains(&k.as_str())) {
                return Some(format!(
                    "{path}.properties.{optional}: every property must be listed in \"required\""
                ));
            }
            for (name, property) in properties {
                if let Some(problem) = problem_at(property, &format!("{path}.properties.{name}")) {
                    return Some(problem);
                }
            }
        }
    }
    for key in ["items", "anyOf", "$defs", "definitions"] {
        match map.get(key) {
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    if let Some(problem) = problem_at(item, &format!("{path}.{key}[{i}]")) {
                        return Some(problem);
                    }
                }
            }
            Some(Value::Object(defs)) if key != "items" => {
                for (name, def) in defs {
                    if let Some(problem) = problem_at(def, &format!("{path}.{key}.{name}")) {
                        return Some(problem);
                    }
                }
            }
            Some(item) if key == "items" => {
                if let Some(problem) = problem_at(item, &format!("{path}.items")) {
                    return Some(problem);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_schemas_pass_and_the_first_problem_is_named_by_path() {
        let strict = json!({"type": "object", "additionalProperties": false, "required": ["a"],
            "properties": {"a": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                "required": ["b"], "properties": {"b": {"type": "string"}}}}}});
        assert_eq!(strict_problem(&strict), None);
        let open = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
        assert_eq!(
            strict_problem(&open).unwrap(),
            "$: an object must have \"additionalProperties\": false"
        );
        let optional = json!({"type": "object", "additionalProperties": false, "properties": {"a": {}}});
        assert!(
            strict_problem(&optional)
                .unwrap()
                .starts_with("$.properties.a: every property")
        );
        let nested = json!({"type": "object", "additionalProperties": false, "required": ["a"],
            "properties": {"a": {"type": "array", "items": {"type": "object", "properties": {}}}}});
        assert!(strict_problem(&nested).unwrap().starts_with("$.properties.a.items:"));
        assert!(strict_problem(&json!({"type": "array"})).unwrap().contains("root"));
    }
}
