//! An instance checked against a compiled schema: fast (stop at the first problem) or
//! collecting every problem with its path. Sub-checks whose failure is not itself a problem
//! (`anyOf`'s branches, `not`, `if`, `contains`) always run fast.

use std::collections::HashSet;

use serde_json::{Map, Number, Value};

use super::number::{canonical, compare, equal, is_integer, is_multiple_of};
use super::{Error, Keywords, Kind, MAX_DEPTH, MAX_ERRORS, MAX_STEPS, Node, NodeId, Validator};
use crate::validate::path::Path;
use crate::words::plural;

/// One check of one instance: its step count, and whether the bound was reached.
pub(super) struct Run<'v> {
    validator: &'v Validator,
    steps: u64,
    exhausted: bool,
}

/// The properties or items some schemas evaluated, for `unevaluated*`.
#[derive(Default)]
struct Evaluated<'i> {
    all: bool,
    names: HashSet<&'i str>,
    /// Items before this index were evaluated (`prefixItems`).
    prefix: usize,
    indices: HashSet<usize>,
}

type Sink<'o, 'i> = Option<&'o mut Vec<Error<'i>>>;

/// The value being checked, where it is, and how deep the check is.
struct At<'p, 'i> {
    instance: &'i Value,
    path: &'p Path<'p>,
    depth: usize,
}

/// Records a problem: into `$out` when it collects (the check goes on), otherwise the
/// enclosing function returns `false`.
macro_rules! fail {
    ($valid:ident, $out:ident, $at:expr, $kind:expr) => {{
        $valid = false;
        match $out.as_deref_mut() {
            Some(list) if list.len() < MAX_ERRORS => {
                list.push(Error { path: $at.path.pointer(), instance: $at.instance, kind: $kind })
            }
            // Enough to act on: the check stops (see `check`).
            Some(_) => return false,
            None => return false,
        }
    }};
}

/// Checks a subschema; its problems go to `$out` (or end the enclosing function).
macro_rules! sub {
    ($self:ident, $valid:ident, $out:ident, $node:expr, $instance:expr, $path:expr, $depth:expr) => {{
        if !$self.check($node, $instance, $path, $out.as_deref_mut(), $depth + 1) {
            $valid = false;
            if $out.is_none() {
                return false;
            }
        }
    }};
}

impl<'v> Run<'v> {
    pub(super) fn new(validator: &'v Validator) -> Self {
        Run { validator, steps: 0, exhausted: false }
    }

    pub(super) fn valid(mut self, instance: &Value) -> bool {
        self.check(self.validator.root, instance, &Path::Root, None, 0)
    }

