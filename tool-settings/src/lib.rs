//! The settings file of the tool framework as one typed model: Claude Code's `settings.json`,
//! with this project's own keys, each section a type ([`SettingsFile`]). The crates that apply
//! a section receive it typed: `tool-permissions` the rules, hooks, mode and sandbox switches,
//! `tool-egress` the network rules, the `tools` binary the rest.
//!
//! - [`SettingsFile::from_value`] reads a file, checking its shape; an error names the key at
//!   fault. Every key is kept: [`SettingsFile::to_value`] writes the file back.
//! - [`SettingsFile::not_applied`] names the keys that have no effect here, each with the reason.
//! - [`hierarchy`] finds Claude Code's files for a project and merges them as Claude Code does.
//! - [`schema`] is the file's JSON Schema, for editors (`settings.schema.json` in this crate's
//!   folder is it, checked by a test).
//!
//! ```
//! let file = tool_settings::SettingsFile::from_value(serde_json::json!({
//!     "permissions": {"allow": ["Bash(git diff:*)"], "defaultMode": "acceptEdits"},
//!     "sandbox": {"limits": {"memory": "4G"}},
//!     "model": "opus"
//! }))
//! .unwrap();
//! let limits = file.sandbox.as_ref().and_then(|s| s.limits.as_ref()).unwrap();
//! assert_eq!(limits.memory.as_ref().and_then(|m| m.bytes()), Some(4 << 30));
//! assert_eq!(file.not_applied("settings.json")[0].key, "model");
//!
//! let error = tool_settings::SettingsFile::from_value(serde_json::json!({"sandbox": {"enabled": "yes"}}));
//! assert!(error.unwrap_err().to_string().starts_with("`sandbox.enabled`: invalid type"));
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![doc(test(attr(deny(warnings, rust_2018_idioms), allow(dead_code, unused_variables))))]

pub mod hierarchy;
mod model;
mod not_applied;
mod schema;

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::{Map, Value};

pub use model::{
    Action, Bound, Checkpoints, CommandKind, Count, Disable, Environment, Filesystem, HookCommand, HookEntry,
    Hooks, Limits, Mode, Network, Permissions, Sandbox, SettingsFile,
};
pub use not_applied::NotApplied;
pub use schema::schema;

/// The largest settings file read (a settings file is a few kilobytes).
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// A settings file that cannot be read: the key at fault, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    /// The key, with its section (`sandbox.limits.memory`, `hooks.PreToolUse[0].hooks[1]`);
    /// empty for the file as a whole.
    pub key: String,
    /// What is wrong.
    pub problem: String,
}

impl SettingsError {
    fn whole(problem: impl Into<String>) -> SettingsError {
        SettingsError { key: String::new(), problem: problem.into() }
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.key.as_str() {
            "" => f.write_str(&self.problem),
            key => write!(f, "`{key}`: {}", self.problem),
        }
    }
}

impl std::error::Error for SettingsError {}

impl SettingsFile {
    /// The top-level keys of the model; any other is kept in [`SettingsFile::other`].
    pub const KEYS: [&str; 14] = [
        "$schema",
        "permissions",
        "hooks",
        "disableAllHooks",
        "sandbox",
        "environment",
        "env",
        "verify",
        "checkpoints",
        "enableAllProjectMcpServers",
        "enabledMcpjsonServers",
        "disabledMcpjsonServers",
        "allowManagedPermissionRulesOnly",
        "allowManagedHooksOnly",
    ];

    /// Reads a settings file from its JSON. The error names the key at fault: an unknown key
    /// of a section, a value of the wrong type, `null` where a value belongs.
    pub fn from_value(value: Value) -> Result<SettingsFile, SettingsError> {
        let Value::Object(mut top) = value else {
            return Err(SettingsError::whole("the settings must be a JSON object"));
        };
        objects_where_objects_belong(&top)?;
        let other_keys: Vec<String> =
            top.keys().filter(|key| !Self::KEYS.contains(&key.as_str())).cloned().collect();
        let other = other_keys.into_iter().filter_map(|key| top.remove_entry(&key)).collect();
        let mut file: SettingsFile =
            serde_path_to_error::deserialize(Value::Object(top)).map_err(|error| SettingsError {
                key: error.path().to_string().trim_start_matches('.').to_owned(),
                problem: error.into_inner().to_string(),
            })?;
        file.other = other;
        Ok(file)
    }

