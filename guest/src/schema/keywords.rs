//! JSON-Schema shape checks of an output schema (rule P-S3, P-I5).
//!
//! The walk visits every sub-schema once, iteratively (an explicit work list instead of
//! recursion, so no nesting depth can trap the planner). Each sub-schema's own keywords are
//! checked in member order before its sub-schemas are visited in member order. Unknown
//! keywords are allowed, as JSON Schema allows them; values of `const`, `default`, `enum`,
//! `examples` are data and are not walked.

use super::canonical::canonical;
use crate::jsstr;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The type names `type` may use.
const TYPE_NAMES: [&str; 7] = ["null", "boolean", "object", "array", "number", "string", "integer"];

/// Keywords whose value is an object of sub-schemas.
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Keywords whose value is one sub-schema (`items` may also be an array of them, handled
/// before this list is consulted).
const SINGLE_SCHEMAS: [&str; 12] = [
    "additionalItems",
    "additionalProperties",
    "contains",
    "not",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
    "items",
];

/// Keywords whose value is a non-empty array of sub-schemas.
const SCHEMA_LISTS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value is a string.
const STRINGS: [&str; 14] = [
    "$id",
    "$schema",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$comment",
    "title",
    "description",
    "format",
    "pattern",
    "contentEncoding",
    "contentMediaType",
];

/// Keywords whose value is a non-negative integer.
const COUNTS: [&str; 8] = [
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
];

/// Keywords whose value is a boolean.
const BOOLEANS: [&str; 5] = ["uniqueItems", "readOnly", "writeOnly", "deprecated", "$recursiveAnchor"];

/// What is wrong with a schema and where: `path` is the JSON path of the offending keyword
/// inside the schema (e.g. `properties.files.items.type`), empty for the schema itself.
#[derive(Debug, PartialEq, Eq)]
pub struct Problem {
    /// JSON path inside the schema.
    pub path: String,
    /// What the value must be, and what it is.
    pub problem: String,
}

/// How a sub-schema is reached from its parent.
#[derive(Clone, Copy)]
enum Step<'v> {
    Root,
    /// `keyword` holds the sub-schema directly.
    Keyword(&'v str),
    /// `keyword` is an object of sub-schemas; this one is under `name`.
    Named(&'v str, &'v str),
    /// `keyword` is an array of sub-schemas; this one is at `index`.
    Indexed(&'v str, usize),
}

/// One visited sub-schema.
struct Node<'v> {
    value: &'v Value,
    parent: usize,
    step: Step<'v>,
}

/// Checks a whole schema (P-S3). The schema itself must be an object.
pub fn check(schema: &Value) -> Result<(), Problem> {
    Walk {
        nodes: vec![Node {
            value: schema,
            parent: 0,
            step: Step::Root,
        }],
    }
    .run()
}

struct Walk<'v> {
    nodes: Vec<Node<'v>>,
}

impl<'v> Walk<'v> {
    fn run(mut self) -> Result<(), Problem> {
        let mut pending = vec![0_usize];
        while let Some(index) = pending.pop() {
            let Some(node) = self.nodes.get(index) else {
                continue;
            };
            let value = node.value;
            let children = match value {
                Value::Object(schema) => self.check_schema(index, schema)?,
                Value::Bool(_) if index != 0 => Vec::new(),
                other => {
                    let expected = if index == 0 {
                        "a JSON Schema object"
                    } else {
                        "a sub-schema (an object or a boolean)"
                    };
                    return Err(self.problem(index, None, format!("must be {expected}, got {}", show(other))));
                }
            };
            let first = self.nodes.len();
            self.nodes.extend(children);
            pending.extend((first..self.nodes.len()).rev());
        }
        Ok(())
    }

