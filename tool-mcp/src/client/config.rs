//! Which MCP servers to mount: the `mcpServers` file of Claude Desktop, Cursor and Claude Code.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::naming::Naming;
use tool_sandbox::environment::EnvFilter;

/// How long a call may go without an answer or a progress notification, unless configured.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a call may take in all, progress or not, unless configured.
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a server may take to start and answer `initialize`, unless configured (long enough
/// for `npx` to fetch a package).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(120);

/// How to reach one server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// A child process speaking MCP on its standard input and output.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set on top of the inherited environment (which
        /// [`ServerConfig::environment`] filters).
        env: BTreeMap<String, String>,
        /// Its working directory (default: ours).
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint's URL.
        url: String,
        /// Headers sent with every request (for example `Authorization`).
        headers: BTreeMap<String, String>,
        /// A PEM file of CA certificates trusted for this server besides the public roots
        /// (`caCert`; feature `mcp-https`), for servers whose certificates a private CA signs.
        ca_cert: Option<PathBuf>,
    },
}

/// One server to mount: its name, how to reach it, its time limits and how its tools are named.
#[derive(Debug, Clone)]
#[must_use]
pub struct ServerConfig {
    /// The server's name (the key in `mcpServers`): in tool names and in every error about it.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// How long a call may go without an answer or progress ([`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
    /// How long a call may take in all ([`DEFAULT_TOTAL_TIMEOUT`]).
    pub total_timeout: Duration,
    /// How long starting and initializing the server may take ([`DEFAULT_STARTUP_TIMEOUT`]).
    pub startup_timeout: Duration,
    /// How its tools are named ([`Naming::Prefixed`]).
    pub naming: Naming,
    /// How many times a call tries to restart a server that stopped (default 3).
    pub restart_attempts: u32,
    /// Whether its tools are deferred: offered to the model through a tool search rather than
    /// in every request (see [`tool_providers::catalog`]).
    pub defer: bool,
    /// The values that `${VAR}` expanded to in this entry, with their `${VAR}` form, longest
    /// first: messages show the form, never the value (a token, say).
    expanded: Vec<(String, String)>,
    /// The kernel sandbox a stdio server runs in (`None`: unconfined, as its user).
    pub sandbox: Option<std::sync::Arc<tool_sandbox::Sandbox>>,
    /// The entry's `"sandbox"` mode (`read-only`, `workspace-write`, `off`), turned into
    /// [`ServerConfig::sandbox`] by [`McpConfig::sandboxed`] once the workspace is known.
    pub sandbox_mode: Option<tool_sandbox::SandboxMode>,
    /// Which of our environment variables a stdio server inherits (default: the base list of
    /// [`EnvFilter`], so API keys in our environment stay out; its `env` is set on top).
    pub environment: EnvFilter,
    /// How an HTTP server that asks for OAuth is authorized (the entry's `oauth` object;
    /// feature `mcp-oauth`).
    pub oauth: OAuthConfig,
    /// Whether the server may ask for completions (`sampling/createMessage`): the mount then
    /// declares the `sampling` capability and passes each request to the sampler of the call in
    /// flight ([`ToolContext::sampler`](tool_core::ToolContext::sampler)), once that call's
    /// permission policy allows [`SAMPLING_PERMISSION`](super::SAMPLING_PERMISSION). Default
    /// false: the capability is not declared, and a request is refused.
    pub sampling: bool,
    /// The only tools of the server mounted, by the server's names (`enabledTools`; codex's
    /// `enabled_tools`); `None`: all of them.
    pub enabled_tools: Option<Vec<String>>,
    /// Tools of the server left out, by the server's names (`disabledTools`; codex's
    /// `disabled_tools`), whatever `enabled_tools` says.
    pub disabled_tools: Vec<String>,
}

