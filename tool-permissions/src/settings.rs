//! Loading rules and hooks from a settings file in Claude Code's shape
//! (`{"permissions": {"allow": [...], "ask": [...], "deny": [...]}, "hooks": {...}}`).

// Without `command-hooks`, hook entries are still checked when a file is loaded, but never run.
#![cfg_attr(not(feature = "command-hooks"), allow(dead_code))]

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use regex::Regex;
use serde_json::{Map, Value};

use crate::mode::PermissionMode;
use crate::not_applied::{self, NotApplied};
use crate::rules::{Action, EXTERNAL_DIRECTORY, RuleError, Rules, RulesBuilder};
use tool_sandbox::environment::EnvFilter;

/// How long a hook may run when its entry sets no `timeout` (Claude Code's default).
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// A settings file that cannot be used: which file, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    /// The file (or the name given for the text).
    pub origin: String,
    /// What is wrong, naming the key or the rule.
    pub problem: String,
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.problem)
    }
}

impl std::error::Error for SettingsError {}

/// Which tools a hook entry applies to: every tool (`""`, `"*"` or no matcher), or a regular
/// expression matched against the whole tool name (ours, or the catalog's other name).
#[derive(Debug, Clone)]
pub(crate) enum Matcher {
    All,
    Pattern(Regex),
}

impl Matcher {
    pub(crate) fn matches(&self, tool: &str, other_name: Option<&str>) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Pattern(regex) => {
                regex.is_match(tool) || other_name.is_some_and(|name| regex.is_match(name))
            }
        }
    }
}

/// One external hook command.
#[derive(Debug, Clone)]
pub(crate) struct HookCommand {
    pub(crate) matcher: Matcher,
    pub(crate) command: String,
    pub(crate) timeout: Duration,
    /// Which of our environment variables it inherits (the file's `environment`).
    pub(crate) environment: Arc<EnvFilter>,
}

/// The hook commands of a settings file.
#[derive(Debug, Clone, Default)]
pub(crate) struct HookCommands {
    pub(crate) pre_tool_use: Vec<HookCommand>,
    pub(crate) post_tool_use: Vec<HookCommand>,
    /// `SessionStart`: run when a session starts, their matchers against its `source`.
    pub(crate) session_start: Vec<HookCommand>,
    /// `SessionEnd`: run when it ends, their matchers against its `reason`.
    pub(crate) session_end: Vec<HookCommand>,
    /// `Notification`: run when a person is asked for a permission, their matchers against the
    /// notification's type (`permission_prompt`).
    pub(crate) notification: Vec<HookCommand>,
    /// The kernel sandbox the hook commands run in (`None`: unconfined).
    #[cfg(feature = "command-hooks")]
    pub(crate) sandbox: Option<Arc<tool_sandbox::Sandbox>>,
}

impl HookCommands {
    /// Every hook command, of every event.
    fn all_mut(&mut self) -> impl Iterator<Item = &mut HookCommand> {
        self.pre_tool_use
            .iter_mut()
            .chain(self.post_tool_use.iter_mut())
            .chain(self.session_start.iter_mut())
            .chain(self.session_end.iter_mut())
            .chain(self.notification.iter_mut())
    }
}

/// Permission rules and hooks, loaded from a settings file and checked in full when loaded.
#[derive(Debug, Clone)]
pub struct Settings {
    pub(crate) rules: Rules,
    pub(crate) hooks: HookCommands,
    environment: EnvFilter,
    pub(crate) sandbox: SandboxSettings,
    /// `permissions.defaultMode`, and where it was set (for messages).
    pub(crate) mode: Option<(PermissionMode, Arc<str>)>,
    origin: String,
    not_applied: Vec<NotApplied>,
}

