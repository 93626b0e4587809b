//! Deferred tools and the tool search in each provider's form: golden definitions and search
//! answers, and a conversation over a thousand generated tools.

use serde_json::{Value, json};
use tool_runtime::catalog::{Catalog, LoadedTools, SearchMode, TurnCall, TurnResult};
use tool_runtime::{
    Registry, ToolOutput, ToolResult, ToolSpec,
    providers::{DefinitionOptions, Provider},
    spec::FnTool,
};

fn tool(spec: ToolSpec) -> FnTool {
    FnTool::new(spec, |_, args| async move { Ok(ToolOutput::text(format!("ran with {args}"))) })
}

fn object(property: &str, description: &str) -> Value {
    json!({
        "type": "object",
        "properties": {property: {"type": "string", "description": description}},
        "required": [property],
    })
}

/// One tool always there, one deferred, and two deferred tools of a mounted server `github`.
fn registry() -> Registry {
    let mounted = |name: &str, description: &str, schema: Value| {
        tool(ToolSpec::new(name, description, schema).with_tags(["mcp", "mcp:github"]).with_defer(true))
    };
    Registry::builder()
        .tool(tool(ToolSpec::new("read_file", "Read a file.", object("path", "File path."))))
        .tool(tool(
            ToolSpec::new(
                "create_invoice",
                "Create an invoice for a customer.",
                object("customer", "Customer id."),
            )
            .with_defer(true),
        ))
        .tool(mounted(
            "github__create_issue",
            "Open an issue in a repository.",
            object("title", "Issue title."),
        ))
        .tool(mounted(
            "github__list_issues",
            "List the open issues of a repository.",
            json!({"type": "object"}),
        ))
        .build()
        .unwrap()
}

fn definitions(catalog: &Catalog, provider: Provider, loaded: &LoadedTools) -> Value {
    Value::Array(catalog.definitions(provider, loaded, &DefinitionOptions::default()).unwrap())
}

/// The search tool's arguments, as every provider but Gemini gets them.
fn search_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What the tool should do, in a few words, or a tool's name."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many tools to return (default 5)."},
        },
        "required": ["query"],
        "additionalProperties": false,
    })
}

const SEARCH_DESCRIPTION: &str = "Search for more tools. Many tools are not listed until found: describe in a few words what you want to do (for example \"create a calendar event\" or \"read a row of a spreadsheet\"), and the best matching tools become available to call.";

/// Writes `value` to `$CATALOG_SHAPES_DIR/<name>.json` when set, for
/// `scripts/check-catalog-shapes.sh` to check against the providers' Python SDK types.
fn export(name: &str, value: &Value) {
    if let Some(dir) = std::env::var_os("CATALOG_SHAPES_DIR") {
        let path = std::path::Path::new(&dir).join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    }
}

fn string_object(property: &str, description: &str) -> Value {
    object(property, description)
}

#[test]
fn openai_responses_defers_functions_groups_a_server_in_a_namespace_and_offers_a_client_search() {
    let catalog = Catalog::new(registry());
    let definitions = definitions(&catalog, Provider::OpenAiResponses, &LoadedTools::new());
    export("openai_responses_tools", &definitions);
    assert_eq!(
        definitions,
        json!([
            {"type": "function", "name": "read_file", "description": "Read a file.",
             "parameters": string_object("path", "File path."), "strict": false},
            {"type": "function", "name": "create_invoice", "description": "Create an invoice for a customer.",
             "parameters": string_object("customer", "Customer id."), "strict": false, "defer_loading": true},
            {"type": "namespace", "name": "github",
             "description": "Tools of the MCP server `github`: create_issue, list_issues.",
             "tools": [
                {"type": "function", "name": "github__create_issue", "description": "Open an issue in a repository.",
                 "parameters": string_object("title", "Issue title."), "strict": false, "defer_loading": true},
                {"type": "function", "name": "github__list_issues", "description": "List the open issues of a repository.",
                 "parameters": {"type": "object"}, "strict": false, "defer_loading": true},
             ]},
            {"type": "tool_search", "execution": "client", "description": SEARCH_DESCRIPTION, "parameters": search_schema()},
        ])
    );
    // A search changes nothing in the request: the found tools come back in the conversation.
    let loaded: LoadedTools = ["create_invoice"].into_iter().collect();
    assert_eq!(super_definitions(&catalog, Provider::OpenAiResponses, &loaded), definitions);
}

