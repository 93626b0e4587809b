//! The typed model of a settings file: each section a type, each key a field. Reading a file
//! ([`SettingsFile::from_value`]) checks its shape and the values that mean something alone
//! (a variable's name, a time limit, a size); what needs more (a rule against the tools, a host
//! pattern) is checked by the crate that applies the section.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A settings file: Claude Code's `settings.json`, with this project's own keys. Keys that
/// are not applied are accepted, and named when the file is loaded.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
#[non_exhaustive]
pub struct SettingsFile {
    /// The schema the file follows.
    #[serde(
        rename = "$schema",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub schema: Option<String>,
    /// Permission rules, the permission mode, and the directories outside the workspace.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Permissions>,
    /// Hook commands by event: `PreToolUse`, `PostToolUse`, `SessionStart`, `SessionEnd` and
    /// `Notification` run; Claude Code's other events are accepted and not run.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub hooks: Option<Hooks>,
    /// `true`: no hook command runs.
    #[serde(
        rename = "disableAllHooks",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub disable_all_hooks: Option<bool>,
    /// How commands are confined.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Sandbox>,
    /// Which environment variables commands, hooks and stdio servers inherit.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub environment: Option<Environment>,
    /// Variables set for commands, hook commands and stdio MCP servers, on top of what they
    /// inherit (a server's own `env` and the sandbox's variables win).
    #[serde(default, deserialize_with = "variables", skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    /// The `tools` binary: a check per file extension after edits.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub verify: Option<BTreeMap<String, Value>>,
    /// The `tools` binary: whether calls that change files record checkpoints.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<Checkpoints>,
    /// The `tools` binary: start every server of the project's `.mcp.json`.
    #[serde(
        rename = "enableAllProjectMcpServers",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_all_project_mcp_servers: Option<bool>,
    /// The `tools` binary: the servers of the project's `.mcp.json` to start.
    #[serde(
        rename = "enabledMcpjsonServers",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub enabled_mcpjson_servers: Option<Vec<String>>,
    /// The `tools` binary: the servers of the project's `.mcp.json` never to start.
    #[serde(
        rename = "disabledMcpjsonServers",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub disabled_mcpjson_servers: Option<Vec<String>>,
    /// Managed settings: `true` leaves out the permission rules of every other file (see
    /// [`merge_scoped`](crate::hierarchy::merge_scoped)).
    #[serde(
        rename = "allowManagedPermissionRulesOnly",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_managed_permission_rules_only: Option<bool>,
    /// Managed settings: `true` leaves out the hooks of every other file.
    #[serde(
        rename = "allowManagedHooksOnly",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_managed_hooks_only: Option<bool>,
    /// Any other key (Claude Code's `model`, `statusLine`, ...): kept, and named as not applied.
    #[serde(skip)]
    pub other: BTreeMap<String, Value>,
}

/// `allow`, `ask` or `deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// The call runs.
    Allow,
    /// A person is asked first.
    Ask,
    /// The call is refused.
    Deny,
}

/// What happens to a call that no rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum Mode {
    /// Reads run; anything else no rule allows is asked about.
    #[serde(rename = "default")]
    Default,
    /// Claude Code's other name for `default`.
    #[serde(rename = "manual")]
    Manual,
    /// As `default`, and file edits in the workspace run without asking.
    #[serde(rename = "acceptEdits")]
    AcceptEdits,
    /// Reads run; anything that may change something and that no rule allows is refused.
    #[serde(rename = "plan")]
    Plan,
    /// As `default`, but what would be asked about is refused.
    #[serde(rename = "dontAsk")]
    DontAsk,
    /// Everything no rule refuses or asks about runs.
    #[serde(rename = "bypassPermissions")]
    BypassPermissions,
}