/// The OAuth settings of one HTTP server: the entry's `"oauth": {"clientId", "clientSecret",
/// "scopes", "callbackPort", "grantType", "clientMetadataUrl"}`, and where its tokens are kept. Everything is optional: without a
/// client id, the client registers itself with the authorization server (RFC 7591).
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// A client id registered with the authorization server beforehand (`clientId`).
    pub client_id: Option<String>,
    /// That client's secret (`clientSecret`), for a confidential client.
    pub client_secret: Option<String>,
    /// The scopes to ask for (`scopes`, a list or a space-separated string); by default those
    /// the server's challenge or metadata name.
    pub scopes: Vec<String>,
    /// The port of the loopback redirect of a login (`callbackPort`), for a client id
    /// registered with one fixed redirect URI; by default a free port.
    pub callback_port: Option<u16>,
    /// The token file (default: `$XDG_CONFIG_HOME/tools/mcp-oauth/credentials.json`, or under
    /// `~/.config`).
    pub token_file: Option<PathBuf>,
    /// What a person runs to log in to this server, named in the error of a mount that needs
    /// it (the `tools` binary sets `tools mcp login NAME`).
    pub login_command: Option<String>,
    /// Whether the client gets its tokens with its own credentials, without a person
    /// (`"grantType": "client_credentials"`, OAuth 2.1's client credentials grant, for a
    /// machine-to-machine client; needs `clientId` and `clientSecret`, sent as HTTP Basic when
    /// the authorization server supports only `client_secret_basic`, else in the request body).
    /// A mount then asks for a token itself when it has none, when it expires, and when the
    /// server wants more scopes (a 403 `insufficient_scope`); `tools mcp login NAME` is not
    /// needed. The default, `"authorization_code"`, is a person's login in a browser.
    pub client_credentials: bool,
    /// The `https://` URL of a client ID metadata document this client publishes
    /// (`clientMetadataUrl`; the MCP revision 2025-11-25's client ID metadata documents): where the
    /// authorization server says it supports them (`client_id_metadata_document_supported`), a
    /// login without `clientId` uses the URL as its client id instead of registering itself.
    pub client_metadata_url: Option<String>,
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "[redacted]"))
            .field("scopes", &self.scopes)
            .field("callback_port", &self.callback_port)
            .field("token_file", &self.token_file)
            .field("login_command", &self.login_command)
            .field("client_credentials", &self.client_credentials)
            .field("client_metadata_url", &self.client_metadata_url)
            .finish()
    }
}

impl ServerConfig {
    fn with_transport(name: impl Into<String>, transport: Transport) -> Self {
        ServerConfig {
            name: name.into(),
            transport,
            timeout: DEFAULT_TIMEOUT,
            total_timeout: DEFAULT_TOTAL_TIMEOUT,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            naming: Naming::default(),
            restart_attempts: 3,
            defer: false,
            expanded: Vec::new(),
            sandbox: None,
            sandbox_mode: None,
            environment: EnvFilter::base(),
            oauth: OAuthConfig::default(),
            sampling: false,
            enabled_tools: None,
            disabled_tools: Vec::new(),
        }
    }

    /// Whether the server's tool named `remote` is mounted (see
    /// [`enabled_tools`](Self::enabled_tools) and [`disabled_tools`](Self::disabled_tools)).
    pub fn mounts_tool(&self, remote: &str) -> bool {
        self.enabled_tools.as_ref().is_none_or(|enabled| enabled.iter().any(|t| t == remote))
            && !self.disabled_tools.iter().any(|t| t == remote)
    }

    /// `text` with every value that a `${VAR}` of this server's entry expanded to put back in its
    /// `${VAR}` form (also where it appears percent-encoded, as in a URL), so that a message
    /// about the server never shows a secret taken from the environment. Every error of a mount
    /// is redacted so.
    pub fn redact(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for (value, form) in &self.expanded {
            text = text.replace(value.as_str(), form);
            let encoded = percent_encoded(value);
            if encoded != *value {
                text = text.replace(encoded.as_str(), form);
            }
        }
        text
    }