fn super_definitions(catalog: &Catalog, provider: Provider, loaded: &LoadedTools) -> Value {
    self::definitions(catalog, provider, loaded)
}

#[test]
fn anthropic_defers_tools_and_offers_the_search_tool_which_is_not_deferred() {
    let catalog = Catalog::new(registry());
    let definitions = definitions(&catalog, Provider::Anthropic, &LoadedTools::new());
    export("anthropic_tools", &definitions);
    assert_eq!(
        definitions,
        json!([
            {"name": "read_file", "description": "Read a file.", "input_schema": string_object("path", "File path.")},
            {"name": "create_invoice", "description": "Create an invoice for a customer.",
             "input_schema": string_object("customer", "Customer id."), "defer_loading": true},
            {"name": "github__create_issue", "description": "Open an issue in a repository.",
             "input_schema": string_object("title", "Issue title."), "defer_loading": true},
            {"name": "github__list_issues", "description": "List the open issues of a repository.",
             "input_schema": {"type": "object"}, "defer_loading": true},
            {"name": "tool_search", "description": SEARCH_DESCRIPTION, "input_schema": search_schema()},
        ])
    );
}

#[test]
fn hosted_search_uses_the_providers_own_search_tools() {
    let catalog = Catalog::new(registry()).with_search_mode(SearchMode::Hosted);
    let responses = definitions(&catalog, Provider::OpenAiResponses, &LoadedTools::new());
    assert_eq!(responses.as_array().unwrap().last(), Some(&json!({"type": "tool_search"})));
    export("openai_responses_tools_hosted", &responses);
    let anthropic = definitions(&catalog, Provider::Anthropic, &LoadedTools::new());
    assert_eq!(
        anthropic.as_array().unwrap().last(),
        Some(&json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}))
    );
    export("anthropic_tools_hosted", &anthropic);
    // Chat Completions has no hosted search: ours stays.
    let chat = definitions(&catalog, Provider::OpenAiChat, &LoadedTools::new());
    assert_eq!(chat[1]["function"]["name"], "tool_search");
}

fn chat_names(definitions: &Value) -> Vec<&str> {
    definitions.as_array().unwrap().iter().map(|d| d["function"]["name"].as_str().unwrap()).collect()
}

#[test]
fn chat_and_gemini_add_found_tools_at_the_end_in_the_order_found() {
    let catalog = Catalog::new(registry());
    let mut loaded = LoadedTools::new();
    let first = definitions(&catalog, Provider::OpenAiChat, &loaded);
    assert_eq!(
        first,
        json!([
            {"type": "function", "function": {"name": "read_file", "description": "Read a file.",
             "parameters": string_object("path", "File path.")}},
            {"type": "function", "function": {"name": "tool_search", "description": SEARCH_DESCRIPTION,
             "parameters": search_schema()}},
        ])
    );
    export("openai_chat_tools", &first);
    loaded.load(["github__list_issues"]);
    let second = definitions(&catalog, Provider::OpenAiChat, &loaded);
    loaded.load(["create_invoice", "github__list_issues"]);
    let third = definitions(&catalog, Provider::OpenAiChat, &loaded);
    assert_eq!(chat_names(&third), ["read_file", "tool_search", "github__list_issues", "create_invoice"]);
    // Every request starts with the previous one's definitions: the prompt cache survives.
    assert_eq!(third.as_array().unwrap()[..2], first.as_array().unwrap()[..]);
    assert_eq!(third.as_array().unwrap()[..3], second.as_array().unwrap()[..]);

    let gemini = definitions(&catalog, Provider::Gemini, &loaded);
    export("gemini_function_declarations", &gemini);
    assert_eq!(
        gemini,
        json!([
            {"name": "read_file", "description": "Read a file.", "parameters": {
                "type": "OBJECT", "properties": {"path": {"type": "STRING", "description": "File path."}}, "required": ["path"]}},
            {"name": "tool_search", "description": SEARCH_DESCRIPTION, "parameters": {
                "type": "OBJECT",
                "properties": {
                    "query": {"type": "STRING", "description": "What the tool should do, in a few words, or a tool's name."},
                    "limit": {"type": "INTEGER", "minimum": 1, "maximum": 20, "description": "How many tools to return (default 5)."},
                },
                "required": ["query"]}},
            {"name": "github__list_issues", "description": "List the open issues of a repository."},
            {"name": "create_invoice", "description": "Create an invoice for a customer.", "parameters": {
                "type": "OBJECT", "properties": {"customer": {"type": "STRING", "description": "Customer id."}}, "required": ["customer"]}},
        ])
    );
}

