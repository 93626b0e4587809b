//! Checks one incoming JSON-RPC message before `rmcp` sees it, and words the error response to
//! one that is not a message the server can handle.
//!
//! `rmcp` (3.9) drops unparsable input without a word, answers a message it cannot type with
//! `-32600` and no `id`, and turns a request for a standard method whose params do not fit that
//! method's type into a custom request, which ends as `-32601` "method not found" with the method
//! name as the message. These checks come first, so every request that cannot be served gets
//! the JSON-RPC error it calls for, with its `id` whenever the `id` can be read.

use std::fmt;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, DiscoverRequestParams,
    ErrorData, InitializeRequestParams, JsonObject, JsonRpcMessage, PaginatedRequestParams, RequestId,
    RequestMetaObject,
};
use serde::Deserialize as _;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value, json};

use tool_core::words::json_kind;

pub(crate) use crate::jsonrpc::read_id;
use crate::jsonrpc::usable_id;

/// JSON-RPC error codes.
pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const INVALID_PARAMS: i64 = -32602;
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// A server error (JSON-RPC's range for implementations): too busy to take the request.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) const SERVER_BUSY: i64 = -32000;

/// The deepest nesting `serde_json` parses (its recursion limit).
pub(crate) const MAX_DEPTH: usize = 128;

/// How messages arrive, for the advice an error gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// One message per line (stdio).
    Lines,
    /// One message per HTTP request body (Streamable HTTP).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    Bodies,
}

impl Framing {
    /// How many messages go in one unit of input.
    fn one(self) -> &'static str {
        match self {
            Framing::Lines => "per line",
            Framing::Bodies => "per request",
        }
    }
}

/// What to do with one message of input.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// A message for `rmcp`.
    Message(Box<ClientJsonRpcMessage>),
    /// Not a message the server can handle: send this reply (an error response, or an array of
    /// them for a batch) instead.
    Reply(Value),
    /// Not a message the server can handle nor one to answer: a blank line, or a notification or
    /// response that cannot be handled (the JSON-RPC specification forbids answering those). This
    /// error, with no `id`, is for transports whose every request has a response (HTTP's status
    /// `400`); over stdio nothing is sent.
    Unanswered(#[cfg_attr(not(feature = "http"), allow(dead_code))] Value),
}

/// At most about this many JSON values (strings, numbers, arrays, objects, ...) are read in one
/// message: parsed, each costs far more than the byte or two it takes, so that 16 MiB of `0,`
/// would take gigabytes. A message must be at least twice as long to hold more, so shorter ones
/// are not counted.
pub(crate) const MAX_VALUES: usize = 100_000;

/// Checks one message (one line without its newline, or one request body).
pub(crate) fn check(message: &[u8], framing: Framing) -> Inbound {
    let message = message.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(message);
    if message.iter().all(u8::is_ascii_whitespace) {
        let text = format!("Parse error: the message is empty. Send one JSON-RPC object {}.", framing.one());
        return Inbound::Unanswered(error_response(None, PARSE_ERROR, text));
    }
    if message.len() > 2 * MAX_VALUES && more_values_than(message, MAX_VALUES) {
        let text = format!(
            "Invalid request: the message holds more than {MAX_VALUES} JSON values, the most this server reads \
             in one message; nothing in it was processed. Send fewer values (a long text is one value)."
        );
        return Inbound::Reply(error_response(read_id(message), INVALID_REQUEST, text));
    }
    match plain_message(message) {
        Some(message) => Inbound::Message(Box::new(message)),
        None => checked(message, framing),
    }
}

/// Every check of a message, on its parsed value.
fn checked(message: &[u8], framing: Framing) -> Inbound {
    // A batch is refused without being parsed whole: its items could be millions of tiny
    // objects, each of which would cost far more parsed (and answered) than sent.
    if message.iter().find(|byte| !byte.is_ascii_whitespace()) == Some(&b'[') {
        return match serde_json::from_slice::<BatchIds>(message) {
            Ok(batch) => Inbound::Reply(batch_reply(batch, framing)),
            Err(error) => Inbound::Reply(error_response(None, PARSE_ERROR, parse_error(&error, framing))),
        };
    }
    let value: Value = match serde_json::from_slice(message) {
        Ok(value) => value,
        Err(error) => {
            return Inbound::Reply(error_response(
                read_id(message),
                PARSE_ERROR,
                parse_error(&error, framing),
            ));
        }
    };
    match value {
        // Not reached: an array starts with `[`.
        Value::Array(_) => Inbound::Reply(batch_reply(BatchIds::default(), framing)),
        Value::Object(object) => check_object(object),
        other => Inbound::Reply(error_response(
            None,
            INVALID_REQUEST,
            format!(
                "Invalid request: a JSON-RPC message is a JSON object, not {}. Send one object {}.",
                json_kind(&other),
                framing.one()
            ),
        )),
    }
}

