//! A mounted server's `sampling/createMessage`: the fixture server's `ask_model` tool asks its
//! client (our mount) for a completion, which goes to the sampler of the call in flight (the
//! application's [`SamplerDependency`]) under the permission policy; refused with a sentence
//! when the mount does not allow sampling or nobody samples. And `McpServer` passing a tool's
//! request on to its own client, when that client declared `sampling`.
// Sampling is deprecated in rmcp (SEP-2577); servers before protocol 2026-07-28 still send it.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    Implementation, ProtocolVersion, SamplingMessage,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use tool_runtime::context::{Sampler, SamplerDependency};
use tool_runtime::hooks::{PermissionDecision, PermissionFn};
use tool_runtime::mcp_client::{McpMount, SAMPLING_PERMISSION, ServerConfig};
use tool_runtime::mcp_server::McpServer;
use tool_runtime::{
    BoxFuture, CancellationToken, Dispatcher, PermissionKind, Registry, ToolCall, ToolResult,
};

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-resources-server");
const CARELESS: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

/// Answers "42" and keeps every request.
#[derive(Clone, Default)]
struct FortyTwo(Arc<Mutex<Vec<Map<String, Value>>>>);

impl Sampler for FortyTwo {
    fn sample<'a>(
        &'a self,
        request: &'a Map<String, Value>,
    ) -> BoxFuture<'a, Result<Map<String, Value>, tool_runtime::context::Unanswered>> {
        self.0.lock().unwrap().push(request.clone());
        let answer =
            json!({"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "forty-two"});
        Box::pin(async move { Ok(answer.as_object().unwrap().clone()) })
    }
}

async fn call(dispatcher: &Dispatcher, name: &str) -> ToolResult {
    dispatcher.run(ToolCall::new("c1", name, "{}"), CancellationToken::new()).await
}

