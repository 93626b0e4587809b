//! `tools serve` against raw JSON-RPC lines, as a client other than rmcp's sends them: error codes,
//! ids and messages for requests it cannot serve, the declared capabilities, input that is not a
//! request at all, and repeated identical calls.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::Fixture;
use serde_json::{Value, json};

/// How long a reply may take before the test gives up (a safety net against a hang, not a
/// measurement).
const REPLY_WITHIN: Duration = Duration::from_secs(30);

struct Server {
    child: Child,
    input: ChildStdin,
    lines: mpsc::Receiver<String>,
    _fx: Fixture,
}

impl Server {
    fn start() -> Self {
        let fx = Fixture::new();
        let mut command: Command = fx.command(&["serve"]);
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = command.spawn().expect("spawn tools serve");
        let input = child.stdin.take().expect("stdin");
        let output = child.stdout.take().expect("stdout");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(output).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Server { child, input, lines, _fx: fx }
    }

    /// A server after the `initialize` handshake at `version`.
    fn initialized(version: &str) -> Self {
        let mut server = Server::start();
        let reply = server.ask(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
        assert_eq!(reply["result"]["protocolVersion"], version, "{reply}");
        server.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        server
    }

    fn send_line(&mut self, line: &str) {
        self.send_bytes(line.as_bytes());
    }

    fn send_bytes(&mut self, bytes: &[u8]) {
        self.input.write_all(bytes).expect("write a line");
        self.input.write_all(b"\n").expect("write a newline");
        self.input.flush().expect("flush");
    }

    fn reply(&self) -> Value {
        let line = self.lines.recv_timeout(REPLY_WITHIN).expect("a reply line (silence is a defect)");
        let value: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        check_envelope(&value);
        value
    }

    fn ask(&mut self, message: &Value) -> Value {
        self.ask_line(&message.to_string())
    }

    fn ask_line(&mut self, line: &str) -> Value {
        self.send_line(line);
        self.reply()
    }

    /// Answers a ping: the server is still serving after whatever came before.
    fn still_serving(&mut self) {
        let reply = self.ask(&json!({"jsonrpc": "2.0", "id": "alive", "method": "ping"}));
        assert_eq!(reply, json!({"jsonrpc": "2.0", "id": "alive", "result": {}}));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every reply (or every member of a batch reply) is a JSON-RPC 2.0 response with an `id` member,
/// `null` when the request's id could not be read.
fn check_envelope(value: &Value) {
    if let Value::Array(items) = value {
        assert!(!items.is_empty(), "an empty batch reply");
        items.iter().for_each(check_envelope);
        return;
    }
    assert_eq!(value["jsonrpc"], "2.0", "{value}");
    let id = value.get("id").unwrap_or_else(|| panic!("no `id` member: {value}"));
    assert!(id.is_null() || id.is_string() || id.is_i64(), "{value}");
    assert!(value.get("result").is_some() != value.get("error").is_some(), "{value}");
    if let Some(error) = value.get("error") {
        assert!(error["code"].is_i64(), "{value}");
        assert!(!error["message"].as_str().unwrap_or_default().is_empty(), "{value}");
    }
}

fn error_of(reply: &Value, id: &Value, code: i64) -> String {
    assert_eq!(&reply["id"], id, "{reply}");
    assert_eq!(reply["error"]["code"], code, "{reply}");
    reply["error"]["message"].as_str().expect("a message").to_owned()
}

#[test]
fn malformed_params_are_invalid_params_with_the_id_and_what_is_wrong() {
    let mut server = Server::start();
    let reply = server.ask(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
    assert_eq!(
        error_of(&reply, &json!(1), -32602),
        "Invalid params for `initialize`: `params.protocolVersion` is missing: send the protocol revision the \
         client speaks, such as \"2025-11-25\"."
    );
    // The session can still start.
    let reply = server.ask(&json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
    assert_eq!(reply["result"]["protocolVersion"], "2025-06-18", "{reply}");
    server.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    let reply =
        server.ask_line(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}"#);
    assert_eq!(
        error_of(&reply, &json!(3), -32602),
        "Invalid params for `tools/call`: `params.name` is missing: name the tool to call (see tools/list)."
    );
    let reply = server
        .ask_line(r#"{"jsonrpc":"2.0","id":"four","method":"tools/call","params":{"name":"ls","arguments":"notanobject"}}"#);
    assert_eq!(
        error_of(&reply, &json!("four"), -32602),
        "Invalid params for `tools/call`: `params.arguments` must be an object of the tool's arguments, found a \
         string."
    );
    let reply = server.ask_line(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":7}}"#);
    assert!(error_of(&reply, &json!(5), -32602).contains("`params.name` must be a string, found a number"));
    let reply = server.ask_line(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call"}"#);
    assert!(error_of(&reply, &json!(6), -32602).contains("`params.name` is missing"));
    for (id, params) in [(7, r#""str""#), (8, "[1,2]"), (9, "42"), (10, "true")] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#);
        let message = error_of(&server.ask_line(&line), &json!(id), -32602);
        assert!(
            message.starts_with("Invalid params: `params` of `tools/call` must be an object, found "),
            "{message}"
        );
    }
    let reply = server.ask_line(r#"{"jsonrpc":"2.0","id":11,"method":"tools/list","params":{"cursor":5}}"#);
    error_of(&reply, &json!(11), -32602);
    server.still_serving();
}

#[test]
fn only_the_declared_tools_capability_is_served() {
    let mut server = Server::start();
    let reply = server.ask(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
    // The tools capability, logging (a tool's `ToolContext::log`, a mounted server's log), and
    // the tasks extension (a background `bash` command as a task).
    let declared = json!({"tools": {}, "logging": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    assert_eq!(reply["result"]["capabilities"], declared, "{reply}");
    server.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let reply = server.ask(
        &json!({"jsonrpc": "2.0", "id": 100, "method": "logging/setLevel", "params": {"level": "debug"}}),
    );
    assert_eq!(reply["result"], json!({}), "{reply}");
    let requests = [
        ("prompts/list", json!({})),
        ("prompts/get", json!({"name": "x"})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "file:///x"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": "b"}}),
        ),
        ("no/such/method", json!({})),
    ];
    for (n, (method, params)) in requests.into_iter().enumerate() {
        let reply = server.ask(&json!({"jsonrpc": "2.0", "id": n, "method": method, "params": params}));
        assert_eq!(
            error_of(&reply, &json!(n), -32601),
            format!(
                "Method not found: `{method}`. This server declares only the tools capability: use tools/list and \
                 tools/call."
            )
        );
    }
    let reply = server.ask(&json!({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}));
    assert!(reply["result"]["tools"].as_array().is_some_and(|tools| !tools.is_empty()), "{reply}");
}

#[test]
fn input_that_is_not_a_request_gets_an_error_never_silence() {
    let mut server = Server::initialized("2025-11-25");

    // Not JSON: the id is read when it comes before the fault.
    let reply = server.ask_line(r#"{"jsonrpc":"2.0","id":1,"method":"ping""#);
    assert!(error_of(&reply, &json!(1), -32700).starts_with("Parse error: the message is not valid JSON"));
    let reply = server.ask_line("not json at all");
    error_of(&reply, &Value::Null, -32700);

    // Lone surrogates, as a high half alone and as a low half alone.
    for (id, escape) in [(2, r"\ud800"), (3, r"\udc00x"), (4, r"\ud800\u0041")] {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"ls","arguments":{{"path":"{escape}"}}}}}}"#
        );
        let message = error_of(&server.ask_line(&line), &json!(id), -32700);
        assert!(message.contains("surrogate"), "{message}");
    }
    // Invalid UTF-8.
    server
        .send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":{\"x\":\"\xff\"}}");
    error_of(&server.reply(), &json!(5), -32700);

    // Nesting past the parser's limit of 128 levels; 100 levels still parse.
    let deep = |levels: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"ls","arguments":{{"path":{}1{}}}}}}}"#,
            "[".repeat(levels),
            "]".repeat(levels)
        )
    };
    let message = error_of(&server.ask_line(&deep(200)), &json!(6), -32700);
    assert!(message.contains("nested deeper than 128 levels"), "{message}");
    let reply = server.ask_line(&deep(100));
    assert_eq!(reply["id"], 6);
    assert_eq!(reply["result"]["isError"], true, "a deep but parsable call reaches the tool's validation");

    // Batches: each request in it gets its own error; notifications in it none.
    let reply = server.ask_line(
        r#"[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"8","method":"tools/list"}]"#,
    );
    let items = reply.as_array().expect("a batch reply is an array");
    assert_eq!(items.iter().map(|item| item["id"].clone()).collect::<Vec<_>>(), [json!(7), json!("8")]);
    for item in items {
        assert!(error_of(item, &item["id"], -32600).contains("batches are not supported"));
    }
    error_of(&server.ask_line("[]"), &Value::Null, -32600);

    // JSON that is not a request.
    for (line, id) in [
        ("42", Value::Null),
        (r#""ping""#, Value::Null),
        (r#"{"jsonrpc":"2.0","id":9}"#, json!(9)),
        (r#"{"jsonrpc":"1.0","id":10,"method":"ping"}"#, json!(10)),
        (r#"{"id":11,"method":"ping"}"#, json!(11)),
        (r#"{"jsonrpc":"2.0","id":12,"method":5}"#, json!(12)),
        (r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#, Value::Null),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, Value::Null),
    ] {
        error_of(&server.ask_line(line), &id, -32600);
    }

    // A notification is never answered, even a malformed one: the next reply is the ping's.
    server.send_line(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}"#);
    server.still_serving();
}

#[test]
fn a_line_past_the_limit_is_skipped_and_answered() {
    let mut server = Server::initialized("2025-11-25");
    let limit = tool_runtime::mcp_server::DEFAULT_MAX_MESSAGE_BYTES;
    let mut line = br#"{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"write","arguments":{"path":"big.txt","content":""#.to_vec();
    line.resize(limit + 1000, b'a');
    line.extend_from_slice(br#""}}}"#);
    server.send_bytes(&line);
    let message = error_of(&server.reply(), &json!("big"), -32600);
    assert_eq!(
        message,
        format!(
            "Invalid request: the message is {} bytes long, more than this server reads in one message ({limit} \
             bytes), and was not read. Send smaller messages (for example, write a large file in parts).",
            line.len()
        )
    );
    server.still_serving();
}

#[test]
fn identical_calls_in_a_row_all_run() {
    let mut server = Server::initialized("2025-11-25");
    let mut outputs = Vec::new();
    for id in 1..=4 {
        let reply = server.ask(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": "date +%s%N"}}}));
        assert_eq!(reply["result"]["isError"], false, "{reply}");
        outputs.push(reply["result"]["content"][0]["text"].as_str().unwrap().to_owned());
    }
    outputs.dedup();
    assert_eq!(outputs.len(), 4, "every call ran: {outputs:?}");
}
