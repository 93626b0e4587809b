//! The settings the binary reads: `--settings`, codex's `config.toml`, or Claude Code's files
//! found for the workspace, read into the typed model once; the project's `.mcp.json` servers
//! the settings approve; and the policy, sandbox switches, environment, network rules and checks
//! after edits that one settings file gives.

use std::fmt;

use serde_json::Value;
use tool_egress::settings::NetworkSettings;
use tool_runtime::environment::EnvFilter;
use tool_runtime::mcp_client::{McpConfig, McpMount};
use tool_runtime::permissions::{
    Access, Action as PermissionAction, EXTERNAL_DIRECTORY, PermissionMode, Policy, Rules, SandboxSettings,
    Settings,
};
use tool_runtime::settings::{self as tool_settings, SettingsError, SettingsFile, hierarchy};
use tools_std::tool_egress;

use crate::args::{McpArgs, WorkspaceArgs};
use crate::{Failure, codex, workspace_root};

/// The settings file, read into the typed model once: the servers of `--mcp-config` are mounted
/// with its `environment`, and its rules are checked against their tools.
/// The origin of [`Loaded::none`].
const NO_FILE: &str = "no settings file";

pub(crate) struct Loaded {
    /// How messages start: `--settings` for the file the flag names, `settings` for Claude Code's
    /// files found in their places.
    pub(crate) label: &'static str,
    /// The file, or the files merged (`A + B`), for messages.
    pub(crate) origin: String,
    /// The files, which commands may not change.
    pub(crate) paths: Vec<std::path::PathBuf>,
    /// The file, or the files merged as Claude Code merges them.
    pub(crate) file: SettingsFile,
    /// The sandbox mode a codex configuration names (`sandbox_mode`).
    pub(crate) sandbox_mode: Option<tool_sandbox::SandboxMode>,
    /// The servers a codex configuration names (`[mcp_servers]`).
    pub(crate) servers: Option<McpConfig>,
    /// What the managed settings hold that the command line may not set aside.
    pub(crate) managed: Managed,
}

impl Loaded {
    /// What applies where no settings file was found: nothing but Claude Code's protected paths
    /// (a file tool's change to `.git`, `.claude`, `.vscode`, ... is asked about), which no
    /// mode lets through unasked; every other call runs, as in `bypassPermissions`.
    pub(crate) fn none() -> Loaded {
        Loaded {
            label: "settings",
            origin: NO_FILE.to_owned(),
            paths: Vec::new(),
            file: SettingsFile::default(),
            sandbox_mode: None,
            servers: None,
            managed: Managed::default(),
        }
    }

    /// Claude Code's files for the workspace merged as Claude Code merges them (user, project,
    /// local, the file `--settings` names, managed), named on standard error; with
    /// `--no-settings` the managed ones alone, which nothing on the command line sets aside, as
    /// in Claude Code; codex's `config.toml` instead with `--codex-config` or `--codex`, the
    /// managed files still above it; `None` when there is none.
    pub(crate) fn read(args: &WorkspaceArgs) -> Result<Option<Loaded>, Failure> {
        Loaded::read_at(args, std::path::Path::new(hierarchy::MANAGED_DIR))
    }

