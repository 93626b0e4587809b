//! Freeform tools: declared with `#[tool(freeform(...))]`, offered to OpenAI Responses as
//! `custom` tools with their grammar and to every other provider as a function with one string
//! argument; a `custom_tool_call` runs through the dispatcher and is answered with a
//! `custom_tool_call_output`. The definitions and items are compared whole (goldens).

use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::providers::{DefinitionOptions, Provider, openai_responses};
use tool_runtime::{
    Arguments, CancellationToken, Dispatcher, ErrorKind, Registry, ToolCall, ToolContext, ToolError,
    context::Dependencies,
    spec::{Freeform, Grammar, GrammarSyntax},
    tool,
};
use tool_tests::TempDir;
use tools_std::Workspace;

/// Evaluate a sum such as `1+2-3`.
#[tool(parallel, read_only, freeform(grammar = "start: /[0-9]+([+-][0-9]+)*/"))]
async fn sum(
    /// The expression.
    expression: String,
) -> Result<String, ToolError> {
    let mut total = 0i64;
    let mut sign = 1;
    let mut number = String::new();
    for c in expression.trim().chars().chain(['+']) {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        total += sign * number.parse::<i64>().map_err(|_| ToolError::invalid_arguments("not a sum"))?;
        number.clear();
        sign = if c == '-' { -1 } else { 1 };
    }
    Ok(total.to_string())
}

/// Echo text back.
#[tool(freeform)]
async fn echo_text(
    /// The text.
    #[arg(rename = "input")]
    text: String,
) -> String {
    text
}

/// Evaluate an expression, grammar from a file.
#[tool(freeform(grammar_file = "data/expr.lark", syntax = "lark"))]
async fn expr(
    /// The expression.
    source: String,
) -> String {
    source
}

/// Match a word.
#[tool(freeform(grammar = "^[a-z]+$", syntax = "regex"))]
async fn word(
    /// The word.
    word: String,
) -> String {
    word
}

fn definition(provider: Provider, registry: &Registry, name: &str) -> Value {
    let spec = registry.get(name).unwrap().spec();
    provider.definition(spec, &DefinitionOptions::default()).unwrap()
}

#[test]
fn the_macro_declares_freeform_tools_with_their_grammar() {
    let registry = Registry::builder().tools([
        Arc::new(SumTool) as Arc<dyn tool_runtime::Tool>,
        Arc::new(EchoTextTool),
        Arc::new(ExprTool),
        Arc::new(WordTool),
    ]);
    let registry = registry.build().unwrap();
    let spec = registry.get("sum").unwrap().spec();
    assert_eq!(
        spec.freeform,
        Some(Freeform::new("expression").with_grammar(Grammar::lark("start: /[0-9]+([+-][0-9]+)*/")))
    );
    assert_eq!(registry.get("echo_text").unwrap().spec().freeform, Some(Freeform::new("input")));
    let expr = registry.get("expr").unwrap().spec().freeform.clone().unwrap();
    assert_eq!(expr.grammar, Some(Grammar::lark(include_str!("../../data/expr.lark"))));
    let word = registry.get("word").unwrap().spec().freeform.clone().unwrap();
    assert_eq!(word.grammar.map(|g| g.syntax), Some(GrammarSyntax::Regex));

    assert_eq!(
        definition(Provider::OpenAiResponses, &registry, "sum"),
        json!({
            "type": "custom",
            "name": "sum",
            "description": "Evaluate a sum such as `1+2-3`.",
            "format": {"type": "grammar", "syntax": "lark", "definition": "start: /[0-9]+([+-][0-9]+)*/"},
        })
    );
    assert_eq!(
        definition(Provider::OpenAiResponses, &registry, "echo_text"),
        json!({"type": "custom", "name": "echo_text", "description": "Echo text back.", "format": {"type": "text"}})
    );
    assert_eq!(
        definition(Provider::OpenAiResponses, &registry, "word")["format"],
        json!({"type": "grammar", "syntax": "regex", "definition": "^[a-z]+$"})
    );
    // Every other provider sees a function with the one string argument.
    assert_eq!(
        definition(Provider::OpenAiChat, &registry, "echo_text"),
        json!({"type": "function", "function": {
            "name": "echo_text",
            "description": "Echo text back.",
            "parameters": {
                "type": "object",
                "properties": {"input": {"type": "string", "description": "The text."}},
                "required": ["input"],
                "additionalProperties": false,
            },
        }})
    );
    assert_eq!(
        definition(Provider::Anthropic, &registry, "echo_text"),
        json!({
            "name": "echo_text",
            "description": "Echo text back.",
            "input_schema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {"input": {"type": "string", "description": "The text."}},
                "required": ["input"],
                "additionalProperties": false,
            },
        })
    );
}

