//! Gemini: the canonical schema as Gemini's `Schema` object, every `$ref` inlined.

use serde_json::{Map, Value, json};

use crate::LoweringError;

use super::{
    NUMERIC_FORMATS, Target, add_notes, any_value_error, check_root, child, constraint_note, items_of,
    object_node, reference_name, resolve, types_of,
};

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
