//! A real agent loop: an LLM (OpenAI Chat Completions or Anthropic Messages) calling the
//! built-in tools through the dispatcher until it answers.
//!
//! ```sh
//! OPENAI_API_KEY=... cargo run --example agent_loop --features http -- "What does this repository do?"
//! ANTHROPIC_API_KEY=... cargo run --example agent_loop --features http -- "Find the TODOs in src/"
//! ```
//!
//! `OPENAI_MODEL` / `ANTHROPIC_MODEL` pick the model, `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL`
//! the server. The tools run in the current directory;
//! paths outside it are refused. Without a key the example explains itself and exits.

use serde_json::{Value, json};
use tool_runtime::{
    CancellationToken, Dispatcher, Registry,
    providers::{DefinitionOptions, Provider},
};

const MAX_TURNS: usize = 12;

struct Backend {
    provider: Provider,
    url: String,
    key: String,
    model: String,
}

impl Backend {
    fn from_env() -> Option<Backend> {
        if let Ok(key) = std::env::var("OPENAI_API_KEY") {
            return Some(Backend {
                provider: Provider::OpenAiChat,
                url: base_url("OPENAI_BASE_URL", "https://api.openai.com/v1") + "/chat/completions",
                key,
                model: std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4.1-mini".into()),
            });
        }
        let key = std::env::var("ANTHROPIC_API_KEY").ok()?;
        Some(Backend {
            provider: Provider::Anthropic,
            url: base_url("ANTHROPIC_BASE_URL", "https://api.anthropic.com") + "/v1/messages",
            key,
            model: std::env::var("ANTHROPIC_MODEL").unwrap_or_else(|_| "claude-sonnet-4-5".into()),
        })
    }

    /// The request body for the conversation so far.
    fn request(&self, system: &str, messages: &[Value], tools: &[Value]) -> Value {
        match self.provider {
            Provider::OpenAiChat => {
                let mut all = vec![json!({"role": "system", "content": system})];
                all.extend_from_slice(messages);
                json!({"model": self.model, "messages": all, "tools": tools})
            }
            _ => {
                json!({"model": self.model, "max_tokens": 4096, "system": system, "messages": messages, "tools": tools})
            }
        }
    }

    /// Sends one request; returns the assistant message.
    async fn send(&self, body: Value) -> Result<Value, String> {
        let (url, key, provider) = (self.url.clone(), self.key.clone(), self.provider);
        let response = tokio::task::spawn_blocking(move || {
            let request = ureq::post(&url).header("content-type", "application/json");
            let request = match provider {
                Provider::OpenAiChat => request.header("authorization", &format!("Bearer {key}")),
                _ => request.header("x-api-key", &key).header("anthropic-version", "2023-06-01"),
            };
            let mut response = request.send(body.to_string().as_bytes()).map_err(|e| e.to_string())?;
            response.body_mut().read_to_string().map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())??;
        let response: Value = serde_json::from_str(&response).map_err(|e| format!("not JSON: {e}"))?;
        match self.provider {
            // Chat Completions wraps the message in choices; Messages returns it directly.
            Provider::OpenAiChat => Ok(response["choices"][0]["message"].clone()),
            _ => Ok(json!({"role": "assistant", "content": response["content"]})),
        }
    }
}

/// `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` point the loop at a proxy or a compatible server.
fn base_url(variable: &str, default: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| default.to_owned()).trim_end_matches('/').to_owned()
}

fn final_text(provider: Provider, message: &Value) -> String {
    match provider {
        Provider::OpenAiChat => message["content"].as_str().unwrap_or_default().to_owned(),
        _ => message["content"]
            .as_array()
            .map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default(),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(backend) = Backend::from_env() else {
        println!(
            "This example runs a real model turn loop and needs an API key.\n\
             Set OPENAI_API_KEY (OpenAI Chat Completions) or ANTHROPIC_API_KEY (Anthropic Messages),\n\
             optionally OPENAI_MODEL / ANTHROPIC_MODEL, and pass a task:\n\n  \
             OPENAI_API_KEY=... cargo run --example agent_loop --features http -- \"What does this repository do?\"\n\n\
             Without a key, `cargo run --example quickstart` shows the same pipeline on a scripted turn."
        );
        return Ok(());
    };
    let task = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let task =
        if task.is_empty() { "Give a one-paragraph summary of this directory.".to_owned() } else { task };

    let registry = Registry::from_inventory()?;
    // The same definitions go out on every turn: with Anthropic, a cache breakpoint after the
    // last one makes them a cached prompt prefix (other providers ignore the option).
    let options = DefinitionOptions::default().with_anthropic_cache_control(true);
    let tools = backend.provider.definitions(&registry, &options)?;
    let dispatcher = Dispatcher::builder(registry).dependencies(tools_std::dependencies(".")?).build();
    let system = "You are a coding assistant working in the user's current directory. Use the tools to look \
                  before you answer, and answer concisely.";

    let mut messages = vec![json!({"role": "user", "content": task})];
    for _ in 0..MAX_TURNS {
        let assistant = backend.send(backend.request(system, &messages, &tools)).await?;
        let calls = backend.provider.parse_tool_calls(&assistant)?;
        messages.push(assistant.clone());
        if calls.is_empty() {
            println!("{}", final_text(backend.provider, &assistant));
            return Ok(());
        }
        for call in &calls {
            eprintln!("-> {}({})", call.name, call.arguments);
        }
        // One model turn = one batch: parallel tools overlap, the rest run alone, in order.
        let results = dispatcher.run_batch(calls, CancellationToken::new()).await?;
        messages.extend(backend.provider.render_results(&results));
    }
    println!("(stopped after {MAX_TURNS} turns)");
    Ok(())
}