/// The `sandbox` object of a settings file, in Claude Code's shape: `enabled`,
/// `excludedCommands`, `allowUnsandboxedCommands`, and `filesystem` with `allowWrite` and
/// `denyWrite` (paths relative to the workspace root, `~` for the home directory). The
/// application that starts commands applies it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxSettings {
    /// `enabled`: `false` runs commands unconfined, `true` in the default sandbox.
    pub enabled: Option<bool>,
    /// `excludedCommands`: simple commands (no `;`, `&`, `|`, redirections or substitutions)
    /// starting with one of these run outside the sandbox.
    pub excluded_commands: Vec<String>,
    /// `networkCommands`: simple commands starting with one of these run in the sandbox with
    /// the network on, without asking (`cargo build`, `npm install`).
    pub network_commands: Vec<String>,
    /// `allowUnsandboxedCommands`: `false` refuses every request to run a command unsandboxed.
    pub allow_unsandboxed_commands: Option<bool>,
    /// `filesystem.allowWrite`: more writable roots.
    pub allow_write: Vec<PathBuf>,
    /// `filesystem.denyWrite`: more protected paths.
    pub deny_write: Vec<PathBuf>,
    /// `allowGitWrites`: `true` lets sandboxed commands write a repository's metadata (`.git`),
    /// what git runs excepted; read-only as a whole by default.
    pub allow_git_writes: Option<bool>,
    /// `autoAllowBashIfSandboxed` (Claude Code's default: `true`): commands that run in the
    /// sandbox run without asking when no rule decides them (see
    /// [`Policy::sandboxed_commands`](crate::Policy::sandboxed_commands)).
    pub auto_allow_bash_if_sandboxed: Option<bool>,
    /// `limits`: bounds on each command, `{"processes": 1024, "memory": "4G"}` (a number, a
    /// size with `K`, `M` or `G`, or `false` for no bound); a key left out keeps its default
    /// (see [`tool_sandbox::Limits`]).
    pub limits: Option<tool_sandbox::Limits>,
}

