//! A catalog of 300 tools from three (simulated) mounted servers, deferred, next to the
//! built-in tools: how much smaller each request's definitions get, and one scripted Chat
//! Completions conversation that searches for a tool, gets it in the next request and calls it.
//! No network, no API key.
//!
//! Run with `cargo run --example large_catalog`.

use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::catalog::{Catalog, LoadedTools, TurnResult};
use tool_runtime::{
    CancellationToken, Dispatcher, Registry, Tool, ToolOutput, ToolSpec,
    providers::{DefinitionOptions, Provider},
    spec::FnTool,
};

/// The tools a mounted server `server` would bring: named `<server>__<verb>_<object>` and tagged
/// `mcp:<server>`, as `McpMount` makes them, and deferred as `"defer": true` makes them.
fn server(server: &str, title: &str, objects: &[&str]) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for object in objects {
        for (verb, what) in [
            ("create", "Create a new"),
            ("list", "List every"),
            ("get", "Fetch one"),
            ("update", "Change an existing"),
            ("delete", "Permanently remove a"),
        ] {
            let spec = ToolSpec::new(
                format!("{server}__{verb}_{object}"),
                format!("{what} {} in {title}.", object.replace('_', " ")),
                json!({"type": "object", "properties": {
                    "id": {"type": "string", "description": format!("The {object}'s id.")},
                    "fields": {"type": "object", "description": "Fields to set or return."},
                }}),
            )
            .with_tags(["mcp".to_owned(), format!("mcp:{server}")])
            .with_defer(true);
            let name = spec.name.clone();
            tools.push(Arc::new(FnTool::new(spec, move |_, args| {
                let name = name.clone();
                async move { Ok(ToolOutput::text(format!("{name} done with {args}"))) }
            })));
        }
    }
    tools
}

fn size(definitions: &[Value]) -> usize {
    serde_json::to_string(definitions).map_or(0, |text| text.len())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let objects = |list: &'static str| list.split(' ').collect::<Vec<_>>();
    let registry = Registry::builder()
        .tools(tools_std::all())
        .tools(server("github", "GitHub", &objects("issue pull_request branch release workflow_run gist repository label milestone comment webhook deploy_key collaborator project team tag check_run artifact secret discussion")))
        .tools(server("calendar", "Google Calendar", &objects("event calendar attendee reminder room acl_rule working_hours color recurrence free_busy focus_time out_of_office booking_page appointment_slot holiday subscription notification setting conference time_zone")))
        .tools(server("stripe", "Stripe", &objects("customer invoice subscription refund payment_intent coupon product price payout dispute charge balance tax_rate checkout_session payment_link credit_note quote mandate transfer webhook_endpoint")))
        .build()?;
    let options = DefinitionOptions::default();
    let all = Provider::OpenAiChat.definitions(&registry, &options)?;
    let catalog = Catalog::new(registry);
    let mut loaded = LoadedTools::new();

    let first = catalog.definitions(Provider::OpenAiChat, &loaded, &options)?;
    println!("{} tools; every definition: {} bytes", all.len(), size(&all));
    println!("deferred, before any search: {} definitions, {} bytes", first.len(), size(&first));
    let anthropic = catalog.definitions(Provider::Anthropic, &loaded, &options)?;
    println!("Anthropic sends every definition with defer_loading: {} of them\n", anthropic.len());

    // The model's side, scripted: a search, then a call of the first tool found.
    let dispatcher = Dispatcher::new(catalog.registry().clone());
    let search = json!({"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "tool_search", "arguments": "{\"query\": \"book a meeting room\", \"limit\": 3}"}}]});
    let calls = catalog.parse_turn(Provider::OpenAiChat, &search)?;
    let results = catalog.run_turn(&dispatcher, calls, &mut loaded, CancellationToken::new()).await?;
    for message in catalog.render_turn(Provider::OpenAiChat, &results, &options)? {
        println!("tool_search answered:\n{}\n", message["content"].as_str().unwrap_or_default());
    }
    let next = catalog.definitions(Provider::OpenAiChat, &loaded, &options)?;
    let added: Vec<&str> =
        next[first.len()..].iter().filter_map(|d| d["function"]["name"].as_str()).collect();
    println!("next request: {} definitions, {} bytes; added at the end: {added:?}", next.len(), size(&next));

    let call = json!({"role": "assistant", "tool_calls": [{"id": "call_2", "type": "function",
        "function": {"name": added[0], "arguments": "{\"id\": \"room-7\"}"}}]});
    let calls = catalog.parse_turn(Provider::OpenAiChat, &call)?;
    for result in catalog.run_turn(&dispatcher, calls, &mut loaded, CancellationToken::new()).await? {
        if let TurnResult::Tool(result) = result {
            println!("{} -> {}", result.tool, result.output.text_content());
        }
    }
    Ok(())
}
