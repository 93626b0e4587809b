//! Each provider's deferred form of a catalog's definitions, and of a tool search's answer.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::catalog::{self, Catalog, LoadedTools, SearchMode, SearchOutcome, TOOL_SEARCH, TurnResult};
use crate::{
    DefinitionOptions, LoweringError, Provider, anthropic, extras, gemini, mcp, openai_chat, openai_responses,
};
use tool_core::ToolOutput;
use tool_core::ToolResult;
use tool_core::ToolSpec;

/// Anthropic's hosted BM25 search tool: its `type` and its fixed `name`.
pub(crate) const ANTHROPIC_BM25_TYPE: &str = "tool_search_tool_bm25_20251119";
/// The `name` Anthropic fixes for [`ANTHROPIC_BM25_TYPE`].
pub(crate) const ANTHROPIC_BM25_NAME: &str = "tool_search_tool_bm25";
/// How many tool names a namespace's description lists.
const NAMESPACE_LISTED: usize = 12;

/// See [`Catalog::definitions`].
pub(crate) fn definitions(
    provider: Provider,
    catalog: &Catalog,
    loaded: &LoadedTools,
    options: &DefinitionOptions,
) -> Result<Vec<Value>, LoweringError> {
    let registry = catalog.registry();
    if !catalog.has_deferred() || provider == Provider::Mcp {
        return provider.definitions(registry, options);
    }
    let hosted = catalog.search_mode() == SearchMode::Hosted
        && matches!(provider, Provider::OpenAiResponses | Provider::Anthropic);
    if !hosted && registry.contains(TOOL_SEARCH) {
        return Err(LoweringError {
            provider,
            strict: options.strict,
            tool: TOOL_SEARCH.to_owned(),
            location: String::new(),
            reason: format!(
                "a tool of the registry is named `{TOOL_SEARCH}`, the name of the tool search that finds deferred tools; rename it, or use the provider's hosted search"
            ),
        });
    }
    match provider {
        Provider::OpenAiChat | Provider::Gemini => {
            let visible = catalog.visible(loaded);
            let always = catalog.tools().filter(|(_, deferred)| !deferred).count();
            let mut out = Vec::with_capacity(visible.len() + 1);
            for (i, spec) in visible.into_iter().enumerate() {
                if i == always {
                    out.push(provider.definition(&Catalog::search_tool_spec(), options)?);
                }
                out.push(provider.definition(spec, options)?);
            }
            if out.len() == always {
                out.push(provider.definition(&Catalog::search_tool_spec(), options)?);
            }
            Ok(out)
        }
        Provider::Anthropic => {
            let mut out = Vec::with_capacity(registry.len() + 1);
            for (spec, deferred) in catalog.tools() {
                let mut definition = anthropic::definition(spec, options)?;
                if deferred {
                    definition["defer_loading"] = json!(true);
                }
                out.push(definition);
            }
            out.push(if hosted {
                json!({ "type": ANTHROPIC_BM25_TYPE, "name": ANTHROPIC_BM25_NAME })
            } else {
                anthropic::definition(&Catalog::search_tool_spec(), options)?
            });
            if options.anthropic_cache_control {
                extras::anthropic_cache_breakpoint(&mut out);
            }
            Ok(out)
        }
        Provider::OpenAiResponses => {
            let mut out = responses_grouped(catalog.tools(), options)?;
            out.push(if hosted {
                json!({ "type": "tool_search" })
            } else {
                json!({
                    "type": "tool_search",
                    "execution": "client",
                    "description": catalog::DESCRIPTION,
                    "parameters": catalog::input_schema(),
                })
            });
            Ok(out)
        }
        // Returned above: MCP has no deferred form, and gets every tool in full.
        Provider::Mcp => provider.definitions(registry, options),
    }
}

/// Responses definitions of `tools` in order: a deferred tool carries `"defer_loading": true`,
/// and the deferred tools of one mounted server go into one `namespace` entry, placed where its
/// first tool is. The functions in a namespace keep their full names, so that a call names the
/// registry's tool whether or not its `namespace` is read.
fn responses_grouped<'a>(
    tools: impl Iterator<Item = (&'a ToolSpec, bool)>,
    options: &DefinitionOptions,
) -> Result<Vec<Value>, LoweringError> {
    let mut out: Vec<Value> = Vec::new();
    let mut namespaces: HashMap<&str, (usize, Vec<&str>)> = HashMap::new();
    for (spec, deferred) in tools {
        let mut definition = openai_responses::definition(spec, options)?;
        if !deferred {
            out.push(definition);
            continue;
        }
        definition["defer_loading"] = json!(true);
        match catalog::namespace(spec) {
            Some(server) => {
                let (position, members) = namespaces.entry(server).or_insert_with(|| {
                    out.push(json!({ "type": "namespace", "name": server, "tools": [] }));
                    (out.len() - 1, Vec::new())
                });
                members.push(&spec.name);
                if let Some(Value::Array(tools)) = out[*position].get_mut("tools") {
                    tools.push(definition);
                }
            }
            None => out.push(definition),
        }
    }
    for (server, (position, members)) in namespaces {
        let shown: Vec<&str> = members
            .iter()
            .take(NAMESPACE_LISTED)
            .map(|name| name.strip_prefix(&format!("{server}__")).unwrap_or(name))
            .collect();
        let more = members.len().saturating_sub(NAMESPACE_LISTED);
        let rest = if more > 0 { format!(", and {more} more") } else { String::new() };
        let description = format!("Tools of the MCP server `{server}`: {}{rest}.", shown.join(", "));
        if let Value::Object(entry) = &mut out[position] {
            // `type`, `name`, `description`, `tools`: the order of the API's own examples.
            let tools = entry.remove("tools").unwrap_or_else(|| json!([]));
            entry.insert("description".to_owned(), json!(description));
            entry.insert("tools".to_owned(), tools);
        }
    }
    Ok(out)
}

