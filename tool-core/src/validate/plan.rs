//! The leniency pass, compiled: what to drop and what to coerce at each place of the
//! arguments, worked out from the schema once when the validator is built. A call walks only its
//! own value against the plan: no schema lookups, and a path string only for a coercion it
//! records.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::Coercion;
use super::path::Path;
use crate::schema::{non_null_branch, resolve, schema_types};

/// Index of a [`Node`] in its plan; the root is 0.
type NodeId = usize;

/// Nesting deeper than this is left as it is (validation still checks it).
const MAX_DEPTH: usize = 64;

/// The plan for one tool's arguments.
pub(super) struct Plan {
    nodes: Vec<Node>,
}

/// What applies at one place of the arguments (one schema, after `$ref`s and the `null`
/// branch of an `Option` are looked through).
#[derive(Default)]
struct Node {
    /// What a string found here may be coerced to; `None` when a string is fine as it is.
    coerce_to: Option<Targets>,
    /// The declared properties, when the schema declares any (a `null` is dropped only for a
    /// declared, optional one).
    properties: Option<Vec<Property>>,
    /// The plan for every item of an array.
    items: Option<NodeId>,
    /// The object forms of an `anyOf`/`oneOf`, tried in order.
    variants: Vec<Variant>,
    /// Declared aliases of the properties: (alias, property).
    aliases: Vec<(String, String)>,
}

struct Property {
    name: String,
    node: NodeId,
    required: bool,
}

/// One object form of an `anyOf`/`oneOf`: an object takes it when every key it has is declared
/// (or the form is open) and every fixed value (a `const` tag) matches.
struct Variant {
    node: NodeId,
    fields: Vec<(String, Option<Value>)>,
    closed: bool,
}

/// The types a string may be turned into.
#[derive(Clone, Copy)]
struct Targets {
    integer: bool,
    number: bool,
    boolean: bool,
    array: bool,
    object: bool,
}

impl Plan {
    /// Compiles the plan for `root`, an argument schema.
    pub(super) fn compile(root: &Value) -> Plan {
        let mut compiler = Compiler { root, nodes: Vec::new(), seen: HashMap::new() };
        compiler.node(root);
        Plan { nodes: compiler.nodes }
    }

