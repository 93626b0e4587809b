//! A schema document compiled into nodes: first every resource (`$id`) and anchor is indexed,
//! then each subschema is compiled once, by its JSON pointer, so `$ref`s to one place (and
//! cycles) share a node. Compiling is a work list, not a recursion: a subschema met is given
//! its node's number and compiled in turn, so a chain of `$ref`s as long as a schema likes
//! takes no stack.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};

use super::{Keywords, MAX_DEPTH, MAX_PATTERNS, Node, NodeId, TYPES, Validator, by_length, pattern, uri};
use crate::validate::format::IntegerFormat;
use crate::validate::path::escape;

pub(super) fn compile(schema: &Value) -> Result<Validator, String> {
    let mut index = Index::default();
    index.resources.insert(uri::DEFAULT_BASE.to_owned(), String::new());
    index.walk(schema, String::new(), uri::DEFAULT_BASE.to_owned(), 0)?;
    let mut compiler = Compiler {
        document: schema,
        index,
        nodes: Vec::new(),
        compiled: HashMap::new(),
        pending: Vec::new(),
        patterns: 0,
    };
    compiler.node_at("")?;
    while let Some((id, pointer)) = compiler.pending.pop() {
        let schema =
            compiler.document.pointer(&pointer).ok_or_else(|| format!("nothing is at `{pointer}`"))?;
        compiler.nodes[id] = compiler.node(schema, &pointer)?;
    }
    // Now that every node is compiled: `oneOf`/`anyOf` of `const`s as lists of values.
    for id in 0..compiler.nodes.len() {
        if let Node::Keywords(k) = &compiler.nodes[id] {
            let one_of = constants(&compiler.nodes, &k.one_of, true);
            let any_of = constants(&compiler.nodes, &k.any_of, false);
            if let Node::Keywords(k) = &mut compiler.nodes[id] {
                k.one_of_values = one_of;
                k.any_of_values = any_of;
            }
        }
    }
    let mut nodes = compiler.nodes;
    // A schema that is only a `$ref` is its target: every use of it points there instead.
    let target: Vec<NodeId> = (0..nodes.len()).map(|id| alias_target(&nodes, id)).collect();
    for node in &mut nodes {
        if let Node::Keywords(k) = node {
            k.children_mut().for_each(|child| *child = target[*child]);
        }
    }
    Ok(Validator { root: target[0], nodes })
}

/// Where the chain of aliases from `id` ends (at `id` itself for a cycle of aliases, which
/// then checks as nested too deeply).
fn alias_target(nodes: &[Node], id: NodeId) -> NodeId {
    let mut at = id;
    for _ in 0..nodes.len() {
        match nodes[at] {
            Node::Alias(next) => at = next,
            _ => return at,
        }
    }
    id
}

/// Where each resource, anchor and subschema's base is, by JSON pointer into the document.
#[derive(Default)]
struct Index {
    /// Absolute URI (no fragment) of each resource -> pointer.
    resources: HashMap<String, String>,
    /// `URI#name` of each `$anchor` (and `$dynamicAnchor`, and draft 7's `$id: "#name"`) ->
    /// pointer.
    anchors: HashMap<String, String>,
    /// Pointer of each subschema -> its base URI.
    bases: HashMap<String, String>,
}

/// Keywords that assert nothing (for [`Keywords::only_const`] and schemas that are only a
/// `$ref`); any other keyword, known or not, counts as an assertion.
const ANNOTATIONS: [&str; 13] = [
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$schema",
    "$id",
    "$anchor",
    "$defs",
    "definitions",
];