impl Settings {
    /// Reads `path` and adds its rules to `base` (which sets the root, the catalog and the
    /// defaults the file does not set).
    pub fn load(path: impl AsRef<Path>, base: RulesBuilder) -> Result<Settings, SettingsError> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| SettingsError {
            origin: origin.clone(),
            problem: format!("cannot read the file: {e}"),
        })?;
        Self::parse(&text, &origin, base)
    }

    /// Parses settings JSON; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str, base: RulesBuilder) -> Result<Settings, SettingsError> {
        let value: Value = serde_json::from_str(text).map_err(|e| SettingsError {
            origin: origin.to_owned(),
            problem: format!("not valid JSON: {e}"),
        })?;
        Self::from_value(value, origin, base)
    }

    /// Settings from parsed JSON (several files merged with
    /// [`hierarchy::merge`](crate::hierarchy::merge), say); `origin` names it in errors.
    pub fn from_value(value: Value, origin: &str, base: RulesBuilder) -> Result<Settings, SettingsError> {
        let error = |problem: String| SettingsError { origin: origin.to_owned(), problem };
        let environment = EnvFilter::from_settings(&value).map_err(|e| error(e.to_string()))?;
        let Value::Object(top) = value else {
            return Err(error("the settings must be a JSON object".to_owned()));
        };
        let root = base.root_dir().to_path_buf();
        let mut builder = base;
        let mut mode = None;
        if let Some(schema) = top.get("$schema").filter(|s| !s.is_string()) {
            return Err(error(format!("`$schema` must be a string (the schema's address), found {schema}")));
        }
        let mut not_applied = not_applied::top_level(&top, origin);
        let mut not = |key: String, reason: &str| {
            not_applied.push(NotApplied { origin: origin.to_owned(), key, reason: reason.to_owned() });
        };
        if let Some(permissions) = top.get("permissions") {
            let section = permissions_section(permissions, origin, &root, builder).map_err(error)?;
            builder = section.builder;
            mode = section.mode.map(|m| (m, Arc::from(format!("permissions.defaultMode in {origin}"))));
        }
        let mut hooks = match top.get("hooks") {
            Some(hooks) => hooks_section(hooks, &mut not).map_err(error)?,
            None => HookCommands::default(),
        };
        match top.get("disableAllHooks") {
            None | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => hooks = HookCommands::default(),
            Some(other) => {
                return Err(error(format!("`disableAllHooks` must be true or false, found {other}")));
            }
        }
        let shared = Arc::new(environment.clone());
        for hook in hooks.all_mut() {
            hook.environment = shared.clone();
        }
        #[cfg(not(feature = "command-hooks"))]
        if hooks.all_mut().next().is_some() {
            return Err(error(
                "`hooks` needs tool-runtime's `command-hooks` feature, which this program was built without"
                    .to_owned(),
            ));
        }
        let sandbox = match top.get("sandbox") {
            Some(sandbox) => sandbox_section(sandbox, &root, &mut not).map_err(error)?,
            None => SandboxSettings::default(),
        };
        let rules = builder.build().map_err(|e: RuleError| error(e.to_string()))?;
        Ok(Settings { rules, hooks, sandbox, environment, mode, origin: origin.to_owned(), not_applied })
    }

    /// The keys of the file that have no effect, each with the reason (Claude Code's `model`,
    /// hook events that are not run here, keys nobody knows). What the rules leave
    /// out is [`Rules::ignored`].
    pub fn not_applied(&self) -> &[NotApplied] {
        &self.not_applied
    }

    /// `permissions.defaultMode`, when the file names one.
    pub fn mode(&self) -> Option<PermissionMode> {
        self.mode.as_ref().map(|(mode, _)| *mode)
    }

    /// The mode when the file names none (a program that reads Claude Code's files gives
    /// [`PermissionMode::Default`], Claude Code's own default).
    pub fn or_mode(mut self, mode: PermissionMode) -> Self {
        if self.mode.is_none() {
            let origin = format!("as {} names no permissions.defaultMode", self.origin);
            self.mode = Some((mode, origin.into()));
        }
        self
    }

    /// Which of our environment variables hook commands, and the commands and stdio servers of
    /// a program that reads this file, inherit: the file's `environment` object (see
    /// [`tool_sandbox::environment`]), or the base list without one.
    pub fn environment(&self) -> &EnvFilter {
        &self.environment
    }

    /// The rules.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The `sandbox` object.
    pub fn sandbox(&self) -> &SandboxSettings {
        &self.sandbox
    }

    /// The command line of every hook command (`PreToolUse`, `PostToolUse`, `SessionStart`,
    /// `SessionEnd`, then `Notification`).
    pub fn hook_command_lines(&self) -> impl Iterator<Item = &str> {
        let hooks = &self.hooks;
        hooks
            .pre_tool_use
            .iter()
            .chain(&hooks.post_tool_use)
            .chain(&hooks.session_start)
            .chain(&hooks.session_end)
            .chain(&hooks.notification)
            .map(|hook| hook.command.as_str())
    }

    /// How many `PreToolUse` and `PostToolUse` hook commands were loaded.
    pub fn hook_counts(&self) -> (usize, usize) {
        (self.hooks.pre_tool_use.len(), self.hooks.post_tool_use.len())
    }
}

