//! Claude Code's settings as an egress policy.
//!
//! | settings (Claude Code's shape) | policy |
//! |---|---|
//! | `permissions.allow`: `"WebFetch(domain:example.com)"` | `example.com` allowed |
//! | `permissions.deny`: `"WebFetch(domain:example.com)"` | `example.com` denied |
//! | `permissions.deny`: `"WebFetch"` (no domain) | every host denied |
//! | `permissions.ask`: `"WebFetch(domain:...)"`, `permissions.allow`: `"WebFetch"` | nothing: a host no rule allows is asked about anyway |
//! | `sandbox.network.allowedDomains` | allowed hosts: `example.com`, `*.example.com` (subdomains only), `example.com:443` (that port only), `*` (every host) |
//! | `sandbox.network.deniedDomains` | denied hosts, same patterns |
//! | `sandbox.network.allowedAddresses` | addresses and networks (`127.0.0.1`, `10.0.0.0/8`) that may be reached although not public |
//! | `sandbox.network.limited` | limited mode: plain-HTTP `GET`, `HEAD`, `OPTIONS` only |
//! | `sandbox.network.strictAllowlist` | never ask: a host no rule allows is refused |
//! | `sandbox.network.secrets`: `{"GITHUB_TOKEN": ["api.github.com"]}` | commands see a placeholder in `GITHUB_TOKEN`; the proxy puts the value back only in the request headers to those hosts, inside TLS it terminates (the `tls` feature); a host written `http://host` gets it in plain HTTP too ([`NetworkSettings::with_secrets_from`]) |
//! | `sandbox.network.allowLocalBinding` | returned in [`NetworkSettings`] for the sandbox: commands may bind and listen on TCP ports (`tool_sandbox::SandboxPolicy::allow_local_binding`) |
//! | `sandbox.network.allowUnixSockets`, `allowAllUnixSockets` | returned in [`NetworkSettings`] for the sandbox (`unix_sockets`, `all_unix_sockets`): abstract sockets are scoped unless all are allowed; sockets by path are judged only on Landlock ABI 9 |
//! | `sandbox.network.allowManagedDomainsOnly` | applied where the files are merged (`hierarchy::merge_scoped`): from managed settings, the other files' hosts are left out |
//! | `sandbox.network.allowMachLookup`, `httpProxyPort`, `socksProxyPort`, `tlsTerminate` | accepted, no effect (named by `SettingsFile::not_applied`) |
//!
//! An entry of `allowedDomains` (or of `--allow-host`, see [`allow_cli_hosts`]) that is an
//! address or a network (`192.168.1.10`, `10.0.0.0/8`) is an address rule: naming an address
//! is asking for it, private or not. `allowedAddresses`, `limited` and `secrets` are this proxy's own keys;
//! the file's shape (an unknown key of `sandbox.network`, a value of the wrong type) is checked
//! when it is read into the typed model (`tool_settings::SettingsFile`).
//!
//! ```
//! let settings = tool_settings::SettingsFile::from_value(serde_json::json!({
//!     "permissions": {"allow": ["WebFetch(domain:docs.rs)"], "deny": ["WebFetch(domain:evil.example)"]},
//!     "sandbox": {"network": {"allowedDomains": ["crates.io", "*.crates.io"], "deniedDomains": ["*.internal"]}}
//! }))
//! .unwrap();
//! let network = tool_egress::settings::from_settings(&settings, ".claude/settings.json").unwrap();
//! assert!(!network.policy.is_limited());
//! ```

use tool_settings::SettingsFile;

use crate::addr::AddressRule;
use crate::error::ConfigError;
use crate::policy::EgressPolicy;

/// What a settings file says about the network: the proxy's policy and the sandbox's switches.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct NetworkSettings {
    /// The proxy's rules.
    pub policy: EgressPolicy,
    /// `sandbox.network.allowLocalBinding`: commands may listen on local ports.
    pub allow_local_binding: bool,
    /// `sandbox.network.allowUnixSockets`: Unix socket paths commands may connect to.
    pub allow_unix_sockets: Vec<String>,
    /// `sandbox.network.allowAllUnixSockets`.
    pub allow_all_unix_sockets: bool,
    /// `sandbox.network.secrets`: environment variables holding secrets, each with the host
    /// patterns it may be sent to (see [`NetworkSettings::with_secrets_from`]).
    pub secrets: Vec<(String, Vec<String>)>,
}