    /// Reads a settings file from its text.
    pub fn parse(text: &str) -> Result<SettingsFile, SettingsError> {
        let value =
            serde_json::from_str(text).map_err(|e| SettingsError::whole(format!("not valid JSON: {e}")))?;
        SettingsFile::from_value(value)
    }

    /// Reads the settings file at `path`: a regular file of at most [`MAX_FILE_BYTES`].
    pub fn load(path: impl AsRef<Path>) -> Result<SettingsFile, SettingsError> {
        SettingsFile::from_value(read_json(path.as_ref())?)
    }

    /// The file as JSON, every key it was read with kept.
    pub fn to_value(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new()));
        if let Value::Object(top) = &mut value {
            top.extend(self.other.iter().map(|(key, value)| (key.clone(), value.clone())));
        }
        value
    }
}

/// Refuses an array where the model has a section: serde reads a struct from an array too,
/// its fields in order (`"sandbox": {"limits": [64]}` would bound processes to 64), which no
/// settings file means and the schema does not allow.
fn objects_where_objects_belong(top: &Map<String, Value>) -> Result<(), SettingsError> {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    let root = SCHEMA.get_or_init(schema);
    fn walk<'s>(root: &'s Value, mut node: &'s Value, value: &Value, at: &str) -> Result<(), SettingsError> {
        while let Some(name) = node.get("$ref").and_then(Value::as_str) {
            match name.strip_prefix("#/$defs/").and_then(|name| root["$defs"].get(name)) {
                Some(target) => node = target,
                None => break,
            }
        }
        match value {
            Value::Array(items) => {
                if node.get("type").and_then(Value::as_str) == Some("object") {
                    return Err(SettingsError {
                        key: at.to_owned(),
                        problem: "invalid type: sequence, expected an object".to_owned(),
                    });
                }
                if let Some(item) = node.get("items") {
                    for (i, value) in items.iter().enumerate() {
                        walk(root, item, value, &format!("{at}[{i}]"))?;
                    }
                }
            }
            Value::Object(members) => {
                for (key, value) in members {
                    if let Some(property) = node.get("properties").and_then(|p| p.get(key)) {
                        let at = if at.is_empty() { key.clone() } else { format!("{at}.{key}") };
                        walk(root, property, value, &at)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
    for (key, value) in top {
        if let Some(property) = root["properties"].get(key) {
            walk(root, property, value, key)?;
        }
    }
    Ok(())
}

/// The JSON of the file at `path`, read as [`read_text`] reads it.
pub fn read_json(path: &Path) -> Result<Value, SettingsError> {
    let text = read_text(path)?;
    serde_json::from_str(&text).map_err(|e| SettingsError::whole(format!("not valid JSON: {e}")))
}

/// The text of the configuration file at `path`: a regular file of at most [`MAX_FILE_BYTES`]
/// (a name that leads elsewhere is followed: a user may keep the file under version control
/// elsewhere). A FIFO or a device is refused without waiting on it.
pub fn read_text(path: &Path) -> Result<String, SettingsError> {
    let cannot = |e: std::io::Error| SettingsError::whole(format!("cannot read the file: {e}"));
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    // Opening a FIFO for reading waits for a writer; with O_NONBLOCK it does not (a regular
    // file's reads ignore the flag).
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path).map_err(cannot)?;
    let metadata = file.metadata().map_err(cannot)?;
    if !metadata.is_file() {
        return Err(SettingsError::whole("not a regular file"));
    }
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1).read_to_string(&mut text).map_err(cannot)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(SettingsError::whole(format!("larger than {MAX_FILE_BYTES} bytes")));
    }
    Ok(text)
}
