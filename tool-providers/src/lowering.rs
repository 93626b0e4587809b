//! Schema lowering: the canonical draft 2020-12 argument schema rewritten for a provider's dialect.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

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

/// The string formats OpenAI strict mode supports ("Supported properties" in the Structured
/// Outputs guide, <https://platform.openai.com/docs/guides/structured-outputs#supported-schemas>).
const OPENAI_STRICT_FORMATS: &[&str] =
    &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];

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

// ---------------------------------------------------------------------------------------------
// OpenAI strict mode
// ---------------------------------------------------------------------------------------------

/// Lowers a canonical argument schema for OpenAI strict mode, following the Structured Outputs
/// guide's "Supported schemas" (<https://platform.openai.com/docs/guides/structured-outputs#supported-schemas>):
///
/// - "All fields must be required": every property is listed in `required`; a property that was
///   optional becomes nullable ("emulate an optional parameter by using a union type with
///   null"); the runtime drops those nulls again before deserializing.
/// - "additionalProperties: false must always be set in objects": every object is closed; a map
///   with free-form keys or an object of any shape cannot be expressed and is an error.
/// - A `$ref` may not have sibling keywords (the rule the official SDK's `to_strict_json_schema`
///   enforces): the referenced schema is inlined with the siblings; a recursive reference, which
///   cannot be inlined, moves into a one-branch `anyOf` instead. "Recursive schemas are
///   supported", so `$defs` and plain `$ref`s stay.
/// - Only the supported keywords remain: `oneOf` becomes `anyOf` (the branches of serde enums
///   are disjoint, so nothing changes); string `format`s outside the supported list and
///   `minLength`, `maxLength`, `uniqueItems`, `minProperties`, `maxProperties` move into the
///   description as words; "not yet supported" composition (`allOf` of several schemas, `not`,
///   `if`/`then`/`else`, `dependent*`) and tuple or pattern keywords are errors.
/// - A nullable array or object is written `anyOf: [..., {"type": "null"}]`, not
///   `type: ["array", "null"]`, which the API rejects ("array schema missing items").
/// - The size limits (5000 properties, 10 levels of nesting, 1000 enum values, 120,000
///   characters of names and enum values) are checked here rather than by a failed request.
pub(crate) fn openai_strict(target: &Target<'_>, schema: &Value) -> Result<Value, LoweringError> {
    let lowered = strict_lowering(target, schema, Dialect::OpenAi)?;
    check_openai_limits(target, &lowered)?;
    Ok(lowered)
}

/// Lowers a canonical argument schema for Anthropic strict tool use, following "JSON Schema
/// limitations" in Anthropic's structured outputs guide: the OpenAI lowering's closed objects,
/// `$ref`s without siblings and supported keywords, except that
///
/// - optional properties stay optional (Anthropic does not require every property), so a
///   schema keeps its shape and examples stay valid;
/// - numeric bounds (`minimum`, `maximum`, `exclusive*`, `multipleOf`), `maxItems` and a
///   `minItems` above 1, which the API rejects, move into the description as words (the
///   runtime still validates every argument against the canonical schema);
/// - a recursive type is an error: recursive schemas are not supported.
pub(crate) fn anthropic_strict(target: &Target<'_>, schema: &Value) -> Result<Value, LoweringError> {
    let lowered = strict_lowering(target, schema, Dialect::Anthropic)?;
    if let Some(name) = recursive_definition(&lowered) {
        return Err(target.error(
            "",
            format!(
                "has the recursive type `{name}` (it contains itself), which Anthropic strict tool use does not support; turn strict mode off for this tool or bound the nesting with separate types"
            ),
        ));
    }
    Ok(lowered)
}

/// Which provider's strict rules [`Strict`] follows where they differ.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dialect {
    OpenAi,
    Anthropic,
}

fn strict_lowering(target: &Target<'_>, schema: &Value, dialect: Dialect) -> Result<Value, LoweringError> {
    check_root(target, schema, false)?;
    let mut strict = Strict {
        target: *target,
        dialect,
        root: schema,
        inlining: Vec::new(),
        lowering: Vec::new(),
        defs: HashMap::new(),
    };
    let mut lowered = strict.node(schema, "")?;
    let Strict { defs, .. } = strict;
    if !defs.is_empty()
        && let Value::Object(out) = &mut lowered
    {
        // Keep the canonical order of the definitions that are still referenced.
        for container in ["$defs", "definitions"] {
            let Some(original) = schema.get(container).and_then(Value::as_object) else { continue };
            let mut kept = Map::new();
            for name in original.keys() {
                let escaped = name.replace('~', "~0").replace('/', "~1");
                if let Some(def) = defs.get(&format!("#/{container}/{escaped}")) {
                    kept.insert(name.clone(), def.clone());
                }
            }
            if !kept.is_empty() {
                out.insert(container.to_owned(), Value::Object(kept));
            }
        }
    }
    Ok(lowered)
}

