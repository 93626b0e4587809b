//! TLS termination for the `CONNECT` targets a secret may be sent to: the proxy answers the
//! client's TLS with a certificate of a CA of its own session, reads the HTTP/1.1 requests
//! inside, puts the secret in place of its placeholder in their headers, and sends them on over
//! TLS of its own to the host, whose certificate it verifies. Every other tunnel stays blind.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::error::{ConfigError, ConfigErrorKind};

/// The bundles of trusted roots clients read, in the order they are looked for; the first
/// that exists is copied into the session's bundle, ahead of the session's CA.
const SYSTEM_BUNDLES: [&str; 5] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
];

/// Variables that point common clients at a bundle of trusted roots: OpenSSL and Go
/// (`SSL_CERT_FILE`), `curl`, `git`, cargo, Python's `requests`, and Node (which adds to its own).
/// Where TLS is terminated, a command's environment ([`EgressProxy::env`](crate::EgressProxy::env))
/// sets each of them to the session's bundle: the system's roots and the session's CA.
pub const CA_BUNDLE_VARIABLES: [&str; 6] = [
    "SSL_CERT_FILE",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
    "CARGO_HTTP_CAINFO",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
];

/// What is trusted for the hosts the proxy opens TLS to.
#[derive(Clone)]
pub(crate) enum UpstreamRoots {
    /// Mozilla's roots (`webpki-roots`), the same on every machine.
    Mozilla,
    /// These certificates only.
    Only(Vec<CertificateDer<'static>>),
}

/// A session's CA, the certificates it made, and the bundle file handed to commands.
pub(crate) struct Terminator {
    issuer: Issuer<'static, KeyPair>,
    ca_der: CertificateDer<'static>,
    acceptors: Mutex<LeafCache>,
    connector: TlsConnector,
    bundle: Bundle,
}

/// How many hosts' certificates a session keeps: a secret's hosts may be a pattern
/// (`*.example.com`) that names without end, and each certificate is a key and a signature.
const LEAF_CACHE: usize = 256;

/// The acceptors made for hosts, at most `capacity`; the one used least recently goes first.
struct LeafCache {
    capacity: usize,
    /// Host -> (acceptor, the tick of its last use).
    entries: HashMap<String, (TlsAcceptor, u64)>,
    tick: u64,
}

impl LeafCache {
    fn new(capacity: usize) -> LeafCache {
        LeafCache { capacity: capacity.max(1), entries: HashMap::new(), tick: 0 }
    }

    fn get(&mut self, host: &str) -> Option<TlsAcceptor> {
        self.tick += 1;
        let (acceptor, used) = self.entries.get_mut(host)?;
        *used = self.tick;
        Some(acceptor.clone())
    }

    fn insert(&mut self, host: &str, acceptor: TlsAcceptor) {
        if self.entries.len() >= self.capacity
            && !self.entries.contains_key(host)
            && let Some(oldest) =
                self.entries.iter().min_by_key(|(_, (_, used))| *used).map(|(host, _)| host.clone())
        {
            // A scan of at most `LEAF_CACHE` entries costs far less than the key it saves.
            self.entries.remove(&oldest);
        }
        self.tick += 1;
        self.entries.insert(host.to_owned(), (acceptor, self.tick));
    }
}

/// The bundle file, removed when the session ends. It holds certificates only, no key.
struct Bundle {
    path: PathBuf,
    /// Whether it holds the system's roots as well as the session's CA: only then may it replace
    /// a client's roots (`SSL_CERT_FILE`); without them only Node's variable, which adds, is set.
    complete: bool,
}

impl Drop for Bundle {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn crypto() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn invalid(error: impl std::fmt::Display) -> io::Error {
    io::Error::other(error.to_string())
}

impl Terminator {
    /// Makes the session's CA (its key stays in this process's memory) and writes the bundle
    /// (the system's roots, then the CA) to a file of its own in `dir`, made with `O_EXCL` (a name
    /// planted there is not written through) and readable by all (it holds certificates only).
    pub(crate) fn new(roots: &UpstreamRoots, dir: &std::path::Path) -> io::Result<Terminator> {
        let key = KeyPair::generate().map_err(invalid)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(invalid)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.distinguished_name.push(DnType::CommonName, "tool-egress session CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = params.self_signed(&key).map_err(invalid)?;
        let ca_pem = ca.pem();
        let ca_der = ca.der().clone();
        let issuer = Issuer::new(params, key);

        let system = SYSTEM_BUNDLES.iter().find_map(|path| std::fs::read_to_string(path).ok());
        let complete = system.is_some();
        let mut text = system.unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&ca_pem);
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).map_err(invalid)?;
        let name: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let path = dir.join(format!("tool-egress-ca-{name}.pem"));
        let mut file = std::fs::OpenOptions::new();
        file.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut file, 0o644);
        std::io::Write::write_all(&mut file.open(&path)?, text.as_bytes())?;
        let bundle = Bundle { path, complete };

