//! What the proxy lets through: host patterns, address rules, limited mode, and name overrides.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use crate::addr::AddressRule;
use crate::error::{ConfigError, ConfigErrorKind};

/// Where the settings file or the command line names a host to allow, for refusal messages.
pub(crate) const ALLOW_HINT: &str = "add it to `sandbox.network.allowedDomains` in the settings (or a \
`WebFetch(domain:HOST)` allow rule), or pass `--allow-host HOST`";

/// Where an address is allowed, for refusal messages.
pub(crate) const ALLOW_ADDRESS_HINT: &str = "`sandbox.network.allowedAddresses` in the settings";

/// A host name pattern, optionally limited to one port: `example.com`, `*.example.com`,
/// `example.com:443`, or `*` for every host.
///
/// `*.example.com` matches every subdomain (`a.example.com`, `a.b.example.com`) but not
/// `example.com` itself: list both to allow both. Names are compared without case and without a
/// trailing dot (`Example.COM.` is `example.com`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    kind: PatternKind,
    port: Option<u16>,
    text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PatternKind {
    Any,
    Exact(String),
    Subdomains(String),
}

impl HostPattern {
    /// Parses a pattern; the error says what is wrong and what is expected.
    pub fn parse(text: &str) -> Result<HostPattern, ConfigError> {
        let error = |message: String| ConfigError::new(ConfigErrorKind::HostPattern, message);
        let original = text;
        let text = text.trim();
        if text.contains("://") || text.contains('/') {
            return Err(error(format!(
                "`{original}` is not a host pattern: write the host alone, like `example.com` or `*.example.com`"
            )));
        }
        let (host, port) = split_port(text).ok_or_else(|| {
            error(format!("`{original}`: the port after `:` must be a number from 1 to 65535"))
        })?;
        let host = normalize(host).ok_or_else(|| {
            error(format!(
                "`{original}` is not a host pattern: expected a host name like `example.com`, `*.example.com` or `*`"
            ))
        })?;
        let kind = if host == "*" {
            PatternKind::Any
        } else if let Some(rest) = host.strip_prefix("*.") {
            if rest.contains('*') || rest.is_empty() {
                return Err(error(format!(
                    "`{original}`: `*` may only stand alone or begin a pattern, as in `*.example.com`"
                )));
            }
            PatternKind::Subdomains(rest.to_owned())
        } else if host.contains('*') {
            return Err(error(format!(
                "`{original}`: `*` may only stand alone or begin a pattern, as in `*.example.com`"
            )));
        } else {
            PatternKind::Exact(host)
        };
        Ok(HostPattern { kind, port, text: text.to_owned() })
    }

    /// Whether `host` (already normalized) on `port` matches.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        match &self.kind {
            PatternKind::Any => true,
            PatternKind::Exact(name) => name == host,
            PatternKind::Subdomains(parent) => {
                host.len() > parent.len() + 1
                    && host.ends_with(parent.as_str())
                    && host.as_bytes()[host.len() - parent.len() - 1] == b'.'
            }
        }
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Splits `host:port` (or `[v6]:port`); `None` when the port is not a valid one.
fn split_port(text: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        return match after.strip_prefix(':') {
            Some(port) => Some((inside, Some(port.parse().ok().filter(|p| *p != 0)?))),
            None if after.is_empty() => Some((inside, None)),
            None => None,
        };
    }
    match text.rsplit_once(':') {
        // A bare IPv6 address has several colons and no port.
        Some((host, _)) if host.contains(':') => Some((text, None)),
        Some((host, port)) => Some((host, Some(port.parse().ok().filter(|p| *p != 0)?))),
        None => Some((text, None)),
    }
}

/// A host name in the form rules compare: lower case, no trailing dot, brackets removed from
/// an IPv6 address. `None` for text that is no host name (spaces, control characters, `@`,
/// percent signs, anything outside letters, digits, `-`, `_`, `.`, `*` and an address's `:`).
pub(crate) fn normalize(host: &str) -> Option<String> {
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(ip.to_canonical().to_string());
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty()
        || host.len() > 253
        || host.starts_with('.')
        || host.contains("..")
        || !host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'*'))
    {
        return None;
    }
    Some(host.to_ascii_lowercase())
}

/// A host pattern with where it came from (a settings key, `--allow-host`), named in refusals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRule {
    /// The pattern.
    pub pattern: HostPattern,
    /// Where it was configured, e.g. `sandbox.network.deniedDomains in ~/.claude/settings.json`.
    pub origin: Arc<str>,
}

