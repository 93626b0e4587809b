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
    #[cfg(feature = "tls")]
    tls: Arc<std::sync::Mutex<TlsSlot>>,
}

/// The session's TLS termination, made when the first proxy starts.
#[cfg(feature = "tls")]
struct TlsSlot {
    roots: crate::tls::UpstreamRoots,
    /// Where the CA bundle is written; the system's temporary directory when `None`.
    dir: Option<std::path::PathBuf>,
    made: Option<Arc<crate::tls::Terminator>>,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress").field("policy", &self.decider.policy).finish_non_exhaustive()
    }
}

impl Egress {
    /// Decisions by `policy`, asking `asker` about hosts no rule names (refused without one).
    pub fn new(policy: EgressPolicy, asker: Option<Asker>) -> Egress {
        Egress {
            decider: Arc::new(Decider::new(policy, asker)),
            #[cfg(feature = "tls")]
            tls: Arc::new(std::sync::Mutex::new(TlsSlot {
                roots: crate::tls::UpstreamRoots::Mozilla,
                dir: None,
                made: None,
            })),
        }
    }

    /// Trusts only the certificates of `pem` (a PEM text) for the hosts whose TLS the proxy
    /// terminates, instead of Mozilla's roots (`webpki-roots`): a private CA, or a test's.
    /// Call it before the first proxy starts; an error names what is wrong with the text.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn with_upstream_roots(self, pem: &str) -> Result<Egress, crate::ConfigError> {
        let certs = crate::tls::parse_pem(pem)?;
        let mut slot = self.tls.lock().unwrap_or_else(|p| p.into_inner());
        slot.roots = crate::tls::UpstreamRoots::Only(certs);
        slot.made = None;
        drop(slot);
        Ok(self)
    }

    /// Writes the CA bundle handed to commands ([`Egress::ca_bundle`]) in `dir` instead of the
    /// system's temporary directory: a directory commands may read but not write (a session
    /// directory's `shared`). Call it before the first proxy starts.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn with_bundle_dir(self, dir: impl Into<std::path::PathBuf>) -> Egress {
        let mut slot = self.tls.lock().unwrap_or_else(|p| p.into_inner());
        slot.dir = Some(dir.into());
        slot.made = None;
        drop(slot);
        self
    }

    /// The session's TLS termination, made on first use, when a secret needs it.
    #[cfg(feature = "tls")]
    fn terminator(&self) -> io::Result<Option<Arc<crate::tls::Terminator>>> {
        if self.decider.policy.secrets.is_empty() {
            return Ok(None);
        }
        let mut slot = self.tls.lock().unwrap_or_else(|p| p.into_inner());
        if slot.made.is_none() {
            let dir = slot.dir.clone().unwrap_or_else(std::env::temp_dir);
            slot.made = Some(Arc::new(crate::tls::Terminator::new(&slot.roots, &dir)?));
        }
        Ok(slot.made.clone())
    }

    /// The file of trusted roots handed to commands (the system's roots and the session's CA),
    /// when the session terminates TLS for a secret's hosts; made with the first proxy.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn ca_bundle(&self) -> Option<std::path::PathBuf> {
        let slot = self.tls.lock().unwrap_or_else(|p| p.into_inner());
        slot.made.as_ref().map(|t| t.bundle().to_path_buf())
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
            #[cfg(feature = "tls")]
            tls: self.terminator()?,
            asker,
            log: RefusalLog::default(),
            stop: CancellationToken::new(),
            slots: Arc::new(tokio::sync::Semaphore::new(crate::conn::MAX_TASKS)),
        };
        tokio::spawn(accept_loop(listener, ctx.clone()));
        #[cfg(feature = "tls")]
        let tls_env = ctx.tls.as_ref().map(|t| t.env()).unwrap_or_default();
        #[cfg(not(feature = "tls"))]
        let tls_env = Vec::new();
        Ok(EgressProxy { addr, log: ctx.log, stop: ctx.stop, egress: self.clone(), tls_env })
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
    /// The variables that make clients trust the session's CA, when TLS is terminated.
    tls_env: Vec<(String, String)>,
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

    /// The variables that send clients through it (see [`proxy_env`](crate::proxy_env)), the
    /// placeholders of the policy's secrets in their variables ([`EgressPolicy::secret_var`]),
    /// and, with the `tls` feature and a secret, the variables that point clients at the bundle
    /// of trusted roots holding the session's CA (`SSL_CERT_FILE`, `CURL_CA_BUNDLE`,
    /// `GIT_SSL_CAINFO`, `CARGO_HTTP_CAINFO`, `REQUESTS_CA_BUNDLE`, `NODE_EXTRA_CA_CERTS`).
    pub fn env(&self) -> Vec<(String, String)> {
        let mut vars = crate::proxy_env(self.addr);
        vars.extend(self.egress.policy().placeholders());
        vars.extend(self.tls_env.iter().cloned());
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
        // A connection is accepted once there is a slot for it; until then the kernel holds it.
        let slot = tokio::select! {
            () = ctx.stop.cancelled() => return,
            slot = ctx.slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => return,
            },
        };
        let accepted = tokio::select! {
            () = ctx.stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                let conn = ctx.clone();
                ctx.spawn_in(slot, serve(stream, conn));
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
