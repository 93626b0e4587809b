//! Addresses: which ones are not the public internet, and address rules (`10.0.0.0/8`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use crate::error::{ConfigError, ConfigErrorKind};

/// Why an address is not on the public internet, or `None` when it is.
///
/// Covers every range a request could use to reach this machine, its network or a cloud's
/// instance metadata: loopback, "this network" (`0.0.0.0/8`, which Linux routes to this
/// machine), private (RFC 1918), link-local (`169.254.169.254`, `fe80::/10`), carrier-grade NAT
/// (`100.64.0.0/10`, where `100.100.100.200` lives), the IETF protocol block (`192.0.0.0/24`),
/// unique-local IPv6 (`fc00::/7`, where `fd00:ec2::254` lives), documentation, benchmarking,
/// multicast, broadcast and reserved ranges. IPv6 forms that carry an IPv4 address (mapped
/// `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by that address; the
/// other tunnelling and translation ranges are refused whole.
pub fn special_range(ip: IpAddr) -> Option<&'static str> {
    match ip.to_canonical() {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => "\"this network\" (0.0.0.0/8, which reaches this machine)",
        (10, _, _) => "private (10.0.0.0/8)",
        (127, _, _) => "loopback (127.0.0.0/8)",
        (100, 64..=127, _) => "carrier-grade NAT (100.64.0.0/10, where some clouds serve instance metadata)",
        (169, 254, _) => "link-local (169.254.0.0/16, where clouds serve instance metadata)",
        (172, 16..=31, _) => "private (172.16.0.0/12)",
        (192, 0, 0) => "IETF protocol assignment (192.0.0.0/24, where some clouds serve instance metadata)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (192, 88, 99) => "6to4 relay (192.88.99.0/24)",
        (192, 168, _) => "private (192.168.0.0/16)",
        (198, 18..=19, _) => "benchmarking (198.18.0.0/15)",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved or broadcast (240.0.0.0/4)",
        _ => return None,
    })
}

fn special_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some("unspecified (::)");
    }
    if ip.is_loopback() {
        return Some("loopback (::1)");
    }
    Some(match s[0] {
        // NAT64 (RFC 6052): judged by the IPv4 address it carries.
        0x64 if s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] => return special_v4(embedded(s[6], s[7])),
        0x64 if s[1] == 0xff9b && s[2] == 1 => "local-use NAT64 (64:ff9b:1::/48)",
        // 6to4: the IPv4 address is in the second and third segments.
        0x2002 => return special_v4(embedded(s[1], s[2])),
        0x2001 if s[1] == 0 => "Teredo tunnelling (2001::/32)",
        0x2001 if s[1] == 0xdb8 => "documentation (2001:db8::/32)",
        0x0100 if s[1..4] == [0, 0, 0] => "discard-only (100::/64)",
        x if x & 0xfe00 == 0xfc00 => "unique-local (fc00::/7, where some clouds serve instance metadata)",
        x if x & 0xffc0 == 0xfe80 => "link-local (fe80::/10)",
        x if x & 0xffc0 == 0xfec0 => "site-local (fec0::/10)",
        x if x & 0xff00 == 0xff00 => "multicast (ff00::/8)",
        // `::a.b.c.d` (IPv4-compatible, deprecated) and the rest of ::/8.
        0 => "reserved (::/8)",
        _ => return None,
    })
}

fn embedded(high: u16, low: u16) -> Ipv4Addr {
    Ipv4Addr::from((u32::from(high) << 16) | u32::from(low))
}

/// An address or a network of addresses: `127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`.
///
/// IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`) match the IPv4 rules and the reverse, so a
/// rule cannot be dodged by writing the same address the other way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressRule {
    network: IpAddr,
    prefix: u8,
}

impl AddressRule {
    /// Whether `ip` is in this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for AddressRule {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<Self, ConfigError> {
        let text = text.trim();
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (text, None),
        };
        let addr = addr.strip_prefix('[').and_then(|a| a.strip_suffix(']')).unwrap_or(addr);
        let network: IpAddr = addr.parse().map_err(|_| {
            ConfigError::new(
                ConfigErrorKind::Address,
                format!(
                    "`{text}` is not an address or a network; write one like `127.0.0.1`, `10.0.0.0/8` or `fd00::/8`"
                ),
            )
        })?;
        let network = network.to_canonical();
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => match p.parse::<u8>() {
                Ok(p) if p <= max => p,
                _ => {
                    return Err(ConfigError::new(
                        ConfigErrorKind::Address,
                        format!("`{text}`: the prefix length must be a number from 0 to {max}"),
                    ));
                }
            },
        };
        Ok(AddressRule { network, prefix })
    }
}

impl fmt::Display for AddressRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn special(text: &str) -> bool {
        special_range(text.parse().unwrap()).is_some()
    }

    #[test]
    fn metadata_private_and_local_addresses_are_special() {
        for addr in [
            "169.254.169.254",
            "fd00:ec2::254",
            "100.100.100.200",
            "192.0.0.192",
            "127.0.0.1",
            "127.8.9.10",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "::127.0.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "2001::1",
        ] {
            assert!(special(addr), "{addr} should be refused");
        }
    }

    #[test]
    fn public_addresses_are_not_special() {
        for addr in
            ["93.184.216.34", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "64:ff9b::101:101"]
        {
            assert!(!special(addr), "{addr} should pass");
        }
    }

    #[test]
    fn address_rules_match_networks_and_mapped_forms() {
        let rule: AddressRule = "127.0.0.1".parse().unwrap();
        assert!(rule.contains("127.0.0.1".parse().unwrap()));
        assert!(rule.contains("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!rule.contains("127.0.0.2".parse().unwrap()));
        let net: AddressRule = "10.0.0.0/8".parse().unwrap();
        assert!(net.contains("10.200.1.1".parse().unwrap()));
        assert!(!net.contains("11.0.0.1".parse().unwrap()));
        let v6: AddressRule = "fd00::/8".parse().unwrap();
        assert!(v6.contains("fd00:ec2::254".parse().unwrap()));
        assert!(!v6.contains("fe80::1".parse().unwrap()));
        let all: AddressRule = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
        assert!("10.0.0.0/33".parse::<AddressRule>().is_err());
        assert!("example.com".parse::<AddressRule>().is_err());
    }
}