impl NetworkSettings {
    /// Adds `other`'s rules and switches (a user file, then a project file, say).
    pub fn merge(mut self, other: NetworkSettings) -> NetworkSettings {
        self.policy = self.policy.merge(other.policy);
        self.allow_local_binding |= other.allow_local_binding;
        self.allow_unix_sockets.extend(other.allow_unix_sockets);
        self.allow_all_unix_sockets |= other.allow_all_unix_sockets;
        self.secrets.extend(other.secrets);
        self
    }

    /// Adds each secret of [`NetworkSettings::secrets`] whose variable `lookup` finds (the
    /// agent's environment, say: `|name| std::env::var(name).ok()`) to the policy as an
    /// [`EgressPolicy::secret_var`]: commands then see a placeholder in that variable, and the
    /// proxy swaps the value back only in the request headers to the secret's hosts, inside TLS
    /// (or in plain HTTP to a host written `http://host`).
    /// Returns the names `lookup` did not find, which have nothing to protect.
    pub fn with_secrets_from(
        mut self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<(NetworkSettings, Vec<String>), ConfigError> {
        let mut unset = Vec::new();
        for (var, hosts) in &self.secrets {
            let Some(value) = lookup(var) else {
                unset.push(var.clone());
                continue;
            };
            let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
            self.policy =
                self.policy.secret_var(var, &value, &hosts).map_err(|e| e.at("sandbox.network.secrets"))?;
        }
        Ok((self, unset))
    }
}

/// Reads the network rules of a settings file: `WebFetch(domain:...)` rules of `permissions`,
/// and `sandbox.network`; `origin` (the file's path) is named in errors and in the proxy's
/// refusals. The error names the key at fault.
pub fn from_settings(settings: &SettingsFile, origin: &str) -> Result<NetworkSettings, ConfigError> {
    let mut out = NetworkSettings::default();
    let mut policy = EgressPolicy::new();
    if let Some(permissions) = &settings.permissions {
        for (key, rules) in
            [("allow", &permissions.allow), ("ask", &permissions.ask), ("deny", &permissions.deny)]
        {
            let where_ = format!("permissions.{key}");
            for rule in rules.iter().flatten() {
                let Some(domain) = web_fetch_domain(rule) else { continue };
                let rule_origin = format!("`{rule}` of {where_} in {origin}");
                policy = match (domain, key) {
                    (None, "deny") => policy.deny_host("*", &rule_origin),
                    (None, "ask") => policy.ask_host("*", &rule_origin),
                    (None, _) => Ok(policy),
                    (Some(domain), "deny") => policy.deny_host(domain, &rule_origin),
                    (Some(domain), "ask") => policy.ask_host(domain, &rule_origin),
                    (Some(domain), _) => allow_entry(policy, domain, &rule_origin),
                }
                .map_err(|e| e.at(&where_))?;
            }
        }
    }
    let Some(network) = settings.sandbox.as_ref().and_then(|s| s.network.as_ref()) else {
        out.policy = policy;
        return Ok(out);
    };
    let at = |key: &str| format!("sandbox.network.{key}");
    let key_origin = |key: &str| format!("sandbox.network.{key} in {origin}");
    for entry in network.allowed_domains.iter().flatten() {
        let key = "allowedDomains";
        policy = allow_entry(policy, entry, &key_origin(key)).map_err(|e| e.at(at(key)))?;
    }
    for entry in network.denied_domains.iter().flatten() {
        let key = "deniedDomains";
        policy = policy.deny_host(entry, &key_origin(key)).map_err(|e| e.at(at(key)))?;
    }
    for entry in network.allowed_addresses.iter().flatten() {
        let key = "allowedAddresses";
        policy = policy.allow_address(entry, &key_origin(key)).map_err(|e| e.at(at(key)))?;
    }
    if let Some(limited) = network.limited {
        policy = policy.limited(limited);
    }
    if let Some(strict) = network.strict_allowlist {
        policy = policy.never_ask(strict);
    }
    out.allow_local_binding = network.allow_local_binding == Some(true);
    out.allow_all_unix_sockets = network.allow_all_unix_sockets == Some(true);
    out.allow_unix_sockets = network.allow_unix_sockets.clone().unwrap_or_default();
    for (var, hosts) in network.secrets.iter().flatten() {
        // Checked now, with a stand-in value: the name and the host patterns.
        let patterns: Vec<&str> = hosts.iter().map(String::as_str).collect();
        EgressPolicy::new()
            .secret_var(var, "checked", &patterns)
            .map_err(|e| e.at(format!("sandbox.network.secrets.{var}")))?;
        out.secrets.push((var.clone(), hosts.clone()));
    }
    out.policy = policy;
    Ok(out)
}

/// Adds the hosts of `--allow-host` (each a host pattern, an address or a network).
pub fn allow_cli_hosts(policy: EgressPolicy, hosts: &[String]) -> Result<EgressPolicy, ConfigError> {
    hosts.iter().try_fold(policy, |policy, host| {
        allow_entry(policy, host, "--allow-host").map_err(|e| e.at("--allow-host"))
    })
}

/// An entry naming an address or a network is an address rule; anything else a host pattern.
fn allow_entry(policy: EgressPolicy, entry: &str, origin: &str) -> Result<EgressPolicy, ConfigError> {
    if entry.parse::<AddressRule>().is_ok() {
        policy.allow_address(entry, origin)
    } else {
        policy.allow_host(entry, origin)
    }
}

/// `WebFetch(domain:example.com)` is `Some(Some("example.com"))`, a bare `WebFetch` is
/// `Some(None)`, any other rule `None`.
fn web_fetch_domain(rule: &str) -> Option<Option<&str>> {
    let rule = rule.trim();
    if rule == "WebFetch" || rule == "WebFetch(*)" {
        return Some(None);
    }
    let inner = rule.strip_prefix("WebFetch(")?.strip_suffix(')')?;
    Some(Some(inner.trim().strip_prefix("domain:")?.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ConfigErrorKind;
    use serde_json::{Value, json};

    /// The network settings of `value`, or the error of the model or of this reader.
    fn from_settings(value: &Value, origin: &str) -> Result<NetworkSettings, String> {
        let file = SettingsFile::from_value(value.clone()).map_err(|e| e.to_string())?;
        super::from_settings(&file, origin).map_err(|e| e.to_string())
    }

    #[test]
    fn web_fetch_rules_and_sandbox_lists_become_host_rules() {
        let settings = json!({
            "permissions": {
                "allow": ["Bash(ls:*)", "WebFetch(domain:docs.rs)", "WebFetch"],
                "deny": ["WebFetch(domain:evil.example)"],
                "ask": ["WebFetch(domain:maybe.example)"]
            },
            "sandbox": {"network": {
                "allowedDomains": ["crates.io", "*.crates.io", "10.1.2.0/24", "api.example:8443"],
                "deniedDomains": ["*.internal"],
                "allowedAddresses": ["127.0.0.1"],
                "allowLocalBinding": true,
                "allowUnixSockets": ["/run/docker.sock"],
                "httpProxyPort": 8080
            }}
        });
        let network = from_settings(&settings, "s.json").unwrap();
        let policy = &network.policy;
        assert!(policy.allowed_by("docs.rs", 443).is_some());
        assert!(policy.allowed_by("crates.io", 443).is_some());
        assert!(policy.allowed_by("static.crates.io", 443).is_some());
        assert!(policy.allowed_by("api.example", 8443).is_some());
        assert!(policy.allowed_by("api.example", 443).is_none());
        assert!(policy.allowed_by("maybe.example", 443).is_none(), "ask rules allow nothing");
        assert!(policy.allowed_by("anything.example", 443).is_none(), "a bare WebFetch allow opens nothing");
        let denied = policy.denied_by("evil.example", 443).unwrap();
        assert_eq!(&*denied.origin, "`WebFetch(domain:evil.example)` of permissions.deny in s.json");
        assert_eq!(
            &*policy.denied_by("db.internal", 5432).unwrap().origin,
            "sandbox.network.deniedDomains in s.json"
        );
        assert!(policy.address_allowed("10.1.2.3".parse().unwrap()));
        assert!(policy.address_allowed("127.0.0.1".parse().unwrap()));
        assert!(!policy.address_allowed("10.1.3.1".parse().unwrap()));
        assert!(network.allow_local_binding);
        assert_eq!(network.allow_unix_sockets, ["/run/docker.sock"]);
    }

    #[test]
    fn secrets_take_their_values_from_the_lookup_and_their_placeholders_go_to_commands() {
        let settings = json!({"sandbox": {"network": {"secrets": {
            "GITHUB_TOKEN": ["api.github.com"], "UNSET_TOKEN": ["example.com"]
        }}}});
        let network = from_settings(&settings, "s.json").unwrap();
        let lookup = |name: &str| (name == "GITHUB_TOKEN").then(|| "ghp-real".to_owned());
        let (network, unset) = network.with_secrets_from(lookup).unwrap();
        assert_eq!(unset, ["UNSET_TOKEN"]);
        let placeholders = network.policy.placeholders();
        assert_eq!(placeholders.len(), 1);
        assert_eq!(placeholders[0].0, "GITHUB_TOKEN");
        assert!(placeholders[0].1.starts_with("egress-placeholder-GITHUB_TOKEN-"), "{placeholders:?}");
        assert!(!format!("{:?}", network.policy).contains("ghp-real"), "the value stays out of debug output");
        for (bad, message) in [
            (
                json!({"secrets": ["GITHUB_TOKEN"]}),
                "`sandbox.network.secrets`: invalid type: sequence, expected an object",
            ),
            (
                json!({"secrets": {"GITHUB-TOKEN": ["x.com"]}}),
                "sandbox.network.secrets.GITHUB-TOKEN: `GITHUB-TOKEN` is not an environment variable name",
            ),
            (
                json!({"secrets": {"T": []}}),
                "sandbox.network.secrets.T: the secret `T` names no host it may be sent to",
            ),
            (
                json!({"secrets": {"T": ["https://x.com"]}}),
                "sandbox.network.secrets.T: `https://x.com` is not a host pattern",
            ),
        ] {
            let error = from_settings(&json!({"sandbox": {"network": bad}}), "s.json").unwrap_err();
            assert!(error.to_string().starts_with(message), "{error}");
        }
    }

    #[test]
    fn a_bare_web_fetch_deny_denies_every_host() {
        let network = from_settings(&json!({"permissions": {"deny": ["WebFetch"]}}), "s.json").unwrap();
        assert!(network.policy.denied_by("example.com", 443).is_some());
    }

    #[test]
    fn limited_and_strict_switches() {
        let network =
            from_settings(&json!({"sandbox": {"network": {"limited": true, "strictAllowlist": true}}}), "s")
                .unwrap();
        assert!(network.policy.is_limited());
        assert!(network.policy.never_ask);
    }

    #[test]
    fn mistakes_name_the_key() {
        let cases = [
            (
                json!({"sandbox": {"network": {"allowedDomain": ["x"]}}}),
                "`sandbox.network.allowedDomain`: unknown field `allowedDomain`",
            ),
            (
                json!({"sandbox": {"network": {"allowedDomains": "x"}}}),
                "`sandbox.network.allowedDomains`: invalid type: string \"x\", expected a sequence",
            ),
            (
                json!({"sandbox": {"network": {"deniedDomains": ["https://x.com"]}}}),
                "sandbox.network.deniedDomains: `https://x.com` is not a host pattern",
            ),
            (
                json!({"sandbox": {"network": {"allowedAddresses": ["localhost"]}}}),
                "sandbox.network.allowedAddresses: `localhost` is not an address",
            ),
            (
                json!({"sandbox": {"network": {"limited": "yes"}}}),
                "`sandbox.network.limited`: invalid type: string \"yes\", expected a boolean",
            ),
            (
                json!({"permissions": {"allow": ["WebFetch(domain:a b)"]}}),
                "permissions.allow: `a b` is not a host pattern",
            ),
        ];
        for (settings, expected) in cases {
            let error = from_settings(&settings, "s").unwrap_err();
            assert!(error.to_string().contains(expected), "{error}");
        }
    }

    #[test]
    fn cli_hosts_are_patterns_or_addresses() {
        let policy = allow_cli_hosts(
            EgressPolicy::new(),
            &["example.org".into(), "*.github.com".into(), "192.168.1.10".into()],
        )
        .unwrap();
        assert!(policy.allowed_by("example.org", 80).is_some());
        assert!(policy.allowed_by("api.github.com", 443).is_some());
        assert!(policy.address_allowed("192.168.1.10".parse().unwrap()));
        assert_eq!(&*policy.allowed_by("example.org", 80).unwrap().origin, "--allow-host");
        let error = allow_cli_hosts(EgressPolicy::new(), &["bad host".into()]).unwrap_err();
        assert!(error.to_string().starts_with("--allow-host: "), "{error}");
        assert_eq!(error.kind(), ConfigErrorKind::HostPattern);
    }
}
