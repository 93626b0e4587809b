//! Which of this process's environment variables the processes it starts inherit.
//!
//! Commands, hook commands and mounted stdio MCP servers get a filtered environment by
//! default: the variables of [`BASE_VARIABLES`] (what a program needs to find itself, its
//! home, its language and its terminal), plus the names the configuration adds, and nothing
//! else, so that API keys and tokens in the agent's environment do not reach them. Variables a
//! caller sets explicitly (an `mcpServers` entry's `env`, a command's own) are set on top.
//!
//! In a settings file:
//!
//! ```json
//! {"environment": {"inherit": ["AWS_PROFILE", "CARGO_*"], "inheritAll": false}}
//! ```
//!
//! `inherit` adds names (a trailing `*` matches a prefix); `"inheritAll": true` passes the
//! whole environment, as before there was a filter.

use std::ffi::{OsStr, OsString};

use serde_json::Value;

/// The variables every child process inherits. Names ending in `*` match a prefix.
pub const BASE_VARIABLES: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    // A sandboxed command gets its session's own instead (`Sandbox::apply`).
    "TMPDIR",
    "TZ",
    "XDG_RUNTIME_DIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    // Where toolchains live, when not in their default places: locations, not secrets.
    "CARGO_HOME",
    "RUSTUP_HOME",
    "GOPATH",
    "GOROOT",
    "JAVA_HOME",
    "PYENV_ROOT",
    "VIRTUAL_ENV",
    "NVM_DIR",
    // Windows: what a program needs to start at all.
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMFILES",
    "PROCESSOR_ARCHITECTURE",
    "USERNAME",
    "HOMEDRIVE",
    "HOMEPATH",
];

/// Which inherited variables a child process gets: [`BASE_VARIABLES`] and the names added, or
/// everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvFilter {
    inherit_all: bool,
    names: Vec<String>,
}

impl Default for EnvFilter {
    fn default() -> Self {
        EnvFilter { inherit_all: false, names: BASE_VARIABLES.iter().map(|n| (*n).to_owned()).collect() }
    }
}

impl EnvFilter {
    /// [`BASE_VARIABLES`] only.
    pub fn base() -> Self {
        Self::default()
    }

    /// The whole environment, unfiltered.
    pub fn inherit_all() -> Self {
        EnvFilter { inherit_all: true, names: Vec::new() }
    }

    /// Adds a name, or a prefix ending in `*`.
    #[must_use]
    pub fn with(mut self, name: impl Into<String>) -> Self {
        self.names.push(name.into());
        self
    }

    /// Whether everything is passed.
    pub fn passes_everything(&self) -> bool {
        self.inherit_all
    }

    /// Whether a variable of this name is inherited. Names compare exactly on Unix, and
    /// without case on Windows, where the environment ignores case.
    pub fn inherits(&self, name: &OsStr) -> bool {
        if self.inherit_all {
            return true;
        }
        let Some(name) = name.to_str() else { return false };
        self.names.iter().any(|pattern| {
            let (prefix, whole) = match pattern.strip_suffix('*') {
                Some(prefix) => (prefix, false),
                None => (pattern.as_str(), true),
            };
            let same = |a: &str, b: &str| if cfg!(windows) { a.eq_ignore_ascii_case(b) } else { a == b };
            if whole {
                same(name, prefix)
            } else {
                name.len() >= prefix.len()
                    && name.is_char_boundary(prefix.len())
                    && same(&name[..prefix.len()], prefix)
            }
        })
    }

    /// The variables of this process that pass.
    pub fn inherited(&self) -> Vec<(OsString, OsString)> {
        self.filter(std::env::vars_os())
    }

    /// The variables of `vars` that pass.
    pub fn filter(&self, vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
        vars.into_iter().filter(|(name, _)| self.inherits(name)).collect()
    }

    /// Clears `command`'s environment and sets the variables of this process that pass; set a
    /// child's own variables after this. (For a tokio command: `apply(command.as_std_mut())`.)
    pub fn apply(&self, command: &mut std::process::Command) {
        if !self.inherit_all {
            command.env_clear().envs(self.inherited());
        }
    }

    /// Reads the `environment` object of a settings file (`{"inherit": [...], "inheritAll":
    /// bool}`); a file without one gives [`EnvFilter::base`]. The error names the key at fault.
    pub fn from_settings(settings: &Value) -> Result<EnvFilter, EnvFilterError> {
        EnvFilter::read_settings(settings).map_err(EnvFilterError)
    }