/// The `permissions` object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Permissions {
    /// Rules that allow: `Tool`, `Tool(pattern)`, `mcp__SERVER__TOOL`, `WebFetch(domain:HOST)`.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
    /// Rules that ask first.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub ask: Option<Vec<String>>,
    /// Rules that refuse; deny beats ask beats allow.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub deny: Option<Vec<String>>,
    /// Directories outside the workspace the tools may use (relative ones from the project root).
    #[serde(
        rename = "additionalDirectories",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub additional_directories: Option<Vec<String>>,
    /// The permission mode.
    #[serde(
        rename = "defaultMode",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub default_mode: Option<Mode>,
    /// `"disable"`: `bypassPermissions` may not be used.
    #[serde(
        rename = "disableBypassPermissionsMode",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub disable_bypass_permissions_mode: Option<Disable>,
    /// `"disable"`: the `auto` mode may not be used (it is not a mode here: `auto` is an error
    /// anyway).
    #[serde(
        rename = "disableAutoMode",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub disable_auto_mode: Option<Disable>,
    /// What no rule decides, whatever the mode.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub default: Option<Action>,
    /// What no rule decides, per tool.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub defaults: Option<BTreeMap<String, Action>>,
    /// Paths outside the workspace that no rule names (default: deny).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub external_directory: Option<Action>,
}

/// `"disable"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Disable {
    /// Turned off.
    Disable,
}

/// The `hooks` object: for each event, entries of a matcher and commands. Claude Code's
/// events that are not run here are accepted, checked, and named as not applied.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
#[non_exhaustive]
pub struct Hooks {
    /// Before a call runs: the hook may refuse it, allow it, or change its arguments.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub PreToolUse: Option<Vec<HookEntry>>,
    /// After a call: the hook sees its result.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub PostToolUse: Option<Vec<HookEntry>>,
    /// Not run (see [`SettingsFile::not_applied`]).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub PostToolUseFailure: Option<Vec<HookEntry>>,
    /// Not run.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub PermissionRequest: Option<Vec<HookEntry>>,
    /// When a person is asked for a permission (matched against `permission_prompt`).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub Notification: Option<Vec<HookEntry>>,
    /// Not run.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub UserPromptSubmit: Option<Vec<HookEntry>>,
    /// Not run.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub Stop: Option<Vec<HookEntry>>,
    /// Not run.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub SubagentStart: Option<Vec<HookEntry>>,
    /// Not run.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub SubagentStop: Option<Vec<HookEntry>>,
    /// Not run.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub PreCompact: Option<Vec<HookEntry>>,
    /// Not run.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub PostCompact: Option<Vec<HookEntry>>,
    /// Not run.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub PermissionDenied: Option<Vec<HookEntry>>,
    /// When a session starts (matched against its `source`).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub SessionStart: Option<Vec<HookEntry>>,
    /// When a session ends (matched against its `reason`).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub SessionEnd: Option<Vec<HookEntry>>,
    /// Not run.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub Setup: Option<Vec<HookEntry>>,
}

impl Hooks {
    /// Each event's name and entries, in the order above.
    pub fn events(&self) -> [(&'static str, &[HookEntry]); 15] {
        fn entries(list: &Option<Vec<HookEntry>>) -> &[HookEntry] {
            list.as_deref().unwrap_or_default()
        }
        [
            ("PreToolUse", entries(&self.PreToolUse)),
            ("PostToolUse", entries(&self.PostToolUse)),
            ("PostToolUseFailure", entries(&self.PostToolUseFailure)),
            ("PermissionRequest", entries(&self.PermissionRequest)),
            ("Notification", entries(&self.Notification)),
            ("UserPromptSubmit", entries(&self.UserPromptSubmit)),
            ("Stop", entries(&self.Stop)),
            ("SubagentStart", entries(&self.SubagentStart)),
            ("SubagentStop", entries(&self.SubagentStop)),
            ("PreCompact", entries(&self.PreCompact)),
            ("PostCompact", entries(&self.PostCompact)),
            ("PermissionDenied", entries(&self.PermissionDenied)),
            ("SessionStart", entries(&self.SessionStart)),
            ("SessionEnd", entries(&self.SessionEnd)),
            ("Setup", entries(&self.Setup)),
        ]
    }

    /// The events the file names, present or empty.
    pub(crate) fn named(&self) -> impl Iterator<Item = &'static str> + '_ {
        let present = [
            self.PreToolUse.is_some(),
            self.PostToolUse.is_some(),
            self.PostToolUseFailure.is_some(),
            self.PermissionRequest.is_some(),
            self.Notification.is_some(),
            self.UserPromptSubmit.is_some(),
            self.Stop.is_some(),
            self.SubagentStart.is_some(),
            self.SubagentStop.is_some(),
            self.PreCompact.is_some(),
            self.PostCompact.is_some(),
            self.PermissionDenied.is_some(),
            self.SessionStart.is_some(),
            self.SessionEnd.is_some(),
            self.Setup.is_some(),
        ];
        self.events().into_iter().zip(present).filter(|(_, present)| *present).map(|((name, _), _)| name)
    }
}

/// One entry of an event: which tools, and the commands.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct HookEntry {
    /// A regular expression matched against the whole tool name (ours or Claude Code's); empty,
    /// `*` or absent: every tool.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The commands.
    pub hooks: Vec<HookCommand>,
}