/// Keywords whose value is one subschema.
const ONE: [&str; 11] = [
    "additionalProperties",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
    "items",
];
/// Keywords whose value is an array of subschemas.
const LIST: [&str; 5] = ["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names to subschemas.
const MAP: [&str; 6] =
    ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"];

impl Index {
    fn walk(
        &mut self,
        schema: &Value,
        pointer: String,
        mut base: String,
        depth: usize,
    ) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("the schema is nested more than {MAX_DEPTH} levels deep at `{pointer}`"));
        }
        let Value::Object(map) = schema else {
            self.bases.insert(pointer, base);
            return Ok(());
        };
        if let Some(Value::String(id)) = map.get("$id") {
            match id.strip_prefix('#') {
                Some(anchor) => {
                    self.anchors.insert(format!("{base}#{anchor}"), pointer.clone());
                }
                None => {
                    let resolved = uri::resolve(&base, id);
                    base = uri::split_fragment(&resolved).0.to_owned();
                    self.resources.entry(base.clone()).or_insert_with(|| pointer.clone());
                }
            }
        }
        for keyword in ["$anchor", "$dynamicAnchor"] {
            if let Some(Value::String(name)) = map.get(keyword) {
                self.anchors.entry(format!("{base}#{name}")).or_insert_with(|| pointer.clone());
            }
        }
        self.bases.insert(pointer.clone(), base.clone());
        for (keyword, value) in map {
            let here = format!("{pointer}/{}", escape(keyword));
            match value {
                Value::Array(list) if LIST.contains(&keyword.as_str()) => {
                    for (i, item) in list.iter().enumerate() {
                        self.walk(item, format!("{here}/{i}"), base.clone(), depth + 1)?;
                    }
                }
                Value::Object(entries) if MAP.contains(&keyword.as_str()) => {
                    for (name, item) in entries {
                        self.walk(item, format!("{here}/{}", escape(name)), base.clone(), depth + 1)?;
                    }
                }
                _ if ONE.contains(&keyword.as_str()) => self.walk(value, here, base.clone(), depth + 1)?,
                _ => {}
            }
        }
        Ok(())
    }
}

struct Compiler<'s> {
    document: &'s Value,
    index: Index,
    nodes: Vec<Node>,
    compiled: HashMap<String, NodeId>,
    /// Nodes numbered but not compiled yet, with their pointers.
    pending: Vec<(NodeId, String)>,
    /// Patterns compiled so far.
    patterns: usize,
}

