//! Refusals: what was refused, by which rule, how to ask for it; and the log callers drain.

use std::collections::VecDeque;
use std::fmt;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use crate::policy::{ALLOW_ADDRESS_HINT, ALLOW_HINT};

/// How a client reached the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// An HTTP `CONNECT` tunnel (HTTPS, or anything a client tunnels).
    Connect,
    /// A plain-HTTP request in absolute form (`GET http://host/path`).
    Http,
    /// A SOCKS5 `CONNECT`.
    Socks5,
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Connect => "HTTP CONNECT",
            Protocol::Http => "plain HTTP",
            Protocol::Socks5 => "SOCKS5",
        })
    }
}

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// A denied pattern matched.
    Denied {
        /// The pattern, as configured.
        pattern: String,
        /// Where it is configured.
        origin: String,
    },
    /// No rule allows the host, and the asker said no (`asked`) or there is none to ask.
    NotAllowed {
        /// Whether someone was asked and declined.
        asked: bool,
    },
    /// An ask rule matched, and the asker said no (`asked`) or there is none to ask.
    AskRule {
        /// The pattern, as configured.
        pattern: String,
        /// Where it is configured.
        origin: String,
        /// Whether someone was asked and declined.
        asked: bool,
    },
    /// No rule allows the host, and asking about it was refused, for this reason.
    AskRefused {
        /// The asker's reason.
        reason: String,
    },
    /// The host resolved only to addresses that are not on the public internet.
    PrivateAddress {
        /// The first such address.
        address: IpAddr,
        /// Which range it is in.
        range: &'static str,
    },
    /// Limited mode refused a plain-HTTP method.
    LimitedMethod {
        /// The method.
        method: String,
    },
    /// Limited mode refused a tunnel.
    LimitedTunnel,
    /// Limited mode refused a plain-HTTP WebSocket upgrade.
    LimitedUpgrade,
    /// The name could not be resolved.
    Unresolved {
        /// The resolver's words.
        error: String,
    },
    /// No allowed address of the host could be connected to.
    Unreachable {
        /// What the last attempt met.
        error: String,
    },
    /// The host's TLS certificate failed verification, where the proxy opens TLS itself to put a
    /// secret in (the `tls` feature).
    Certificate {
        /// What the verification met.
        problem: String,
    },
    /// The request was not one the proxy serves (not a valid host, an origin-form request ...).
    BadRequest {
        /// What is wrong.
        problem: String,
    },
}

/// One refused connection: the host and port asked for, how, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The host as the client named it (normalized).
    pub host: String,
    /// The port.
    pub port: u16,
    /// How the client asked.
    pub protocol: Protocol,
    /// Why it was refused.
    pub reason: Reason,
}

impl Refusal {
    /// The HTTP status that answers it: 403 for a rule, 502 for a name that does not resolve,
    /// 400 for a request the proxy does not serve.
    pub fn status(&self) -> u16 {
        match self.reason {
            Reason::Unresolved { .. } | Reason::Unreachable { .. } | Reason::Certificate { .. } => 502,
            Reason::BadRequest { .. } => 400,
            _ => 403,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        };
        let verb = match self.reason {
            Reason::Unresolved { .. } | Reason::Unreachable { .. } => "could not reach",
            _ => "refused",
        };
        write!(f, "the network proxy {verb} {target} ({}): ", self.protocol)?;
        let host = &self.host;
        match &self.reason {
            Reason::Denied { pattern, origin } => write!(
                f,
                "it is denied by `{pattern}` in {origin}; a denied host stays refused even when another rule \
                 allows it, so only removing that entry lets it through"
            ),
            Reason::NotAllowed { asked: true } => write!(
                f,
                "no rule allows `{host}` and the user declined it when asked; to allow it, {}",
                ALLOW_HINT.replace("HOST", host)
            ),
            Reason::NotAllowed { asked: false } => {
                write!(f, "no rule allows `{host}`; to allow it, {}", ALLOW_HINT.replace("HOST", host))
            }
            Reason::AskRule { pattern, origin, asked: true } => write!(
                f,
                "`{pattern}` in {origin} says to ask before reaching `{host}`, and the user declined it"
            ),
            Reason::AskRule { pattern, origin, asked: false } => write!(
                f,
                "`{pattern}` in {origin} says to ask before reaching `{host}`, and nobody is here to answer; \
                 only removing that entry lets it through unasked"
            ),
            Reason::AskRefused { reason } => write!(
                f,
                "no rule allows `{host}`, and asking for it was refused ({}); to allow it, {}",
                reason.trim_end_matches('.'),
                ALLOW_HINT.replace("HOST", host)
            ),
            Reason::PrivateAddress { address, range } => write!(
                f,
                "`{host}` resolves to {address}, a {range} address, which is reached only when allowed by \
                 address (add `{address}` to {ALLOW_ADDRESS_HINT}); allowing the name is not enough, so that a \
                 name cannot be pointed at this machine or its network"
            ),
            Reason::LimitedMethod { method } => write!(
                f,
                "the network is in limited mode, where plain HTTP allows only GET, HEAD and OPTIONS, and this \
                 request was {method}; {LIMITED_HINT}"
            ),
            Reason::LimitedTunnel => write!(
                f,
                "the network is in limited mode, where only plain-HTTP GET, HEAD and OPTIONS pass; a tunnel \
                 (HTTPS through CONNECT, or SOCKS5) cannot be inspected, so it is refused; {LIMITED_HINT}"
            ),
            Reason::LimitedUpgrade => write!(
                f,
                "the network is in limited mode, where only plain-HTTP GET, HEAD and OPTIONS pass; a \
                 WebSocket upgrade opens a two-way channel that cannot be inspected, so it is refused; \
                 {LIMITED_HINT}"
            ),
            Reason::Unresolved { error } => write!(f, "`{host}` could not be resolved: {error}"),
            Reason::Unreachable { error } => f.write_str(error),
            Reason::Certificate { problem } => write!(
                f,
                "a secret may be sent to `{host}`, so the proxy opens TLS to it itself and checks its \
                 certificate, which failed ({problem}); nothing was sent. If `{host}` is reached through \
                 another proxy or its certificate is from a private CA, the secret cannot be used with it"
            ),
            Reason::BadRequest { problem } => f.write_str(problem),
        }
    }
}

/// What a refusal of limited mode adds: who can lift it.
const LIMITED_HINT: &str = "only the user can lift limited mode (`sandbox.network.limited` in the settings), so \
                            read over plain HTTP or ask them";

/// At most this many refusals are kept between two drains; the oldest are dropped.
const LOG_LIMIT: usize = 256;

/// The refusals of one proxy, kept until drained.
#[derive(Debug, Clone, Default)]
pub(crate) struct RefusalLog {
    entries: Arc<Mutex<VecDeque<Refusal>>>,
}

impl RefusalLog {
    pub(crate) fn record(&self, refusal: Refusal) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() == LOG_LIMIT {
            entries.pop_front();
        }
        entries.push_back(refusal);
    }

    pub(crate) fn drain(&self) -> Vec<Refusal> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).drain(..).collect()
    }
}

/// Sentences for a command's result, one per distinct refusal (the same host refused the same
/// way many times, as by a client that retries, is one line), in the order first seen.
pub fn summarize(refusals: &[Refusal]) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for refusal in refusals {
        let line = refusal.to_string();
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines
}