/// The name of a definition that refers to itself, directly or through others.
fn recursive_definition(schema: &Value) -> Option<String> {
    fn references(schema: &Value, found: &mut Vec<String>) {
        match schema {
            Value::Object(map) => {
                if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                    found.push(reference.to_owned());
                }
                for (key, value) in map {
                    if key != "$defs" && key != "definitions" {
                        references(value, found);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| references(item, found)),
            _ => {}
        }
    }
    fn reaches(root: &Value, from: &str, goal: &str, seen: &mut HashSet<String>) -> bool {
        let Some(target) = from.strip_prefix('#').and_then(|pointer| root.pointer(pointer)) else {
            return false;
        };
        let mut found = Vec::new();
        references(target, &mut found);
        found
            .into_iter()
            .any(|next| next == goal || (seen.insert(next.clone()) && reaches(root, &next, goal, seen)))
    }
    let mut all = Vec::new();
    references(schema, &mut all);
    for container in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = schema.get(container) {
            for def in defs.values() {
                references(def, &mut all);
            }
        }
    }
    all.into_iter()
        .find(|reference| reference == "#" || reaches(schema, reference, reference, &mut HashSet::new()))
        .map(|reference| reference.rsplit('/').next().unwrap_or(&reference).to_owned())
}

struct Strict<'a> {
    target: Target<'a>,
    dialect: Dialect,
    root: &'a Value,
    /// References being inlined right now.
    inlining: Vec<String>,
    /// Definitions being lowered right now.
    lowering: Vec<String>,
    /// Lowered definitions by reference.
    defs: HashMap<String, Value>,
}