/// One hook command. Claude Code's other keys of a command hook (`async`, `statusMessage`,
/// `shell`, ...) are kept and named as not applied; `args` (the command run without a shell) is
/// refused, since running `command` alone would run something else.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
pub struct HookCommand {
    /// `"command"`, the one kind run here.
    #[serde(rename = "type")]
    pub kind: CommandKind,
    /// Run with `sh -c` in the workspace root.
    #[serde(deserialize_with = "command_line")]
    #[schemars(regex(pattern = r"\S"))]
    pub command: String,
    /// Seconds, above 0 (default 600, as in Claude Code).
    #[serde(
        default,
        deserialize_with = "timeout",
        serialize_with = "seconds",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 86400))]
    pub timeout: Option<f64>,
    /// Claude Code's `if`: a permission rule (`Bash(git *)`, `Edit(./src/**)`); the hook runs
    /// only for a call the rule matches, as a deny rule would (a part of a compound command
    /// is enough).
    #[serde(rename = "if", default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// Claude Code's exec form: refused.
    #[serde(default, deserialize_with = "exec_form", skip_serializing)]
    #[schemars(skip)]
    args: Option<()>,
    /// Any other key: kept, and named as not applied.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

impl HookCommand {
    /// A command with the default time limit.
    pub fn new(command: impl Into<String>) -> HookCommand {
        HookCommand {
            kind: CommandKind::Command,
            command: command.into(),
            timeout: None,
            condition: None,
            args: None,
            other: BTreeMap::new(),
        }
    }
}

/// The kind of a hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CommandKind {
    /// A shell command.
    Command,
}

/// The `sandbox` object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Sandbox {
    /// `false`: commands run unconfined.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Commands that run outside the sandbox.
    #[serde(
        rename = "excludedCommands",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub excluded_commands: Option<Vec<String>>,
    /// Commands that run in the sandbox with the network on.
    #[serde(
        rename = "networkCommands",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub network_commands: Option<Vec<String>>,
    /// `false`: every request to leave the sandbox is refused.
    #[serde(
        rename = "allowUnsandboxedCommands",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_unsandboxed_commands: Option<bool>,
    /// `true`: commands may write the repository's metadata (`.git`).
    #[serde(
        rename = "allowGitWrites",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_git_writes: Option<bool>,
    /// Sandboxed commands run without asking when no rule decides them (default `true`).
    #[serde(
        rename = "autoAllowBashIfSandboxed",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub auto_allow_bash_if_sandboxed: Option<bool>,
    /// `true`: commands are refused where the sandbox cannot be made, as they always are here;
    /// `false` (run them unconfined then) is not applied.
    #[serde(
        rename = "failIfUnavailable",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub fail_if_unavailable: Option<bool>,
    /// Bounds on each command's processes and memory.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    /// More writable roots and protected paths.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<Filesystem>,
    /// The network proxy's rules (read by the tool-egress crate).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    /// Not applied.
    #[serde(
        rename = "enableWeakerNestedSandbox",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_weaker_nested_sandbox: Option<Value>,
    /// Not applied.
    #[serde(
        rename = "ignoreViolations",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub ignore_violations: Option<Value>,
}