/// The rules of an egress proxy.
///
/// A connection to `host:port` is decided in this order:
///
/// 1. a **denied** pattern matches: refused (nothing else can allow it);
/// 2. an **allowed** pattern matches, or the host is an address an **address rule** allows:
///    allowed;
/// 3. the host was allowed for the session by an earlier answer: allowed;
/// 4. an **asker** is installed: it is asked (allow once, allow for the session, or deny);
/// 5. otherwise refused.
///
/// Then the name is resolved, once, and every address that is not on the public internet
/// ([`special_range`](crate::special_range): loopback, private, link-local, metadata ...) is
/// dropped unless an address rule allows it; the proxy connects to one of the addresses it
/// kept, never resolving the name again, so a name that changes its answer (DNS rebinding)
/// cannot lead it to a local address.
///
/// In **limited** mode only plain-HTTP `GET`, `HEAD` and `OPTIONS` pass; `CONNECT` and SOCKS5
/// tunnels and WebSocket upgrades, whose content the proxy cannot see, are refused.
#[derive(Debug, Clone, Default)]
pub struct EgressPolicy {
    pub(crate) denied: Vec<HostRule>,
    pub(crate) asked: Vec<HostRule>,
    pub(crate) allowed: Vec<HostRule>,
    pub(crate) addresses: Vec<(AddressRule, Arc<str>)>,
    pub(crate) limited: bool,
    pub(crate) never_ask: bool,
    pub(crate) overrides: HashMap<String, Vec<IpAddr>>,
    pub(crate) system_resolver: Option<bool>,
    pub(crate) secrets: Vec<Secret>,
}

/// A secret a command sees only as a placeholder, swapped back by the proxy in the headers of
/// the requests to the hosts allowed for it: inside TLS the proxy terminates, and in plain HTTP
/// only to the hosts named with `http://`.
#[derive(Clone)]
pub(crate) struct Secret {
    /// The environment variable that holds the placeholder in commands, when one does.
    pub(crate) var: Option<String>,
    pub(crate) placeholder: String,
    pub(crate) value: String,
    /// Every host it may be sent to (over TLS).
    pub(crate) hosts: Vec<HostPattern>,
    /// Those of `hosts` it may be sent to in plain HTTP too.
    pub(crate) plain_http: Vec<HostPattern>,
}

impl Secret {
    /// Whether the secret may go to `host` on `port`, in a request inside TLS (`tls`) or not.
    pub(crate) fn goes_to(&self, host: &str, port: u16, tls: bool) -> bool {
        let patterns = if tls { &self.hosts } else { &self.plain_http };
        patterns.iter().any(|p| p.matches(host, port))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The value never reaches a log.
        f.debug_struct("Secret")
            .field("var", &self.var)
            .field("placeholder", &self.placeholder)
            .field("hosts", &self.hosts)
            .finish()
    }
}

/// A fresh placeholder for the secret `name`: what the command gets in its environment instead
/// of the value (`egress-placeholder-NAME-<random hex>`).
pub fn placeholder(name: &str) -> String {
    let mut random = [0u8; 16];
    // The placeholder is no secret; randomness only keeps it from matching text a command writes.
    let _ = getrandom::fill(&mut random);
    format!("egress-placeholder-{name}-{:032x}", u128::from_le_bytes(random))
}

impl EgressPolicy {
    /// A policy that allows nothing (every host is asked about, or refused without an asker).
    pub fn new() -> Self {
        Self::default()
    }

    /// Allows hosts matching `pattern` (see [`HostPattern`]); `origin` names where the rule
    /// comes from in refusal messages.
    pub fn allow_host(mut self, pattern: &str, origin: &str) -> Result<Self, ConfigError> {
        self.allowed.push(HostRule { pattern: HostPattern::parse(pattern)?, origin: origin.into() });
        Ok(self)
    }

    /// Refuses hosts matching `pattern`, whatever else allows them.
    pub fn deny_host(mut self, pattern: &str, origin: &str) -> Result<Self, ConfigError> {
        self.denied.push(HostRule { pattern: HostPattern::parse(pattern)?, origin: origin.into() });
        Ok(self)
    }

    /// Asks about hosts matching `pattern` whatever allows them (a denied host stays refused):
    /// each connection to one is asked about, or refused without an asker, never-ask or not.
    pub fn ask_host(mut self, pattern: &str, origin: &str) -> Result<Self, ConfigError> {
        self.asked.push(HostRule { pattern: HostPattern::parse(pattern)?, origin: origin.into() });
        Ok(self)
    }

    /// Allows an address or a network (`127.0.0.1`, `10.0.0.0/8`): as a target given by
    /// address, and as the result of resolving an allowed name even when it is private,
    /// loopback or link-local.
    pub fn allow_address(mut self, rule: &str, origin: &str) -> Result<Self, ConfigError> {
        self.addresses.push((rule.parse()?, origin.into()));
        Ok(self)
    }

