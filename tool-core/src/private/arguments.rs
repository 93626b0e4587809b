//! A tool's argument object, decoded and described by generic code: the macro only lists the
//! parameters' types and [`Field`]s. Decoding and schema are exactly what
//! `#[derive(Deserialize, JsonSchema)]` with `#[serde(deny_unknown_fields)]` gives the same
//! fields (the tests in `tests/tests/integration/macro_arguments.rs` hold the two side by side).

use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A model-facing parameter type: `Deserialize + JsonSchema`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument",
    label = "the model cannot provide this type",
    note = "a parameter the model fills in must implement `serde::Deserialize` and `schemars::JsonSchema` (add `#[derive(Deserialize, JsonSchema)]`)",
    note = "to have the runtime provide it instead, implement `FromContext` for it and mark the parameter `#[inject]`"
)]
pub trait ToolArgument: DeserializeOwned + JsonSchema {}
impl<T: DeserializeOwned + JsonSchema> ToolArgument for T {}

/// Puts [`ToolArgument`]'s message on a parameter's type, for the derived argument struct.
pub fn assert_argument<T: ToolArgument>() {}

/// How a tool's arguments are decoded from the validated JSON and described as a JSON Schema.
///
/// The impls have no bounds on the parameter types: the typed work is done by the functions in
/// their `Fields`, whose constructors carry the bounds. So a type that cannot be an argument is
/// reported once, where the macro builds its field, on the user's own type.
pub trait Arguments: Sized {
    /// What the macro writes about each parameter.
    type Fields;

    /// Decodes the argument object.
    fn decode(fields: &Self::Fields, value: Value) -> Result<Self, serde_json::Error>;

    /// Decodes the argument object straight from JSON text, when that is sure to accept exactly
    /// what validating the text against [`schema`](Arguments::schema) and then
    /// [`decode`](Arguments::decode) would, with the same result. `None` when it is not sure:
    /// the caller then takes the validating path, which also gives the model-facing errors.
    fn decode_text(fields: &Self::Fields, text: &str) -> Option<Self> {
        let _ = (fields, text);
        None
    }

    /// [`decode_text`](Arguments::decode_text) for arguments that arrived parsed (an MCP
    /// request's `arguments`, an Anthropic `tool_use` block's `input`): decodes the object
    /// straight into the parameters when that is sure to give what validating it would.
    fn decode_value(fields: &Self::Fields, value: &Value) -> Option<Self> {
        let _ = (fields, value);
        None
    }

    /// The argument object's schema (draft 2020-12, closed at the root).
    fn schema(fields: &Self::Fields) -> Value;
}

