//! The HTTP server's connection limits: how many connections at once, how many from one client,
//! and the refusal of a connection past them.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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

/// One admitted connection, counted until dropped.
#[derive(Debug)]
pub(crate) struct Admitted {
    connections: Arc<Connections>,
    client: Client,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.connections.open.lock().unwrap_or_else(|p| p.into_inner());
        open.total -= 1;
        if let Some(count) = open.per_client.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                open.per_client.remove(&self.client);
            }
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

    /// Counts a connection from `ip`, or says why it is refused.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Admitted, Refused> {
        let client = Client::of(ip);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let from_client = open.per_client.get(&client).copied().unwrap_or(0);
        if from_client >= self.max_per_client {
            return Err(Refused::Client { ip: ip.to_canonical(), limit: self.max_per_client });
        }
        if open.total >= self.max_total {
            return Err(Refused::Full { limit: self.max_total });
        }
        open.total += 1;
        *open.per_client.entry(client).or_default() += 1;
        Ok(Admitted { connections: self.clone(), client })
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
        }
    }

    /// The whole HTTP/1.1 response: `503` or `429`, the sentence, and `Connection: close`.
    fn response(&self) -> Vec<u8> {
        let status = match self {
            Refused::Full { .. } => "503 Service Unavailable",
            Refused::Client { .. } => "429 Too Many Requests",
        };
        let body = format!("{}\n", self.message());
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\
             retry-after: 1\r\nconnection: close\r\n\r\n{body}",
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
        let _third = connections.admit(b).unwrap();
        assert_eq!(connections.admit(b).unwrap_err(), Refused::Full { limit: 3 });
        drop(first);
        let _again = connections.admit(a).unwrap();
        // Another address in one IPv6 /64 is the same client.
        let six = Connections::new(10, 1);
        let _one = six.admit("2001:db8::1".parse().unwrap()).unwrap();
        assert!(six.admit("2001:db8::ffff:2".parse().unwrap()).is_err());
        assert!(six.admit("2001:db8:0:1::1".parse().unwrap()).is_ok());
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
