//! The HTTP server's connection limits: how many connections at once, how many from one client,
//! and the refusal of a connection past them. A connection is unproven until a request of its
//! passes the server's checks (its `Host`, its token); when the server is full, a new connection
//! takes the place of the oldest unproven one, which is closed, so that connections that never
//! send a request a server would answer (from many addresses, each within its own limit) cannot
//! keep a client with the token out.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// How many refusals may be written at once; past that, a refused connection is closed at once
/// (a flood of connections must not cost a task and a file descriptor each while refused).
const MAX_REFUSING: usize = 64;

/// How long a refusal may take to write and to let the client's request drain, so that the
/// client reads the refusal instead of a reset connection.
const REFUSAL_TIME: Duration = Duration::from_millis(500);

/// The connections open now, in all and per client.
#[derive(Debug)]
pub(crate) struct Connections {
    max_total: usize,
    max_per_client: usize,
    open: Mutex<Open>,
    refusing: AtomicUsize,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    per_client: HashMap<Client, usize>,
    /// The connections none of whose requests has passed the checks yet, by the order they were
    /// admitted in: their client, and what closes them.
    unproven: BTreeMap<u64, (Client, CancellationToken)>,
    /// Connections closed to make room for another, no longer counted.
    evicted: HashSet<u64>,
    next: u64,
}

impl Open {
    fn release(&mut self, client: Client) {
        self.total -= 1;
        if let Some(count) = self.per_client.get_mut(&client) {
            *count -= 1;
            if *count == 0 {
                self.per_client.remove(&client);
            }
        }
    }
}

/// Who a connection comes from: its IP address, or an IPv6 address's /64 network (one host
/// commonly has a whole /64 to pick addresses from).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Client {
    V4(std::net::Ipv4Addr),
    V6Network(u64),
}

impl Client {
    pub(crate) fn of(ip: IpAddr) -> Client {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Client::V4(v4),
            IpAddr::V6(v6) => Client::V6Network((v6.to_bits() >> 64) as u64),
        }
    }
}

/// One admitted connection, counted until dropped (or closed to make room for another).
#[derive(Debug)]
pub(crate) struct Admitted {
    connections: Arc<Connections>,
    client: Client,
    id: u64,
    /// Cancelled when the connection is to close, to make room for another.
    evicted: CancellationToken,
    proven: AtomicBool,
}

impl Admitted {
    /// Says that a request of this connection passed the server's checks: it is no longer
    /// closed to make room for another.
    pub(crate) fn prove(&self) {
        if !self.proven.swap(true, Ordering::AcqRel) {
            let mut open = self.connections.open.lock().unwrap_or_else(|p| p.into_inner());
            open.unproven.remove(&self.id);
        }
    }

    /// Completes once the connection is to close to make room for another.
    pub(crate) async fn evicted(&self) {
        self.evicted.cancelled().await;
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.connections.open.lock().unwrap_or_else(|p| p.into_inner());
        if !open.evicted.remove(&self.id) {
            open.unproven.remove(&self.id);
            open.release(self.client);
        }
    }
}

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The server has `limit` connections open.
    Full { limit: usize },
    /// The client at `ip` has `limit` connections open.
    Client { ip: IpAddr, limit: usize },
    /// The client's socket belongs to user `uid`, not the server's, and no token is asked for.
    OtherUser { uid: Option<u32>, own: u32 },
}

impl Connections {
    pub(crate) fn new(max_total: usize, max_per_client: usize) -> Arc<Connections> {
        Arc::new(Connections {
            max_total,
            max_per_client,
            open: Mutex::default(),
            refusing: AtomicUsize::new(0),
        })
    }

    /// Counts a connection from `ip`, or says why it is refused. When the server is full, the
    /// oldest unproven connection is closed to make room (see [`Admitted::prove`]).
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Admitted, Refused> {
        let client = Client::of(ip);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let from_client = open.per_client.get(&client).copied().unwrap_or(0);
        if from_client >= self.max_per_client {
            return Err(Refused::Client { ip: ip.to_canonical(), limit: self.max_per_client });
        }
        if open.total >= self.max_total {
            let Some((oldest, (its_client, close))) = open.unproven.pop_first() else {
                return Err(Refused::Full { limit: self.max_total });
            };
            close.cancel();
            open.evicted.insert(oldest);
            open.release(its_client);
        }
        open.total += 1;
        *open.per_client.entry(client).or_default() += 1;
        let id = open.next;
        open.next += 1;
        let evicted = CancellationToken::new();
        open.unproven.insert(id, (client, evicted.clone()));
        Ok(Admitted { connections: self.clone(), client, id, evicted, proven: AtomicBool::new(false) })
    }

