//! Verification after an edit: the formatter or check command configured for a file's extension, run once the file is written.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt as _;
use tool_runtime::{Content, ToolOutput};

use crate::Workspace;
use crate::editing::file_versions::FileVersions;
use crate::fs::ops::{Operations, Scope, Target};
use crate::shell::process::{ShellInput, ShellProcess, ShellRequest};

/// The environment variable that holds the path of the file being verified; the command line
/// refers to it (quoted) wherever [`Verify::FILE`] stands, so the path never becomes shell text.
pub const FILE_VAR: &str = "TOOLS_VERIFY_FILE";

/// How much of a check's output a result shows, in bytes (the start of it).
pub const MAX_OUTPUT_BYTES: usize = 4096;

/// A command that checks (or formats) a file after `edit`, `multi_edit`, `write` or
/// `apply_patch` changed it, for the files with one of its extensions.
///
/// The command is a program and its arguments, not a shell string; every [`Verify::FILE`]
/// (`{file}`) in an argument is replaced by the path of the changed file (`./` and the path
/// relative to the root inside the workspace, absolute outside it), passed to the program as
/// is, whatever characters the name holds. The command runs in the workspace root, in the
/// workspace's sandbox, like a `bash` command; it is killed at its time limit
/// ([`Verify::DEFAULT_TIMEOUT`] unless [`Verify::timeout`] says otherwise). Its outcome (passed,
/// failed with its exit code and the start of its output, or timed out) is added to the edit's
/// result, in the text and in the metadata `verification`; the edit stays applied whatever the
/// outcome. A check that changes the file (a formatter) is reported as such, and the session's
/// [stale-write guard](crate::editing::file_versions) takes the new content as known.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// use std::time::Duration;
/// use tools_std::Workspace;
/// use tools_std::verify::Verify;
///
/// let ws = Workspace::new(".")?.with_verifiers(vec![
///     Verify::new(["rs"], ["rustfmt", "--check", "--edition", "2024", Verify::FILE]),
///     Verify::new(["py", "pyi"], ["ruff", "check", Verify::FILE]).timeout(Duration::from_secs(5)),
/// ]);
/// # let _ = ws; Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verify {
    extensions: Vec<String>,
    command: Vec<String>,
    timeout: Duration,
}

impl Verify {
    /// The placeholder for the changed file's path in the command's arguments.
    pub const FILE: &'static str = "{file}";
    /// The time limit of a command unless [`Verify::timeout`] sets another.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

    /// A check for the files whose extension is one of `extensions` (without the dot, `rs`;
    /// matched exactly), running `command` (a program, then its arguments).
    pub fn new<E, C>(extensions: E, command: C) -> Verify
    where
        E: IntoIterator,
        E::Item: Into<String>,
        C: IntoIterator,
        C::Item: Into<String>,
    {
        Verify {
            extensions: extensions
                .into_iter()
                .map(|e| {
                    let e: String = e.into();
                    e.trim_start_matches('.').to_owned()
                })
                .collect(),
            command: command.into_iter().map(Into::into).collect(),
            timeout: Verify::DEFAULT_TIMEOUT,
        }
    }

    /// The same check with the time limit `limit`, after which the command is killed and the
    /// result says it timed out.
    pub fn timeout(mut self, limit: Duration) -> Verify {
        self.timeout = limit;
        self
    }

    /// The extensions of the files this check is for (without the dot).
    pub fn extensions(&self) -> impl Iterator<Item = &str> {
        self.extensions.iter().map(String::as_str)
    }

    /// This check without the extensions `others` (another check's), or `None` when none is
    /// left.
    pub fn without_extensions(mut self, others: &[&str]) -> Option<Verify> {
        self.extensions.retain(|ext| !others.contains(&ext.as_str()));
        (!self.extensions.is_empty()).then_some(self)
    }

    /// Whether this check is for `path` (by its extension).
    pub fn matches(&self, path: &Path) -> bool {
        path.extension().and_then(|e| e.to_str()).is_some_and(|ext| self.extensions.iter().any(|x| x == ext))
    }

