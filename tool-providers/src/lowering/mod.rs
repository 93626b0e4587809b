//! Schema lowering: the canonical draft 2020-12 argument schema rewritten for a provider's dialect.//!
//! What every dialect shares lives here: the root check, the common errors, `$ref` resolution,
//! constraints moved into descriptions. [`strict`] lowers for OpenAI's and Anthropic's strict
//! modes, [`gemini`](mod@gemini) for Gemini's `Schema` object.

mod gemini;
mod strict;

pub(crate) use gemini::gemini;
pub(crate) use strict::{anthropic_strict, openai_parameters};

use serde_json::{Map, Value};

use crate::{LoweringError, Provider, json_kind};
use tool_core::words;

/// Which tool is being lowered for which provider, for error messages.
#[derive(Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) provider: Provider,
    pub(crate) strict: bool,
    pub(crate) tool: &'a str,
}

impl Target<'_> {
    /// An error about the schema at `location`; `reason` continues "the argument `x` ..." (or
    /// "the argument schema ..." at the top), e.g. "is a map with free-form keys".
    fn error(&self, location: &str, reason: impl Into<String>) -> LoweringError {
        let subject = if location.is_empty() {
            "the argument schema".to_owned()
        } else {
            format!("the argument `{location}`")
        };
        LoweringError {
            provider: self.provider,
            strict: self.strict,
            tool: self.tool.to_owned(),
            location: location.to_owned(),
            reason: format!("{subject} {}", reason.into()),
        }
    }

    fn name(&self) -> &'static str {
        match (self.strict, self.provider) {
            (true, Provider::Anthropic) => "Anthropic strict tool use",
            (true, _) => "OpenAI strict mode",
            (false, provider) => provider.display_name(),
        }
    }
}

/// Keywords that change which values are valid in ways no provider dialect here can express.
const STRUCTURAL_KEYWORDS: &[&str] = &[
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "propertyNames",
    "prefixItems",
    "contains",
    "minContains",
    "maxContains",
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$recursiveRef",
];

/// Integer and number formats written by schemars (`uint32`, `double`, ...). They restate the
/// type and its range (already in `minimum`/`maximum`), so dropping them loses nothing the model
/// needs.
const NUMERIC_FORMATS: &[&str] = &[
    "int", "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32", "uint64",
    "uint128", "float", "double",
];

/// The instance location of property `name` under `location` (`edits[].old`).
fn child(location: &str, name: &str) -> String {
    if location.is_empty() { name.to_owned() } else { format!("{location}.{name}") }
}

fn items_of(location: &str) -> String {
    format!("{location}[]")
}

/// Checks that the root of an argument schema is a plain object schema: `type: object`, and
/// (unless `allow_combinators`) no `anyOf`/`oneOf`/`allOf` beside it. OpenAI ("Root objects must
/// not be anyOf and must be an object"), Anthropic (`input_schema.type` is `"object"`) and Gemini
/// (`parameters` is an OBJECT schema) all require that shape; MCP requires `type: object` only.
pub(crate) fn check_root<'v>(
    target: &Target<'_>,
    schema: &'v Value,
    allow_combinators: bool,
) -> Result<&'v Map<String, Value>, LoweringError> {
    let Some(map) = schema.as_object() else {
        return Err(target.error("", format!("must be a JSON Schema object, found {}", json_kind(schema))));
    };
    if map.get("type").and_then(Value::as_str) != Some("object") {
        return Err(target.error(
            "",
            format!(
                "must be `\"type\": \"object\"` at the top, as {} requires; take the arguments as a struct with named fields",
                target.name()
            ),
        ));
    }
    if !allow_combinators {
        for keyword in ["anyOf", "oneOf", "allOf"] {
            if map.contains_key(keyword) {
                return Err(target.error(
                    "",
                    format!(
                        "uses `{keyword}` at the top, which {} does not accept there; take the arguments as a struct with named fields",
                        target.name()
                    ),
                ));
            }
        }
    }
    Ok(map)
}

/// The schema without its `$schema` key (for providers that do not document one).
pub(crate) fn without_dialect(schema: &Value) -> Value {
    let mut schema = served(schema);
    if let Value::Object(map) = &mut schema {
        map.shift_remove("$schema");
    }
    schema
}

/// The `format` values JSON Schema draft 2020-12 defines (its section 7.3, "Defined Formats").
pub(crate) const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// A schema as it is served unlowered (MCP, Anthropic, Gemini's `parametersJsonSchema`, OpenAI
/// without strict mode): without the `format` values JSON Schema does not define. Those are
/// schemars' numeric formats (`uint64`, `int32`, `double`, ...), which restate the type (the
/// range that matters stays in `minimum`/`maximum`) and which clients such as Gemini CLI warn
/// about, one line each. The canonical schema keeps them: validation checks integer ranges by
/// them.
pub(crate) fn served(schema: &Value) -> Value {
    let mut schema = schema.clone();
    drop_unknown_formats(&mut schema, 0);
    schema
}

