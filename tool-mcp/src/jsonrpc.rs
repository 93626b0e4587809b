//! Reading a JSON-RPC message's `id` where the message as a whole cannot be read (cut short, or
//! malformed further on): the server answers it, and a mounted server's client matches it.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

/// A request id MCP allows: a string or an integer.
pub(crate) fn usable_id(id: &Value) -> Option<Value> {
    match id {
        Value::String(_) => Some(id.clone()),
        Value::Number(n) if n.is_i64() => Some(id.clone()),
        _ => None,
    }
}

/// The `id` of a message that does not parse (or is cut short): read from the top-level members
/// in order, until `id` or the first member that does not parse.
pub(crate) fn read_id(bytes: &[u8]) -> Option<Value> {
    let mut found = None;
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let _ = deserializer.deserialize_map(IdVisitor { found: &mut found });
    found.as_ref().and_then(usable_id)
}

struct IdVisitor<'a> {
    found: &'a mut Option<Value>,
}

/// Stops the scan once the `id` is read.
#[derive(Debug)]
struct Found;

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("found")
    }
}

impl<'de> Visitor<'de> for IdVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "id" {
                *self.found = Some(map.next_value_seed(ValueSeed)?);
                return Err(de::Error::custom(Found));
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

struct ValueSeed;

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        serde::Deserialize::deserialize(deserializer)
    }
}