    /// Checks one schema object's keywords and returns its sub-schemas, in member order.
    fn check_schema(&self, index: usize, schema: &'v Map<String, Value>) -> Result<Vec<Node<'v>>, Problem> {
        let mut children = Vec::new();
        for (keyword, value) in schema {
            let keyword = keyword.as_str();
            let fail = |problem: String| self.problem(index, Some(keyword), problem);
            let named = |(name, member): (&'v String, &'v Value)| Node {
                value: member,
                parent: index,
                step: Step::Named(keyword, name),
            };
            match keyword {
                "type" => check_type(value).map_err(fail)?,
                "required" => distinct_strings(value).map_err(fail)?,
                "enum" => check_enum(value).map_err(fail)?,
                "dependentRequired" | "dependencies" => {
                    let members = value.as_object().ok_or_else(|| fail(expect_object(value)))?;
                    for (name, member) in members {
                        if member.is_array() || keyword == "dependentRequired" {
                            distinct_strings(member)
                                .map_err(|problem| self.member_problem(index, keyword, name, problem))?;
                        } else {
                            children.push(named((name, member)));
                        }
                    }
                }
                "items" if value.is_array() => push_list(&mut children, index, keyword, value, false).map_err(fail)?,
                k if SCHEMA_MAPS.contains(&k) => {
                    let members = value.as_object().ok_or_else(|| fail(expect_object(value)))?;
                    children.extend(members.iter().map(named));
                }
                k if SINGLE_SCHEMAS.contains(&k) => {
                    children.push(Node {
                        value,
                        parent: index,
                        step: Step::Keyword(keyword),
                    });
                }
                k if SCHEMA_LISTS.contains(&k) => {
                    push_list(&mut children, index, keyword, value, true).map_err(fail)?
                }
                k if STRINGS.contains(&k) => require(value.is_string(), "a string", value).map_err(fail)?,
                k if COUNTS.contains(&k) => require(is_count(value), "a non-negative integer", value).map_err(fail)?,
                k if BOOLEANS.contains(&k) => require(value.is_boolean(), "a boolean", value).map_err(fail)?,
                "multipleOf" => {
                    let positive = value.as_f64().is_some_and(|n| n > 0.0);
                    require(positive, "a number greater than 0", value).map_err(fail)?;
                }
                "minimum" | "maximum" => require(value.is_number(), "a number", value).map_err(fail)?,
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    let ok = value.is_number() || value.is_boolean();
                    require(ok, "a number (or, in draft 4, a boolean)", value).map_err(fail)?;
                }
                _ => {}
            }
        }
        Ok(children)
    }

    /// A problem at node `index`, optionally at one of its keywords.
    fn problem(&self, index: usize, keyword: Option<&str>, problem: String) -> Problem {
        let mut path = self.path(index);
        if let Some(keyword) = keyword {
            push_name(&mut path, keyword);
        }
        Problem { path, problem }
    }

    /// A problem at member `name` of keyword `keyword` of node `index`.
    fn member_problem(&self, index: usize, keyword: &str, name: &str, problem: String) -> Problem {
        let mut found = self.problem(index, Some(keyword), problem);
        push_name(&mut found.path, name);
        found
    }

    /// The JSON path of node `index` inside the schema, from its parent chain.
    fn path(&self, mut index: usize) -> String {
        let mut steps = Vec::new();
        while let Some(node) = self.nodes.get(index) {
            if index == 0 {
                break;
            }
            steps.push(node.step);
            index = node.parent;
        }
        let mut path = String::new();
        for step in steps.into_iter().rev() {
            match step {
                Step::Root => {}
                Step::Keyword(keyword) => push_name(&mut path, keyword),
                Step::Named(keyword, name) => {
                    push_name(&mut path, keyword);
                    push_name(&mut path, name);
                }
                Step::Indexed(keyword, position) => {
                    push_name(&mut path, keyword);
                    path.push_str(&format!("[{position}]"));
                }
            }
        }
        path
    }
}

/// Adds the sub-schemas of an array keyword (`items` as a list, `allOf` …).
fn push_list<'v>(
    children: &mut Vec<Node<'v>>,
    parent: usize,
    keyword: &'v str,
    value: &'v Value,
    non_empty: bool,
) -> Result<(), String> {
    match value.as_array() {
        Some(items) if !(non_empty && items.is_empty()) => {
            children.extend(items.iter().enumerate().map(|(position, item)| Node {
                value: item,
                parent,
                step: Step::Indexed(keyword, position),
            }));
            Ok(())
        }
        _ if non_empty => Err(format!("must be a non-empty array of sub-schemas, got {}", show(value))),
        _ => Err(format!(
            "must be a sub-schema or an array of sub-schemas, got {}",
            show(value)
        )),
    }
}

/// `type`: one allowed name, or a non-empty array of distinct allowed names.
fn check_type(value: &Value) -> Result<(), String> {
    let names: Vec<&Value> = match value {
        Value::Array(names) if !names.is_empty() => names.iter().collect(),
        Value::Array(_) => return Err("must not be an empty array".to_owned()),
        single => vec![single],
    };
    for name in &names {
        if !name.as_str().is_some_and(|n| TYPE_NAMES.contains(&n)) {
            return Err(format!(
                "must be one of {} (or a non-empty array of them), got {}",
                TYPE_NAMES.join(", "),
                show(name)
            ));
        }
    }
    if value.is_array() {
        first_repeat(&names)?;
    }
    Ok(())
}

/// `enum`: a non-empty array of distinct values.
fn check_enum(value: &Value) -> Result<(), String> {
    match value.as_array() {
        Some(items) if !items.is_empty() => first_repeat(&items.iter().collect::<Vec<_>>()),
        _ => Err(format!(
            "must be a non-empty array of distinct values, got {}",
            show(value)
        )),
    }
}