#[test]
fn apply_patch_definitions_for_each_provider() {
    let registry = Registry::builder().tools(tools_std::all()).allow(["apply_patch"]).build().unwrap();
    let spec = registry.get("apply_patch").unwrap().spec();
    let responses = definition(Provider::OpenAiResponses, &registry, "apply_patch");
    assert_eq!(
        responses,
        json!({
            "type": "custom",
            "name": "apply_patch",
            "description": spec.description,
            "format": {"type": "grammar", "syntax": "lark", "definition": tools_std::apply_patch::GRAMMAR},
        })
    );
    assert!(
        spec.description
            .starts_with("Edit files with a patch: add, delete, move and update several files in one call.")
    );
    assert!(tools_std::apply_patch::GRAMMAR.contains("start: begin_patch file_op+ end_patch"));
    let chat = definition(Provider::OpenAiChat, &registry, "apply_patch");
    assert_eq!(chat["function"]["parameters"]["required"], json!(["patch"]));
    assert_eq!(chat["function"]["parameters"]["properties"]["patch"]["type"], json!("string"));
    // Strict mode too: still a `custom` tool (grammars are their own constraint).
    let strict = Provider::OpenAiResponses.definition(spec, &DefinitionOptions::strict()).unwrap();
    assert_eq!(strict, responses);
}

#[test]
fn custom_tool_call_items_parse_to_freeform_arguments() {
    let response = json!({"output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_P", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch", "status": "completed"},
        {"type": "function_call", "id": "fc_2", "call_id": "call_F", "name": "read", "arguments": "{\"path\":\"a\"}"},
    ]});
    let calls = openai_responses::parse_tool_calls(&response).unwrap();
    assert_eq!(
        calls,
        vec![
            ToolCall::new("call_P", "apply_patch", Arguments::freeform("*** Begin Patch\n*** End Patch")),
            ToolCall::new("call_F", "read", r#"{"path":"a"}"#),
        ]
    );
    let bad = json!({"type": "custom_tool_call", "call_id": "c", "name": "x", "input": {"a": 1}});
    assert_eq!(
        openai_responses::parse_tool_calls(&bad).unwrap_err().to_string(),
        "invalid OpenAI Responses message: `input` must be a string, found an object"
    );
}

/// A Responses turn with a `custom_tool_call` of `apply_patch` and a `function_call` of `read`,
/// through the dispatcher: the patch is applied and the two results come back as a
/// `custom_tool_call_output` and a `function_call_output`.
#[test]
fn a_custom_tool_call_runs_and_is_answered_with_a_custom_tool_call_output() {
    let dir = TempDir::new("freeform");
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let mut deps = Dependencies::new();
    deps.insert(Workspace::new(dir.path()).unwrap());
    let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
    let dispatcher = Dispatcher::builder(registry).dependencies(deps).build();
    let response = json!({"output": [
        {"type": "custom_tool_call", "call_id": "call_1", "name": "apply_patch",
         "input": "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+2\n*** End Patch\n"},
        {"type": "custom_tool_call", "call_id": "call_2", "name": "read", "input": "a.txt"},
    ]});
    let calls = openai_responses::parse_tool_calls(&response).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let results = runtime.block_on(dispatcher.run_batch(calls, CancellationToken::new())).unwrap();
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "one\n2\n");
    let items = openai_responses::render_results(&results);
    assert_eq!(
        items,
        vec![
            json!({"type": "custom_tool_call_output", "call_id": "call_1",
                   "output": "Success. Updated the following files:\nM a.txt (1 hunk)"}),
            json!({"type": "custom_tool_call_output", "call_id": "call_2",
                   "output": "Error: `read` takes JSON arguments, not free-form text. Call it as a function with a JSON object of its arguments."}),
        ]
    );
    // The same tool called as a function gets a function result.
    let call = ToolCall::new(
        "call_3",
        "apply_patch",
        json!({"patch": "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch"}),
    );
    let results = runtime.block_on(dispatcher.run_batch(vec![call], CancellationToken::new())).unwrap();
    assert_eq!(
        openai_responses::render_results(&results),
        vec![json!({"type": "function_call_output", "call_id": "call_3",
                    "output": "Success. Updated the following files:\nD a.txt"})]
    );
    assert!(!dir.path().join("a.txt").exists());
}

#[test]
fn freeform_text_validates_like_the_argument_it_becomes() {
    let registry =
        Registry::builder().tools([Arc::new(SumTool) as Arc<dyn tool_runtime::Tool>]).build().unwrap();
    let ctx = ToolContext::builder("sum").build();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let out = runtime.block_on(registry.call("sum", Arguments::freeform("40+3-1"), ctx.clone())).unwrap();
    assert_eq!(out.text_content(), "42");
    let out = runtime.block_on(registry.call("sum", r#"{"expression": "1+1"}"#, ctx)).unwrap();
    assert_eq!(out.text_content(), "2");
    let _ = ErrorKind::InvalidArguments;
}
