//! Argument validation: the call's arguments in, validated JSON out, or one error listing
//! every problem.
//!
//! A valid call is checked by the compiled JSON Schema alone. Only a call that fails it (or holds
//! a `null`) goes through the leniency pass (`plan.rs`: `null` for an optional property is absent,
//! strings are coerced where the schema wants a number, boolean, array or object, an argument
//! sent under a declared alias or in camelCase is moved to its parameter) and is checked again; a
//! call that still fails gets every problem described (`describe.rs`).

mod describe;
mod engine;
mod format;
mod path;
mod plan;
pub(crate) use plan::snake_case;

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::call::Arguments;
use crate::error::ToolError;
use describe::describe_value;
use engine::Validator;
use plan::Plan;

/// How lenient validation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidationOptions {
    /// Turn strings into numbers/booleans (`"10"` -> `10`, `"true"` -> `true`) and JSON-encoded
    /// strings into the arrays/objects the schema expects, and move arguments sent under an alias
    /// or in camelCase (`filePath`, `oldString`) to their parameters, before validating. Default:
    /// on.
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
    /// What the value was turned into: `integer`, `number`, `boolean`, `array` or `object`; or,
    /// for an argument sent under an alias of a parameter (or the camelCase spelling of a
    /// snake_case one), the JSON pointer it was moved to (`/path` for `/file_path`).
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

/// Checks that `schema` can be a tool's argument schema (a valid JSON Schema the validator
/// compiles), for tools whose schema comes from elsewhere (a mounted server); the error says
/// why not, naming `tool`.
pub fn check_input_schema(tool: &str, schema: &Value) -> Result<(), SchemaError> {
    ArgumentValidator::new(tool, schema)
        .map(drop)
        .map_err(|message| SchemaError { tool: tool.to_owned(), message })
}

/// A tool's argument schema that the validator cannot compile (from [`check_input_schema`]):
/// its text names the tool and the validator's complaint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    tool: String,
    message: String,
}

impl SchemaError {
    /// The tool whose schema it is.
    pub fn tool(&self) -> &str {
        &self.tool
    }
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SchemaError {}

/// A tool's rewriting of arguments sent in another tool's shape (see
/// [`Tool::adapt_arguments`](crate::Tool::adapt_arguments)), applied in the leniency pass.
pub(crate) type Adapt<'a> = &'a dyn Fn(&mut Map<String, Value>, &mut Vec<Coercion>);

/// A compiled validator for one tool's argument schema, with its leniency plan.
pub(crate) struct ArgumentValidator {
    tool: String,
    schema: Value,
    validator: Validator,
    plan: Plan,
    /// For a freeform tool, the property that receives free-form text.
    freeform: Option<String>,
}

impl std::fmt::Debug for ArgumentValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgumentValidator").field("tool", &self.tool).finish_non_exhaustive()
    }
}

impl ArgumentValidator {
    /// Compiles `schema` for the tool `tool`. Fails when the schema itself is invalid.
    pub(crate) fn new(tool: &str, schema: &Value) -> Result<Self, String> {
        let validator = Validator::new(schema)
            .map_err(|e| format!("the input schema of tool `{tool}` is invalid: {e}"))?;
        Ok(ArgumentValidator {
            tool: tool.to_owned(),
            schema: schema.clone(),
            validator,
            plan: Plan::compile(schema),
            freeform: None,
        })
    }

    /// Accepts the arguments sent under these aliases (see [`ToolSpec::aliases`]) as the
    /// parameters they name, when leniency is on.
    ///
    /// [`ToolSpec::aliases`]: crate::ToolSpec::aliases
    pub(crate) fn with_aliases(mut self, aliases: &[crate::spec::ParameterAlias]) -> Self {
        self.plan.add_root_aliases(aliases.iter().map(|a| (a.alias.as_str(), a.parameter.as_str())));
        self
    }

    /// Accepts free-form text ([`Arguments::Freeform`]) as the string property `parameter`.
    pub(crate) fn with_freeform(mut self, parameter: Option<&str>) -> Self {
        self.freeform = parameter.map(str::to_owned);
        self
    }

