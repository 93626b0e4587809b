//! The JSON Schema of a settings file, generated from the typed model, so that editors validate
//! the file: `settings.schema.json` in this crate's folder is it.

use serde_json::Value;

use crate::SettingsFile;

/// The JSON Schema of a settings file (draft 2020-12).
pub fn schema() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(SettingsFile)).unwrap_or(Value::Null);
    // An absent key is the default; `null` is not (the model refuses it).
    without_null(&mut schema);
    schema["title"] =
        Value::String("Settings of the tools framework (Claude Code's settings.json)".to_owned());
    schema
}

/// `schema` without the `null` that schemars allows for each optional key.
fn without_null(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if let [only] = types.as_slice() {
                    let only = only.clone();
                    map.insert("type".to_owned(), only);
                }
            }
            if let Some(Value::Array(any_of)) = map.get_mut("anyOf") {
                any_of.retain(|s| s.get("type").and_then(Value::as_str) != Some("null"));
                if any_of.len() == 1 {
                    let only = any_of.remove(0);
                    map.remove("anyOf");
                    if let Value::Object(only) = only {
                        map.extend(only);
                    }
                }
            }
            map.values_mut().for_each(without_null);
        }
        Value::Array(items) => items.iter_mut().for_each(without_null),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regenerated with `SETTINGS_SCHEMA=overwrite cargo test -p tool-settings schema`.
    #[test]
    fn the_committed_schema_is_the_generated_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/settings.schema.json");
        let generated = serde_json::to_string_pretty(&schema()).unwrap() + "\n";
        if std::env::var("SETTINGS_SCHEMA").as_deref() == Ok("overwrite") {
            std::fs::write(path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(committed == generated, "settings.schema.json is stale: regenerate it (see this test's doc)");
    }

    #[test]
    fn the_top_level_keys_are_the_schemas_properties() {
        let schema = schema();
        let properties: Vec<&str> =
            schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(properties, SettingsFile::KEYS);
    }
}
