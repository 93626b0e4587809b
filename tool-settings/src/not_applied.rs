//! The keys of a settings file that are not applied, each with the reason, so that a file
//! written for Claude Code never means less than it says without a word.

use std::fmt;

use crate::SettingsFile;

/// A key of a settings file that has no effect here, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotApplied {
    /// The file (or the name given for the text).
    pub origin: String,
    /// The key, with its section (`model`, `hooks.Stop`, `sandbox.ignoreViolations`).
    pub key: String,
    /// Why it has no effect.
    pub reason: String,
}

impl fmt::Display for NotApplied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: `{}` is not applied: {}", self.origin, self.key, self.reason)
    }
}

const CLAUDE_CODE_ITSELF: &str =
    "it configures Claude Code's own model, interface, account or updates, which this program does not have";

/// Claude Code's top-level keys that have no effect here.
const TOP_LEVEL: &[&str] = &[
    "model",
    "availableModels",
    "alwaysThinkingEnabled",
    "outputStyle",
    "statusLine",
    "spinnerTipsEnabled",
    "theme",
    "verbose",
    "language",
    "includeCoAuthoredBy",
    "attribution",
    "cleanupPeriodDays",
    "companyAnnouncements",
    "autoUpdates",
    "autoUpdatesChannel",
    "preferredNotifChannel",
    "showTurnDuration",
    "apiKeyHelper",
    "awsAuthRefresh",
    "awsCredentialExport",
    "otelHeadersHelper",
    "forceLoginMethod",
    "forceLoginOrgUUID",
    "extraKnownMarketplaces",
    "enabledPlugins",
    "plansDirectory",
    "fileSuggestion",
    "respectGitignore",
    "skipWebFetchPreflight",
    "feedbackSurveyState",
];

/// Claude Code's hook events that are not run here, and why.
const HOOK_EVENTS: &[(&str, &str)] = &[
    ("PostToolUseFailure", "PostToolUse hooks see every result, failed ones too (`tool_response.is_error`)"),
    ("PermissionRequest", "asks go to the application's asker or the MCP client's elicitation"),
    ("UserPromptSubmit", "this program runs tools, and sees no prompts"),
    ("Stop", "this program runs tools, not an agent's loop, so nothing stops"),
    ("SubagentStart", "this program runs no subagents"),
    ("SubagentStop", "this program runs no subagents"),
    ("PreCompact", "this program keeps no conversation to compact"),
    ("PostCompact", "this program keeps no conversation to compact"),
    ("Setup", "this program has no setup step"),
    ("PermissionDenied", "a refused call's result tells the model why; nothing runs after a refusal"),
];

const HOOK_KEYS: &str = "a hook command here runs with `sh -c` in the foreground, its output read when it ends, \
within its `timeout`; other keys of Claude Code's hook commands have no counterpart";

const PROXY_PORTS: &str = "the proxy listens on a port of its own in each command's network namespace";

impl SettingsFile {
    /// The keys of the file that have no effect here, each with the reason: Claude Code's keys
    /// for its own interface (`model`, `statusLine`), hook events not run, sandbox and network
    /// keys with no counterpart, and keys nobody knows. `origin` names the file in each.
    pub fn not_applied(&self, origin: &str) -> Vec<NotApplied> {
        let mut out = Vec::new();
        let mut not = |key: String, reason: &str| {
            out.push(NotApplied { origin: origin.to_owned(), key, reason: reason.to_owned() })
        };
        for key in self.other.keys() {
            let reason = match TOP_LEVEL.contains(&key.as_str()) {
                true => CLAUDE_CODE_ITSELF,
                false => "no such key in Claude Code's settings or this program's",
            };
            not(key.clone(), reason);
        }
        if let Some(hooks) = &self.hooks {
            for event in hooks.named() {
                if let Some((_, reason)) = HOOK_EVENTS.iter().find(|(name, _)| *name == event) {
                    not(format!("hooks.{event}"), reason);
                }
            }
            for (event, entries) in hooks.events() {
                for (i, entry) in entries.iter().enumerate() {
                    for (j, hook) in entry.hooks.iter().enumerate() {
                        for key in hook.other.keys() {
                            not(format!("hooks.{event}[{i}].hooks[{j}].{key}"), HOOK_KEYS);
                        }
                    }
                }
            }
        }
        let Some(sandbox) = &self.sandbox else { return out };
        if sandbox.enable_weaker_nested_sandbox.is_some() {
            not(
                "sandbox.enableWeakerNestedSandbox".to_owned(),
                "the sandbox here has one strength (Landlock, seccomp and namespaces as the kernel allows); \
                 `sandbox.enabled: false` or --sandbox off runs commands unconfined",
            );
        }
        if sandbox.fail_if_unavailable == Some(false) {
            not(
                "sandbox.failIfUnavailable".to_owned(),
                "the sandbox is never left out: where the kernel cannot make it, commands are refused (--sandbox \
                 off runs them unconfined)",
            );
        }
        if sandbox.ignore_violations.is_some() {
            not(
                "sandbox.ignoreViolations".to_owned(),
                "a refused access is refused; allow the path with `sandbox.filesystem.allowWrite` instead",
            );
        }
        let Some(network) = &sandbox.network else { return out };
        for (key, value, reason) in [
            (
                "allowMachLookup",
                &network.allow_mach_lookup,
                "a macOS sandbox key; commands here run on Linux",
            ),
            ("httpProxyPort", &network.http_proxy_port, PROXY_PORTS),
            ("socksProxyPort", &network.socks_proxy_port, PROXY_PORTS),
            (
                "tlsTerminate",
                &network.tls_terminate,
                "TLS is terminated for the hosts a secret may be sent to (`sandbox.network.secrets`), and only those",
            ),
        ] {
            if value.is_some() {
                not(format!("sandbox.network.{key}"), reason);
            }
        }
        out
    }
}