    /// Answers a refused connection with its HTTP response and closes it, in the background; at
    /// most [`MAX_REFUSING`] at once, the others are closed at once.
    pub(crate) fn refuse(self: &Arc<Self>, mut stream: TcpStream, refused: &Refused) {
        if self.refusing.fetch_add(1, Ordering::AcqRel) >= MAX_REFUSING {
            self.refusing.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        let response = refused.response();
        let connections = self.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(REFUSAL_TIME, async {
                stream.write_all(&response).await?;
                stream.shutdown().await?;
                // Read what the client sent, so that closing does not reset the connection
                // before the client has read the refusal.
                let mut sink = [0u8; 4096];
                let mut left = 64 * 1024usize;
                while left > 0 {
                    let read = stream.read(&mut sink).await?;
                    if read == 0 {
                        break;
                    }
                    left = left.saturating_sub(read);
                }
                Ok::<(), std::io::Error>(())
            })
            .await;
            connections.refusing.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

impl Refused {
    /// The sentence a refused client reads.
    pub(crate) fn message(&self) -> String {
        match self {
            Refused::Full { limit } => format!(
                "Service unavailable: this server already has {limit} connections open, the most it serves at \
                 once. Try again in a moment; if this persists, its operator can raise the connection limit."
            ),
            Refused::Client { ip, limit } => format!(
                "Too many connections: {ip} already has {limit} connections open to this server, the most one \
                 client may have. Close connections you no longer use (or reuse them), then try again."
            ),
            Refused::OtherUser { uid, own } => {
                let whose = match uid {
                    Some(uid) => format!("this connection is user {uid}'s"),
                    None => {
                        "this connection comes from no socket the kernel knows as established (one closed, \
                             say)"
                            .to_owned()
                    }
                };
                format!(
                    "Forbidden: this server asks for no token, so it serves only the processes of its own user \
                     ({own}) on this machine, and {whose}. Its operator can give it a token \
                     (HttpOptions::bearer_token, `tools serve --http --auth-token-file FILE`) for other clients."
                )
            }
        }
    }

    /// The whole HTTP/1.1 response: `503`, `429` or `403`, the sentence, and `Connection: close`.
    fn response(&self) -> Vec<u8> {
        let (status, retry) = match self {
            Refused::Full { .. } => ("503 Service Unavailable", "retry-after: 1\r\n"),
            Refused::Client { .. } => ("429 Too Many Requests", "retry-after: 1\r\n"),
            Refused::OtherUser { .. } => ("403 Forbidden", ""),
        };
        let body = format!("{}\n", self.message());
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\
             {retry}connection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_counted_in_all_and_per_client_until_dropped() {
        let connections = Connections::new(3, 2);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let first = connections.admit(a).unwrap();
        let _second = connections.admit(a).unwrap();
        assert_eq!(connections.admit(a).unwrap_err(), Refused::Client { ip: a, limit: 2 });
        // The same client through an IPv4-mapped IPv6 address is the same client.
        assert_eq!(
            connections.admit("::ffff:127.0.0.1".parse().unwrap()).unwrap_err(),
            Refused::Client { ip: a, limit: 2 }
        );
        let third = connections.admit(b).unwrap();
        for admitted in [&first, &_second, &third] {
            admitted.prove();
        }
        assert_eq!(connections.admit(b).unwrap_err(), Refused::Full { limit: 3 });
        drop(first);
        let _again = connections.admit(a).unwrap();
        // Another address in one IPv6 /64 is the same client.
        let six = Connections::new(10, 1);
        let _one = six.admit("2001:db8::1".parse().unwrap()).unwrap();
        assert!(six.admit("2001:db8::ffff:2".parse().unwrap()).is_err());
        assert!(six.admit("2001:db8:0:1::1".parse().unwrap()).is_ok());
    }

    #[tokio::test]
    async fn a_full_server_closes_its_oldest_unproven_connection_to_admit_another() {
        let connections = Connections::new(3, 3);
        let ip = |n: u8| IpAddr::from([127, 0, 0, n]);
        let proven = connections.admit(ip(1)).unwrap();
        proven.prove();
        let oldest = connections.admit(ip(2)).unwrap();
        let younger = connections.admit(ip(2)).unwrap();
        let newcomer = connections.admit(ip(3)).expect("room made");
        // The oldest unproven one is told to close and no longer counts; the proven one stays.
        tokio::time::timeout(Duration::from_secs(1), oldest.evicted()).await.expect("evicted");
        assert!(!younger.evicted.is_cancelled() && !proven.evicted.is_cancelled());
        drop(oldest);
        newcomer.prove();
        younger.prove();
        assert_eq!(connections.admit(ip(4)).unwrap_err(), Refused::Full { limit: 3 });
        // Two from one address count as two for that address only until one goes.
        drop(younger);
        let _again = connections.admit(ip(2)).unwrap();
        let open = connections.open.lock().unwrap();
        assert_eq!((open.total, open.per_client.len(), open.evicted.len()), (3, 3, 0));
    }

    #[test]
    fn a_refusal_is_a_whole_http_response_with_a_sentence() {
        let response = String::from_utf8(Refused::Full { limit: 7 }.response()).unwrap();
        assert!(response.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{response}");
        let (head, body) = response.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())), "{response}");
        assert!(body.contains("7 connections open"), "{body}");
    }
}
