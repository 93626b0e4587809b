//! One turn over a catalog: the model's search calls answered here, its other calls run by the
//! dispatcher, and every result rendered in the model's order.

use serde_json::{Value, json};

use super::request::{SearchRequest, SearchRequestError, TOOL_SEARCH};
use super::{Catalog, LoadedTools};
use crate::{DefinitionOptions, LoweringError, ParseError, Provider};
use tool_core::CancellationToken;
use tool_core::ToolError;
use tool_core::{Arguments, ToolCall, ToolResult};
use tool_core::{CallOptions, Dispatcher};

/// One call of an assistant message.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnCall {
    /// A call of a registry tool, for the dispatcher.
    Tool(ToolCall),
    /// A tool search for the catalog to answer: a `tool_search` call, or OpenAI Responses'
    /// client-executed `tool_search_call`.
    Search {
        /// The call id to answer.
        id: String,
        /// The call's arguments as sent (an object, or JSON text).
        arguments: Value,
    },
}

/// The answer to one search call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchOutcome {
    /// The call id it answers.
    pub call_id: String,
    /// What was searched for (empty when the arguments could not be read).
    pub query: String,
    /// The found tools, best first; or what was wrong with the call, for the model.
    pub found: Result<Vec<String>, SearchRequestError>,
}

/// One result of a turn, in the order of the calls.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnResult {
    /// A registry tool's result.
    Tool(ToolResult),
    /// A search's answer.
    Search(SearchOutcome),
}

impl Catalog {
    /// The calls of one assistant message in `provider`'s format, in order, searches told
    /// apart. A call named `tool_search` is a search unless the registry has a tool of that name.
    pub fn parse_turn(&self, provider: Provider, message: &Value) -> Result<Vec<TurnCall>, ParseError> {
        // The provider's parser checks the whole message (and reports a mistake with its place).
        let calls = provider.parse_tool_calls(message)?;
        let ours = !self.registry.contains(TOOL_SEARCH);
        let mut turn: Vec<TurnCall> = Vec::with_capacity(calls.len());
        if provider == Provider::OpenAiResponses {
            let mut calls = calls.into_iter();
            for item in responses_items(message) {
                match item.get("type").and_then(Value::as_str) {
                    Some("tool_search_call") => {
                        // A hosted search ran at OpenAI already; only a client one is ours.
                        if item.get("execution").and_then(Value::as_str) == Some("server") {
                            continue;
                        }
                        let id = item
                            .get("call_id")
                            .and_then(Value::as_str)
                            .or_else(|| item.get("id").and_then(Value::as_str))
                            .unwrap_or_default();
                        let arguments = item.get("arguments").cloned().unwrap_or_else(|| json!({}));
                        turn.push(TurnCall::Search { id: id.to_owned(), arguments });
                    }
                    Some("function_call" | "custom_tool_call") => {
                        turn.extend(calls.next().map(|call| self.classify(call, ours)));
                    }
                    _ => {}
                }
            }
            return Ok(turn);
        }
        Ok(calls.into_iter().map(|call| self.classify(call, ours)).collect())
    }

    fn classify(&self, call: ToolCall, ours: bool) -> TurnCall {
        if !ours || call.name != TOOL_SEARCH {
            return TurnCall::Tool(call);
        }
        let arguments = match call.arguments {
            Arguments::Json(value) => value,
            other => Value::String(other.to_text().into_owned()),
        };
        TurnCall::Search { id: call.id, arguments }
    }

    /// Answers one search call, and records what it found in `loaded`.
    pub fn answer_search(&self, call_id: &str, arguments: &Value, loaded: &mut LoadedTools) -> SearchOutcome {
        match SearchRequest::from_arguments(arguments) {
            Ok(request) => {
                let found: Vec<String> = self.search(&request).iter().map(|spec| spec.name.clone()).collect();
                loaded.load(found.iter().cloned());
                SearchOutcome { call_id: call_id.to_owned(), query: request.query, found: Ok(found) }
            }
            Err(error) => {
                SearchOutcome { call_id: call_id.to_owned(), query: String::new(), found: Err(error) }
            }
        }
    }

    /// Runs one turn: the searches here, the other calls through `dispatcher` as one batch (its
    /// parallel policy applies), the results in the calls' order. Only a fatal error of the
    /// batch stops it.
    pub async fn run_turn(
        &self,
        dispatcher: &Dispatcher,
        calls: Vec<TurnCall>,
        loaded: &mut LoadedTools,
        cancel: CancellationToken,
    ) -> Result<Vec<TurnResult>, ToolError> {
        self.run_turn_with(dispatcher, calls, loaded, CallOptions::default(), cancel).await
    }

    /// [`run_turn`](Self::run_turn) with `options` for every call of the turn (its
    /// [`turn`](CallOptions::turn) id, say).
    pub async fn run_turn_with(
        &self,
        dispatcher: &Dispatcher,
        calls: Vec<TurnCall>,
        loaded: &mut LoadedTools,
        options: CallOptions,
        cancel: CancellationToken,
    ) -> Result<Vec<TurnResult>, ToolError> {
        let mut slots: Vec<Option<TurnResult>> = Vec::with_capacity(calls.len());
        let mut batch = Vec::new();
        for call in calls {
            match call {
                TurnCall::Tool(call) => {
                    batch.push(call);
                    slots.push(None);
                }
                TurnCall::Search { id, arguments } => {
                    slots.push(Some(TurnResult::Search(self.answer_search(&id, &arguments, loaded))));
                }
            }
        }
        let mut results = if batch.is_empty() {
            Vec::new().into_iter()
        } else {
            dispatcher
                .run_batch_with(batch.into_iter().map(|call| (call, options.clone())), cancel)
                .await?
                .into_iter()
        };
        Ok(slots
            .into_iter()
            .filter_map(|slot| slot.or_else(|| results.next().map(TurnResult::Tool)))
            .collect())
    }

    /// The messages (or input items) carrying a turn's results back, in `provider`'s format.
    pub fn render_turn(
        &self,
        provider: Provider,
        results: &[TurnResult],
        options: &DefinitionOptions,
    ) -> Result<Vec<Value>, LoweringError> {
        super::deferred::render_results(provider, self, results, options)
    }
}

/// The output items of a Responses message in any of the shapes its parser accepts.
fn responses_items(message: &Value) -> Vec<&Value> {
    match message {
        Value::Array(items) => items.iter().collect(),
        Value::Object(object) => match object.get("output") {
            Some(Value::Array(items)) => items.iter().collect(),
            Some(_) => Vec::new(),
            None => vec![message],
        },
        _ => Vec::new(),
    }
}