    /// As [`Loaded::read`], with the managed settings in `managed_dir`.
    fn read_at(args: &WorkspaceArgs, managed_dir: &std::path::Path) -> Result<Option<Loaded>, Failure> {
        let failure =
            |label: &str, origin: &str, e: SettingsError| Failure::usage(format!("{label} {origin}: {e}"));
        let codex_home = || {
            let home = std::env::var_os("CODEX_HOME").map(std::path::PathBuf::from).or_else(|| {
                std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(".codex"))
            });
            home.map(|dir| dir.join("config.toml")).ok_or_else(|| {
                Failure::usage(
                    "--codex: neither CODEX_HOME nor HOME is set, so codex's config.toml cannot be found; set \
                     CODEX_HOME, or name the file with --codex-config FILE",
                )
            })
        };
        let codex_path = match (&args.codex_config, args.codex) {
            (Some(path), _) => Some(path.clone()),
            (None, true) => Some(codex_home()?),
            (None, false) => None,
        };
        let root = workspace_root(args.root.as_deref())?;
        let codex = match codex_path {
            Some(path) => Some((read_codex(&path, &root)?, path)),
            None => None,
        };
        let user_dir = hierarchy::user_dir();
        let mut files = hierarchy::claude_code_files_at(user_dir.as_deref(), &root, managed_dir);
        // Managed settings stay above a codex configuration too, as above every other file.
        if args.no_settings || codex.is_some() {
            files.retain(|(scope, _)| *scope == hierarchy::Scope::Managed);
        }
        if let Some(path) = &args.settings {
            let at = files
                .iter()
                .position(|(scope, _)| *scope == hierarchy::Scope::Managed)
                .unwrap_or(files.len());
            files.insert(at, (hierarchy::Scope::CommandLine, path.clone()));
        }
        let mut found = Vec::new();
        for (scope, path) in files {
            // Anything at the name is read, so that one that is not a regular file (a FIFO, a link
            // to a device) is an error rather than rules silently left out; the file `--settings`
            // names must be there.
            if scope == hierarchy::Scope::CommandLine || std::fs::symlink_metadata(&path).is_ok() {
                let label = if scope == hierarchy::Scope::CommandLine { "--settings" } else { "settings" };
                let mut value = tool_settings::read_json(&path)
                    .map_err(|e| failure(label, &path.display().to_string(), e))?;
                // As in Claude Code, a `/path` rule and a relative sandbox path of the user's file
                // are taken from Claude Code's configuration directory (`~/.claude`, or
                // `CLAUDE_CONFIG_DIR`), where that file is; those of the other files from the
                // project's root.
                let own = match scope {
                    hierarchy::Scope::User => path.parent(),
                    _ => None,
                };
                if let Some(dir) = own.and_then(|dir| std::fs::canonicalize(dir).ok()) {
                    hierarchy::anchor_rules(&mut value, &dir);
                    hierarchy::anchor_sandbox_paths(&mut value, &dir);
                }
                found.push((scope, value, path));
            }
        }
        let managed = Managed::of(&found);
        if let Some((codex, path)) = &codex {
            found.insert(0, (hierarchy::Scope::CommandLine, codex.settings.to_value(), path.clone()));
        }
        if found.is_empty() {
            return Ok(None);
        }
        let shown: Vec<String> =
            found.iter().map(|(scope, _, path)| format!("{} ({})", path.display(), scope.as_str())).collect();
        // The file named on the command line alone goes without saying.
        if found.iter().any(|(scope, _, _)| *scope != hierarchy::Scope::CommandLine) {
            crate::terminal::say(&format!("tools: settings: loaded {}", shown.join(", ")));
        }
        let origin =
            found.iter().map(|(_, _, path)| path.display().to_string()).collect::<Vec<_>>().join(" + ");
        let paths = found.iter().map(|(_, _, path)| path.clone()).collect();
        let label = match (&codex, &args.settings) {
            (Some(_), _) => "--codex-config",
            (None, Some(_)) => "--settings",
            (None, None) => "settings",
        };
        let value =
            hierarchy::merge_scoped(found.into_iter().map(|(scope, value, _)| (scope, value)).collect());
        let file = SettingsFile::from_value(value).map_err(|e| failure(label, &origin, e))?;
        let (sandbox_mode, servers) = codex.map_or((None, None), |(codex, _)| (codex.sandbox, codex.servers));
        Ok(Some(Loaded { label, origin, paths, file, sandbox_mode, servers, managed }))
    }

    /// A usage failure about the settings.
    pub(crate) fn failure(&self, problem: impl fmt::Display) -> Failure {
        Failure::usage(format!("{} {}: {problem}", self.label, self.origin))
    }
}