impl Strict<'_> {
    /// Lowers the definition behind `reference` once, so a plain `$ref` to it stays valid.
    fn ensure_def(&mut self, reference: &str, location: &str) -> Result<(), LoweringError> {
        if reference == "#"
            || self.defs.contains_key(reference)
            || self.lowering.iter().any(|r| r == reference)
        {
            return Ok(());
        }
        let target = resolve(&self.target, self.root, reference, location)?;
        self.lowering.push(reference.to_owned());
        let lowered = self.node(target, location);
        self.lowering.pop();
        self.defs.insert(reference.to_owned(), lowered?);
        Ok(())
    }

    fn node(&mut self, schema: &Value, location: &str) -> Result<Value, LoweringError> {
        let target = self.target;
        let mut map = object_node(&target, schema, location)?;

        if let Some(reference) = map.get("$ref") {
            let reference = reference
                .as_str()
                .ok_or_else(|| target.error(location, "has a `$ref` that is not a string"))?
                .to_owned();
            let referenced = resolve(&target, self.root, &reference, location)?;
            let has_siblings = map.keys().any(|k| k != "$ref" && k != "$comment");
            if !has_siblings {
                self.ensure_def(&reference, location)?;
                return Ok(json!({ "$ref": reference }));
            }
            map.shift_remove("$ref");
            if reference == "#" || self.inlining.contains(&reference) || self.lowering.contains(&reference) {
                // Inlining a recursive type would never end; a one-branch `anyOf` keeps the
                // reference free of siblings.
                if map.contains_key("anyOf") || map.contains_key("oneOf") {
                    return Err(target
                        .error(location, "combines `$ref` with `anyOf`/`oneOf` in one schema; split them"));
                }
                self.ensure_def(&reference, location)?;
                map.insert("anyOf".to_owned(), json!([{ "$ref": reference }]));
            } else {
                let Value::Object(referenced) = referenced else {
                    return self.node(referenced, location);
                };
                let mut merged = referenced.clone();
                for (key, value) in map {
                    merged.insert(key, value);
                }
                self.inlining.push(reference);
                let lowered = self.node(&Value::Object(merged), location);
                self.inlining.pop();
                return lowered;
            }
        }

        split_nullable_structure(&target, &mut map, location)?;

        let types: Vec<String> = types_of(&map).into_iter().map(str::to_owned).collect();
        let is_object = types.iter().any(|t| t == "object") || map.contains_key("properties");
        if is_object {
            check_closed(&target, &map, location)?;
        }
        if types.iter().any(|t| t == "array") && !matches!(map.get("items"), Some(Value::Object(_))) {
            return Err(target.error(
                location,
                "is a list whose items may be any JSON value; strict mode needs a schema for the items",
            ));
        }
        if map.contains_key("anyOf") && map.contains_key("oneOf") {
            return Err(target.error(location, "has both `anyOf` and `oneOf`; use one"));
        }
        let required: HashSet<String> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();

        let mut out = Map::new();
        let mut notes = Vec::new();
        for (key, value) in &map {
            match key.as_str() {
                "type" => {
                    out.insert(key.clone(), value.clone());
                }
                "description" | "title" if value.is_string() => {
                    out.insert(key.clone(), value.clone());
                }
                // A null default says nothing once the property is nullable (as the SDK does).
                "default" if !value.is_null() => {
                    out.insert(key.clone(), value.clone());
                }
                "multipleOf" | "maximum" | "exclusiveMaximum" | "minimum" | "exclusiveMinimum"
                | "maxItems"
                    if self.dialect == Dialect::Anthropic =>
                {
                    notes.extend(constraint_note(key, value));
                }
                "minItems" if self.dialect == Dialect::Anthropic && value.as_u64().is_none_or(|n| n > 1) => {
                    notes.extend(constraint_note(key, value));
                }
                "enum" | "const" | "pattern" | "multipleOf" | "maximum" | "exclusiveMaximum" | "minimum"
                | "exclusiveMinimum" | "minItems" | "maxItems" => {
                    out.insert(key.clone(), value.clone());
                }
                "format" => match value.as_str() {
                    Some(format) if OPENAI_STRICT_FORMATS.contains(&format) => {
                        out.insert(key.clone(), value.clone());
                    }
                    Some(format) if NUMERIC_FORMATS.contains(&format) => {}
                    _ => notes.extend(constraint_note(key, value)),
                },
                "minLength" | "maxLength" | "uniqueItems" | "minProperties" | "maxProperties" => {
                    notes.extend(constraint_note(key, value));
                }
                "properties" => {
                    let Some(properties) = value.as_object() else {
                        return Err(target.error(location, "has `properties` that is not an object"));
                    };
                    let mut lowered = Map::new();
                    let all_required = self.dialect == Dialect::OpenAi;
                    for (name, property) in properties {
                        let mut property = self.node(property, &child(location, name))?;
                        if all_required && !required.contains(name) {
                            property = make_nullable(property);
                        }
                        lowered.insert(name.clone(), property);
                    }
                    let listed: Vec<Value> = lowered
                        .keys()
                        .filter(|name| all_required || required.contains(*name))
                        .cloned()
                        .map(Value::String)
                        .collect();
                    out.insert("properties".to_owned(), Value::Object(lowered));
                    out.insert("required".to_owned(), Value::Array(listed));
                }
                "items" => {
                    out.insert(key.clone(), self.node(value, &items_of(location))?);
                }
                "anyOf" | "oneOf" => {
                    let Some(branches) = value.as_array() else {
                        return Err(target.error(location, format!("has `{key}` that is not an array")));
                    };
                    let lowered =
                        branches.iter().map(|b| self.node(b, location)).collect::<Result<Vec<_>, _>>()?;
                    out.insert("anyOf".to_owned(), Value::Array(lowered));
                }
                // Handled with `properties`.
                "required" | "additionalProperties" => {}
                // Annotations (`examples`, `deprecated`, `$comment`, ...), `$schema`, `$defs`
                // (re-attached by reference) and unknown keywords: nothing the model must follow.
                _ => {}
            }
        }
        if is_object {
            if !out.contains_key("type") {
                out.insert("type".to_owned(), json!("object"));
            }
            if !out.contains_key("properties") {
                out.insert("properties".to_owned(), json!({}));
                out.insert("required".to_owned(), json!([]));
            }
            out.insert("additionalProperties".to_owned(), Value::Bool(false));
        }
        if !["type", "anyOf", "enum", "const", "$ref"].iter().any(|k| out.contains_key(*k)) {
            return Err(any_value_error(&target, location));
        }
        add_notes(&mut out, &notes);
        Ok(Value::Object(out))
    }
}