fn drop_unknown_formats(schema: &mut Value, depth: usize) {
    if depth > 64 {
        return;
    }
    match schema {
        Value::Object(map) => {
            if map.get("format").and_then(Value::as_str).is_some_and(|f| !STANDARD_FORMATS.contains(&f)) {
                map.shift_remove("format");
            }
            for (key, value) in map.iter_mut() {
                // Values, not schemas: a `format` key in them is data.
                if !matches!(key.as_str(), "const" | "enum" | "default" | "examples") {
                    drop_unknown_formats(value, depth + 1);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| drop_unknown_formats(item, depth + 1)),
        _ => {}
    }
}

/// Merges a one-element `allOf` into the schema around it (schemars writes `allOf: [{$ref}]` for
/// some annotated references); keys already present win. Longer `allOf` lists are an error.
fn merge_single_all_of(
    target: &Target<'_>,
    map: &mut Map<String, Value>,
    location: &str,
) -> Result<(), LoweringError> {
    let Some(all_of) = map.shift_remove("allOf") else { return Ok(()) };
    match all_of {
        Value::Array(mut parts) if parts.len() == 1 => match parts.pop() {
            Some(Value::Object(part)) => {
                for (key, value) in part {
                    map.entry(key).or_insert(value);
                }
                Ok(())
            }
            _ => Err(target.error(location, "has an `allOf` that does not hold a schema object")),
        },
        _ => Err(target.error(
            location,
            format!(
                "combines several schemas with `allOf`, which {} does not support; use one struct",
                target.name()
            ),
        )),
    }
}

fn structural_error(target: &Target<'_>, location: &str, keyword: &str) -> LoweringError {
    target.error(
        location,
        format!(
            "uses the JSON Schema keyword `{keyword}`, which {} does not support; express the constraint in the tool's own validation instead",
            target.name()
        ),
    )
}

fn any_value_error(target: &Target<'_>, location: &str) -> LoweringError {
    target.error(
        location,
        format!(
            "accepts any JSON value (no type), which {} cannot express; give it a concrete type",
            target.name()
        ),
    )
}

/// A `$ref` that this module can follow: `#`, `#/$defs/NAME` or `#/definitions/NAME`.
fn resolve<'v>(
    target: &Target<'_>,
    root: &'v Value,
    reference: &str,
    location: &str,
) -> Result<&'v Value, LoweringError> {
    let bad = || {
        target.error(
            location,
            format!("uses the reference `{reference}`; only references to `#/$defs/NAME` are supported"),
        )
    };
    if reference == "#" {
        return Ok(root);
    }
    let Some(rest) = reference.strip_prefix("#/") else { return Err(bad()) };
    let Some((container, name)) = rest.split_once('/') else { return Err(bad()) };
    if !matches!(container, "$defs" | "definitions") || name.contains('/') {
        return Err(bad());
    }
    let name = name.replace("~1", "/").replace("~0", "~");
    root.get(container).and_then(|defs| defs.get(&name)).ok_or_else(|| {
        target.error(location, format!("refers to `{reference}`, which the schema does not define"))
    })
}

/// The type name a reference points at, for messages (`#/$defs/Section` -> `Section`).
fn reference_name(reference: &str) -> &str {
    if reference == "#" { "the arguments" } else { reference.rsplit('/').next().unwrap_or(reference) }
}

/// The `type` keyword as a list of names.
fn types_of(map: &Map<String, Value>) -> Vec<&str> {
    match map.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A count from a schema keyword with its noun; a value that is not a count stays as written.
fn plural(n: &Value, unit: &str) -> String {
    match n.as_u64() {
        Some(n) => words::plural(n, unit),
        None => format!("{n} {unit}s"),
    }
}

/// A constraint the provider cannot check, said in words for the description, so the model
/// still knows it (the runtime validates every argument against the canonical schema anyway).
fn constraint_note(keyword: &str, value: &Value) -> Option<String> {
    Some(match keyword {
        "minLength" => format!("at least {}", plural(value, "character")),
        "maxLength" => format!("at most {}", plural(value, "character")),
        "minItems" => format!("at least {}", plural(value, "item")),
        "maxItems" => format!("at most {}", plural(value, "item")),
        "minProperties" => format!("at least {}", plural(value, "entry").replace("entrys", "entries")),
        "maxProperties" => format!("at most {}", plural(value, "entry").replace("entrys", "entries")),
        "uniqueItems" if value == &Value::Bool(true) => "items must be unique".to_owned(),
        "multipleOf" => format!("a multiple of {value}"),
        "exclusiveMinimum" => format!("greater than {value}"),
        "exclusiveMaximum" => format!("less than {value}"),
        "format" => format!("format: {}", value.as_str()?),
        "minimum" => format!("at least {value}"),
        "maximum" => format!("at most {value}"),
        _ => return None,
    })
}

/// Appends constraint notes to the description: `What to look for. (at most 200 characters)`.
fn add_notes(map: &mut Map<String, Value>, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    let note = format!("({})", notes.join(", "));
    match map.get_mut("description") {
        Some(Value::String(description)) if !description.is_empty() => {
            description.push(' ');
            description.push_str(&note);
        }
        _ => {
            map.insert("description".to_owned(), Value::String(note));
        }
    }
}

/// The keyword map of a subschema every provider lowering starts from: an object schema (not
/// `true`/`false`/another value), with a one-element `allOf` merged and no structural keywords.
fn object_node(
    target: &Target<'_>,
    schema: &Value,
    location: &str,
) -> Result<Map<String, Value>, LoweringError> {
    let mut map = match schema {
        Value::Object(map) => map.clone(),
        Value::Bool(true) => return Err(any_value_error(target, location)),
        Value::Bool(false) => {
            return Err(target.error(location, "has the schema `false`, which no value satisfies"));
        }
        other => {
            return Err(
                target.error(location, format!("has a schema that is {}, not an object", json_kind(other)))
            );
        }
    };
    merge_single_all_of(target, &mut map, location)?;
    if let Some(keyword) = map.keys().find(|k| STRUCTURAL_KEYWORDS.contains(&k.as_str())) {
        return Err(structural_error(target, location, keyword));
    }
    Ok(map)
}
