//! Loading rules and hooks from a settings file in Claude Code's shape
//! (`{"permissions": {"allow": [...], "ask": [...], "deny": [...]}, "hooks": {...}}`).

// Without `command-hooks`, hook entries are still checked when a file is loaded, but never run.
#![cfg_attr(not(feature = "command-hooks"), allow(dead_code))]

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;
use tool_sandbox::environment::EnvFilter;
use tool_settings::{self as model, NotApplied, SettingsFile};

use crate::catalog::{Resolved, Subject};
use crate::mode::PermissionMode;
use crate::rules::{Action, RuleError, Rules, RulesBuilder};

/// How long a hook may run when its entry sets no `timeout` (Claude Code's default for a command
/// hook: ten minutes).
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(600);

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

impl SettingsError {
    fn new(origin: &str, error: tool_settings::SettingsError) -> SettingsError {
        SettingsError { origin: origin.to_owned(), problem: error.to_string() }
    }
}

/// Which tools a hook entry applies to, as Claude Code reads a `matcher`: every tool (`""`,
/// `"*"` or no matcher); a list of names (`Write`, `Edit|Write`, also `Edit, Write`), each
/// matched whole; anything else a regular expression found anywhere in the name (`^Wri`,
/// `mcp__github__.*`). Matched against our name and the catalog's other name.
#[derive(Debug, Clone)]
pub(crate) enum Matcher {
    All,
    Names(Vec<String>),
    Pattern(Regex),
}

impl Matcher {
    pub(crate) fn matches(&self, tool: &str, other_name: Option<&str>) -> bool {
        let one = |name: &str| match self {
            Matcher::All => true,
            Matcher::Names(names) => names.iter().any(|n| n == name),
            Matcher::Pattern(regex) => regex.is_match(name),
        };
        one(tool) || other_name.is_some_and(one)
    }
}

/// One external hook command.
#[derive(Debug, Clone)]
pub(crate) struct HookCommand {
    pub(crate) matcher: Matcher,
    /// Its `if`: a rule set holding the one rule, as a deny rule, that a call must match.
    pub(crate) condition: Option<Arc<Rules>>,
    pub(crate) command: String,
    pub(crate) timeout: Duration,
    /// Which of our environment variables it inherits (the file's `environment`).
    pub(crate) environment: Arc<EnvFilter>,
}

impl HookCommand {
    /// Whether its `if` (none: every call) matches a call of `tool` with `input`: the command a
    /// `Bash` rule is about (any part of a compound one), the path a file rule is about (taken
    /// from the root), the tool for a rule without a pattern.
    pub(crate) fn fires_for(&self, tool: &str, input: &Value) -> bool {
        let Some(rules) = &self.condition else { return true };
        let argument = |name: &str| input.get(name).and_then(Value::as_str);
        let flag = |name: &str| input.get(name).and_then(Value::as_bool).unwrap_or(false);
        let verdict = match (rules.catalog().subject_of(tool), argument("command"), argument("path")) {
            (Some(Subject::Command), Some(command), _) => rules.decide_command(tool, command),
            (Some(Subject::Input), Some(typed), _) => {
                let readers: Vec<String> = input
                    .get("session_readers")
                    .and_then(Value::as_array)
                    .map(|readers| readers.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                    .unwrap_or_default();
                let typing = crate::input::Typing {
                    command: argument("session_command").unwrap_or("sh"),
                    typed,
                    readers: &readers,
                    keys_changed: flag("session_keys_changed"),
                    terminal: flag("session_terminal"),
                    busy: flag("session_busy"),
                };
                crate::input::decide_input(rules, tool, &typing)
            }
            (Some(Subject::Path), _, Some(path)) => {
                // As the tools' own rules match: the path reached, and the path as named.
                let named = tool_sandbox::lexically_normal(&rules.root().join(path));
                let reached = crate::command_paths::as_reached(rules.root(), path);
                let outside = !reached.starts_with(rules.root());
                rules.decide_path(tool, &reached, Some(&named), outside)
            }
            _ => rules.decide_call(tool),
        };
        verdict.action == Action::Deny
    }
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
    /// `filesystem.allowWrite`: more writable roots, with the additional directories that exist
    /// (`permissions.additionalDirectories`), as in Claude Code.
    pub allow_write: Vec<PathBuf>,
    /// `filesystem.denyWrite`: more protected paths, with what the deny rules on `Edit` name
    /// ([`Rules::denied_paths`]), as in Claude Code.
    pub deny_write: Vec<PathBuf>,
    /// `filesystem.denyRead`: paths commands may not read (a directory with all it holds; the
    /// last component may be a pattern of names), with what the deny rules on `Read` name
    /// ([`Rules::denied_paths`]), as in Claude Code (see
    /// [`tool_sandbox::SandboxPolicy::unreadable`]).
    pub deny_read: Vec<PathBuf>,
    /// `filesystem.allowRead`: paths readable again within a `denyRead` directory (see
    /// [`tool_sandbox::SandboxPolicy::readable`]).
    pub allow_read: Vec<PathBuf>,
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
    /// Reads the file at `path` and adds its rules to `base` (which sets the root, the catalog
    /// and the defaults the file does not set).
    pub fn load(path: impl AsRef<Path>, base: RulesBuilder) -> Result<Settings, SettingsError> {
        let origin = path.as_ref().display().to_string();
        let file = SettingsFile::load(path).map_err(|e| SettingsError::new(&origin, e))?;
        Self::from_file(&file, &origin, base)
    }

    /// Parses settings JSON; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str, base: RulesBuilder) -> Result<Settings, SettingsError> {
        let file = SettingsFile::parse(text).map_err(|e| SettingsError::new(origin, e))?;
        Self::from_file(&file, origin, base)
    }

