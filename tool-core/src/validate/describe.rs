//! The model-facing words for a failed validation: one line per problem, at its path, saying
//! what was expected and what was received. Only on the error path.

use serde_json::Value;

use super::ArgumentValidator;
use super::engine::{Error, Kind, Validator};
use crate::schema::{schema_at, schema_types};
use crate::words::plural;

const MAX_VALUE_CHARS: usize = 80;

impl ArgumentValidator {
    /// The problems `error` stands for, with `pointer` its full path in the arguments.
    pub(super) fn describe_error(&self, pointer: &str, error: &Error<'_>) -> Vec<String> {
        let pointer = pointer.to_owned();
        // A path holds the model's own keys where an object takes any: quoted at most 200
        // characters long, like every argument.
        let shown = crate::words::excerpt(&pointer).into_owned();
        let at = |_: &str| if shown.is_empty() { "(arguments)".to_owned() } else { shown.clone() };
        let received = describe_value(error.instance);
        match &error.kind {
            Kind::Required(name) => vec![format!("{shown}/{name}: missing required property")],
            Kind::AdditionalProperties(unexpected) | Kind::UnevaluatedProperties(unexpected) => {
                let valid = schema_at(&self.schema, &pointer)
                    .and_then(|s| s.get("properties"))
                    .and_then(Value::as_object)
                    .map(|props| props.keys().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "))
                    .unwrap_or_default();
                unexpected
                    .iter()
                    .map(|name| {
                        let name = crate::words::excerpt(name);
                        if valid.is_empty() {
                            format!("{shown}/{name}: unknown property; this object takes no properties")
                        } else {
                            format!("{shown}/{name}: unknown property; valid properties are {valid}")
                        }
                    })
                    .collect()
            }
            Kind::Type => {
                let schema = schema_at(&self.schema, &pointer);
                let mut expected = schema
                    .map(|s| schema_types(s).into_iter().map(type_phrase).collect::<Vec<_>>().join(" or "))
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "a different type".to_owned());
                // An object is named by its properties, so the model sees the shape to send.
                if let Some(shape) = schema.and_then(object_shape) {
                    expected = format!("{expected} with the properties {shape}");
                }
                vec![format!("{}: expected {expected}, received {received}", at(&pointer))]
            }
            Kind::Enum(options) => {
                let choices = options
                    .as_array()
                    .map(|o| o.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", "))
                    .unwrap_or_else(|| options.to_string());
                vec![format!("{}: expected one of {choices}, received {received}", at(&pointer))]
            }
            Kind::Const(expected_value) => {
                vec![format!("{}: expected {expected_value}, received {received}", at(&pointer))]
            }
            Kind::Minimum(limit) => {
                vec![format!("{}: must be at least {limit}, received {received}", at(&pointer))]
            }
            Kind::Maximum(limit) => {
                vec![format!("{}: must be at most {limit}, received {received}", at(&pointer))]
            }
            Kind::ExclusiveMinimum(limit) => {
                vec![format!("{}: must be greater than {limit}, received {received}", at(&pointer))]
            }
            Kind::ExclusiveMaximum(limit) => {
                vec![format!("{}: must be less than {limit}, received {received}", at(&pointer))]
            }
            Kind::MinLength(limit) => vec![format!(
                "{}: must be at least {} long, received {received}",
                at(&pointer),
                plural(*limit, "character")
            )],
            Kind::MaxLength(limit) => vec![format!(
                "{}: must be at most {} long, received {received}",
                at(&pointer),
                plural(*limit, "character")
            )],
            Kind::MinItems(limit) => vec![format!(
                "{}: must have at least {}, received {received}",
                at(&pointer),
                plural(*limit, "item")
            )],
            Kind::MaxItems(limit) => vec![format!(
                "{}: must have at most {}, received {received}",
                at(&pointer),
                plural(*limit, "item")
            )],
            Kind::Pattern(pattern) => vec![format!(
                "{}: must match the regular expression {pattern}, received {received}",
                at(&pointer)
            )],
            Kind::UniqueItems => {
                vec![format!("{}: items must be unique, received {received}", at(&pointer))]
            }
            Kind::Other(message) => vec![format!("{}: {message}", at(&pointer))],
            Kind::AnyOf | Kind::OneOfNone => {
                // `Option<T>` is written as `anyOf: [T, null]`: describe `T` itself.
                let inner = schema_at(&self.schema, &pointer);
                let choices = inner.and_then(allowed_values);
                let types = inner.map(schema_types).unwrap_or_default();
                if let Some(choices) = choices {
                    let choices = choices.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ");
                    vec![format!("{}: expected one of {choices}, received {received}", at(&pointer))]
                } else if let Some(problems) =
                    inner.and_then(|branch| self.problems_within(&pointer, branch, error))
                {
                    problems
                } else if !types.is_empty() && !types.contains(&"object") {
                    let expected = types.into_iter().map(type_phrase).collect::<Vec<_>>().join(" or ");
                    vec![format!("{}: expected {expected}, received {received}", at(&pointer))]
                } else {
                    vec![format!(
                        "{}: does not match any of the allowed forms, received {received}",
                        at(&pointer)
                    )]
                }
            }
            Kind::OneOfMany => vec![format!("{}: {}, received {received}", at(&pointer), error.kind)],
        }
    }

    /// An object that fails its only branch (an optional nested object): the problems inside
    /// it, at their own paths, instead of one "does not match" at the object. Only on the error
    /// path, so compiling the branch here costs a valid call nothing.
    fn problems_within(&self, pointer: &str, branch: &Value, error: &Error<'_>) -> Option<Vec<String>> {
        let instance = error.instance;
        if !instance.is_object() || branch.get("properties").is_none() {
            return None;
        }
        let mut schema = branch.as_object()?.clone();
        for defs in ["$defs", "definitions"] {
            if let Some(found) = self.schema.get(defs) {
                schema.insert(defs.to_owned(), found.clone());
            }
        }
        let validator = Validator::new(&Value::Object(schema)).ok()?;
        let problems: Vec<String> = validator
            .errors(instance)
            .iter()
            .flat_map(|inner| self.describe_error(&format!("{pointer}{}", inner.path), inner))
            .collect();
        (!problems.is_empty()).then_some(problems)
    }
}

