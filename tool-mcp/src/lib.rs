//! The Model Context Protocol for the tool framework: [`server`] serves a dispatcher's tools to
//! MCP clients (over stdio, and over Streamable HTTP with feature `http`); [`client`] mounts
//! other MCP servers' tools into a registry (over Streamable HTTP with `http`, and `https://`
//! with `https`). Both are built on [`rmcp`].
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// Doctests are examples users copy: a warning in one fails it (as in tokio, an example may leave
// a function or variable unused).
#![doc(test(attr(deny(warnings, rust_2018_idioms), allow(dead_code, unused_variables))))]

pub mod client;
mod jsonrpc;
pub mod server;
pub mod wire;

/// The `rmcp` crate this crate is built on, for transports and model types without a direct
/// dependency (and without a version skew).
pub use rmcp;