/// Whether `message` holds more than `limit` JSON values, counting what starts one or parts
/// them outside strings (`"`, `,`, `[`, `{`): an upper bound of the values and keys.
fn more_values_than(message: &[u8], limit: usize) -> bool {
    let (mut count, mut in_string, mut escaped) = (0usize, false, false);
    for &byte in message {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => {
                in_string = true;
                count += 1;
            }
            b',' | b'[' | b'{' => count += 1,
            _ => continue,
        }
        if count > limit {
            return true;
        }
    }
    false
}

/// A request or notification that every check below would pass as it is, parsed straight into
/// `rmcp`'s type: an object with `jsonrpc` "2.0", a string or integer `id` (or none), a string
/// `method`, object `params` (or none), that `rmcp` reads as a method it knows. Anything else,
/// including every message that gets an error, is left to the checks (`None`).
fn plain_message(line: &[u8]) -> Option<ClientJsonRpcMessage> {
    if line.iter().find(|byte| !byte.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    if let Some(call) = tool_call(line) {
        return Some(call);
    }
    let envelope: Envelope<'_> = serde_json::from_slice(line).ok()?;
    if envelope.jsonrpc != "2.0" || envelope.method.as_deref()? == "tools/list" {
        return None;
    }
    let message: ClientJsonRpcMessage = serde_json::from_slice(line).ok()?;
    match &message {
        JsonRpcMessage::Request(request) if !matches!(request.request, ClientRequest::CustomRequest(_)) => {
            Some(message)
        }
        JsonRpcMessage::Notification(_) if matches!(envelope.id, Member::Absent) => Some(message),
        _ => None,
    }
}

/// A `tools/call` request, read straight into `rmcp`'s type in one pass that also makes the
/// envelope's checks (`jsonrpc` "2.0", a string or integer `id`, an object `params`). `rmcp`'s own
/// reading buffers the message and tries each kind of message and each request in turn (tens of
/// thousands of instructions for one call: most of what a call costs a server); this reads the
/// one shape a call has, and builds what that reading gives: the `_meta` object in the request's
/// extensions, the rest in its parameters. Any other member, a duplicate, or a member of another
/// type leaves the line to the checks and `rmcp` (`None`).
fn tool_call(line: &[u8]) -> Option<ClientJsonRpcMessage> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Call<'a> {
        #[serde(borrow)]
        jsonrpc: std::borrow::Cow<'a, str>,
        id: Id,
        #[serde(borrow)]
        method: std::borrow::Cow<'a, str>,
        params: ObjectOf<Params>,
    }
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Params {
        name: String,
        #[serde(default)]
        arguments: Option<JsonObject>,
        #[serde(default, rename = "_meta")]
        meta: Option<JsonObject>,
    }
    let call: Call<'_> = serde_json::from_slice(line).ok()?;
    if call.jsonrpc != "2.0" || call.method != "tools/call" {
        return None;
    }
    let ObjectOf(Params { name, arguments, meta }) = call.params;
    let mut params = CallToolRequestParams::new(name);
    params.arguments = arguments;
    let mut request = CallToolRequest::new(params);
    if let Some(meta) = meta {
        request.extensions.insert(RequestMetaObject::from(meta));
    }
    Some(JsonRpcMessage::request(ClientRequest::CallToolRequest(request), call.id.0))
}

/// `T` read from a JSON object only: serde's derived structs also read an array, by position.
struct ObjectOf<T>(T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for ObjectOf<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(ObjectVisitor(std::marker::PhantomData)).map(ObjectOf)
    }
}

/// The members of a message the checks look at. A member of another type than the checks
/// allow (a `null` included) fails the parse.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: std::borrow::Cow<'a, str>,
    #[serde(default)]
    id: Member<Id>,
    #[serde(default, borrow)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, rename = "params")]
    _params: Member<Object>,
}

