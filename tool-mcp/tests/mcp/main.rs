//! Tests of the MCP server and of mounting MCP servers, one module a subject, in one test binary.

mod ask;
#[cfg(feature = "http")]
mod http;
mod mount;
#[cfg(feature = "http")]
mod mount_http;
#[cfg(feature = "https")]
mod mount_https;
mod mount_resources;
mod mount_sampling;
mod pages;
mod resources;
mod server;
