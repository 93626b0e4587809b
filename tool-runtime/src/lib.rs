//! A framework for the tools of coding agents.
//!
//! Write a tool as a plain `async fn` with `#[tool]`; the macro derives its JSON Schema from the
//! parameters and their `///` docs and registers it at link time. A [`Registry`] collects the
//! registered tools, validates the model's arguments against each schema, and runs them.
//!
//! ```
//! use tool_runtime::{tool, Registry, ToolContext, ToolError};
//!
//! /// Add two numbers.
//! #[tool(parallel, read_only)]
//! async fn add(
//!     /// The first number.
//!     a: i64,
//!     /// The second number.
//!     #[arg(default = 1)]
//!     b: i64,
//! ) -> Result<String, ToolError> {
//!     Ok((a + b).to_string())
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let registry = Registry::from_inventory().unwrap();
//! let ctx = ToolContext::builder("add").build();
//! let out = registry.call("add", r#"{"a": 40, "b": "2"}"#, ctx).await.unwrap();
//! assert_eq!(out.text_content(), "42");
//! # });
//! ```
//!
//! What you write is at the root: the [`tool`] macro, [`Registry`], [`Dispatcher`],
//! [`ToolContext`], [`ToolError`], [`ToolOutput`], [`Content`], [`Json`], [`Provider`], the hook
//! and permission types and the events. The modules hold the rest:
//!
//! - [`providers`]: each LLM API's tool definitions, call parsing and result rendering
//!   (`providers::mcp` is MCP's JSON format);
//! - [`mcp_server`] (feature `mcp`): serving a dispatcher's tools to MCP clients (over
//!   Streamable HTTP too, with feature `mcp-http`);
//!   [`mcp_client`] (feature `mcp`): mounting other MCP servers' tools;
//! - [`truncate`]: the truncation engine and its streaming form, for tools that cut their own
//!   output; [`output_store`]: where full outputs are kept;
//! - [`permissions`]: permission rules, Claude Code settings files, hook commands and shell
//!   command classification;
//! - [`environment`]: which of our environment variables commands, hooks and stdio servers
//!   inherit;
//! - [`catalog`]: large tool catalogs: deferred tools, the tool search, and each provider's
//!   deferred definitions;
//! - [`schema`]: the argument schemas, for tools written by hand; [`events`]: the event
//!   stream's sinks.
//!
//! One call, from a provider's message to its result: a provider adapter makes a [`ToolCall`]
//! whose [`Arguments`] stay as sent; the [`Dispatcher`] looks the tool up and validates them
//! (`registry.rs`, `validate/`), takes the call's guard (`dispatch/gate.rs`), runs the stages
//! (`dispatch/run.rs`: repeat guard, hooks, the tool under its limit, truncation) and returns
//! one [`ToolResult`] (`dispatch/record.rs`).
#![deny(missing_docs)]

mod call;
pub mod catalog;
mod context;
mod dispatch;
pub mod environment;
mod error;
pub mod events;
mod future;
mod hooks;
mod inject;
#[cfg(feature = "mcp")]
pub mod mcp_client;
#[cfg(feature = "mcp")]
pub mod mcp_server;
mod output;
pub mod output_store;
mod permission;
pub mod permissions;
#[cfg(feature = "process-tree")]
pub mod process_tree;
pub mod providers;
mod registry;
pub mod schema;
mod spec;
#[cfg(test)]
mod testing;
mod tool;
pub mod truncate;
pub mod user_question;
mod validate;
pub mod words;

#[doc(hidden)]
#[allow(missing_docs)]
#[path = "private.rs"]
pub mod __private;

pub use call::{Arguments, ToolCall, ToolResult};
pub use context::{
    CallAsker, ContextBuilder, ContextSink, Dependencies, Progress, SessionState, ToolContext,
};
pub use dispatch::{CallOptions, Dispatcher, DispatcherBuilder, RepeatAction, RepeatGuard};
pub use error::{ErrorKind, ToolError};
pub use events::{CallStatus, EventFn, EventSink, ToolEvent};
pub use future::BoxFuture;
pub use hooks::{AfterFn, AfterHook, BeforeDecision, BeforeFn, BeforeHook, HookCall};
pub use inject::{Dep, FromContext};
pub use output::{Content, IntoToolOutput, IntoToolResult, Json, ToolOutput};
pub use output_store::OutputStore;
pub use permission::{
    AllowAll, DefaultPermissions, PathScreen, PermissionDecision, PermissionFn, PermissionHook,
    PermissionKind, PermissionRequest, Screened,
};
pub use providers::{DefinitionOptions, Provider};
pub use registry::{Registry, RegistryBuilder, RegistryError, registered_tools};
pub use spec::{
    Freeform, Grammar, GrammarSyntax, ParameterAlias, SourceLocation, ToolAnnotations, ToolSpec,
    TruncationDirection, TruncationPolicy,
};
pub use tokio_util::sync::CancellationToken;
pub use tool::{DecodedCall, FnTool, Tool};
pub use truncate::TruncationLimits;
pub use validate::{Coercion, ValidatedArgs, ValidationOptions};

pub use tool_macros::tool;