    fn read_settings(settings: &Value) -> Result<EnvFilter, String> {
        let mut filter = EnvFilter::base();
        let Some(section) = settings.get("environment") else { return Ok(filter) };
        let Value::Object(section) = section else {
            return Err("`environment` must be an object with `inherit` and `inheritAll`".to_owned());
        };
        for (key, value) in section {
            match key.as_str() {
                "inherit" => {
                    let Value::Array(names) = value else {
                        return Err("`environment.inherit` must be an array of variable names".to_owned());
                    };
                    for (i, name) in names.iter().enumerate() {
                        match name.as_str() {
                            Some(name) if !name.is_empty() && !name.contains('=') && !name.contains('\0') => {
                                filter = filter.with(name);
                            }
                            _ => {
                                return Err(format!(
                                    "`environment.inherit[{i}]` must be a variable name (a trailing `*` matches a \
                                     prefix), found {name}"
                                ));
                            }
                        }
                    }
                }
                "inheritAll" => match value.as_bool() {
                    Some(all) => filter.inherit_all = all,
                    None => {
                        return Err(format!("`environment.inheritAll` must be true or false, found {value}"));
                    }
                },
                other => {
                    return Err(format!(
                        "unknown key `environment.{other}`; expected `inherit` or `inheritAll`"
                    ));
                }
            }
        }
        Ok(filter)
    }
}

/// An `environment` section of a settings file that cannot be used (from
/// [`EnvFilter::from_settings`]): its text names the key at fault and what is expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvFilterError(String);

impl std::fmt::Display for EnvFilterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EnvFilterError {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(names: &[&str]) -> Vec<(OsString, OsString)> {
        names.iter().map(|n| (OsString::from(n), OsString::from("v"))).collect()
    }

    fn names(kept: Vec<(OsString, OsString)>) -> Vec<String> {
        kept.into_iter().map(|(n, _)| n.into_string().unwrap()).collect()
    }

    #[test]
    fn the_base_list_keeps_what_programs_need_and_drops_secrets() {
        let all = vars(&[
            "PATH",
            "HOME",
            "LC_ALL",
            "LC_CTYPE",
            "ANTHROPIC_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "PATHX",
            "LC",
        ]);
        assert_eq!(names(EnvFilter::base().filter(all)), ["PATH", "HOME", "LC_ALL", "LC_CTYPE"]);
    }

    #[test]
    fn configured_names_and_prefixes_are_added() {
        let filter =
            EnvFilter::from_settings(&json!({"environment": {"inherit": ["AWS_PROFILE", "CARGO_*"]}}))
                .unwrap();
        let all = vars(&["AWS_PROFILE", "AWS_SECRET_ACCESS_KEY", "CARGO_HOME", "CARGO", "PATH"]);
        assert_eq!(names(filter.filter(all)), ["AWS_PROFILE", "CARGO_HOME", "PATH"]);
        let everything = EnvFilter::from_settings(&json!({"environment": {"inheritAll": true}})).unwrap();
        assert!(everything.passes_everything());
        assert_eq!(EnvFilter::from_settings(&json!({})).unwrap(), EnvFilter::base());
    }

    #[test]
    fn mistakes_name_the_key() {
        for (settings, expected) in [
            (json!({"environment": {"inherit": "X"}}), "`environment.inherit` must be an array"),
            (
                json!({"environment": {"inherit": ["A=B"]}}),
                "`environment.inherit[0]` must be a variable name",
            ),
            (json!({"environment": {"inheritAll": "yes"}}), "`environment.inheritAll` must be true or false"),
            (json!({"environment": {"pass": []}}), "unknown key `environment.pass`"),
        ] {
            let error = EnvFilter::from_settings(&settings).unwrap_err();
            assert!(error.to_string().contains(expected), "{error}");
        }
    }

    #[test]
    fn a_child_sees_only_what_passes() {
        // Cargo sets CARGO_MANIFEST_DIR for the tests it runs: an inherited variable off the list.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some(), "run the tests with cargo");
        let mut command = std::process::Command::new("sh");
        command.args(["-c", "env"]);
        EnvFilter::base().apply(&mut command);
        command.env("SET_BY_THE_CALLER", "1");
        let text = String::from_utf8(command.output().unwrap().stdout).unwrap();
        assert!(!text.lines().any(|l| l.starts_with("CARGO_MANIFEST_DIR=")), "{text}");
        assert!(text.lines().any(|l| l.starts_with("PATH=")), "{text}");
        assert!(text.lines().any(|l| l == "SET_BY_THE_CALLER=1"), "{text}");
        let mut all = std::process::Command::new("sh");
        all.args(["-c", "env"]);
        EnvFilter::inherit_all().apply(&mut all);
        let text = String::from_utf8(all.output().unwrap().stdout).unwrap();
        assert!(text.lines().any(|l| l.starts_with("CARGO_MANIFEST_DIR=")), "{text}");
    }
}