    /// Validates one call's arguments: text is parsed (empty text is `{}`), a value is taken as
    /// it is. `adapt`, the tool's own rewriting of arguments sent in another tool's shape, runs
    /// first in the leniency pass.
    pub(crate) fn validate(
        &self,
        arguments: Arguments,
        options: ValidationOptions,
        adapt: Option<Adapt<'_>>,
    ) -> Result<ValidatedArgs, ToolError> {
        match arguments {
            Arguments::Text(text) => self.validate_text(&text, options, adapt),
            Arguments::Json(value) => self.check(value, None, options, adapt),
            Arguments::Freeform { freeform } => match &self.freeform {
                Some(parameter) => {
                    let mut object = Map::new();
                    object.insert(parameter.clone(), Value::String(freeform));
                    self.check(Value::Object(object), None, options, adapt)
                }
                None => Err(ToolError::invalid_arguments(format!(
                    "`{}` takes JSON arguments, not free-form text. Call it as a function with a JSON object of \
                     its arguments.",
                    self.tool
                ))),
            },
        }
    }

    /// What is wrong with an example argument object, described as a call's problems are; empty
    /// when it is valid. No leniency applies: an example shows a call as it should be written.
    pub(crate) fn example_problems(&self, example: &Value) -> Vec<String> {
        if !example.is_object() {
            return vec![format!(
                "the arguments must be a JSON object with named properties, received {}",
                describe_value(example)
            )];
        }
        self.validator
            .errors(example)
            .iter()
            .flat_map(|error| self.describe_error(&error.path, error))
            .collect()
    }

    /// Validates arguments given as JSON text.
    fn validate_text(
        &self,
        raw: &str,
        options: ValidationOptions,
        adapt: Option<Adapt<'_>>,
    ) -> Result<ValidatedArgs, ToolError> {
        let trimmed = raw.trim();
        let value = if trimmed.is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str(trimmed).map_err(|e| self.json_error(raw, &e))?
        };
        self.check(value, Some(raw), options, adapt)
    }

    /// `raw` is the text the value was parsed from, if any: what the error echoes.
    fn check(
        &self,
        mut value: Value,
        raw: Option<&str>,
        options: ValidationOptions,
        adapt: Option<Adapt<'_>>,
    ) -> Result<ValidatedArgs, ToolError> {
        // A valid call pays nothing for leniency: normalizing only changes what holds a `null`
        // (dropped: absent) or what fails validation (coerced), so a call without either is
        // taken as it is.
        if value.is_object() && !holds_null(&value) && self.validator.is_valid(&value) {
            return Ok(ValidatedArgs { value, coercions: Vec::new() });
        }
        // The error echoes the arguments as received, before any fix.
        let received = match raw {
            Some(raw) => Cow::Borrowed(raw),
            None => Cow::Owned(value.to_string()),
        };
        let mut coercions = Vec::new();
        if options.coerce
            && let Some(adapt) = adapt
            && let Value::Object(map) = &mut value
        {
            adapt(map, &mut coercions);
        }
        self.plan.normalize(&mut value, options.coerce, &mut coercions);
        if !value.is_object() {
            return Err(self.invalid(
                &received,
                vec![format!(
                    "the arguments must be a JSON object with named properties, received {}",
                    describe_value(&value)
                )],
            ));
        }
        // Most calls are valid once normalized: the fast check, and the one that lists problems
        // only for a call that has some.
        if self.validator.is_valid(&value) {
            return Ok(ValidatedArgs { value, coercions });
        }
        let problems: Vec<String> = self
            .validator
            .errors(&value)
            .iter()
            .flat_map(|error| self.describe_error(&error.path, error))
            .collect();
        if problems.is_empty() {
            Ok(ValidatedArgs { value, coercions })
        } else {
            Err(self.invalid(&received, problems))
        }
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
        let _ = writeln!(message, "Arguments received: {}", crate::words::excerpt(raw.trim()));
        let _ = write!(message, "Fix the arguments and call `{}` again.", self.tool);
        ToolError::invalid_arguments(message)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_the_validator_cannot_compile_is_an_error_naming_the_tool() {
        let error = check_input_schema("lookup", &serde_json::json!({"type": 7})).unwrap_err();
        assert_eq!(error.tool(), "lookup");
        assert!(error.to_string().starts_with("the input schema of tool `lookup` is invalid: "), "{error}");
        assert!(check_input_schema("lookup", &serde_json::json!({"type": "object"})).is_ok());
    }
}
