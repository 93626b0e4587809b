//! What every connection of a running proxy shares: its decisions, its log, its stop, and the
//! tunnel that joins a client to the host it reaches.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::decide::{Asker, Decider};
use crate::refusal::{Refusal, RefusalLog};

/// Joins a client to the host it reaches, both ways, until both sides have closed (each
/// direction's end is passed on as a half-close) or either fails.
///
/// Between two TCP sockets on Linux the bytes go through a pipe with `splice(2)`: the kernel
/// moves references to its pages from one socket to the other, and the proxy neither copies nor
/// sees the bytes. Elsewhere, or for a client that is not a plain socket, they are copied through
/// a buffer in each direction.
pub(crate) async fn relay(client: &mut TcpStream, upstream: &mut TcpStream) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Ok(pipes) = crate::splice::Pipes::new() {
        let _ = pipes.relay(&*client, &*upstream).await;
        return;
    }
    copy(client, upstream).await;
}

/// The buffer size of each direction of a copied tunnel: large reads keep a bulk download's
/// cost per byte low.
const TUNNEL_BUFFER: usize = 256 * 1024;

/// Copies both ways between a client and the host it reaches until both sides close.
pub(crate) async fn copy<C>(client: &mut C, upstream: &mut TcpStream)
where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let _ = tokio::io::copy_bidirectional_with_sizes(client, upstream, TUNNEL_BUFFER, TUNNEL_BUFFER).await;
}

/// How long a client may take to send its first byte, and to finish a SOCKS5 handshake.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// What every connection of one proxy shares.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub(crate) decider: Arc<Decider>,
    /// The session's TLS termination, when it has secrets to put in.
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<Arc<crate::tls::Terminator>>,
    /// Asked instead of the session's asker, when set.
    pub(crate) asker: Option<Asker>,
    pub(crate) log: RefusalLog,
    pub(crate) stop: CancellationToken,
    /// One for each task of the proxy's (a client's connection, a tunnel, a connection to a
    /// host), each holding a few descriptors: the commands of a session cannot take this
    /// process's descriptors by opening connections and leaving them open.
    pub(crate) slots: Arc<tokio::sync::Semaphore>,
}

/// The most tasks one proxy runs at once ([`Ctx::slots`]); past it, connections wait to be
/// accepted, and work a connection would start is dropped.
pub(crate) const MAX_TASKS: usize = 256;

impl Ctx {
    /// Runs `work` until it ends or the proxy stops, in one of the proxy's slots; without a slot
    /// free, `work` is dropped (and the sockets it holds closed).
    pub(crate) fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        if let Ok(slot) = self.slots.clone().try_acquire_owned() {
            self.spawn_in(slot, work);
        }
    }

    /// Runs `work` in `slot` until it ends or the proxy stops.
    pub(crate) fn spawn_in(
        &self,
        slot: tokio::sync::OwnedSemaphorePermit,
        work: impl Future<Output = ()> + Send + 'static,
    ) {
        let stop = self.stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = work => {}
            }
            drop(slot);
        });
    }

    /// Decides and connects, asking this proxy's asker if it has one.
    pub(crate) async fn open(
        &self,
        host: &str,
        port: u16,
        protocol: crate::Protocol,
    ) -> Result<TcpStream, Refusal> {
        self.decider.open(host, port, protocol, self.asker.as_ref()).await
    }

    pub(crate) fn record(&self, refusal: &Refusal) {
        self.log.record(refusal.clone());
    }
}