fn sandbox_section(
    value: &Value,
    root: &Path,
    not: &mut impl FnMut(String, &str),
) -> Result<SandboxSettings, String> {
    let Value::Object(section) = value else { return Err("`sandbox` must be an object".to_owned()) };
    let flag = |value: &Value, key: &str| {
        value.as_bool().ok_or_else(|| format!("`sandbox.{key}` must be true or false"))
    };
    let paths = |value: &Value, key: &str| -> Result<Vec<PathBuf>, String> {
        string_list(value, key)?.iter().map(|p| Ok(root.join(expand_home(p)?))).collect()
    };
    let mut out = SandboxSettings::default();
    for (key, value) in section {
        match key.as_str() {
            "enabled" => out.enabled = Some(flag(value, key)?),
            "allowUnsandboxedCommands" => out.allow_unsandboxed_commands = Some(flag(value, key)?),
            "allowGitWrites" => out.allow_git_writes = Some(flag(value, key)?),
            "excludedCommands" => out.excluded_commands = string_list(value, "sandbox.excludedCommands")?,
            "networkCommands" => out.network_commands = string_list(value, "sandbox.networkCommands")?,
            "filesystem" => {
                let Value::Object(fs) = value else {
                    return Err("`sandbox.filesystem` must be an object".to_owned());
                };
                for (key, value) in fs {
                    match key.as_str() {
                        "allowWrite" => out.allow_write = paths(value, "sandbox.filesystem.allowWrite")?,
                        "denyWrite" => out.deny_write = paths(value, "sandbox.filesystem.denyWrite")?,
                        other => {
                            return Err(format!(
                                "`sandbox.filesystem.{other}` is not supported (reads are confined only by \
                                 listing what may be read); expected allowWrite or denyWrite"
                            ));
                        }
                    }
                }
            }
            "autoAllowBashIfSandboxed" => out.auto_allow_bash_if_sandboxed = Some(flag(value, key)?),
            "limits" => out.limits = Some(limits(value)?),
            // The network proxy's (tool-egress).
            "network" => {}
            other
                if let Some((_, reason)) =
                    not_applied::SANDBOX_KEYS.iter().find(|(key, _)| *key == other) =>
            {
                not(format!("sandbox.{other}"), reason);
            }
            other => {
                return Err(format!(
                    "unknown key `sandbox.{other}`; expected one of enabled, excludedCommands, \
                     networkCommands, allowUnsandboxedCommands, allowGitWrites, autoAllowBashIfSandboxed, \
                     filesystem, network, limits"
                ));
            }
        }
    }
    Ok(out)
}

/// `sandbox.limits`: each key a bound, or `false` for none; the others keep their defaults.
fn limits(value: &Value) -> Result<tool_sandbox::Limits, String> {
    let Value::Object(section) = value else {
        return Err(
            "`sandbox.limits` must be an object: {\"processes\": 1024, \"memory\": \"4G\"}".to_owned()
        );
    };
    let mut limits = tool_sandbox::Limits::default();
    for (key, value) in section {
        let bound = |units: bool| -> Result<Option<u64>, String> {
            let bad = || {
                format!(
                    "`sandbox.limits.{key}` must be a positive whole number{} or false (no bound), not {value}",
                    if units { ", or a size such as \"512M\" or \"4G\"" } else { "" }
                )
            };
            match value {
                Value::Bool(false) => Ok(None),
                Value::Number(n) => n.as_u64().filter(|n| *n > 0).map(Some).ok_or_else(bad),
                Value::String(text) if units => {
                    let text = text.trim();
                    let (digits, scale) = match text.char_indices().last() {
                        Some((at, 'k' | 'K')) => (&text[..at], 1u64 << 10),
                        Some((at, 'm' | 'M')) => (&text[..at], 1 << 20),
                        Some((at, 'g' | 'G')) => (&text[..at], 1 << 30),
                        _ => (text, 1),
                    };
                    let n: u64 = digits.trim().parse().map_err(|_| bad())?;
                    n.checked_mul(scale).filter(|n| *n > 0).map(Some).ok_or_else(bad)
                }
                _ => Err(bad()),
            }
        };
        match key.as_str() {
            "processes" => limits.processes = bound(false)?,
            "memory" => limits.memory = bound(true)?,
            other => {
                return Err(format!("unknown key `sandbox.limits.{other}`; expected processes or memory"));
            }
        }
    }
    Ok(limits)
}

/// What the `permissions` object says.
struct PermissionsSection {
    builder: RulesBuilder,
    mode: Option<PermissionMode>,
}