/// See [`Catalog::render_turn`].
pub(crate) fn render_results(
    provider: Provider,
    catalog: &Catalog,
    results: &[TurnResult],
    options: &DefinitionOptions,
) -> Result<Vec<Value>, LoweringError> {
    let as_text = |result: &TurnResult| match result {
        TurnResult::Tool(result) => result.clone(),
        TurnResult::Search(outcome) => text_result(catalog, outcome),
    };
    match provider {
        Provider::OpenAiChat => Ok(results.iter().map(|r| openai_chat::render_result(&as_text(r))).collect()),
        Provider::Gemini => Ok(gemini::render_results(&results.iter().map(as_text).collect::<Vec<_>>())),
        Provider::Mcp => Ok(mcp::render_results(&results.iter().map(as_text).collect::<Vec<_>>())),
        Provider::Anthropic => {
            if results.is_empty() {
                return Ok(Vec::new());
            }
            let blocks: Vec<Value> = results
                .iter()
                .map(|result| match result {
                    TurnResult::Search(SearchOutcome { call_id, found: Ok(found), .. })
                        if !found.is_empty() =>
                    {
                        let references: Vec<Value> = found
                            .iter()
                            .map(|name| json!({ "type": "tool_reference", "tool_name": name }))
                            .collect();
                        json!({ "type": "tool_result", "tool_use_id": call_id, "content": references })
                    }
                    other => anthropic::render_block(&as_text(other)),
                })
                .collect();
            Ok(vec![json!({ "role": "user", "content": blocks })])
        }
        Provider::OpenAiResponses => results
            .iter()
            .map(|result| match result {
                TurnResult::Tool(result) => Ok(openai_responses::render_result(result)),
                TurnResult::Search(outcome) => responses_search_output(catalog, outcome, options),
            })
            .collect(),
    }
}

/// The `tool_search_output` item answering a client-executed search: the found tools'
/// definitions (with `defer_loading`, grouped by namespace as in the request). A search that
/// found nothing, or could not be read, loads no tool.
fn responses_search_output(
    catalog: &Catalog,
    outcome: &SearchOutcome,
    options: &DefinitionOptions,
) -> Result<Value, LoweringError> {
    let found: Vec<(&ToolSpec, bool)> = outcome
        .found
        .iter()
        .flatten()
        .filter_map(|name| catalog.registry().get(name))
        .map(|tool| (tool.spec(), true))
        .collect();
    let tools = responses_grouped(found.into_iter(), options)?;
    Ok(json!({
        "type": "tool_search_output",
        "call_id": outcome.call_id,
        "execution": "client",
        "status": "completed",
        "tools": tools,
    }))
}

/// A search's answer as a text result: the found tools with one line each, or what to do.
fn text_result(catalog: &Catalog, outcome: &SearchOutcome) -> ToolResult {
    let output = match &outcome.found {
        Err(error) => ToolOutput::error(error.to_string()),
        Ok(found) if found.is_empty() => ToolOutput::text(format!(
            "No tool matches {}. Search again with other words: what the tool should do, or the kind of thing it works on.",
            tool_core::words::quote(&outcome.query)
        )),
        Ok(found) => {
            let mut text = format!(
                "Found {} for {}; {} can be called now:",
                tool_core::words::plural(found.len() as u64, "tool"),
                tool_core::words::quote(&outcome.query),
                if found.len() == 1 { "it" } else { "they" },
            );
            for name in found {
                let summary = catalog
                    .registry()
                    .get(name)
                    .map(|tool| summary(&tool.spec().description))
                    .unwrap_or_default();
                text.push_str(&format!("\n- {name}: {summary}"));
            }
            ToolOutput::text(text)
        }
    };
    ToolResult { call_id: outcome.call_id.clone(), tool: TOOL_SEARCH.to_owned(), output, freeform: false }
}

/// The first sentence of a description's first paragraph, cut at 160 characters.
fn summary(description: &str) -> String {
    let paragraph: Vec<&str> = description
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    let paragraph = paragraph.join(" ");
    let sentence = match paragraph.find(". ") {
        Some(end) => &paragraph[..=end],
        None => paragraph.as_str(),
    };
    match sentence.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", &sentence[..cut]),
        None => sentence.to_owned(),
    }
}
