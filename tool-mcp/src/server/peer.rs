//! Who is at the other end of a connection from this machine: the user that owns the client's
//! socket, asked of the kernel by the connection's four addresses (`NETLINK_SOCK_DIAG`, an
//! exact lookup, whatever the size of the machine's socket table). A server that asks for no
//! token serves its own user's processes only, not every account of the machine.

use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;

use nix::sys::socket::{
    AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, recv, sendto, socket,
};

/// `SOCK_DIAG_BY_FAMILY`, the message that asks about one socket.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `NLMSG_ERROR`: the kernel's answer when there is no such socket.
const NLMSG_ERROR: u16 = 2;
/// `NLM_F_REQUEST`.
const NLM_F_REQUEST: u16 = 1;
/// `TCP_ESTABLISHED`.
const ESTABLISHED: u8 = 1;

/// The user owning the socket at `peer` that is connected to this server's `here`, when it is
/// a socket of this machine, established: a socket its process closed is the kernel's
/// (`TIME_WAIT`, listed with uid 0) and names nobody, so that a client cannot send a request
/// and close its socket to be taken for root. `None` when there is no such socket (the peer is
/// on another machine, or went away) or the kernel cannot be asked.
pub(crate) fn owner(peer: SocketAddr, here: SocketAddr) -> Option<u32> {
    let fd = socket(
        AddressFamily::Netlink,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkSockDiag,
    )
    .ok()?;
    let ask = |interface: u32| {
        let request = request(peer, here, interface)?;
        sendto(fd.as_raw_fd(), &request, &NetlinkAddr::new(0, 0), MsgFlags::empty()).ok()?;
        let mut answer = [0u8; 512];
        let read = recv(fd.as_raw_fd(), &mut answer, MsgFlags::empty()).ok()?;
        parse(&answer[..read])
    };
    // A socket bound to a device (`SO_BINDTODEVICE`, a link-local address) is found only by
    // that device's index.
    ask(0).or_else(|| {
        let interfaces = nix::net::if_::if_nameindex().ok()?;
        interfaces.iter().find_map(|interface| ask(interface.index()))
    })
}

/// Whether `ip` is an address of this machine: loopback, or one of its interfaces'.
pub(crate) fn of_this_machine(ip: IpAddr) -> bool {
    let ip = ip.to_canonical();
    if ip.is_loopback() {
        return true;
    }
    let Ok(addresses) = nix::ifaddrs::getifaddrs() else { return false };
    addresses.filter_map(|interface| interface.address).any(|address| {
        let own = match (address.as_sockaddr_in(), address.as_sockaddr_in6()) {
            (Some(v4), _) => IpAddr::V4(v4.ip()),
            (_, Some(v6)) => IpAddr::V6(v6.ip()),
            _ => return false,
        };
        own == ip
    })
}

/// The request for the socket whose own address is `peer` and whose remote one is `here`
/// (both IPv4, or both IPv6 once an IPv4-mapped address is read as IPv4), bound to the device
/// `interface` (0: none).
fn request(peer: SocketAddr, here: SocketAddr, interface: u32) -> Option<Vec<u8>> {
    let (from, to) = (peer.ip().to_canonical(), here.ip().to_canonical());
    let family = match (from, to) {
        (IpAddr::V4(_), IpAddr::V4(_)) => libc_family(AddressFamily::Inet),
        (IpAddr::V6(_), IpAddr::V6(_)) => libc_family(AddressFamily::Inet6),
        _ => return None,
    };
    let address = |ip: IpAddr| -> [u8; 16] {
        let mut bytes = [0u8; 16];
        match ip {
            IpAddr::V4(v4) => bytes[..4].copy_from_slice(&v4.octets()),
            IpAddr::V6(v6) => bytes = v6.octets(),
        }
        bytes
    };
    let mut message = Vec::with_capacity(72);
    // struct nlmsghdr
    message.extend_from_slice(&72u32.to_ne_bytes());
    message.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    message.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    message.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    message.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel's
    // struct inet_diag_req_v2: family, protocol (TCP), extensions, padding, states (all)
    message.extend_from_slice(&[family, 6, 0, 0]);
    message.extend_from_slice(&u32::MAX.to_ne_bytes());
    // struct inet_diag_sockid: ports and addresses in network order, any interface, no cookie
    message.extend_from_slice(&peer.port().to_be_bytes());
    message.extend_from_slice(&here.port().to_be_bytes());
    message.extend_from_slice(&address(from));
    message.extend_from_slice(&address(to));
    message.extend_from_slice(&interface.to_ne_bytes());
    message.extend_from_slice(&u32::MAX.to_ne_bytes());
    message.extend_from_slice(&u32::MAX.to_ne_bytes());
    debug_assert_eq!(message.len(), 72);
    Some(message)
}

