//! Which of this process's environment variables the processes it starts inherit, and which
//! the configuration sets for them.
//!
//! Commands, hook commands and mounted stdio MCP servers get a filtered environment by
//! default: the variables of [`BASE_VARIABLES`] (what a program needs to find itself, its
//! home, its language and its terminal), plus the names the configuration adds, and nothing
//! else, so that API keys and tokens in the agent's environment do not reach them. The
//! variables the configuration sets (Claude Code's `env`) come on top; then those a caller
//! sets explicitly (an `mcpServers` entry's `env`, a command's own, the sandbox's `TMPDIR` and
//! proxy variables), which win.
//!
//! In a settings file:
//!
//! ```json
//! {"environment": {"inherit": ["AWS_PROFILE", "CARGO_*"], "inheritAll": false},
//!  "env": {"RUST_BACKTRACE": "1"}}
//! ```
//!
//! `inherit` adds names (a trailing `*` matches a prefix); `"inheritAll": true` passes the
//! whole environment, as before there was a filter; `exclude` leaves names out by pattern;
//! `env` sets variables, as it does for a Claude Code session. (tool-settings reads the file;
//! `tool_permissions::environment` builds the filter from it.)

use std::ffi::{OsStr, OsString};

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

/// Which inherited variables a child process gets ([`BASE_VARIABLES`] and the names added, or
/// everything), and the variables set on top.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvFilter {
    inherit_all: bool,
    names: Vec<String>,
    exclude: Vec<String>,
    set: Vec<(String, String)>,
}

impl Default for EnvFilter {
    fn default() -> Self {
        EnvFilter {
            inherit_all: false,
            names: BASE_VARIABLES.iter().map(|n| (*n).to_owned()).collect(),
            exclude: Vec::new(),
            set: Vec::new(),
        }
    }
}

impl EnvFilter {
    /// [`BASE_VARIABLES`] only.
    pub fn base() -> Self {
        Self::default()
    }

    /// The whole environment, unfiltered.
    pub fn inherit_all() -> Self {
        EnvFilter { inherit_all: true, names: Vec::new(), exclude: Vec::new(), set: Vec::new() }
    }

    /// Adds a name, a prefix ending in `*`, or a pattern with `*` or `?` elsewhere (matched as
    /// [`exclude`](Self::exclude)'s are, without case: codex's `include_only`, `*_TOKEN`).
    #[must_use]
    pub fn with(mut self, name: impl Into<String>) -> Self {
        self.names.push(name.into());
        self
    }

    /// Leaves out the inherited variables whose names match `pattern`, even those the base
    /// list or [`inherit_all`](Self::inherit_all) would pass: `*` matches any run of
    /// characters and `?` one, without case (codex's `exclude`: `*KEY*`, `AWS_*`).
    #[must_use]
    pub fn exclude(mut self, pattern: impl Into<String>) -> Self {
        self.exclude.push(pattern.into());
        self
    }

    /// Sets a variable on top of what is inherited (replacing one of that name set before).
    #[must_use]
    pub fn set(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let name = name.into();
        self.set.retain(|(n, _)| *n != name);
        self.set.push((name, value.into()));
        self
    }

    /// The variables set on top of what is inherited, in the order set.
    pub fn variables(&self) -> &[(String, String)] {
        &self.set
    }

    /// Whether everything is passed.
    pub fn passes_everything(&self) -> bool {
        self.inherit_all && self.exclude.is_empty()
    }

