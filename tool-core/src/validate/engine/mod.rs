//! A JSON Schema validator (draft 2020-12, with draft 7's `definitions`, `dependencies` and
//! array form of `items`), compiled once per tool and run on every call.
//!
//! What it checks: every assertion and applicator of draft 2020-12's core and validation
//! vocabularies (`type`, `enum`, `const`, the numeric, string, array and object limits,
//! `properties`, `patternProperties`, `additionalProperties`, `propertyNames`,
//! `dependentRequired`, `dependentSchemas`, `prefixItems`, `items`, `contains` with its limits,
//! `uniqueItems`, `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`,
//! `unevaluatedProperties`, `unevaluatedItems`), `$ref` within the schema (JSON pointers,
//! `$id` resources, `$anchor`s), and the integer formats schemars writes (`uint32`, `int8`,
//! ...). It is checked against the official JSON Schema Test Suite, and its verdicts against
//! the `jsonschema` crate's where the suite says nothing (`suite.rs`, beside this module).
//!
//! What it leaves out, on purpose:
//! - A `$ref` to a document outside the schema (a remote or the meta-schema) is a schema
//!   error: nothing is fetched.
//! - `$dynamicRef` is followed as a `$ref` to its static target (no dynamic scope).
//! - Other `format`s are annotations, as draft 2020-12 has them by default.
//! - `pattern`s run on the `regex` crate, which matches in linear time: a pattern a mounted
//!   server sends cannot make a call's check take exponential time. ECMA-262's `\d`, `\w` and
//!   their negations mean ASCII, as in JavaScript. A pattern that needs backtracking
//!   (look-around, back-references) is not enforced; the tool behind it still checks its own
//!   arguments.
//!
//! A schema may hold at most [`MAX_PATTERNS`] patterns, each compiled to at most 256 KiB (a
//! larger one is not enforced), so compiling a mounted server's schema takes bounded memory.
//! A check lists at most [`MAX_ERRORS`] problems and says when there are more. It is bounded:
//! at most [`MAX_STEPS`] schema visits (an `anyOf` nested in `anyOf`s can
//! make a small schema exponential) and [`MAX_DEPTH`] nested schemas (a `$ref` cycle that
//! consumes nothing of the instance); past either the instance is invalid with an error that
//! says so.

mod check;
mod compile;
mod number;
mod pattern;
mod uri;

#[cfg(test)]
mod suite;

use serde_json::{Number, Value};

use super::format::IntegerFormat;

/// Schema visits one check may make.
pub(crate) const MAX_STEPS: u64 = 10_000_000;
/// Schemas one check may be nested in (each `$ref` followed counts).
pub(crate) const MAX_DEPTH: usize = 512;
/// Problems one check lists; past them it stops and says there are more. Each problem is
/// described to the model (an `anyOf`'s may compile its branch to look inside), so a call of
/// 20,000 failing items cost the host over two minutes before this bound.
pub(crate) const MAX_ERRORS: usize = 100;
/// `pattern`s and `patternProperties` one schema may have (each compiled takes up to
/// [`pattern::MAX_COMPILED_BYTES`]).
pub(crate) const MAX_PATTERNS: usize = 256;

/// A compiled schema.
pub(crate) struct Validator {
    nodes: Vec<Node>,
    root: NodeId,
}

/// One problem found in an instance.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Error<'i> {
    /// JSON pointer of the value in the instance.
    pub(crate) path: String,
    /// The value.
    pub(crate) instance: &'i Value,
    /// What is wrong with it.
    pub(crate) kind: Kind,
}

