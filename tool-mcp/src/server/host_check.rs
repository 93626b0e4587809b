//! The HTTP endpoint's defence against DNS rebinding, checked by this server ahead of
//! everything else: the `Host` a request names must be one of this server's (the loopback names,
//! the address it listens on, the hosts its options add), and a browser's `Origin`, when the
//! request carries one, a page of this machine or an origin the options allow.

use std::net::SocketAddr;

use http::header::{HOST, ORIGIN};
use http::uri::Authority;
use http::{HeaderMap, StatusCode, Uri};

/// What a request's `Host` and `Origin` must be.
#[derive(Debug)]
pub(super) struct HostCheck {
    /// `None` accepts any host (`HttpOptions::allow_any_host`).
    hosts: Option<Vec<AllowedHost>>,
    origins: Vec<AllowedOrigin>,
}

/// A host a request may name: a name (any port) or a name and a port.
#[derive(Debug, PartialEq, Eq)]
struct AllowedHost {
    name: String,
    port: Option<u16>,
}

/// An origin a page may have: `null`, or a scheme, host and port (`None`: any port, `:*`).
#[derive(Debug, PartialEq, Eq)]
enum AllowedOrigin {
    Null,
    Page { scheme: String, host: String, port: Option<u16> },
}

/// Pages of this machine, on any port: they may call a loopback server, as with the MCP SDKs'
/// servers.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

