//! The settings file loader ([`Settings::parse`], Claude Code's `settings.json` shape) and the
//! network settings read from the same file (`tool_egress::settings::from_settings`).
//!
//! The text is either raw or JSON assembled from the real keys (`permissions` with `allow` /
//! `ask` / `deny` lists of rule strings, `defaultMode`, `default`, `defaults`,
//! `additionalDirectories`, `disableBypassPermissionsMode`; `hooks` with matchers (regular
//! expressions) and commands; `sandbox` with `filesystem`, `network` and its domains, addresses
//! and secrets; `environment`; `env`, `model` and the other keys that are named and not applied),
//! with values from realistic pieces, sometimes of the wrong type, sometimes nested deeper, and
//! sometimes the serialized text then cut or spliced. Checks: no panic; an error names the origin
//! and says what is wrong (a non-empty message); a file that loads becomes a [`Policy`] that
//! decides commands and paths for several tools without panicking; loading is deterministic
//! (the same text gives the same error).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};
use tool_runtime::hooks::{PermissionHook, PermissionKind, PermissionRequest};
use tool_runtime::permissions::{Policy, Rules, Settings};
use tools_std::tool_egress;

const ORIGIN: &str = "fuzz/settings.json";

const TOP_KEYS: &[&str] = &[
    "permissions",
    "hooks",
    "sandbox",
    "environment",
    "env",
    "model",
    "disableAllHooks",
    "apiKeyHelper",
    "cleanupPeriodDays",
    "enableAllProjectMcpServers",
    "enabledMcpjsonServers",
    "statusLine",
    "x",
];
const PERMISSION_KEYS: &[&str] = &[
    "allow",
    "ask",
    "deny",
    "defaultMode",
    "default",
    "defaults",
    "additionalDirectories",
    "disableBypassPermissionsMode",
    "external_directory",
    "y",
];
const SANDBOX_KEYS: &[&str] = &[
    "enabled",
    "excludedCommands",
    "networkCommands",
    "allowUnsandboxedCommands",
    "allowGitWrites",
    "filesystem",
    "network",
    "autoAllowBashIfSandboxed",
    "enableWeakerNestedSandbox",
    "ignoreViolations",
];
const NETWORK_KEYS: &[&str] = &[
    "allowedDomains",
    "deniedDomains",
    "allowedAddresses",
    "limited",
    "strictAllowlist",
    "allowLocalBinding",
    "allowAllUnixSockets",
    "allowUnixSockets",
    "secrets",
    "httpProxyPort",
    "tlsTerminate",
];
const HOOK_EVENTS: &[&str] = &["PreToolUse", "PostToolUse", "Notification", "Stop", "SessionStart", "Nope"];
const HOOK_KEYS: &[&str] = &["matcher", "hooks", "type", "command", "timeout"];
const STRINGS: &[&str] = &[
    "Bash",
    "Bash(rm:*)",
    "Bash(git push:*)",
    "Bash(read-only)",
    "Bash(npm test)",
    "Bash(*)",
    "Bash(ls",
    "Read",
    "Read(./.env)",
    "Read(//etc/**)",
    "Read(~/.ssh/**)",
    "Edit(src/**)",
    "Write(/tmp/*)",
    "Read(**/*.{rs,toml})",
    "Read([)",
    "Grep",
    "Glob",
    "LS",
    "WebFetch",
    "WebFetch(domain:example.com)",
    "WebFetch(domain:*.github.com)",
    "WebSearch",
    "Task",
    "mcp__server",
    "mcp__server__tool",
    "mcp__*",
    "external_directory(/tmp/**)",
    "edit",
    "bash",
    "allow",
    "ask",
    "deny",
    "default",
    "acceptEdits",
    "plan",
    "bypassPermissions",
    "dontAsk",
    "disable",
    "command",
    "echo hi",
    "./hook.sh",
    "Bash|Edit",
    "Edit|Write",
    "(",
    "a{1000}{1000}",
    ".*",
    "*",
    "",
    "~/dir",
    "~",
    "../up",
    "/abs",
    "example.com",
    "*.example.com",
    "127.0.0.1",
    "10.0.0.0/8",
    "::1",
    "[::1]:443",
    "example.com:8080",
    "GITHUB_TOKEN",
    "PATH",
    "HOME*",
    "inherit",
    "inheritAll",
    "é",
];

fn string(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(if u.ratio(1, 6)? { u.arbitrary()? } else { (*u.choose(STRINGS)?).to_owned() })
}

