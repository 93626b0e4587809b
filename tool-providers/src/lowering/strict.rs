//! OpenAI strict mode and Anthropic strict tool use: every property required, objects closed,
//! `$ref` without siblings, the size limits checked.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use crate::{LoweringError, Provider};

use super::{
    NUMERIC_FORMATS, Target, add_notes, any_value_error, check_root, child, constraint_note, items_of,
    object_node, resolve, types_of, without_dialect,
};

/// The string formats OpenAI strict mode supports ("Supported properties" in the Structured
/// Outputs guide, <https://platform.openai.com/docs/guides/structured-outputs#supported-schemas>).
const OPENAI_STRICT_FORMATS: &[&str] =
    &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];

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

/// The `parameters` of an OpenAI function (Chat Completions and Responses alike): the strict
/// lowering in strict mode; otherwise the canonical schema without `$schema`, which OpenAI does
/// not document.
pub(crate) fn openai_parameters(
    spec: &tool_core::ToolSpec,
    options: &crate::DefinitionOptions,
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
