//! Argument validation: raw JSON text in, validated JSON out, or one error listing every problem.

use std::fmt::Write as _;

use jsonschema::error::{ValidationError, ValidationErrorKind};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::ToolError;
use crate::schema::{branch_for, resolve, schema_at, schema_types};

/// How lenient validation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidationOptions {
    /// Turn strings into numbers/booleans (`"10"` -> `10`, `"true"` -> `true`) and JSON-encoded
    /// strings into the arrays/objects the schema expects, before validating. Default: on.
    pub coerce: bool,
}

impl Default for ValidationOptions {
    fn default() -> Self {
        ValidationOptions { coerce: true }
    }
}

/// One lenient fix applied to the model's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coercion {
    /// JSON pointer of the value that was changed (empty for the whole object).
    pub path: String,
    /// What the value was turned into: `integer`, `number`, `boolean`, `array` or `object`.
    pub to: String,
}

/// Arguments that passed validation.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidatedArgs {
    /// The argument object, after dropping nulls for optional properties and any coercions.
    pub value: Value,
    /// The lenient fixes applied, in order.
    pub coercions: Vec<Coercion>,
}

/// A compiled validator for one tool's argument schema.
pub struct ArgumentValidator {
    tool: String,
    schema: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for ArgumentValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgumentValidator").field("tool", &self.tool).finish_non_exhaustive()
    }
}

const MAX_ECHO_CHARS: usize = 2000;
const MAX_VALUE_CHARS: usize = 80;

impl ArgumentValidator {
    /// Compiles `schema` for the tool `tool`. Fails when the schema itself is invalid.
    pub fn new(tool: &str, schema: &Value) -> Result<Self, String> {
        let validator =
            compile(schema).map_err(|e| format!("the input schema of tool `{tool}` is invalid: {e}"))?;
        Ok(ArgumentValidator { tool: tool.to_owned(), schema: schema.clone(), validator })
    }

