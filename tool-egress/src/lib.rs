//! An egress proxy that decides per host, for commands that may use some of the network.
//!
//! A sandboxed command whose only reachable address is the proxy's loopback port gets the
//! network through [`EgressProxy`]: one port on `127.0.0.1` serving
//!
//! - HTTP `CONNECT` tunnels (HTTPS, `git`, `cargo`, `npm` ...),
//! - plain-HTTP requests in absolute form (`GET http://host/path`), and
//! - SOCKS5 (`CONNECT` with IPv4, IPv6 or domain-name targets, no authentication),
//!
//! told apart by the first byte a client sends (5 starts SOCKS5). One port is what a kernel
//! sandbox can allow simply: "TCP connects to 127.0.0.1:PORT only". [`proxy_env`] gives the
//! variables that point clients at it (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY=socks5h://...`,
//! their lowercase forms, and an empty `NO_PROXY`).
//!
//! Each connection is decided by an [`EgressPolicy`] (denied hosts, allowed hosts, then the
//! [`Asker`], then refused), its name is resolved once, addresses that are not on the public
//! internet ([`special_range`]) are dropped unless allowed by address, and the proxy connects
//! to an address it checked. Every refusal is answered to the client (HTTP 403 with a sentence
//! naming the host, the rule and how to allow it; a SOCKS5 reply code) and kept in the proxy's
//! log ([`EgressProxy::drain_refusals`]) for the caller to show next to the command's output.
//!
//! [`settings`] maps Claude Code's settings (`WebFetch(domain:...)` rules, `sandbox.network`)
//! to a policy.
//!
//! # Running commands through it
//!
//! Keep one [`Egress`] per session (its "allow for the session" answers are shared) and start
//! one proxy per command with [`Egress::start`], so that the refusals drained after the command
//! are that command's own:
//!
//! 1. start the proxy; give the command [`EgressProxy::env`] on top of its environment;
//! 2. confine the command so that its only TCP destination is `127.0.0.1:`[`EgressProxy::port`]
//!    (a kernel sandbox's "network through a proxy on this port" mode);
//! 3. when it ends, append [`EgressProxy::refusal_note`] to its result, then drop the proxy
//!    (which closes whatever connections the command left open).
//!
//! The [`Asker`] is where a person is asked ("allow `crates.io` for this session?"), through a
//! permission prompt or an MCP client's elicitation; without one, hosts no rule names are
//! refused with a sentence saying how to allow them.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use tool_egress::{AskAnswer, EgressPolicy, EgressProxy, asker};
//!
//! let policy = EgressPolicy::new()
//!     .allow_host("crates.io", "example")
//!     .and_then(|p| p.allow_host("*.crates.io", "example"))
//!     .and_then(|p| p.deny_host("evil.example", "example"))
//!     .expect("valid patterns");
//! let ask = asker(|request| async move {
//!     if request.host.ends_with(".github.com") { AskAnswer::AllowForSession } else { AskAnswer::Deny }
//! });
//! let proxy = EgressProxy::start(policy, Some(ask)).await?;
//! // Run the command with `proxy.env()` in its environment, allowed to reach `proxy.port()`.
//! for refusal in proxy.drain_refusals() {
//!     eprintln!("{refusal}");
//! }
//! # Ok(()) }
//! ```

mod addr;
mod conn;
mod decide;
mod http;
mod policy;
mod proxy;
mod refusal;
pub mod settings;
mod socks;

use std::net::SocketAddr;

pub use addr::{AddressRule, special_range};
pub use decide::{AskAnswer, AskFuture, AskRequest, Asker, asker};
pub use policy::{EgressPolicy, HostPattern, HostRule, placeholder};
pub use proxy::{Egress, EgressProxy};
pub use refusal::{Protocol, Reason, Refusal, summarize};

/// The environment variables that send a command's clients through the proxy at `addr`.
///
/// Both spellings of each are set, since clients disagree on which they read (`curl` ignores
/// an upper-case `HTTP_PROXY`; Go and Python read either). `ALL_PROXY` uses `socks5h://` so that
/// names are resolved, and checked, by the proxy. `NO_PROXY` is set empty, so that no host
/// inherited from elsewhere skips it.
pub fn proxy_env(addr: SocketAddr) -> Vec<(String, String)> {
    let http = format!("http://{addr}");
    let socks = format!("socks5h://{addr}");
    let mut vars = Vec::new();
    for (name, value) in
        [("HTTP_PROXY", &http), ("HTTPS_PROXY", &http), ("ALL_PROXY", &socks), ("NO_PROXY", &String::new())]
    {
        vars.push((name.to_owned(), value.clone()));
        vars.push((name.to_ascii_lowercase(), value.clone()));
    }
    vars
}