/// Objects must be closed in strict mode: `additionalProperties` absent (then set to false) or
/// false, and at least the shape known through `properties` or an explicit `false`.
fn check_closed(target: &Target<'_>, map: &Map<String, Value>, location: &str) -> Result<(), LoweringError> {
    let open = match map.get("additionalProperties") {
        None => !map.contains_key("properties"),
        Some(Value::Bool(false)) => false,
        Some(_) => true,
    };
    if open {
        return Err(target.error(
            location,
            "is a map with free-form keys (`additionalProperties`), but strict mode requires every object to be closed (`additionalProperties: false`); use a list of key/value structs, or turn strict mode off",
        ));
    }
    Ok(())
}

/// `{"type": ["array", "null"], "items": ...}` -> `{"anyOf": [{"type": "array", "items": ...},
/// {"type": "null"}]}`, annotations kept outside; same for objects.
fn split_nullable_structure(
    target: &Target<'_>,
    map: &mut Map<String, Value>,
    location: &str,
) -> Result<(), LoweringError> {
    let Some(Value::Array(types)) = map.get("type") else { return Ok(()) };
    let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
    let non_null: Vec<&str> = names.iter().copied().filter(|t| *t != "null").collect();
    let structured = non_null.iter().any(|t| matches!(*t, "array" | "object"));
    if !structured {
        return Ok(());
    }
    if non_null.len() > 1 {
        return Err(target.error(
            location,
            format!(
                "may be one of several types ({}); use an enum with one type per variant",
                non_null.join(", ")
            ),
        ));
    }
    let only = non_null[0].to_owned();
    let nullable = names.contains(&"null");
    map.insert("type".to_owned(), Value::String(only));
    if nullable {
        let mut outer = Map::new();
        for key in ["description", "title", "default"] {
            if let Some(value) = map.shift_remove(key) {
                outer.insert(key.to_owned(), value);
            }
        }
        let inner = std::mem::take(map);
        outer.insert("anyOf".to_owned(), json!([Value::Object(inner), { "type": "null" }]));
        *map = outer;
    }
    Ok(())
}

fn allows_null(map: &Map<String, Value>) -> bool {
    types_of(map).contains(&"null")
        || map.get("enum").and_then(Value::as_array).is_some_and(|e| e.contains(&Value::Null))
        || map.get("const") == Some(&Value::Null)
        || map
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|branches| branches.iter().filter_map(Value::as_object).any(allows_null))
}

/// Makes a lowered strict-mode schema accept `null`: primitives as a type union, everything else
/// (objects, arrays, references) as `anyOf` with a null branch.
fn make_nullable(schema: Value) -> Value {
    let Value::Object(mut map) = schema else { return schema };
    if allows_null(&map) {
        return Value::Object(map);
    }
    let types = types_of(&map);
    let primitive =
        !types.is_empty() && types.iter().all(|t| matches!(*t, "string" | "number" | "integer" | "boolean"));
    if primitive {
        let mut union: Vec<Value> = types.iter().map(|t| json!(t)).collect();
        union.push(json!("null"));
        map.insert("type".to_owned(), Value::Array(union));
        if let Some(Value::Array(values)) = map.get_mut("enum") {
            values.push(Value::Null);
        }
        if let Some(value) = map.shift_remove("const") {
            map.insert("enum".to_owned(), json!([value, null]));
        }
        return Value::Object(map);
    }
    if !map.contains_key("type")
        && let Some(Value::Array(branches)) = map.get_mut("anyOf")
    {
        branches.push(json!({ "type": "null" }));
        return Value::Object(map);
    }
    let mut outer = Map::new();
    for key in ["description", "title", "default"] {
        if let Some(value) = map.shift_remove(key) {
            outer.insert(key.to_owned(), value);
        }
    }
    outer.insert("anyOf".to_owned(), json!([Value::Object(map), { "type": "null" }]));
    Value::Object(outer)
}

const OPENAI_MAX_PROPERTIES: usize = 5000;
const OPENAI_MAX_DEPTH: usize = 10;
const OPENAI_MAX_ENUM_VALUES: usize = 1000;
const OPENAI_MAX_STRING_TOTAL: usize = 120_000;
const OPENAI_MAX_LARGE_ENUM_CHARS: usize = 15_000;