fn permissions_section(
    value: &Value,
    origin: &str,
    root: &Path,
    mut builder: RulesBuilder,
) -> Result<PermissionsSection, String> {
    let Value::Object(section) = value else {
        return Err("`permissions` must be an object".to_owned());
    };
    let mut mode = None;
    let mut bypass_disabled = false;
    for (key, value) in section {
        match key.as_str() {
            "allow" | "ask" | "deny" => {
                let action = Action::parse(key).unwrap_or(Action::Deny);
                let key_origin: Arc<str> = format!("{origin} (permissions.{key})").into();
                for rule in string_list(value, &format!("permissions.{key}"))? {
                    // `WebFetch(domain:HOST)` names a host for the network proxy's rules, not a
                    // tool call: it is read there and skipped here.
                    if is_domain_rule(&rule) {
                        continue;
                    }
                    builder = builder.rule_from(action, rule, key_origin.clone());
                }
            }
            "additionalDirectories" => {
                let key_origin: Arc<str> = format!("{origin} (permissions.additionalDirectories)").into();
                for dir in string_list(value, "permissions.additionalDirectories")? {
                    // Relative to the project root, as Claude Code resolves it.
                    let path = tool_sandbox::lexically_normal(&root.join(expand_home(&dir)?));
                    let path = std::fs::canonicalize(&path).unwrap_or(path);
                    let shown = path.to_string_lossy();
                    let pattern = format!("{EXTERNAL_DIRECTORY}(/{}/**)", globset::escape(&shown));
                    builder = builder.rule_from(Action::Allow, pattern, key_origin.clone());
                }
            }
            "default" => builder = builder.default(action_value(value, "permissions.default")?),
            "external_directory" => {
                builder = builder.external_directory(action_value(value, "permissions.external_directory")?);
            }
            "defaults" => {
                let Value::Object(defaults) = value else {
                    return Err(
                        "`permissions.defaults` must be an object of tool name to allow/ask/deny".to_owned()
                    );
                };
                for (tool, action) in defaults {
                    let action = action_value(action, &format!("permissions.defaults.{tool}"))?;
                    for tool in builder.catalog_ref().tools_named(tool) {
                        builder = builder.tool_default(tool, action);
                    }
                }
            }
            "defaultMode" => {
                let names = || PermissionMode::ALL.map(PermissionMode::as_str).join(", ");
                let text = value.as_str().ok_or_else(|| {
                    format!("`permissions.defaultMode` must be a string, one of {}; found {value}", names())
                })?;
                mode = Some(PermissionMode::parse(text).ok_or_else(|| {
                    format!("`permissions.defaultMode` is {value}; expected one of {}", names())
                })?);
            }
            "disableBypassPermissionsMode" => match value.as_str() {
                Some("disable") => bypass_disabled = true,
                _ => {
                    return Err(format!(
                        "`permissions.disableBypassPermissionsMode` must be \"disable\", found {value}"
                    ));
                }
            },
            other => {
                return Err(format!(
                    "unknown key `permissions.{other}`; expected one of allow, ask, deny, additionalDirectories, \
                     defaultMode, disableBypassPermissionsMode, default, defaults, external_directory"
                ));
            }
        }
    }
    if bypass_disabled && mode == Some(PermissionMode::BypassPermissions) {
        return Err("`permissions.defaultMode` is \"bypassPermissions\", which \
                    `permissions.disableBypassPermissionsMode` turns off"
            .to_owned());
    }
    Ok(PermissionsSection { builder, mode })
}

/// `WebFetch(domain:example.com)`: Claude Code's way of naming a host in permission rules.
fn is_domain_rule(rule: &str) -> bool {
    rule.trim()
        .strip_prefix("WebFetch(")
        .and_then(|r| r.strip_suffix(')'))
        .is_some_and(|r| r.trim().starts_with("domain:"))
}

fn expand_home(dir: &str) -> Result<PathBuf, String> {
    match dir.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(rest))
            .ok_or_else(|| format!("`{dir}` uses `~` but HOME is not set")),
        None => Ok(PathBuf::from(dir)),
    }
}

fn string_list(value: &Value, key: &str) -> Result<Vec<String>, String> {
    let Value::Array(items) = value else {
        return Err(format!("`{key}` must be an array of strings"));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(text) => Ok(text.clone()),
            other => Err(format!("`{key}[{i}]` must be a string, found {other}")),
        })
        .collect()
}