/// What managed settings hold that nothing on the command line sets aside, as in Claude Code
/// (managed settings are above its command-line arguments): each the managed file that says it.
#[derive(Debug, Default)]
pub(crate) struct Managed {
    /// `sandbox.enabled: true`: `--sandbox off` (or codex's `danger-full-access`) is refused.
    pub(crate) sandbox: Option<std::path::PathBuf>,
    /// `sandbox.network.allowManagedDomainsOnly: true`: `--allow-host` is refused.
    pub(crate) domains: Option<std::path::PathBuf>,
}

impl Managed {
    /// What the managed files among `found` hold: the last of them to set each key decides, as
    /// they merge, and is named when it says `true`.
    fn of(found: &[(hierarchy::Scope, Value, std::path::PathBuf)]) -> Managed {
        let says = |pointer: &str| {
            let last = found.iter().rfind(|(scope, value, _)| {
                *scope == hierarchy::Scope::Managed && value.pointer(pointer).is_some()
            })?;
            (last.1.pointer(pointer) == Some(&Value::Bool(true))).then(|| last.2.clone())
        };
        Managed {
            sandbox: says("/sandbox/enabled"),
            domains: says("/sandbox/network/allowManagedDomainsOnly"),
        }
    }

    /// Refuses what `args` (or codex's `sandbox_mode`, which gave `mode` when no `--sandbox`
    /// did) would set aside of these settings: the sandbox turned off, hosts allowed.
    pub(crate) fn refuse_overrides(
        &self,
        args: &WorkspaceArgs,
        mode: tool_sandbox::SandboxMode,
    ) -> Result<(), Failure> {
        if let (Some(path), Some(host)) = (&self.domains, args.allow_hosts.first()) {
            return Err(Failure::usage(format!(
                "--allow-host {host}: the managed settings {} allow only their own hosts \
                 (`allowManagedDomainsOnly`), which nothing on the command line sets aside",
                path.display()
            )));
        }
        if let Some(path) = &self.sandbox
            && mode == tool_sandbox::SandboxMode::Off
        {
            let by = match args.sandbox {
                Some(_) => "--sandbox off",
                None => "codex's `sandbox_mode = \"danger-full-access\"`",
            };
            return Err(Failure::usage(format!(
                "{by}: the managed settings {} turn the sandbox on (`sandbox.enabled`), which nothing on the \
                 command line or in another file sets aside",
                path.display()
            )));
        }
        Ok(())
    }
}

/// codex's configuration at `path` with the rules of its rules files (`rules/*.rules` beside it),
/// its keys not applied said on standard error, and a project's configuration, which is not
/// read, named.
fn read_codex(path: &std::path::Path, root: &std::path::Path) -> Result<codex::Codex, Failure> {
    let shown = path.display();
    let codex =
        codex::load(path, root).map_err(|e| Failure::usage(format!("--codex-config {shown}: {e}")))?;
    for (key, reason) in &codex.not_applied {
        crate::terminal::say(&format!("tools: --codex-config {shown}: `{key}` is not applied: {reason}"));
    }
    // The rules files beside the configuration (`rules/*.rules`), as codex loads them: their
    // `prefix_rule`s are rules on commands, and a file that cannot be read all is an error.
    let dir = path.parent().map(|dir| dir.join("rules"));
    let mut files: Vec<std::path::PathBuf> = dir
        .iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rules"))
        .collect();
    files.sort();
    let mut codex = codex;
    let mut count = 0;
    for file in files {
        let rules = crate::codex_rules::read(&file).map_err(|e| {
            Failure::usage(format!("--codex-config {shown}: codex's rules file {}: {e}", file.display()))
        })?;
        count += rules.len();
        if count > crate::codex_rules::MAX_RULES {
            return Err(Failure::usage(format!(
                "--codex-config {shown}: codex's rules files make more than {} rules (alternatives \
                 multiplied out), the most read; {} is where they pass it",
                crate::codex_rules::MAX_RULES,
                file.display()
            )));
        }
        let permissions = codex.settings.permissions.get_or_insert_with(Default::default);
        for (action, rule) in rules {
            let list = match action {
                "deny" => &mut permissions.deny,
                "ask" => &mut permissions.ask,
                _ => &mut permissions.allow,
            };
            list.get_or_insert_with(Vec::new).push(rule);
        }
    }
    let project = root.join(".codex/config.toml");
    if std::fs::symlink_metadata(&project).is_ok() {
        crate::terminal::say(&format!(
            "tools: {}: a project's codex configuration is not applied: only the file --codex-config \
             names (or codex's own with --codex) is read; name this one to use it",
            project.display()
        ));
    }
    Ok(codex)
}

