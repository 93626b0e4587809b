//! External hook commands speaking Claude Code's `PreToolUse` / `PostToolUse` JSON: the event on
//! standard input; exit code 2 (reason on standard error) or a JSON decision on standard output.

use std::path::Path;
use std::process::Stdio;

use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::settings::HookCommand;

/// Run as `sh -c JOIN_THEN_RUN sh PROCS COMMAND`: joins the cgroup whose `cgroup.procs` is
/// `PROCS` (a builtin and a redirection: nothing is started before), then runs the hook.
#[cfg(target_os = "linux")]
const JOIN_THEN_RUN: &str = r#"{ printf 0 > "$1"; } 2>/dev/null; exec sh -c "$2""#;

/// At most this much of a hook's standard output and error is read.
const MAX_OUTPUT: u64 = 1024 * 1024;

/// What a hook process did.
struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// A `PreToolUse` hook's decision.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct PreDecision {
    /// `Some(Allow | Ask | Deny)` when the hook decided.
    pub(crate) decision: Option<PreVerdict>,
    /// `updatedInput`: the arguments to use instead.
    pub(crate) updated_input: Option<Value>,
}

#[derive(Debug, PartialEq)]
pub(crate) enum PreVerdict {
    Allow,
    Ask(String),
    Deny(String),
}

/// A `PostToolUse` hook's answer: feedback for the model, and whether it flags a problem.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct PostFeedback {
    pub(crate) blocked: Option<String>,
    pub(crate) context: Option<String>,
}

impl HookCommand {
    /// Runs the command with `event` on its standard input, in a process group of its own (in
    /// `sandbox` when one is given). When it exits, passes its time limit, or the returned future
    /// is dropped, every process it started is killed with it (`process_tree`, as for `bash`): a
    /// hook is a check, and what it leaves running (a `setsid` child, say) would otherwise
    /// outlive it, holding its output open until the time limit.
    async fn run(
        &self,
        event: &Value,
        cwd: &Path,
        sandbox: Option<&tool_sandbox::Sandbox>,
    ) -> Result<Finished, String> {
        let marker = tool_sandbox::process_tree::new_marker();
        let mut command = tokio::process::Command::new("sh");
        #[cfg(target_os = "linux")]
        let cgroup = tool_sandbox::process_tree::Cgroup::create();
        #[cfg(target_os = "linux")]
        match &cgroup {
            // The shell moves itself into the cgroup before it starts anything, then becomes
            // the hook's shell; where it may not, the hook runs all the same.
            Some(cgroup) => {
                command.arg("-c").arg(JOIN_THEN_RUN).arg("sh").arg(cgroup.procs_path()).arg(&self.command);
            }
            None => {
                command.arg("-c").arg(&self.command);
            }
        }
        #[cfg(not(target_os = "linux"))]
        command.arg("-c").arg(&self.command);
        self.environment.apply(command.as_std_mut());
        command
            .current_dir(cwd)
            // Where Claude Code's hooks find the project (`"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh`).
            .env("CLAUDE_PROJECT_DIR", cwd)
            .env(tool_sandbox::process_tree::MARKER_VAR, &marker)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // The placeholders of absent protected names are held until the hook and what it
        // started are gone (the end of this function).
        let _placeholders = match sandbox {
            Some(sandbox) => Some(
                sandbox
                    .apply_holding(command.as_std_mut(), cwd)
                    .map_err(|e| format!("could not be sandboxed: {e}"))?,
            ),
            None => None,
        };
        let mut wrapped = CommandWrap::from(command);
        wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
        let mut child = wrapped.spawn().map_err(|e| format!("could not be started: {e}"))?;
        #[cfg(target_os = "linux")]
        let tree = KillTree::new(child.id(), &marker, cgroup);
        #[cfg(not(target_os = "linux"))]
        let tree = KillTree::new(child.id(), &marker);
        let input = serde_json::to_vec(event).unwrap_or_default();
        let stdin = child.stdin().take();
        let stdout = child.stdout().take();
        let stderr = child.stderr().take();
        let work = async {
            let write = async move {
                if let Some(mut stdin) = stdin {
                    // A hook that does not read its input closes the pipe early: that is fine.
                    let _ = stdin.write_all(&input).await;
                }
            };
            let wait = async {
                let status = child.wait().await;
                // What it left running would hold its output open: the reads end once it is gone.
                tree.kill_once();
                status
            };
            let (_, stdout, stderr, status) =
                tokio::join!(write, read_capped(stdout), read_capped(stderr), wait);
            (stdout, stderr, status)
        };
        match tokio::time::timeout(self.timeout, work).await {
            Err(_) => {
                tree.kill_once();
                Err(format!(
                    "did not finish within its time limit of {} and was killed",
                    tool_core::words::duration(self.timeout)
                ))
            }
            Ok((_, _, Err(e))) => Err(format!("could not be waited for: {e}")),
            Ok((stdout, stderr, Ok(status))) => Ok(Finished { code: status.code(), stdout, stderr }),
        }
    }