fn action_value(value: &Value, key: &str) -> Result<Action, String> {
    value
        .as_str()
        .and_then(Action::parse)
        .ok_or_else(|| format!("`{key}` must be \"allow\", \"ask\" or \"deny\", found {value}"))
}

fn hooks_section(value: &Value, not: &mut impl FnMut(String, &str)) -> Result<HookCommands, String> {
    let Value::Object(events) = value else {
        return Err("`hooks` must be an object of event name to a list of matchers".to_owned());
    };
    let mut hooks = HookCommands::default();
    // The commands of events not run here: checked all the same, then dropped.
    let mut not_run = Vec::new();
    for (event, entries) in events {
        let list = match event.as_str() {
            "PreToolUse" => &mut hooks.pre_tool_use,
            "PostToolUse" => &mut hooks.post_tool_use,
            "SessionStart" => &mut hooks.session_start,
            "SessionEnd" => &mut hooks.session_end,
            "Notification" => &mut hooks.notification,
            other
                if let Some((_, reason)) = not_applied::HOOK_EVENTS.iter().find(|(key, _)| *key == other) =>
            {
                not(format!("hooks.{other}"), reason);
                &mut not_run
            }
            other => {
                return Err(format!(
                    "unknown hook event `hooks.{other}`; expected PreToolUse, PostToolUse, SessionStart, \
                     SessionEnd or Notification"
                ));
            }
        };
        let Value::Array(entries) = entries else {
            return Err(format!("`hooks.{event}` must be an array of {{\"matcher\", \"hooks\"}} objects"));
        };
        for (i, entry) in entries.iter().enumerate() {
            let at = format!("hooks.{event}[{i}]");
            let Value::Object(entry) = entry else {
                return Err(format!("`{at}` must be an object with `matcher` and `hooks`"));
            };
            let matcher = matcher(entry, &at)?;
            let Some(Value::Array(commands)) = entry.get("hooks") else {
                return Err(format!(
                    "`{at}.hooks` must be an array of {{\"type\": \"command\", \"command\"}} objects"
                ));
            };
            for (j, command) in commands.iter().enumerate() {
                list.push(hook_command(command, &format!("{at}.hooks[{j}]"), matcher.clone())?);
            }
        }
    }
    Ok(hooks)
}

fn matcher(entry: &Map<String, Value>, at: &str) -> Result<Matcher, String> {
    match entry.get("matcher") {
        None => Ok(Matcher::All),
        Some(Value::String(text)) if text.is_empty() || text == "*" => Ok(Matcher::All),
        Some(Value::String(text)) => Regex::new(&format!("^(?:{text})$"))
            .map(Matcher::Pattern)
            .map_err(|e| format!("`{at}.matcher` is not a valid regular expression: {e}")),
        Some(other) => Err(format!("`{at}.matcher` must be a string, found {other}")),
    }
}

fn hook_command(value: &Value, at: &str, matcher: Matcher) -> Result<HookCommand, String> {
    let Value::Object(hook) = value else {
        return Err(format!("`{at}` must be an object like {{\"type\": \"command\", \"command\": \"...\"}}"));
    };
    match hook.get("type") {
        Some(Value::String(kind)) if kind == "command" => {}
        Some(other) => return Err(format!("`{at}.type` is {other}; only \"command\" hooks are supported")),
        None => return Err(format!("`{at}.type` is missing; expected \"command\"")),
    }
    let command = match hook.get("command") {
        Some(Value::String(command)) if !command.trim().is_empty() => command.clone(),
        _ => return Err(format!("`{at}.command` must be a non-empty string")),
    };
    let timeout = match hook.get("timeout") {
        None => DEFAULT_HOOK_TIMEOUT,
        Some(value) => match value.as_f64() {
            Some(seconds) if seconds > 0.0 && seconds <= 86_400.0 => Duration::from_secs_f64(seconds),
            _ => return Err(format!("`{at}.timeout` must be a number of seconds above 0, found {value}")),
        },
    };
    Ok(HookCommand { matcher, command, timeout, environment: Arc::default() })
}

