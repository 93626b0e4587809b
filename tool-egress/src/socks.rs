//! SOCKS5 on the proxy's port (RFC 1928): no authentication, the `CONNECT` command, IPv4, IPv6
//! and domain-name targets (so `socks5h://` clients let the proxy resolve, and check, names).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::conn::{Ctx, HANDSHAKE_TIMEOUT};
use crate::refusal::{Protocol, Reason, Refusal};

/// Reply codes.
const SUCCEEDED: u8 = 0;
const GENERAL_FAILURE: u8 = 1;
const NOT_ALLOWED: u8 = 2;
const HOST_UNREACHABLE: u8 = 4;
const CONNECTION_REFUSED: u8 = 5;
const COMMAND_NOT_SUPPORTED: u8 = 7;
const ADDRESS_TYPE_NOT_SUPPORTED: u8 = 8;

pub(crate) async fn serve(mut client: TcpStream, ctx: Ctx) {
    let target = match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake(&mut client)).await {
        Ok(Ok(Some(target))) => target,
        _ => return,
    };
    let (host, port, command) = target;
    if command != 1 {
        let refusal = Refusal {
            host,
            port,
            protocol: Protocol::Socks5,
            reason: Reason::BadRequest {
                problem: format!("SOCKS5 command {command} is not supported; only CONNECT (1) is"),
            },
        };
        ctx.record(&refusal);
        let _ = client.write_all(&reply(COMMAND_NOT_SUPPORTED, None)).await;
        return;
    }
    match ctx.open(&host, port, Protocol::Socks5).await {
        Err(refusal) => {
            ctx.record(&refusal);
            let code = match refusal.reason {
                Reason::Unresolved { .. } => HOST_UNREACHABLE,
                Reason::Unreachable { .. } => CONNECTION_REFUSED,
                Reason::BadRequest { .. } => GENERAL_FAILURE,
                _ => NOT_ALLOWED,
            };
            let _ = client.write_all(&reply(code, None)).await;
        }
        Ok(mut upstream) => {
            if client.write_all(&reply(SUCCEEDED, upstream.local_addr().ok())).await.is_err() {
                return;
            }
            crate::conn::relay(&mut client, &mut upstream).await;
        }
    }
}

/// Reads the greeting and the request; `None` after answering a client that cannot go on.
async fn handshake(client: &mut TcpStream) -> io::Result<Option<(String, u16, u8)>> {
    let mut head = [0u8; 2];
    client.read_exact(&mut head).await?;
    let mut methods = vec![0u8; usize::from(head[1])];
    client.read_exact(&mut methods).await?;
    if !methods.contains(&0) {
        // "No acceptable methods": only "no authentication" is offered.
        client.write_all(&[5, 0xff]).await?;
        return Ok(None);
    }
    client.write_all(&[5, 0]).await?;
    let mut request = [0u8; 4];
    client.read_exact(&mut request).await?;
    if request[0] != 5 {
        return Ok(None);
    }
    let host = match request[3] {
        1 => {
            let mut octets = [0u8; 4];
            client.read_exact(&mut octets).await?;
            Ipv4Addr::from(octets).to_string()
        }
        3 => {
            let mut len = [0u8; 1];
            client.read_exact(&mut len).await?;
            let mut name = vec![0u8; usize::from(len[0])];
            client.read_exact(&mut name).await?;
            match String::from_utf8(name) {
                Ok(name) => name,
                Err(_) => {
                    client.write_all(&reply(GENERAL_FAILURE, None)).await?;
                    return Ok(None);
                }
            }
        }
        4 => {
            let mut octets = [0u8; 16];
            client.read_exact(&mut octets).await?;
            Ipv6Addr::from(octets).to_string()
        }
        _ => {
            client.write_all(&reply(ADDRESS_TYPE_NOT_SUPPORTED, None)).await?;
            return Ok(None);
        }
    };
    let mut port = [0u8; 2];
    client.read_exact(&mut port).await?;
    Ok(Some((host, u16::from_be_bytes(port), request[1])))
}

fn reply(code: u8, bound: Option<SocketAddr>) -> Vec<u8> {
    let bound = bound.unwrap_or(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0));
    let mut out = vec![5, code, 0];
    match bound.ip() {
        IpAddr::V4(ip) => {
            out.push(1);
            out.extend_from_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            out.push(4);
            out.extend_from_slice(&ip.octets());
        }
    }
    out.extend_from_slice(&bound.port().to_be_bytes());
    out
}