/// A member that may be absent, but not `null`: present when `T` reads it.
#[derive(Default)]
enum Member<T> {
    #[default]
    Absent,
    Present(std::marker::PhantomData<T>),
}

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Member<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(|_| Member::Present(std::marker::PhantomData))
    }
}

/// A request id MCP allows: a string or an integer that fits an `i64`.
struct Id(RequestId);

impl<'de> serde::Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl Visitor<'_> for IdVisitor {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_str<E: de::Error>(self, id: &str) -> Result<Id, E> {
                Ok(Id(RequestId::String(id.into())))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Id, E> {
                Ok(Id(RequestId::Number(n)))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Id, E> {
                i64::try_from(n).map(|n| Id(RequestId::Number(n))).map_err(|_| E::custom("an id past i64"))
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

/// Any JSON object, skipped.
struct Object;

impl<'de> serde::Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = Object;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Object)
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}

/// An error response; `id` is `null` when it could not be read, as JSON-RPC 2.0 requires.
pub(crate) fn error_response(id: Option<Value>, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id.unwrap_or(Value::Null), "error": {"code": code, "message": message}})
}

/// The sentence for a `-32601` error whose message is only the method's name (as `rmcp` answers
/// a method its own dispatch refuses: `ping` on a revision without it, `tasks/*`,
/// `subscriptions/listen`), which a person can act on; `None` for any other error.
pub(crate) fn worded_method_not_found(error: &ErrorData) -> Option<String> {
    let method = &error.message;
    if i64::from(error.code.0) != METHOD_NOT_FOUND || method.is_empty() || method.contains(' ') {
        return None;
    }
    Some(format!(
        "Method not found: this server does not serve `{method}` on the protocol revision this request uses \
         (2026-07-28 has no `initialize` nor `ping`, and this server declares only the tools capability). Use \
         tools/list and tools/call."
    ))
}

/// The reply to a message longer than the limit, of which `prefix` is the beginning; its length
/// when known.
pub(crate) fn too_long(prefix: &[u8], limit: usize, length: Option<u64>) -> Value {
    let size = match length {
        Some(length) => format!("is {length} bytes long, more than"),
        None => "is longer than".to_owned(),
    };
    error_response(
        read_id(prefix),
        INVALID_REQUEST,
        format!(
            "Invalid request: the message {size} this server reads in one message ({limit} bytes), and was not \
             read. Send smaller messages (for example, write a large file in parts)."
        ),
    )
}

fn parse_error(error: &serde_json::Error, framing: Framing) -> String {
    let text = error.to_string();
    let hint = if text.contains("recursion limit") {
        format!(" The message is nested deeper than {MAX_DEPTH} levels, the most this server parses.")
    } else if text.contains("surrogate") || text.contains("hex escape") {
        " JSON text must be valid Unicode: a \\uD800-\\uDFFF escape (a surrogate) must be half of a high-low pair."
            .to_owned()
    } else if text.contains("invalid unicode") || text.contains("UTF-8") {
        " JSON text must be UTF-8.".to_owned()
    } else {
        String::new()
    };
    format!(
        "Parse error: the message is not valid JSON ({text}).{hint} Send one JSON-RPC object {}.",
        framing.one()
    )
}

/// At most this many requests of a batch are answered (each with the same error).
const MAX_BATCH_REPLIES: usize = 64;

/// The usable ids of a batch's first [`MAX_BATCH_REPLIES`] items that have one, and how many
/// items it has; the others are read past without being kept.
#[derive(Debug, Default)]
struct BatchIds {
    ids: Vec<Value>,
    items: usize,
}

impl<'de> serde::Deserialize<'de> for BatchIds {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Items;
        impl<'de> Visitor<'de> for Items {
            type Value = BatchIds;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON array")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<BatchIds, A::Error> {
                let mut batch = BatchIds::default();
                loop {
                    if batch.ids.len() < MAX_BATCH_REPLIES {
                        let Some(item) = seq.next_element::<Value>()? else { break };
                        if let Some(id) =
                            item.as_object().and_then(|object| object.get("id")).and_then(usable_id)
                        {
                            batch.ids.push(id);
                        }
                    } else if seq.next_element::<IgnoredAny>()?.is_none() {
                        break;
                    }
                    batch.items += 1;
                }
                Ok(batch)
            }
        }
        deserializer.deserialize_seq(Items)
    }
}