/// `sandbox.network`: the network proxy's rules.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Network {
    /// Hosts commands may reach: `example.com`, `*.example.com` (subdomains), `example.com:443`,
    /// `*`, or an address or a network (`10.0.0.0/8`).
    #[serde(
        rename = "allowedDomains",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub allowed_domains: Option<Vec<String>>,
    /// Hosts refused, whatever allows them.
    #[serde(
        rename = "deniedDomains",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub denied_domains: Option<Vec<String>>,
    /// Addresses and networks that may be reached although not public.
    #[serde(
        rename = "allowedAddresses",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub allowed_addresses: Option<Vec<String>>,
    /// Plain-HTTP `GET`, `HEAD` and `OPTIONS` only.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub limited: Option<bool>,
    /// Never ask: a host no rule allows is refused.
    #[serde(
        rename = "strictAllowlist",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub strict_allowlist: Option<bool>,
    /// Environment variables holding secrets, each with the hosts it may be sent to.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub secrets: Option<BTreeMap<String, Vec<String>>>,
    /// Commands may listen on local ports.
    #[serde(
        rename = "allowLocalBinding",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_local_binding: Option<bool>,
    /// Unix socket paths commands may connect to.
    #[serde(
        rename = "allowUnixSockets",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_unix_sockets: Option<Vec<String>>,
    /// Every Unix socket.
    #[serde(
        rename = "allowAllUnixSockets",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_all_unix_sockets: Option<bool>,
    /// Managed settings: `true` leaves out the hosts every other file allows.
    #[serde(
        rename = "allowManagedDomainsOnly",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_managed_domains_only: Option<bool>,
    /// Not applied.
    #[serde(
        rename = "allowMachLookup",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_mach_lookup: Option<Value>,
    /// Not applied.
    #[serde(
        rename = "httpProxyPort",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub http_proxy_port: Option<Value>,
    /// Not applied.
    #[serde(
        rename = "socksProxyPort",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub socks_proxy_port: Option<Value>,
    /// Not applied.
    #[serde(
        rename = "tlsTerminate",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub tls_terminate: Option<Value>,
}

/// `sandbox.filesystem`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Filesystem {
    /// More writable roots (relative to the workspace root, `~/` from the home directory).
    #[serde(
        rename = "allowWrite",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_write: Option<Vec<String>>,
    /// More protected paths.
    #[serde(
        rename = "denyWrite",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub deny_write: Option<Vec<String>>,
    /// Paths sandboxed commands may not read (as `denyWrite`'s; a directory with all it holds,
    /// `dir/**` meaning the same): empty to them.
    #[serde(
        rename = "denyRead",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub deny_read: Option<Vec<String>>,
    /// Paths readable again within a `denyRead` directory; of the paths named in either list,
    /// the deepest above a path decides.
    #[serde(
        rename = "allowRead",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_read: Option<Vec<String>>,
    /// Managed settings: `true` leaves out the `allowRead` paths of every other file.
    #[serde(
        rename = "allowManagedReadPathsOnly",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_managed_read_paths_only: Option<bool>,
}

/// `sandbox.limits`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Limits {
    /// At most this many processes and threads per command (default 4096), or `false`.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub processes: Option<Count>,
    /// At most this much memory per command: bytes, a size such as `"4G"`, or `false` (the
    /// default).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub memory: Option<Bound>,
}

/// A number, or `false` for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Count {
    /// A positive number.
    Number(#[schemars(range(min = 1))] u64),
    /// `false`: no bound (`true` is refused).
    #[schemars(extend("const" = false))]
    Off(bool),
}

impl Count {
    /// The bound, `None` for none.
    pub fn get(self) -> Option<u64> {
        match self {
            Count::Number(n) => Some(n),
            Count::Off(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Bool(false) => Ok(Count::Off(false)),
            Value::Number(n) if n.as_u64().is_some_and(|n| n > 0) => {
                Ok(Count::Number(n.as_u64().unwrap_or(1)))
            }
            other => Err(de::Error::custom(format!(
                "must be a positive whole number or false (no bound), not {other}"
            ))),
        }
    }
}

/// A size, or `false` for none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Bound {
    /// A positive number of bytes.
    Number(#[schemars(range(min = 1))] u64),
    /// A size with `K`, `M` or `G` (powers of 1024).
    Size(#[schemars(regex(pattern = r"^\s*[0-9]+\s*[kKmMgG]?\s*$"))] String),
    /// `false`: no bound (`true` is refused).
    #[schemars(extend("const" = false))]
    Off(bool),
}

impl Bound {
    /// The bound in bytes, `None` for none.
    pub fn bytes(&self) -> Option<u64> {
        match self {
            Bound::Number(n) => Some(*n),
            Bound::Size(text) => size(text),
            Bound::Off(_) => None,
        }
    }
}

/// `"512M"` in bytes; `None` for a size of 0, one too large, or text that is not a size.
fn size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, scale) = match text.char_indices().last() {
        Some((at, 'k' | 'K')) => (&text[..at], 1u64 << 10),
        Some((at, 'm' | 'M')) => (&text[..at], 1 << 20),
        Some((at, 'g' | 'G')) => (&text[..at], 1 << 30),
        _ => (text, 1),
    };
    let n: u64 = digits.trim().parse().ok()?;
    n.checked_mul(scale).filter(|n| *n > 0)
}

