//! Deciding one connection: the rules, the asker, resolution, the address check, the connect.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpStream;

use crate::addr::special_range;
use crate::policy::{EgressPolicy, normalize};
use crate::refusal::{Protocol, Reason, Refusal};

/// How long one connection attempt to an upstream address may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// What the asker is asked: a host no rule names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskRequest {
    /// The host (normalized: lower case, no trailing dot).
    pub host: String,
    /// The port.
    pub port: u16,
    /// How the client asked.
    pub protocol: Protocol,
}

/// The asker's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskAnswer {
    /// Allow this one connection.
    AllowOnce,
    /// Allow the host, on every port, until the [`Egress`](crate::Egress) is dropped.
    AllowForSession,
    /// Refuse it: the person asked declined.
    Deny,
    /// Refuse it, for a reason the refusal repeats: who declined and why, or why nobody could
    /// be asked (a permission hook's words).
    Refused {
        /// The reason, as a sentence.
        reason: String,
    },
}

/// A future of an answer.
pub type AskFuture = Pin<Box<dyn Future<Output = AskAnswer> + Send>>;

/// Asks someone (a person, an MCP client's elicitation, a test) about a host no rule names.
pub type Asker = Arc<dyn Fn(AskRequest) -> AskFuture + Send + Sync>;

/// Makes an [`Asker`] of an async closure.
pub fn asker<F, Fut>(f: F) -> Asker
where
    F: Fn(AskRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = AskAnswer> + Send + 'static,
{
    Arc::new(move |request| Box::pin(f(request)))
}

/// The decisions shared by every proxy of a session: the policy, the asker, and the hosts
/// allowed for the session.
pub(crate) struct Decider {
    pub(crate) policy: EgressPolicy,
    asker: Option<Asker>,
    session: Mutex<HashSet<String>>,
    /// One question at a time per host, so that ten connections to a new host ask once.
    asking: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Decider {
    pub(crate) fn new(policy: EgressPolicy, asker: Option<Asker>) -> Self {
        Decider { policy, asker, session: Mutex::default(), asking: Mutex::default() }
    }

    /// Decides, resolves, checks and connects; the refusal says which rule refused.
    pub(crate) async fn open(
        &self,
        host: &str,
        port: u16,
        protocol: Protocol,
        asker: Option<&Asker>,
    ) -> Result<TcpStream, Refusal> {
        let refuse = |host: &str, reason| Refusal { host: host.to_owned(), port, protocol, reason };
        let Some(host) = normalize(host).filter(|h| !h.contains('*')) else {
            return Err(refuse(
                host,
                Reason::BadRequest { problem: format!("`{}` is not a valid host name", host.escape_debug()) },
            ));
        };
        if port == 0 {
            return Err(refuse(
                &host,
                Reason::BadRequest { problem: "port 0 cannot be connected to".into() },
            ));
        }
        if self.policy.limited && protocol != Protocol::Http {
            return Err(refuse(&host, Reason::LimitedTunnel));
        }
        self.decide(&host, port, protocol, asker).await.map_err(|reason| refuse(&host, reason))?;
        let addresses = self.resolve(&host, port).await.map_err(|reason| refuse(&host, reason))?;
        let mut refused = None;
        let mut last_error = None;
        for ip in addresses {
            if let Some(range) = special_range(ip)
                && !self.policy.address_allowed(ip)
            {
                refused.get_or_insert(Reason::PrivateAddress { address: ip, range });
                continue;
            }
            match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(SocketAddr::new(ip, port))).await {
                Ok(Ok(stream)) => {
                    let _ = stream.set_nodelay(true);
                    return Ok(stream);
                }
                Ok(Err(e)) => last_error = Some(format!("connecting to {ip} port {port} failed: {e}")),
                Err(_) => last_error = Some(format!("connecting to {ip} port {port} timed out")),
            }
        }
        Err(refuse(
            &host,
            match (last_error, refused) {
                (Some(error), _) => Reason::Unreachable { error },
                (None, Some(reason)) => reason,
                (None, None) => Reason::Unresolved { error: "the name has no address".into() },
            },
        ))
    }

    async fn decide(
        &self,
        host: &str,
        port: u16,
        protocol: Protocol,
        asker: Option<&Asker>,
    ) -> Result<(), Reason> {
        let policy = &self.policy;
        if let Some(rule) = policy.denied_by(host, port) {
            return Err(Reason::Denied {
                pattern: rule.pattern.to_string(),
                origin: rule.origin.to_string(),
            });
        }
        // An ask rule asks whatever allows the host.
        let ask_rule = policy.asked_by(host, port).cloned();
        let not_allowed = |asked: bool| match &ask_rule {
            Some(rule) => {
                Reason::AskRule { pattern: rule.pattern.to_string(), origin: rule.origin.to_string(), asked }
            }
            None => Reason::NotAllowed { asked },
        };
        if ask_rule.is_none() && policy.allowed_by(host, port).is_some() {
            return Ok(());
        }
        if let Ok(ip) = host.parse::<IpAddr>()
            && ask_rule.is_none()
            && policy.address_allowed(ip)
        {
            return Ok(());
        }
        if self.in_session(host) {
            return Ok(());
        }
        let Some(asker) = asker.or(self.asker.as_ref()).filter(|_| ask_rule.is_some() || !policy.never_ask)
        else {
            return Err(not_allowed(false));
        };
        let turn = {
            let mut asking = self.asking.lock().unwrap_or_else(|p| p.into_inner());
            asking.entry(host.to_owned()).or_default().clone()
        };
        let _turn = turn.lock().await;
        // Someone else's question may have allowed it meanwhile.
        if self.in_session(host) {
            return Ok(());
        }
        match asker(AskRequest { host: host.to_owned(), port, protocol }).await {
            AskAnswer::AllowOnce => Ok(()),
            AskAnswer::AllowForSession => {
                self.session.lock().unwrap_or_else(|p| p.into_inner()).insert(host.to_owned());
                Ok(())
            }
            AskAnswer::Deny => Err(not_allowed(true)),
            // Nobody to answer: an ask rule's host is refused naming the rule, not as one no
            // rule allows.
            AskAnswer::Refused { .. } if ask_rule.is_some() => Err(not_allowed(false)),
            AskAnswer::Refused { reason } => Err(Reason::AskRefused { reason }),
        }
    }

    fn in_session(&self, host: &str) -> bool {
        self.session.lock().unwrap_or_else(|p| p.into_inner()).contains(host)
    }

    async fn resolve(&self, host: &str, port: u16) -> Result<Vec<IpAddr>, Reason> {
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(vec![ip]);
        }
        if let Some(addresses) = self.policy.overrides.get(host) {
            return Ok(addresses.clone());
        }
        if !self.policy.uses_system_resolver() {
            return Err(Reason::Unresolved { error: "the name is unknown to the proxy's resolver".into() });
        }
        let found = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e: io::Error| Reason::Unresolved { error: e.to_string() })?;
        let mut addresses: Vec<IpAddr> = Vec::new();
        for addr in found {
            if !addresses.contains(&addr.ip()) {
                addresses.push(addr.ip());
            }
        }
        Ok(addresses)
    }
}