    pub(super) fn errors(mut self, instance: &Value) -> Vec<Error<'_>> {
        let mut errors = Vec::new();
        self.check(self.validator.root, instance, &Path::Root, Some(&mut errors), 0);
        if self.exhausted {
            // What was found before the bound may be only part of the story, or misleading.
            return vec![Error {
                path: String::new(),
                instance,
                kind: Kind::Other(format!(
                    "these arguments are too costly to check against the tool's schema (more than {MAX_STEPS} \
                     steps); send a smaller value"
                )),
            }];
        }
        if errors.len() >= MAX_ERRORS {
            errors.push(Error {
                path: String::new(),
                instance,
                kind: Kind::Other(format!(
                    "these are the first {MAX_ERRORS} problems; there are more: fix these and call again to see \
                     the rest"
                )),
            });
        }
        errors
    }

    /// Whether `instance` is valid against `node`; each problem goes to `out` when it is given
    /// (and the check goes on), otherwise the first one ends the check. The keywords of each
    /// kind of value are checked in a function of their own, so that the frame that recurses
    /// stays small (a check nests as deep as the instance and its `$ref`s).
    fn check<'i>(
        &mut self,
        node: NodeId,
        instance: &'i Value,
        path: &Path<'_>,
        mut out: Sink<'_, 'i>,
        depth: usize,
    ) -> bool {
        let validator = self.validator;
        if self.exhausted || out.as_ref().is_some_and(|list| list.len() >= MAX_ERRORS) {
            return false;
        }
        self.steps += 1;
        if self.steps > MAX_STEPS {
            self.exhausted = true;
            return false;
        }
        let at = At { instance, path, depth };
        let mut valid = true;
        if depth > MAX_DEPTH {
            fail!(valid, out, at, too_deep());
            return valid;
        }
        let k = match &validator.nodes[node] {
            Node::Always(true) => return true,
            Node::Always(false) => {
                fail!(valid, out, at, Kind::Other("no value is allowed here; leave it out".to_owned()));
                return valid;
            }
            Node::Keywords(k) => k,
            &Node::Alias(target) => {
                // Only a cycle of aliases is left pointing at one.
                sub!(self, valid, out, target, instance, path, depth);
                return valid;
            }
        };
        for &target in &k.reference {
            sub!(self, valid, out, target, instance, path, depth);
        }
        if k.any_value {
            valid &= self.any_value(k, &at, &mut out);
            if !valid && out.is_none() {
                return false;
            }
        }
        valid &= match instance {
            Value::Number(n) if k.number => self.number(k, n, &at, &mut out),
            Value::String(text) if k.string => self.string(k, text, &at, &mut out),
            Value::Array(items) if k.array => self.array(node, k, items, &at, &mut out),
            Value::Object(map) if k.object => self.object(node, k, map, &at, &mut out),
            _ => true,
        };
        if !valid && out.is_none() {
            return false;
        }
        if k.in_place {
            valid &= self.in_place(k, &at, &mut out);
        }
        valid && !self.exhausted
    }

    /// `type`, `enum`, `const` and `format`.
    #[inline(never)]
    fn any_value<'i>(&mut self, k: &Keywords, at: &At<'_, 'i>, out: &mut Sink<'_, 'i>) -> bool {
        let instance = at.instance;
        let mut valid = true;
        if k.types != 0 && !type_matches(k.types, instance) {
            fail!(valid, out, at, Kind::Type);
        }
        if let Some(Value::Array(options)) = &k.enumeration
            && !options.iter().any(|option| equal(option, instance))
        {
            fail!(valid, out, at, Kind::Enum(Value::Array(options.clone())));
        }
        if let Some(constant) = &k.constant
            && !equal(constant, instance)
        {
            fail!(valid, out, at, Kind::Const(constant.clone()));
        }
        if let Some(format) = &k.format
            && let Some(message) = format.problem(instance)
        {
            fail!(valid, out, at, Kind::Other(message));
        }
        valid
    }

    /// The applicators that apply to the value itself: `allOf`, `anyOf`, `oneOf`, `not`,
    /// `if`/`then`/`else`.
    #[inline(never)]
    fn in_place<'i>(&mut self, k: &Keywords, at: &At<'_, 'i>, out: &mut Sink<'_, 'i>) -> bool {
        let (instance, path, depth) = (at.instance, at.path, at.depth);
        let mut valid = true;
        for &schema in &k.all_of {
            sub!(self, valid, out, schema, instance, path, depth);
        }
        if let Some(values) = &k.any_of_values {
            if !values.iter().any(|value| equal(value, instance)) {
                fail!(valid, out, at, Kind::AnyOf);
            }
        } else if !k.any_of.is_empty()
            && !k.any_of.iter().any(|&branch| self.check(branch, instance, path, None, depth + 1))
        {
            fail!(valid, out, at, Kind::AnyOf);
        }
        if let Some(values) = &k.one_of_values {
            if !values.iter().any(|value| equal(value, instance)) {
                fail!(valid, out, at, Kind::OneOfNone);
            }
        } else if !k.one_of.is_empty() {
            let mut matched = 0;
            for &branch in &k.one_of {
                if self.check(branch, instance, path, None, depth + 1) {
                    matched += 1;
                    if matched > 1 {
                        break;
                    }
                }
            }
            match matched {
                0 => fail!(valid, out, at, Kind::OneOfNone),
                1 => {}
                _ => fail!(valid, out, at, Kind::OneOfMany),
            }
        }
        if let Some(schema) = k.not
            && self.check(schema, instance, path, None, depth + 1)
        {
            fail!(valid, out, at, Kind::Other("must not match the schema under `not`".to_owned()));
        }
        if let Some((condition, then, otherwise)) = k.if_then_else {
            let branch =
                if self.check(condition, instance, path, None, depth + 1) { then } else { otherwise };
            if let Some(schema) = branch {
                sub!(self, valid, out, schema, instance, path, depth);
            }
        }
        valid
    }

    #[inline(never)]
    fn number<'i>(&mut self, k: &Keywords, n: &Number, at: &At<'_, 'i>, out: &mut Sink<'_, 'i>) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let mut valid = true;
        if let Some(d) = &k.multiple_of
            && !is_multiple_of(n, d)
        {
            fail!(valid, out, at, Kind::Other(format!("must be a multiple of {d}")));
        }
        if let Some(limit) = &k.minimum
            && compare(n, limit) == Some(Less)
        {
            fail!(valid, out, at, Kind::Minimum(limit.clone()));
        }
        if let Some(limit) = &k.maximum
            && compare(n, limit) == Some(Greater)
        {
            fail!(valid, out, at, Kind::Maximum(limit.clone()));
        }
        if let Some(limit) = &k.exclusive_minimum
            && matches!(compare(n, limit), Some(Less | Equal))
        {
            fail!(valid, out, at, Kind::ExclusiveMinimum(limit.clone()));
        }
        if let Some(limit) = &k.exclusive_maximum
            && matches!(compare(n, limit), Some(Greater | Equal))
        {
            fail!(valid, out, at, Kind::ExclusiveMaximum(limit.clone()));
        }
        valid
    }

    #[inline(never)]
    fn string<'i>(&mut self, k: &Keywords, text: &str, at: &At<'_, 'i>, out: &mut Sink<'_, 'i>) -> bool {
        let mut valid = true;
        if k.min_length.is_some() || k.max_length.is_some() {
            let length = text.chars().count() as u64;
            if let Some(limit) = k.min_length
                && length < limit
            {
                fail!(valid, out, at, Kind::MinLength(limit));
            }
            if let Some(limit) = k.max_length
                && length > limit
            {
                fail!(valid, out, at, Kind::MaxLength(limit));
            }
        }
        if let Some((source, pattern)) = &k.pattern
            && !pattern.is_match(text)
        {
            fail!(valid, out, at, Kind::Pattern(source.clone()));
        }
        valid
    }

    #[inline(never)]
    fn array<'i>(
        &mut self,
        node: NodeId,
        k: &Keywords,
        items: &'i [Value],
        at: &At<'_, 'i>,
        out: &mut Sink<'_, 'i>,
    ) -> bool {
        let (path, depth) = (at.path, at.depth);
        let mut valid = true;
        let length = items.len() as u64;
        if let Some(limit) = k.min_items
            && length < limit
        {
            fail!(valid, out, at, Kind::MinItems(limit));
        }
        if let Some(limit) = k.max_items
            && length > limit
        {
            fail!(valid, out, at, Kind::MaxItems(limit));
        }
        if k.unique_items && !unique(items) {
            fail!(valid, out, at, Kind::UniqueItems);
        }
        for (index, (item, &schema)) in items.iter().zip(&k.prefix_items).enumerate() {
            sub!(self, valid, out, schema, item, &Path::Index(path, index), depth);
        }
        if let Some(schema) = k.items {
            for (index, item) in items.iter().enumerate().skip(k.prefix_items.len()) {
                sub!(self, valid, out, schema, item, &Path::Index(path, index), depth);
            }
        }
        if let Some(schema) = k.contains {
            let mut matched = 0u64;
            for item in items {
                if self.check(schema, item, path, None, depth + 1) {
                    matched += 1;
                }
            }
            let least = k.min_contains.unwrap_or(1);
            if matched < least {
                fail!(valid, out, at, contains_problem("least", least, matched));
            }
            if let Some(most) = k.max_contains
                && matched > most
            {
                fail!(valid, out, at, contains_problem("most", most, matched));
            }
        }
        if let Some(schema) = k.unevaluated_items {
            let mut evaluated = Evaluated::default();
            self.evaluated(node, at.instance, depth, true, &mut evaluated);
            if !evaluated.all {
                for (index, item) in items.iter().enumerate().skip(evaluated.prefix) {
                    if !evaluated.indices.contains(&index) {
                        sub!(self, valid, out, schema, item, &Path::Index(path, index), depth);
                    }
                }
            }
        }
        valid
    }

    #[inline(never)]
    fn object<'i>(
        &mut self,
        node: NodeId,
        k: &Keywords,
        map: &'i Map<String, Value>,
        at: &At<'_, 'i>,
        out: &mut Sink<'_, 'i>,
    ) -> bool {
        let (instance, path, depth) = (at.instance, at.path, at.depth);
        let mut valid = true;
        if out.is_none() {
            if !self.declared_fast(k, map, path, depth) {
                return false;
            }
        } else {
            // Problems in the order the schema declares the properties.
            for (name, schema) in &k.properties {
                if let Some(value) = map.get(name) {
                    sub!(self, valid, out, *schema, value, &Path::Key(path, name), depth);
                }
            }
            for (pattern, schema) in &k.pattern_properties {
                for (key, value) in map.iter().filter(|(key, _)| pattern.is_match(key)) {
                    sub!(self, valid, out, *schema, value, &Path::Key(path, key), depth);
                }
            }
            if let Some(schema) = k.additional_properties {
                let rejected = self.rest(schema, map, |key| declared(k, key), at, out, &mut valid);
                if !rejected.is_empty() {
                    fail!(valid, out, at, Kind::AdditionalProperties(rejected));
                }
            }
            for name in &k.required {
                if !map.contains_key(name) {
                    fail!(valid, out, at, Kind::Required(name.clone()));
                }
            }
        }
        let length = map.len() as u64;
        if let Some(limit) = k.min_properties
            && length < limit
        {
            fail!(valid, out, at, Kind::Other(format!("must have at least {}", plural(limit, "property"))));
        }
        if let Some(limit) = k.max_properties
            && length > limit
        {
            fail!(valid, out, at, Kind::Other(format!("must have at most {}", plural(limit, "property"))));
        }
        for (name, required) in &k.dependent_required {
            if map.contains_key(name) {
                for required in required.iter().filter(|r| !map.contains_key(*r)) {
                    fail!(
                        valid,
                        out,
                        at,
                        Kind::Other(format!("`{required}` is required when `{name}` is present"))
                    );
                }
            }
        }
        for (name, schema) in &k.dependent_schemas {
            if map.contains_key(name) {
                sub!(self, valid, out, *schema, instance, path, depth);
            }
        }
        if let Some(schema) = k.property_names {
            for key in map.keys() {
                if !self.check(schema, &Value::String(key.clone()), path, None, depth + 1) {
                    fail!(
                        valid,
                        out,
                        at,
                        Kind::Other(format!("the property name {} is not allowed here", quoted(key)))
                    );
                }
            }
        }
        if let Some(schema) = k.unevaluated_properties {
            let mut evaluated = Evaluated::default();
            self.evaluated(node, instance, depth, true, &mut evaluated);
            if !evaluated.all {
                let rejected =
                    self.rest(schema, map, |key| evaluated.names.contains(key), at, out, &mut valid);
                if !rejected.is_empty() {
                    fail!(valid, out, at, Kind::UnevaluatedProperties(rejected));
                }
            }
        }
        valid
    }

    /// `properties`, `patternProperties`, `additionalProperties` and `required` in one pass
    /// over the call's keys, stopping at the first problem: each key is looked up among the
    /// declared properties, which also counts the required ones present.
    fn declared_fast(
        &mut self,
        k: &Keywords,
        map: &Map<String, Value>,
        path: &Path<'_>,
        depth: usize,
    ) -> bool {
        let mut required = 0;
        for (key, value) in map {
            let here = Path::Key(path, key);
            let mut covered = false;
            if let Some(i) = k.find(key) {
                let (_, schema, is_required) = k.declared[i];
                covered = true;
                required += usize::from(is_required);
                if !self.check(schema, value, &here, None, depth + 1) {
                    return false;
                }
            }
            for (pattern, schema) in &k.pattern_properties {
                if pattern.is_match(key) {
                    covered = true;
                    if !self.check(*schema, value, &here, None, depth + 1) {
                        return false;
                    }
                }
            }
            if !covered
                && let Some(schema) = k.additional_properties
                && !self.check(schema, value, &here, None, depth + 1)
            {
                return false;
            }
        }
        if k.required_declared {
            required == k.required.len()
        } else {
            k.required.iter().all(|name| map.contains_key(name))
        }
    }

    /// The properties of `map` that `covered` leaves out, checked against `schema`
    /// (`additionalProperties` or `unevaluatedProperties`): their names when `schema` is
    /// `false` (one problem naming them all), otherwise each is checked and its problems go
    /// to `out`.
    fn rest<'i>(
        &mut self,
        schema: NodeId,
        map: &'i Map<String, Value>,
        covered: impl Fn(&str) -> bool,
        at: &At<'_, 'i>,
        out: &mut Sink<'_, 'i>,
        valid: &mut bool,
    ) -> Vec<String> {
        let (path, depth) = (at.path, at.depth);
        let refuses_all = matches!(self.validator.nodes[schema], Node::Always(false));
        let mut rejected = Vec::new();
        for (key, value) in map.iter().filter(|(key, _)| !covered(key)) {
            if refuses_all {
                rejected.push(key.clone());
                if out.is_none() {
                    break;
                }
            } else if !self.check(schema, value, &Path::Key(path, key), out.as_deref_mut(), depth + 1) {
                *valid = false;
                if out.is_none() {
                    break;
                }
            }
        }
        rejected
    }

    /// Adds what `node` evaluates of `instance` to `into`: its own `properties`,
    /// `patternProperties`, `additionalProperties`, `prefixItems`, `items` and `contains`, and
    /// what its in-place subschemas that `instance` is valid against evaluate. `own` is the
    /// schema whose `unevaluated*` is being checked (its own `unevaluated*` does not count).
    fn evaluated<'i>(
        &mut self,
        node: NodeId,
        instance: &'i Value,
        depth: usize,
        own: bool,
        into: &mut Evaluated<'i>,
    ) {
        let validator = self.validator;
        let Node::Keywords(k) = &validator.nodes[node] else { return };
        if depth > MAX_DEPTH || into.all {
            return;
        }
        match instance {
            Value::Object(map) => {
                if k.additional_properties.is_some() || (!own && k.unevaluated_properties.is_some()) {
                    into.all = true;
                    return;
                }
                for (key, _) in map {
                    if declared(k, key) {
                        into.names.insert(key);
                    }
                }
            }
            Value::Array(items) => {
                if k.items.is_some() || (!own && k.unevaluated_items.is_some()) {
                    into.all = true;
                    return;
                }
                into.prefix = into.prefix.max(k.prefix_items.len());
                if let Some(schema) = k.contains {
                    for (index, item) in items.iter().enumerate() {
                        if self.check(schema, item, &Path::Root, None, depth + 1) {
                            into.indices.insert(index);
                        }
                    }
                }
            }
            _ => return,
        }
        let mut valid_branches: Vec<NodeId> = Vec::new();
        for &schema in k.reference.iter().chain(&k.all_of).chain(&k.any_of).chain(&k.one_of) {
            if self.check(schema, instance, &Path::Root, None, depth + 1) {
                valid_branches.push(schema);
            }
        }
        if let Some((condition, then, otherwise)) = k.if_then_else {
            if self.check(condition, instance, &Path::Root, None, depth + 1) {
                valid_branches.push(condition);
                valid_branches
                    .extend(then.filter(|&t| self.check(t, instance, &Path::Root, None, depth + 1)));
            } else {
                valid_branches
                    .extend(otherwise.filter(|&e| self.check(e, instance, &Path::Root, None, depth + 1)));
            }
        }
        if let Value::Object(map) = instance {
            for (name, schema) in &k.dependent_schemas {
                if map.contains_key(name) && self.check(*schema, instance, &Path::Root, None, depth + 1) {
                    valid_branches.push(*schema);
                }
            }
        }
        for branch in valid_branches {
            self.evaluated(branch, instance, depth + 1, false, into);
        }
    }
}