fn batch_reply(batch: BatchIds, framing: Framing) -> Value {
    let mut message = format!(
        "Invalid request: JSON-RPC batches are not supported by MCP (since 2025-06-18) nor by this server, and \
         nothing in this batch was processed. Send one message {}.",
        framing.one()
    );
    if batch.ids.len() == MAX_BATCH_REPLIES && batch.items > MAX_BATCH_REPLIES {
        message.push_str(&format!(" Only the first {MAX_BATCH_REPLIES} requests of it are answered."));
    }
    let replies: Vec<Value> =
        batch.ids.into_iter().map(|id| error_response(Some(id), INVALID_REQUEST, message.clone())).collect();
    if replies.is_empty() { error_response(None, INVALID_REQUEST, message) } else { Value::Array(replies) }
}

fn check_object(object: Map<String, Value>) -> Inbound {
    let id = match object.get("id") {
        None => None,
        Some(raw) => match usable_id(raw) {
            Some(id) => Some(id),
            None => {
                return Inbound::Reply(error_response(
                    None,
                    INVALID_REQUEST,
                    format!(
                        "Invalid request: `id` must be a string or an integer, found {}.",
                        json_kind(raw)
                    ),
                ));
            }
        },
    };
    let notification = id.is_none() && object.contains_key("method");
    let invalid = |code: i64, message: String| match &id {
        Some(id) => Inbound::Reply(error_response(Some(id.clone()), code, message)),
        // A notification is never answered (JSON-RPC 2.0, section 4.1).
        None if notification => Inbound::Unanswered(error_response(None, code, message)),
        None => Inbound::Reply(error_response(None, code, message)),
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(INVALID_REQUEST, "Invalid request: `jsonrpc` must be \"2.0\".".to_owned());
    }
    let Some(method) = object.get("method") else {
        if id.is_some() && (object.contains_key("result") || object.contains_key("error")) {
            // A response to one of the server's requests: `rmcp` matches it, or drops it.
            return match ClientJsonRpcMessage::deserialize(&Value::Object(object)) {
                Ok(message) => Inbound::Message(Box::new(message)),
                Err(error) => Inbound::Unanswered(error_response(
                    None,
                    INVALID_REQUEST,
                    format!("Invalid request: not a response this server can read ({error})."),
                )),
            };
        }
        return invalid(
            INVALID_REQUEST,
            "Invalid request: the message has no `method` (a request needs `method` and `id`, a notification \
             `method`)."
                .to_owned(),
        );
    };
    let Some(method) = method.as_str().map(str::to_owned) else {
        return invalid(
            INVALID_REQUEST,
            format!("Invalid request: `method` must be a string, found {}.", json_kind(method)),
        );
    };
    match object.get("params") {
        None | Some(Value::Object(_)) => {}
        Some(params) => {
            return invalid(
                INVALID_PARAMS,
                format!(
                    "Invalid params: `params` of `{method}` must be an object, found {}.",
                    json_kind(params)
                ),
            );
        }
    }
    let value = Value::Object(object);
    let message = match ClientJsonRpcMessage::deserialize(&value) {
        Ok(message) => message,
        Err(error) => return invalid(INVALID_REQUEST, format!("Invalid request: {error}.")),
    };
    // rmcp reads a `tools/call` or `initialize` whose params do not fit as a custom request, and
    // the params of a `tools/list` that do not fit as none at all.
    if let JsonRpcMessage::Request(request) = &message
        && (matches!(request.request, ClientRequest::CustomRequest(_)) || method == "tools/list")
        && let Some(problem) = params_problem(&method, value.get("params"))
    {
        return invalid(INVALID_PARAMS, format!("Invalid params for `{method}`: {problem}"));
    }
    Inbound::Message(Box::new(message))
}

