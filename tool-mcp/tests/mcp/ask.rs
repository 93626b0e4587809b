//! A permission rule's `ask` reaching the person at an MCP client: `elicitation/create` to a
//! client (rmcp's) that declared the capability, and the refusal naming the rule for one that did
//! not, that fails to answer in time, or when the application's own asker answers instead.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationCapability, ErrorData, Implementation, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tool_runtime::mcp_server::McpServer;
use tool_runtime::permissions::{Policy, PolicyExt, Rules, Subject, ToolCatalog};
use tool_runtime::{
    Dispatcher, PermissionKind, PermissionRequest, Registry, ToolContext, ToolError, hooks::AllowAll, tool,
};

/// Pretend to run a shell command: asks about it as a shell tool does, then says what it ran.
#[tool(undocumented)]
async fn run(ctx: &ToolContext, command: String) -> Result<String, ToolError> {
    ctx.ask(PermissionRequest::new(
        PermissionKind::Command { command: command.clone(), workdir: None },
        format!("run `{command}`"),
    ))
    .await?;
    Ok(format!("ran {command}"))
}

/// Echo the text back.
#[tool(undocumented)]
async fn echo(text: String) -> String {
    text
}

/// How the client's user answers.
#[derive(Clone)]
enum Answer {
    Give(ElicitationAction, Option<Value>),
    /// Never: the question stays open.
    Never,
}

/// A client whose user answers every question with `answer`; it records the questions.
#[derive(Clone)]
struct User {
    answer: Answer,
    declares_elicitation: bool,
    /// Speaks revision 2026-07-28: no session, the server's questions come in rounds.
    sessionless: bool,
    asked: Arc<Mutex<Vec<ElicitRequestParams>>>,
}

impl User {
    fn new(answer: Answer) -> Self {
        User { answer, declares_elicitation: true, sessionless: false, asked: Arc::default() }
    }

    fn questions(&self) -> Vec<(String, Value)> {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .map(|asked| match asked {
                ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
                    (message.clone(), serde_json::to_value(requested_schema).unwrap())
                }
                other => panic!("expected a form, got {other:?}"),
            })
            .collect()
    }
}

impl ClientHandler for User {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.declares_elicitation {
            ClientCapabilities::builder().enable_elicitation_with(ElicitationCapability::default()).build()
        } else {
            ClientCapabilities::default()
        };
        // The last revision with server-to-client requests, unless in rounds: 2026-07-28 has
        // none.
        let mut config = ClientConfig::new(capabilities, Implementation::new("asked-user", "1.0"));
        config.protocol_version =
            if self.sessionless { ProtocolVersion::V_2026_07_28 } else { ProtocolVersion::V_2025_11_25 };
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.lock().unwrap().push(request);
        match &self.answer {
            Answer::Give(action, content) => {
                let mut result = ElicitResult::new(action.clone());
                result.content = content.clone();
                Ok(result)
            }
            Answer::Never => std::future::pending().await,
        }
    }
}

const RM_RULE: &str = "the rule `ask run(rm *)` in the rules given in code";

fn policy() -> Policy {
    let catalog = ToolCatalog::new().subject("run", Subject::Command);
    let rules = Rules::builder(std::env::temp_dir()).catalog(catalog).ask("run(rm *)").ask("echo").build();
    Policy::new(rules.expect("rules"))
}

async fn serve(user: &User, policy: Policy, timeout: Option<Duration>) -> RunningService<RoleClient, User> {
    let registry = Registry::builder().with_inventory().allow(["run", "echo"]).build().unwrap();
    let mut server = McpServer::builder(Dispatcher::builder(registry).policy(policy));
    if let Some(timeout) = timeout {
        server = server.elicitation_timeout(timeout);
    }
    let server = server.build().unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { server.serve(server_io).await });
    if user.sessionless {
        let discover =
            ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
        return user.clone().serve_with_lifecycle(client_io, discover).await.expect("discover");
    }
    user.clone().serve(client_io).await.expect("initialize")
}