/// What is wrong with a value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    /// Not of the schema's `type`.
    Type,
    /// A `required` property is missing.
    Required(String),
    /// Properties `additionalProperties: false` (or a schema) does not take.
    AdditionalProperties(Vec<String>),
    /// Properties `unevaluatedProperties` does not take.
    UnevaluatedProperties(Vec<String>),
    /// Not one of `enum`'s values (the array).
    Enum(Value),
    /// Not `const`'s value.
    Const(Value),
    Minimum(Number),
    Maximum(Number),
    ExclusiveMinimum(Number),
    ExclusiveMaximum(Number),
    MinLength(u64),
    MaxLength(u64),
    MinItems(u64),
    MaxItems(u64),
    /// Does not match `pattern` (its text).
    Pattern(String),
    UniqueItems,
    /// Matches no branch of `anyOf`.
    AnyOf,
    /// Matches no branch of `oneOf`.
    OneOfNone,
    /// Matches more than one branch of `oneOf`.
    OneOfMany,
    /// Any other problem, said in words (`must be a multiple of 3`).
    Other(String),
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kind::Type => f.write_str("is not of the expected type"),
            Kind::Required(name) => write!(f, "`{name}` is a required property"),
            Kind::AdditionalProperties(names) => write!(f, "unexpected properties {}", names.join(", ")),
            Kind::UnevaluatedProperties(names) => write!(f, "unexpected properties {}", names.join(", ")),
            Kind::Enum(options) => write!(f, "is not one of {options}"),
            Kind::Const(value) => write!(f, "is not {value}"),
            Kind::Minimum(limit) => write!(f, "is less than {limit}"),
            Kind::Maximum(limit) => write!(f, "is greater than {limit}"),
            Kind::ExclusiveMinimum(limit) => write!(f, "is not greater than {limit}"),
            Kind::ExclusiveMaximum(limit) => write!(f, "is not less than {limit}"),
            Kind::MinLength(limit) => write!(f, "is shorter than {limit} characters"),
            Kind::MaxLength(limit) => write!(f, "is longer than {limit} characters"),
            Kind::MinItems(limit) => write!(f, "has fewer than {limit} items"),
            Kind::MaxItems(limit) => write!(f, "has more than {limit} items"),
            Kind::Pattern(pattern) => write!(f, "does not match {pattern}"),
            Kind::UniqueItems => f.write_str("has non-unique items"),
            Kind::AnyOf => f.write_str("matches none of the allowed forms"),
            Kind::OneOfNone => f.write_str("matches none of the allowed forms"),
            Kind::OneOfMany => {
                f.write_str("matches more than one of the forms, where exactly one is allowed")
            }
            Kind::Other(message) => f.write_str(message),
        }
    }
}

/// Index of a [`Node`] in its validator.
type NodeId = usize;

/// One compiled schema.
enum Node {
    /// `true` or `false` (or `{}`, which is `true`).
    Always(bool),
    Keywords(Box<Keywords>),
    /// A schema that is only a `$ref` to this node (no other node points here once compiled,
    /// except a cycle of aliases, which checks as nested too deeply).
    Alias(NodeId),
}

/// The keywords of one schema object that the validator enforces.
#[derive(Default)]
struct Keywords {
    /// Whether the schema is a `const` and annotations, nothing else (or a `type` the `const`
    /// has).
    only_const: bool,
    /// `oneOf`'s branches as values, when each is a distinct `const` alone.
    one_of_values: Option<Vec<Value>>,
    /// `anyOf`'s branches as values, when each is a `const` alone.
    any_of_values: Option<Vec<Value>>,
    /// Whether any of `type`, `enum`, `const` and an integer `format` is present.
    any_value: bool,
    /// Whether any of `allOf`, `anyOf`, `oneOf`, `not` and `if` is present.
    in_place: bool,
    /// Whether any keyword for numbers, strings, arrays, objects is present.
    number: bool,
    string: bool,
    array: bool,
    object: bool,
    /// Bit set of [`TYPES`]; 0 when the schema has no `type`.
    types: u8,
    enumeration: Option<Value>,
    constant: Option<Value>,
    multiple_of: Option<Number>,
    minimum: Option<Number>,
    maximum: Option<Number>,
    exclusive_minimum: Option<Number>,
    exclusive_maximum: Option<Number>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    pattern: Option<(String, regex::Regex)>,
    format: Option<IntegerFormat>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    unique_items: bool,
    prefix_items: Vec<NodeId>,
    items: Option<NodeId>,
    contains: Option<NodeId>,
    min_contains: Option<u64>,
    max_contains: Option<u64>,
    unevaluated_items: Option<NodeId>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    required: Vec<String>,
    properties: Vec<(String, NodeId)>,
    pattern_properties: Vec<(regex::Regex, NodeId)>,
    additional_properties: Option<NodeId>,
    /// `properties` sorted by [`by_length`], to look a property up, each with whether it is
    /// required.
    declared: Vec<(String, NodeId, bool)>,
    /// Whether every name of `required` is a distinct declared property (so counting the
    /// required properties met among the instance's keys checks `required`).
    required_declared: bool,
    dependent_required: Vec<(String, Vec<String>)>,
    dependent_schemas: Vec<(String, NodeId)>,
    property_names: Option<NodeId>,
    unevaluated_properties: Option<NodeId>,
    all_of: Vec<NodeId>,
    any_of: Vec<NodeId>,
    one_of: Vec<NodeId>,
    not: Option<NodeId>,
    if_then_else: Option<(NodeId, Option<NodeId>, Option<NodeId>)>,
    reference: Vec<NodeId>,
}