    /// Settings from parsed JSON (several files merged with
    /// [`hierarchy::merge`](tool_settings::hierarchy::merge), say); `origin` names it in errors.
    pub fn from_value(value: Value, origin: &str, base: RulesBuilder) -> Result<Settings, SettingsError> {
        let file = SettingsFile::from_value(value).map_err(|e| SettingsError::new(origin, e))?;
        Self::from_file(&file, origin, base)
    }

    /// The rules, hooks, mode, environment and sandbox switches of a settings file read into
    /// the typed model; `origin` names it in errors and in the rules' origins.
    pub fn from_file(
        file: &SettingsFile,
        origin: &str,
        base: RulesBuilder,
    ) -> Result<Settings, SettingsError> {
        let error = |problem: String| SettingsError { origin: origin.to_owned(), problem };
        let environment = environment(file);
        let root = base.root_dir().to_path_buf();
        let mut builder = base;
        let mut mode = None;
        let mut not_applied = file.not_applied(origin);
        if let Some(permissions) = &file.permissions {
            let section = permissions_section(permissions, origin, &root, builder).map_err(error)?;
            builder = section.builder;
            mode = section.mode.map(|m| (m, Arc::from(format!("permissions.defaultMode in {origin}"))));
            not_applied.extend(section.not_applied.into_iter().map(|(key, reason)| NotApplied {
                origin: origin.to_owned(),
                key,
                reason,
            }));
        }
        let mut hooks = match &file.hooks {
            Some(hooks) if file.disable_all_hooks != Some(true) => {
                hooks_section(hooks, &builder, origin).map_err(error)?
            }
            _ => HookCommands::default(),
        };
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
        let mut sandbox = match &file.sandbox {
            Some(sandbox) => sandbox_section(sandbox, &root).map_err(error)?,
            None => SandboxSettings::default(),
        };
        let rules = builder.build().map_err(|e: RuleError| error(e.to_string()))?;
        // What the deny rules keep the file tools from reading or changing, the sandbox keeps
        // commands from too, where a rule names the path.
        sandbox.deny_read.extend(rules.denied_paths("Read"));
        sandbox.deny_write.extend(rules.denied_paths("Edit"));
        // As in Claude Code, sandboxed commands may write the additional directories too.
        sandbox.allow_write.extend(rules.additional_directories().iter().filter(|dir| dir.is_dir()).cloned());
        Ok(Settings { rules, hooks, sandbox, environment, mode, origin: origin.to_owned(), not_applied })
    }

    /// The keys of the file that have no effect, each with the reason (Claude Code's `model`,
    /// hook events that are not run here, keys nobody knows): see
    /// [`SettingsFile::not_applied`]. What the rules leave out is [`Rules::ignored`].
    pub fn not_applied(&self) -> &[NotApplied] {
        &self.not_applied
    }