    /// Parses, normalizes, coerces and validates the raw argument text of one call.
    pub fn validate(&self, raw: &str, options: ValidationOptions) -> Result<ValidatedArgs, ToolError> {
        let trimmed = raw.trim();
        let mut value: Value = if trimmed.is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str(trimmed).map_err(|e| self.json_error(raw, &e))?
        };
        self.validate_value_inner(&mut value, raw, options)
            .map(|coercions| ValidatedArgs { value, coercions })
    }

    /// Like [`validate`](Self::validate), for arguments that are already parsed.
    pub fn validate_value(
        &self,
        mut value: Value,
        options: ValidationOptions,
    ) -> Result<ValidatedArgs, ToolError> {
        let raw = value.to_string();
        self.validate_value_inner(&mut value, &raw, options)
            .map(|coercions| ValidatedArgs { value, coercions })
    }

    fn validate_value_inner(
        &self,
        value: &mut Value,
        raw: &str,
        options: ValidationOptions,
    ) -> Result<Vec<Coercion>, ToolError> {
        // A valid call pays nothing for leniency: normalizing only changes what holds a `null`
        // (dropped: absent) or what fails validation (coerced), so a call without either is
        // taken as it is.
        if value.is_object() && !holds_null(value) && self.validator.is_valid(value) {
            return Ok(Vec::new());
        }
        let mut coercions = Vec::new();
        let mut path = String::new();
        normalize(value, &self.schema, &self.schema, &mut path, options.coerce, &mut coercions, 0);
        if !value.is_object() {
            return Err(self.invalid(
                raw,
                vec![format!(
                    "the arguments must be a JSON object with named properties, received {}",
                    describe_value(value)
                )],
            ));
        }
        let problems: Vec<String> = self
            .validator
            .iter_errors(value)
            .flat_map(|error| self.describe_error(error.instance_path().as_str(), &error))
            .collect();
        if problems.is_empty() { Ok(coercions) } else { Err(self.invalid(raw, problems)) }
    }

    fn json_error(&self, raw: &str, error: &serde_json::Error) -> ToolError {
        let what = match error.classify() {
            serde_json::error::Category::Eof => "the JSON ends too early (is it cut off?)".to_owned(),
            _ => {
                let mut message = error.to_string();
                if let Some(at) = message.find(" at line ") {
                    message.truncate(at);
                }
                message
            }
        };
        let problem = format!(
            "the arguments are not valid JSON: {what} at line {} column {}",
            error.line(),
            error.column()
        );
        self.invalid(raw, vec![problem])
    }

    fn invalid(&self, raw: &str, problems: Vec<String>) -> ToolError {
        let mut message = format!("Invalid arguments for tool `{}`:\n", self.tool);
        for problem in &problems {
            let _ = writeln!(message, "- {problem}");
        }
        let _ = writeln!(message, "Arguments received: {}", clip(raw.trim(), MAX_ECHO_CHARS));
        let _ = write!(message, "Fix the arguments and call `{}` again.", self.tool);
        ToolError::invalid_arguments(message)
    }

    /// The problems `error` stands for, with `pointer` its full path in the arguments.
    fn describe_error(&self, pointer: &str, error: &ValidationError<'_>) -> Vec<String> {
        let pointer = pointer.to_owned();
        let at = |p: &str| if p.is_empty() { "(arguments)".to_owned() } else { p.to_owned() };
        let received = describe_value(error.instance());
        match error.kind() {
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().map(str::to_owned).unwrap_or_else(|| property.to_string());
                vec![format!("{pointer}/{name}: missing required property")]
            }
            ValidationErrorKind::AdditionalProperties { unexpected }
            | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
                let valid = schema_at(&self.schema, &pointer)
                    .and_then(|s| s.get("properties"))
                    .and_then(Value::as_object)
                    .map(|props| props.keys().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "))
                    .unwrap_or_default();
                unexpected
                    .iter()
                    .map(|name| {
                        if valid.is_empty() {
                            format!("{pointer}/{name}: unknown property; this object takes no properties")
                        } else {
                            format!("{pointer}/{name}: unknown property; valid properties are {valid}")
                        }
                    })
                    .collect()
            }
            ValidationErrorKind::Type { .. } => {
                let expected = schema_at(&self.schema, &pointer)
                    .map(|s| schema_types(s).into_iter().map(type_phrase).collect::<Vec<_>>().join(" or "))
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "a different type".to_owned());
                vec![format!("{}: expected {expected}, received {received}", at(&pointer))]
            }
            ValidationErrorKind::Enum { options } => {
                let choices = options
                    .as_array()
                    .map(|o| o.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", "))
                    .unwrap_or_else(|| options.to_string());
                vec![format!("{}: expected one of {choices}, received {received}", at(&pointer))]
            }
            ValidationErrorKind::Constant { expected_value } => {
                vec![format!("{}: expected {expected_value}, received {received}", at(&pointer))]
            }
            ValidationErrorKind::Minimum { limit } => {
                vec![format!("{}: must be at least {limit}, received {received}", at(&pointer))]
            }
            ValidationErrorKind::Maximum { limit } => {
                vec![format!("{}: must be at most {limit}, received {received}", at(&pointer))]
            }
            ValidationErrorKind::ExclusiveMinimum { limit } => {
                vec![format!("{}: must be greater than {limit}, received {received}", at(&pointer))]
            }
            ValidationErrorKind::ExclusiveMaximum { limit } => {
                vec![format!("{}: must be less than {limit}, received {received}", at(&pointer))]
            }
            ValidationErrorKind::MinLength { limit } => vec![format!(
                "{}: must be at least {limit} character{} long, received {received}",
                at(&pointer),
                plural(*limit)
            )],
            ValidationErrorKind::MaxLength { limit } => vec![format!(
                "{}: must be at most {limit} character{} long, received {received}",
                at(&pointer),
                plural(*limit)
            )],
            ValidationErrorKind::MinItems { limit } => vec![format!(
                "{}: must have at least {limit} item{}, received {received}",
                at(&pointer),
                plural(*limit)
            )],
            ValidationErrorKind::MaxItems { limit } => vec![format!(
                "{}: must have at most {limit} item{}, received {received}",
                at(&pointer),
                plural(*limit)
            )],
            ValidationErrorKind::Pattern { pattern } => vec![format!(
                "{}: must match the regular expression {pattern}, received {received}",
                at(&pointer)
            )],
            ValidationErrorKind::UniqueItems => {
                vec![format!("{}: items must be unique, received {received}", at(&pointer))]
            }
            ValidationErrorKind::Format { format } => {
                vec![format!("{}: must be a valid {format}, received {received}", at(&pointer))]
            }
            ValidationErrorKind::Custom { message, .. } => vec![format!("{}: {message}", at(&pointer))],
            ValidationErrorKind::AnyOf { .. } | ValidationErrorKind::OneOfNotValid { .. } => {
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
                } else if !types.is_empty() && !types.iter().any(|t| *t == "object") {
                    let expected = types.into_iter().map(type_phrase).collect::<Vec<_>>().join(" or ");
                    vec![format!("{}: expected {expected}, received {received}", at(&pointer))]
                } else {
                    vec![format!(
                        "{}: does not match any of the allowed forms, received {received}",
                        at(&pointer)
                    )]
                }
            }
            _ => vec![format!("{}: {error}", at(&pointer))],
        }
    }
}

