//! A permission rule's `ask` reaching the person at an MCP client: `elicitation/create` to a
//! client (rmcp's) that declared the capability, and the refusal naming the rule for one that did
//! not, that fails to answer in time, or when the application's own asker answers instead.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationCapability, ErrorData, Implementation, ProtocolVersion,
};
use rmcp::service::{RequestContext, RunningService};
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
        PermissionKind::Command { command: command.clone() },
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
    asked: Arc<Mutex<Vec<ElicitRequestParams>>>,
}

impl User {
    fn new(answer: Answer) -> Self {
        User { answer, declares_elicitation: true, asked: Arc::default() }
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
        // The last revision with server-to-client requests: 2026-07-28 has none.
        let mut config = ClientConfig::new(capabilities, Implementation::new("asked-user", "1.0"));
        config.protocol_version = ProtocolVersion::V_2025_11_25;
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
