//! Large tool catalogs: deferred tools, the search that finds them, and what a conversation has
//! found so far.
//!
//! A tool is deferred by `#[tool(defer)]`, [`ToolSpec::with_defer`], `"defer": true` on a
//! mounted MCP server, or here for a whole registry ([`Catalog::defer_all`],
//! [`Catalog::defer`]). A deferred tool's full definition is left out of a request until a tool
//! search finds it; [`Catalog::definitions`] writes each provider's own form of that:
//!
//! - OpenAI Responses: deferred functions carry `"defer_loading": true` (grouped into one
//!   `namespace` per mounted MCP server), next to a `tool_search` tool, executed by the client
//!   ([`SearchMode::Client`]: the model's `tool_search_call` is answered with a
//!   `tool_search_output` carrying the found definitions) or by OpenAI ([`SearchMode::Hosted`]);
//! - Anthropic: deferred tools carry `"defer_loading": true`, next to our `tool_search` tool,
//!   whose result is a list of `tool_reference` blocks (or the hosted
//!   `tool_search_tool_bm25_20251119`);
//! - OpenAI Chat Completions and Gemini, without a deferred form: our `tool_search` function,
//!   whose result names the found tools; their definitions are added to the next request
//!   ([`LoadedTools`]).
//!
//! Definitions keep a stable order (the tools that are always there in registry order, found
//! tools appended in the order found), so a provider's prompt cache survives a search.
//!
//! ```
//! use serde_json::json;
//! use tool_runtime::catalog::{Catalog, LoadedTools, SearchRequest};
//! use tool_runtime::{Registry, ToolOutput, ToolSpec, providers::{DefinitionOptions, Provider}, spec::FnTool};
//!
//! let tool = |name: &str, description: &str, defer: bool| {
//!     let spec = ToolSpec::new(name, description, json!({"type": "object"})).with_defer(defer);
//!     FnTool::new(spec, |_, _| async { Ok(ToolOutput::text("ok")) })
//! };
//! let registry = Registry::builder()
//!     .tool(tool("read", "Read a file.", false))
//!     .tool(tool("create_invoice", "Create an invoice for a customer.", true))
//!     .build()
//!     .unwrap();
//! let catalog = Catalog::new(registry);
//! let found = catalog.search(&SearchRequest::new("bill a customer"));
//! assert_eq!(found[0].name, "create_invoice");
//!
//! let mut loaded = LoadedTools::new();
//! let options = DefinitionOptions::default();
//! let names = |defs: Vec<serde_json::Value>| -> Vec<String> {
//!     defs.iter().map(|d| d["function"]["name"].as_str().unwrap().to_owned()).collect()
//! };
//! let before = catalog.definitions(Provider::OpenAiChat, &loaded, &options).unwrap();
//! assert_eq!(names(before), ["read", "tool_search"]);
//! loaded.load(found.iter().map(|spec| spec.name.clone()));
//! let after = catalog.definitions(Provider::OpenAiChat, &loaded, &options).unwrap();
//! assert_eq!(names(after), ["read", "tool_search", "create_invoice"]);
//! ```
//!
//! [`ToolSpec::with_defer`]: crate::ToolSpec::with_defer

mod deferred;
mod index;
mod loaded;
mod request;
mod terms;
mod turn;

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

pub use index::{Hit, SearchIndex};
pub use loaded::LoadedTools;
pub use request::{
    DEFAULT_LIMIT, DESCRIPTION, MAX_LIMIT, SearchRequest, SearchRequestError, TOOL_SEARCH, input_schema,
};
pub use turn::{SearchOutcome, TurnCall, TurnResult};

use crate::{DefinitionOptions, LoweringError, Provider};
use tool_core::Registry;
use tool_core::ToolSpec;

/// Who runs the tool search.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SearchMode {
    /// Our search ([`Catalog::search`]) answers the model's search calls: the `tool_search`
    /// tool everywhere, and OpenAI Responses' client-executed `tool_search`.
    #[default]
    Client,
    /// The provider searches its own copy of the deferred definitions: OpenAI Responses'
    /// hosted `tool_search`, Anthropic's `tool_search_tool_bm25_20251119`. Providers without a
    /// hosted search (Chat Completions, Gemini) keep the client search.
    Hosted,
}

/// A registry seen as a catalog: which of its tools are deferred, and the search over them.
///
/// The search index is the registry's own (built on first use and kept with it), so catalogs
/// made per conversation from one shared registry share it.
#[derive(Clone)]
pub struct Catalog {
    registry: Arc<Registry>,
    deferred: Vec<bool>,
    mode: SearchMode,
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Catalog")
            .field("tools", &self.registry.len())
            .field("deferred", &self.deferred.iter().filter(|d| **d).count())
            .field("mode", &self.mode)
            .finish()
    }
}