impl Compiler<'_> {
    /// The number of the node of the subschema at `pointer`; on first use it is queued to be
    /// compiled.
    fn node_at(&mut self, pointer: &str) -> Result<NodeId, String> {
        if let Some(&id) = self.compiled.get(pointer) {
            return Ok(id);
        }
        if self.document.pointer(pointer).is_none() {
            return Err(format!("nothing is at `{pointer}`"));
        }
        let id = self.nodes.len();
        self.nodes.push(Node::Always(true));
        self.compiled.insert(pointer.to_owned(), id);
        self.pending.push((id, pointer.to_owned()));
        Ok(id)
    }

    fn node(&mut self, schema: &Value, pointer: &str) -> Result<Node, String> {
        let map = match schema {
            Value::Bool(b) => return Ok(Node::Always(*b)),
            Value::Object(map) if map.is_empty() => return Ok(Node::Always(true)),
            Value::Object(map) => map,
            other => {
                return Err(format!(
                    "{}: a schema must be an object or a boolean, found {}",
                    place(pointer, ""),
                    crate::words::excerpt(&other.to_string())
                ));
            }
        };
        let mut k = Keywords { only_const: true, ..Keywords::default() };
        let mut items_is_list = false;
        let mut only_ref = true;
        for (keyword, value) in map {
            if !ANNOTATIONS.contains(&keyword.as_str()) {
                k.only_const &= keyword == "const" || keyword == "type";
                only_ref &= keyword == "$ref";
            }
            let here = format!("{pointer}/{}", escape(keyword));
            let wrong = |what: &str| format!("{} must be {what}", place(pointer, keyword));
            match keyword.as_str() {
                "type" => {
                    k.types = types(value).ok_or_else(|| wrong("a type name or an array of type names"))?
                }
                "enum" => {
                    if !value.is_array() {
                        return Err(wrong("an array"));
                    }
                    k.enumeration = Some(value.clone());
                }
                "const" => k.constant = Some(value.clone()),
                "multipleOf" => {
                    k.multiple_of = Some(
                        number(value)
                            .filter(|n| n.as_f64().is_some_and(|f| f > 0.0))
                            .ok_or_else(|| wrong("a number greater than 0"))?,
                    );
                }
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
                    let n = number(value).ok_or_else(|| wrong("a number"))?;
                    *match keyword.as_str() {
                        "minimum" => &mut k.minimum,
                        "maximum" => &mut k.maximum,
                        "exclusiveMinimum" => &mut k.exclusive_minimum,
                        _ => &mut k.exclusive_maximum,
                    } = Some(n);
                }
                "minLength" | "maxLength" | "minItems" | "maxItems" | "minContains" | "maxContains"
                | "minProperties" | "maxProperties" => {
                    let n = count(value).ok_or_else(|| wrong("a non-negative integer"))?;
                    *match keyword.as_str() {
                        "minLength" => &mut k.min_length,
                        "maxLength" => &mut k.max_length,
                        "minItems" => &mut k.min_items,
                        "maxItems" => &mut k.max_items,
                        "minContains" => &mut k.min_contains,
                        "maxContains" => &mut k.max_contains,
                        "minProperties" => &mut k.min_properties,
                        _ => &mut k.max_properties,
                    } = Some(n);
                }
                "pattern" => {
                    let text = value.as_str().ok_or_else(|| wrong("a string"))?;
                    self.count_pattern(pointer)?;
                    k.pattern = pattern::compile(text).map(|regex| (text.to_owned(), regex));
                }
                "format" => k.format = value.as_str().and_then(IntegerFormat::for_format),
                "uniqueItems" => k.unique_items = value.as_bool().ok_or_else(|| wrong("true or false"))?,
                "prefixItems" => {
                    k.prefix_items = self.list(value, &here).ok_or_else(|| wrong("an array of schemas"))??
                }
                "items" if value.is_array() => {
                    items_is_list = true;
                    k.prefix_items =
                        self.list(value, &here).ok_or_else(|| wrong("an array of schemas"))??;
                }
                "items" => k.items = Some(self.node_at(&here)?),
                "contains" => k.contains = Some(self.node_at(&here)?),
                "unevaluatedItems" => k.unevaluated_items = Some(self.node_at(&here)?),
                "required" => k.required = strings(value).ok_or_else(|| wrong("an array of strings"))?,
                "properties" => {
                    k.properties =
                        self.named(value, &here).ok_or_else(|| wrong("an object of schemas"))??;
                }
                "patternProperties" => {
                    let entries = self.named(value, &here).ok_or_else(|| wrong("an object of schemas"))??;
                    for (text, schema) in entries {
                        self.count_pattern(pointer)?;
                        // A pattern the engine cannot run is not enforced (see the module).
                        if let Some(regex) = pattern::compile(&text) {
                            k.pattern_properties.push((regex, schema));
                        }
                    }
                }
                "additionalProperties" => k.additional_properties = Some(self.node_at(&here)?),
                "dependentRequired" => {
                    let entries = value.as_object().ok_or_else(|| wrong("an object of string arrays"))?;
                    for (name, names) in entries {
                        let names = strings(names).ok_or_else(|| wrong("an object of string arrays"))?;
                        k.dependent_required.push((name.clone(), names));
                    }
                }
                "dependentSchemas" => {
                    k.dependent_schemas
                        .extend(self.named(value, &here).ok_or_else(|| wrong("an object of schemas"))??);
                }
                "dependencies" => {
                    let entries = value.as_object().ok_or_else(|| wrong("an object"))?;
                    for (name, dependency) in entries {
                        match strings(dependency) {
                            Some(names) => k.dependent_required.push((name.clone(), names)),
                            None => k
                                .dependent_schemas
                                .push((name.clone(), self.node_at(&format!("{here}/{}", escape(name)))?)),
                        }
                    }
                }
                "propertyNames" => k.property_names = Some(self.node_at(&here)?),
                "unevaluatedProperties" => k.unevaluated_properties = Some(self.node_at(&here)?),
                "allOf" | "anyOf" | "oneOf" => {
                    let list = self
                        .list(value, &here)
                        .filter(|l| l.as_ref().map_or(true, |l| !l.is_empty()))
                        .ok_or_else(|| wrong("a non-empty array of schemas"))??;
                    *match keyword.as_str() {
                        "allOf" => &mut k.all_of,
                        "anyOf" => &mut k.any_of,
                        _ => &mut k.one_of,
                    } = list;
                }
                "not" => k.not = Some(self.node_at(&here)?),
                "$ref" | "$dynamicRef" | "$recursiveRef" => {
                    let reference = value.as_str().ok_or_else(|| wrong("a string"))?;
                    k.reference.push(self.reference(pointer, keyword, reference)?);
                }
                _ => {}
            }
        }
        if items_is_list && map.contains_key("additionalItems") {
            k.items = Some(self.node_at(&format!("{pointer}/additionalItems"))?);
        }
        if let Some(condition) = map.get("if").map(|_| self.node_at(&format!("{pointer}/if"))).transpose()? {
            let then = map.get("then").map(|_| self.node_at(&format!("{pointer}/then"))).transpose()?;
            let otherwise = map.get("else").map(|_| self.node_at(&format!("{pointer}/else"))).transpose()?;
            k.if_then_else = Some((condition, then, otherwise));
        }
        // A `type` beside a `const` of that type adds nothing (schemars writes both).
        k.only_const &=
            k.constant.as_ref().is_some_and(|c| k.types == 0 || super::check::type_matches(k.types, c));
        if only_ref && k.reference.len() == 1 {
            return Ok(Node::Alias(k.reference[0]));
        }
        k.number = k.multiple_of.is_some()
            || k.minimum.is_some()
            || k.maximum.is_some()
            || k.exclusive_minimum.is_some()
            || k.exclusive_maximum.is_some();
        k.string = k.min_length.is_some() || k.max_length.is_some() || k.pattern.is_some();
        k.array = k.min_items.is_some()
            || k.max_items.is_some()
            || k.unique_items
            || !k.prefix_items.is_empty()
            || k.items.is_some()
            || k.contains.is_some()
            || k.unevaluated_items.is_some();
        k.object = k.min_properties.is_some()
            || k.max_properties.is_some()
            || !k.required.is_empty()
            || !k.properties.is_empty()
            || !k.pattern_properties.is_empty()
            || k.additional_properties.is_some()
            || !k.dependent_required.is_empty()
            || !k.dependent_schemas.is_empty()
            || k.property_names.is_some()
            || k.unevaluated_properties.is_some();
        k.any_value = k.types != 0 || k.enumeration.is_some() || k.constant.is_some() || k.format.is_some();
        k.in_place = !k.all_of.is_empty()
            || !k.any_of.is_empty()
            || !k.one_of.is_empty()
            || k.not.is_some()
            || k.if_then_else.is_some();
        k.declared = k
            .properties
            .iter()
            .map(|(name, schema)| (name.clone(), *schema, k.required.contains(name)))
            .collect();
        k.declared.sort_by(|a, b| by_length(&a.0, &b.0));
        let mut required = k.required.clone();
        required.sort();
        required.dedup();
        k.required_declared =
            required.len() == k.required.len() && required.iter().all(|name| k.find(name).is_some());
        Ok(Node::Keywords(Box::new(k)))
    }

    /// Counts one more pattern; past [`MAX_PATTERNS`] the schema is refused.
    fn count_pattern(&mut self, pointer: &str) -> Result<(), String> {
        self.patterns += 1;
        if self.patterns > MAX_PATTERNS {
            return Err(format!(
                "the schema has more than {MAX_PATTERNS} patterns (the one past the bound is at `{pointer}`)"
            ));
        }
        Ok(())
    }

    /// The nodes of an array of subschemas; `None` when `value` is not an array.
    fn list(&mut self, value: &Value, here: &str) -> Option<Result<Vec<NodeId>, String>> {
        let list = value.as_array()?;
        Some((0..list.len()).map(|i| self.node_at(&format!("{here}/{i}"))).collect())
    }

    /// The nodes of an object of subschemas, by name; `None` when `value` is not an object.
    fn named(&mut self, value: &Value, here: &str) -> Option<Result<Vec<(String, NodeId)>, String>> {
        let entries: &Map<String, Value> = value.as_object()?;
        Some(
            entries
                .keys()
                .map(|name| Ok((name.clone(), self.node_at(&format!("{here}/{}", escape(name)))?)))
                .collect(),
        )
    }

    /// The node a `$ref` at `pointer` points to.
    fn reference(&mut self, pointer: &str, keyword: &str, reference: &str) -> Result<NodeId, String> {
        let base = self.base_of(pointer);
        let target = uri::resolve(&base, reference);
        let (document, fragment) = uri::split_fragment(&target);
        let fragment = fragment.unwrap_or_default();
        let found = if fragment.is_empty() || fragment.starts_with('/') {
            self.index.resources.get(document).map(|root| format!("{root}{fragment}"))
        } else {
            self.index.anchors.get(&format!("{document}#{fragment}")).cloned()
        };
        match found.filter(|at| self.document.pointer(at).is_some()) {
            Some(at) => self.node_at(&at),
            None => Err(format!(
                "{} `{reference}` points to nothing within the schema (references to other documents are not \
                 fetched)",
                place(pointer, keyword)
            )),
        }
    }

    /// The base URI in effect at `pointer` (that of the nearest indexed schema around it).
    fn base_of(&self, pointer: &str) -> String {
        let mut at = pointer;
        loop {
            if let Some(base) = self.index.bases.get(at) {
                return base.clone();
            }
            match at.rfind('/') {
                Some(end) => at = &at[..end],
                None => return uri::DEFAULT_BASE.to_owned(),
            }
        }
    }
}