    /// A server started as `command` with no arguments.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            Transport::Stdio { command: command.into(), args: Vec::new(), env: BTreeMap::new(), cwd: None },
        )
    }

    /// A server at a Streamable HTTP `url`.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            Transport::Http { url: url.into(), headers: BTreeMap::new(), ca_cert: None },
        )
    }

    /// Adds arguments (stdio servers).
    pub fn args<I, S>(mut self, more: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if let Transport::Stdio { args, .. } = &mut self.transport {
            args.extend(more.into_iter().map(Into::into));
        }
        self
    }

    /// Sets an environment variable (stdio servers).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let Transport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// Sets a header (HTTP servers).
    pub fn header(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let Transport::Http { headers, .. } = &mut self.transport {
            headers.insert(key.into(), value.into());
        }
        self
    }

    /// Trusts the CA certificates of the PEM file `path` for this server, besides the public
    /// roots (HTTP servers; feature `mcp-https`).
    pub fn ca_cert(mut self, path: impl Into<PathBuf>) -> Self {
        if let Transport::Http { ca_cert, .. } = &mut self.transport {
            *ca_cert = Some(path.into());
        }
        self
    }

    /// Sets the time a call may go without an answer or progress.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the time a call may take in all.
    pub fn total_timeout(mut self, timeout: Duration) -> Self {
        self.total_timeout = timeout;
        self
    }

    /// Sets the time starting the server may take.
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Sets how the server's tools are named.
    pub fn naming(mut self, naming: Naming) -> Self {
        self.naming = naming;
        self
    }

    /// Runs a stdio server in `sandbox` (see [`tool_sandbox`]): a server that only reads and
    /// computes can be given `SandboxPolicy::read_only()`.
    pub fn sandbox(mut self, sandbox: std::sync::Arc<tool_sandbox::Sandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// Defers the server's tools: the model finds them with a tool search.
    pub fn defer(mut self, defer: bool) -> Self {
        self.defer = defer;
        self
    }

    /// Sets which of our environment variables a stdio server inherits.
    pub fn environment(mut self, filter: EnvFilter) -> Self {
        self.environment = filter;
        self
    }

    /// Sets how an HTTP server that asks for OAuth is authorized.
    pub fn oauth(mut self, oauth: OAuthConfig) -> Self {
        self.oauth = oauth;
        self
    }

    /// Lets the server ask for completions (see the field [`ServerConfig::sampling`]).
    pub fn sampling(mut self, allowed: bool) -> Self {
        self.sampling = allowed;
        self
    }

    /// Sets how many times a call tries to restart a server that stopped.
    pub fn restart_attempts(mut self, attempts: u32) -> Self {
        self.restart_attempts = attempts;
        self
    }
}

/// The servers of an `mcpServers` file, in the file's order.
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    /// Every server that is not `"disabled": true`.
    pub servers: Vec<ServerConfig>,
}

