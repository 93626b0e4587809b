//! Who is at the other end of a connection from this machine: the user that owns the client's
//! socket, as the kernel's socket table says (`/proc/net/tcp`, `/proc/net/tcp6`). A server that
//! asks for no token serves its own user's processes only, not every account of the machine.

use std::io::Read;
use std::net::{IpAddr, SocketAddr};

/// The socket table is read up to this many bytes (about 100,000 sockets).
const MAX_TABLE_BYTES: u64 = 16 << 20;

/// The user owning the socket at `peer` that is connected to this server's `local`, when the
/// kernel's table of this machine's sockets holds it; `None` when it does not (the client went
/// away, the peer is not on this machine) or the table cannot be read.
pub(crate) fn owner(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let table = if local.is_ipv4() { "/proc/net/tcp" } else { "/proc/net/tcp6" };
    let mut text = String::new();
    std::fs::File::open(table).ok()?.take(MAX_TABLE_BYTES).read_to_string(&mut text).ok()?;
    owner_in(&text, peer, local)
}

/// [`owner`] in `table`'s text: the line whose local address is the peer's and whose remote
/// address is the server's, in the established state. A socket its process has closed is
/// listed as the kernel's (`TIME_WAIT`, uid 0) or as a closing one: it names nobody, so that a
/// client cannot send a request and close its socket to be taken for root.
fn owner_in(table: &str, peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    const ESTABLISHED: &str = "01";
    let (peer, local) = (entry(peer), entry(local));
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.get(1) == Some(&peer.as_str())
            && fields.get(2) == Some(&local.as_str())
            && fields.get(3) == Some(&ESTABLISHED))
        .then(|| fields.get(7)?.parse().ok())
        .flatten()
    })
}

/// `addr` as the table writes it: each 32-bit word of the address in the machine's byte order,
/// in hex, then the port.
fn entry(addr: SocketAddr) -> String {
    let words: Vec<u32> = match addr.ip() {
        IpAddr::V4(v4) => vec![u32::from_ne_bytes(v4.octets())],
        IpAddr::V6(v6) => {
            v6.octets().chunks_exact(4).map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]])).collect()
        }
    };
    let address: String = words.iter().map(|word| format!("{word:08X}")).collect();
    format!("{address}:{:04X}", addr.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_on_this_machine_is_found_with_its_owner() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let local = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(local).unwrap();
        let (_server_side, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        let own = std::fs::metadata("/proc/self/fd").map(|m| std::os::unix::fs::MetadataExt::uid(&m)).ok();
        assert_eq!(owner(peer, local), own);
        // The other direction is another socket's entry; an address not connected has none.
        let elsewhere: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert_eq!(owner(elsewhere, local), None);
    }

    #[test]
    fn the_tables_lines_are_read_as_the_kernel_writes_them() {
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let (p, l) = (entry(peer), entry(local));
        let table = format!(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
             0: {l} 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n\
             1: {p} {l} 01 00000000:00000000 00:00000000 00000000  1000        0 2 1\n"
        );
        assert_eq!(owner_in(&table, peer, local), Some(1000));
        assert_eq!(owner_in(&table, local, peer), None);
        // Closed by its process: TIME_WAIT (listed with uid 0) or FIN_WAIT2 names nobody.
        for state in ["06", "05"] {
            let closed =
                table.replace(&format!("{l} 01 "), &format!("{l} {state} ")).replace(" 1000 ", "    0 ");
            assert_eq!(owner_in(&closed, peer, local), None, "{state}");
        }
        let v6: SocketAddr = "[::1]:8080".parse().unwrap();
        assert_eq!(entry(v6).len(), 32 + 5);
    }
}