        let mut store = rustls::RootCertStore::empty();
        match roots {
            UpstreamRoots::Mozilla => store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            UpstreamRoots::Only(certs) => {
                for cert in certs {
                    store.add(cert.clone()).map_err(invalid)?;
                }
            }
        }
        let mut client = rustls::ClientConfig::builder_with_provider(crypto())
            .with_safe_default_protocol_versions()
            .map_err(invalid)?
            .with_root_certificates(store)
            .with_no_client_auth();
        client.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Terminator {
            issuer,
            ca_der,
            acceptors: Mutex::new(LeafCache::new(LEAF_CACHE)),
            connector: TlsConnector::from(Arc::new(client)),
            bundle,
        })
    }

    /// The variables that make clients trust the session's CA.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        let path = self.bundle.path.display().to_string();
        CA_BUNDLE_VARIABLES
            .iter()
            .filter(|var| self.bundle.complete || **var == "NODE_EXTRA_CA_CERTS")
            .map(|var| ((*var).to_owned(), path.clone()))
            .collect()
    }

    /// The bundle file.
    pub(crate) fn bundle(&self) -> &Path {
        &self.bundle.path
    }

    /// Opens TLS to `host` over `stream`, verifying its certificate; the error is a sentence.
    pub(crate) async fn connect(
        &self,
        host: &str,
        stream: TcpStream,
    ) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
        let name = ServerName::try_from(host.to_owned())
            .map_err(|_| format!("`{host}` is not a name a certificate can be checked against"))?;
        self.connector.connect(name, stream).await.map_err(|e| e.to_string())
    }

    /// The acceptor presenting a certificate for `host`, made once per host and kept while it
    /// is among the `LEAF_CACHE` hosts used most recently.
    pub(crate) fn acceptor(&self, host: &str) -> io::Result<TlsAcceptor> {
        let mut acceptors = self.acceptors.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(acceptor) = acceptors.get(host) {
            return Ok(acceptor);
        }
        let key = KeyPair::generate().map_err(invalid)?;
        let mut params = CertificateParams::new(vec![host.to_owned()]).map_err(invalid)?;
        params.distinguished_name.push(DnType::CommonName, host);
        let leaf = params.signed_by(&key, &self.issuer).map_err(invalid)?;
        let chain = vec![leaf.der().clone(), self.ca_der.clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut server = rustls::ServerConfig::builder_with_provider(crypto())
            .with_safe_default_protocol_versions()
            .map_err(invalid)?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(invalid)?;
        // Only HTTP/1.1 is spoken inside: a client that offers `h2` as well falls back to it, and
        // one that offers `h2` alone is refused in the handshake (`no_application_protocol`).
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(server));
        acceptors.insert(host, acceptor.clone());
        Ok(acceptor)
    }
}

/// Reads the certificates of a PEM text.
pub(crate) fn parse_pem(pem: &str) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let error = |message: String| ConfigError::new(ConfigErrorKind::Certificates, message);
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| error(format!("the roots are not PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(error("the roots hold no PEM certificate (`-----BEGIN CERTIFICATE-----`)".to_owned()));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &TlsAcceptor, b: &TlsAcceptor) -> bool {
        Arc::ptr_eq(a.config(), b.config())
    }

    #[test]
    fn the_leaf_cache_keeps_the_hosts_used_most_recently_and_no_more() {
        let tls = Terminator::new(&UpstreamRoots::Only(Vec::new()), &std::env::temp_dir()).unwrap();
        let first = tls.acceptor("host-0.test").unwrap();
        let second = tls.acceptor("host-1.test").unwrap();
        for n in 2..LEAF_CACHE {
            tls.acceptor(&format!("host-{n}.test")).unwrap();
        }
        assert_eq!(tls.acceptors.lock().unwrap().entries.len(), LEAF_CACHE);
        // Used again, the first host becomes the most recent; the next new host evicts the second.
        assert!(same(&tls.acceptor("host-0.test").unwrap(), &first));
        tls.acceptor("one-more.test").unwrap();
        let cache = tls.acceptors.lock().unwrap();
        assert_eq!(cache.entries.len(), LEAF_CACHE);
        assert!(cache.entries.contains_key("host-0.test") && cache.entries.contains_key("one-more.test"));
        assert!(!cache.entries.contains_key("host-1.test"));
        drop(cache);
        // An evicted host gets a certificate again when it comes back.
        assert!(!same(&tls.acceptor("host-1.test").unwrap(), &second));
        assert!(same(&tls.acceptor("host-0.test").unwrap(), &first));
    }

    #[test]
    fn the_leaf_offers_http_1_1_only() {
        let tls = Terminator::new(&UpstreamRoots::Only(Vec::new()), &std::env::temp_dir()).unwrap();
        assert_eq!(tls.acceptor("a.test").unwrap().config().alpn_protocols, vec![b"http/1.1".to_vec()]);
    }
}
