//! codex's `config.toml` (`--codex-config FILE`): the keys that map to this program, read into a
//! typed model and turned into the settings, sandbox mode and servers they stand for; every
//! other key is named as not applied.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value, json};
use tool_runtime::mcp_client::McpConfig;
use tool_runtime::settings::{Environment, Filesystem, Mode, Permissions, Sandbox, SettingsFile};
use tool_sandbox::SandboxMode;

/// The keys of codex's `config.toml` that this program reads.
#[derive(Debug, Default, Deserialize)]
struct CodexToml {
    sandbox_mode: Option<CodexSandbox>,
    approval_policy: Option<Approval>,
    sandbox_workspace_write: Option<WorkspaceWrite>,
    #[serde(default)]
    mcp_servers: BTreeMap<String, McpServer>,
    shell_environment_policy: Option<ShellEnvironment>,
    /// `[projects."PATH"]`: the directories the user trusted (`trust_level = "trusted"`), which
    /// decide the sandbox where `sandbox_mode` does not.
    #[serde(default)]
    projects: BTreeMap<String, Project>,
    /// Every other key: named as not applied.
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum CodexSandbox {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Approval {
    Untrusted,
    OnFailure,
    OnRequest,
    Never,
}

#[derive(Debug, Default, Deserialize)]
struct WorkspaceWrite {
    #[serde(default)]
    writable_roots: Vec<PathBuf>,
    network_access: Option<bool>,
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
struct McpServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    bearer_token_env_var: Option<String>,
    enabled: Option<bool>,
    enabled_tools: Option<Vec<String>>,
    disabled_tools: Option<Vec<String>>,
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Default, Deserialize)]
struct ShellEnvironment {
    inherit: Option<Inherit>,
    #[serde(default)]
    include_only: Vec<String>,
    #[serde(default)]
    set: BTreeMap<String, String>,
    #[serde(default)]
    exclude: Vec<String>,
    ignore_default_excludes: Option<bool>,
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Default, Deserialize)]
struct Project {
    trust_level: Option<String>,
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Inherit {
    All,
    Core,
    None,
}

/// What a codex configuration stands for here.
pub(crate) struct Codex {
    /// The settings it stands for (`permissions.defaultMode`, `sandbox`, `environment`, `env`).
    pub(crate) settings: SettingsFile,
    /// `sandbox_mode`.
    pub(crate) sandbox: Option<SandboxMode>,
    /// `[mcp_servers]`, when there are any.
    pub(crate) servers: Option<McpConfig>,
    /// The keys that are not applied: (key, reason).
    pub(crate) not_applied: Vec<(String, String)>,
}

/// Reads codex's `config.toml` at `path`, for the workspace at `root`.
pub(crate) fn load(path: &Path, root: &Path) -> Result<Codex, String> {
    let text = tool_runtime::settings::read_text(path).map_err(|e| e.to_string())?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| format!("not valid: {}", e.message()))?;
    let (table, unused_profiles) = with_profile(table)?;
    let mut config = CodexToml::deserialize(table).map_err(|e| format!("not valid: {}", e.message()))?;
    // As codex: without `sandbox_mode`, a trusted project's commands may write it, and those of
    // any other directory may not.
    if config.sandbox_mode.is_none() {
        config.sandbox_mode = Some(match trusted(&config.projects, root) {
            true => CodexSandbox::WorkspaceWrite,
            false => CodexSandbox::ReadOnly,
        });
    }
    let mut codex = convert(config)?;
    if unused_profiles {
        codex.not_applied.push((
            "profiles".into(),
            "no profile is selected (`profile = \"NAME\"` at the top selects one)".into(),
        ));
    }
    Ok(codex)
}

/// Whether `projects` trusts the workspace at `root`: its own entry, or that of the repository
/// it lies in (the nearest directory above holding `.git`), as codex looks them up.
fn trusted(projects: &BTreeMap<String, Project>, root: &Path) -> bool {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let repository = root.ancestors().find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok());
    [Some(root.as_path()), repository].into_iter().flatten().any(|dir| {
        projects.iter().any(|(path, project)| {
            project.trust_level.as_deref() == Some("trusted")
                && std::fs::canonicalize(path).is_ok_and(|path| path == dir)
        })
    })
}

/// The configuration with the profile that `profile` names laid over it, as codex reads it:
/// each key of `[profiles.NAME]` replaces the top-level one (a table key by key); and whether
/// profiles were given and none selected.
fn with_profile(mut table: toml::Table) -> Result<(toml::Table, bool), String> {
    let profiles = table.remove("profiles");
    let Some(selected) = table.remove("profile") else { return Ok((table, profiles.is_some())) };
    let name = selected.as_str().ok_or("`profile` must be the name of a table of `[profiles]`")?;
    let Some(toml::Value::Table(profile)) =
        profiles.and_then(|profiles| profiles.as_table().and_then(|profiles| profiles.get(name)).cloned())
    else {
        return Err(format!("`profile = \"{name}\"`, and no `[profiles.{name}]` is defined"));
    };
    for (key, value) in profile {
        match (table.get_mut(&key), value) {
            (Some(toml::Value::Table(base)), toml::Value::Table(over)) => base.extend(over),
            (_, value) => {
                table.insert(key, value);
            }
        }
    }
    Ok((table, false))
}