/// A configuration that cannot be used, with where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file, when read from one.
    pub path: Option<PathBuf>,
    /// What is wrong, naming the server and the key.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => write!(f, "MCP configuration {}: {}", path.display(), self.message),
            None => write!(f, "MCP configuration: {}", self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

impl McpConfig {
    /// Names the command that logs in to a server in the error of a mount that needs it:
    /// `command` followed by the server's name (the `tools` binary: `tools mcp login`).
    #[must_use]
    pub fn login_command(mut self, command: &str) -> Self {
        for server in &mut self.servers {
            server.oauth.login_command = Some(format!("{command} {}", server.name));
        }
        self
    }

    /// Sets which of our environment variables every stdio server inherits.
    #[must_use]
    pub fn environment(mut self, filter: &EnvFilter) -> Self {
        for server in &mut self.servers {
            server.environment = filter.clone();
        }
        self
    }

    /// Lets every server ask for completions ([`ServerConfig::sampling`]); for an application
    /// that samples (a [`SamplerDependency`](tool_core::sampling::SamplerDependency)) or serves
    /// its tools to an MCP client that does.
    #[must_use]
    pub fn sampling(mut self, allowed: bool) -> Self {
        for server in &mut self.servers {
            server.sampling = allowed;
        }
        self
    }

    /// Builds the sandbox of every server whose entry names a `"sandbox"` mode, for the
    /// workspace `root` (`workspace-write` lets the server write beneath it and the temporary
    /// directory; the network is off in both sandboxed modes). The error names the server and
    /// what the kernel lacks.
    pub fn sandboxed(self, root: &Path) -> Result<McpConfig, ConfigError> {
        self.sandboxed_with(root, |policy| policy)
    }

    /// As [`McpConfig::sandboxed`], each server's policy passed through `confine` first (the
    /// paths an application's settings keep every sandboxed process from, say).
    pub fn sandboxed_with(
        mut self,
        root: &Path,
        confine: impl Fn(tool_sandbox::SandboxPolicy) -> tool_sandbox::SandboxPolicy,
    ) -> Result<McpConfig, ConfigError> {
        for server in &mut self.servers {
            let Some(mode) = server.sandbox_mode else { continue };
            let policy = confine(tool_sandbox::SandboxPolicy::for_mode(mode, root));
            if !policy.is_enforced() {
                continue;
            }
            let sandbox = tool_sandbox::Sandbox::new(policy).map_err(|e| ConfigError {
                path: None,
                message: format!("server `{}`: its sandbox ({mode}) cannot be used: {e}", server.name),
            })?;
            server.sandbox = Some(std::sync::Arc::new(sandbox));
        }
        Ok(self)
    }

    /// Reads an `mcpServers` file, as a settings file is read
    /// ([`read_text`](tool_settings::read_text): a regular file of at most 4 MiB; a project's
    /// `.mcp.json` comes with the project).
    pub fn load(path: impl AsRef<Path>) -> Result<McpConfig, ConfigError> {
        let path = path.as_ref();
        let text = tool_settings::read_text(path)
            .map_err(|e| ConfigError { path: Some(path.to_owned()), message: e.to_string() })?;
        let mut config = Self::parse(&text).map_err(|mut e| {
            e.path = Some(path.to_owned());
            e
        })?;
        // A relative `caCert` is the file's neighbour, wherever the program runs.
        if let Some(dir) = path.parent() {
            for server in &mut config.servers {
                if let Transport::Http { ca_cert: Some(ca_cert), .. } = &mut server.transport
                    && ca_cert.is_relative()
                {
                    *ca_cert = dir.join(&*ca_cert);
                }
            }
        }
        Ok(config)
    }

    /// Parses the text of an `mcpServers` file:
    ///
    /// ```json
    /// {"mcpServers": {
    ///   "files": {"command": "npx", "args": ["-y", "some-server"], "env": {"TOKEN": "${TOKEN}"}},
    ///   "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${KEY}"}}
    /// }}
    /// ```
    ///
    /// As in Claude Code, `${VAR}` and `${VAR:-default}` in `command`, `args`, `env`, `url`,
    /// `headers` and `caCert` are replaced from the environment. Besides the usual keys (`command`, `args`,
    /// `env`, `cwd`, `type`, `url`, `headers`, `disabled`), a server may set `timeout` (ms
    /// without an answer or progress), `totalTimeout` (ms in all), `startupTimeout` (ms) and
    /// `toolPrefix` (names its tools `<toolPrefix><tool>`; `""` keeps the server's names),
    /// `defer` (`true`: its tools are deferred, found by a tool search), `enabledTools` and
    /// `disabledTools` (the server's tools mounted, and those left out, by name) and, for an `https://`
    /// server, `caCert` (a PEM file of CA certificates trusted besides the public roots; a
    /// relative path is taken from the file's directory by [`McpConfig::load`]) and `oauth`
    /// (`{"clientId", "clientSecret", "scopes", "callbackPort", "grantType", "clientMetadataUrl"}`, see [`OAuthConfig`]). Other
    /// keys, which other clients write, are ignored.
    pub fn parse(text: &str) -> Result<McpConfig, ConfigError> {
        Self::parse_with_env(text, &|name| std::env::var(name).ok())
    }

    fn parse_with_env(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<McpConfig, ConfigError> {
        let error = |message: String| ConfigError { path: None, message };
        let root: Value = serde_json::from_str(text).map_err(|e| error(format!("not valid JSON: {e}")))?;
        let servers = root
            .get("mcpServers")
            .ok_or_else(|| error("no `mcpServers` object at the top level".to_owned()))?
            .as_object()
            .ok_or_else(|| error("`mcpServers` must be an object of servers by name".to_owned()))?;
        let mut config = McpConfig::default();
        for (name, entry) in servers {
            let entry = entry
                .as_object()
                .ok_or_else(|| error(format!("server `{name}`: its entry must be an object")))?;
            if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            let expanded = std::cell::RefCell::new(Vec::new());
            let recording = |variable: &str| {
                let value = env(variable);
                if let Some(value) = value.as_ref().filter(|value| !value.trim().is_empty()) {
                    expanded.borrow_mut().push((value.clone(), format!("${{{variable}}}")));
                }
                value
            };
            let server = parse_server(name, entry, &recording);
            let mut expanded = expanded.into_inner();
            let redact = |message: String| {
                let mut redacted = ServerConfig::stdio(name.as_str(), "");
                redacted.expanded = expanded.clone();
                redacted.redact(&message)
            };
            let mut server = server.map_err(|m| error(redact(format!("server `{name}`: {m}"))))?;
            // Longest first: a value that holds another is put back whole.
            expanded.sort_by_key(|(value, _)| std::cmp::Reverse(value.len()));
            expanded.dedup();
            server.expanded = expanded;
            config.servers.push(server);
        }
        Ok(config)
    }
}

fn parse_server(
    name: &str,
    entry: &Map<String, Value>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, String> {
    if name.is_empty() {
        return Err("a server needs a non-empty name".to_owned());
    }
    if name.contains("__") {
        // `SERVER__TOOL` and `mcp__SERVER__TOOL` would not say which server a tool is of.
        return Err(format!(
            "a server's name may not contain `__`, which separates the server from the tool in its tools' \
             names; rename it (`{}`)",
            name.replace("__", "_")
        ));
    }
    let kind = optional_string(entry, "type")?;
    let has_url = entry.contains_key("url");
    let transport = match (kind.as_deref(), has_url) {
        (Some("stdio"), _) | (None, false) => {
            let command = optional_string(entry, "command")?
                .ok_or("`command` is missing (or give `url` for an HTTP server)")?;
            let args = match entry.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|item| item.as_str().map(|s| expand(s, env)).ok_or("`args` must hold strings"))
                    .collect::<Result<Result<Vec<_>, _>, _>>()??,
                Some(_) => return Err("`args` must be an array of strings".to_owned()),
            };
            let cwd = optional_string(entry, "cwd")?.map(|cwd| expand(&cwd, env)).transpose()?;
            Transport::Stdio {
                command: expand(&command, env)?,
                args,
                env: string_map(entry, "env", env)?,
                cwd: cwd.map(PathBuf::from),
            }
        }
        (Some("http" | "streamable-http" | "streamableHttp"), _) | (None, true) => {
            let url = optional_string(entry, "url")?.ok_or("`url` is missing")?;
            let ca_cert = optional_string(entry, "caCert")?.map(|path| expand(&path, env)).transpose()?;
            Transport::Http {
                url: expand(&url, env)?,
                headers: string_map(entry, "headers", env)?,
                ca_cert: ca_cert.map(PathBuf::from),
            }
        }
        (Some("sse"), _) => {
            return Err("the SSE transport is not supported; use the server's Streamable HTTP endpoint (`\"type\": \"http\"`)".to_owned());
        }
        (Some(other), _) => {
            return Err(format!("unknown `type` `{other}`; expected `stdio` or `http`"));
        }
    };
    let mut server = ServerConfig::with_transport(name, transport);
    if let Some(ms) = millis(entry, "timeout")? {
        server.timeout = ms;
    }
    if let Some(ms) = millis(entry, "totalTimeout")? {
        server.total_timeout = ms;
    }
    if let Some(ms) = millis(entry, "startupTimeout")? {
        server.startup_timeout = ms;
    }
    match entry.get("defer") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(defer)) => server.defer = *defer,
        Some(_) => return Err("`defer` must be true or false".to_owned()),
    }
    if let Some(mode) = optional_string(entry, "sandbox")? {
        if !matches!(server.transport, Transport::Stdio { .. }) {
            return Err("`sandbox` applies to stdio servers (the ones started here) only".to_owned());
        }
        server.sandbox_mode = Some(mode.parse().map_err(|e| format!("`sandbox`: {e}"))?);
    }
    if let Some(oauth) = entry.get("oauth").filter(|value| !value.is_null()) {
        if !matches!(server.transport, Transport::Http { .. }) {
            return Err("`oauth` applies to HTTP servers (`url`) only".to_owned());
        }
        server.oauth = parse_oauth(oauth, env)?;
    }
    let names = |key: &str| -> Result<Option<Vec<String>>, String> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| item.as_str().map(str::to_owned).ok_or(format!("`{key}` must hold strings")))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(format!("`{key}` must be an array of tool names")),
        }
    };
    server.enabled_tools = names("enabledTools")?;
    server.disabled_tools = names("disabledTools")?.unwrap_or_default();
    match optional_string(entry, "toolPrefix")? {
        Some(prefix) if prefix.is_empty() => server.naming = Naming::Bare,
        Some(prefix) => server.naming = Naming::Prefix(prefix),
        None => {}
    }
    Ok(server)
}