    /// `permissions.defaultMode`, when the file names one.
    pub fn mode(&self) -> Option<PermissionMode> {
        self.mode.as_ref().map(|(mode, _)| *mode)
    }

    /// The mode when the file names none (a program that reads Claude Code's files gives
    /// [`PermissionMode::Default`], Claude Code's own default).
    pub fn or_mode(self, mode: PermissionMode) -> Self {
        let origin = format!("as {} names no permissions.defaultMode", self.origin);
        self.or_mode_because(mode, origin)
    }

    /// [`Settings::or_mode`], with the words that say where the mode comes from in the
    /// messages of what it decides (`with no settings file, ...`).
    pub fn or_mode_because(mut self, mode: PermissionMode, origin: impl Into<Arc<str>>) -> Self {
        if self.mode.is_none() {
            self.mode = Some((mode, origin.into()));
        }
        self
    }

    /// Which of our environment variables hook commands, and the commands and stdio servers of
    /// a program that reads this file, inherit: see [`environment`].
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

/// Which of our environment variables commands, hook commands and stdio servers inherit, by a
/// settings file: its `environment` object (`inherit`, `inheritAll`, `exclude`; see
/// [`tool_sandbox::environment`]) and its `env` (variables set); [`EnvFilter::base`] for a file
/// with neither.
pub fn environment(file: &SettingsFile) -> EnvFilter {
    let section = file.environment.as_ref();
    let mut filter = match section.and_then(|s| s.inherit_all) {
        Some(true) => EnvFilter::inherit_all(),
        _ => EnvFilter::base(),
    };
    for name in section.and_then(|s| s.inherit.as_deref()).unwrap_or_default() {
        filter = filter.with(name.as_str());
    }
    for pattern in section.and_then(|s| s.exclude.as_deref()).unwrap_or_default() {
        filter = filter.exclude(pattern.as_str());
    }
    for (name, value) in file.env.iter().flatten() {
        filter = filter.set(name.as_str(), value.as_str());
    }
    filter
}

fn sandbox_section(section: &model::Sandbox, root: &Path) -> Result<SandboxSettings, String> {
    let paths = |list: &Option<Vec<String>>| -> Result<Vec<PathBuf>, String> {
        list.iter().flatten().map(|p| Ok(root.join(expand_home(p)?))).collect()
    };
    // A read path names a file or directory, `dir/**` all `dir` holds; a `denyRead` path may
    // end in a pattern of names (`./.env.*`), the entries of one directory it matches when a
    // command starts. A mount hides or shows what a path names: a pattern across directories
    // (`~/**/*.kdbx`) names nothing a mount can cover.
    let read_paths = |key: &str, list: &Option<Vec<String>>| -> Result<Vec<PathBuf>, String> {
        let mut out = Vec::new();
        for path in list.iter().flatten() {
            let named = path.strip_suffix("/**").unwrap_or(path);
            let (dir, name) = named.rsplit_once('/').unwrap_or(("", named));
            let pattern = |text: &str| text.contains(['*', '?', '[']);
            if key != "denyRead" && pattern(named) {
                return Err(format!(
                    "`sandbox.filesystem.{key}`: `{path}` is a pattern; name a file or a directory (`dir` or \
                     `dir/**` for all it holds)"
                ));
            }
            if pattern(dir) || name.contains("**") {
                return Err(format!(
                    "`sandbox.filesystem.{key}`: `{path}` is a pattern across directories; name a file, a \
                     directory (`dir` or `dir/**` for all it holds), or a pattern of names in one directory \
                     (`./.env.*`)"
                ));
            }
            out.push(root.join(expand_home(named)?));
        }
        Ok(out)
    };
    let filesystem = section.filesystem.clone().unwrap_or_default();
    let limits = section.limits.as_ref().map(|limits| {
        let mut out = tool_sandbox::Limits::default();
        if let Some(processes) = limits.processes {
            out.processes = processes.get();
        }
        if let Some(memory) = &limits.memory {
            out.memory = memory.bytes();
        }
        out
    });
    Ok(SandboxSettings {
        enabled: section.enabled,
        excluded_commands: section.excluded_commands.clone().unwrap_or_default(),
        network_commands: section.network_commands.clone().unwrap_or_default(),
        allow_unsandboxed_commands: section.allow_unsandboxed_commands,
        allow_write: paths(&filesystem.allow_write)?,
        deny_write: paths(&filesystem.deny_write)?,
        deny_read: read_paths("denyRead", &filesystem.deny_read)?,
        allow_read: read_paths("allowRead", &filesystem.allow_read)?,
        allow_git_writes: section.allow_git_writes,
        auto_allow_bash_if_sandboxed: section.auto_allow_bash_if_sandboxed,
        limits,
    })
}

/// What the `permissions` object says.
struct PermissionsSection {
    builder: RulesBuilder,
    mode: Option<PermissionMode>,
    /// Keys with no effect here: (key, why).
    not_applied: Vec<(String, String)>,
}

fn permissions_section(
    section: &model::Permissions,
    origin: &str,
    root: &Path,
    mut builder: RulesBuilder,
) -> Result<PermissionsSection, String> {
    let mut not_applied = Vec::new();
    for (key, action, rules) in [
        ("allow", Action::Allow, &section.allow),
        ("ask", Action::Ask, &section.ask),
        ("deny", Action::Deny, &section.deny),
    ] {
        let key_origin: Arc<str> = format!("{origin} (permissions.{key})").into();
        // `WebFetch(domain:HOST)` names a host for the network proxy's rules, not a tool call:
        // it is read there and skipped here.
        for rule in rules.iter().flatten().filter(|rule| !is_domain_rule(rule)) {
            builder = builder.rule_from(action, rule.clone(), key_origin.clone());
        }
    }
    for dir in section.additional_directories.iter().flatten() {
        // Relative to the project root, as Claude Code resolves it.
        builder = builder.additional_directory(tool_sandbox::lexically_normal(&root.join(expand_home(dir)?)));
    }
    if let Some(action) = section.default {
        builder = builder.default(action.into());
    }
    if let Some(action) = section.external_directory {
        builder = builder.external_directory(action.into());
    }
    for (name, action) in section.defaults.iter().flatten() {
        // Named as rules name tools (Claude Code's names too), and checked as they are.
        match builder.catalog_ref().resolve(name) {
            Resolved::Tools(tools) => {
                for tool in tools {
                    builder = builder.tool_default(tool, (*action).into());
                }
            }
            Resolved::Server(_) => {
                return Err(format!(
                    "`permissions.defaults.{name}`: a default is set per tool; name one (`{name}__TOOL`), or \
                     write a rule (`{name}`) in `allow`, `ask` or `deny`"
                ));
            }
            Resolved::Unknown(problem) => return Err(format!("`permissions.defaults.{name}`: {problem}")),
            Resolved::Absent(reason) => not_applied.push((format!("permissions.defaults.{name}"), reason)),
        }
    }
    let mut mode = section.default_mode.map(PermissionMode::from);
    // As Claude Code does, a mode that is turned off is not entered: the default mode rules (one
    // file of the hierarchy, managed settings say, may turn off what another one asks for).
    if section.disable_bypass_permissions_mode.is_some() && mode == Some(PermissionMode::BypassPermissions) {
        mode = Some(PermissionMode::Default);
        not_applied.push((
            "permissions.defaultMode".to_owned(),
            "it is \"bypassPermissions\", which `permissions.disableBypassPermissionsMode` turns off: the mode is \
             `default`"
                .to_owned(),
        ));
    }
    Ok(PermissionsSection { builder, mode, not_applied })
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

/// The hook commands of the events run here; the others are named as not applied by the model.
/// An `if` is read as a rule of `rules`' tools.
fn hooks_section(hooks: &model::Hooks, rules: &RulesBuilder, origin: &str) -> Result<HookCommands, String> {
    let mut out = HookCommands::default();
    for (event, entries) in hooks.events() {
        let list = match event {
            "PreToolUse" => &mut out.pre_tool_use,
            "PostToolUse" => &mut out.post_tool_use,
            "SessionStart" => &mut out.session_start,
            "SessionEnd" => &mut out.session_end,
            "Notification" => &mut out.notification,
            _ => continue,
        };
        for (i, entry) in entries.iter().enumerate() {
            let matcher = matcher(entry.matcher.as_deref(), &format!("hooks.{event}[{i}]"))?;
            for (j, hook) in entry.hooks.iter().enumerate() {
                let timeout = hook.timeout.map_or(DEFAULT_HOOK_TIMEOUT, Duration::from_secs_f64);
                let condition = match &hook.condition {
                    None => None,
                    Some(rule) => {
                        let at = format!("{origin} (hooks.{event}[{i}].hooks[{j}].if)");
                        let built = Rules::builder(rules.root_dir())
                            .catalog(rules.catalog_ref().clone())
                            .rule_from(Action::Deny, rule.clone(), at)
                            .build()
                            .map_err(|e| e.to_string())?;
                        Some(Arc::new(built))
                    }
                };
                list.push(HookCommand {
                    matcher: matcher.clone(),
                    condition,
                    command: hook.command.clone(),
                    timeout,
                    environment: Arc::default(),
                });
            }
        }
    }
    Ok(out)
}

fn matcher(text: Option<&str>, at: &str) -> Result<Matcher, String> {
    match text {
        None | Some("" | "*") => Ok(Matcher::All),
        Some(text)
            if text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '|' | ',' | ' ')) =>
        {
            let names = text.split(['|', ',']).map(str::trim).filter(|n| !n.is_empty());
            Ok(Matcher::Names(names.map(str::to_owned).collect()))
        }
        Some(text) => Regex::new(text)
            .map(Matcher::Pattern)
            .map_err(|e| format!("`{at}.matcher` is not a valid regular expression: {e}")),
    }
}