/// Without `--mcp-config`, the servers of the project's `.mcp.json` that the settings approve
/// (`enableAllProjectMcpServers`, or `enabledMcpjsonServers`, less `disabledMcpjsonServers`),
/// as Claude Code asks before it starts a project's servers; every server of the file is named
/// on standard error, started or not. `None` when there is nothing to start.
pub(crate) fn project_servers(
    args: &WorkspaceArgs,
    mcp: &McpArgs,
    file: Option<&Loaded>,
) -> Result<Option<McpConfig>, Failure> {
    if mcp.mcp_config.is_some() {
        return Ok(None);
    }
    let path = workspace_root(args.root.as_deref())?.join(".mcp.json");
    if !path.is_file() {
        return Ok(None);
    }
    let mut config = McpConfig::load(&path).map_err(|e| Failure::usage(e.to_string()))?;
    let settings = file.map(|loaded| &loaded.file);
    let all = settings.and_then(|file| file.enable_all_project_mcp_servers) == Some(true);
    let enabled = settings.and_then(|file| file.enabled_mcpjson_servers.clone()).unwrap_or_default();
    let disabled = settings.and_then(|file| file.disabled_mcpjson_servers.clone()).unwrap_or_default();
    let approved = |name: &String| (all || enabled.contains(name)) && !disabled.contains(name);
    let (started, waiting): (Vec<&str>, Vec<&str>) = config
        .servers
        .iter()
        .map(|server| server.name.as_str())
        .partition(|name| approved(&(*name).to_owned()));
    let mut line = format!("tools: {}: ", path.display());
    if !started.is_empty() {
        line.push_str(&format!("starting {}", started.join(", ")));
    }
    if !waiting.is_empty() {
        if !started.is_empty() {
            line.push_str("; ");
        }
        line.push_str(&format!(
            "not starting {} (a project's servers start once approved: enabledMcpjsonServers or \
             enableAllProjectMcpServers in the settings, or --mcp-config {})",
            waiting.join(", "),
            path.display()
        ));
    }
    crate::terminal::say(&line);
    config.servers.retain(|server| approved(&server.name));
    Ok((!config.servers.is_empty()).then_some(config))
}

/// The tools rules may name: the registry's, the mounted servers', and code mode's.
pub(crate) struct Known<'a> {
    /// The names of our tools and the mounted servers' (`grep`, `docs__search`).
    pub(crate) tools: &'a [String],
    pub(crate) mounts: &'a [McpMount],
    /// The script tool and its companions (`code`, `code_output`, `code_stop`) under
    /// `--code-mode`: they ask about nothing themselves, since every call a script makes is
    /// decided on its own, so no mode asks before a script runs (a rule naming them still
    /// applies: `deny code` refuses scripts).
    pub(crate) scripts: &'a [String],
}