#[derive(Default)]
struct Tally {
    properties: usize,
    enum_values: usize,
    chars: usize,
    large_enum: Option<usize>,
}

fn tally(schema: &Value, tally_so_far: &mut Tally) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get("properties") {
                tally_so_far.properties += properties.len();
                tally_so_far.chars += properties.keys().map(|k| k.chars().count()).sum::<usize>();
            }
            for container in ["$defs", "definitions"] {
                if let Some(Value::Object(defs)) = map.get(container) {
                    tally_so_far.chars += defs.keys().map(|k| k.chars().count()).sum::<usize>();
                }
            }
            if let Some(Value::Array(values)) = map.get("enum") {
                tally_so_far.enum_values += values.len();
                let chars: usize = values.iter().filter_map(Value::as_str).map(|s| s.chars().count()).sum();
                tally_so_far.chars += chars;
                if values.len() > 250 && chars > OPENAI_MAX_LARGE_ENUM_CHARS {
                    tally_so_far.large_enum = Some(chars);
                }
            }
            if let Some(Value::String(value)) = map.get("const") {
                tally_so_far.chars += value.chars().count();
            }
            for (key, value) in map {
                if !matches!(key.as_str(), "enum" | "const" | "default" | "examples") {
                    tally(value, tally_so_far);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| tally(item, tally_so_far)),
        _ => {}
    }
}

/// Object nesting depth below `schema` (an object counts one level), following references to
/// definitions except back into one already on the path (recursion is allowed).
fn depth(root: &Value, schema: &Value, active: &mut Vec<String>) -> usize {
    let Value::Object(map) = schema else { return 0 };
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        if active.iter().any(|r| r == reference) || reference == "#" {
            return 0;
        }
        let Some(target) = reference.strip_prefix('#').and_then(|pointer| root.pointer(pointer)) else {
            return 0;
        };
        active.push(reference.to_owned());
        let d = depth(root, target, active);
        active.pop();
        return d;
    }
    let own = usize::from(map.contains_key("properties"));
    let mut below = 0;
    if let Some(Value::Object(properties)) = map.get("properties") {
        below = properties.values().map(|p| depth(root, p, active)).max().unwrap_or(0);
    }
    if let Some(items) = map.get("items") {
        below = below.max(depth(root, items, active));
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        below = below.max(branches.iter().map(|b| depth(root, b, active)).max().unwrap_or(0));
    }
    own + below
}

fn check_openai_limits(target: &Target<'_>, schema: &Value) -> Result<(), LoweringError> {
    let mut counts = Tally::default();
    tally(schema, &mut counts);
    let nesting = depth(schema, schema, &mut Vec::new());
    let problem = if counts.properties > OPENAI_MAX_PROPERTIES {
        format!(
            "has {} object properties in all; strict mode allows at most {OPENAI_MAX_PROPERTIES}",
            counts.properties
        )
    } else if nesting > OPENAI_MAX_DEPTH {
        format!("nests objects {nesting} levels deep; strict mode allows at most {OPENAI_MAX_DEPTH}")
    } else if counts.enum_values > OPENAI_MAX_ENUM_VALUES {
        format!(
            "has {} enum values in all; strict mode allows at most {OPENAI_MAX_ENUM_VALUES}",
            counts.enum_values
        )
    } else if counts.chars > OPENAI_MAX_STRING_TOTAL {
        format!(
            "has {} characters of property names, definition names and enum values; strict mode allows at most {OPENAI_MAX_STRING_TOTAL}",
            counts.chars
        )
    } else if let Some(chars) = counts.large_enum {
        format!(
            "has an enum of more than 250 values totalling {chars} characters; strict mode allows at most {OPENAI_MAX_LARGE_ENUM_CHARS}"
        )
    } else {
        return Ok(());
    };
    Err(target.error("", problem))
}

// ---------------------------------------------------------------------------------------------
// Gemini
// ---------------------------------------------------------------------------------------------

/// Formats Gemini documents per type ("for NUMBER type: float, double; for INTEGER type: int32,
/// int64"; on the Gemini API a STRING format "must be either 'enum' or 'date-time'").
fn gemini_format_allowed(gemini_type: &str, format: &str) -> bool {
    matches!(
        (gemini_type, format),
        ("INTEGER", "int32" | "int64") | ("NUMBER", "float" | "double") | ("STRING", "date-time" | "enum")
    )
}

