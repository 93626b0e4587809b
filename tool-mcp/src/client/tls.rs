//! TLS for `https://` servers (feature `mcp-https`): trusted roots, and what a refused
//! certificate means for the person who configured the server.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// Why the verifier last refused a certificate, kept so that a failed handshake can say why
/// without reading it out of the text of the HTTP client's error.
#[derive(Clone, Default)]
pub(crate) struct Refusals(Arc<Mutex<Option<CertificateError>>>);

impl Refusals {
    /// What to tell the operator about the refused certificate, if one was refused.
    pub(crate) fn explain(&self, url: &str) -> Option<String> {
        let refused = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()?;
        Some(explain(&refused, url))
    }
}

fn explain(refused: &CertificateError, url: &str) -> String {
    match refused {
        CertificateError::UnknownIssuer => format!(
            "its TLS certificate is not signed by a trusted authority (unknown issuer) at `{url}`; if the server uses a private CA, set `caCert` in its entry to that CA's PEM file"
        ),
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => format!(
            "its TLS certificate does not name the host of `{url}` (name mismatch: {refused}); use a host name the certificate is issued for in `url`"
        ),
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            format!("its TLS certificate has expired ({refused}); the server's certificate must be renewed")
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => format!(
            "its TLS certificate is not valid yet ({refused}); check this machine's clock and the server's certificate"
        ),
        other => format!("its TLS certificate at `{url}` was refused ({other})"),
    }
}

/// The TLS configuration of one server: the public (Mozilla) roots plus the CA certificates of
/// `ca_cert`, verified with `ring`. Refusals are recorded in `refusals`.
pub(crate) fn client_config(
    ca_cert: Option<&Path>,
    refusals: &Refusals,
) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    if let Some(path) = ca_cert {
        for certificate in read_pem(path)? {
            roots.add(certificate).map_err(|e| {
                format!("`caCert` {}: a certificate in it cannot be used as a CA ({e})", path.display())
            })?;
        }
    }
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| format!("cannot set up TLS verification ({e})"))?;
    let verifier = Arc::new(RecordingVerifier { inner, refusals: refusals.clone() });
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS ({e})"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(config)
}

fn read_pem(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read `caCert` {} ({e}); check the path in its entry", path.display()))?;
    let certificates = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("`caCert` {} is not a valid PEM file ({e})", path.display()))?;
    if certificates.is_empty() {
        return Err(format!(
            "`caCert` {} holds no `BEGIN CERTIFICATE` block; give the CA's certificate in PEM form",
            path.display()
        ));
    }
    Ok(certificates)
}

/// rustls's own verifier, remembering why it refused a certificate.
#[derive(Debug)]
struct RecordingVerifier {
    inner: Arc<WebPkiServerVerifier>,
    refusals: Refusals,
}

impl std::fmt::Debug for Refusals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Refusals").finish_non_exhaustive()
    }
}

impl ServerCertVerifier for RecordingVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified =
            self.inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        if let Err(rustls::Error::InvalidCertificate(refused)) = &verified {
            *self.refusals.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(refused.clone());
        }
        verified
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
