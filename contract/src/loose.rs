//! Values that cross the typed boundary without losing what the caller actually sent.
//!
//! The specification refuses some wrong-typed values with a particular error code at a
//! particular point of the pipeline (a numeric `thinking` is `invalid-thinking-level` only
//! after unknown agents were reported, an external agent's `model` is never validated, …).
//! These types carry such values to the planner instead of failing while decoding JSON.

use serde::de::{Deserialize, Deserializer};
use serde::ser::{Error as _, Serialize, Serializer};
use serde_json::Value;

/// What kind of JSON value `value` is, as messages name it: `a string`, `an object`, `null` …
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Serde mapping of a JSON-text field (`json` in the WIT): any JSON value on the wire, its
/// JSON text in Rust. Use with `#[serde(with = "json_text")]`.
pub mod json_text {
    use super::*;

    /// Writes the text as the JSON value it holds; text that is not JSON is an error.
    pub fn serialize<S: Serializer>(text: &str, serializer: S) -> Result<S::Ok, S::Error> {
        serde_json::from_str::<Value>(text)
            .map_err(|e| S::Error::custom(format!("embedded JSON is invalid: {e}")))?
            .serialize(serializer)
    }

    /// Reads any JSON value and keeps its text.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
        Ok(Value::deserialize(deserializer)?.to_string())
    }
}

/// [`json_text`] for an optional field, where JSON `null` means absent (rule C1).
pub mod json_text_opt {
    use super::*;

    /// Writes the text as the JSON value it holds.
    pub fn serialize<S: Serializer>(text: &Option<String>, serializer: S) -> Result<S::Ok, S::Error> {
        match text {
            Some(text) => json_text::serialize(text, serializer),
            None => serializer.serialize_none(),
        }
    }

    /// Reads any JSON value but `null` and keeps its text.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
        Ok(Option::<Value>::deserialize(deserializer)?.map(|value| value.to_string()))
    }
}

/// A field the contract expects to be a string (`loose-string` in the WIT).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(variant)
)]
pub enum LooseString {
    /// The value was a string, untrimmed.
    #[cfg_attr(feature = "wasmtime", component(name = "text"))]
    Text(String),
    /// The value was another JSON value; this is its JSON text.
    #[cfg_attr(feature = "wasmtime", component(name = "not-text"))]
    NotText(String),
}

impl LooseString {
    /// The string, when the value was one.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            Self::NotText(_) => None,
        }
    }

    /// The value as JSON text, for messages.
    pub fn to_json(&self) -> String {
        match self {
            Self::Text(text) => Value::from(text.as_str()).to_string(),
            Self::NotText(json) => json.clone(),
        }
    }
}

impl From<&str> for LooseString {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl Serialize for LooseString {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => serializer.serialize_str(text),
            Self::NotText(json) => json_text::serialize(json, serializer),
        }
    }
}

impl<'de> Deserialize<'de> for LooseString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(deserializer)? {
            Value::String(text) => Self::Text(text),
            other => Self::NotText(other.to_string()),
        })
    }
}

/// A field the contract expects to be a list of strings (`loose-strings` in the WIT).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(variant)
)]
pub enum LooseStrings {
    /// The value was an array of strings.
    #[cfg_attr(feature = "wasmtime", component(name = "strings"))]
    Strings(Vec<String>),
    /// The value was another JSON value; this is its JSON text.
    #[cfg_attr(feature = "wasmtime", component(name = "not-strings"))]
    NotStrings(String),
}

impl Serialize for LooseStrings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Strings(items) => items.serialize(serializer),
            Self::NotStrings(json) => json_text::serialize(json, serializer),
        }
    }
}

impl<'de> Deserialize<'de> for LooseStrings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if let Value::Array(items) = &value {
            let strings: Option<Vec<String>> = items.iter().map(|item| item.as_str().map(str::to_owned)).collect();
            if let Some(strings) = strings {
                return Ok(Self::Strings(strings));
            }
        }
        Ok(Self::NotStrings(value.to_string()))
    }
}

/// A `thinking` value (`thinking-setting` in the WIT, rule T3).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(variant)
)]
pub enum ThinkingSetting {
    /// A string, untrimmed.
    #[cfg_attr(feature = "wasmtime", component(name = "text"))]
    Text(String),
    /// JSON `false`.
    #[cfg_attr(feature = "wasmtime", component(name = "disabled"))]
    Disabled,
    /// Any other JSON value; this is its JSON text.
    #[cfg_attr(feature = "wasmtime", component(name = "invalid"))]
    Invalid(String),
}

impl Serialize for ThinkingSetting {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => serializer.serialize_str(text),
            Self::Disabled => serializer.serialize_bool(false),
            Self::Invalid(json) => json_text::serialize(json, serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ThinkingSetting {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(deserializer)? {
            Value::String(text) => Self::Text(text),
            Value::Bool(false) => Self::Disabled,
            other => Self::Invalid(other.to_string()),
        })
    }
}

/// Reads a value that only counts as a string: any other JSON value becomes `None`
/// (rule M1 treats a non-string parent-model part as absent).
pub fn string_or_none<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::String(text) => Some(text),
        _ => None,
    })
}

/// Reads a list of file paths where `false` means none (an empty list), so that a step can
/// drop its agent's default; anything but a list of strings or `false` is refused.
pub fn reads<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<String>>, D::Error> {
    use serde::de::Error;
    match Value::deserialize(deserializer)? {
        Value::Null => Ok(None),
        Value::Bool(false) => Ok(Some(Vec::new())),
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::String(text) => Ok(text),
                other => Err(D::Error::custom(format!("a read must be a file path, not {other}"))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        other => Err(D::Error::custom(format!(
            "reads must be a list of file paths or false, not {other}"
        ))),
    }
}

/// Reads a flag where only JSON `true` counts (rule L4): `true` is `Some(true)`, anything
/// else `None`.
pub fn true_or_none<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<bool>, D::Error> {
    Ok((Value::deserialize(deserializer)? == Value::Bool(true)).then_some(true))
}

/// Reads a list of extension or skill names and paths; anything but a list of strings is
/// refused.
pub fn names<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<String>>, D::Error> {
    use serde::de::Error;
    match Value::deserialize(deserializer)? {
        Value::Null => Ok(None),
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::String(text) => Ok(text),
                other => Err(D::Error::custom(format!(
                    "an entry must be a name or a path, not {other}"
                ))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        other => Err(D::Error::custom(format!(
            "expected a list of names or paths, not {other}"
        ))),
    }
}