/// One model-facing parameter: its property name, the title and description schemars would
/// take from its `///` doc, its `#[arg(default = ...)]`, and the typed functions that decode
/// and describe it.
pub struct Field<T> {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    default: Option<fn() -> T>,
    /// The default as the schema shows it, when `T` serializes.
    default_value: Option<fn() -> Option<Value>>,
    decode: fn(Value) -> Result<T, serde_json::Error>,
    decode_str: fn(&str) -> Result<T, serde_json::Error>,
    decode_ref: fn(&Value) -> Result<T, serde_json::Error>,
    missing: fn(&'static str) -> Result<T, serde_json::Error>,
    schema: fn(&mut SchemaGenerator) -> Schema,
    is_option: fn() -> bool,
    /// Whether `T` is an [`ExactArgument`] (see [`Field::exact`]).
    exact: fn() -> bool,
}

impl<T> Field<T> {
    pub const fn new(name: &'static str, title: &'static str, description: &'static str) -> Self
    where
        T: ToolArgument,
    {
        Field {
            name,
            title,
            description,
            default: None,
            default_value: None,
            decode: T::deserialize,
            decode_str: |text| serde_json::from_str::<T>(text),
            decode_ref: |value| T::deserialize(value),
            missing: |name| T::deserialize(MissingField(name)),
            schema: SchemaGenerator::subschema_for::<T>,
            // schemars' own test of `Option<T>`, the one its derive makes for each field.
            is_option: T::_schemars_private_is_option,
            exact: || false,
        }
    }

    /// Whether `T` decodes exactly what its schema accepts, found at the expansion's concrete
    /// type: `.exact(|| { use NotExact as _; ExactProbe::<T>::new().is_exact() })`.
    pub const fn exact(mut self, exact: fn() -> bool) -> Self {
        self.exact = exact;
        self
    }

    /// `#[arg(default = ...)]`: the value, and the value as the schema shows it.
    pub const fn with_default(mut self, default: fn() -> T, default_value: fn() -> Option<Value>) -> Self {
        self.default = Some(default);
        self.default_value = Some(default_value);
        self
    }
}

/// A parameter type whose serde decoding from JSON accepts exactly the values its JSON Schema
/// (as schemars describes it, with the formats and ranges validation enforces) accepts, and
/// nothing else. When every parameter of a tool is one, decoding the arguments straight from
/// the model's text proves them valid, and the call skips building a `Value` and running the
/// schema validator (see [`Arguments::decode_text`]).
///
/// Deliberately short: `f32` (serde rounds numbers too large for it to infinity, the schema
/// rejects them), `usize`/`isize` (their range depends on the platform) and every type with a
/// hand-written or derived `Deserialize` are left out, and take the validating path.
pub trait ExactArgument {}

macro_rules! exact_arguments {
    ($($t:ty),*) => { $(impl ExactArgument for $t {})* };
}
exact_arguments!(bool, String, f64, i8, i16, i32, i64, u8, u16, u32, u64);
impl<T: ExactArgument> ExactArgument for Option<T> {}
impl<T: ExactArgument> ExactArgument for Vec<T> {}

/// Tells, at a concrete type, whether it is an [`ExactArgument`]: the inherent method applies
/// when it is, [`NotExact`]'s otherwise.
pub struct ExactProbe<T>(PhantomData<T>);

impl<T> ExactProbe<T> {
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        ExactProbe(PhantomData)
    }
}

impl<T: ExactArgument> ExactProbe<T> {
    pub fn is_exact(&self) -> bool {
        true
    }
}

pub trait NotExact {
    fn is_exact(&self) -> bool {
        false
    }
}

impl<T> NotExact for ExactProbe<T> {}

/// Calls `entry` with each member of the JSON object `text`, in order, the value still as
/// text; stops at the first member `entry` refuses. `None` when `text` is not one object with
/// plain keys (a key with an escape is refused too: the caller then takes the validating path)
/// or `entry` refused a member.
fn each_member<'de>(text: &'de str, entry: impl FnMut(&'de str, &'de RawValue) -> bool) -> Option<()> {
    struct Members<F>(F);

    impl<'de, F: FnMut(&'de str, &'de RawValue) -> bool> Visitor<'de> for Members<F> {
        type Value = ();

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }

        fn visit_map<M: MapAccess<'de>>(mut self, mut map: M) -> Result<(), M::Error> {
            while let Some(key) = map.next_key::<&'de str>()? {
                let value = map.next_value::<&'de RawValue>()?;
                if !(self.0)(key, value) {
                    return Err(de::Error::custom("refused"));
                }
            }
            Ok(())
        }
    }

    let mut deserializer = serde_json::Deserializer::from_str(text);
    deserializer.deserialize_map(Members(entry)).ok()?;
    deserializer.end().ok()
}

/// A tool without model-facing arguments takes any object (the schema is an empty closed one,
/// which validation enforces).
impl Arguments for () {
    type Fields = ();

    fn decode(_: &(), _: Value) -> Result<(), serde_json::Error> {
        Ok(())
    }

    /// The one valid object is the empty one (no text at all stands for it too): what else
    /// arrives is left to the validating path, which explains it.
    fn decode_text(_: &(), text: &str) -> Option<()> {
        if text.trim().is_empty() {
            return Some(());
        }
        each_member(text, |_, _| false)
    }

    fn decode_value(_: &(), value: &Value) -> Option<()> {
        value.as_object().is_some_and(Map::is_empty).then_some(())
    }

    fn schema(_: &()) -> Value {
        crate::schema::empty_args_schema()
    }
}

/// A struct that is the whole argument object: an `#[args]` parameter, or the struct the macro
/// derives when a parameter carries serde or schemars attributes.
pub struct Whole<S>(pub S);