/// `required` (and each `dependentRequired` / `dependencies` list): an array of distinct
/// strings.
fn distinct_strings(value: &Value) -> Result<(), String> {
    match value.as_array() {
        Some(items) if items.iter().all(Value::is_string) => first_repeat(&items.iter().collect::<Vec<_>>()),
        _ => Err(format!("must be an array of distinct strings, got {}", show(value))),
    }
}

/// Refuses the first value that repeats an earlier one (JSON equality).
fn first_repeat(items: &[&Value]) -> Result<(), String> {
    let mut seen = BTreeMap::new();
    for (position, item) in items.iter().enumerate() {
        if let Some(first) = seen.insert(canonical(item), position) {
            return Err(format!(
                "must hold distinct values, but [{position}] repeats [{first}] ({})",
                show(item)
            ));
        }
    }
    Ok(())
}

/// A count: a number with an integral, non-negative value (`2.0` counts, as in JavaScript).
fn is_count(value: &Value) -> bool {
    value.is_u64() || value.as_f64().is_some_and(|n| n >= 0.0 && n.fract() == 0.0)
}

fn require(ok: bool, what: &str, value: &Value) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("must be {what}, got {}", show(value)))
    }
}

fn expect_object(value: &Value) -> String {
    format!("must be an object of sub-schemas, got {}", show(value))
}

/// Appends a member name to a path: `.name` for plain names, `["a.b"]` otherwise.
fn push_name(path: &mut String, name: &str) {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '-'));
    if plain {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(name);
    } else {
        path.push('[');
        path.push_str(&jsstr::json_quote(name));
        path.push(']');
    }
}