fn parse_oauth(value: &Value, env: &dyn Fn(&str) -> Option<String>) -> Result<OAuthConfig, String> {
    let entry = value
        .as_object()
        .ok_or("`oauth` must be an object (`clientId`, `clientSecret`, `scopes`, `callbackPort`, `grantType`, `clientMetadataUrl`)")?;
    let known = ["clientId", "clientSecret", "scopes", "callbackPort", "grantType", "clientMetadataUrl"];
    if let Some(unknown) = entry.keys().find(|key| !known.contains(&key.as_str())) {
        return Err(format!(
            "unknown key `oauth.{unknown}`; expected one of `clientId`, `clientSecret`, `scopes`, `callbackPort`, `grantType`, `clientMetadataUrl`"
        ));
    }
    let string = |key: &str| -> Result<Option<String>, String> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => expand(s, env).map(Some),
            Some(_) => Err(format!("`oauth.{key}` must be a string")),
        }
    };
    let scopes = match entry.get("scopes") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned).ok_or("`oauth.scopes` must hold strings"))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`oauth.scopes` must be a list of strings".to_owned()),
    };
    let callback_port = match entry.get("callbackPort") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .and_then(|port| u16::try_from(port).ok())
                .filter(|port| *port > 0)
                .ok_or("`oauth.callbackPort` must be a port number (1-65535)")?,
        ),
    };
    let oauth = OAuthConfig {
        client_id: string("clientId")?.filter(|id| !id.is_empty()),
        client_secret: string("clientSecret")?.filter(|secret| !secret.is_empty()),
        scopes,
        callback_port,
        token_file: None,
        login_command: None,
        client_metadata_url: string("clientMetadataUrl")?.filter(|url| !url.is_empty()),
        client_credentials: match string("grantType")?.as_deref() {
            None | Some("authorization_code") => false,
            Some("client_credentials") => true,
            Some(other) => {
                return Err(format!(
                    "`oauth.grantType` is `{other}`; expected `authorization_code` (a person's login, the default) or `client_credentials`"
                ));
            }
        },
    };
    if oauth.client_secret.is_some() && oauth.client_id.is_none() {
        return Err("`oauth.clientSecret` needs `oauth.clientId`".to_owned());
    }
    if let Some(url) = &oauth.client_metadata_url
        && !url.strip_prefix("https://").and_then(|rest| rest.split_once('/')).is_some_and(|(host, path)| {
            !host.is_empty() && !path.is_empty() && !url.contains(char::is_whitespace)
        })
    {
        return Err(format!(
            "`oauth.clientMetadataUrl` `{url}` must be an `https://` URL with a path (where the client ID metadata document is)"
        ));
    }
    if oauth.client_credentials && oauth.client_secret.is_none() {
        return Err("`oauth.grantType` `client_credentials` needs `oauth.clientId` and `oauth.clientSecret`"
            .to_owned());
    }
    Ok(oauth)
}

