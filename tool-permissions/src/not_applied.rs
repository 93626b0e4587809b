//! The keys of a settings file that are not applied, each with the reason, so that a file
//! written for Claude Code never means less than it says without a word.

use std::fmt;

use serde_json::{Map, Value};

/// A key of a settings file that has no effect here, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotApplied {
    /// The file (or the name given for the text).
    pub origin: String,
    /// The key, with its section (`env`, `hooks.Stop`, `sandbox.ignoreViolations`).
    pub key: String,
    /// Why it has no effect.
    pub reason: String,
}

impl fmt::Display for NotApplied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: `{}` is not applied: {}", self.origin, self.key, self.reason)
    }
}

/// The top-level keys read by this crate.
const APPLIED: &[&str] =
    &["permissions", "hooks", "sandbox", "environment", "env", "disableAllHooks", "$schema"];

const CLAUDE_CODE_ITSELF: &str =
    "it configures Claude Code's own model, interface, account or updates, which this program does not have";

/// Claude Code's top-level keys that have no effect here, and why.
const TOP_LEVEL: &[(&str, &str)] = &[
    (
        "enableAllProjectMcpServers",
        "a project's .mcp.json is for the application to mount (the `tools` binary does)",
    ),
    (
        "enabledMcpjsonServers",
        "a project's .mcp.json is for the application to mount (the `tools` binary does)",
    ),
    (
        "disabledMcpjsonServers",
        "a project's .mcp.json is for the application to mount (the `tools` binary does)",
    ),
    ("model", CLAUDE_CODE_ITSELF),
    ("availableModels", CLAUDE_CODE_ITSELF),
    ("alwaysThinkingEnabled", CLAUDE_CODE_ITSELF),
    ("outputStyle", CLAUDE_CODE_ITSELF),
    ("statusLine", CLAUDE_CODE_ITSELF),
    ("spinnerTipsEnabled", CLAUDE_CODE_ITSELF),
    ("theme", CLAUDE_CODE_ITSELF),
    ("verbose", CLAUDE_CODE_ITSELF),
    ("language", CLAUDE_CODE_ITSELF),
    ("includeCoAuthoredBy", CLAUDE_CODE_ITSELF),
    ("attribution", CLAUDE_CODE_ITSELF),
    ("cleanupPeriodDays", CLAUDE_CODE_ITSELF),
    ("companyAnnouncements", CLAUDE_CODE_ITSELF),
    ("autoUpdates", CLAUDE_CODE_ITSELF),
    ("autoUpdatesChannel", CLAUDE_CODE_ITSELF),
    ("preferredNotifChannel", CLAUDE_CODE_ITSELF),
    ("showTurnDuration", CLAUDE_CODE_ITSELF),
    ("apiKeyHelper", CLAUDE_CODE_ITSELF),
    ("awsAuthRefresh", CLAUDE_CODE_ITSELF),
    ("awsCredentialExport", CLAUDE_CODE_ITSELF),
    ("otelHeadersHelper", CLAUDE_CODE_ITSELF),
    ("forceLoginMethod", CLAUDE_CODE_ITSELF),
    ("forceLoginOrgUUID", CLAUDE_CODE_ITSELF),
    ("extraKnownMarketplaces", CLAUDE_CODE_ITSELF),
    ("enabledPlugins", CLAUDE_CODE_ITSELF),
    ("plansDirectory", CLAUDE_CODE_ITSELF),
    ("fileSuggestion", CLAUDE_CODE_ITSELF),
    ("respectGitignore", CLAUDE_CODE_ITSELF),
    ("skipWebFetchPreflight", CLAUDE_CODE_ITSELF),
    ("feedbackSurveyState", CLAUDE_CODE_ITSELF),
];

/// Claude Code's hook events that are not run here, and why.
pub(crate) const HOOK_EVENTS: &[(&str, &str)] = &[
    ("PostToolUseFailure", "PostToolUse hooks see every result, failed ones too (`tool_response.is_error`)"),
    ("PermissionRequest", "asks go to the application's asker or the MCP client's elicitation"),
    ("UserPromptSubmit", "this program runs tools, and sees no prompts"),
    ("Stop", "this program runs tools, not an agent's loop, so nothing stops"),
    ("SubagentStart", "this program runs no subagents"),
    ("SubagentStop", "this program runs no subagents"),
    ("PreCompact", "this program keeps no conversation to compact"),
    ("PostCompact", "this program keeps no conversation to compact"),
    ("Setup", "this program has no setup step"),
];

/// Claude Code's `sandbox` keys that have no counterpart here, and why.
pub(crate) const SANDBOX_KEYS: &[(&str, &str)] = &[
    (
        "enableWeakerNestedSandbox",
        "the sandbox here has one strength (Landlock, seccomp and namespaces as the kernel allows); \
         `sandbox.enabled: false` or --sandbox off runs commands unconfined",
    ),
    (
        "ignoreViolations",
        "a refused access is refused; allow the path with `sandbox.filesystem.allowWrite` instead",
    ),
];

/// The top-level keys of `top` that this crate does not apply: Claude Code's with their
/// reasons, and keys it does not know (a program that reads more keys of the file, as the
/// `tools` binary reads `verify`, leaves those out when it reports them).
pub(crate) fn top_level(top: &Map<String, Value>, origin: &str) -> Vec<NotApplied> {
    let mut out = Vec::new();
    for key in top.keys() {
        if APPLIED.contains(&key.as_str()) {
            continue;
        }
        let reason = match TOP_LEVEL.iter().find(|(name, _)| name == key) {
            Some((_, reason)) => (*reason).to_owned(),
            None => "no such key in Claude Code's settings or this program's".to_owned(),
        };
        out.push(NotApplied { origin: origin.to_owned(), key: key.clone(), reason });
    }
    out
}