    /// Limited mode: only plain-HTTP `GET`, `HEAD` and `OPTIONS`; tunnels are refused.
    pub fn limited(mut self, limited: bool) -> Self {
        self.limited = limited;
        self
    }

    /// Never ask about a host no rule names: refuse it (an installed asker is not called).
    pub fn never_ask(mut self, never: bool) -> Self {
        self.never_ask = never;
        self
    }

    /// Answers `host` with `addresses` instead of asking the system resolver (for tests, and
    /// for names a deployment pins). The addresses are still checked like any others.
    pub fn resolve(mut self, host: &str, addresses: impl IntoIterator<Item = IpAddr>) -> Self {
        let host = normalize(host).unwrap_or_else(|| host.to_ascii_lowercase());
        self.overrides.insert(host, addresses.into_iter().collect());
        self
    }

    /// Whether names without an override are looked up with the system resolver (default: yes,
    /// unless an override is set, which makes the overrides the only names known; turn it back on
    /// with `true`).
    pub fn system_resolver(mut self, on: bool) -> Self {
        self.system_resolver = Some(on);
        self
    }

    /// Swaps `placeholder` (see [`placeholder`]) back to `value` in the headers of requests to
    /// hosts matching one of `hosts`; a request to any other host carries the placeholder, which
    /// is worth nothing. The secret goes only inside TLS: with the `tls` feature the proxy
    /// terminates a `CONNECT` to those hosts with the session's CA, checks the host's own
    /// certificate, and puts the secret into the requests inside. A plain-HTTP request, which
    /// anyone on the path can read, gets it only when its host is written with the scheme,
    /// `http://host` (or `http://host:port`), which allows both.
    pub fn secret(mut self, placeholder: &str, value: &str, hosts: &[&str]) -> Result<Self, ConfigError> {
        if placeholder.len() < 16 {
            return Err(ConfigError::new(
                ConfigErrorKind::Secret,
                "a secret's placeholder must be at least 16 characters, so that it cannot occur by chance",
            ));
        }
        let (mut patterns, mut plain_http) = (Vec::new(), Vec::new());
        for host in hosts {
            match host.trim().strip_prefix("http://") {
                Some(plain) => {
                    let pattern = HostPattern::parse(plain)?;
                    plain_http.push(pattern.clone());
                    patterns.push(pattern);
                }
                None => patterns.push(HostPattern::parse(host)?),
            }
        }
        self.secrets.push(Secret {
            var: None,
            placeholder: placeholder.to_owned(),
            value: value.to_owned(),
            hosts: patterns,
            plain_http,
        });
        Ok(self)
    }