    /// Declares aliases of the top-level properties: an argument sent under `alias` is moved to
    /// `property`. An alias that is itself a declared property is never applied.
    pub(super) fn add_root_aliases<'a>(&mut self, aliases: impl IntoIterator<Item = (&'a str, &'a str)>) {
        self.nodes[0].aliases.extend(aliases.into_iter().map(|(a, p)| (a.to_owned(), p.to_owned())));
    }

    /// Drops `null` for optional properties and, with `coerce`, applies the lenient coercions,
    /// recording each.
    pub(super) fn normalize(&self, value: &mut Value, coerce: bool, coercions: &mut Vec<Coercion>) {
        self.walk(0, value, &Path::Root, coerce, coercions, 0);
    }

    fn walk(
        &self,
        id: NodeId,
        value: &mut Value,
        path: &Path<'_>,
        coerce: bool,
        coercions: &mut Vec<Coercion>,
        depth: usize,
    ) {
        if depth > MAX_DEPTH {
            return;
        }
        let mut node = self.form_of(&self.nodes[id], value);
        if coerce
            && let Some(targets) = node.coerce_to
            && let Some(to) = coerce_string(value, targets)
        {
            coercions.push(Coercion { path: path.pointer(), to: to.to_owned() });
            // A string turned into an object may now take one of the object forms.
            node = self.form_of(node, value);
        }
        match value {
            Value::Object(map) => {
                let Some(properties) = &node.properties else { return };
                if coerce {
                    rename_keys(map, properties, &node.aliases, path, coercions);
                }
                map.retain(|key, v| !(v.is_null() && find(properties, key).is_some_and(|p| !p.required)));
                for (key, v) in map.iter_mut() {
                    if let Some(property) = find(properties, key) {
                        self.walk(property.node, v, &Path::Key(path, key), coerce, coercions, depth + 1);
                    }
                }
            }
            Value::Array(items) => {
                let Some(item) = node.items else { return };
                for (i, v) in items.iter_mut().enumerate() {
                    self.walk(item, v, &Path::Index(path, i), coerce, coercions, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// The object form `value` takes, or `node` itself.
    fn form_of<'p>(&'p self, node: &'p Node, value: &Value) -> &'p Node {
        let Value::Object(object) = value else { return node };
        node.variants
            .iter()
            .find(|variant| variant.fits(object))
            .map_or(node, |variant| &self.nodes[variant.node])
    }
}

fn find<'p>(properties: &'p [Property], key: &str) -> Option<&'p Property> {
    properties.iter().find(|p| p.name == key)
}

/// Moves an argument sent under a declared alias of a property, or under the camelCase
/// spelling of a snake_case property (`oldString` for `old_string`), to the property's own
/// name, recording each move as a coercion from the old place to the new. The same value sent
/// under both names counts once; two different values are left for validation to refuse.
fn rename_keys(
    map: &mut Map<String, Value>,
    properties: &[Property],
    aliases: &[(String, String)],
    path: &Path<'_>,
    coercions: &mut Vec<Coercion>,
) {
    if map.keys().all(|key| find(properties, key).is_some()) {
        return;
    }
    let unknown: Vec<String> = map.keys().filter(|key| find(properties, key).is_none()).cloned().collect();
    for key in unknown {
        let declared = aliases.iter().find(|(alias, _)| *alias == key).map(|(_, property)| property.clone());
        let Some(target) = declared.or_else(|| snake_case(&key)).filter(|t| find(properties, t).is_some())
        else {
            continue;
        };
        match map.get(&target) {
            Some(existing) if Some(existing) != map.get(&key) => continue,
            Some(_) => {
                map.remove(&key);
            }
            None => {
                if let Some(value) = map.remove(&key) {
                    map.insert(target.clone(), value);
                }
            }
        }
        coercions
            .push(Coercion { path: Path::Key(path, &key).pointer(), to: Path::Key(path, &target).pointer() });
    }
}

/// `oldString` as `old_string`; `None` for a name without an ASCII capital.
pub(crate) fn snake_case(name: &str) -> Option<String> {
    if !name.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.char_indices() {
        if c.is_ascii_uppercase() {
            if i > 0 && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    Some(out)
}

impl Variant {
    fn fits(&self, object: &Map<String, Value>) -> bool {
        object.iter().all(|(key, value)| match self.fields.iter().find(|(name, _)| name == key) {
            Some((_, fixed)) => fixed.as_ref().is_none_or(|fixed| fixed == value),
            None => !self.closed,
        })
    }
}

/// Replaces a string with the number, boolean, array or object it spells, when `targets`
/// allows that type; returns the type's name.
fn coerce_string(value: &mut Value, targets: Targets) -> Option<&'static str> {
    let Value::String(text) = value else { return None };
    let trimmed = text.trim();
    let (replacement, to) = if targets.integer
        && let Ok(n) = trimmed.parse::<i64>()
    {
        (Value::from(n), "integer")
    } else if targets.integer
        && let Ok(n) = trimmed.parse::<u64>()
    {
        (Value::from(n), "integer")
    } else if targets.number
        && let Some(n) = trimmed.parse::<f64>().ok().and_then(serde_json::Number::from_f64)
    {
        (Value::Number(n), "number")
    } else if targets.boolean && matches!(trimmed, "true" | "false" | "True" | "False") {
        (Value::Bool(trimmed.eq_ignore_ascii_case("true")), "boolean")
    } else if targets.array || targets.object {
        match serde_json::from_str::<Value>(trimmed) {
            Ok(parsed @ Value::Array(_)) if targets.array => (parsed, "array"),
            Ok(parsed @ Value::Object(_)) if targets.object => (parsed, "object"),
            _ => return None,
        }
    } else {
        return None;
    };
    *value = replacement;
    Some(to)
}

struct Compiler<'s> {
    root: &'s Value,
    nodes: Vec<Node>,
    /// Schemas already compiled, by address, so a recursive `$ref` ends in a cycle of ids.
    seen: HashMap<*const Value, NodeId>,
}

impl<'s> Compiler<'s> {
    fn node(&mut self, schema: &'s Value) -> NodeId {
        let schema = non_null_branch(self.root, resolve(self.root, schema));
        if let Some(&id) = self.seen.get(&(schema as *const Value)) {
            return id;
        }
        let id = self.nodes.len();
        self.nodes.push(Node::default());
        self.seen.insert(schema, id);

        let types = schema_types(schema);
        let coerce_to = (!types.is_empty() && !types.contains(&"string")).then(|| Targets {
            integer: types.contains(&"integer"),
            number: types.contains(&"number"),
            boolean: types.contains(&"boolean"),
            array: types.contains(&"array"),
            object: types.contains(&"object"),
        });
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let properties = schema.get("properties").and_then(Value::as_object).map(|declared| {
            declared
                .iter()
                .map(|(name, sub)| Property {
                    name: name.clone(),
                    node: self.node(sub),
                    required: required.contains(&name.as_str()),
                })
                .collect()
        });
        let items = schema.get("items").filter(|items| items.is_object()).map(|items| self.node(items));
        let mut variants = Vec::new();
        for keyword in ["anyOf", "oneOf"] {
            let Some(branches) = schema.get(keyword).and_then(Value::as_array) else { continue };
            for branch in branches.iter().map(|b| resolve(self.root, b)) {
                let Some(declared) = branch.get("properties").and_then(Value::as_object) else { continue };
                let fields = declared
                    .iter()
                    .map(|(name, property)| (name.clone(), fixed_value(resolve(self.root, property))))
                    .collect();
                let closed = branch.get("additionalProperties") == Some(&Value::Bool(false));
                variants.push(Variant { node: self.node(branch), fields, closed });
            }
        }
        self.nodes[id] = Node { coerce_to, properties, items, variants, aliases: Vec::new() };
        id
    }
}

/// The one value a property allows (`const`, or an `enum` of one): how a tagged enum marks its
/// variants.
fn fixed_value(property: &Value) -> Option<Value> {
    property
        .get("const")
        .or_else(|| property.get("enum").and_then(Value::as_array).filter(|e| e.len() == 1).map(|e| &e[0]))
        .cloned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn normalized(schema: &Value, mut value: Value) -> (Value, Vec<(String, String)>) {
        let mut coercions = Vec::new();
        Plan::compile(schema).normalize(&mut value, true, &mut coercions);
        (value, coercions.into_iter().map(|c| (c.path, c.to)).collect())
    }

    #[test]
    fn aliases_and_camel_case_names_move_to_the_declared_property() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": { "type": "string" },
                "old_string": { "type": "string" },
                "replace_all": { "type": "boolean" },
                "edits": { "type": "array", "items": { "type": "object",
                    "properties": { "old_string": { "type": "string" } } } }
            },
            "required": ["path", "old_string"]
        });
        let mut plan = Plan::compile(&schema);
        plan.add_root_aliases([("file_path", "path"), ("filePath", "path")]);
        let mut value = json!({ "filePath": "a", "oldString": "x", "replaceAll": "true",
            "edits": [{ "oldString": "y" }], "other": 1 });
        let mut coercions = Vec::new();
        plan.normalize(&mut value, true, &mut coercions);
        assert_eq!(
            value,
            json!({ "path": "a", "old_string": "x", "replace_all": true, "edits": [{ "old_string": "y" }], "other": 1 })
        );
        let coercions: Vec<(String, String)> = coercions.into_iter().map(|c| (c.path, c.to)).collect();
        for expected in [
            ("/filePath", "/path"),
            ("/oldString", "/old_string"),
            ("/replaceAll", "/replace_all"),
            ("/replace_all", "boolean"),
            ("/edits/0/oldString", "/edits/0/old_string"),
        ] {
            assert!(coercions.contains(&(expected.0.to_owned(), expected.1.to_owned())), "{coercions:?}");
        }
        assert_eq!(coercions.len(), 5, "{coercions:?}");
        // The same value under two names counts once; different values are left as they are.
        let (value, _) = {
            let mut value = json!({ "path": "a", "file_path": "a", "old_string": "x" });
            let mut coercions = Vec::new();
            plan.normalize(&mut value, true, &mut coercions);
            (value, coercions)
        };
        assert_eq!(value, json!({ "path": "a", "old_string": "x" }));
        let mut value = json!({ "path": "a", "file_path": "b", "filePath": "c", "old_string": "x" });
        plan.normalize(&mut value, true, &mut Vec::new());
        assert_eq!(value, json!({ "path": "a", "file_path": "b", "filePath": "c", "old_string": "x" }));
        // Without leniency nothing moves.
        let mut value = json!({ "file_path": "a", "oldString": "x" });
        plan.normalize(&mut value, false, &mut Vec::new());
        assert_eq!(value, json!({ "file_path": "a", "oldString": "x" }));
        assert_eq!(snake_case("URLPath"), Some("u_r_l_path".to_owned()));
        assert_eq!(snake_case("path"), None);
    }

    #[test]
    fn a_recursive_schema_is_followed_to_any_depth() {
        let schema = json!({
            "type": "object",
            "properties": { "root": { "$ref": "#/$defs/Node" } },
            "$defs": { "Node": {
                "type": "object",
                "properties": {
                    "size": { "type": "integer" },
                    "label": { "anyOf": [{ "type": "string" }, { "type": "null" }] },
                    "children": { "type": "array", "items": { "$ref": "#/$defs/Node" } }
                },
                "required": ["size"]
            }}
        });
        let value = json!({ "root": { "size": "1", "label": null, "children": [
            { "size": 2, "children": [{ "size": "3", "label": null, "children": [] }] }
        ]}});
        let (value, coercions) = normalized(&schema, value);
        assert_eq!(
            value,
            json!({ "root": { "size": 1, "children": [{ "size": 2, "children": [{ "size": 3, "children": [] }] }] } })
        );
        assert_eq!(
            coercions,
            [
                ("/root/size".to_owned(), "integer".to_owned()),
                ("/root/children/0/children/0/size".to_owned(), "integer".to_owned())
            ]
        );
    }

    #[test]
    fn a_tagged_object_takes_its_own_variant_and_odd_keys_are_escaped() {
        let schema = json!({
            "type": "object",
            "properties": { "shape": { "oneOf": [
                { "type": "object", "properties": { "kind": { "const": "circle" }, "r": { "type": "number" } },
                  "required": ["kind", "r"], "additionalProperties": false },
                { "type": "object", "properties": { "kind": { "const": "square" }, "side": { "type": "number" },
                  "a/b~c": { "type": "boolean" } },
                  "required": ["kind", "side"], "additionalProperties": false }
            ]}}
        });
        let (value, coercions) =
            normalized(&schema, json!({ "shape": { "kind": "square", "side": "2.5", "a/b~c": "true" } }));
        assert_eq!(value, json!({ "shape": { "kind": "square", "side": 2.5, "a/b~c": true } }));
        assert_eq!(
            coercions,
            [
                ("/shape/side".to_owned(), "number".to_owned()),
                ("/shape/a~1b~0c".to_owned(), "boolean".to_owned())
            ]
        );
        // Where only object forms are allowed (no `type` beside the `oneOf`), a string is left
        // for validation to report.
        let (value, _) = normalized(&schema, json!({ "shape": "{\"kind\": \"circle\", \"r\": \"1\"}" }));
        assert_eq!(value, json!({ "shape": "{\"kind\": \"circle\", \"r\": \"1\"}" }));
    }
}