#[cfg(test)]
mod sandbox_tests {
    use super::*;

    #[test]
    fn a_matcher_is_a_list_of_names_or_a_pattern_found_anywhere_as_in_claude_code() {
        let matches =
            |matcher_text: &str, tool: &str| matcher(Some(matcher_text), "m").unwrap().matches(tool, None);
        for (text, tool) in [
            ("Write", "Write"),
            ("Edit|Write", "Write"),
            ("Edit, Write", "Write"),
            ("Edit,Write", "Write"),
            ("Write | Edit", "Write"),
            ("^Wri", "Write"),
            ("Output$", "BashOutput"),
            ("mcp__github__.*", "mcp__github__create_issue"),
            ("*", "Anything"),
        ] {
            assert!(matches(text, tool), "{text:?} should match {tool}");
        }
        // Names are matched whole, and case matters.
        for (text, tool) in
            [("Write", "TodoWrite"), ("Bash", "BashOutput"), ("write", "Write"), ("Edit|Write", "Read")]
        {
            assert!(!matches(text, tool), "{text:?} should not match {tool}");
        }
        assert!(
            matcher(Some("(unclosed"), "hooks.PreToolUse[0]")
                .unwrap_err()
                .contains("not a valid regular expression")
        );
    }

    fn parse(text: &str) -> Result<SandboxSettings, String> {
        let base = Rules::builder("/w");
        Settings::parse(text, "s.json", base).map(|s| s.sandbox().clone()).map_err(|e| e.to_string())
    }