/// A name given to [`Catalog::defer`] that is not a tool of the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownTool {
    /// The name that was given.
    pub name: String,
    /// What to do, naming close tool names when there are some.
    pub message: String,
}

impl fmt::Display for UnknownTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UnknownTool {}

impl Catalog {
    /// The catalog of `registry`, whose deferred tools are those whose spec says so.
    pub fn new(registry: impl Into<Arc<Registry>>) -> Catalog {
        let registry = registry.into();
        let deferred = registry.specs().map(ToolSpec::is_deferred).collect();
        Catalog { registry, deferred, mode: SearchMode::default() }
    }

    /// Defers every tool.
    pub fn defer_all(mut self) -> Self {
        self.deferred.fill(true);
        self
    }

    /// Defers the named tools too; a name that is no tool of the registry is an error.
    pub fn defer<I, S>(mut self, names: I) -> Result<Self, UnknownTool>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        for name in names {
            let name = name.as_ref();
            let Some(position) = self.registry.position(name) else {
                let error = self.registry.unknown_tool(name);
                return Err(UnknownTool { name: name.to_owned(), message: error.message().to_owned() });
            };
            self.deferred[position] = true;
        }
        Ok(self)
    }

    /// Sets who runs the search ([`SearchMode::Client`] by default).
    pub fn with_search_mode(mut self, mode: SearchMode) -> Self {
        self.mode = mode;
        self
    }

    /// Who runs the search.
    pub fn search_mode(&self) -> SearchMode {
        self.mode
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Whether the tool `name` is deferred (false for unknown names).
    pub fn is_deferred(&self, name: &str) -> bool {
        self.registry.position(name).is_some_and(|i| self.deferred[i])
    }

    /// Whether any tool is deferred: without one, definitions are the plain ones and no search
    /// tool is offered.
    pub fn has_deferred(&self) -> bool {
        self.deferred.contains(&true)
    }

    /// Every tool with whether it is deferred, in registry order.
    pub fn tools(&self) -> impl Iterator<Item = (&ToolSpec, bool)> {
        self.registry.specs().zip(self.deferred.iter().copied())
    }

    /// The deferred tools that best match `request`, best first: a tool named in the query
    /// first, then by BM25 over names, descriptions, and parameter names and descriptions.
    pub fn search(&self, request: &SearchRequest) -> Vec<&ToolSpec> {
        let index = self.registry.derived(|registry| SearchIndex::new(registry.specs()));
        index
            .search(&request.query, request.limit, |doc| self.deferred.get(doc).copied().unwrap_or(false))
            .into_iter()
            .map(|hit| self.registry.spec_at(hit.doc))
            .collect()
    }

    /// What a request offers when the conversation has found `loaded`: the tools that are not
    /// deferred, in registry order, then the found deferred tools, in the order found (names
    /// that are not deferred tools of this registry are skipped).
    pub fn visible<'a>(&'a self, loaded: &'a LoadedTools) -> Vec<&'a ToolSpec> {
        let mut specs: Vec<&ToolSpec> =
            self.tools().filter(|(_, deferred)| !deferred).map(|(s, _)| s).collect();
        for name in loaded.names() {
            if let Some(position) = self.registry.position(name)
                && self.deferred[position]
            {
                specs.push(self.registry.spec_at(position));
            }
        }
        specs
    }

    /// The tool definitions of a request in `provider`'s deferred form (see the module docs);
    /// the same as [`Provider::definitions`] when no tool is deferred.
    pub fn definitions(
        &self,
        provider: Provider,
        loaded: &LoadedTools,
        options: &DefinitionOptions,
    ) -> Result<Vec<Value>, LoweringError> {
        deferred::definitions(provider, self, loaded, options)
    }

    /// The spec of the search tool (`tool_search`, `{"query", "limit"?}`) as an ordinary tool.
    pub fn search_tool_spec() -> ToolSpec {
        ToolSpec::new(TOOL_SEARCH, DESCRIPTION, input_schema())
    }
}

/// The namespace a tool is grouped in: the server of a mounted MCP tool (its `mcp:<server>`
/// tag), or none.
pub fn namespace(spec: &ToolSpec) -> Option<&str> {
    spec.tags.iter().find_map(|tag| tag.strip_prefix("mcp:")).filter(|server| !server.is_empty())
}