    /// The command line for `bash -c`: every argument single-quoted, with the placeholder
    /// replaced by a quoted reference to [`FILE_VAR`].
    fn shell_line(&self) -> String {
        let mut line = String::new();
        for (i, arg) in self.command.iter().enumerate() {
            if i > 0 {
                line.push(' ');
            }
            if arg.is_empty() {
                line.push_str("''");
                continue;
            }
            for (j, piece) in arg.split(Verify::FILE).enumerate() {
                if j > 0 {
                    line.push_str(&format!("\"${FILE_VAR}\""));
                }
                if !piece.is_empty() {
                    line.push('\'');
                    line.push_str(&piece.replace('\'', r"'\''"));
                    line.push('\'');
                }
            }
        }
        line
    }

    /// The command as the result names it, with the file's path in place.
    fn shown(&self, file: &str) -> String {
        self.command.iter().map(|arg| arg.replace(Verify::FILE, file)).collect::<Vec<_>>().join(" ")
    }

    /// The checks of a settings file's `verify` object: each key names one or more extensions
    /// (`"rs"`, `"py,pyi"`), each value is the command, as a list of strings (a program, then
    /// its arguments, [`Verify::FILE`] for the file), or an object with that list as
    /// `"command"` and a time limit in seconds as `"timeout"`:
    ///
    /// ```
    /// use tools_std::verify::Verify;
    ///
    /// let settings = serde_json::json!({
    ///     "rs": ["rustfmt", "--check", "--edition", "2024", "{file}"],
    ///     "py,pyi": {"command": ["ruff", "check", "{file}"], "timeout": 5}
    /// });
    /// let checks = Verify::from_settings(&settings).unwrap();
    /// assert!(checks.iter().any(|v| v.matches(std::path::Path::new("src/main.rs"))));
    /// assert!(Verify::from_settings(&serde_json::json!({"rs": "cargo check"})).is_err());
    /// ```
    ///
    /// An extension named twice, an empty command, a time limit that is not a number of
    /// seconds from 0.1 to 3600, and any other key are refused with a sentence naming the
    /// entry.
    pub fn from_settings(value: &Value) -> Result<Vec<Verify>, ConfigError> {
        Verify::settings_checks(value).map_err(ConfigError)
    }

    fn settings_checks(value: &Value) -> Result<Vec<Verify>, String> {
        let Value::Object(entries) = value else {
            return Err(
                "`verify` must be an object whose keys are file extensions (`\"rs\"`, `\"py,pyi\"`) and \
                        whose values are commands (`[\"rustfmt\", \"--check\", \"{file}\"]`)"
                    .to_owned(),
            );
        };
        let mut checks: Vec<Verify> = Vec::new();
        for (key, entry) in entries {
            let extensions = extensions(key).map_err(|e| format!("`verify` key {key:?}: {e}"))?;
            let (command, timeout) = match entry {
                Value::Array(_) => (entry, None),
                Value::Object(fields) => {
                    if let Some(other) = fields.keys().find(|k| *k != "command" && *k != "timeout") {
                        return Err(format!(
                            "`verify.{key}` has an unknown key {other:?}; expected `command` and `timeout`"
                        ));
                    }
                    let command = fields.get("command").ok_or_else(|| {
                        format!("`verify.{key}` has no `command` (a list: program, then arguments)")
                    })?;
                    (command, fields.get("timeout"))
                }
                _ => {
                    return Err(format!(
                        "`verify.{key}` must be a command as a list of strings (`[\"rustfmt\", \"--check\", \
                         \"{{file}}\"]`) or an object with `command` and `timeout`"
                    ));
                }
            };
            let command = words(command).map_err(|e| format!("`verify.{key}.command`: {e}"))?;
            let mut check = Verify::new(extensions, command);
            if let Some(timeout) = timeout {
                check.timeout = seconds(timeout).map_err(|e| format!("`verify.{key}.timeout`: {e}"))?;
            }
            for ext in &check.extensions {
                if let Some(earlier) = checks.iter().find(|c| c.extensions.contains(ext)) {
                    return Err(format!(
                        "`verify`: the extension {ext:?} is named twice (for `{}` and `{}`); name each extension once",
                        earlier.command.join(" "),
                        check.command.join(" ")
                    ));
                }
            }
            checks.push(check);
        }
        Ok(checks)
    }