    /// The secret `value` of the environment variable `var`: commands started with
    /// [`EgressProxy::env`](crate::EgressProxy::env) get a fresh [`placeholder`] in `var`
    /// instead, which the proxy swaps back to `value` only in the headers of requests to
    /// `hosts` inside TLS, or in plain HTTP to those written `http://host` (as
    /// [`EgressPolicy::secret`] does). The settings file names them in
    /// `sandbox.network.secrets` (see [`settings`](crate::settings)).
    pub fn secret_var(self, var: &str, value: &str, hosts: &[&str]) -> Result<Self, ConfigError> {
        let valid = !var.is_empty()
            && !var.starts_with(|c: char| c.is_ascii_digit())
            && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(ConfigError::new(
                ConfigErrorKind::Secret,
                format!(
                    "`{var}` is not an environment variable name (letters, digits and `_`, not starting with a digit)"
                ),
            ));
        }
        if hosts.is_empty() {
            return Err(ConfigError::new(
                ConfigErrorKind::Secret,
                format!("the secret `{var}` names no host it may be sent to"),
            ));
        }
        let mut policy = self.secret(&placeholder(var), value, hosts)?;
        if let Some(secret) = policy.secrets.last_mut() {
            secret.var = Some(var.to_owned());
        }
        Ok(policy)
    }

    /// The environment variables that hold secrets' placeholders, with their placeholders.
    pub fn placeholders(&self) -> Vec<(String, String)> {
        self.secrets.iter().filter_map(|s| Some((s.var.clone()?, s.placeholder.clone()))).collect()
    }

    /// The rules in one line, for a program to say once what its commands may reach:
    /// `allows crates.io, *.crates.io; denies *.internal; other hosts are asked about`.
    pub fn describe(&self) -> String {
        let list =
            |rules: &[HostRule]| rules.iter().map(|r| r.pattern.to_string()).collect::<Vec<_>>().join(", ");
        let mut parts = Vec::new();
        parts.push(if self.allowed.is_empty() {
            "allows no host by name".to_owned()
        } else {
            format!("allows {}", list(&self.allowed))
        });
        if !self.addresses.is_empty() {
            let addresses: Vec<String> = self.addresses.iter().map(|(rule, _)| rule.to_string()).collect();
            parts.push(format!("allows the addresses {}", addresses.join(", ")));
        }
        if !self.asked.is_empty() {
            parts.push(format!("asks about {}", list(&self.asked)));
        }
        if !self.denied.is_empty() {
            parts.push(format!("denies {}", list(&self.denied)));
        }
        if self.limited {
            parts.push("limited mode (plain-HTTP GET, HEAD and OPTIONS only)".to_owned());
        }
        let secrets: Vec<String> = self.placeholders().into_iter().map(|(var, _)| var).collect();
        if !secrets.is_empty() {
            parts.push(format!(
                "commands see placeholders for {}, put back only in request headers to their hosts, inside TLS",
                secrets.join(", ")
            ));
        }
        parts.push(
            if self.never_ask { "other hosts are refused" } else { "other hosts are asked about" }.to_owned(),
        );
        parts.join("; ")
    }

    /// Whether the policy is in limited mode.
    pub fn is_limited(&self) -> bool {
        self.limited
    }

    /// Adds every rule of `other` to this policy (denied, allowed, addresses, overrides);
    /// limited mode and never-ask are kept when either sets them.
    pub fn merge(mut self, other: EgressPolicy) -> Self {
        self.denied.extend(other.denied);
        self.asked.extend(other.asked);
        self.allowed.extend(other.allowed);
        self.addresses.extend(other.addresses);
        self.limited |= other.limited;
        self.never_ask |= other.never_ask;
        self.overrides.extend(other.overrides);
        self.secrets.extend(other.secrets);
        self.system_resolver = other.system_resolver.or(self.system_resolver);
        self
    }

    pub(crate) fn uses_system_resolver(&self) -> bool {
        self.system_resolver.unwrap_or(self.overrides.is_empty())
    }

    pub(crate) fn denied_by(&self, host: &str, port: u16) -> Option<&HostRule> {
        self.denied.iter().find(|r| r.pattern.matches(host, port))
    }

    pub(crate) fn asked_by(&self, host: &str, port: u16) -> Option<&HostRule> {
        self.asked.iter().find(|r| r.pattern.matches(host, port))
    }

    pub(crate) fn allowed_by(&self, host: &str, port: u16) -> Option<&HostRule> {
        self.allowed.iter().find(|r| r.pattern.matches(host, port))
    }

    pub(crate) fn address_allowed(&self, ip: IpAddr) -> bool {
        self.addresses.iter().any(|(rule, _)| rule.contains(ip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, host: &str, port: u16) -> bool {
        HostPattern::parse(pattern).unwrap().matches(&normalize(host).unwrap(), port)
    }

    #[test]
    fn exact_and_wildcard_patterns() {
        assert!(matches("example.com", "example.com", 443));
        assert!(matches("example.com", "EXAMPLE.com.", 80));
        assert!(!matches("example.com", "www.example.com", 443));
        assert!(matches("*.example.com", "www.example.com", 443));
        assert!(matches("*.example.com", "a.b.example.com", 443));
        assert!(!matches("*.example.com", "example.com", 443), "the apex is not a subdomain");
        assert!(!matches("*.example.com", "badexample.com", 443));
        assert!(!matches("*.example.com", "example.com.evil.net", 443));
        assert!(matches("*", "anything.org", 1));
        assert!(matches("example.com:443", "example.com", 443));
        assert!(!matches("example.com:443", "example.com", 80));
        assert!(matches("127.0.0.1", "127.0.0.1", 80));
        assert!(matches("[::1]:8080", "::1", 8080));
    }

    #[test]
    fn bad_patterns_are_refused_with_a_reason() {
        for bad in [
            "https://example.com",
            "ex ample.com",
            "a*.example.com",
            "*.*.example.com",
            "example.com:0",
            "example.com:http",
            "",
        ] {
            let err = HostPattern::parse(bad).unwrap_err();
            assert_eq!(err.kind(), crate::ConfigErrorKind::HostPattern);
            assert!(err.to_string().contains('`'), "{bad}: {err}");
        }
    }

    #[test]
    fn host_names_that_are_not_names_do_not_normalize() {
        for bad in ["evil.com\0.ok.com", "a b", "user@host", "ho%73t", ".x", "a..b", ""] {
            assert_eq!(normalize(bad), None, "{bad:?}");
        }
        assert_eq!(normalize("[::FFFF:127.0.0.1]").as_deref(), Some("127.0.0.1"));
    }
}