impl ArgumentValidator {
    /// An object that fails its only branch (an optional nested object): the problems inside
    /// it, at their own paths, instead of one "does not match" at the object. Only on the error
    /// path, so compiling the branch here costs a valid call nothing.
    fn problems_within(
        &self,
        pointer: &str,
        branch: &Value,
        error: &ValidationError<'_>,
    ) -> Option<Vec<String>> {
        let instance = error.instance();
        if !instance.is_object() || branch.get("properties").is_none() {
            return None;
        }
        let mut schema = branch.as_object()?.clone();
        for defs in ["$defs", "definitions"] {
            if let Some(found) = self.schema.get(defs) {
                schema.insert(defs.to_owned(), found.clone());
            }
        }
        let validator = compile(&Value::Object(schema)).ok()?;
        let problems: Vec<String> = validator
            .iter_errors(&instance)
            .flat_map(|inner| {
                self.describe_error(&format!("{pointer}{}", inner.instance_path().as_str()), &inner)
            })
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

/// The validator for a schema, with integer formats enforced.
fn compile(schema: &Value) -> Result<jsonschema::Validator, ValidationError<'static>> {
    jsonschema::draft202012::options()
        .with_keyword("format", |_, value, _| Ok(Box::new(IntegerFormat::for_format(value.as_str()))))
        .build(schema)
}

/// The `format` keyword, checked for the integer formats schemars writes (`uint32`, `int8`,
/// ...): the value must be written as an integer (`10`, not `10.0`) within the type's range,
/// so what passes validation also decodes. Other formats stay annotations, as draft 2020-12
/// has them by default.
struct IntegerFormat {
    bounds: Option<(&'static str, i128, i128)>,
}

impl IntegerFormat {
    fn for_format(format: Option<&str>) -> Self {
        let bounds = match format {
            Some("int8") => Some(("int8", i128::from(i8::MIN), i128::from(i8::MAX))),
            Some("int16") => Some(("int16", i128::from(i16::MIN), i128::from(i16::MAX))),
            Some("int32") => Some(("int32", i128::from(i32::MIN), i128::from(i32::MAX))),
            Some("int64" | "int" | "int128") => Some(("int64", i128::from(i64::MIN), i128::from(i64::MAX))),
            Some("uint8") => Some(("uint8", 0, i128::from(u8::MAX))),
            Some("uint16") => Some(("uint16", 0, i128::from(u16::MAX))),
            Some("uint32") => Some(("uint32", 0, i128::from(u32::MAX))),
            Some("uint64" | "uint" | "uint128") => Some(("uint64", 0, i128::from(u64::MAX))),
            _ => None,
        };
        IntegerFormat { bounds }
    }