/// The rules and hooks of `--settings`, checked in full now (a bad rule, or one naming a tool
/// that is neither ours nor a mounted server's, is a usage error naming it). `--allow-outside-root`
/// adds a rule allowing outside paths, which the file's own deny rules still beat.
pub(crate) fn settings_policy(
    file: &Loaded,
    root: &std::path::Path,
    allow_outside_root: bool,
    known: &Known<'_>,
) -> Result<LoadedSettings, Failure> {
    // What each tool linked into the binary asks about comes from its own spec; the built-in
    // tools' catalog adds Claude Code's names for them. A mounted tool is asked about in
    // `default` mode whatever its annotations say, as in Claude Code.
    let linked: Vec<_> = tool_runtime::spec::registered_tools().collect();
    let mut catalog = tools_std::permission_catalog()
        .tools(linked.iter().map(|tool| tool.spec()))
        .known_tools(known.tools.iter().chain(known.scripts).cloned());
    for script in known.scripts {
        catalog = catalog.access(script, Access::ReadOnly);
    }
    for mount in known.mounts {
        catalog = catalog.server(mount.name());
    }
    let mut base = Rules::builder(root).catalog(catalog);
    if allow_outside_root {
        base = base.rule_from(PermissionAction::Allow, EXTERNAL_DIRECTORY, "--allow-outside-root");
    }
    // Claude Code's default mode where the file names none; where there is no file, every call
    // runs but a change to a protected path (`bypassPermissions`).
    let settings = Settings::from_file(&file.file, &file.origin, base)
        .map_err(|e| Failure::usage(format!("{} {e}", file.label)))?;
    let settings = match file.origin == NO_FILE {
        true => settings.or_mode_because(
            PermissionMode::BypassPermissions,
            "with no settings file, every call runs but a change to a protected path",
        ),
        false => settings.or_mode(PermissionMode::Default),
    };
    // What has no effect is said at start, each with the reason.
    for not_applied in settings.not_applied() {
        crate::terminal::say(&format!("tools: {} {not_applied}", file.label));
    }
    for ignored in settings.rules().ignored() {
        crate::terminal::say(&format!("tools: {ignored}"));
    }
    let sandbox = settings.sandbox().clone();
    let environment = settings.environment().clone();
    // The network rules (`WebFetch(domain:...)`, `sandbox.network`) are the proxy's.
    let network =
        tool_egress::settings::from_settings(&file.file, &file.origin).map_err(|e| file.failure(e))?;
    let verify = match &file.file.verify {
        Some(verify) => {
            let verify =
                Value::Object(verify.iter().map(|(key, value)| (key.clone(), value.clone())).collect());
            tools_std::verify::Verify::from_settings(&verify).map_err(|e| file.failure(e))?
        }
        None => Vec::new(),
    };
    let checkpoints = file.file.checkpoints.as_ref().and_then(|checkpoints| checkpoints.enabled);
    let hook_files = hook_files(settings.hook_command_lines(), root);
    Ok(LoadedSettings {
        policy: Policy::from_settings(settings),
        sandbox,
        environment,
        network,
        verify,
        checkpoints,
        hook_files,
    })
}

/// What the settings file keeps sandboxed processes from, read before the MCP servers start
/// (for their sandboxes): its `sandbox` object with the paths its deny rules name, and the
/// files to protect ([`protected_files`]). The rules are checked in full later, with the
/// servers' tools known ([`settings_policy`]); a file that does not load is the same usage
/// error here.
pub(crate) fn confinement(
    file: &Loaded,
    root: &std::path::Path,
) -> Result<(SandboxSettings, Vec<std::path::PathBuf>), Failure> {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let base = Rules::builder(&root).catalog(tools_std::permission_catalog());
    let settings = Settings::from_file(&file.file, &file.origin, base)
        .map_err(|e| Failure::usage(format!("{} {e}", file.label)))?;
    let hook_files = hook_files(settings.hook_command_lines(), &root);
    Ok((settings.sandbox().clone(), protected_files(file, hook_files)))
}

/// The files commands and sandboxed servers may not change: the settings files and
/// `hook_files`, those that exist, resolved.
pub(crate) fn protected_files(file: &Loaded, hook_files: Vec<std::path::PathBuf>) -> Vec<std::path::PathBuf> {
    let mut protected = hook_files;
    protected.extend(file.paths.iter().filter_map(|path| std::fs::canonicalize(path).ok()));
    protected
}

