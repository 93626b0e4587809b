#![doc = include_str!("../docs/overview.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod call;
#[doc = include_str!("../docs/catalog.md")]
pub mod catalog;
mod context;
mod dispatch;
#[doc = include_str!("../docs/environment.md")]
pub mod environment;
mod error;
pub mod events;
mod future;
mod hooks;
mod inject;
#[cfg(feature = "mcp")]
#[doc = include_str!("../docs/mcp_client.md")]
pub mod mcp_client;
#[cfg(feature = "mcp")]
#[doc = include_str!("../docs/mcp_server.md")]
pub mod mcp_server;
mod output;
pub mod output_store;
mod permission;
#[doc = include_str!("../docs/permissions.md")]
pub mod permissions;
#[cfg(feature = "process-tree")]
pub mod process_tree;
#[doc = include_str!("../docs/providers.md")]
pub mod providers;
mod registry;
pub mod schema;
mod spec;
#[cfg(test)]
mod testing;
mod tool;
pub mod truncate;
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
#[doc = include_str!("../docs/dispatcher.md")]
pub use dispatch::Dispatcher;
pub use dispatch::{CallOptions, DispatcherBuilder, RepeatAction, RepeatGuard};
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
#[doc = include_str!("../docs/registry.md")]
pub use registry::Registry;
pub use registry::{RegistryBuilder, RegistryError, registered_tools};
pub use spec::{
    Freeform, Grammar, GrammarSyntax, ParameterAlias, SourceLocation, ToolAnnotations, ToolSpec,
    TruncationDirection, TruncationPolicy,
};
pub use tokio_util::sync::CancellationToken;
pub use tool::{DecodedCall, FnTool, Tool};
pub use truncate::TruncationLimits;
pub use validate::{Coercion, ValidatedArgs, ValidationOptions};

#[doc = include_str!("../docs/macro.md")]
pub use tool_macros::tool;