    #[test]
    fn read_paths_and_the_paths_that_deny_rules_name_reach_the_sandbox() {
        use crate::catalog::{Subject, ToolCatalog};
        let home = PathBuf::from(std::env::var_os("HOME").unwrap());
        let catalog = ToolCatalog::new()
            .subject("read", Subject::Path)
            .subject("grep", Subject::Path)
            .subject("edit", Subject::Path)
            .subject("bash", Subject::Command)
            .rule_name("Read", ["read", "grep"])
            .rule_name("Edit", ["edit"])
            .rule_name("Bash", ["bash"]);
        let parse = |text: &str| {
            Settings::parse(text, "s.json", Rules::builder("/w").catalog(catalog.clone()))
                .map(|s| s.sandbox().clone())
                .map_err(|e| e.to_string())
        };
        let settings = parse(
            r#"{"permissions": {"deny": ["Read(./.env)", "Read(~/.aws/**)", "Read(//etc/app/*)", "Read(.npmrc)",
                "Read(./*.pem)", "Read(./a/**/b)", "Edit(./ci/**)", "Bash(curl *)"],
                "ask": ["Read(./notes)"], "allow": ["Read(./public)"]},
                "sandbox": {"filesystem": {"denyRead": ["~/.ssh", "/secrets/**"],
                "allowRead": ["~/.ssh/known_hosts"]}}}"#,
        )
        .unwrap();
        let mut from_rules = vec![
            PathBuf::from("/w/.env"),
            home.join(".aws"),
            PathBuf::from("/etc/app"),
            PathBuf::from("/w/*.pem"),
            // A bare name, as in Claude Code: the root's (the file tools match it at any depth).
            PathBuf::from("/w/.npmrc"),
        ];
        from_rules.sort();
        let mut deny_read = vec![home.join(".ssh"), PathBuf::from("/secrets")];
        deny_read.extend(from_rules);
        assert_eq!(settings.deny_read, deny_read);
        assert_eq!(settings.allow_read, vec![home.join(".ssh/known_hosts")]);
        assert_eq!(settings.deny_write, vec![PathBuf::from("/w/ci")]);
        for (key, pattern, says) in [
            ("allowRead", "~/**.kdbx", "is a pattern;"),
            ("allowRead", "./*.pem", "is a pattern;"),
            ("allowRead", "./[ab]", "is a pattern;"),
            ("denyRead", "~/**.kdbx", "is a pattern across directories"),
            ("denyRead", "./*/key", "is a pattern across directories"),
            ("denyRead", "~/**/id_*", "is a pattern across directories"),
        ] {
            let err = parse(&format!(r#"{{"sandbox": {{"filesystem": {{"{key}": ["{pattern}"]}}}}}}"#))
                .unwrap_err();
            assert!(err.contains(&format!("`{pattern}` {says}")), "{err}");
        }
        let settings =
            parse(r#"{"sandbox": {"filesystem": {"denyRead": ["./.env.*", "~/.ssh/id_*"]}}}"#).unwrap();
        assert_eq!(settings.deny_read, vec![PathBuf::from("/w/.env.*"), home.join(".ssh/id_*")]);
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
                deny_read: Vec::new(),
                allow_read: Vec::new(),
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
        let err = parse(r#"{"sandbox": {"filesystem": {"denyRead": ["~/**.kdbx"]}}}"#).unwrap_err();
        assert!(
            err.starts_with(
                "s.json: `sandbox.filesystem.denyRead`: `~/**.kdbx` is a pattern across directories"
            ),
            "{err}"
        );
        let err = parse(r#"{"sandbox": {"enabld": true}}"#).unwrap_err();
        assert!(err.starts_with("s.json: `sandbox.enabld`: unknown field `enabld`"), "{err}");
        let err = parse(r#"{"sandbox": {"enabled": "yes"}}"#).unwrap_err();
        assert!(
            err.starts_with("s.json: `sandbox.enabled`: invalid type: string \"yes\", expected a boolean"),
            "{err}"
        );
    }

    #[test]
    fn limits_take_numbers_sizes_and_false() {
        let limits = |text: &str| parse(&format!(r#"{{"sandbox": {{"limits": {text}}}}}"#)).map(|s| s.limits);
        let off = limits(r#"{"processes": false, "memory": 1048576}"#).unwrap().unwrap();
        assert_eq!((off.processes, off.memory), (None, Some(1 << 20)));
        let sized = limits(r#"{"processes": 64, "memory": " 512m "}"#).unwrap().unwrap();
        assert_eq!((sized.processes, sized.memory), (Some(64), Some(512 << 20)));
        for (bad, message) in [
            (r#"{"processes": 0}"#, "`sandbox.limits.processes`: must be a positive whole number or false"),
            (
                r#"{"processes": "64"}"#,
                "`sandbox.limits.processes`: must be a positive whole number or false",
            ),
            (r#"{"processes": -1}"#, "must be a positive whole number"),
            (r#"{"memory": true}"#, "`sandbox.limits.memory`: must be a positive whole number, or a size"),
            (r#"{"memory": "4T"}"#, "`sandbox.limits.memory`: must be"),
            (r#"{"memory": "99999999999G"}"#, "`sandbox.limits.memory`: must be"),
            (r#"{"memory": "G"}"#, "`sandbox.limits.memory`: must be"),
            (r#"{"cpu": 1}"#, "`sandbox.limits.cpu`: unknown field `cpu`, expected `processes` or `memory`"),
            (r#"[64]"#, "`sandbox.limits`: invalid type: sequence, expected an object"),
        ] {
            let err = limits(bad).unwrap_err();
            assert!(err.contains(message), "{bad}: {err}");
        }
    }
}