/// The files that hook command lines name (a script and what it is given): words with a `/`,
/// after `$CLAUDE_PROJECT_DIR` is replaced by the root and quotes are dropped, relative ones
/// taken from the root, that are regular files now. Commands may not replace them.
fn hook_files<'a>(lines: impl Iterator<Item = &'a str>, root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let root_text = root.to_string_lossy();
    let mut files = Vec::new();
    for line in lines {
        let line =
            line.replace("${CLAUDE_PROJECT_DIR}", &root_text).replace("$CLAUDE_PROJECT_DIR", &root_text);
        for word in line.split(|c: char| c.is_whitespace() || ";&|()<>`".contains(c)) {
            let word = word.trim_matches(|c| c == '"' || c == '\'');
            if !word.contains('/') {
                continue;
            }
            let path = root.join(word);
            if let Ok(real) = std::fs::canonicalize(&path)
                && real.is_file()
            {
                files.push(real);
            }
        }
    }
    files.sort();
    files.dedup();
    files
}

/// What one settings file says.
pub(crate) struct LoadedSettings {
    pub(crate) policy: Policy,
    pub(crate) sandbox: SandboxSettings,
    pub(crate) environment: EnvFilter,
    pub(crate) network: NetworkSettings,
    /// The `verify` object: checks after edits.
    pub(crate) verify: Vec<tools_std::verify::Verify>,
    /// `checkpoints.enabled`, when the file says.
    pub(crate) checkpoints: Option<bool>,
    /// The files the hook commands name.
    pub(crate) hook_files: Vec<std::path::PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use tool_sandbox::SandboxMode;

    /// A directory for one test, removed first.
    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tools-settings-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("managed")).unwrap();
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        dir
    }

    fn message(result: Result<(), Failure>) -> String {
        result.err().map(|failure| failure.message).unwrap_or_default()
    }

    #[test]
    fn managed_settings_stay_above_a_codex_configuration_and_the_command_line() {
        let dir = scratch("managed");
        let managed = dir.join("managed/managed-settings.json");
        std::fs::write(
            &managed,
            r#"{"permissions": {"deny": ["Read(./a.txt)"], "disableBypassPermissionsMode": "disable"},
                "sandbox": {"enabled": true, "network": {"allowManagedDomainsOnly": true}}}"#,
        )
        .unwrap();
        let codex = dir.join("config.toml");
        std::fs::write(&codex, "sandbox_mode = \"danger-full-access\"\napproval_policy = \"never\"\n")
            .unwrap();
        let mut args = WorkspaceArgs {
            root: Some(dir.join("ws")),
            codex_config: Some(codex.clone()),
            ..WorkspaceArgs::default()
        };
        let loaded = Loaded::read_at(&args, &dir.join("managed")).unwrap().unwrap();
        let permissions = loaded.file.permissions.clone().unwrap();
        assert_eq!(permissions.deny, Some(vec!["Read(./a.txt)".to_owned()]));
        assert!(permissions.disable_bypass_permissions_mode.is_some());
        assert_eq!(loaded.sandbox_mode, Some(SandboxMode::Off));
        assert_eq!(loaded.label, "--codex-config");
        assert_eq!(loaded.paths, [codex.clone(), managed.clone()]);
        assert_eq!(loaded.managed.sandbox.as_deref(), Some(managed.as_path()));
        let refused = message(loaded.managed.refuse_overrides(&args, SandboxMode::Off));
        assert!(
            refused.starts_with("codex's `sandbox_mode = \"danger-full-access\"`: the managed settings"),
            "{refused}"
        );
        args.sandbox = Some(SandboxMode::Off);
        let refused = message(loaded.managed.refuse_overrides(&args, SandboxMode::Off));
        assert!(refused.starts_with("--sandbox off: the managed settings"), "{refused}");
        assert!(loaded.managed.refuse_overrides(&args, SandboxMode::ReadOnly).is_ok());
        args.allow_hosts = vec!["example.com".to_owned()];
        let refused = message(loaded.managed.refuse_overrides(&args, SandboxMode::ReadOnly));
        assert!(refused.contains("--allow-host example.com: the managed settings"), "{refused}");
        // Without managed settings the command line decides.
        std::fs::remove_file(&managed).unwrap();
        let loaded = Loaded::read_at(&args, &dir.join("managed")).unwrap().unwrap();
        assert!(loaded.file.permissions.as_ref().is_none_or(|p| p.deny.is_none()));
        assert!(loaded.managed.refuse_overrides(&args, SandboxMode::Off).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
