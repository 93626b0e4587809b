#![doc = include_str!("../docs/overview.md")]
//!
//! # Features
//!
//! This crate is the facade: it re-exports the `#[tool]` macro, the core (`tool-core`) at the
//! root and in the modules below, and each adapter behind a feature, so an application depends
//! on it alone and pays only for the parts it turns on:
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `providers` | yes | [`providers`] (each LLM API's tool format) and [`catalog`] (deferred tools and the tool search), from `tool-providers` |
//! | `permissions` | yes | [`permissions`]: rules, shell command classification, Claude Code settings, from `tool-permissions`; [`settings`]: the settings file's typed model, from `tool-settings` |
//! | `command-hooks` | no | `PreToolUse` / `PostToolUse` hook commands in [`permissions`] |
//! | `processes` | no | [`process_tree`] and [`environment`]: the processes tools start, from `tool-sandbox` |
//! | `code-mode` | no | [`code`]: the script tool that runs a model's JavaScript with every tool on `tools`, from `tool-code` |
//! | `mcp` | no | [`mcp_server`] and [`mcp_client`], from `tool-mcp`; `mcp-http` adds Streamable HTTP, `mcp-https` TLS for mounts, `mcp-oauth` OAuth logins for mounts |
//!
//! What you write most is at the root: the [`tool`] macro, [`Registry`], [`Dispatcher`],
//! [`ToolContext`], [`ToolError`], [`ToolOutput`], [`Content`], [`Json`] and the permission
//! request types. The modules hold the rest: [`context`], [`dispatch`], [`hooks`] (before-,
//! after- and permission hooks), [`events`], [`spec`], [`validate`], [`schema`], [`truncate`],
//! [`output_store`] and [`words`].
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// Doctests are examples users copy: a warning in one fails it (as in tokio, an example may leave
// a function or variable unused).
#![doc(test(attr(deny(warnings, rust_2018_idioms), allow(dead_code, unused_variables))))]

#[doc = include_str!("../docs/macro.md")]
pub use tool_macros::tool;

#[doc = include_str!("../docs/dispatcher.md")]
pub use tool_core::Dispatcher;
#[doc = include_str!("../docs/registry.md")]
pub use tool_core::Registry;
pub use tool_core::{
    Arguments, BoxFuture, CallOptions, CancellationToken, Content, Dep, DispatcherBuilder, ErrorKind, Json,
    PermissionKind, PermissionRequest, Progress, RegistryBuilder, RegistryError, SessionState, Tool,
    ToolCall, ToolContext, ToolError, ToolOutput, ToolResult, ToolSpec,
};

pub use tool_core::{events, handoff, output_store, schema, truncate, words};

/// A call's context and what it reaches: dependencies, the session's state, progress sinks,
/// the asker a call's spawned work keeps, and who answers its questions to the user.
pub mod context {
    pub use tool_core::sampling::{Sampler, SamplerDependency};
    pub use tool_core::user_question::{AskerDependency, Unanswered, UserAnswer, UserAsker};
    pub use tool_core::{
        CallAsker, ContextBuilder, ContextSink, Dependencies, FromContext, LogLevel, Progress, SessionState,
        ToolContext,
    };
}

/// The dispatcher's settings: the repeat guard, calls that only read.
pub mod dispatch {
    pub use tool_core::{
        CallOptions, Dispatcher, DispatcherBuilder, ReadOnlyCalls, RepeatAction, RepeatGuard,
    };
}

/// Hooks around a call: before-hooks that allow, deny or rewrite it, after-hooks that see or
/// replace its result, and the permission hooks that answer [`ToolContext::ask`].
pub mod hooks {
    pub use tool_core::{
        AfterFn, AfterHook, AllowAll, BeforeDecision, BeforeFn, BeforeHook, DefaultPermissions, HookCall,
        PathScreen, PermissionDecision, PermissionFn, PermissionHook, PermissionKind, PermissionRequest,
        Screened,
    };
}

/// A tool's spec beyond its name and schema: annotations, freeform input, parameter aliases,
/// truncation policy, what it asks permission for; tools written by hand ([`FnTool`](spec::FnTool)); the tools `#[tool]`
/// registered.
pub mod spec {
    pub use tool_core::{
        DecodedCall, FnTool, Freeform, Grammar, GrammarSyntax, IntoToolOutput, IntoToolResult,
        ParameterAlias, PermissionSubject, SourceLocation, ToolAnnotations, ToolSpec, TruncationDirection,
        TruncationPolicy, registered_tools,
    };
}

/// Argument validation: how lenient it is, and what it changed.
pub mod validate {
    pub use tool_core::{Coercion, ValidatedArgs, ValidationOptions};
}

#[cfg(feature = "providers")]
#[doc(inline)]
#[doc = include_str!("../docs/providers.md")]
pub use tool_providers as providers;

#[cfg(feature = "providers")]
#[doc(inline)]
#[doc = include_str!("../docs/catalog.md")]
pub use tool_providers::catalog;

#[cfg(feature = "permissions")]
#[doc(inline)]
#[doc = include_str!("../docs/permissions.md")]
pub use tool_permissions as permissions;

/// The settings file as one typed model (Claude Code's `settings.json` with this project's
/// keys), where Claude Code keeps its files, and the file's JSON Schema, from `tool-settings`.
#[cfg(feature = "permissions")]
pub use tool_settings as settings;

#[cfg(feature = "processes")]
#[doc(inline)]
#[doc = include_str!("../docs/environment.md")]
pub use tool_sandbox::environment;

#[cfg(feature = "processes")]
#[doc(inline)]
pub use tool_sandbox::process_tree;

#[cfg(feature = "code-mode")]
#[doc(inline)]
pub use tool_code as code;

#[cfg(feature = "mcp")]
#[doc(inline)]
#[doc = include_str!("../docs/mcp_server.md")]
pub use tool_mcp::server as mcp_server;

#[cfg(feature = "mcp")]
#[doc(inline)]
#[doc = include_str!("../docs/mcp_client.md")]
pub use tool_mcp::client as mcp_client;

#[doc(hidden)]
pub use tool_core::__private;
