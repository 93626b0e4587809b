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
#![deny(missing_docs)]

pub mod call;
pub mod context;
pub mod dispatch;
pub mod error;
pub mod events;
mod future;
pub mod hooks;
pub mod inject;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod output;
pub mod output_store;
pub mod permission;
pub mod providers;
pub mod registry;
pub mod schema;
pub mod spec;
#[cfg(test)]
mod testing;
pub mod tool;
pub mod truncate;
pub mod validate;
mod words;

#[doc(hidden)]
#[allow(missing_docs)]
#[path = "private.rs"]
pub mod __private;

pub use call::{Arguments, ToolCall, ToolResult};
pub use context::{ContextBuilder, ContextSink, Dependencies, Progress, SessionState, ToolContext};
pub use dispatch::{CallOptions, Dispatcher, DispatcherBuilder, RepeatAction, RepeatGuard};
pub use error::{ErrorKind, ToolError};
pub use events::{CallStatus, EventFn, EventSink, ToolEvent};
pub use future::BoxFuture;
pub use hooks::{AfterFn, AfterHook, BeforeDecision, BeforeFn, BeforeHook, HookCall};
pub use inject::{Dep, FromContext};
pub use output::{Content, IntoToolOutput, IntoToolResult, Json, ToolOutput};
pub use output_store::{OutputRef, OutputStore, OutputStoreError};
pub use permission::{
    AllowAll, DefaultPermissions, PermissionDecision, PermissionFn, PermissionHook, PermissionKind,
    PermissionRequest,
};
pub use providers::{DefinitionOptions, LoweringError, ParseError, Provider};
pub use registry::{Registry, RegistryBuilder, RegistryError, registered_tools};
pub use spec::{SourceLocation, ToolAnnotations, ToolSpec, TruncationDirection, TruncationPolicy};
pub use tokio_util::sync::CancellationToken;
pub use tool::{FnTool, Tool};
pub use truncate::{TruncationInfo, TruncationLimits, truncate_output, truncate_text};
pub use validate::{ArgumentValidator, Coercion, ValidatedArgs, ValidationOptions};

pub use tool_macros::tool;