fn gemini_type(json_type: &str) -> Option<&'static str> {
    Some(match json_type {
        "string" => "STRING",
        "number" => "NUMBER",
        "integer" => "INTEGER",
        "boolean" => "BOOLEAN",
        "array" => "ARRAY",
        "object" => "OBJECT",
        "null" => "NULL",
        _ => return None,
    })
}

/// Upper bound on schema nodes after inlining, against exponential growth of shared types.
const GEMINI_MAX_NODES: usize = 10_000;

/// Lowers a canonical argument schema to Gemini's `Schema` object, "a select subset of an
/// OpenAPI 3.0 schema object" (<https://ai.google.dev/api/caching#Schema>):
///
/// - Only the fields of that object remain: `type` (one of its `Type` enum names: `STRING`,
///   `NUMBER`, `INTEGER`, `BOOLEAN`, `ARRAY`, `OBJECT`, `NULL`), `format`, `title`,
///   `description`, `nullable`, `enum`, `properties`, `required`, `items`, `minItems`,
///   `maxItems`, `minLength`, `maxLength`, `pattern`, `minimum`, `maximum`, `minProperties`,
///   `maxProperties`, `anyOf` and `default`. There is no `$ref`, `$defs`, `additionalProperties`,
///   `const`, `oneOf` or `$schema`.
/// - Every `$ref` is inlined (with the referencing schema's own keys winning); a recursive type
///   cannot be inlined and is an error.
/// - `null` is written `nullable: true`: `type: [T, "null"]` becomes `type: T`, and an `anyOf`
///   with one non-null branch collapses into that branch.
/// - `oneOf` becomes `anyOf`; `const` becomes a one-value `enum`; enum values are strings, with
///   `format: enum` as documented ("set format to enum and provide the list of possible values").
/// - An `OBJECT` must have named properties (the API rejects an empty `properties`), so a map
///   with free-form keys is an error; a list needs `items`.
/// - Constraints without a field (`exclusiveMinimum` on numbers, `multipleOf`, `uniqueItems`,
///   other string formats) move into the description as words; an exclusive integer bound
///   becomes the inclusive one next to it.
///
/// Returns `None` for a tool without arguments: the declaration then has no `parameters`.
pub(crate) fn gemini(target: &Target<'_>, schema: &Value) -> Result<Option<Value>, LoweringError> {
    let root = check_root(target, schema, false)?;
    if root.get("properties").and_then(Value::as_object).is_none_or(Map::is_empty)
        && !matches!(root.get("additionalProperties"), Some(Value::Object(_) | Value::Bool(true)))
    {
        return Ok(None);
    }
    let mut gemini = Gemini { target: *target, root: schema, active: Vec::new(), nodes: 0 };
    gemini.node(schema, "").map(Some)
}

struct Gemini<'a> {
    target: Target<'a>,
    root: &'a Value,
    active: Vec<String>,
    nodes: usize,
}