fn convert(config: CodexToml) -> Result<Codex, String> {
    let mut not_applied = Vec::new();
    let mut not = |key: String, reason: &str| not_applied.push((key, reason.to_owned()));
    let mut settings = SettingsFile::default();
    let mut sandbox = Sandbox::default();
    // codex runs what its sandbox confines without asking, except under `untrusted`; edits are
    // what the sandbox lets through in the workspace.
    sandbox.auto_allow_bash_if_sandboxed = Some(!matches!(config.approval_policy, Some(Approval::Untrusted)));
    let mode = match config.approval_policy {
        None => None,
        Some(Approval::Untrusted) => Some(Mode::Default),
        Some(Approval::OnFailure | Approval::OnRequest) => Some(Mode::AcceptEdits),
        Some(Approval::Never) => Some(Mode::BypassPermissions),
    };
    // A read-only sandbox: codex asks before every edit, its file tools' too (and refuses it
    // where nobody is asked, under `never`).
    let read_only = matches!(config.sandbox_mode, Some(CodexSandbox::ReadOnly));
    if mode.is_some() || read_only {
        let mut permissions = Permissions::default();
        permissions.default_mode = mode;
        if read_only {
            permissions.ask = Some(vec!["Edit".into()]);
        }
        settings.permissions = Some(permissions);
    }
    let sandbox_mode = config.sandbox_mode.map(|mode| match mode {
        CodexSandbox::ReadOnly => SandboxMode::ReadOnly,
        CodexSandbox::WorkspaceWrite => SandboxMode::WorkspaceWrite,
        CodexSandbox::DangerFullAccess => SandboxMode::Off,
    });
    if let Some(write) = config.sandbox_workspace_write {
        if !write.writable_roots.is_empty() {
            let mut filesystem = Filesystem::default();
            let roots = write.writable_roots.iter().map(|root| root.to_string_lossy().into_owned());
            filesystem.allow_write = Some(roots.collect());
            sandbox.filesystem = Some(filesystem);
        }
        if write.network_access == Some(true) {
            not(
                "sandbox_workspace_write.network_access".into(),
                "sandboxed commands reach the network through a proxy that allows the hosts named (--allow-host, \
                 or WebFetch(domain:...) rules in a settings file) and asks about the others",
            );
        }
        for key in write.other.keys() {
            not(format!("sandbox_workspace_write.{key}"), "no counterpart in this program's sandbox");
        }
    }
    if sandbox != Sandbox::default() {
        settings.sandbox = Some(sandbox);
    }
    if let Some(policy) = config.shell_environment_policy {
        let mut environment = Environment::default();
        match policy.inherit {
            Some(Inherit::All) => environment.inherit_all = Some(true),
            Some(Inherit::None) => not(
                "shell_environment_policy.inherit".into(),
                "commands always inherit the base variables (PATH, HOME, LANG, ...): `none` is read as `core`",
            ),
            Some(Inherit::Core) | None => {}
        }
        // As in codex, `include_only` keeps only the variables it names of what `inherit` passed
        // (the base variables stay: commands here always get them).
        if !policy.include_only.is_empty() {
            environment.inherit_all = None;
            environment.inherit = Some(policy.include_only);
        }
        if !policy.set.is_empty() {
            settings.env = Some(policy.set);
        }
        // codex's default excludes, unless turned off in so many words.
        let mut exclude = policy.exclude;
        if policy.ignore_default_excludes != Some(true) {
            exclude.extend(["*KEY*", "*SECRET*", "*TOKEN*"].map(String::from));
        }
        environment.exclude = Some(exclude);
        settings.environment = Some(environment);
        for key in policy.other.keys() {
            not(
                format!("shell_environment_policy.{key}"),
                "no counterpart in this program's environment of commands",
            );
        }
    }
    for (path, project) in &config.projects {
        for key in project.other.keys() {
            not(format!("projects.\"{path}\".{key}"), "no counterpart in this program");
        }
    }
    let servers = servers(config.mcp_servers, &mut not)?;
    for key in config.other.keys() {
        not(key.clone(), "no counterpart in this program");
    }
    // The values checked as a settings file's would be (a variable's name, say).
    let settings = SettingsFile::from_value(settings.to_value()).map_err(|e| e.to_string())?;
    Ok(Codex { settings, sandbox: sandbox_mode, servers, not_applied })
}

