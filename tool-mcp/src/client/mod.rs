//! Mounting other MCP servers' tools into a registry (feature `mcp`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use tool_runtime::Registry;
//! use tool_runtime::mcp_client::{McpConfig, connect_all};
//!
//! // {"mcpServers": {"files": {"command": "npx", "args": ["-y", "some-mcp-server"]}}}
//! let config = McpConfig::load("mcp.json")?;
//! let mounts = connect_all(&config).await?;
//! let registry = Registry::builder()
//!     .with_inventory()
//!     .tools(mounts.iter().flat_map(|mount| mount.tools()))
//!     .build()?;
//! // `files__read_file` and the rest are now tools like any other.
//! # Ok(()) }
//! ```
//!
//! The configuration is the `mcpServers` file of Claude Desktop, Cursor and Claude Code
//! ([`McpConfig`]); [`McpMount`] is one connected server and says what a call does. A tool is
//! named `<server>__<tool>` unless the server's [`Naming`] says otherwise, always within the
//! 64 characters of `[A-Za-z0-9_-]` every provider accepts ([`tool_name`]).
//!
//! A mount also follows its server's resources, resource templates and prompts
//! ([`McpMount::resources`], [`McpMount::read_resource`], [`McpMount::get_prompt`], ...):
//! [`resource_tools`] gives the model `list_mcp_resources`, `list_mcp_resource_templates` and
//! `read_mcp_resource` for them, and [`served_resources_and_prompts`] serves them again from an
//! `McpServer`. A server's question to its user (`elicitation/create`, form mode) goes to whoever
//! answers the questions of the call in flight (the MCP client of `tools serve`, or the
//! application's [`AskerDependency`](tool_core::user_question::AskerDependency)), once that
//! call's permission policy allows [`ELICITATION_PERMISSION`]; nobody there, and the server is
//! told so. A server's `sampling/createMessage` goes the same way to the call's sampler (the MCP
//! client of `tools serve` when it samples, or the application's
//! [`SamplerDependency`](tool_core::sampling::SamplerDependency)), under
//! [`SAMPLING_PERMISSION`], for the servers allowed to sample ([`ServerConfig::sampling`]).

mod child;
mod config;
mod connection;
mod elicit;
mod extras;
mod handler;
#[cfg(feature = "http")]
mod http_client;
mod mount;
mod naming;
#[cfg(feature = "oauth")]
pub mod oauth;
mod pages;
mod resources;
mod routes;
#[cfg(feature = "https")]
mod tls;
mod tool;

pub use crate::wire::{ORIGINAL_CONTENT_KEY, SERVER_KEY};
pub use config::{
    ConfigError, DEFAULT_STARTUP_TIMEOUT, DEFAULT_TIMEOUT, DEFAULT_TOTAL_TIMEOUT, McpConfig, OAuthConfig,
    ServerConfig, Transport,
};
pub use elicit::{ELICITATION_PERMISSION, SAMPLING_PERMISSION};
pub use mount::{McpMount, MountError, connect_all};
pub use naming::{NameFn, Naming, tool_name};
pub use resources::{resource_tools, served_resources_and_prompts};