    /// Runs a `PreToolUse` hook: `Err` is a failure of the hook (it crashed, timed out, or said
    /// something that is not a decision).
    pub(crate) async fn pre_tool_use(
        &self,
        event: &Value,
        cwd: &Path,
        sandbox: Option<&tool_sandbox::Sandbox>,
    ) -> Result<PreDecision, String> {
        let finished = self.run(event, cwd, sandbox).await?;
        match finished.code {
            Some(0) => parse_pre(&finished.stdout),
            Some(2) => Ok(PreDecision {
                decision: Some(PreVerdict::Deny(reason_or(
                    &finished.stderr,
                    "the hook blocked the call (exit code 2)",
                ))),
                updated_input: None,
            }),
            code => Err(failed(code, &finished.stderr)),
        }
    }

    /// Runs a `PostToolUse` hook; `Err` is a failure of the hook.
    pub(crate) async fn post_tool_use(
        &self,
        event: &Value,
        cwd: &Path,
        sandbox: Option<&tool_sandbox::Sandbox>,
    ) -> Result<PostFeedback, String> {
        let finished = self.run(event, cwd, sandbox).await?;
        match finished.code {
            Some(0) => parse_post(&finished.stdout),
            Some(2) => Ok(PostFeedback {
                blocked: Some(reason_or(&finished.stderr, "the hook reported a problem (exit code 2)")),
                context: None,
            }),
            code => Err(failed(code, &finished.stderr)),
        }
    }
}

impl HookCommand {
    /// Runs a `SessionStart`, `SessionEnd` or `Notification` hook, whose answer decides nothing: `Err` when it
    /// failed (exit code other than 0, a crash, its time limit), with what it said.
    pub(crate) async fn session_event(
        &self,
        event: &Value,
        cwd: &Path,
        sandbox: Option<&tool_sandbox::Sandbox>,
    ) -> Result<(), String> {
        let finished = self.run(event, cwd, sandbox).await?;
        match finished.code {
            Some(0) => Ok(()),
            code => Err(failed(code, &finished.stderr)),
        }
    }
}

/// A hook's processes, killed when this is dropped (the call abandoned) or asked to.
struct KillTree {
    #[cfg(target_os = "linux")]
    tree: Option<tool_sandbox::process_tree::Tree>,
    /// The hook's process group, for systems without `/proc`.
    #[cfg(all(unix, not(target_os = "linux")))]
    group: Option<i32>,
    killed: std::sync::atomic::AtomicBool,
}