/// Why `params` do not fit `method`, for the methods this server serves; `None` for other
/// methods (the server answers those as not found) and for params that fit.
fn params_problem(method: &str, params: Option<&Value>) -> Option<String> {
    let empty = Value::Object(Map::new());
    match method {
        "tools/call" => {
            let params = params.unwrap_or(&empty);
            match params.get("name") {
                None => {
                    return Some(
                        "`params.name` is missing: name the tool to call (see tools/list).".to_owned(),
                    );
                }
                Some(Value::String(_)) => {}
                Some(other) => {
                    return Some(format!("`params.name` must be a string, found {}.", json_kind(other)));
                }
            }
            match params.get("arguments") {
                None | Some(Value::Object(_) | Value::Null) => {}
                Some(other) => {
                    return Some(format!(
                        "`params.arguments` must be an object of the tool's arguments, found {}.",
                        json_kind(other)
                    ));
                }
            }
            typed_problem::<CallToolRequestParams>(params)
        }
        "initialize" => {
            let params = params.unwrap_or(&empty);
            for (field, what) in [
                ("protocolVersion", "the protocol revision the client speaks, such as \"2025-11-25\""),
                ("capabilities", "the client's capabilities ({} for none)"),
                ("clientInfo", "the client's name and version"),
            ] {
                if params.get(field).is_none() {
                    return Some(format!("`params.{field}` is missing: send {what}."));
                }
            }
            if let Some(version) = params.get("protocolVersion").filter(|v| !v.is_string()) {
                return Some(format!(
                    "`params.protocolVersion` must be a string, found {}.",
                    json_kind(version)
                ));
            }
            typed_problem::<InitializeRequestParams>(params)
        }
        "tools/list" => params.and_then(typed_problem::<PaginatedRequestParams>),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            typed_problem::<rmcp::model::SubscribeRequestParams>(params.unwrap_or(&empty))
        }
        "prompts/get" => typed_problem::<rmcp::model::GetPromptRequestParams>(params.unwrap_or(&empty)),
        "completion/complete" => {
            typed_problem::<rmcp::model::CompleteRequestParams>(params.unwrap_or(&empty))
        }
        "server/discover" => typed_problem::<DiscoverRequestParams>(params.unwrap_or(&empty)),
        _ => None,
    }
}

