//! Canonical JSON Schemas (draft 2020-12) for tool arguments and outputs, and schema walking.

use schemars::{JsonSchema, SchemaGenerator, generate::SchemaSettings};
use serde_json::{Map, Value};

/// The `$schema` URI of every canonical schema.
pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// A schema generator configured for draft 2020-12.
pub fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12().into_generator()
}

/// The argument schema of `T`: an object schema without a title, closed at the root
/// (unknown properties are rejected), with `properties` always present.
pub fn args_schema<T: JsonSchema>() -> Value {
    let schema = generator().into_root_schema_for::<T>().to_value();
    normalize_args_schema(schema)
}

/// The root schema of `T` generated with `generator`, without its title (used for output schemas).
pub fn root_schema_with<T: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
    let mut schema = generator.root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut schema {
        map.shift_remove("title");
    }
    schema
}

/// The schema of a tool that takes no arguments.
pub fn empty_args_schema() -> Value {
    serde_json::json!({
        "$schema": DRAFT_2020_12,
        "type": "object",
        "properties": {},
        "additionalProperties": false,
    })
}

pub(crate) fn normalize_args_schema(mut schema: Value) -> Value {
    let Value::Object(map) = &mut schema else {
        return schema;
    };
    map.shift_remove("title");
    map.entry("$schema").or_insert_with(|| Value::String(DRAFT_2020_12.to_owned()));
    let is_plain_object = map.get("type").and_then(Value::as_str) == Some("object")
        && !map.contains_key("patternProperties")
        && !map.contains_key("unevaluatedProperties")
        && !map.contains_key("allOf")
        && !map.contains_key("anyOf")
        && !map.contains_key("oneOf");
    if is_plain_object {
        map.entry("properties").or_insert_with(|| Value::Object(Map::new()));
        map.entry("additionalProperties").or_insert(Value::Bool(false));
    }
    // A stable, readable key order: what the object is, then its properties, then definitions.
    const FIRST: [&str; 6] =
        ["$schema", "description", "type", "properties", "required", "additionalProperties"];
    let mut ordered = Map::new();
    for key in FIRST {
        if let Some(value) = map.shift_remove(key) {
            ordered.insert(key.to_owned(), value);
        }
    }
    let defs = map.shift_remove("$defs");
    ordered.append(map);
    if let Some(defs) = defs {
        ordered.insert("$defs".to_owned(), defs);
    }
    Value::Object(ordered)
}

/// Follows local `$ref`s (`#/$defs/...`) from `schema` within `root`, at most 32 hops.
pub fn resolve<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    for _ in 0..32 {
        let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
            return schema;
        };
        let Some(pointer) = reference.strip_prefix('#') else {
            return schema;
        };
        match root.pointer(pointer) {
            Some(target) => schema = target,
            None => return schema,
        }
    }
    schema
}

/// For `anyOf`/`oneOf` schemas with exactly one non-null branch (how `Option<T>` is written),
/// that branch; otherwise the schema itself.
pub fn non_null_branch<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let schema = resolve(root, schema);
    for keyword in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(keyword).and_then(Value::as_array) {
            let mut non_null = branches
                .iter()
                .map(|b| resolve(root, b))
                .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"));
            if let (Some(only), None) = (non_null.next(), non_null.next()) {
                return only;
            }
        }
    }
    schema
}

/// The schema that applies at a JSON pointer into an instance, following `properties`,
/// `items`, `$ref` and single-branch `anyOf`.
pub fn schema_at<'a>(root: &'a Value, pointer: &str) -> Option<&'a Value> {
    let mut schema = non_null_branch(root, root);
    if pointer.is_empty() {
        return Some(schema);
    }
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        let next = if let Some(property) = schema.get("properties").and_then(|p| p.get(&token)) {
            property
        } else if token.parse::<usize>().is_ok() {
            schema.get("items")?
        } else {
            schema.get("additionalProperties").filter(|v| v.is_object())?
        };
        schema = non_null_branch(root, next);
    }
    Some(schema)
}

/// The `type` keyword of a schema as a list (`"integer"` or `["integer", "null"]`).
pub fn schema_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_at_follows_refs_items_and_options() {
        let root = json!({
            "type": "object",
            "properties": {
                "edits": {"type": "array", "items": {"$ref": "#/$defs/Edit"}},
                "opt": {"anyOf": [{"$ref": "#/$defs/Edit"}, {"type": "null"}]}
            },
            "$defs": {"Edit": {"type": "object", "properties": {"line": {"type": "integer"}}}}
        });
        assert_eq!(schema_at(&root, "/edits/3/line"), Some(&json!({"type": "integer"})));
        assert_eq!(schema_at(&root, "/opt/line"), Some(&json!({"type": "integer"})));
        assert_eq!(schema_at(&root, "/missing"), None);
    }
}