    /// One check from a command-line value `EXT=COMMAND` (`rs=rustfmt --check {file}`,
    /// `py,pyi=ruff check {file}`): the extensions before the first `=`, the command after it,
    /// split into words as a shell would (single and double quotes group, a backslash escapes),
    /// though no shell runs it. The time limit is [`Verify::DEFAULT_TIMEOUT`].
    ///
    /// ```
    /// use tools_std::verify::Verify;
    ///
    /// let check = Verify::from_flag("rs=rustfmt --config 'max_width=100' {file}").unwrap();
    /// assert_eq!(check, Verify::new(["rs"], ["rustfmt", "--config", "max_width=100", "{file}"]));
    /// assert!(Verify::from_flag("rustfmt {file}").is_err());
    /// ```
    pub fn from_flag(text: &str) -> Result<Verify, ConfigError> {
        Verify::flag_check(text).map_err(ConfigError)
    }

    fn flag_check(text: &str) -> Result<Verify, String> {
        let Some((keys, command)) = text.split_once('=') else {
            return Err(format!(
                "{text:?} is not EXT=COMMAND: name the file extensions, then `=`, then the command (`rs=rustfmt \
                 --check {{file}}`)"
            ));
        };
        let extensions = extensions(keys).map_err(|e| format!("{text:?}: {e}"))?;
        let command = split_words(command).map_err(|e| format!("{text:?}: {e}"))?;
        if command.is_empty() {
            return Err(format!("{text:?}: the command after `=` is empty"));
        }
        Ok(Verify::new(extensions, command))
    }
}

/// A check's configuration that cannot be used (a settings entry, an `EXT=COMMAND` flag): the
/// text names the entry, what is wrong and what is expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// The extensions of a settings key or a flag: comma-separated, a leading dot dropped.
fn extensions(keys: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for key in keys.split(',') {
        let ext = key.trim().trim_start_matches('.');
        if ext.is_empty() {
            return Err(
                "an extension is empty; name extensions without the dot, separated by commas (`rs,toml`)"
                    .to_owned(),
            );
        }
        if ext.contains(['.', '/', '\\', '=']) || ext.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "{ext:?} is not a file extension (the part of a name after its last dot, such as `rs`)"
            ));
        }
        out.push(ext.to_owned());
    }
    Ok(out)
}

/// A command as a list of strings, the program first.
fn words(value: &Value) -> Result<Vec<String>, String> {
    let Value::Array(items) = value else {
        return Err("must be a list of strings: the program, then its arguments".to_owned());
    };
    let words: Vec<String> = items
        .iter()
        .map(|item| item.as_str().map(str::to_owned))
        .collect::<Option<_>>()
        .ok_or("must be a list of strings: the program, then its arguments")?;
    match words.first() {
        None => Err("is empty; give the program, then its arguments".to_owned()),
        Some(program) if program.trim().is_empty() => {
            Err("names no program (its first string is blank)".to_owned())
        }
        Some(_) => Ok(words),
    }
}

fn seconds(value: &Value) -> Result<Duration, String> {
    match value.as_f64() {
        Some(secs) if (0.1..=3600.0).contains(&secs) => Ok(Duration::from_secs_f64(secs)),
        _ => Err(format!("{value} is not a time limit in seconds from 0.1 to 3600")),
    }
}

/// Splits `text` into words as a POSIX shell would, without expanding anything: blanks
/// separate words, single quotes keep everything, double quotes keep everything but `\"` and
/// `\\`, a backslash outside quotes keeps the next character.
fn split_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if let Some(done) = word.take() {
                    words.push(done);
                }
            }
            '\'' => {
                let current = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => current.push(c),
                        None => return Err("a single quote is not closed".to_owned()),
                    }
                }
            }
            '"' => {
                let current = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => current.push(c),
                            Some(c) => {
                                current.push('\\');
                                current.push(c);
                            }
                            None => return Err("a double quote is not closed".to_owned()),
                        },
                        Some(c) => current.push(c),
                        None => return Err("a double quote is not closed".to_owned()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err("it ends with a lone backslash".to_owned()),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// How one check ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Status {
    Passed,
    Failed,
    TimedOut,
    /// It could not be started (the sandbox, a path that is not text).
    Error(String),
}