    /// Whether a variable of this name is inherited. Names compare exactly on Unix, and
    /// without case on Windows, where the environment ignores case.
    pub fn inherits(&self, name: &OsStr) -> bool {
        let Some(text) = name.to_str() else { return self.inherit_all && self.exclude.is_empty() };
        if self.exclude.iter().any(|pattern| wildcard_match(pattern, text)) {
            return false;
        }
        if self.inherit_all {
            return true;
        }
        let name = text;
        self.names.iter().any(|pattern| {
            let head = pattern.strip_suffix('*').unwrap_or(pattern);
            if head.contains(['*', '?']) {
                return wildcard_match(pattern, name);
            }
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

    /// Clears `command`'s environment and sets the variables of this process that pass, then
    /// the [variables set](Self::set); set a child's own variables after this. (For a tokio
    /// command: `apply(command.as_std_mut())`.)
    pub fn apply(&self, command: &mut std::process::Command) {
        if !self.inherit_all || !self.exclude.is_empty() {
            command.env_clear().envs(self.inherited());
        }
        command.envs(self.set.iter().map(|(name, value)| (name, value)));
    }
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters and `?` one,
/// ASCII case ignored.
fn wildcard_match(pattern: &str, name: &str) -> bool {
    let (pattern, name): (Vec<char>, Vec<char>) = (
        pattern.chars().map(|c| c.to_ascii_uppercase()).collect(),
        name.chars().map(|c| c.to_ascii_uppercase()).collect(),
    );
    // The classic two-pointer match with backtracking to the last `*`.
    let (mut p, mut n, mut star, mut resume) = (0, 0, None, 0);
    while n < name.len() {
        if p < pattern.len() && (pattern[p] == '?' || pattern[p] == name[n]) {
            p += 1;
            n += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some(p);
            resume = n;
            p += 1;
        } else if let Some(s) = star {
            p = s + 1;
            resume += 1;
            n = resume;
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn patterns_with_a_wildcard_elsewhere_are_matched_as_codex_matches_them() {
        let filter = EnvFilter::default().with("*_X").with("A?C");
        let kept = names(filter.filter(vars(&["A_X", "b_x", "ABC", "AXX", "X"])));
        assert!(kept.contains(&"A_X".to_owned()) && kept.contains(&"b_x".to_owned()), "{kept:?}");
        assert!(kept.contains(&"ABC".to_owned()) && !kept.contains(&"AXX".to_owned()), "{kept:?}");
    }

    #[test]
    fn configured_names_and_prefixes_are_added() {
        let filter = EnvFilter::base().with("AWS_PROFILE").with("CARGO_*");
        let all = vars(&["AWS_PROFILE", "AWS_SECRET_ACCESS_KEY", "CARGO_HOME", "CARGO", "PATH"]);
        assert_eq!(names(filter.filter(all)), ["AWS_PROFILE", "CARGO_HOME", "PATH"]);
        assert!(EnvFilter::inherit_all().passes_everything());
        assert!(!EnvFilter::inherit_all().exclude("*KEY*").passes_everything());
    }

    #[test]
    fn the_variables_env_sets_come_on_top_of_what_is_inherited_and_below_the_callers() {
        let filter = EnvFilter::base().set("HOME", "/set/home").set("GREETING", "hi").set("MINE", "settings");
        assert_eq!(filter.variables().len(), 3);
        for base in [filter.clone(), EnvFilter { inherit_all: true, ..filter }] {
            let mut command = std::process::Command::new("/bin/sh");
            command.args(["-c", "env"]);
            base.apply(&mut command);
            command.env("MINE", "caller");
            let text = String::from_utf8(command.output().unwrap().stdout).unwrap();
            for line in ["HOME=/set/home", "GREETING=hi", "MINE=caller"] {
                assert!(text.lines().any(|l| l == line), "{line} in {text}");
            }
        }
    }

    #[test]
    fn excluded_patterns_leave_out_even_what_would_pass() {
        assert!(wildcard_match("*KEY*", "openai_api_key"));
        assert!(wildcard_match("AWS_*", "AWS_SECRET_ACCESS_KEY"));
        assert!(wildcard_match("A?C", "abc") && !wildcard_match("A?C", "ac"));
        assert!(wildcard_match("*", "") && !wildcard_match("*X", "Y"));
        assert!(
            wildcard_match("*TOKEN*TOKEN", "A_TOKEN_B_TOKEN") && !wildcard_match("*TOKEN*TOKEN", "TOKEN_B")
        );
        let filter = EnvFilter::inherit_all().exclude("*KEY*").exclude("*SECRET*").exclude("HOME");
        let all = vars(&["PATH", "HOME", "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "CARGO_HOME"]);
        assert_eq!(names(filter.filter(all.clone())), ["PATH", "CARGO_HOME"]);
        assert_eq!(names(EnvFilter::base().exclude("PATH").filter(all)), ["HOME", "CARGO_HOME"]);
        // Applied to a real child with the whole environment otherwise inherited.
        let mut command = std::process::Command::new("/bin/sh");
        command.args(["-c", "env"]);
        EnvFilter::inherit_all().exclude("CARGO_MANIFEST_*").apply(&mut command);
        let text = String::from_utf8(command.output().unwrap().stdout).unwrap();
        assert!(!text.lines().any(|l| l.starts_with("CARGO_MANIFEST_DIR=")), "{text}");
        assert!(text.lines().any(|l| l.starts_with("CARGO_PKG_NAME=")), "{text}");
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
