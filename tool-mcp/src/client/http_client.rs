//! The HTTP client of one `url` server: reqwest as rmcp's default client sets it up, with TLS
//! when the build has it (feature `mcp-https`).

#[cfg(feature = "https")]
use super::tls;

/// Why a client last refused a server's certificate (never, without TLS).
#[derive(Default)]
pub(crate) struct CertificateRefusal {
    #[cfg(feature = "https")]
    refusals: tls::Refusals,
}

impl CertificateRefusal {
    /// What to tell the operator when the handshake failed on the server's certificate.
    pub(crate) fn explain(&self, url: &str) -> Option<String> {
        #[cfg(feature = "https")]
        return self.refusals.explain(url);
        #[cfg(not(feature = "https"))]
        {
            let _ = url;
            None
        }
    }
}

/// A client for one server: `https` ones trust the public roots and `ca_cert`'s CAs.
pub(crate) fn build(
    https: bool,
    ca_cert: Option<&std::path::Path>,
) -> Result<(reqwest::Client, CertificateRefusal), String> {
    // As rmcp's default client: no idle pool (a reused connection whose last body was not read
    // to its end stalls on delayed ACKs), and only the redirects that keep the request intact.
    build_with(
        reqwest::Client::builder().pool_max_idle_per_host(0).redirect(same_origin_redirects()),
        https,
        ca_cert,
    )
}

/// A client from `builder` with the TLS set-up of [`build`].
pub(crate) fn build_with(
    builder: reqwest::ClientBuilder,
    https: bool,
    ca_cert: Option<&std::path::Path>,
) -> Result<(reqwest::Client, CertificateRefusal), String> {
    #[cfg(feature = "https")]
    {
        let refusals = tls::Refusals::default();
        // A TLS configuration even for `http://`: with reqwest's TLS compiled in, its own default
        // would need a process-wide crypto provider.
        let config = tls::client_config(ca_cert.filter(|_| https), &refusals)?;
        let client = builder
            .tls_backend_preconfigured(config)
            .build()
            .map_err(|e| format!("cannot set up the HTTP client ({e})"))?;
        Ok((client, CertificateRefusal { refusals }))
    }
    #[cfg(not(feature = "https"))]
    {
        let _ = (https, ca_cert);
        let client = builder.build().map_err(|e| format!("cannot set up the HTTP client ({e})"))?;
        Ok((client, CertificateRefusal::default()))
    }
}

/// Follows only same-origin 307 and 308 redirects (they keep the method and body), at most 10:
/// a 301-303 would turn the POST of a message into a GET without it, and another origin would
/// receive the session id and the configured headers (a token).
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin =
            attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > 10 {
            attempt.error("more than 10 redirects")
        } else {
            attempt.follow()
        }
    })
}