impl KillTree {
    #[cfg(target_os = "linux")]
    fn new(pid: Option<u32>, marker: &str, cgroup: Option<tool_sandbox::process_tree::Cgroup>) -> KillTree {
        let pid = pid.and_then(|pid| i32::try_from(pid).ok());
        KillTree {
            tree: pid.map(|pid| {
                tool_sandbox::process_tree::Tree::new(
                    pid,
                    tool_sandbox::process_tree::MARKER_VAR,
                    marker,
                    cgroup,
                )
            }),
            killed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    #[cfg(not(target_os = "linux"))]
    #[cfg_attr(not(unix), allow(unused_variables))]
    fn new(pid: Option<u32>, marker: &str) -> KillTree {
        let pid = pid.and_then(|pid| i32::try_from(pid).ok());
        KillTree {
            #[cfg(all(unix, not(target_os = "linux")))]
            group: pid,
            killed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Kills the hook's processes, unless that was done already.
    fn kill_once(&self) {
        if self.killed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        #[cfg(target_os = "linux")]
        if let Some(tree) = &self.tree {
            let _ = tree.kill();
        }
        #[cfg(all(unix, not(target_os = "linux")))]
        if let Some(group) = self.group {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(group),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

impl Drop for KillTree {
    fn drop(&mut self) {
        self.kill_once();
    }
}

async fn read_capped(stream: Option<impl AsyncRead + Unpin>) -> String {
    let mut bytes = Vec::new();
    if let Some(stream) = stream {
        let _ = stream.take(MAX_OUTPUT).read_to_end(&mut bytes).await;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Claude Code's file tools, whose path argument is `file_path`, an absolute path.
const FILE_PATH_TOOLS: &[&str] = &["Read", "Edit", "Write", "MultiEdit"];

/// A call's arguments as a hook reads them: ours, and for a tool Claude Code calls one of its
/// file tools (`claude_name`), its `file_path` (absolute) beside our `path`, so that a hook
/// written for Claude Code (`jq -r .tool_input.file_path`) reads the path it expects rather
/// than `null`.
pub(crate) fn hook_input(claude_name: Option<&str>, input: &Value, root: &Path) -> Value {
    let mut input = input.clone();
    if let (true, Value::Object(map)) =
        (claude_name.is_some_and(|name| FILE_PATH_TOOLS.contains(&name)), &mut input)
        && let (Some(Value::String(path)), false) = (map.get("path"), map.contains_key("file_path"))
    {
        let absolute = crate::command_paths::as_reached(root, path).to_string_lossy().into_owned();
        map.insert("file_path".into(), Value::String(absolute));
    }
    input
}

/// The events a call's `PreToolUse` hooks are shown ([`hook_views`]): each with the name it is
/// shown with (`None`: the tool's own) and its `tool_input`.
pub(crate) struct HookViews {
    pub(crate) views: Vec<(Option<String>, Value)>,
    /// One per file of a patch: each `if` is matched against its file, and no `updatedInput`
    /// can rewrite it.
    pub(crate) by_file: bool,
    /// The files of a patch past [`MAX_PATCH_FILES`] (no view is made then).
    pub(crate) too_many: Option<usize>,
}

/// How many files of one patch the hooks are shown, each a run of each hook matching it.
pub(crate) const MAX_PATCH_FILES: usize = 256;

/// What the `PreToolUse` hooks of a call are shown: one event, `hook_input`'s; but for a patch
/// (`apply_patch`, which Claude Code's hooks know as an `Edit`), one event per file it touches,
/// as Claude Code's own tools would make them: `Write` with `file_path` and `content` for a file
/// added (or the place a file moves to), `Edit` with `file_path`, `old_string` and `new_string`
/// (the lines a change takes out and puts in, with their context) for one changed or deleted,
/// (not the whole patch beside each: a patch of many files would be copied as many times). A
/// hook written for Claude Code (`jq -r
/// .tool_input.file_path`) so sees every file a patch writes. `None` as the name: the tool's own.
pub(crate) fn hook_views(claude_name: Option<&str>, input: &Value, root: &Path) -> HookViews {
    use crate::patch::FileChange;
    let whole = || HookViews {
        views: vec![(claude_name.map(str::to_owned), hook_input(claude_name, input, root))],
        by_file: false,
        too_many: None,
    };
    let Some(text) = input.get("patch").and_then(Value::as_str) else { return whole() };
    if claude_name != Some("Edit") || input.get("path").is_some() {
        return whole();
    }
    // Read as the patch tool reads it; one it cannot read changes nothing.
    let Ok(patch) = crate::patch::parse_patch(text) else { return whole() };
    let absolute = |path: &str| crate::command_paths::as_reached(root, path).to_string_lossy().into_owned();
    let lines = |lines: &[String]| lines.iter().map(|line| format!("{line}\n")).collect::<String>();
    if patch.files.len() > MAX_PATCH_FILES {
        return HookViews { views: Vec::new(), by_file: true, too_many: Some(patch.files.len()) };
    }
    let mut views = Vec::new();
    for change in &patch.files {
        match change {
            FileChange::Add { path, contents } => views
                .push((Some("Write".to_owned()), json!({"file_path": absolute(path), "content": contents}))),
            FileChange::Delete { path } => views.push((
                Some("Edit".to_owned()),
                json!({"file_path": absolute(path), "old_string": "", "new_string": ""}),
            )),
            FileChange::Update { path, move_to, hunks } => {
                let old: String = hunks.iter().map(|hunk| lines(&hunk.old)).collect();
                let new: String = hunks.iter().map(|hunk| lines(&hunk.new)).collect();
                views.push((
                    Some("Edit".to_owned()),
                    json!({"file_path": absolute(path), "old_string": old, "new_string": new}),
                ));
                // Where it moves to is written: shown with the lines the hunks put in.
                if let Some(to) = move_to {
                    views
                        .push((Some("Write".to_owned()), json!({"file_path": absolute(to), "content": new})));
                }
            }
        }
    }
    HookViews { views, by_file: true, too_many: None }
}

/// A hook's `updatedInput` in our tools' shape, given what it was shown: a `file_path` that
/// [`hook_input`] added is the path when the hook changed it, and is left out either way.
pub(crate) fn from_hook_input(shown: &Value, mut updated: Value) -> Value {
    if let (Some(added), Value::Object(map)) = (shown.get("file_path"), &mut updated)
        && let Some(file_path) = map.remove("file_path")
        && &file_path != added
    {
        map.insert("path".into(), file_path);
    }
    updated
}

fn reason_or(stderr: &str, fallback: &str) -> String {
    let reason = stderr.trim();
    if reason.is_empty() { fallback.to_owned() } else { reason.to_owned() }
}

fn failed(code: Option<i32>, stderr: &str) -> String {
    let how = match code {
        Some(code) => format!("exited with code {code}"),
        None => "was killed by a signal".to_owned(),
    };
    let stderr = stderr.trim();
    if stderr.is_empty() {
        how
    } else {
        let tail: String = stderr.chars().rev().take(500).collect::<Vec<_>>().into_iter().rev().collect();
        format!("{how}: {tail}")
    }
}

/// Standard output as a JSON object. Empty output, or plain text (as Claude Code reads it: what a
/// hook that exits 0 says for the transcript), is no decision; what starts as a JSON object and
/// is not one is a failure (a decision the hook meant to print, which cannot be read).
fn output_object(stdout: &str) -> Result<Option<Map<String, Value>>, String> {
    let text = stdout.trim();
    if !text.starts_with('{') {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(object)) => Ok(Some(object)),
        _ => Err(format!(
            "printed something that starts as a JSON object on standard output and is not one (a hook \
                 prints plain text, or one JSON decision): {}",
            tool_core::words::excerpt(text)
        )),
    }
}

fn string_field<'a>(object: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(format!("printed `{key}` as {other}; it must be a string")),
    }
}

fn parse_pre(stdout: &str) -> Result<PreDecision, String> {
    let Some(object) = output_object(stdout)? else { return Ok(PreDecision::default()) };
    let mut decision = PreDecision::default();
    if object.get("continue") == Some(&Value::Bool(false)) {
        let reason = string_field(&object, "stopReason")?.unwrap_or("the hook stopped the call");
        decision.decision = Some(PreVerdict::Deny(reason.to_owned()));
        return Ok(decision);
    }
    // The older top-level form: {"decision": "approve" | "block", "reason": "..."}.
    let legacy_reason = string_field(&object, "reason")?.unwrap_or("").to_owned();
    match string_field(&object, "decision")? {
        None => {}
        Some("approve") => decision.decision = Some(PreVerdict::Allow),
        Some("block") => {
            decision.decision = Some(PreVerdict::Deny(non_empty(legacy_reason, "blocked by the hook")))
        }
        Some(other) => return Err(format!("printed `decision: {other}`; expected \"approve\" or \"block\"")),
    }
    let Some(specific) = object.get("hookSpecificOutput") else { return Ok(decision) };
    let Value::Object(specific) = specific else {
        return Err("printed `hookSpecificOutput` that is not an object".to_owned());
    };
    let reason = string_field(specific, "permissionDecisionReason")?.unwrap_or("").to_owned();
    match string_field(specific, "permissionDecision")? {
        None | Some("defer") => {}
        Some("allow") => decision.decision = Some(PreVerdict::Allow),
        Some("ask") => {
            decision.decision = Some(PreVerdict::Ask(non_empty(reason, "the hook asks for approval")))
        }
        Some("deny") => decision.decision = Some(PreVerdict::Deny(non_empty(reason, "denied by the hook"))),
        Some(other) => {
            return Err(format!(
                "printed `permissionDecision: {other}`; expected \"allow\", \"deny\" or \"ask\""
            ));
        }
    }
    match specific.get("updatedInput") {
        None | Some(Value::Null) => {}
        Some(Value::Object(input)) => decision.updated_input = Some(Value::Object(input.clone())),
        Some(other) => return Err(format!("printed `updatedInput` as {other}; it must be an object")),
    }
    Ok(decision)
}

fn parse_post(stdout: &str) -> Result<PostFeedback, String> {
    let Some(object) = output_object(stdout)? else { return Ok(PostFeedback::default()) };
    let mut feedback = PostFeedback::default();
    let reason = string_field(&object, "reason")?.unwrap_or("").to_owned();
    match string_field(&object, "decision")? {
        None => {}
        Some("block") => feedback.blocked = Some(non_empty(reason, "the hook reported a problem")),
        Some(other) => return Err(format!("printed `decision: {other}`; expected \"block\" or nothing")),
    }
    if object.get("continue") == Some(&Value::Bool(false)) && feedback.blocked.is_none() {
        let reason = string_field(&object, "stopReason")?.unwrap_or("the hook reported a problem");
        feedback.blocked = Some(reason.to_owned());
    }
    if let Some(Value::Object(specific)) = object.get("hookSpecificOutput") {
        feedback.context = string_field(specific, "additionalContext")?.map(str::to_owned);
    }
    Ok(feedback)
}

fn non_empty(text: String, fallback: &str) -> String {
    if text.trim().is_empty() { fallback.to_owned() } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_read_in_both_forms() {
        let deny = parse_pre(
            r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}}"#,
        );
        assert_eq!(deny.unwrap().decision, Some(PreVerdict::Deny("no".to_owned())));
        assert_eq!(
            parse_pre(r#"{"decision": "block", "reason": "x"}"#).unwrap().decision,
            Some(PreVerdict::Deny("x".to_owned()))
        );
        assert_eq!(parse_pre("  \n").unwrap(), PreDecision::default());
        assert_eq!(parse_pre("formatted 3 files\n").unwrap(), PreDecision::default());
        assert!(parse_pre("{\"decision\": \"block\"").unwrap_err().contains("is not one"));
        assert!(
            parse_pre(r#"{"hookSpecificOutput": {"permissionDecision": "maybe"}}"#)
                .unwrap_err()
                .contains("maybe")
        );
    }

    #[tokio::test]
    async fn a_hook_inherits_only_what_the_environment_filter_lets_through() {
        use std::sync::Arc;
        use std::time::Duration;

        use crate::settings::Matcher;
        use tool_sandbox::environment::EnvFilter;

        // Cargo sets CARGO_MANIFEST_DIR for its tests: a variable of ours that is not on the list.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let seen = |environment: EnvFilter| async move {
            let hook = HookCommand {
                matcher: Matcher::All,
                condition: None,
                command: "env >&2; exit 2".to_owned(),
                timeout: Duration::from_secs(30),
                environment: Arc::new(environment),
            };
            match hook.pre_tool_use(&Value::Null, Path::new("."), None).await.unwrap().decision {
                Some(PreVerdict::Deny(printed)) => printed,
                other => panic!("{other:?}"),
            }
        };
        let base = seen(EnvFilter::base()).await;
        assert!(!base.lines().any(|l| l.starts_with("CARGO_MANIFEST_DIR=")), "{base}");
        assert!(base.lines().any(|l| l.starts_with("PATH=")), "{base}");
        let all = seen(EnvFilter::inherit_all()).await;
        assert!(all.lines().any(|l| l.starts_with("CARGO_MANIFEST_DIR=")), "{all}");
    }
}