/// Whether `properties` or `patternProperties` of `k` cover the property `key`.
fn declared(k: &Keywords, key: &str) -> bool {
    k.find(key).is_some() || k.pattern_properties.iter().any(|(pattern, _)| pattern.is_match(key))
}

pub(super) fn type_matches(types: u8, instance: &Value) -> bool {
    let bit = match instance {
        Value::Null => 1,
        Value::Bool(_) => 2,
        Value::Object(_) => 4,
        Value::Array(_) => 8,
        Value::Number(n) => {
            return types & 16 != 0 || (types & 64 != 0 && is_integer(n));
        }
        Value::String(_) => 32,
    };
    types & bit != 0
}

/// Whether no two items are equal as JSON values (`1` and `1.0` are).
fn unique(items: &[Value]) -> bool {
    if items.len() <= 16 {
        return items.iter().enumerate().all(|(i, a)| items[i + 1..].iter().all(|b| !equal(a, b)));
    }
    let mut seen = HashSet::with_capacity(items.len());
    items.iter().all(|item| {
        let mut key = String::new();
        canonical(item, &mut key);
        seen.insert(key)
    })
}

#[cold]
fn too_deep() -> Kind {
    Kind::Other(format!(
        "the tool's schema is nested more than {MAX_DEPTH} levels deep here (a `$ref` that refers to itself?); \
         a less deeply nested value may pass, otherwise the tool cannot be called with this schema"
    ))
}

#[cold]
fn contains_problem(bound: &str, limit: u64, matched: u64) -> Kind {
    Kind::Other(format!(
        "must contain at {bound} {} matching the schema under `contains`, found {matched}",
        plural(limit, "item")
    ))
}

/// A property name as JSON text, clipped as every argument is.
fn quoted(key: &str) -> Value {
    Value::String(crate::words::excerpt(key).into_owned())
}