/// How a [`Whole`] struct is decoded and described.
pub struct WholeFields<S> {
    decode: fn(Value) -> Result<S, serde_json::Error>,
    schema: fn() -> Value,
}

impl<S> Default for WholeFields<S>
where
    S: ToolArgument,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<S> WholeFields<S> {
    pub const fn new() -> Self
    where
        S: ToolArgument,
    {
        WholeFields { decode: serde_json::from_value, schema: crate::schema::args_schema::<S> }
    }
}

impl<S> Arguments for Whole<S> {
    type Fields = WholeFields<S>;

    fn decode(fields: &WholeFields<S>, value: Value) -> Result<Self, serde_json::Error> {
        (fields.decode)(value).map(Whole)
    }

    fn schema(fields: &WholeFields<S>) -> Value {
        (fields.schema)()
    }
}

macro_rules! tuple_arguments {
    ($($T:ident $i:tt),+) => {
        impl<$($T),+> Arguments for ($($T,)+) {
            type Fields = ($(Field<$T>,)+);

            fn decode(fields: &Self::Fields, value: Value) -> Result<Self, serde_json::Error> {
                let names = [$(fields.$i.name),+];
                let mut slots = ($(Option::<$T>::None,)+);
                // In the object's order, as serde's derived visitor goes: the first unknown key
                // or undecodable value is the error.
                for (key, value) in object(value)? {
                    match names.iter().position(|name| *name == key) {
                        $(Some($i) => slots.$i = Some((fields.$i.decode)(value)?),)+
                        _ => return Err(unknown_field(&key, &names)),
                    }
                }
                Ok(($(present_or_default(slots.$i, &fields.$i)?,)+))
            }

            fn decode_text(fields: &Self::Fields, text: &str) -> Option<Self> {
                if !($((fields.$i.exact)())&&+) {
                    return None;
                }
                let names = [$(fields.$i.name),+];
                let mut slots = ($(Option::<$T>::None,)+);
                // An unknown or repeated key, or a value that does not decode, is refused: the
                // validating path says what is wrong (or, for a repeated key, takes the last).
                // So is a `null` for a parameter with a default, which that path drops for the
                // default to apply.
                each_member(text, |key, value| match names.iter().position(|name| *name == key) {
                    $(Some($i) => slots.$i.is_none()
                        && !(fields.$i.default.is_some() && value.get() == "null")
                        && {
                        slots.$i = (fields.$i.decode_str)(value.get()).ok();
                        slots.$i.is_some()
                    },)+
                    _ => false,
                })?;
                Some(($(present_or_default(slots.$i, &fields.$i).ok()?,)+))
            }

            fn decode_value(fields: &Self::Fields, value: &Value) -> Option<Self> {
                if !($((fields.$i.exact)())&&+) {
                    return None;
                }
                let Value::Object(members) = value else { return None };
                let names = [$(fields.$i.name),+];
                let mut slots = ($(Option::<$T>::None,)+);
                // As for text: an unknown key, a value that does not decode, or a `null` for a
                // parameter with a default (which validation drops for the default to apply) is
                // left to the validating path.
                for (key, value) in members {
                    match names.iter().position(|name| name == key) {
                        $(Some($i) => {
                            if fields.$i.default.is_some() && value.is_null() {
                                return None;
                            }
                            slots.$i = Some((fields.$i.decode_ref)(value).ok()?);
                        })+
                        _ => return None,
                    }
                }
                Some(($(present_or_default(slots.$i, &fields.$i).ok()?,)+))
            }

            fn schema(fields: &Self::Fields) -> Value {
                let mut object = ObjectSchema::new();
                $(object.property(&fields.$i);)+
                object.finish()
            }
        }
    };
}

// Up to 16 parameters; the macro derives a struct for more (`MAX_TUPLE_FIELDS` in tool-macros).
tuple_arguments!(A 0);
tuple_arguments!(A 0, B 1);
tuple_arguments!(A 0, B 1, C 2);
tuple_arguments!(A 0, B 1, C 2, D 3);
tuple_arguments!(A 0, B 1, C 2, D 3, E 4);
tuple_arguments!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_arguments!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_arguments!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_arguments!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_arguments!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_arguments!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_arguments!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
tuple_arguments!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
tuple_arguments!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
tuple_arguments!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
tuple_arguments!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);

