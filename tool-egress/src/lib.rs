#![doc = include_str!("../docs/egress.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// Doctests are examples users copy: a warning in one fails it (as in tokio, an example may leave
// a function or variable unused).
#![doc(test(attr(deny(warnings, rust_2018_idioms), allow(dead_code, unused_variables))))]

mod addr;
mod conn;
mod decide;
mod error;
mod http;
mod policy;
mod proxy;
mod refusal;
pub mod settings;
mod socks;
#[cfg(any(target_os = "linux", target_os = "android"))]
mod splice;
#[cfg(feature = "tls")]
mod tls;

use std::net::SocketAddr;

pub use addr::{AddressRule, special_range};
pub use decide::{AskAnswer, AskFuture, AskRequest, Asker, asker};
pub use error::{ConfigError, ConfigErrorKind};
pub use policy::{EgressPolicy, HostPattern, HostRule, placeholder};
pub use proxy::{Egress, EgressProxy};
pub use refusal::{Protocol, Reason, Refusal, summarize};
#[cfg(feature = "tls")]
pub use tls::CA_BUNDLE_VARIABLES;

/// The environment variables that send a command's clients through the proxy at `addr`.
///
/// Both spellings of each are set, since clients disagree on which they read (`curl` ignores
/// an upper-case `HTTP_PROXY`; Go and Python read either). `ALL_PROXY` uses `socks5h://` so that
/// names are resolved, and checked, by the proxy. `NO_PROXY` is set empty, so that no host
/// inherited from elsewhere skips it. `NODE_USE_ENV_PROXY=1` makes Node read them too (its
/// `http`, `https` and `fetch` from Node 22.21 and 24.5; earlier versions ignore proxy variables
/// and reach nothing from inside the sandbox).
pub fn proxy_env(addr: SocketAddr) -> Vec<(String, String)> {
    let http = format!("http://{addr}");
    let socks = format!("socks5h://{addr}");
    let mut vars = Vec::new();
    for (name, value) in
        [("HTTP_PROXY", &http), ("HTTPS_PROXY", &http), ("ALL_PROXY", &socks), ("NO_PROXY", &String::new())]
    {
        vars.push((name.to_owned(), value.clone()));
        vars.push((name.to_ascii_lowercase(), value.clone()));
    }
    vars.push(("NODE_USE_ENV_PROXY".to_owned(), "1".to_owned()));
    vars
}