/// A short rendering of a value for messages (at most 60 UTF-16 units of its JSON).
fn show(value: &Value) -> String {
    const LIMIT: usize = 60;
    let text = match value {
        Value::Array(items) if items.len() > LIMIT => format!("an array of {} items", items.len()),
        Value::Object(members) if members.len() > LIMIT => {
            format!("an object of {} members", members.len())
        }
        other => other.to_string(),
    };
    if jsstr::utf16_len(&text) > LIMIT {
        format!("{}…", jsstr::utf16_prefix(&text, LIMIT))
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problem(schema: Value) -> Problem {
        check(&schema).expect_err("invalid")
    }

    fn path_of(schema: Value) -> String {
        problem(schema).path
    }

    #[test]
    fn s3_valid_schemas_pass() {
        let schemas = [
            json!({}),
            json!({"type": "object", "properties": {"files": {"type": "array", "items": {"type": "string"}}}, "required": ["files"]}),
            json!({"type": ["string", "null"], "enum": ["a", null, 1, 1.5, {"x": [1]}]}),
            json!({"allOf": [true, {"not": false}], "anyOf": [{}], "oneOf": [{"const": [1, 1]}]}),
            json!({"items": [{"type": "integer"}, true], "additionalItems": false, "prefixItems": [{}]}),
            json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": true}, "definitions": {}, "$schema": "https://json-schema.org/draft/2020-12/schema"}),
            json!({"minLength": 0, "maxItems": 2.0, "multipleOf": 0.5, "minimum": -3, "exclusiveMaximum": true}),
            json!({"if": {"properties": {"a": {"const": 1}}}, "then": {"required": []}, "else": {"required": ["b"]}}),
            json!({"dependentRequired": {"a": ["b", "c"]}, "dependencies": {"x": ["y"], "z": {"type": "null"}}}),
            json!({"x-custom": [1, 2, 3], "default": {"type": 5}, "examples": [{"enum": 1}]}),
            json!({"patternProperties": {"^a.b$": {"type": "number"}}, "propertyNames": {"pattern": "^[a-z]+$"}}),
        ];
        for schema in schemas {
            assert_eq!(check(&schema), Ok(()), "{schema}");
        }
    }

    #[test]
    fn s3_paths_name_the_offending_keyword() {
        let schema = json!({"type": "object", "properties": {"files": {"type": "array", "items": {"type": "strin"}}}});
        let found = problem(schema);
        assert_eq!(found.path, "properties.files.items.type");
        assert!(found.problem.contains("\"strin\""));
        assert_eq!(path_of(json!({"allOf": [{}, {"minLength": -1}]})), "allOf[1].minLength");
        assert_eq!(
            path_of(json!({"properties": {"a.b": {"type": 1}}})),
            "properties[\"a.b\"].type"
        );
        assert_eq!(
            path_of(json!({"$defs": {"x": {"items": [true, 3]}}})),
            "$defs.x.items[1]"
        );
    }

    #[test]
    fn s3_type_must_name_allowed_distinct_types() {
        for bad in [
            json!("strin"),
            json!([]),
            json!(["string", "string"]),
            json!(["string", 1]),
            json!(null),
            json!({"a": 1}),
        ] {
            assert_eq!(path_of(json!({"type": bad})), "type");
        }
    }

    #[test]
    fn s3_required_and_enum_shapes() {
        for bad in [json!("a"), json!(["a", "a"]), json!(["a", 1])] {
            assert_eq!(path_of(json!({"required": bad})), "required");
        }
        for bad in [
            json!([]),
            json!("a"),
            json!([1, 1.0]),
            json!([{"a": 1, "b": 2}, {"b": 2, "a": 1}]),
        ] {
            assert_eq!(path_of(json!({"enum": bad})), "enum", "{bad}");
        }
    }

    #[test]
    fn s3_sub_schemas_must_be_objects_or_booleans() {
        for keyword in [
            "additionalProperties",
            "not",
            "if",
            "contains",
            "items",
            "unevaluatedProperties",
        ] {
            assert_eq!(path_of(json!({keyword: 1})), keyword);
            assert_eq!(path_of(json!({keyword: "x"})), keyword);
        }
        assert_eq!(path_of(json!({"properties": {"a": []}})), "properties.a");
        assert_eq!(path_of(json!({"properties": []})), "properties");
        for keyword in ["allOf", "anyOf", "oneOf", "prefixItems"] {
            assert_eq!(path_of(json!({keyword: []})), keyword);
            assert_eq!(path_of(json!({keyword: {}})), keyword);
            assert_eq!(path_of(json!({keyword: [null]})), format!("{keyword}[0]"));
        }
    }

    #[test]
    fn s3_dependency_lists_name_their_member() {
        assert_eq!(
            path_of(json!({"dependentRequired": {"a": ["b", "b"]}})),
            "dependentRequired.a"
        );
        assert_eq!(path_of(json!({"dependentRequired": {"a": {}}})), "dependentRequired.a");
        assert_eq!(path_of(json!({"dependencies": {"a": [1]}})), "dependencies.a");
        assert_eq!(
            path_of(json!({"dependencies": {"a": {"type": 1}}})),
            "dependencies.a.type"
        );
        assert_eq!(path_of(json!({"dependencies": {"a": 1}})), "dependencies.a");
    }

    #[test]
    fn s3_scalar_keywords() {
        assert_eq!(path_of(json!({"title": 1})), "title");
        assert_eq!(path_of(json!({"$ref": null})), "$ref");
        assert_eq!(path_of(json!({"pattern": false})), "pattern");
        for bad in [json!(-1), json!(1.5), json!("1"), json!(null)] {
            assert_eq!(path_of(json!({"maxLength": bad})), "maxLength");
        }
        for bad in [json!(0), json!(-2), json!("2")] {
            assert_eq!(path_of(json!({"multipleOf": bad})), "multipleOf");
        }
        assert_eq!(path_of(json!({"uniqueItems": "yes"})), "uniqueItems");
        assert_eq!(path_of(json!({"minimum": "0"})), "minimum");
    }

    #[test]
    fn s3_the_root_must_be_an_object() {
        for root in [json!(false), json!(true), json!([]), json!("s"), json!(null)] {
            let found = problem(root);
            assert_eq!(found.path, "");
            assert!(found.problem.contains("object"));
        }
    }

    #[test]
    fn s3_own_keywords_are_reported_before_sub_schemas() {
        let found = problem(json!({"properties": {"a": {"type": "x"}}, "title": 3}));
        assert_eq!(found.path, "title");
        let found = problem(json!({"properties": {"a": {"type": "x"}, "b": {"type": "y"}}}));
        assert_eq!(found.path, "properties.a.type");
    }

    #[test]
    fn s3_wide_schemas_are_checked_in_linear_time() {
        let properties: Map<String, Value> = (0..20_000)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        let enum_values: Vec<Value> = (0..20_000).map(Value::from).collect();
        let schema = json!({"properties": properties, "enum": enum_values});
        let started = std::time::Instant::now();
        assert_eq!(check(&schema), Ok(()));
        assert!(started.elapsed().as_secs() < 5);
    }

    #[test]
    fn s3_nesting_is_walked_without_recursion() {
        let mut schema = json!({"type": "nope"});
        for _ in 0..5_000 {
            schema = Value::Object(Map::from_iter([("items".to_owned(), schema)]));
        }
        let found = check(&schema).expect_err("invalid");
        assert!(found.path.ends_with("items.type") && found.path.starts_with("items.items."));
        // Unwind the value by hand so that dropping it does not recurse 5 000 levels.
        while let Value::Object(mut members) = schema {
            schema = members.remove("items").unwrap_or(Value::Null);
        }
    }
}