impl HostCheck {
    /// The check of a server listening on `local` that also answers to `allowed_hosts` (any
    /// host when `any_host`) and to pages of `allowed_origins`; an allowed host or origin that
    /// is no host or origin is an error naming it.
    pub(super) fn new(
        allowed_hosts: &[String],
        any_host: bool,
        allowed_origins: &[String],
        local: SocketAddr,
    ) -> Result<HostCheck, String> {
        let hosts = if any_host {
            None
        } else {
            let mut names: Vec<String> = ["localhost", "127.0.0.1", "[::1]"].map(str::to_owned).to_vec();
            if !local.ip().is_unspecified() && !local.ip().is_loopback() {
                names.push(SocketAddr::new(local.ip(), 0).to_string().trim_end_matches(":0").to_owned());
            }
            names.extend(allowed_hosts.iter().cloned());
            let parsed = names.iter().map(|name| {
                allowed_host(name).ok_or_else(|| format!("`{name}` is not a host name (or `name:port`)"))
            });
            Some(parsed.collect::<Result<Vec<_>, _>>()?)
        };
        let origins = LOOPBACK_ORIGINS
            .iter()
            .copied()
            .chain(allowed_origins.iter().map(String::as_str))
            .map(|origin| {
                allowed_origin(origin).ok_or_else(|| {
                    format!("`{origin}` is not an origin: write a scheme, host and port (`http://localhost:5173`, `:*` for any port) or `null`")
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(HostCheck { hosts, origins })
    }

    /// `Err` with the status and the sentence to answer when the request may not be served.
    pub(super) fn check(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), (StatusCode, String)> {
        if let Some(hosts) = &self.hosts {
            let mut given = headers.get_all(HOST).iter();
            let host = given.next();
            if given.next().is_some() {
                // A proxy in front may read the other one (RFC 9112 3.2: answered with 400).
                return Err((
                    StatusCode::BAD_REQUEST,
                    "Bad request: the request names more than one `Host`. Send one.".to_owned(),
                ));
            }
            // A target in absolute form names the host itself, which wins over `Host` (RFC 9112
            // 3.2.2): that is the one checked.
            let named = match uri.authority() {
                Some(authority) => Some(authority.clone()),
                None => {
                    host.and_then(|value| value.to_str().ok()).and_then(|text| Authority::try_from(text).ok())
                }
            };
            // A host is a name and a port: `user@localhost` names `localhost` to the parser, and
            // no client reaching this server sends it.
            let named = named.filter(|named| !named.as_str().contains('@'));
            let Some(named) = named else {
                return Err((
                    StatusCode::BAD_REQUEST,
                    "Bad request: the request names no valid `Host`. Send the host and port this server was \
                     reached at."
                        .to_owned(),
                ));
            };
            let name = normalized(named.host());
            let port = named.port_u16();
            if !hosts
                .iter()
                .any(|allowed| allowed.name == name && allowed.port.is_none_or(|p| Some(p) == port))
            {
                return Err((
                    StatusCode::FORBIDDEN,
                    format!(
                        "Forbidden: this server does not answer to the host `{named}` (a protection against DNS \
                         rebinding). Reach it by a loopback name or the address it listens on, or start it \
                         allowing that host."
                    ),
                ));
            }
        }
        let Some(origin) = headers.get(ORIGIN) else { return Ok(()) };
        let page = origin.to_str().ok().and_then(page_origin);
        let allowed =
            page.as_ref().is_some_and(|page| self.origins.iter().any(|allowed| allows(allowed, page)));
        if allowed {
            return Ok(());
        }
        let shown = String::from_utf8_lossy(origin.as_bytes());
        Err((
            StatusCode::FORBIDDEN,
            format!(
                "Forbidden: pages of the origin `{shown}` may not call this server (only pages of this machine \
                 and the origins it was started with may)."
            ),
        ))
    }
}

fn normalized(host: &str) -> String {
    host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase()
}

fn allowed_host(text: &str) -> Option<AllowedHost> {
    let authority = Authority::try_from(text.trim()).ok().filter(|a| !a.as_str().contains('@'))?;
    Some(AllowedHost { name: normalized(authority.host()), port: authority.port_u16() })
}

/// The origin a request's `Origin` names; `None` when it is malformed.
fn page_origin(text: &str) -> Option<AllowedOrigin> {
    let text = text.trim();
    if text == "null" {
        return Some(AllowedOrigin::Null);
    }
    let uri = Uri::try_from(text).ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    // An origin is only a scheme and an authority: no path, query or user.
    if uri.path_and_query().is_some_and(|p| p.as_str() != "/" && !p.as_str().is_empty())
        || authority.as_str().contains('@')
    {
        return None;
    }
    let port = authority.port_u16().or(match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    });
    Some(AllowedOrigin::Page { scheme, host: normalized(authority.host()), port })
}

/// An origin the options allow: like a page's, with `:*` for any port. An entry without a port
/// means the scheme's own (80, 443).
fn allowed_origin(text: &str) -> Option<AllowedOrigin> {
    let text = text.trim();
    match text.strip_suffix(":*") {
        Some(base) if !has_port(base) => match page_origin(base)? {
            AllowedOrigin::Page { scheme, host, .. } => {
                Some(AllowedOrigin::Page { scheme, host, port: None })
            }
            AllowedOrigin::Null => None,
        },
        Some(_) => None,
        None => page_origin(text),
    }
}

/// Whether `base` (a scheme and authority) names a port.
fn has_port(base: &str) -> bool {
    Uri::try_from(base).ok().and_then(|uri| uri.authority().and_then(Authority::port_u16)).is_some()
}

fn allows(allowed: &AllowedOrigin, page: &AllowedOrigin) -> bool {
    match (allowed, page) {
        (AllowedOrigin::Null, AllowedOrigin::Null) => true,
        (
            AllowedOrigin::Page { scheme, host, port },
            AllowedOrigin::Page { scheme: page_scheme, host: page_host, port: page_port },
        ) => scheme == page_scheme && host == page_host && port.is_none_or(|port| Some(port) == *page_port),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(hosts: &[&str], any_host: bool, origins: &[&str], local: &str) -> HostCheck {
        let strings = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        HostCheck::new(&strings(hosts), any_host, &strings(origins), local.parse().unwrap()).unwrap()
    }

    fn request(host: Option<&str>, origin: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(host) = host {
            headers.insert(HOST, host.parse().unwrap());
        }
        if let Some(origin) = origin {
            headers.insert(ORIGIN, origin.parse().unwrap());
        }
        headers
    }

    fn status(check: &HostCheck, host: Option<&str>, origin: Option<&str>) -> u16 {
        let uri: Uri = "/mcp".parse().unwrap();
        match check.check(&uri, &request(host, origin)) {
            Ok(()) => 200,
            Err((status, _)) => status.as_u16(),
        }
    }

    #[test]
    fn hosts_are_the_loopback_names_the_listening_address_and_the_allowed_ones() {
        let check = check(&["mcp.internal:8080"], false, &[], "10.0.0.5:8080");
        for host in [
            "localhost:8080",
            "127.0.0.1:8080",
            "[::1]:8080",
            "LOCALHOST",
            "10.0.0.5:8080",
            "mcp.internal:8080",
        ] {
            assert_eq!(status(&check, Some(host), None), 200, "{host}");
        }
        for host in ["attacker.example", "mcp.internal:9000", "localhost.attacker.example", "127.0.0.2"] {
            assert_eq!(status(&check, Some(host), None), 403, "{host}");
        }
        assert_eq!(status(&check, Some("bad host"), None), 400);
        assert_eq!(status(&check, Some("attacker.example@localhost"), None), 400, "userinfo is no host");
        assert_eq!(status(&check, None, None), 400, "no Host and no authority");
        let any = super::tests::check(&[], true, &[], "127.0.0.1:1");
        assert_eq!(status(&any, Some("attacker.example"), None), 200);
        assert_eq!(
            status(&any, Some("attacker.example"), Some("http://evil.example")),
            403,
            "the origin still counts"
        );
    }

    #[test]
    fn origins_are_pages_of_this_machine_and_the_allowed_ones() {
        let check =
            check(&[], false, &["http://app.example:5173", "https://docs.example", "null"], "127.0.0.1:1");
        let host = Some("localhost");
        for origin in [
            "http://localhost:8000",
            "http://127.0.0.1:3000",
            "https://[::1]:1",
            "http://app.example:5173",
            "https://docs.example",
            "https://docs.example:443",
            "null",
        ] {
            assert_eq!(status(&check, host, Some(origin)), 200, "{origin}");
        }
        for origin in [
            "http://evil.example",
            "http://app.example:8000",
            "http://app.example",
            "https://docs.example:8443",
            "http://docs.example",
            "http://localhost.evil.example",
            "http://user@localhost:1",
            "nonsense",
            "",
        ] {
            assert_eq!(status(&check, host, Some(origin)), 403, "{origin}");
        }
        assert_eq!(status(&check, host, None), 200, "clients that are not browsers send no Origin");
        let strict = super::tests::check(&[], false, &[], "127.0.0.1:1");
        assert_eq!(status(&strict, host, Some("null")), 403);
    }

    #[test]
    fn two_hosts_are_refused_and_an_absolute_target_names_the_host() {
        let check = check(&[], false, &[], "127.0.0.1:8080");
        let mut two = request(Some("localhost:8080"), None);
        two.append(HOST, "evil.example".parse().unwrap());
        assert_eq!(check.check(&"/mcp".parse().unwrap(), &two).unwrap_err().0.as_u16(), 400);
        let one = request(Some("localhost:8080"), None);
        let absolute: Uri = "http://evil.example/mcp".parse().unwrap();
        assert_eq!(check.check(&absolute, &one).unwrap_err().0.as_u16(), 403);
        let absolute: Uri = "http://localhost:8080/mcp".parse().unwrap();
        assert!(check.check(&absolute, &one).is_ok());
    }

    #[test]
    fn an_allowed_entry_that_is_no_host_or_origin_is_refused_at_start() {
        let local = "127.0.0.1:1".parse().unwrap();
        let one = |text: &str| vec![text.to_owned()];
        assert!(HostCheck::new(&[], false, &one("app.example"), local).is_err());
        assert!(HostCheck::new(&[], false, &one("http://app.example:80:*"), local).is_err());
        assert!(HostCheck::new(&one("a b"), false, &[], local).is_err());
    }
}