impl<'de> Deserialize<'de> for Bound {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        match &value {
            Value::Bool(false) => return Ok(Bound::Off(false)),
            Value::Number(n) if n.as_u64().is_some_and(|n| n > 0) => {
                return Ok(Bound::Number(n.as_u64().unwrap_or(1)));
            }
            Value::String(text) if size(text).is_some() => return Ok(Bound::Size(text.clone())),
            _ => {}
        }
        Err(de::Error::custom(format!(
            "must be a positive whole number, or a size such as \"512M\" or \"4G\", or false (no bound), not {value}"
        )))
    }
}

/// The `environment` object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Environment {
    /// Names (a trailing `*` matches a prefix) inherited besides the base variables.
    #[serde(default, deserialize_with = "names", skip_serializing_if = "Option::is_none")]
    pub inherit: Option<Vec<String>>,
    /// `true`: the whole environment is inherited.
    #[serde(
        rename = "inheritAll",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub inherit_all: Option<bool>,
    /// Name patterns (`*` and `?` match, case ignored) left out even where `inherit`,
    /// `inheritAll` or the base variables would pass them.
    #[serde(default, deserialize_with = "names", skip_serializing_if = "Option::is_none")]
    pub exclude: Option<Vec<String>>,
}

/// The `checkpoints` object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Checkpoints {
    /// Whether calls that change files record checkpoints.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// A key that is present: its value, never `null` (an absent key is the default; `null` is a
/// mistake, said as such).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Whether `name` can name a variable, or a pattern of names: not empty, no `=`, no NUL.
pub(crate) fn variable_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0'])
}

/// `env`: variable names and values.
fn variables<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    let map = BTreeMap::<String, String>::deserialize(d)?;
    if let Some(name) = map.keys().find(|name| !variable_name(name)) {
        return Err(de::Error::custom(format!("{name:?} is not a variable name")));
    }
    if let Some(name) = map.iter().find(|(_, value)| value.contains('\0')).map(|(name, _)| name) {
        return Err(de::Error::custom(format!("the value of {name:?} holds a NUL character")));
    }
    Ok(Some(map))
}

/// Variable names or name patterns.
fn names<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let names = Vec::<String>::deserialize(d)?;
    if let Some((i, name)) = names.iter().enumerate().find(|(_, name)| !variable_name(name)) {
        return Err(de::Error::custom(format!("item {i}, {name:?}, is not a variable name or pattern")));
    }
    Ok(Some(names))
}

/// A hook's command line: not blank.
fn command_line<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let command = String::deserialize(d)?;
    if command.trim().is_empty() {
        return Err(de::Error::custom("a hook's command must not be blank"));
    }
    Ok(command)
}

/// A hook's time limit: seconds, above 0, at most a day.
fn timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let value = Value::deserialize(d)?;
    match value.as_f64() {
        Some(seconds) if seconds > 0.0 && seconds <= 86_400.0 => Ok(Some(seconds)),
        _ => {
            Err(de::Error::custom(format!("must be a number of seconds above 0, at most 86400, not {value}")))
        }
    }
}

/// A time limit as written: a whole number of seconds without a fraction.
fn seconds<S: serde::Serializer>(timeout: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match timeout {
        Some(t) if t.fract() == 0.0 => s.serialize_u64(*t as u64),
        Some(t) => s.serialize_f64(*t),
        None => s.serialize_none(),
    }
}

/// A hook's `args`: refused, with the reason.
fn exec_form<'de, D: Deserializer<'de>>(d: D) -> Result<Option<()>, D::Error> {
    let _ = de::IgnoredAny::deserialize(d)?;
    Err(de::Error::custom(
        "a hook command with `args` (run without a shell) is not supported here: put the program and its \
         arguments in `command`, which runs with `sh -c`",
    ))
}