/// The values of `branches` when each is a `const` alone (how a documented enum is
/// written): `anyOf` of them holds for an equal value, and so does `oneOf` when no two are
/// equal. `None` otherwise.
fn constants(nodes: &[Node], branches: &[NodeId], distinct: bool) -> Option<Vec<Value>> {
    let values: Vec<Value> = branches
        .iter()
        .map(|&branch| match &nodes[branch] {
            Node::Keywords(k) if k.only_const => k.constant.clone(),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let pairwise_distinct = || {
        values.iter().enumerate().all(|(i, a)| values[i + 1..].iter().all(|b| !super::number::equal(a, b)))
    };
    (!values.is_empty() && (!distinct || pairwise_distinct())).then_some(values)
}

/// `` `keyword` at `/pointer` `` (or at the root), for a schema error.
fn place(pointer: &str, keyword: &str) -> String {
    match (pointer.is_empty(), keyword.is_empty()) {
        (true, true) => "the schema".to_owned(),
        (true, false) => format!("`{keyword}`"),
        (false, true) => format!("the schema at `{pointer}`"),
        (false, false) => format!("`{keyword}` at `{pointer}`"),
    }
}

fn types(value: &Value) -> Option<u8> {
    let bit = |name: &str| TYPES.iter().position(|t| *t == name).map(|i| 1u8 << i);
    match value {
        Value::String(name) => bit(name),
        Value::Array(names) if !names.is_empty() => {
            names.iter().try_fold(0u8, |set, name| Some(set | bit(name.as_str()?)?))
        }
        _ => None,
    }
}

fn number(value: &Value) -> Option<Number> {
    match value {
        Value::Number(n) => Some(n.clone()),
        _ => None,
    }
}

/// A non-negative integer (`2.0` too).
fn count(value: &Value) -> Option<u64> {
    let n = value.as_number()?;
    n.as_u64()
        .or_else(|| n.as_f64().filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1.8e19).map(|f| f as u64))
}

fn strings(value: &Value) -> Option<Vec<String>> {
    value.as_array()?.iter().map(|v| v.as_str().map(str::to_owned)).collect()
}
