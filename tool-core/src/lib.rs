//! The core of the tool framework: what a tool is and how a call of it runs.
//!
//! A [`Tool`] has a [`ToolSpec`] (name, description, the JSON Schema of its arguments, how it
//! runs) and a `call`; `#[tool]` writes both from an `async fn`. A [`Registry`] holds the tools
//! and validates a model's [`Arguments`] against each schema ([`ValidationOptions`] says how
//! lenient); a [`Dispatcher`] runs the calls of a model's turn: lookup and validation, the
//! parallel/exclusive gate, the repeat guard, [`BeforeHook`]s, the tool under its time limit
//! with cancellation and panic isolation, [`AfterHook`]s, truncation ([`truncate`], with the
//! full text kept in an [`OutputStore`]) and [`events`]. A tool asks for permission with
//! [`ToolContext::ask`]; a [`PermissionHook`] answers.
//!
//! This crate knows nothing of its adapters (provider formats, permission rules, MCP): they
//! build on the public API here. Use it through the `tool-runtime` facade, which re-exports it
//! with the `#[tool]` macro and the adapters.
//!
//! One call, from a provider's message to its result: a provider adapter makes a [`ToolCall`]
//! whose [`Arguments`] stay as sent; the [`Dispatcher`] looks the tool up and validates them
//! (`registry.rs`, `validate/`), takes the call's guard (`dispatch/gate.rs`), runs the stages
//! (`dispatch/run.rs`: repeat guard, hooks, the tool under its limit, truncation) and returns
//! one [`ToolResult`] (`dispatch/record.rs`).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// Doctests are examples users copy: a warning in one fails it (as in tokio, an example may leave
// a function or variable unused).
#![doc(test(attr(deny(warnings, rust_2018_idioms), allow(dead_code, unused_variables))))]

mod call;
mod context;
mod dispatch;
mod error;
pub mod events;
mod future;
pub mod handoff;
mod hooks;
mod inject;
mod output;
pub mod output_store;
mod permission;
mod registry;
pub mod sampling;
pub mod schema;
mod spec;
pub mod stable_hash;
#[cfg(test)]
mod testing;
mod tool;
pub mod truncate;
pub mod user_question;
mod validate;
pub mod words;

#[doc(hidden)]
#[allow(missing_docs, missing_debug_implementations)]
#[path = "private.rs"]
pub mod __private;

pub use call::{Arguments, ToolCall, ToolResult};
pub use context::{
    CallAsker, ContextBuilder, ContextSink, Dependencies, LogLevel, Progress, SessionState, ToolContext,
};
pub use dispatch::{CallOptions, Dispatcher, DispatcherBuilder, ReadOnlyCalls, RepeatAction, RepeatGuard};
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
pub use registry::{Registry, RegistryBuilder, RegistryError, registered_tools};
pub use spec::{
    Freeform, Grammar, GrammarSyntax, ParameterAlias, PermissionSubject, SourceLocation, ToolAnnotations,
    ToolSpec, TruncationDirection, TruncationPolicy, is_valid_tool_name,
};
pub use tokio_util::sync::CancellationToken;
pub use tool::{DecodedCall, FnTool, Tool};
pub use truncate::TruncationLimits;
pub use validate::{Coercion, SchemaError, ValidatedArgs, ValidationOptions, check_input_schema};