/// The values a schema allows when it lists them: `enum`, or `oneOf`/`anyOf` of `const`s (how
/// an enum with documented variants is written).
fn allowed_values(schema: &Value) -> Option<Vec<Value>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return Some(values.clone());
    }
    for keyword in ["oneOf", "anyOf"] {
        let Some(branches) = schema.get(keyword).and_then(Value::as_array) else { continue };
        let values: Option<Vec<Value>> = branches
            .iter()
            .map(|b| {
                b.get("const").cloned().or_else(|| {
                    b.get("enum").and_then(Value::as_array).filter(|e| e.len() == 1).map(|e| e[0].clone())
                })
            })
            .collect();
        if let Some(values) = values.filter(|v| !v.is_empty()) {
            return Some(values);
        }
    }
    None
}

/// `` `label` (required), `description` `` for an object schema with declared properties.
fn object_shape(schema: &Value) -> Option<String> {
    if !schema_types(schema).contains(&"object") {
        return None;
    }
    let properties = schema.get("properties")?.as_object().filter(|p| !p.is_empty())?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let names: Vec<String> = properties
        .keys()
        .map(|name| {
            if required.contains(&name.as_str()) {
                format!("`{name}` (required)")
            } else {
                format!("`{name}`")
            }
        })
        .collect();
    Some(names.join(", "))
}

fn type_phrase(t: &str) -> String {
    match t {
        "integer" => "an integer".to_owned(),
        "number" => "a number".to_owned(),
        "string" => "a string".to_owned(),
        "boolean" => "a boolean (true or false)".to_owned(),
        "array" => "an array".to_owned(),
        "object" => "an object".to_owned(),
        "null" => "null".to_owned(),
        other => other.to_owned(),
    }
}

/// `"ten" (a string)`, `[1,2] (an array)`, ... clipped for long values.
pub(super) fn describe_value(value: &Value) -> String {
    let kind = match value {
        Value::Null => return "null".to_owned(),
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    format!("{} ({kind})", crate::words::excerpt_of(&value.to_string(), MAX_VALUE_CHARS))
}