#[test]
fn mcp_and_catalogs_without_deferred_tools_get_the_plain_definitions() {
    let registry = std::sync::Arc::new(registry());
    let catalog = Catalog::new(registry.clone());
    let plain = Value::Array(Provider::Mcp.definitions(&registry, &DefinitionOptions::default()).unwrap());
    assert_eq!(definitions(&catalog, Provider::Mcp, &LoadedTools::new()), plain);

    let nothing_deferred = Registry::builder()
        .tool(tool(ToolSpec::new("read_file", "Read a file.", object("path", "File path."))))
        .build()
        .unwrap();
    let plain = Value::Array(
        Provider::Anthropic.definitions(&nothing_deferred, &DefinitionOptions::default()).unwrap(),
    );
    let catalog = Catalog::new(nothing_deferred);
    assert!(!catalog.has_deferred());
    assert_eq!(definitions(&catalog, Provider::Anthropic, &LoadedTools::new()), plain);
}

#[test]
fn a_registry_tool_named_tool_search_is_an_error_naming_it() {
    let registry = Registry::builder()
        .tool(tool(ToolSpec::new("tool_search", "Mine.", json!({"type": "object"}))))
        .tool(tool(ToolSpec::new("other", "Other.", json!({"type": "object"})).with_defer(true)))
        .build()
        .unwrap();
    let catalog = Catalog::new(registry);
    let error = catalog
        .definitions(Provider::OpenAiChat, &LoadedTools::new(), &DefinitionOptions::default())
        .unwrap_err();
    assert_eq!(error.tool, "tool_search");
    assert!(error.to_string().contains("rename it"), "{error}");
    // The hosted search needs no tool of ours.
    let hosted = catalog.with_search_mode(SearchMode::Hosted);
    assert!(
        hosted.definitions(Provider::Anthropic, &LoadedTools::new(), &DefinitionOptions::default()).is_ok()
    );
}

#[test]
fn defer_names_unknown_tools() {
    let error = Catalog::new(registry()).defer(["read_fil"]).unwrap_err();
    assert_eq!(error.name, "read_fil");
    assert!(error.message.contains("read_file"), "{}", error.message);
    let catalog = Catalog::new(registry()).defer(["read_file"]).unwrap();
    assert!(catalog.is_deferred("read_file"));
}

/// A turn with a search and an ordinary call, answered in each provider's form.
fn answered(catalog: &Catalog, provider: Provider, message: Value) -> (Vec<TurnCall>, Value) {
    let calls = catalog.parse_turn(provider, &message).unwrap();
    let mut loaded = LoadedTools::new();
    let results: Vec<TurnResult> = calls
        .iter()
        .map(|call| match call {
            TurnCall::Search { id, arguments } => {
                TurnResult::Search(catalog.answer_search(id, arguments, &mut loaded))
            }
            TurnCall::Tool(call) => TurnResult::Tool(ToolResult {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                output: ToolOutput::text("contents"),
                freeform: false,
            }),
        })
        .collect();
    let rendered = catalog.render_turn(provider, &results, &DefinitionOptions::default()).unwrap();
    (calls, Value::Array(rendered))
}

#[test]
fn anthropic_search_answers_are_tool_references() {
    let catalog = Catalog::new(registry());
    let message = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "tool_search", "input": {"query": "create a new github issue", "limit": 2}},
        {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "a"}},
        {"type": "tool_use", "id": "toolu_3", "name": "tool_search", "input": {"query": "weather forecast"}},
        {"type": "tool_use", "id": "toolu_4", "name": "tool_search", "input": {}},
    ]});
    let (calls, rendered) = answered(&catalog, Provider::Anthropic, message);
    assert!(matches!(&calls[0], TurnCall::Search { id, .. } if id == "toolu_1"));
    assert!(matches!(&calls[1], TurnCall::Tool(call) if call.name == "read_file"));
    export("anthropic_search_answer", &rendered);
    assert_eq!(
        rendered,
        json!([{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                {"type": "tool_reference", "tool_name": "github__create_issue"},
                {"type": "tool_reference", "tool_name": "github__list_issues"},
            ]},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "contents"},
            {"type": "tool_result", "tool_use_id": "toolu_3",
             "content": "No tool matches \"weather forecast\". Search again with other words: what the tool should do, or the kind of thing it works on."},
            {"type": "tool_result", "tool_use_id": "toolu_4",
             "content": "`query` is missing; call it with {\"query\": \"what the tool should do\"} and optionally \"limit\"",
             "is_error": true},
        ]}])
    );
}

