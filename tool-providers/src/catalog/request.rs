//! The client-side `tool_search` tool: its name, description and arguments.

use serde_json::{Value, json};

/// The name of the client-side search tool.
pub const TOOL_SEARCH: &str = "tool_search";
/// Tools a search returns when the call gives no `limit`.
pub const DEFAULT_LIMIT: usize = 5;
/// The most tools one search returns.
pub const MAX_LIMIT: usize = 20;

/// What the search tool tells the model. It does not list the searchable tools, so that it
/// stays the same while tools come and go.
pub const DESCRIPTION: &str = "Search for more tools. Many tools are not listed until found: \
describe in a few words what you want to do (for example \"create a calendar event\" or \"read a \
row of a spreadsheet\"), and the best matching tools become available to call.";

/// The search tool's argument schema: `{"query": string, "limit"?: integer}`.
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What the tool should do, in a few words, or a tool's name.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "description": format!("How many tools to return (default {DEFAULT_LIMIT})."),
            },
        },
        "required": ["query"],
        "additionalProperties": false,
    })
}

/// One search: a query and how many tools to return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    /// What to look for.
    pub query: String,
    /// How many tools to return, 1 to [`MAX_LIMIT`].
    pub limit: usize,
}

impl SearchRequest {
    /// A search for `query` with the default limit.
    pub fn new(query: impl Into<String>) -> Self {
        SearchRequest { query: query.into(), limit: DEFAULT_LIMIT }
    }

    /// Reads the arguments of a search call, as an object or as JSON text. A mistake is a
    /// message for the model saying how to call the tool instead.
    ///
    /// OpenAI's hosted search sends `{"paths": [...], "query"?}`; a call with `paths` and no
    /// `query` searches for the paths' words.
    pub fn from_arguments(arguments: &Value) -> Result<SearchRequest, SearchRequestError> {
        Self::read(arguments).map_err(SearchRequestError)
    }

    fn read(arguments: &Value) -> Result<SearchRequest, String> {
        let parsed;
        let arguments = match arguments {
            Value::String(text) => {
                parsed = serde_json::from_str::<Value>(text).map_err(|e| {
                    format!("the arguments of `{TOOL_SEARCH}` are not valid JSON ({e}); {USAGE}")
                })?;
                &parsed
            }
            other => other,
        };
        let Some(object) = arguments.as_object() else {
            return Err(format!("the arguments of `{TOOL_SEARCH}` must be an object; {USAGE}"));
        };
        let query = match object.get("query") {
            Some(Value::String(query)) if !query.trim().is_empty() => query.trim().to_owned(),
            Some(Value::String(_)) => return Err(format!("`query` is empty; {USAGE}")),
            Some(Value::Null) | None => match object.get("paths").and_then(Value::as_array) {
                Some(paths) if !paths.is_empty() => {
                    paths.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" ")
                }
                _ => return Err(format!("`query` is missing; {USAGE}")),
            },
            Some(_) => return Err(format!("`query` must be a string; {USAGE}")),
        };
        let limit = match object.get("limit") {
            None | Some(Value::Null) => DEFAULT_LIMIT,
            Some(value) => match value
                .as_u64()
                .or_else(|| value.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64))
            {
                Some(n) if (1..=MAX_LIMIT as u64).contains(&n) => n as usize,
                _ => return Err(format!("`limit` must be a whole number from 1 to {MAX_LIMIT}; {USAGE}")),
            },
        };
        Ok(SearchRequest { query, limit })
    }
}

/// Search-call arguments that cannot be read (from [`SearchRequest::from_arguments`]): its text
/// tells the model what is wrong and how to call the tool instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequestError(String);

impl std::fmt::Display for SearchRequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SearchRequestError {}

const USAGE: &str = "call it with {\"query\": \"what the tool should do\"} and optionally \"limit\"";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_objects_text_and_hosted_paths() {
        assert_eq!(
            SearchRequest::from_arguments(&json!({"query": " weather ", "limit": 3})),
            Ok(SearchRequest { query: "weather".into(), limit: 3 })
        );
        assert_eq!(
            SearchRequest::from_arguments(&json!(r#"{"query": "weather"}"#)),
            Ok(SearchRequest::new("weather"))
        );
        assert_eq!(
            SearchRequest::from_arguments(&json!({"paths": ["crm", "list_orders"]})),
            Ok(SearchRequest::new("crm list_orders"))
        );
    }

    #[test]
    fn mistakes_say_how_to_call_it() {
        let message = SearchRequest::from_arguments(&json!({"limit": 2})).unwrap_err();
        assert_eq!(
            message.to_string(),
            "`query` is missing; call it with {\"query\": \"what the tool should do\"} and optionally \"limit\""
        );
        assert!(
            SearchRequest::from_arguments(&json!({"query": "x", "limit": 0}))
                .unwrap_err()
                .to_string()
                .starts_with("`limit` must be")
        );
        assert!(
            SearchRequest::from_arguments(&json!("{")).unwrap_err().to_string().contains("not valid JSON")
        );
    }
}