/// `[mcp_servers]` as an `mcpServers` configuration.
fn servers(
    servers: BTreeMap<String, McpServer>,
    not: &mut impl FnMut(String, &str),
) -> Result<Option<McpConfig>, String> {
    if servers.is_empty() {
        return Ok(None);
    }
    let mut entries = Map::new();
    for (name, server) in servers {
        let mut entry = Map::new();
        match (server.command, server.url) {
            (Some(command), None) => {
                entry.insert("command".into(), json!(command));
                entry.insert("args".into(), json!(server.args));
                entry.insert("env".into(), json!(server.env));
                if let Some(cwd) = server.cwd {
                    entry.insert("cwd".into(), json!(cwd));
                }
            }
            (None, Some(url)) => {
                entry.insert("type".into(), json!("http"));
                entry.insert("url".into(), json!(url));
                if let Some(variable) = server.bearer_token_env_var {
                    entry.insert(
                        "headers".into(),
                        json!({"Authorization": format!("Bearer ${{{variable}}}")}),
                    );
                }
            }
            _ => return Err(format!("`mcp_servers.{name}` needs `command` or `url`, and not both")),
        }
        if server.enabled == Some(false) {
            entry.insert("disabled".into(), json!(true));
        }
        if let Some(enabled) = server.enabled_tools {
            entry.insert("enabledTools".into(), json!(enabled));
        }
        if let Some(disabled) = server.disabled_tools {
            entry.insert("disabledTools".into(), json!(disabled));
        }
        for key in server.other.keys() {
            not(format!("mcp_servers.{name}.{key}"), "no counterpart in this program's MCP client");
        }
        entries.insert(name, Value::Object(entry));
    }
    // The MCP client reads `mcpServers` text (with its `${VAR}` expansion): the entries are
    // handed to it in that form.
    let text = json!({"mcpServers": entries}).to_string();
    McpConfig::parse(&text).map(Some).map_err(|e| e.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_keys_map_to_settings_the_sandbox_and_servers() {
        let config: CodexToml = toml::from_str(
            r#"
            model = "o3"
            sandbox_mode = "read-only"
            approval_policy = "on-request"
            [sandbox_workspace_write]
            writable_roots = ["/cache"]
            network_access = true
            [shell_environment_policy]
            inherit = "all"
            exclude = ["AWS_*"]
            set = { RUST_LOG = "debug" }
            use_profile = true
            [mcp_servers.docs]
            command = "docs-server"
            args = ["--stdio"]
            "#,
        )
        .unwrap();
        let codex = convert(config).unwrap();
        assert_eq!(
            codex.settings.to_value(),
            json!({
                "permissions": {"defaultMode": "acceptEdits", "ask": ["Edit"]},
                "sandbox": {"filesystem": {"allowWrite": ["/cache"]}, "autoAllowBashIfSandboxed": true},
                "environment": {"inheritAll": true, "exclude": ["AWS_*", "*KEY*", "*SECRET*", "*TOKEN*"]},
                "env": {"RUST_LOG": "debug"},
            })
        );
        assert_eq!(codex.sandbox, Some(SandboxMode::ReadOnly));
        assert_eq!(codex.servers.unwrap().servers[0].name, "docs");
        let keys: Vec<&str> = codex.not_applied.iter().map(|(key, _)| key.as_str()).collect();
        assert_eq!(
            keys,
            ["sandbox_workspace_write.network_access", "shell_environment_policy.use_profile", "model"]
        );
    }

    #[test]
    fn the_selected_profile_is_laid_over_the_top_level_keys() {
        let table: toml::Table = toml::from_str(
            r#"
            profile = "safe"
            sandbox_mode = "workspace-write"
            approval_policy = "never"
            [sandbox_workspace_write]
            writable_roots = ["/cache"]
            [profiles.safe]
            sandbox_mode = "read-only"
            approval_policy = "untrusted"
            [profiles.safe.sandbox_workspace_write]
            network_access = false
            [profiles.fast]
            approval_policy = "never"
            "#,
        )
        .unwrap();
        let (table, unused) = with_profile(table).unwrap();
        assert!(!unused);
        let codex = convert(CodexToml::deserialize(table).unwrap()).unwrap();
        assert_eq!(codex.sandbox, Some(SandboxMode::ReadOnly));
        assert_eq!(
            codex.settings.to_value()["permissions"],
            json!({"defaultMode": "default", "ask": ["Edit"]})
        );
        assert_eq!(codex.settings.to_value()["sandbox"]["filesystem"]["allowWrite"], json!(["/cache"]));
        let missing: toml::Table = toml::from_str("profile = \"gone\"\n[profiles.safe]\n").unwrap();
        assert_eq!(
            with_profile(missing).unwrap_err(),
            "`profile = \"gone\"`, and no `[profiles.gone]` is defined"
        );
        let unselected: toml::Table =
            toml::from_str("[profiles.safe]\nsandbox_mode = \"read-only\"\n").unwrap();
        let (table, unused) = with_profile(unselected).unwrap();
        assert!(unused && table.is_empty());
    }
}