impl Keywords {
    /// Every subschema this schema points to.
    fn children_mut(&mut self) -> impl Iterator<Item = &mut NodeId> {
        let (condition, then, otherwise) = match &mut self.if_then_else {
            Some((condition, then, otherwise)) => (Some(condition), then.as_mut(), otherwise.as_mut()),
            None => (None, None, None),
        };
        self.reference
            .iter_mut()
            .chain(&mut self.prefix_items)
            .chain(&mut self.all_of)
            .chain(&mut self.any_of)
            .chain(&mut self.one_of)
            .chain(self.properties.iter_mut().map(|(_, id)| id))
            .chain(self.declared.iter_mut().map(|(_, id, _)| id))
            .chain(self.pattern_properties.iter_mut().map(|(_, id)| id))
            .chain(self.dependent_schemas.iter_mut().map(|(_, id)| id))
            .chain(self.items.as_mut())
            .chain(self.contains.as_mut())
            .chain(self.unevaluated_items.as_mut())
            .chain(self.additional_properties.as_mut())
            .chain(self.property_names.as_mut())
            .chain(self.unevaluated_properties.as_mut())
            .chain(self.not.as_mut())
            .chain(condition)
            .chain(then)
            .chain(otherwise)
    }

    /// The index in `declared` of the property `name`.
    fn find(&self, name: &str) -> Option<usize> {
        self.declared.binary_search_by(|(declared, ..)| by_length(declared, name)).ok()
    }
}

/// Names ordered by length first: most comparisons of a lookup end without reading a byte.
fn by_length(a: &str, b: &str) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// The seven JSON Schema types, in the order of their bits.
const TYPES: [&str; 7] = ["null", "boolean", "object", "array", "number", "string", "integer"];

impl Validator {
    /// Compiles `schema`. The error says what is wrong with it and where.
    pub(crate) fn new(schema: &Value) -> Result<Self, String> {
        compile::compile(schema)
    }

    /// Whether `instance` is valid.
    pub(crate) fn is_valid(&self, instance: &Value) -> bool {
        check::Run::new(self).valid(instance)
    }