/// A value for a key: usually of the shape the key takes, sometimes anything.
fn value(u: &mut Unstructured<'_>, keys: &[&'static [&'static str]], depth: u32) -> Result<Value> {
    let kind = u.int_in_range(0..=9)?;
    Ok(match kind {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => match u.int_in_range(0..=3)? {
            0 => Value::from(u.arbitrary::<i64>()?),
            1 => Value::from(u.arbitrary::<f64>()?),
            2 => Value::from(u.int_in_range(0..=100u32)?),
            _ => Value::from(u.arbitrary::<u64>()?),
        },
        3 | 4 => Value::String(string(u)?),
        5 | 6 => {
            let mut items = Vec::new();
            for _ in 0..u.int_in_range(0..=5)? {
                items.push(if u.ratio(1, 8)? && depth < 4 {
                    value(u, keys, depth + 1)?
                } else {
                    Value::String(string(u)?)
                });
            }
            Value::Array(items)
        }
        _ if depth < 5 => object(u, keys.get(1..).filter(|k| !k.is_empty()).unwrap_or(keys), depth + 1)?,
        _ => Value::String(string(u)?),
    })
}

fn object(u: &mut Unstructured<'_>, keys: &[&'static [&'static str]], depth: u32) -> Result<Value> {
    let mut map = Map::new();
    for _ in 0..u.int_in_range(0..=5)? {
        let key = if u.ratio(1, 10)? {
            u.arbitrary::<String>()?
        } else {
            let level = *u.choose(keys)?;
            (*u.choose(level)?).to_owned()
        };
        let inner = match key.as_str() {
            "permissions" => vec![PERMISSION_KEYS, TOP_KEYS],
            "sandbox" => vec![SANDBOX_KEYS, NETWORK_KEYS],
            "network" => vec![NETWORK_KEYS],
            "hooks" => vec![HOOK_EVENTS, HOOK_KEYS, HOOK_KEYS],
            "environment" => vec![&["inherit", "inheritAll"][..]],
            _ => keys.to_vec(),
        };
        let v = value(u, &inner, depth)?;
        map.insert(key, v);
    }
    Ok(Value::Object(map))
}

fn text(u: &mut Unstructured<'_>) -> Result<String> {
    if u.ratio(1, 4)? {
        return u.arbitrary();
    }
    let mut text = object(u, &[TOP_KEYS], 0)?.to_string();
    if u.ratio(1, 8)? && !text.is_empty() {
        // Cut or spliced, at a character boundary.
        let mut at = u.int_in_range(0..=text.len())?;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let rest = text.split_off(at);
        let splice: String = u.arbitrary()?;
        text.push_str(&splice);
        if u.arbitrary()? {
            text.push_str(&rest);
        }
    }
    Ok(text)
}

fn root() -> &'static PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("tool-fuzz-settings-{}", std::process::id()));
        std::fs::create_dir_all(root.join("src")).expect("root");
        root
    })
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| tokio::runtime::Builder::new_current_thread().build().expect("runtime"))
}

fn base() -> tool_runtime::permissions::RulesBuilder {
    Rules::builder(root()).catalog(tools_std::permission_catalog())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let text = text(u)?;
    let loaded = Settings::parse(&text, ORIGIN, base());
    if let Ok(file) = tool_runtime::settings::SettingsFile::parse(&text) {
        // Written back and read again, the file is the same file.
        let again = tool_runtime::settings::SettingsFile::from_value(file.to_value());
        assert_eq!(again.as_ref().ok(), Some(&file), "{text}");
        // The network side of the same file: an error is a message.
        if let Err(e) = tool_egress::settings::from_settings(&file, ORIGIN) {
            assert!(!e.to_string().trim().is_empty(), "empty network settings error for {text}");
        }
    }
    match loaded {
        Err(e) => {
            assert_eq!(Settings::parse(&text, ORIGIN, base()).err(), Some(e.clone()), "{text}");
            assert_eq!(e.origin, ORIGIN);
            assert!(!e.problem.trim().is_empty(), "empty error for {text}");
            let _ = e.to_string();
        }
        Ok(settings) => {
            let _ =
                (settings.not_applied().len(), settings.mode(), settings.sandbox(), settings.hook_counts());
            let _ = settings.hook_command_lines().count();
            let policy = Policy::from_settings(settings);
            let command = u.choose(&["ls", "rm -rf x", "git push origin main", "cat .env", "npm test"])?;
            for kind in [
                PermissionKind::Command { command: (*command).to_owned(), workdir: None },
                PermissionKind::Path { path: root().join("src/main.rs"), named: None },
                PermissionKind::ExternalDirectory { path: "/etc/passwd".into(), named: None },
            ] {
                for tool in ["bash", "read", "edit", "server__tool"] {
                    let mut request = PermissionRequest::new(kind.clone(), "fuzz");
                    request.tool = tool.to_owned();
                    let _ = runtime().block_on(policy.decide(&request));
                }
            }
        }
    }
    Ok(())
}