fn optional_string(entry: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn string_map(
    entry: &Map<String, Value>,
    key: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, String>, String> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), expand(s, env)?)),
                _ => Err(format!("`{key}.{k}` must be a string")),
            })
            .collect(),
        Some(_) => Err(format!("`{key}` must be an object of strings")),
    }
}

fn millis(entry: &Map<String, Value>, key: &str) -> Result<Option<Duration>, String> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_u64() {
            Some(ms) if ms > 0 => Ok(Some(Duration::from_millis(ms))),
            _ => Err(format!("`{key}` must be a positive number of milliseconds")),
        },
    }
}

/// `text` percent-encoded as a URL's query or path shows it: every byte but the unreserved ones.
fn percent_encoded(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// Replaces `${VAR}` and `${VAR:-default}` from the environment; a missing variable without a
/// default is an error naming it.
fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let body = &after[..end];
        let (name, default) = match body.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (body, None),
        };
        match env(name).or_else(|| default.map(str::to_owned)) {
            Some(value) => out.push_str(&value),
            None => {
                return Err(format!(
                    "the environment variable `{name}` is not set (write `${{{name}:-default}}` for a default)"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<McpConfig, ConfigError> {
        McpConfig::parse_with_env(text, &|name| (name == "HOME_DIR").then(|| "/home/me".to_owned()))
    }

    #[test]
    fn reads_claude_desktop_style_files() {
        let config = parse(
            r#"{"mcpServers": {
                "files": {"command": "npx", "args": ["-y", "srv", "${HOME_DIR}/x"], "env": {"A": "${NOPE:-1}"}, "timeout": 5000},
                "off": {"command": "x", "disabled": true},
                "web": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer t"}, "toolPrefix": "", "defer": true}
            }}"#,
        )
        .unwrap();
        assert_eq!(config.servers.len(), 2);
        let files = &config.servers[0];
        assert_eq!(files.name, "files");
        assert_eq!(
            files.transport,
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "srv".into(), "/home/me/x".into()],
                env: [("A".to_owned(), "1".to_owned())].into(),
                cwd: None,
            }
        );
        assert_eq!(files.timeout, Duration::from_secs(5));
        assert_eq!(files.total_timeout, DEFAULT_TOTAL_TIMEOUT);
        let web = &config.servers[1];
        assert!(
            matches!(&web.transport, Transport::Http { url, headers, ca_cert: None } if url == "http://127.0.0.1:1/mcp" && headers["Authorization"] == "Bearer t")
        );
        assert_eq!(web.naming.name("web", "fetch"), "fetch");
        assert!(web.defer);
        assert!(!files.defer);
    }

    #[test]
    fn ca_cert_is_expanded_and_a_relative_one_is_the_files_neighbour() {
        let config = parse(
            r#"{"mcpServers": {"box": {"url": "https://box.internal/mcp", "caCert": "${HOME_DIR}/ca.pem"}}}"#,
        )
        .unwrap();
        assert!(matches!(
            &config.servers[0].transport,
            Transport::Http { ca_cert: Some(path), .. } if path == Path::new("/home/me/ca.pem")
        ));

        let dir = std::env::temp_dir().join(format!("mcp-config-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("mcp.json");
        std::fs::write(
            &file,
            r#"{"mcpServers": {"box": {"url": "https://box.internal/mcp", "caCert": "certs/ca.pem"}}}"#,
        )
        .unwrap();
        let loaded = McpConfig::load(&file);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(
            &loaded.unwrap().servers[0].transport,
            Transport::Http { ca_cert: Some(path), .. } if *path == dir.join("certs/ca.pem")
        ));
        assert_eq!(
            parse(r#"{"mcpServers": {"a": {"url": "https://x/mcp", "caCert": 1}}}"#).unwrap_err().to_string(),
            "MCP configuration: server `a`: `caCert` must be a string"
        );
    }

    #[test]
    fn messages_show_the_variable_never_its_value() {
        let env = |name: &str| match name {
            "KEY" => Some("sk-4f9a".to_owned()),
            "USER" => Some("ann smith/ops".to_owned()),
            "SHORT" => Some(" ".to_owned()),
            _ => None,
        };
        let config = McpConfig::parse_with_env(
            r#"{"mcpServers": {"r": {"url": "http://h/mcp?k=${KEY}&u=${USER}${SHORT}", "headers": {"Authorization": "Bearer ${KEY}"}}}}"#,
            &env,
        )
        .unwrap();
        let server = &config.servers[0];
        assert_eq!(
            server.redact("GET http://h/mcp?k=sk-4f9a&u=ann smith/ops and ann%20smith%2Fops, Bearer sk-4f9a"),
            "GET http://h/mcp?k=${KEY}&u=${USER} and ${USER}, Bearer ${KEY}"
        );
        // A blank value is not a secret: text is left as it is.
        assert_eq!(server.redact("a b"), "a b");
        // Another server's entry has nothing to redact.
        assert_eq!(ServerConfig::http("x", "http://h").redact("sk-4f9a"), "sk-4f9a");
    }

    #[test]
    fn oauth_settings_are_read_expanded_and_checked() {
        let config = parse(
            r#"{"mcpServers": {
                "a": {"url": "https://a/mcp", "oauth": {"clientId": "id-${HOME_DIR}", "clientSecret": "${NOPE:-s3}", "scopes": "read write", "callbackPort": 8765}},
                "b": {"url": "https://b/mcp", "oauth": {"scopes": ["mcp"]}},
                "c": {"url": "https://c/mcp"}
            }}"#,
        )
        .unwrap();
        let a = &config.servers[0].oauth;
        assert_eq!(a.client_id.as_deref(), Some("id-/home/me"));
        assert_eq!(a.client_secret.as_deref(), Some("s3"));
        assert_eq!(a.scopes, ["read", "write"]);
        assert_eq!(a.callback_port, Some(8765));
        assert!(!format!("{a:?}").contains("s3"), "the secret stays out of debug output");
        assert_eq!(config.servers[1].oauth.scopes, ["mcp"]);
        assert_eq!(config.servers[2].oauth, OAuthConfig::default());
        let named = config.login_command("tools mcp login");
        assert_eq!(named.servers[1].oauth.login_command.as_deref(), Some("tools mcp login b"));

        let message = |text: &str| parse(text).unwrap_err().to_string();
        assert_eq!(
            message(r#"{"mcpServers": {"a": {"command": "x", "oauth": {}}}}"#),
            "MCP configuration: server `a`: `oauth` applies to HTTP servers (`url`) only"
        );
        assert_eq!(
            message(r#"{"mcpServers": {"a": {"url": "https://a", "oauth": {"clientID": "x"}}}}"#),
            "MCP configuration: server `a`: unknown key `oauth.clientID`; expected one of `clientId`, `clientSecret`, `scopes`, `callbackPort`, `grantType`, `clientMetadataUrl`"
        );
        assert_eq!(
            message(r#"{"mcpServers": {"a": {"url": "https://a", "oauth": {"callbackPort": 70000}}}}"#),
            "MCP configuration: server `a`: `oauth.callbackPort` must be a port number (1-65535)"
        );
        assert_eq!(
            message(r#"{"mcpServers": {"a": {"url": "https://a", "oauth": {"clientSecret": "s"}}}}"#),
            "MCP configuration: server `a`: `oauth.clientSecret` needs `oauth.clientId`"
        );
        let machine = parse(
            r#"{"mcpServers": {"m": {"url": "https://m/mcp", "oauth": {"grantType": "client_credentials", "clientId": "i", "clientSecret": "s", "clientMetadataUrl": "https://me.example/c.json"}}}}"#,
        )
        .unwrap();
        assert!(machine.servers[0].oauth.client_credentials);
        assert_eq!(
            machine.servers[0].oauth.client_metadata_url.as_deref(),
            Some("https://me.example/c.json")
        );
        assert_eq!(
            message(
                r#"{"mcpServers": {"a": {"url": "https://a", "oauth": {"grantType": "client_credentials", "clientId": "i"}}}}"#
            ),
            "MCP configuration: server `a`: `oauth.grantType` `client_credentials` needs `oauth.clientId` and `oauth.clientSecret`"
        );
        assert_eq!(
            message(r#"{"mcpServers": {"a": {"url": "https://a", "oauth": {"grantType": "password"}}}}"#),
            "MCP configuration: server `a`: `oauth.grantType` is `password`; expected `authorization_code` (a person's login, the default) or `client_credentials`"
        );
        for bad in
            ["http://me.example/c.json", "https://me.example", "https://me.example/", "https:///c.json"]
        {
            let text = format!(
                r#"{{"mcpServers": {{"a": {{"url": "https://a", "oauth": {{"clientMetadataUrl": "{bad}"}}}}}}}}"#
            );
            assert!(message(&text).contains("must be an `https://` URL with a path"), "{bad}");
        }
    }

    #[test]
    fn errors_name_the_server_and_the_key() {
        let message = |text: &str| parse(text).unwrap_err().to_string();
        assert_eq!(message("[]"), "MCP configuration: no `mcpServers` object at the top level");
        assert_eq!(
            message(r#"{"mcpServers": {"a": {"args": []}}}"#),
            "MCP configuration: server `a`: `command` is missing (or give `url` for an HTTP server)"
        );
        assert_eq!(
            message(r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "${MISSING}"}}}}"#),
            "MCP configuration: server `a`: the environment variable `MISSING` is not set (write `${MISSING:-default}` for a default)"
        );
        assert_eq!(
            message(r#"{"mcpServers": {"a": {"command": "x", "timeout": -1}}}"#),
            "MCP configuration: server `a`: `timeout` must be a positive number of milliseconds"
        );
        assert_eq!(
            message(r#"{"mcpServers": {"a": {"command": "x", "defer": "yes"}}}"#),
            "MCP configuration: server `a`: `defer` must be true or false"
        );
        assert_eq!(
            message(r#"{"mcpServers": {"a": {"command": "x", "disabledTools": "delete"}}}"#),
            "MCP configuration: server `a`: `disabledTools` must be an array of tool names"
        );
        assert_eq!(
            message(r#"{"mcpServers": {"a": {"command": "x", "enabledTools": [1]}}}"#),
            "MCP configuration: server `a`: `enabledTools` must hold strings"
        );
        assert!(
            message(r#"{"mcpServers": {"a": {"command": "x", "sandbox": "sometimes"}}}"#)
                .starts_with("MCP configuration: server `a`: `sandbox`: "),
        );
        assert_eq!(
            message(r#"{"mcpServers": {"a": {"url": "http://127.0.0.1:1/mcp", "sandbox": "read-only"}}}"#),
            "MCP configuration: server `a`: `sandbox` applies to stdio servers (the ones started here) only"
        );
        assert!(
            message(r#"{"mcpServers": {"a": {"type": "sse", "url": "x"}}}"#)
                .contains("SSE transport is not supported")
        );
        assert_eq!(
            message(r#"{"mcpServers": {"a__b": {"command": "x"}}}"#),
            "MCP configuration: server `a__b`: a server's name may not contain `__`, which separates the server \
             from the tool in its tools' names; rename it (`a_b`)"
        );
    }
}