async fn call(client: &RunningService<RoleClient, User>, name: &str, arguments: Value) -> (bool, String) {
    let Value::Object(arguments) = arguments else { panic!("object") };
    let result: CallToolResult = client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
        .await
        .expect("a result");
    let text = result.content.iter().filter_map(|block| block.as_text()).map(|t| t.text.as_str()).collect();
    (result.is_error == Some(true), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accept_runs_the_command_after_a_question_naming_tool_command_and_rule() {
    let user = User::new(Answer::Give(ElicitationAction::Accept, Some(json!({"allow": true}))));
    let client = serve(&user, policy(), None).await;

    let (failed, text) = call(&client, "run", json!({"command": "rm -r build"})).await;
    assert!(!failed, "{text}");
    assert_eq!(text, "ran rm -r build");
    // A command no rule asks about is not asked about.
    let (failed, text) = call(&client, "run", json!({"command": "ls"})).await;
    assert!(!failed, "{text}");

    let questions = user.questions();
    assert_eq!(questions.len(), 1, "{questions:?}");
    let (message, schema) = &questions[0];
    assert_eq!(
        message,
        &format!("Allow the tool `run` to run `rm -r build`?\n\nAsked because {RM_RULE} says to ask first.")
    );
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["allow"]["type"], "boolean");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accept_without_content_allows_a_whole_call_and_shows_its_arguments() {
    let user = User::new(Answer::Give(ElicitationAction::Accept, None));
    let client = serve(&user, policy(), None).await;
    let (failed, text) = call(&client, "echo", json!({"text": "hello"})).await;
    assert!(!failed, "{text}");
    assert_eq!(text, "hello");
    let questions = user.questions();
    assert_eq!(questions.len(), 1);
    assert!(
        questions[0]
            .0
            .starts_with("Allow a call of the tool `echo` with the arguments {\"text\":\"hello\"}?"),
        "{}",
        questions[0].0
    );
    assert!(questions[0].0.contains("the rule `ask echo`"), "{}", questions[0].0);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decline_a_cancel_or_allow_false_refuses_naming_the_rule() {
    for (action, content, said) in [
        (ElicitationAction::Decline, None, "the user declined it"),
        (ElicitationAction::Cancel, None, "the user dismissed the question without allowing it"),
        (ElicitationAction::Accept, Some(json!({"allow": false})), "the user answered not to allow it"),
    ] {
        let user = User::new(Answer::Give(action.clone(), content));
        let client = serve(&user, policy(), None).await;
        let (failed, text) = call(&client, "run", json!({"command": "rm -r build"})).await;
        assert!(failed, "{action:?}: {text}");
        assert!(!text.contains("ran "), "{action:?}: the command ran: {text}");
        assert!(text.contains(said) && text.contains(RM_RULE), "{action:?}: {text}");
        assert_eq!(user.questions().len(), 1);
        client.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_elicitation_gets_the_refusal_naming_the_rule() {
    let mut user = User::new(Answer::Give(ElicitationAction::Accept, None));
    user.declares_elicitation = false;
    let client = serve(&user, policy(), None).await;
    let (failed, text) = call(&client, "run", json!({"command": "rm -r build"})).await;
    assert!(failed, "{text}");
    assert!(
        text.contains(&format!(
            "{RM_RULE} says to ask first, and this MCP client cannot ask its user (it did not declare the \
             elicitation capability), so it was not done"
        )),
        "{text}"
    );
    assert!(user.questions().is_empty(), "asked a client that cannot answer");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_answer_in_time_refuses_naming_the_rule() {
    // The user never answers, so how long the server waits decides nothing but the test's length.
    let user = User::new(Answer::Never);
    let client = serve(&user, policy(), Some(Duration::from_millis(50))).await;
    let (failed, text) = call(&client, "run", json!({"command": "rm -r build"})).await;
    assert!(failed, "{text}");
    assert!(
        text.contains(&format!(
            "{RM_RULE} says to ask first, and the MCP client's user did not answer within"
        )),
        "{text}"
    );
    assert_eq!(user.questions().len(), 1);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_applications_own_asker_answers_instead_of_the_client() {
    let user = User::new(Answer::Give(ElicitationAction::Decline, None));
    let client = serve(&user, policy().asker(AllowAll), None).await;
    let (failed, text) = call(&client, "run", json!({"command": "rm -r build"})).await;
    assert!(!failed, "{text}");
    assert!(user.questions().is_empty(), "the client was asked although the application answers");
    client.cancel().await.unwrap();
}

/// Pretend to run a command with more rights than the sandbox gives, as `bash` asks for them.
#[tool(undocumented)]
async fn escalate(ctx: &ToolContext, command: String) -> Result<String, ToolError> {
    ctx.ask(PermissionRequest::new(
        PermissionKind::SandboxEscalation {
            command: command.clone(),
            rights: "the network on".into(),
            justification: "it downloads the crates".into(),
        },
        format!("run `{command}` with the network on, because: it downloads the crates"),
    ))
    .await?;
    Ok(format!("ran {command} with the network"))
}

async fn serve_default(user: &User) -> RunningService<RoleClient, User> {
    let registry = Registry::builder().with_inventory().allow(["escalate"]).build().unwrap();
    let server = McpServer::builder(Dispatcher::builder(registry)).build().unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { server.serve(server_io).await });
    if user.sessionless {
        let discover =
            ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
        return user.clone().serve_with_lifecycle(client_io, discover).await.expect("discover");
    }
    user.clone().serve(client_io).await.expect("initialize")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_escalation_is_asked_of_the_client_even_under_the_default_permissions() {
    let user = User::new(Answer::Give(ElicitationAction::Accept, Some(json!({"allow": true}))));
    let client = serve_default(&user).await;
    let (failed, text) = call(&client, "escalate", json!({"command": "cargo fetch"})).await;
    assert!(!failed, "{text}");
    assert_eq!(text, "ran cargo fetch with the network");
    let questions = user.questions();
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert!(
        questions[0].0.contains("run `cargo fetch` with the network on, because: it downloads the crates"),
        "{}",
        questions[0].0
    );
    client.cancel().await.unwrap();

    let user = User::new(Answer::Give(ElicitationAction::Decline, None));
    let client = serve_default(&user).await;
    let (failed, text) = call(&client, "escalate", json!({"command": "cargo fetch"})).await;
    assert!(failed, "{text}");
    client.cancel().await.unwrap();

    // Without elicitation, nobody can answer: refused.
    let mut user = User::new(Answer::Give(ElicitationAction::Accept, Some(json!({"allow": true}))));
    user.declares_elicitation = false;
    let client = serve_default(&user).await;
    let (failed, text) = call(&client, "escalate", json!({"command": "cargo fetch"})).await;
    assert!(failed, "{text}");
    assert!(user.questions().is_empty());
    client.cancel().await.unwrap();
}

/// An escalation no rule asked about, refused because the client cannot ask its user: the
/// refusal names what asked (the sandbox), not a permission rule that does not exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escalation_refused_for_want_of_elicitation_names_the_sandbox_not_a_rule() {
    let mut user = User::new(Answer::Give(ElicitationAction::Accept, None));
    user.declares_elicitation = false;
    let client = serve_default(&user).await;
    let (failed, text) = call(&client, "escalate", json!({"command": "make install"})).await;
    assert!(failed, "{text}");
    assert!(
        text.contains(
            "the sandbox (the command asks for more rights than it gives) says to ask first, and this MCP client \
             cannot ask its user"
        ),
        "{text}"
    );
    assert!(!text.contains("permission rule"), "{text}");
    client.cancel().await.unwrap();
}

/// Revision 2026-07-28 has no session to send a question in: the call's result asks for the
/// answer (`input_required`), rmcp's client answers and calls again, and the call goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_session_the_question_comes_in_rounds() {
    let mut user = User::new(Answer::Give(ElicitationAction::Accept, Some(json!({"allow": true}))));
    user.sessionless = true;
    let client = serve(&user, policy(), None).await;
    let version = client.peer().peer_info().map(|info| info.protocol_version.clone());
    assert_eq!(version, Some(ProtocolVersion::V_2026_07_28));
    let (failed, text) = call(&client, "run", json!({"command": "rm -r build"})).await;
    assert!(!failed, "{text}");
    assert_eq!(text, "ran rm -r build");
    // Two calls, each asked once (`echo` asks as a whole call).
    let (failed, text) = call(&client, "echo", json!({"text": "twice"})).await;
    assert_eq!((failed, text.as_str()), (false, "twice"));
    let questions = user.questions();
    assert_eq!(questions.len(), 2, "{questions:?}");
    assert!(questions[0].0.contains(RM_RULE), "{}", questions[0].0);
    client.cancel().await.unwrap();

    let mut user = User::new(Answer::Give(ElicitationAction::Decline, None));
    user.sessionless = true;
    let client = serve(&user, policy(), None).await;
    let (failed, text) = call(&client, "run", json!({"command": "rm -r build"})).await;
    assert!(failed && text.contains("the user declined it"), "{text}");
    client.cancel().await.unwrap();

    let mut user = User::new(Answer::Give(ElicitationAction::Accept, None));
    (user.sessionless, user.declares_elicitation) = (true, false);
    let client = serve(&user, policy(), None).await;
    let (failed, text) = call(&client, "run", json!({"command": "rm -r build"})).await;
    assert!(failed && text.contains("did not declare the elicitation capability"), "{text}");
    client.cancel().await.unwrap();
}

/// What a client sends in rounds, written out: the request state names a parked call once, a
/// state nobody issued is refused, and a call whose client does not come back in time is given
/// up (its question answered with that) and its state refused after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_state_is_used_once_and_a_call_not_come_back_to_is_given_up() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let registry = Registry::builder().with_inventory().allow(["run", "echo"]).build().unwrap();
    let server = McpServer::builder(Dispatcher::builder(registry).policy(policy()))
        .elicitation_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { server.serve(server_io).await });
    let (reader, mut writer) = tokio::io::split(client_io);
    let mut lines = BufReader::new(reader).lines();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
                      "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}});
    let mut next_id = 0;
    let mut call = async |params: Value| -> Value {
        next_id += 1;
        let mut params = params;
        params["_meta"] = meta.clone();
        let request = json!({"jsonrpc": "2.0", "id": next_id, "method": "tools/call", "params": params});
        writer.write_all(format!("{request}\n").as_bytes()).await.unwrap();
        loop {
            let message: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
            if message["id"] == next_id {
                return message;
            }
        }
    };
    let first = call(json!({"name": "run", "arguments": {"command": "rm -r build"}})).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(result["inputRequests"]["q1"]["method"], "elicitation/create", "{first}");
    assert!(result["inputRequests"]["q1"]["params"]["message"].as_str().unwrap().contains(RM_RULE));
    let state = result["requestState"].as_str().unwrap().to_owned();
    assert_eq!(state.len(), 32, "128 random bits: {state}");

    let answers = json!({"q1": {"action": "accept", "content": {"allow": true}}});
    let retry = json!({"name": "run", "arguments": {"command": "rm -r build"}, "requestState": state, "inputResponses": answers});
    let done = call(retry.clone()).await;
    assert_eq!(done["result"]["content"][0]["text"], "ran rm -r build", "{done}");
    // Used: the same state again names nothing.
    let again = call(retry).await;
    assert_eq!(again["error"]["code"], -32602, "{again}");
    assert!(again["error"]["message"].as_str().unwrap().contains("no call waits under this requestState"));
    let forged = call(json!({"name": "run", "requestState": "0".repeat(32), "inputResponses": {}})).await;
    assert_eq!(forged["error"]["code"], -32602, "{forged}");

    // Not come back to within the elicitation time limit: given up.
    let asked = call(json!({"name": "run", "arguments": {"command": "rm -r dist"}})).await;
    let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(900)).await;
    let late =
        call(json!({"name": "run", "requestState": state, "inputResponses": {"q1": {"action": "accept"}}}))
            .await;
    assert_eq!(late["error"]["code"], -32602, "{late}");
}
