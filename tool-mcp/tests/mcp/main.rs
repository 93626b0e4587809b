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

/// With the `https` feature, reqwest is built with TLS but no crypto provider of its own: a client
/// with its defaults (rmcp's, and the tests' plain requests) needs a process-wide one.
#[cfg(feature = "http")]
fn install_tls_provider() {
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
}