struct Outcome {
    display: String,
    command: String,
    status: Status,
    exit_code: Option<i32>,
    signal: Option<i32>,
    output: String,
    timeout: Duration,
    /// The check changed the file (a formatter): what the session knows of it is updated.
    changed_file: bool,
}

impl Outcome {
    fn metadata(&self) -> Value {
        let status = match &self.status {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::TimedOut => "timed_out",
            Status::Error(_) => "error",
        };
        let mut value = json!({
            "path": self.display,
            "command": self.command,
            "status": status,
            "exit_code": self.exit_code,
            "output": self.output,
            "timed_out": self.status == Status::TimedOut,
            "timeout_secs": self.timeout.as_secs_f64(),
            "changed_file": self.changed_file,
        });
        if let Status::Error(message) = &self.status {
            value["error"] = json!(message);
        }
        value
    }

    fn text(&self) -> String {
        let command = &self.command;
        let mut text = match &self.status {
            Status::Passed => format!("Check `{command}` passed."),
            Status::Failed => {
                let how = match (self.exit_code, self.signal) {
                    (Some(code), _) => format!("with exit code {code}"),
                    (None, Some(signal)) => format!("ended by signal {signal}"),
                    (None, None) => "with no exit code".to_owned(),
                };
                format!("Check `{command}` failed {how} (the edit of {} is applied).", self.display)
            }
            Status::TimedOut => format!(
                "Check `{command}` timed out: it did not finish within its limit of {} and was killed (the edit \
                 of {} is applied; its check has no outcome).",
                tool_runtime::words::duration(self.timeout),
                self.display
            ),
            Status::Error(message) => {
                format!(
                    "Check `{command}` could not run: {message} (the edit of {} is applied).",
                    self.display
                )
            }
        };
        if self.changed_file {
            text.push_str(&format!(" It changed {}: read it again before editing it.", self.display));
        }
        if self.status != Status::Passed && !self.output.is_empty() {
            text.push_str(" Its output:\n");
            text.push_str(&self.output);
        }
        text
    }
}

/// Runs the checks for the files a call changed (`files`: the target and how the result names
/// it) and adds their outcomes to `output`: a paragraph of text each, and the metadata
/// `verification` (an object when `single`, a list otherwise). Files no check matches add
/// nothing.
pub(crate) async fn after_edit(
    ws: &Workspace,
    versions: &std::sync::Arc<FileVersions>,
    files: &[(Target, String)],
    single: bool,
    mut output: ToolOutput,
) -> ToolOutput {
    if ws.verifiers().is_empty() {
        return output;
    }
    let mut outcomes = Vec::new();
    for (target, display) in files {
        let Some(verify) = ws.verifiers().iter().find(|v| v.matches(target.path())) else {
            continue;
        };
        let before = content(ws, target).await;
        let mut outcome = run(ws, verify, target, display).await;
        let after = content(ws, target).await;
        if after != before {
            outcome.changed_file = true;
            match after {
                Some(bytes) => versions.saw(target, &bytes),
                None => versions.forget(target),
            }
        }
        outcomes.push(outcome);
    }
    if outcomes.is_empty() {
        return output;
    }
    // A check that passed is a paragraph of the result; one that did not is a notice, which a
    // script's caller also reads (`ToolOutput::with_notice`).
    let (passed, not): (Vec<_>, Vec<_>) =
        outcomes.iter().partition(|outcome| outcome.status == Status::Passed);
    let paragraphs = passed.iter().map(|outcome| outcome.text()).collect::<Vec<_>>().join("\n\n");
    match output.content.iter_mut().find_map(|c| match c {
        Content::Text { text } => Some(text),
        Content::Image { .. } => None,
    }) {
        _ if paragraphs.is_empty() => {}
        Some(text) => {
            text.push_str("\n\n");
            text.push_str(&paragraphs);
        }
        None => output.content.push(Content::text(paragraphs)),
    }
    for outcome in not {
        output.add_notice(outcome.text());
    }
    let metadata = if single && outcomes.len() == 1 {
        outcomes[0].metadata()
    } else {
        Value::Array(outcomes.iter().map(Outcome::metadata).collect())
    };
    output.with_metadata("verification", metadata)
}