async fn mounted(sampling: bool) -> (McpMount, Arc<Registry>) {
    let mount = McpMount::connect(ServerConfig::stdio("fx", FIXTURE).sampling(sampling)).await.unwrap();
    let registry = Arc::new(Registry::builder().tools(mount.tools()).build().unwrap());
    (mount, registry)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_servers_request_reaches_the_applications_sampler() {
    let (_mount, registry) = mounted(true).await;
    let sampler = FortyTwo::default();
    let dispatcher =
        Dispatcher::builder(registry).dependency(SamplerDependency(Arc::new(sampler.clone()))).build();
    let result = call(&dispatcher, "fx__ask_model").await;
    assert_eq!(result.output.text_content(), "the model (forty-two) said: 42");
    assert!(!result.output.is_error);
    let requests = sampler.0.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["systemPrompt"], "Answer with a number.");
    assert_eq!(requests[0]["maxTokens"], 20);
    assert_eq!(requests[0]["messages"][0]["content"]["text"], "What is 6 x 7?");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_permission_policy_can_refuse_a_servers_request() {
    let (_mount, registry) = mounted(true).await;
    let sampler = FortyTwo::default();
    let dispatcher = Dispatcher::builder(registry)
        .dependency(SamplerDependency(Arc::new(sampler.clone())))
        .permissions(PermissionFn(|request: tool_runtime::PermissionRequest| async move {
            match &request.kind {
                PermissionKind::Other { name } if name == SAMPLING_PERMISSION => {
                    assert!(request.description.contains("`fx` ask the model"), "{}", request.description);
                    PermissionDecision::Deny { reason: "no completions for servers".to_owned() }
                }
                _ => PermissionDecision::Allow,
            }
        }))
        .build();
    let result = call(&dispatcher, "fx__ask_model").await;
    let text = result.output.text_content();
    assert!(result.output.is_error);
    assert!(text.contains("no completions for servers"), "{text}");
    assert!(sampler.0.lock().unwrap().is_empty(), "the refused request never reached the sampler");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_sampler_or_without_sampling_allowed_the_server_is_told_why() {
    let (_mount, registry) = mounted(true).await;
    let result = call(&Dispatcher::new(registry), "fx__ask_model").await;
    let text = result.output.text_content();
    assert!(result.output.is_error);
    assert!(text.starts_with("sampling failed: ") && text.contains("Nobody can sample"), "{text}");

    // Not allowed: the mount does not declare the capability, so the server does not ask (our
    // fixture, written with `McpServer`, offers its tool no sampler then).
    let (mount, registry) = mounted(false).await;
    assert!(mount.capabilities().tools.is_some());
    let dispatcher =
        Dispatcher::builder(registry).dependency(SamplerDependency(Arc::new(FortyTwo::default()))).build();
    let result = call(&dispatcher, "fx__ask_model").await;
    assert_eq!(result.output.text_content(), "no sampler");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_samples_without_the_capability_gets_a_clear_error() {
    // An rmcp server that asks whatever its client declared: refused with -32601 and why, before
    // any sampler or policy is asked.
    let config = ServerConfig::stdio("careless", CARELESS).env("FIXTURE_SAMPLES", "1");
    let mount = McpMount::connect(config).await.unwrap();
    let registry = Registry::builder().tools(mount.tools()).build().unwrap();
    let sampler = FortyTwo::default();
    let dispatcher =
        Dispatcher::builder(registry).dependency(SamplerDependency(Arc::new(sampler.clone()))).build();
    let text = call(&dispatcher, "careless__sample").await.output.text_content();
    assert!(text.starts_with("refused: ") && text.contains("-32601"), "{text}");
    assert!(text.contains("did not declare the sampling capability"), "{text}");
    assert!(sampler.0.lock().unwrap().is_empty());

    // Allowed, the same request reaches the sampler.
    let config = ServerConfig::stdio("careless", CARELESS).env("FIXTURE_SAMPLES", "1").sampling(true);
    let mount = McpMount::connect(config).await.unwrap();
    let registry = Registry::builder().tools(mount.tools()).build().unwrap();
    let dispatcher =
        Dispatcher::builder(registry).dependency(SamplerDependency(Arc::new(sampler.clone()))).build();
    assert_eq!(call(&dispatcher, "careless__sample").await.output.text_content(), "answered by forty-two");
}

/// A client that samples: answers with the text of the last message reversed.
#[derive(Clone)]
struct Reverser {
    samples: bool,
}

impl ClientHandler for Reverser {
    #[allow(deprecated)]
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.samples {
            capabilities.sampling = Some(rmcp::model::SamplingCapability::default());
        }
        let mut config = ClientConfig::new(capabilities, Implementation::new("reverser", "1.0"));
        config.protocol_version = ProtocolVersion::V_2025_11_25;
        config
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        request: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let asked = serde_json::to_value(&request.messages[0]).unwrap()["content"]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        let answer: String = asked.chars().rev().collect();
        Ok(CreateMessageResult::new(SamplingMessage::assistant_text(answer), "reverser-1".to_owned()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_passes_a_mounted_servers_request_on_to_its_own_client() {
    let (_mount, registry) = mounted(true).await;
    let server = McpServer::new(Dispatcher::builder(registry)).unwrap();
    for (samples, expected) in [
        (true, "the model (reverser-1) said: ?7 x 6 si tahW"),
        (false, "sampling failed: the MCP client refused to sample: Nobody can sample"),
    ] {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        tokio::spawn(server.clone().serve(ours));
        let client = Reverser { samples }.serve(theirs).await.unwrap();
        let result = client.call_tool(CallToolRequestParams::new("fx__ask_model")).await.unwrap();
        let text = serde_json::to_value(&result).unwrap()["content"][0]["text"].as_str().unwrap().to_owned();
        assert!(text.starts_with(expected), "{samples}: {text}");
        client.cancel().await.unwrap();
    }
}