    /// Every problem in `instance`, empty when it is valid.
    pub(crate) fn errors<'i>(&self, instance: &'i Value) -> Vec<Error<'i>> {
        check::Run::new(self).errors(instance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn valid(schema: Value, instance: Value) -> bool {
        Validator::new(&schema).unwrap().is_valid(&instance)
    }

    #[test]
    fn unique_items_says_the_same_for_short_arrays_and_long_ones() {
        // Short arrays are compared pairwise, long ones hashed by a canonical text: both must
        // tell 2^53 + 1 from 2^53 written as a float, and 1 from 1.0 not.
        let schema = json!({"uniqueItems": true});
        for filler in [0, 20] {
            let mut items: Vec<Value> = (0..filler).map(|i| json!(format!("filler {i}"))).collect();
            items.push(json!(9_007_199_254_740_993_u64));
            items.push(serde_json::from_str("9007199254740992.0").unwrap());
            assert!(valid(schema.clone(), Value::Array(items.clone())), "{filler}");
            items.push(json!(1));
            items.push(json!(1.0));
            assert!(!valid(schema.clone(), Value::Array(items)), "{filler}");
        }
    }

    #[test]
    fn a_pattern_with_ecma_classes_means_ascii_and_runs_in_linear_time() {
        assert!(valid(json!({"pattern": "^\\d+$"}), json!("123")));
        assert!(!valid(json!({"pattern": "^\\d+$"}), json!("١٢٣")));
        assert!(valid(json!({"pattern": "^[\\w-]+$"}), json!("a_b-c")));
        assert!(!valid(json!({"pattern": "^\\W$"}), json!("a")));
        // Catastrophic for a backtracking engine; linear here.
        let evil = format!("{}!", "a".repeat(100_000));
        assert!(!valid(json!({"pattern": "^(a+)+$"}), json!(evil)));
    }

    #[test]
    fn a_pattern_the_engine_cannot_compile_is_not_enforced() {
        assert!(valid(json!({"pattern": "^(?!x)"}), json!("x")));
    }

    #[test]
    fn a_ref_cycle_that_consumes_nothing_is_an_error_not_a_stack_overflow() {
        let validator = Validator::new(&json!({"$ref": "#"})).unwrap();
        assert!(!validator.is_valid(&json!(1)));
        let one = json!(1);
        let errors = validator.errors(&one);
        assert!(
            matches!(&errors[..], [Error { kind: Kind::Other(m), .. }] if m.contains("nested")),
            "{errors:?}"
        );
    }

    #[test]
    fn the_deepest_instance_json_allows_is_checked_on_a_small_stack() {
        // A tree schema through `$ref`, and an instance as deep as serde_json parses (128),
        // checked on a thread with the stack of a tokio worker (2 MiB), in both modes.
        let schema = json!({
            "$defs": {"node": {
                "type": "object",
                "properties": {"child": {"$ref": "#/$defs/node"}, "list": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                "unevaluatedProperties": false
            }},
            "$ref": "#/$defs/node"
        });
        let mut text = String::new();
        for level in 0..84 {
            text.push_str(if level % 2 == 0 { r#"{"child":"# } else { r#"{"list":["# });
        }
        text.push_str(r#"{"bad":1}"#);
        for level in (0..84).rev() {
            text.push_str(if level % 2 == 0 { "}" } else { "]}" });
        }
        let instance: Value = serde_json::from_str(&text).unwrap();
        let (valid, errors) = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let validator = Validator::new(&schema).unwrap();
                let errors: Vec<(String, Kind)> =
                    validator.errors(&instance).into_iter().map(|e| (e.path, e.kind)).collect();
                (validator.is_valid(&instance), errors)
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(!valid);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].0.ends_with("/child/list/0"), "{errors:?}");
        assert_eq!(errors[0].1, Kind::UnevaluatedProperties(vec!["bad".to_owned()]));
    }

    #[test]
    fn a_long_chain_of_refs_compiles_and_checks_on_a_small_stack() {
        // Each schema refers to the next, as long a chain as a mounted server likes: compiling
        // takes no stack for it, and a check past the depth bound is an error.
        let chain = |length: usize| {
            let mut defs = serde_json::Map::new();
            for i in 0..length {
                defs.insert(
                    format!("d{i}"),
                    json!({"$ref": format!("#/$defs/d{}", i + 1), "type": "object"}),
                );
            }
            defs.insert(format!("d{length}"), json!({"type": "object"}));
            json!({"$ref": "#/$defs/d0", "$defs": defs})
        };
        let (long, short) = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let long = Validator::new(&chain(100_000)).unwrap();
                let object = json!({});
                let errors: Vec<Kind> = long.errors(&object).into_iter().map(|e| e.kind).collect();
                let short = Validator::new(&chain(400)).unwrap();
                ((long.is_valid(&object), errors), (short.is_valid(&object), short.is_valid(&json!(1))))
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(!long.0);
        assert!(matches!(&long.1[..], [Kind::Other(m)] if m.contains("nested")), "{:?}", long.1);
        assert_eq!(short, (true, false));
    }

    #[test]
    fn too_many_patterns_are_a_schema_error() {
        let properties: serde_json::Map<String, Value> =
            (0..=MAX_PATTERNS).map(|i| (format!("p{i}"), json!({"pattern": format!("^{i}")}))).collect();
        let error = Validator::new(&json!({"properties": properties})).err().unwrap();
        assert!(error.contains("patterns"), "{error}");
    }

    #[test]
    fn a_call_with_many_problems_lists_the_first_hundred_and_says_there_are_more() {
        let validator = Validator::new(&json!({"type": "array", "items": {"type": "integer"}})).unwrap();
        let items = Value::Array((0..20_000).map(|i| json!(i.to_string())).collect());
        let errors = validator.errors(&items);
        assert_eq!(errors.len(), MAX_ERRORS + 1);
        assert_eq!(errors[0].path, "/0");
        assert_eq!(errors[MAX_ERRORS - 1].path, format!("/{}", MAX_ERRORS - 1));
        assert!(matches!(&errors[MAX_ERRORS].kind, Kind::Other(m) if m.contains("there are more")));
        let few = json!(["a", 1, "b"]);
        assert_eq!(validator.errors(&few).len(), 2);
    }

    #[test]
    fn an_exponential_schema_is_stopped_by_the_step_bound() {
        // 40 levels of two-branch anyOf whose branches both lead on: 2^40 paths on a failing
        // instance.
        let mut defs = serde_json::Map::new();
        for level in 0..40 {
            let next = format!("#/$defs/l{}", level + 1);
            defs.insert(
                format!("l{level}"),
                json!({"anyOf": [{"$ref": next}, {"$ref": next, "minimum": 0}]}),
            );
        }
        defs.insert("l40".to_owned(), json!({"type": "string"}));
        let validator = Validator::new(&json!({"$ref": "#/$defs/l0", "$defs": defs})).unwrap();
        assert!(!validator.is_valid(&json!(1)));
        assert!(!validator.errors(&json!(1)).is_empty());
    }

    #[test]
    fn unique_items_compares_numbers_by_value_in_large_arrays() {
        let mut items: Vec<Value> = (0..10_000).map(|n| json!(n)).collect();
        assert!(valid(json!({"uniqueItems": true}), Value::Array(items.clone())));
        items.push(json!(5000.0));
        assert!(!valid(json!({"uniqueItems": true}), Value::Array(items)));
        assert!(!valid(json!({"uniqueItems": true}), json!([{"a": 1, "b": [1.0]}, {"b": [1], "a": 1.0}])));
    }

    #[test]
    fn a_schema_with_a_wrong_keyword_value_is_an_error_naming_the_place() {
        for (schema, place) in [
            (json!({"type": 7}), "type"),
            (json!({"type": "text"}), "type"),
            (json!({"properties": {"a": 3}}), "/properties/a"),
            (json!({"minLength": -1}), "minLength"),
            (json!({"multipleOf": 0}), "multipleOf"),
            (json!({"required": [1]}), "required"),
            (json!({"$ref": "https://example.com/other.json"}), "$ref"),
            (json!({"$ref": "#/$defs/missing"}), "$ref"),
        ] {
            let error = Validator::new(&schema).err().unwrap_or_else(|| panic!("{schema} compiled"));
            assert!(error.contains(place), "{schema}: {error}");
        }
    }

    #[test]
    fn errors_carry_the_path_of_the_value() {
        let validator = Validator::new(&json!({
            "type": "object",
            "properties": {"list": {"type": "array", "items": {"type": "integer", "maximum": 3}}},
            "required": ["name"],
            "additionalProperties": false
        }))
        .unwrap();
        let instance = json!({"list": [1, 9, "x"], "extra/key": 1});
        let errors: Vec<(String, Kind)> =
            validator.errors(&instance).into_iter().map(|e| (e.path, e.kind)).collect();
        assert!(errors.contains(&(String::new(), Kind::Required("name".to_owned()))), "{errors:?}");
        assert!(errors.contains(&("/list/1".to_owned(), Kind::Maximum(3.into()))), "{errors:?}");
        assert!(errors.contains(&("/list/2".to_owned(), Kind::Type)), "{errors:?}");
        assert!(
            errors.contains(&(String::new(), Kind::AdditionalProperties(vec!["extra/key".to_owned()]))),
            "{errors:?}"
        );
    }
}
