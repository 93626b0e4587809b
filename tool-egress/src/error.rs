//! The error of a rule, pattern, secret or certificate text the proxy cannot use.

use std::fmt;

/// What a [`ConfigError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// A host pattern (`example.com`, `*.example.com`, `*`; see [`HostPattern`](crate::HostPattern)).
    HostPattern,
    /// An address or a network (`127.0.0.1`, `10.0.0.0/8`; see [`AddressRule`](crate::AddressRule)).
    Address,
    /// A secret: its placeholder, its variable's name or its hosts.
    Secret,
    /// Trusted roots given as PEM text.
    Certificates,
}

/// A rule, pattern, secret or certificate text the proxy cannot use.
///
/// Its text says what is wrong and what is expected, after where it was found (a settings key,
/// a command-line flag) when that is known:
/// "sandbox.network.allowedDomains: `https://x` is not a host pattern: write the host alone, ...".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    kind: ConfigErrorKind,
    message: String,
}

impl ConfigError {
    pub(crate) fn new(kind: ConfigErrorKind, message: impl Into<String>) -> ConfigError {
        ConfigError { kind, message: message.into() }
    }

    /// The same error, found at `place` (`sandbox.network.deniedDomains`, `--allow-host`).
    pub(crate) fn at(self, place: impl fmt::Display) -> ConfigError {
        ConfigError { kind: self.kind, message: format!("{place}: {}", self.message) }
    }

    /// What it is about.
    pub fn kind(&self) -> ConfigErrorKind {
        self.kind
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Its text, for callers that report errors as text.
impl From<ConfigError> for String {
    fn from(error: ConfigError) -> String {
        error.message
    }
}