fn object(value: Value) -> Result<Map<String, Value>, serde_json::Error> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(de::Error::invalid_type(unexpected(&other), &"an object of named arguments")),
    }
}

fn unexpected(value: &Value) -> de::Unexpected<'_> {
    match value {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => de::Unexpected::Unsigned(u),
            (_, Some(i), _) => de::Unexpected::Signed(i),
            (_, _, Some(f)) => de::Unexpected::Float(f),
            _ => de::Unexpected::Other("number"),
        },
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

/// serde's `unknown_field` text; its own function wants the names as a `'static` slice.
fn unknown_field(key: &str, names: &[&str]) -> serde_json::Error {
    let expected = match names {
        [] => return de::Error::custom(format_args!("unknown field `{key}`, there are no fields")),
        [one] => format!("`{one}`"),
        [a, b] => format!("`{a}` or `{b}`"),
        _ => format!("one of {}", names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")),
    };
    de::Error::custom(format_args!("unknown field `{key}`, expected {expected}"))
}

fn present_or_default<T>(slot: Option<T>, field: &Field<T>) -> Result<T, serde_json::Error> {
    match (slot, field.default) {
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default()),
        (None, None) => (field.missing)(field.name),
    }
}

/// What serde's derive hands an absent field: `None` for an `Option`, "missing field" for
/// anything else.
struct MissingField(&'static str);

impl<'de> Deserializer<'de> for MissingField {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::missing_field(self.0))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// The argument object's schema, built as schemars' derive builds a struct's.
struct ObjectSchema {
    generator: SchemaGenerator,
    schema: Schema,
}

impl ObjectSchema {
    fn new() -> Self {
        ObjectSchema {
            generator: crate::schema::generator(),
            schema: schemars::json_schema!({ "type": "object", "additionalProperties": false }),
        }
    }

    fn property<T>(&mut self, field: &Field<T>) {
        let schema = (field.schema)(&mut self.generator);
        let optional = field.default.is_some() || (field.is_option)();
        self.insert(field.name, field.title, field.description, field.default_value, optional, schema);
    }

    fn insert(
        &mut self,
        name: &str,
        title: &str,
        description: &str,
        default_value: Option<fn() -> Option<Value>>,
        optional: bool,
        mut schema: Schema,
    ) {
        for (key, text) in [("title", title), ("description", description)] {
            if !text.is_empty() {
                schema.insert(key.to_owned(), text.into());
            }
        }
        if let Some(default) = default_value.and_then(|value| value()) {
            schema.insert("default".to_owned(), default);
        }
        let object = self.schema.ensure_object();
        if let Some(properties) =
            object.entry("properties").or_insert_with(|| Value::Object(Map::new())).as_object_mut()
        {
            properties.insert(name.to_owned(), schema.into());
        }
        if !optional
            && let Some(required) =
                object.entry("required").or_insert_with(|| Value::Array(Vec::new())).as_array_mut()
        {
            required.push(name.into());
        }
    }

    fn finish(mut self) -> Value {
        let definitions = self.generator.take_definitions(false);
        let object = self.schema.ensure_object();
        object.insert("$schema".to_owned(), crate::schema::DRAFT_2020_12.into());
        if !definitions.is_empty() {
            object.insert("$defs".to_owned(), Value::Object(definitions));
        }
        crate::schema::normalize_args_schema(self.schema.to_value())
    }
}

/// The default of a parameter as its schema shows it: serialized when the type implements
/// `Serialize`, left out otherwise (as schemars' derive does), by autoref specialization at the
/// generated call site: `{ use NoSerialize as _; MaybeSerialize(value).maybe_to_value() }`.
pub struct MaybeSerialize<T>(pub T);

impl<T: serde::Serialize> MaybeSerialize<T> {
    pub fn maybe_to_value(self) -> Option<Value> {
        serde_json::to_value(self.0).ok()
    }
}

pub trait NoSerialize: Sized {
    fn maybe_to_value(self) -> Option<Value> {
        None
    }
}

impl<T> NoSerialize for MaybeSerialize<T> {}