impl Gemini<'_> {
    fn node(&mut self, schema: &Value, location: &str) -> Result<Value, LoweringError> {
        let target = self.target;
        self.nodes += 1;
        if self.nodes > GEMINI_MAX_NODES {
            return Err(target.error(
                "",
                format!(
                    "grows past {GEMINI_MAX_NODES} nodes once every referenced type is inlined (Gemini has no references); simplify the argument types"
                ),
            ));
        }
        let mut map = object_node(&target, schema, location)?;

        if let Some(reference) = map.shift_remove("$ref") {
            let reference = reference
                .as_str()
                .ok_or_else(|| target.error(location, "has a `$ref` that is not a string"))?
                .to_owned();
            if reference == "#" || self.active.contains(&reference) {
                return Err(target.error(
                    location,
                    format!(
                        "refers back to `{}`, a recursive type; Gemini function schemas cannot reference other schemas, so every type is inlined, and a recursive one never ends. Use a non-recursive argument type, or leave this tool out for Gemini",
                        reference_name(&reference)
                    ),
                ));
            }
            let referenced = resolve(&target, self.root, &reference, location)?;
            let merged = match referenced {
                Value::Object(referenced) => {
                    let mut merged = referenced.clone();
                    for (key, value) in map {
                        merged.insert(key, value);
                    }
                    Value::Object(merged)
                }
                other => other.clone(),
            };
            self.active.push(reference);
            let lowered = self.node(&merged, location);
            self.active.pop();
            return lowered;
        }

        let mut nullable = false;
        let declared: Vec<&str> = types_of(&map);
        let non_null: Vec<&str> = declared.iter().copied().filter(|t| *t != "null").collect();
        if declared.contains(&"null") && !non_null.is_empty() {
            nullable = true;
        }
        let mut gemini_ty: Option<&'static str> = match non_null.as_slice() {
            [] if declared.contains(&"null") => Some("NULL"),
            [] => None,
            [one] => Some(
                gemini_type(one)
                    .ok_or_else(|| target.error(location, format!("has the unknown type `{one}`")))?,
            ),
            several => {
                return Err(target.error(
                    location,
                    format!(
                        "may be one of several types ({}); Gemini schemas have a single type, so use an enum with one type per variant",
                        several.join(", ")
                    ),
                ));
            }
        };
        if map.contains_key("anyOf") && map.contains_key("oneOf") {
            return Err(target.error(location, "has both `anyOf` and `oneOf`; use one"));
        }

        let mut out = Map::new();
        let mut notes = Vec::new();
        let mut format: Option<Value> = None;
        let mut enum_values: Option<Vec<Value>> = None;
        let mut any_of: Option<Vec<Value>> = None;
        for (key, value) in &map {
            match key.as_str() {
                "type" => {}
                "description" | "title" | "pattern" if value.is_string() => {
                    out.insert(key.clone(), value.clone());
                }
                "minItems" | "maxItems" | "minLength" | "maxLength" | "minProperties" | "maxProperties"
                | "minimum" | "maximum" => {
                    out.insert(key.clone(), value.clone());
                }
                "default" if !value.is_null() => {
                    out.insert(key.clone(), value.clone());
                }
                "format" => format = Some(value.clone()),
                "enum" => {
                    let Some(values) = value.as_array() else {
                        return Err(target.error(location, "has an `enum` that is not an array"));
                    };
                    if values.contains(&Value::Null) {
                        nullable = true;
                    }
                    enum_values = Some(values.iter().filter(|v| !v.is_null()).cloned().collect());
                }
                "const" => {
                    if value.is_null() {
                        gemini_ty = gemini_ty.or(Some("NULL"));
                    } else {
                        enum_values = Some(vec![value.clone()]);
                    }
                }
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    let lower = key == "exclusiveMinimum";
                    let adjusted = (gemini_ty == Some("INTEGER"))
                        .then(|| value.as_i64())
                        .flatten()
                        .and_then(|v| if lower { v.checked_add(1) } else { v.checked_sub(1) });
                    let bound = if lower { "minimum" } else { "maximum" };
                    match adjusted {
                        Some(inclusive) if !map.contains_key(bound) => {
                            out.insert(bound.to_owned(), json!(inclusive));
                        }
                        _ => notes.extend(constraint_note(key, value)),
                    }
                }
                "multipleOf" | "uniqueItems" => notes.extend(constraint_note(key, value)),
                "properties" => {
                    let Some(properties) = value.as_object() else {
                        return Err(target.error(location, "has `properties` that is not an object"));
                    };
                    let mut lowered = Map::new();
                    for (name, property) in properties {
                        lowered.insert(name.clone(), self.node(property, &child(location, name))?);
                    }
                    out.insert("properties".to_owned(), Value::Object(lowered));
                }
                "required" => {
                    if let Some(names) = value.as_array() {
                        let names: Vec<Value> = names.iter().filter(|n| n.is_string()).cloned().collect();
                        if !names.is_empty() {
                            out.insert(key.clone(), Value::Array(names));
                        }
                    }
                }
                "items" => {
                    out.insert(key.clone(), self.node(value, &items_of(location))?);
                }
                "anyOf" | "oneOf" => {
                    let Some(branches) = value.as_array() else {
                        return Err(target.error(location, format!("has `{key}` that is not an array")));
                    };
                    let lowered =
                        branches.iter().map(|b| self.node(b, location)).collect::<Result<Vec<_>, _>>()?;
                    any_of = Some(lowered);
                }
                // `additionalProperties` is checked below; `$schema`, `$defs`, `examples`,
                // `deprecated` and unknown keywords have no Gemini field.
                _ => {}
            }
        }

        if let Some(branches) = any_of {
            let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("NULL");
            if branches.iter().any(is_null) {
                nullable = true;
            }
            let mut rest: Vec<Value> = branches.into_iter().filter(|b| !is_null(b)).collect();
            if rest.len() == 1 {
                // `Option<T>`: the one real branch, with this schema's own keys (the field's
                // description) winning.
                if let Some(Value::Object(branch)) = rest.pop() {
                    let mut merged = branch;
                    if merged.get("nullable") == Some(&Value::Bool(true)) {
                        nullable = true;
                    }
                    for (key, value) in out {
                        merged.insert(key, value);
                    }
                    out = merged;
                }
            } else if !rest.is_empty() {
                out.insert("anyOf".to_owned(), Value::Array(rest));
            } else if gemini_ty.is_none() {
                gemini_ty = Some("NULL");
            }
        }

        if let Some(values) = enum_values {
            let all_strings = values.iter().all(Value::is_string);
            if gemini_ty.is_none() && all_strings {
                gemini_ty = Some("STRING");
            }
            let values: Vec<Value> = values
                .into_iter()
                .map(|v| match v {
                    Value::String(_) => v,
                    other => Value::String(other.to_string()),
                })
                .collect();
            out.insert("enum".to_owned(), Value::Array(values));
            format = Some(json!("enum"));
        }

        if gemini_ty.is_none() && !out.contains_key("type") {
            if out.contains_key("properties") {
                gemini_ty = Some("OBJECT");
            } else if out.contains_key("items") {
                gemini_ty = Some("ARRAY");
            }
        }
        let final_type = gemini_ty.or_else(|| out.get("type").and_then(Value::as_str).and_then(static_type));
        match final_type {
            Some("OBJECT") if out.get("properties").and_then(Value::as_object).is_none_or(Map::is_empty) => {
                let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
                let reason = if closed {
                    "is an object without named properties; Gemini rejects an OBJECT with empty `properties`. Give it at least one field, or leave it out"
                } else {
                    "is a map with free-form keys (`additionalProperties`); Gemini objects must list their properties by name, so free-form keys cannot be expressed. Use a list of key/value structs"
                };
                return Err(target.error(location, reason));
            }
            Some("ARRAY") if !out.contains_key("items") => {
                return Err(target.error(
                    location,
                    "is a list whose items may be any JSON value; Gemini needs a schema for list items",
                ));
            }
            None if !out.contains_key("anyOf") => return Err(any_value_error(&target, location)),
            _ => {}
        }

        if let (Some(format), Some(ty)) = (format, final_type) {
            match format.as_str() {
                Some(f) if gemini_format_allowed(ty, f) => {
                    out.insert("format".to_owned(), format.clone());
                }
                Some(f) if NUMERIC_FORMATS.contains(&f) => {}
                _ => notes.extend(constraint_note("format", &format)),
            }
        }
        add_notes(&mut out, &notes);

        // `type` first, then `nullable`, then the rest, as in the API reference.
        let mut ordered = Map::new();
        if let Some(ty) = gemini_ty {
            ordered.insert("type".to_owned(), json!(ty));
        } else if let Some(ty) = out.shift_remove("type") {
            ordered.insert("type".to_owned(), ty);
        }
        out.shift_remove("type");
        out.shift_remove("nullable");
        if let Some(format) = out.shift_remove("format") {
            ordered.insert("format".to_owned(), format);
        }
        for (key, value) in out {
            ordered.insert(key, value);
        }
        if nullable {
            ordered.insert("nullable".to_owned(), Value::Bool(true));
        }
        Ok(Value::Object(ordered))
    }
}

fn static_type(name: &str) -> Option<&'static str> {
    ["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"].into_iter().find(|t| *t == name)
}

// ---------------------------------------------------------------------------------------------
// Per-provider entry points
// ---------------------------------------------------------------------------------------------

/// The `parameters` of an OpenAI function (Chat Completions and Responses alike): the strict
/// lowering in strict mode; otherwise the canonical schema without `$schema`, which OpenAI does
/// not document.
pub(crate) fn openai_parameters(
    spec: &tool_core::ToolSpec,
    options: &super::DefinitionOptions,
    provider: Provider,
) -> Result<Value, LoweringError> {
    let target = Target { provider, strict: options.strict, tool: &spec.name };
    if options.strict {
        openai_strict(&target, &spec.input_schema)
    } else {
        check_root(&target, &spec.input_schema, false)?;
        Ok(without_dialect(&spec.input_schema))
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