    fn problem(&self, instance: &Value) -> Option<String> {
        let (name, min, max) = self.bounds?;
        let Value::Number(number) = instance else { return None };
        let value = match (number.as_i64(), number.as_u64()) {
            (Some(n), _) => i128::from(n),
            (None, Some(n)) => i128::from(n),
            (None, None) => {
                return Some(format!(
                    "expected an integer written without a fraction or exponent, received {}",
                    describe_value(instance)
                ));
            }
        };
        if value < min {
            Some(format!(
                "must be at least {min} (the smallest {name}), received {}",
                describe_value(instance)
            ))
        } else if value > max {
            Some(format!("must be at most {max} (the largest {name}), received {}", describe_value(instance)))
        } else {
            None
        }
    }
}

impl<'i> jsonschema::Keyword<'i> for IntegerFormat {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        match self.problem(instance) {
            Some(message) => Err(ValidationError::custom(message)),
            None => Ok(()),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.problem(instance).is_none()
    }
}

/// Whether `value` holds a `null` anywhere.
fn holds_null(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.iter().any(holds_null),
        Value::Object(map) => map.values().any(holds_null),
        _ => false,
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
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
fn describe_value(value: &Value) -> String {
    let kind = match value {
        Value::Null => return "null".to_owned(),
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    format!("{} ({kind})", clip(&value.to_string(), MAX_VALUE_CHARS))
}

fn clip(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}... ({} characters in all)", &text[..cut], text.chars().count()),
    }
}

/// Drops `null` for optional properties and applies lenient coercions, guided by the schema.
fn normalize(
    value: &mut Value,
    schema: &Value,
    root: &Value,
    path: &mut String,
    coerce: bool,
    coercions: &mut Vec<Coercion>,
    depth: usize,
) {
    if depth > 64 {
        return;
    }
    let schema = branch_for(root, resolve(root, schema), value);
    if coerce {
        coerce_scalar(value, schema, path, coercions);
    }
    // A string coerced into an object may now select a different branch.
    let schema = branch_for(root, schema, value);
    match value {
        Value::Object(map) => {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let properties = schema.get("properties").and_then(Value::as_object);
            map.retain(|key, v| {
                !(v.is_null()
                    && !required.contains(&key.as_str())
                    && properties.is_some_and(|p| p.contains_key(key)))
            });
            let Some(properties) = properties else { return };
            for (key, v) in map.iter_mut() {
                if let Some(sub) = properties.get(key) {
                    let len = path.len();
                    path.push('/');
                    path.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    normalize(v, sub, root, path, coerce, coercions, depth + 1);
                    path.truncate(len);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) else {
                return;
            };
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                let _ = write!(path, "/{i}");
                normalize(item, item_schema, root, path, coerce, coercions, depth + 1);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn coerce_scalar(value: &mut Value, schema: &Value, path: &str, coercions: &mut Vec<Coercion>) {
    let Value::String(text) = value else { return };
    let types = schema_types(schema);
    if types.is_empty() || types.contains(&"string") {
        return;
    }
    let trimmed = text.trim();
    let replacement = if types.contains(&"integer")
        && let Ok(n) = trimmed.parse::<i64>()
    {
        Some((Value::from(n), "integer"))
    } else if types.contains(&"integer")
        && let Ok(n) = trimmed.parse::<u64>()
    {
        Some((Value::from(n), "integer"))
    } else if types.contains(&"number")
        && let Some(n) = trimmed.parse::<f64>().ok().and_then(serde_json::Number::from_f64)
    {
        Some((Value::Number(n), "number"))
    } else if types.contains(&"boolean") && matches!(trimmed, "true" | "false" | "True" | "False") {
        Some((Value::Bool(trimmed.eq_ignore_ascii_case("true")), "boolean"))
    } else if types.contains(&"array") || types.contains(&"object") {
        match serde_json::from_str::<Value>(trimmed) {
            Ok(parsed @ Value::Array(_)) if types.contains(&"array") => Some((parsed, "array")),
            Ok(parsed @ Value::Object(_)) if types.contains(&"object") => Some((parsed, "object")),
            _ => None,
        }
    } else {
        None
    };
    if let Some((new_value, to)) = replacement {
        *value = new_value;
        coercions.push(Coercion { path: path.to_owned(), to: to.to_owned() });
    }
}