/// What `target` holds now (`None`: absent or unreadable).
async fn content(ws: &Workspace, target: &Target) -> Option<Vec<u8>> {
    let target = target.clone();
    ws.blocking(move |ops: &dyn Operations| {
        let mut bytes = Vec::new();
        let file = ops.open(&target).ok()?;
        std::io::Read::read_to_end(
            &mut std::io::Read::take(file, crate::editing::text_file::MAX_EDIT_BYTES + 1),
            &mut bytes,
        )
        .ok()?;
        Some(bytes)
    })
    .await
    .ok()
    .flatten()
}

/// The path the command receives: `./` and the path beneath the root (so a name starting with
/// `-` is never taken for an option), or the absolute path outside it.
fn argument(ws: &Workspace, target: &Target) -> PathBuf {
    match target.scope() {
        Scope::Workspace => Path::new(".").join(target.path()),
        Scope::Outside => ws.absolute(target),
    }
}

async fn run(ws: &Workspace, verify: &Verify, target: &Target, display: &str) -> Outcome {
    let argument = argument(ws, target);
    let mut outcome = Outcome {
        display: display.to_owned(),
        command: verify.shown(&argument.to_string_lossy()),
        status: Status::Passed,
        exit_code: None,
        signal: None,
        output: String::new(),
        timeout: verify.timeout,
        changed_file: false,
    };
    let Some(file) = argument.to_str() else {
        outcome.status = Status::Error("the file's path is not valid UTF-8".to_owned());
        return outcome;
    };
    let sandbox = match ws.sandbox() {
        Ok(sandbox) => sandbox,
        Err(e) => {
            outcome.status = Status::Error(format!("the sandbox is unavailable: {e}"));
            return outcome;
        }
    };
    let request = ShellRequest {
        command: verify.shell_line(),
        cwd: ws.root().to_path_buf(),
        env: vec![(FILE_VAR.to_owned(), file.to_owned())],
        input: ShellInput::Null,
        sandbox: sandbox.policy().is_enforced().then(|| sandbox.clone()),
        shell: Some(ws.shell()),
    };
    let ShellProcess { mut output, mut control, .. } = match ws.operations().spawn_shell(&request) {
        Ok(process) => process,
        Err(e) => {
            outcome.status = Status::Error(format!("it could not be started: {e}"));
            return outcome;
        }
    };
    let handle = control.handle();
    let mut kept = Vec::new();
    let mut total = 0usize;
    let mut exit = None;
    let work = async {
        let read = async {
            let mut block = [0u8; 8192];
            loop {
                match output.read(&mut block).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        total += n;
                        let room = MAX_OUTPUT_BYTES.saturating_sub(kept.len());
                        kept.extend_from_slice(&block[..n.min(room)]);
                    }
                }
            }
        };
        let wait = async {
            exit = Some(control.wait().await);
            // What it left running would hold the output open: the read ends once it is gone.
            if let Some(handle) = &handle {
                let _ = handle.kill_all();
            }
        };
        tokio::join!(read, wait);
    };
    let finished = tokio::time::timeout(verify.timeout, work).await.is_ok();
    if !finished {
        let _ = control.kill_all();
        if let Some(handle) = &handle {
            let _ = handle.kill_all();
        }
    }
    let mut text = String::from_utf8_lossy(&kept).trim_end().to_owned();
    if total > kept.len() {
        text.push_str(&format!("\n[... {} more bytes of output not shown]", total - kept.len()));
    }
    outcome.output = text;
    outcome.status = match (finished, exit) {
        (false, _) => Status::TimedOut,
        (true, Some(Ok(exit))) => {
            outcome.exit_code = exit.code;
            outcome.signal = exit.signal;
            if exit.code == Some(0) { Status::Passed } else { Status::Failed }
        }
        (true, Some(Err(e))) => Status::Error(format!("it could not be waited for: {e}")),
        (true, None) => Status::Error("it ended without an exit status".to_owned()),
    };
    outcome
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::Verify;
    use crate::testing::Fixture;

    fn fixture(verifiers: Vec<Verify>) -> Fixture {
        Fixture::with_workspace(|ws| ws.with_verifiers(verifiers))
    }

    #[test]
    fn settings_entries_are_commands_or_objects_with_a_time_limit() {
        let checks = Verify::from_settings(&json!({
            "rs": ["rustfmt", "--check", "{file}"],
            ".py, pyi": {"command": ["ruff", "check", "{file}"], "timeout": 2.5},
        }))
        .unwrap();
        assert_eq!(
            checks,
            [
                Verify::new(["rs"], ["rustfmt", "--check", "{file}"]),
                Verify::new(["py", "pyi"], ["ruff", "check", "{file}"]).timeout(Duration::from_millis(2500)),
            ]
        );
    }

    #[test]
    fn settings_that_cannot_be_meant_are_refused_naming_the_entry() {
        let refused = |value: serde_json::Value| Verify::from_settings(&value).unwrap_err().to_string();
        assert_eq!(
            refused(json!({"rs": "cargo check"})),
            "`verify.rs` must be a command as a list of strings (`[\"rustfmt\", \"--check\", \"{file}\"]`) or an \
             object with `command` and `timeout`"
        );
        assert_eq!(
            refused(json!({"rs": []})),
            "`verify.rs.command`: is empty; give the program, then its arguments"
        );
        assert_eq!(
            refused(json!({"rs": ["", "x"]})),
            "`verify.rs.command`: names no program (its first string is blank)"
        );
        assert_eq!(
            refused(json!({"rs": {"command": ["x"], "timout": 3}})),
            "`verify.rs` has an unknown key \"timout\"; expected `command` and `timeout`"
        );
        assert_eq!(
            refused(json!({"rs": {"command": ["x"], "timeout": 0}})),
            "`verify.rs.timeout`: 0 is not a time limit in seconds from 0.1 to 3600"
        );
        assert_eq!(
            refused(json!({"rs": ["a"], "rs,toml": ["b"]})),
            "`verify`: the extension \"rs\" is named twice (for `a` and `b`); name each extension once"
        );
        assert_eq!(
            refused(json!({"tar.gz": ["x"]})),
            "`verify` key \"tar.gz\": \"tar.gz\" is not a file extension (the part of a name after its last dot, such as \
             `rs`)"
        );
        assert_eq!(
            refused(json!({"rs,": ["x"]})),
            "`verify` key \"rs,\": an extension is empty; name extensions without the dot, separated by commas (`rs,toml`)"
        );
        assert!(refused(json!(["rs"])).starts_with("`verify` must be an object"));
    }

    #[test]
    fn a_flag_is_extensions_then_a_command_split_as_a_shell_would() {
        assert_eq!(
            Verify::from_flag(r#"rs,toml=sh -c 'exit 3' "two words" a\ b "q\"d" {file}"#).unwrap(),
            Verify::new(["rs", "toml"], ["sh", "-c", "exit 3", "two words", "a b", "q\"d", "{file}"])
        );
        // Only the first `=` separates: the command may hold more.
        assert_eq!(
            Verify::from_flag("rs=rustfmt --config=max_width=100").unwrap(),
            Verify::new(["rs"], ["rustfmt", "--config=max_width=100"])
        );
        assert!(Verify::from_flag("rustfmt").unwrap_err().to_string().contains("is not EXT=COMMAND"));
        assert_eq!(
            Verify::from_flag("rs=  ").unwrap_err().to_string(),
            "\"rs=  \": the command after `=` is empty"
        );
        assert_eq!(
            Verify::from_flag("rs=sh -c 'x").unwrap_err().to_string(),
            "\"rs=sh -c 'x\": a single quote is not closed"
        );
        assert!(Verify::from_flag("my file=x").unwrap_err().to_string().contains("is not a file extension"));
    }

    #[tokio::test]
    async fn a_passing_check_is_reported_with_the_edit() {
        let fx = fixture(vec![Verify::new(["txt"], ["grep", "-q", "hello", Verify::FILE])]);
        fx.write("a.txt", "bye\n");
        let out = fx
            .call("edit", json!({"path": "a.txt", "old_string": "bye", "new_string": "hello"}))
            .await
            .unwrap();
        let text = out.text_content();
        assert!(text.ends_with("\n\nCheck `grep -q hello ./a.txt` passed."), "{text}");
        let meta = &out.metadata["verification"];
        assert_eq!(meta["status"], "passed");
        assert_eq!(meta["exit_code"], 0);
        assert_eq!(meta["timed_out"], false);
        assert_eq!(meta["command"], "grep -q hello ./a.txt");
    }

    #[tokio::test]
    async fn a_failing_check_shows_its_output_and_exit_code_and_keeps_the_edit() {
        let script = r#"echo "it's bad: $1" >&2; exit 3"#;
        let fx = fixture(vec![Verify::new([".txt"], ["sh", "-c", script, "sh", Verify::FILE])]);
        fx.write("b.txt", "one\n");
        let out = fx.call("write", json!({"path": "b.txt", "content": "two\n"})).await.unwrap();
        let text = out.text_content();
        assert!(
            text.ends_with(
                "failed with exit code 3 (the edit of b.txt is applied). Its output:\nit's bad: ./b.txt"
            ),
            "{text}"
        );
        assert_eq!(fx.read("b.txt"), b"two\n");
        let meta = &out.metadata["verification"];
        assert_eq!(meta["status"], "failed");
        assert_eq!(meta["exit_code"], 3);
        assert_eq!(meta["output"], "it's bad: ./b.txt");
        // The next call shows its own check only, not the failure before.
        let out = fx
            .call("edit", json!({"path": "b.txt", "old_string": "two", "new_string": "three"}))
            .await
            .unwrap();
        assert_eq!(out.text_content().matches("Check `").count(), 1, "{}", out.text_content());
    }

    #[tokio::test]
    async fn output_is_bounded() {
        let script = "yes 'a line of output' | head -c 100000; exit 1";
        let fx = fixture(vec![Verify::new(["txt"], ["sh", "-c", script])]);
        let out = fx.call("write", json!({"path": "c.txt", "content": "x"})).await.unwrap();
        let output = out.metadata["verification"]["output"].as_str().unwrap().to_owned();
        assert!(output.len() < super::MAX_OUTPUT_BYTES + 100, "{}", output.len());
        assert!(output.ends_with("more bytes of output not shown]"), "{output}");
    }

    #[tokio::test]
    async fn a_check_past_its_limit_is_killed_and_reported_as_timed_out() {
        let fx = fixture(vec![Verify::new(["txt"], ["sleep", "30"]).timeout(Duration::from_secs(1))]);
        fx.write("d.txt", "old\n");
        let started = Instant::now();
        let out = fx
            .call("edit", json!({"path": "d.txt", "old_string": "old", "new_string": "new"}))
            .await
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
        let text = out.text_content();
        assert!(
            text.contains(
                "Check `sleep 30` timed out: it did not finish within its limit of 1s and was killed"
            ),
            "{text}"
        );
        assert_eq!(fx.read("d.txt"), b"new\n");
        let meta = &out.metadata["verification"];
        assert_eq!(meta["status"], "timed_out");
        assert_eq!(meta["timed_out"], true);
        assert_eq!(meta["exit_code"], serde_json::Value::Null);
        // Killed, not left running.
        let fx = fixture(vec![
            Verify::new(["txt"], ["sh", "-c", "sleep 2; touch late"]).timeout(Duration::from_secs(1)),
        ]);
        let out = fx.call("write", json!({"path": "g.txt", "content": "x"})).await.unwrap();
        assert_eq!(out.metadata["verification"]["status"], "timed_out");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!fx.root().join("late").exists());
    }

    #[tokio::test]
    async fn what_a_check_leaves_running_does_not_hold_the_result() {
        let fx = fixture(vec![Verify::new(["txt"], ["sh", "-c", "sleep 30 & echo started"])]);
        let started = Instant::now();
        let out = fx.call("write", json!({"path": "e.txt", "content": "x"})).await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
        assert_eq!(out.metadata["verification"]["status"], "passed");
    }

    #[tokio::test]
    async fn a_path_with_spaces_quotes_and_a_substitution_reaches_the_command_as_is() {
        let script = r#"printf '%s|%s' "$1" "$2" > seen; test -f "$1""#;
        let fx = fixture(vec![Verify::new(["txt"], ["sh", "-c", script, "sh", Verify::FILE, "at={file}"])]);
        let name = "we ird $(touch pwned) `touch pwned2` 'q\".txt";
        let out = fx.call("write", json!({"path": name, "content": "x"})).await.unwrap();
        assert_eq!(out.metadata["verification"]["status"], "passed", "{}", out.text_content());
        let seen = String::from_utf8(fx.read("seen")).unwrap();
        assert_eq!(seen, format!("./{name}|at=./{name}"));
        assert!(!fx.root().join("pwned").exists() && !fx.root().join("pwned2").exists());
        // A name that starts with a dash is not taken for an option.
        let fx = fixture(vec![Verify::new(["txt"], ["cat", Verify::FILE])]);
        let out = fx.call("write", json!({"path": "-n.txt", "content": "x"})).await.unwrap();
        assert_eq!(out.metadata["verification"]["command"], "cat ./-n.txt");
        assert_eq!(out.metadata["verification"]["status"], "passed", "{}", out.text_content());
    }

    #[tokio::test]
    async fn a_formatter_that_changes_the_file_is_reported_and_the_next_edit_accepted() {
        let script = r#"printf 'formatted\n' > "$1""#;
        let fx = fixture(vec![Verify::new(["txt"], ["sh", "-c", script, "sh", Verify::FILE])]);
        fx.write("h.txt", "raw\n");
        let out = fx
            .call("edit", json!({"path": "h.txt", "old_string": "raw", "new_string": "raw2"}))
            .await
            .unwrap();
        assert!(out.text_content().ends_with("passed. It changed h.txt: read it again before editing it."));
        assert_eq!(out.metadata["verification"]["changed_file"], true);
        assert_eq!(fx.read("h.txt"), b"formatted\n");
        // The session knows the formatted text: an edit of it is not refused as stale.
        let out =
            fx.call("edit", json!({"path": "h.txt", "old_string": "formatted", "new_string": "x"})).await;
        assert!(out.is_ok(), "{:?}", out.err().map(|e| e.message().to_owned()));
    }

    #[tokio::test]
    async fn no_check_matches_no_verification() {
        let fx = fixture(vec![Verify::new(["txt"], ["false"])]);
        fx.write("f.md", "a\n");
        let out =
            fx.call("edit", json!({"path": "f.md", "old_string": "a", "new_string": "b"})).await.unwrap();
        assert!(!out.metadata.contains_key("verification"));
        assert!(!out.text_content().contains("Check"), "{}", out.text_content());
        // A name that merely ends in the extension's letters does not match either.
        let out = fx.call("write", json!({"path": "gtxt", "content": "x"})).await.unwrap();
        assert!(!out.metadata.contains_key("verification"));
    }

    #[tokio::test]
    async fn multi_edit_and_apply_patch_verify_the_files_they_changed() {
        let script = r#"case "$1" in *bad*) echo "bad: $1"; exit 1;; esac"#;
        let fx = fixture(vec![Verify::new(["txt"], ["sh", "-c", script, "sh", Verify::FILE])]);
        fx.write("m.txt", "a b\n");
        let out = fx
            .call(
                "multi_edit",
                json!({"path": "m.txt", "edits": [
                    {"old_string": "a", "new_string": "c"},
                    {"old_string": "b", "new_string": "d"}
                ]}),
            )
            .await
            .unwrap();
        assert_eq!(out.metadata["verification"]["status"], "passed");
        fx.write("gone.txt", "x\n");
        let patch = "*** Begin Patch\n*** Add File: good.txt\n+ok\n*** Add File: bad.txt\n+no\n*** Add File: \
                     notes.md\n+md\n*** Delete File: gone.txt\n*** End Patch";
        let out = fx.call("apply_patch", json!({"patch": patch})).await.unwrap();
        let list = out.metadata["verification"].as_array().unwrap();
        let seen: Vec<_> =
            list.iter().map(|v| (v["path"].as_str().unwrap(), v["status"].as_str().unwrap())).collect();
        assert_eq!(seen, [("good.txt", "passed"), ("bad.txt", "failed")]);
        let text = out.text_content();
        assert!(text.contains("Check `sh -c"), "{text}");
        assert!(text.contains("Its output:\nbad: ./bad.txt"), "{text}");
        assert_eq!(fx.read("bad.txt"), b"no\n");
    }
}