fn typed_problem<T: serde::de::DeserializeOwned>(params: &Value) -> Option<String> {
    match T::deserialize(params) {
        Ok(_) => None,
        Err(error) => Some(format!("{error}.")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> Value {
        match check(line.as_bytes(), Framing::Lines) {
            Inbound::Reply(value) => value,
            other => panic!("{line}: expected a reply, got {other:?}"),
        }
    }

    /// The lines `plain_message` takes are those the checks pass as they are, read the same.
    #[test]
    fn plain_messages_skip_only_checks_they_would_pass() {
        let plain = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1.5,"b":2}}}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"add"}}"#,
            r#" {"method":"ping","id":9223372036854775807,"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        ];
        for line in plain {
            let fast = plain_message(line.as_bytes()).unwrap_or_else(|| panic!("not plain: {line}"));
            let Inbound::Message(slow) = checked(line.as_bytes(), Framing::Lines) else {
                panic!("checks refuse {line}")
            };
            assert_eq!(serde_json::to_value(fast).ok(), serde_json::to_value(*slow).ok(), "{line}");
        }
        let checked_only = [
            r#"{"jsonrpc":"2.0","id":1.0,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            r#"{"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}"#,
            // A call breaking the envelope's rules is not read by the `tools/call` shortcut
            // either (rmcp itself would take the first two).
            r#"{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"add"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["add",{"a":1}]}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"add"}}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"add"}}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"tools/call","params":{"name":"add"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"add"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"add"}}"#,
            r#"{"id":1,"method":"tools/call","params":{"name":"add"}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add"}}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"no/such/method"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
        ];
        for line in checked_only {
            assert!(plain_message(line.as_bytes()).is_none(), "taken as plain: {line}");
        }
    }

    /// A `tools/call` read straight into rmcp's type is what rmcp's own reading gives: the same
    /// message on the wire, the same parameters, the same `_meta` where the handler reads it.
    /// Every other shape is left to rmcp.
    #[test]
    fn a_tool_call_reads_as_rmcp_reads_it() {
        let read = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1.5,"b":2}}}"#,
            r#"{"jsonrpc":"2.0","id":"x-1","method":"tools/call","params":{"name":"add"}}"#,
            r#"{"params":{"_meta":{"progressToken":"p1","k":[1,{"x":null}]},"arguments":{"nested":{"deep":[true,"é\n"]}},"name":"read_file"},"method":"tools/call","id":-7,"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775807,"method":"tools/call","params":{"name":"n\u00e9","arguments":null,"_meta":null}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{},"_meta":{"progressToken":3}}}"#,
            " {\"jsonrpc\" : \"2.0\", \"id\":3,\n\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}} ",
        ];
        for line in read {
            let fast = tool_call(line.as_bytes()).unwrap_or_else(|| panic!("not read: {line}"));
            let slow: ClientJsonRpcMessage = serde_json::from_str(line).expect(line);
            assert_eq!(serde_json::to_value(&fast).ok(), serde_json::to_value(&slow).ok(), "{line}");
            let (JsonRpcMessage::Request(fast), JsonRpcMessage::Request(slow)) = (fast, slow) else {
                panic!("not a request: {line}")
            };
            assert_eq!(fast.id, slow.id, "{line}");
            let (ClientRequest::CallToolRequest(fast), ClientRequest::CallToolRequest(slow)) =
                (fast.request, slow.request)
            else {
                panic!("not a tool call: {line}")
            };
            assert_eq!(fast.params, slow.params, "{line}");
            let meta = |request: &CallToolRequest| request.extensions.get::<RequestMetaObject>().cloned();
            assert_eq!(meta(&fast), meta(&slow), "{line}");
            // Through the checks, as the transport reads it.
            let Inbound::Message(message) = check(line.as_bytes(), Framing::Lines) else { panic!("{line}") };
            assert!(matches!(*message, JsonRpcMessage::Request(_)), "{line}");
        }
        let left = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add"},"extra":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","requestState":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","task":{"ttl":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
        ];
        for line in left {
            assert!(tool_call(line.as_bytes()).is_none(), "read: {line}");
            // What the transport makes of it is what rmcp's reading (or the checks) make of it.
            let taken = check(line.as_bytes(), Framing::Lines);
            let before = match plain_message_by_rmcp(line.as_bytes()) {
                Some(message) => Inbound::Message(Box::new(message)),
                None => checked(line.as_bytes(), Framing::Lines),
            };
            assert_eq!(format!("{taken:?}"), format!("{before:?}"), "{line}");
        }
    }

    /// `plain_message` as it reads a line without the `tools/call` shortcut.
    fn plain_message_by_rmcp(line: &[u8]) -> Option<ClientJsonRpcMessage> {
        let message: ClientJsonRpcMessage = serde_json::from_slice(line).ok()?;
        match &message {
            JsonRpcMessage::Request(request)
                if !matches!(request.request, ClientRequest::CustomRequest(_)) =>
            {
                Some(message)
            }
            _ => None,
        }
    }

    #[test]
    fn ids_are_read_from_messages_that_do_not_parse() {
        assert_eq!(read_id(br#"{"jsonrpc":"2.0","id":7,"method":"ping""#), Some(json!(7)));
        assert_eq!(read_id(br#"{"id":"a","params":{"x":"\ud800"}}"#), Some(json!("a")));
        // Skipped members are not checked for valid escapes.
        assert_eq!(read_id(br#"{"params":{"x":"\ud800"},"id":"a"}"#), Some(json!("a")));
        assert_eq!(read_id(br#"{"params":{"x":[},"id":"a"}"#), None);
        assert_eq!(read_id(br#"{"id":1.5}"#), None);
        assert_eq!(read_id(b"not json"), None);
    }

    #[test]
    fn unparsable_lines_get_a_parse_error_with_the_id() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"ping","params":{{"x":{}1{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let value = reply(&deep);
        assert_eq!(value["id"], json!(3));
        assert_eq!(value["error"]["code"], json!(PARSE_ERROR));
        assert!(
            value["error"]["message"].as_str().unwrap().contains("nested deeper than 128 levels"),
            "{value}"
        );

        let value =
            reply(r#"{"jsonrpc":"2.0","id":"s","method":"tools/list","params":{"_meta":{"a":"\ud800"}}}"#);
        assert_eq!(value["id"], json!("s"));
        assert!(value["error"]["message"].as_str().unwrap().contains("surrogate"), "{value}");

        let value = match check(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"p\xff\"}", Framing::Lines) {
            Inbound::Reply(value) => value,
            other => panic!("invalid UTF-8: expected a reply, got {other:?}"),
        };
        assert_eq!(value["id"], json!(4));
        assert_eq!(value["error"]["code"], json!(PARSE_ERROR));
    }

    #[test]
    fn a_message_of_too_many_values_is_refused_unparsed() {
        let many = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"a":[{}]}}}}"#,
            vec!["0"; 200_000].join(",")
        );
        let value = reply(&many);
        assert_eq!(value["id"], json!(7));
        assert!(
            value["error"]["message"].as_str().unwrap().contains("more than 100000 JSON values"),
            "{value}"
        );
        let batch = format!("[{}]", vec!["[]"; 150_000].join(","));
        assert!(reply(&batch)["error"]["message"].as_str().unwrap().contains("more than 100000 JSON values"));
        // A long text is one value, commas and brackets in it included.
        let text = "[{,\\\"".repeat(100_000);
        let long = format!(r#"{{"jsonrpc":"2.0","id":8,"method":"ping","params":{{"a":"{text}"}}}}"#);
        assert!(!more_values_than(long.as_bytes(), MAX_VALUES));
    }

    #[test]
    fn batches_are_refused_per_request() {
        let value = reply(
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"b","method":"tools/list"}]"#,
        );
        let ids: Vec<&Value> = value.as_array().unwrap().iter().map(|r| &r["id"]).collect();
        assert_eq!(ids, [&json!(1), &json!("b")]);
        assert_eq!(reply("[]")["id"], Value::Null);
        assert_eq!(reply("[1, 2")["error"]["code"], json!(PARSE_ERROR));
        // A batch of many items costs one bounded answer: the first 64 ids, no more.
        let many = format!("[{}]", vec![r#"{"id":1}"#; 30_000].join(","));
        let value = reply(&many);
        let replies = value.as_array().unwrap();
        assert_eq!(replies.len(), MAX_BATCH_REPLIES);
        let message = replies[0]["error"]["message"].as_str().unwrap();
        assert!(message.ends_with("Only the first 64 requests of it are answered."), "{message}");
    }

    #[test]
    fn malformed_params_are_invalid_params_with_what_is_wrong() {
        let value = reply(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#);
        assert_eq!(value["error"]["code"], json!(INVALID_PARAMS));
        assert_eq!(
            value["error"]["message"],
            json!(
                "Invalid params for `tools/call`: `params.name` is missing: name the tool to call (see tools/list)."
            )
        );
        let value =
            reply(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ls","arguments":"x"}}"#);
        assert_eq!(value["id"], json!(2));
        assert!(value["error"]["message"].as_str().unwrap().contains("`params.arguments` must be an object"));
        let value = reply(
            r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
        );
        assert_eq!(value["error"]["code"], json!(INVALID_PARAMS));
        assert!(value["error"]["message"].as_str().unwrap().contains("`params.protocolVersion` is missing"));
        // The methods of resources, prompts and completion are checked the same way.
        for (line, missing) in [
            (r#"{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"nope":1}}"#, "name"),
            (r#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{}}"#, "uri"),
            (
                r#"{"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"}}}"#,
                "argument",
            ),
        ] {
            let value = reply(line);
            assert_eq!(
                (value["id"].clone(), value["error"]["code"].clone()),
                (json!(5), json!(INVALID_PARAMS))
            );
            assert!(value["error"]["message"].as_str().unwrap().contains(missing), "{value}");
        }
        let value = reply(r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":"x"}"#);
        assert_eq!((value["id"].clone(), value["error"]["code"].clone()), (json!(4), json!(INVALID_PARAMS)));
    }

    #[test]
    fn well_formed_messages_pass() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ls","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","nope":1}}"#,
        ] {
            assert!(matches!(check(line.as_bytes(), Framing::Lines), Inbound::Message(_)), "{line}");
        }
        assert!(matches!(check(b"  \r", Framing::Lines), Inbound::Unanswered(_)));
        assert!(matches!(
            check(br#"{"jsonrpc":"2.0","method":"x","params":3}"#, Framing::Lines),
            Inbound::Unanswered(_)
        ));
    }

    #[test]
    fn envelopes_that_are_not_requests_are_invalid_requests() {
        assert_eq!(reply("5")["error"]["code"], json!(INVALID_REQUEST));
        assert_eq!(reply(r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#)["id"], Value::Null);
        let value = reply(r#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#);
        assert_eq!((value["id"].clone(), value["error"]["code"].clone()), (json!(9), json!(INVALID_REQUEST)));
        assert_eq!(reply(r#"{"jsonrpc":"2.0","id":9}"#)["id"], json!(9));
    }
}