fn libc_family(family: AddressFamily) -> u8 {
    family as i32 as u8
}

/// The owner in the kernel's answer: a `struct inet_diag_msg` after the header, whose state
/// must be established.
fn parse(answer: &[u8]) -> Option<u32> {
    let kind = u16::from_ne_bytes(answer.get(4..6)?.try_into().ok()?);
    if kind == NLMSG_ERROR || kind != SOCK_DIAG_BY_FAMILY {
        return None;
    }
    // nlmsghdr (16), family (1), state (1), timer (1), retransmits (1), sockid (48), expires,
    // read queue, write queue (3 × 4), uid.
    let state = *answer.get(17)?;
    let uid = u32::from_ne_bytes(answer.get(80..84)?.try_into().ok()?);
    (state == ESTABLISHED).then_some(uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own_uid() -> u32 {
        nix::unistd::geteuid().as_raw()
    }

    #[test]
    fn a_connection_on_this_machine_is_found_with_its_owner() {
        for bind in ["127.0.0.1:0", "[::1]:0"] {
            let Ok(listener) = std::net::TcpListener::bind(bind) else { continue };
            let here = listener.local_addr().unwrap();
            let client = std::net::TcpStream::connect(here).unwrap();
            let (_server_side, peer) = listener.accept().unwrap();
            assert_eq!(peer, client.local_addr().unwrap());
            assert_eq!(owner(peer, here), Some(own_uid()), "{bind}");
            // The other direction is the server's own socket; an address not connected has none.
            let elsewhere = SocketAddr::new(here.ip(), 1);
            assert_eq!(owner(elsewhere, here), None);
            // Closed by its process, the client's socket names nobody.
            drop(client);
            drop(_server_side);
            assert_eq!(owner(peer, here), None, "{bind}: a closed socket");
        }
    }

    #[test]
    fn a_client_bound_to_a_device_is_found_too() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let here = listener.local_addr().unwrap();
        let client = socket(AddressFamily::Inet, SockType::Stream, SockFlag::SOCK_CLOEXEC, None).unwrap();
        let lo = std::ffi::OsString::from("lo");
        if nix::sys::socket::setsockopt(&client, nix::sys::socket::sockopt::BindToDevice, &lo).is_err() {
            return;
        }
        let SocketAddr::V4(v4) = here else { unreachable!() };
        nix::sys::socket::connect(client.as_raw_fd(), &nix::sys::socket::SockaddrIn::from(v4)).unwrap();
        let (_server_side, peer) = listener.accept().unwrap();
        assert_eq!(owner(peer, here), Some(own_uid()));
        assert!(of_this_machine(peer.ip()));
        assert!(!of_this_machine("198.51.100.7".parse().unwrap()));
    }

    #[test]
    fn an_ipv4_client_of_an_ipv6_listener_is_looked_up_as_ipv4() {
        let Ok(listener) = std::net::TcpListener::bind("[::]:0") else { return };
        let port = listener.local_addr().unwrap().port();
        let client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (server_side, peer) = listener.accept().unwrap();
        assert!(matches!(peer.ip(), IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some()));
        assert_eq!(owner(peer, server_side.local_addr().unwrap()), Some(own_uid()));
        drop(client);
    }
}
