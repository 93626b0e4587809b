//! The running proxy: one loopback listener, each connection sniffed for SOCKS5 or HTTP.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::conn::{Ctx, HANDSHAKE_TIMEOUT};
use crate::decide::{Asker, Decider};
use crate::policy::EgressPolicy;
use crate::refusal::{Refusal, RefusalLog};

/// The decisions of a session: a policy, an optional asker, and the hosts the asker allowed for
/// the session. Cheap to clone; every [`EgressProxy`] started from it (one per command, say)
/// shares its session answers.
#[derive(Clone)]
pub struct Egress {
    decider: Arc<Decider>,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress").field("policy", &self.decider.policy).finish_non_exhaustive()
    }
}

impl Egress {
    /// Decisions by `policy`, asking `asker` about hosts no rule names (refused without one).
    pub fn new(policy: EgressPolicy, asker: Option<Asker>) -> Egress {
        Egress { decider: Arc::new(Decider::new(policy, asker)) }
    }

    /// The policy.
    pub fn policy(&self) -> &EgressPolicy {
        &self.decider.policy
    }

    /// Starts a proxy on `127.0.0.1` and a port the system picks, with a refusal log of its own.
    /// It serves until the returned handle is dropped, which also ends its open connections.
    pub async fn start(&self) -> io::Result<EgressProxy> {
        self.start_with(None).await
    }

    /// Starts a proxy whose questions go to `asker` instead of the session's (a command's own
    /// call, whose user is the one to ask); the answers "for the session" are still shared.
    pub async fn start_asking(&self, asker: Asker) -> io::Result<EgressProxy> {
        self.start_with(Some(asker)).await
    }

    /// Serves on `listener`, made elsewhere: one listening inside the network namespace of the
    /// commands it serves (`tool_sandbox::NetworkNamespace`), where it is the only thing they
    /// can reach. Questions go to `asker` when given (see [`Egress::start_asking`]). The
    /// connections it makes are this process's, in its own namespace.
    pub fn serve(&self, listener: std::net::TcpListener, asker: Option<Asker>) -> io::Result<EgressProxy> {
        listener.set_nonblocking(true)?;
        self.serve_on(TcpListener::from_std(listener)?, asker)
    }

    async fn start_with(&self, asker: Option<Asker>) -> io::Result<EgressProxy> {
        self.serve_on(TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?, asker)
    }

    fn serve_on(&self, listener: TcpListener, asker: Option<Asker>) -> io::Result<EgressProxy> {
        let addr = listener.local_addr()?;
        let ctx = Ctx {
            decider: self.decider.clone(),
            asker,
            log: RefusalLog::default(),
            stop: CancellationToken::new(),
        };
        tokio::spawn(accept_loop(listener, ctx.clone()));
        Ok(EgressProxy { addr, log: ctx.log, stop: ctx.stop, egress: self.clone() })
    }
}

/// A running proxy: its address, the environment that points clients at it, and its refusals.
///
/// Dropping it stops the listener and ends every connection through it.
#[derive(Debug)]
pub struct EgressProxy {
    addr: SocketAddr,
    log: RefusalLog,
    stop: CancellationToken,
    egress: Egress,
}

impl EgressProxy {
    /// Starts a proxy with a session of its own (see [`Egress::start`]).
    pub async fn start(policy: EgressPolicy, asker: Option<Asker>) -> io::Result<EgressProxy> {
        Egress::new(policy, asker).start().await
    }

    /// The address it listens on (`127.0.0.1:PORT`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port it listens on: the one port a sandbox lets commands connect to.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The session it decides with.
    pub fn egress(&self) -> &Egress {
        &self.egress
    }

    /// The variables that send clients through it (see [`proxy_env`](crate::proxy_env)), and
    /// the placeholders of the policy's secrets in their variables
    /// ([`EgressPolicy::secret_var`]).
    pub fn env(&self) -> Vec<(String, String)> {
        let mut vars = crate::proxy_env(self.addr);
        vars.extend(self.egress.policy().placeholders());
        vars
    }

    /// Takes the refusals recorded since the last call, oldest first.
    pub fn drain_refusals(&self) -> Vec<Refusal> {
        self.log.drain()
    }

    /// Takes the refusals recorded since the last call as a note to append to a command's
    /// result (one line per distinct refusal, see [`summarize`](crate::summarize)), or `None`
    /// when nothing was refused. A client often shows only "403" or "connection not allowed";
    /// the note says which host, which rule, and how to allow it.
    pub fn refusal_note(&self) -> Option<String> {
        let lines = crate::summarize(&self.drain_refusals());
        if lines.is_empty() {
            return None;
        }
        Some(lines.iter().map(|line| format!("[{line}]")).collect::<Vec<_>>().join("\n"))
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn accept_loop(listener: TcpListener, ctx: Ctx) {
    loop {
        let accepted = tokio::select! {
            () = ctx.stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                let conn = ctx.clone();
                ctx.spawn(serve(stream, conn));
            }
            // Out of file descriptors, or a connection reset before it was accepted: wait a
            // little rather than spin.
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// SOCKS5 starts with its version byte, 5; SOCKS4 with 4; anything else is taken for HTTP.
async fn serve(mut stream: TcpStream, ctx: Ctx) {
    let mut first = [0u8; 1];
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, stream.peek(&mut first)).await {
        Ok(Ok(1)) => {}
        _ => return,
    }
    match first[0] {
        5 => crate::socks::serve(stream, ctx).await,
        // SOCKS4 has no domain names and no way to say why: "request rejected".
        4 => {
            let _ = stream.write_all(&[0, 0x5b, 0, 0, 0, 0, 0, 0]).await;
        }
        _ => crate::http::serve(stream, ctx).await,
    }
}