#[test]
fn a_huge_search_query_is_quoted_200_characters_long() {
    let catalog = Catalog::new(registry());
    let query = "z".repeat(10_000_000);
    let message = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "tool_search", "input": {"query": query}},
    ]});
    let (_, rendered) = answered(&catalog, Provider::Anthropic, message);
    assert_eq!(
        rendered[0]["content"][0]["content"],
        json!(format!(
            "No tool matches \"{}\"… (9999800 more characters). Search again with other words: what the tool should \
             do, or the kind of thing it works on.",
            "z".repeat(200)
        ))
    );
}

#[test]
fn openai_responses_client_search_is_answered_with_a_tool_search_output() {
    let catalog = Catalog::new(registry());
    let message = json!({"output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "tool_search_call", "id": "ts_1", "call_id": "call_search", "execution": "client",
         "status": "completed", "arguments": {"query": "invoice a customer"}},
        {"type": "tool_search_call", "id": "ts_2", "call_id": null, "execution": "server",
         "status": "completed", "arguments": {"paths": ["github"]}},
        {"type": "function_call", "id": "fc_1", "call_id": "call_read", "name": "read_file", "arguments": "{\"path\": \"a\"}"},
        {"type": "tool_search_call", "id": "ts_3", "call_id": "call_gh", "execution": "client",
         "status": "completed", "arguments": {"query": "list issues", "limit": 1}},
    ]});
    let (calls, rendered) = answered(&catalog, Provider::OpenAiResponses, message);
    assert_eq!(calls.len(), 3, "the hosted search is OpenAI's own: {calls:?}");
    export("openai_responses_search_answer", &rendered);
    assert_eq!(
        rendered,
        json!([
            {"type": "tool_search_output", "call_id": "call_search", "execution": "client", "status": "completed",
             "tools": [
                {"type": "function", "name": "create_invoice", "description": "Create an invoice for a customer.",
                 "parameters": string_object("customer", "Customer id."), "strict": false, "defer_loading": true},
             ]},
            {"type": "function_call_output", "call_id": "call_read", "output": "contents"},
            {"type": "tool_search_output", "call_id": "call_gh", "execution": "client", "status": "completed",
             "tools": [
                {"type": "namespace", "name": "github", "description": "Tools of the MCP server `github`: list_issues.",
                 "tools": [
                    {"type": "function", "name": "github__list_issues", "description": "List the open issues of a repository.",
                     "parameters": {"type": "object"}, "strict": false, "defer_loading": true},
                 ]},
             ]},
        ])
    );
}

#[test]
fn chat_and_gemini_search_answers_name_the_found_tools() {
    let catalog = Catalog::new(registry());
    let message = json!({"role": "assistant", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "tool_search", "arguments": "{\"query\": \"bill a customer with an invoice\", \"limit\": 1}"}},
    ]});
    let (_, rendered) = answered(&catalog, Provider::OpenAiChat, message);
    assert_eq!(
        rendered,
        json!([{"role": "tool", "tool_call_id": "call_1",
                "content": "Found 1 tool for \"bill a customer with an invoice\"; it can be called now:\n- create_invoice: Create an invoice for a customer."}])
    );

    let message = json!({"role": "model", "parts": [
        {"functionCall": {"name": "tool_search", "args": {"query": "github issues"}}},
    ]});
    let (_, rendered) = answered(&catalog, Provider::Gemini, message);
    export("gemini_search_answer", &rendered);
    assert_eq!(
        rendered[0]["parts"][0]["functionResponse"]["response"],
        json!({"output": "Found 2 tools for \"github issues\"; they can be called now:\n- github__list_issues: List the open issues of a repository.\n- github__create_issue: Open an issue in a repository."})
    );
}