#[cfg(test)]
mod sandbox_tests {
    use super::*;

    fn parse(text: &str) -> Result<SandboxSettings, String> {
        let base = Rules::builder("/w");
        Settings::parse(text, "s.json", base).map(|s| s.sandbox().clone()).map_err(|e| e.to_string())
    }

    #[test]
    fn the_sandbox_object_in_claude_codes_shape() {
        let settings = parse(
            r#"{"sandbox": {"enabled": true, "excludedCommands": ["docker"], "allowUnsandboxedCommands": false,
                "autoAllowBashIfSandboxed": true, "networkCommands": ["cargo build"], "allowGitWrites": true,
                "filesystem": {"allowWrite": ["build", "/cache"], "denyWrite": ["secrets"]},
                "limits": {"memory": "2G"}}}"#,
        )
        .unwrap();
        assert_eq!(
            settings,
            SandboxSettings {
                enabled: Some(true),
                excluded_commands: vec!["docker".into()],
                network_commands: vec!["cargo build".into()],
                allow_unsandboxed_commands: Some(false),
                allow_write: vec![PathBuf::from("/w/build"), PathBuf::from("/cache")],
                deny_write: vec![PathBuf::from("/w/secrets")],
                allow_git_writes: Some(true),
                auto_allow_bash_if_sandboxed: Some(true),
                limits: Some(tool_sandbox::Limits {
                    processes: Some(tool_sandbox::Limits::DEFAULT_PROCESSES),
                    memory: Some(2 << 30)
                }),
            }
        );
        assert_eq!(parse("{}").unwrap(), SandboxSettings::default());
    }

    #[test]
    fn what_cannot_be_enforced_is_refused() {
        let err = parse(r#"{"sandbox": {"filesystem": {"denyRead": ["~/.ssh"]}}}"#).unwrap_err();
        assert!(err.contains("`sandbox.filesystem.denyRead` is not supported"), "{err}");
        let err = parse(r#"{"sandbox": {"enabld": true}}"#).unwrap_err();
        assert!(err.contains("unknown key `sandbox.enabld`"), "{err}");
        let err = parse(r#"{"sandbox": {"enabled": "yes"}}"#).unwrap_err();
        assert!(err.contains("`sandbox.enabled` must be true or false"), "{err}");
    }

    #[test]
    fn limits_take_numbers_sizes_and_false() {
        let limits = |text: &str| parse(&format!(r#"{{"sandbox": {{"limits": {text}}}}}"#)).map(|s| s.limits);
        let off = limits(r#"{"processes": false, "memory": 1048576}"#).unwrap().unwrap();
        assert_eq!((off.processes, off.memory), (None, Some(1 << 20)));
        let sized = limits(r#"{"processes": 64, "memory": " 512m "}"#).unwrap().unwrap();
        assert_eq!((sized.processes, sized.memory), (Some(64), Some(512 << 20)));
        for (bad, message) in [
            (r#"{"processes": 0}"#, "`sandbox.limits.processes` must be a positive whole number or false"),
            (r#"{"processes": "64"}"#, "`sandbox.limits.processes` must be a positive whole number or false"),
            (r#"{"processes": -1}"#, "must be a positive whole number"),
            (r#"{"memory": true}"#, "`sandbox.limits.memory` must be a positive whole number, or a size"),
            (r#"{"memory": "4T"}"#, "`sandbox.limits.memory` must be"),
            (r#"{"memory": "99999999999G"}"#, "`sandbox.limits.memory` must be"),
            (r#"{"memory": "G"}"#, "`sandbox.limits.memory` must be"),
            (r#"{"cpu": 1}"#, "unknown key `sandbox.limits.cpu`; expected processes or memory"),
            (r#"[64]"#, "`sandbox.limits` must be an object"),
        ] {
            let err = limits(bad).unwrap_err();
            assert!(err.contains(message), "{bad}: {err}");
        }
    }
}
