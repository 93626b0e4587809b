//! Permission rules end to end: precedence, command patterns, path globs against symbolic links
//! and `..`, shell command classification, settings files (the manual's, and malformed ones).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_runtime::permissions::shell::{CommandClass, classify};
use tool_runtime::permissions::{Action, Policy, PolicyExt, Rules, RulesBuilder, Settings};
use tool_runtime::{
    BoxFuture, CancellationToken, Dispatcher, PermissionKind, PermissionRequest, Registry, ToolCall,
    ToolResult,
    hooks::{PermissionDecision, PermissionHook},
};
use tool_tests::TempDir;
use tools_std::Workspace;

fn base(root: &Path) -> RulesBuilder {
    Rules::builder(root).catalog(tools_std::permission_catalog())
}

fn command(tool: &str, command: &str) -> PermissionRequest {
    let mut request = PermissionRequest::new(
        PermissionKind::Command { command: command.to_owned(), workdir: None },
        format!("run `{command}`"),
    );
    request.tool = tool.to_owned();
    request
}

async fn decide(policy: &Policy, request: &PermissionRequest) -> PermissionDecision {
    policy.decide(request).await
}

fn denial(decision: PermissionDecision) -> String {
    match decision {
        PermissionDecision::Deny { reason } => reason,
        PermissionDecision::Allow => panic!("expected a denial"),
    }
}

#[tokio::test]
async fn deny_beats_ask_beats_allow_whatever_the_order() {
    let dir = TempDir::new("perm-precedence");
    // Written in the opposite order of their strength: the order must not matter.
    let rules = base(dir.path())
        .deny("Bash(git push --force:*)")
        .allow("Bash(git:*)")
        .ask("Bash(git push:*)")
        .tool_default("bash", Action::Ask)
        .build()
        .unwrap();
    let policy = Policy::new(rules);
    assert_eq!(decide(&policy, &command("bash", "git status")).await, PermissionDecision::Allow);
    assert_eq!(
        decide(&policy, &command("bash", "git status && git log -1")).await,
        PermissionDecision::Allow
    );
    assert_eq!(
        denial(decide(&policy, &command("bash", "git push origin main")).await),
        "the rule `ask Bash(git push:*)` in the rules given in code says to ask first, and nobody is here to \
         answer, so it was not done. Do something else, or ask the user to allow it"
    );
    assert_eq!(
        denial(decide(&policy, &command("bash", "git push --force origin main")).await),
        "refused by the rule `deny Bash(git push --force:*)` in the rules given in code. Do not try to get \
         around it: do something else, or ask the user"
    );
    // No rule matches: the tool's default.
    let reason = denial(decide(&policy, &command("bash", "ls")).await);
    assert!(reason.starts_with("the default for `bash` says to ask first"), "{reason}");
    // An allowed prefix does not carry a second command with it.
    let reason = denial(decide(&policy, &command("bash", "git status; rm -rf x")).await);
    assert!(reason.starts_with("the default for `bash`"), "{reason}");
    // The substitution's output is not known, so it may be `push --force`: the deny rule applies.
    let reason = denial(decide(&policy, &command("bash", "git status $(rm -rf x)")).await);
    assert!(reason.starts_with("refused by the rule `deny Bash(git push --force:*)`"), "{reason}");
}

#[tokio::test]
async fn a_deny_pattern_finds_its_command_inside_a_compound_or_unparsed_line() {
    let dir = TempDir::new("perm-compound");
    let policy = Policy::new(base(dir.path()).deny("Bash(rm -rf:*)").build().unwrap());
    for line in ["rm -rf x", "ls && rm -rf x", "ls | rm -rf x", "echo $(rm -rf x)", "ls; rm -rf /"] {
        let reason = denial(decide(&policy, &command("bash", line)).await);
        assert!(reason.contains("`deny Bash(rm -rf:*)`"), "{line}: {reason}");
    }
    assert_eq!(decide(&policy, &command("bash", "rm -r x")).await, PermissionDecision::Allow);
}

/// `git push *` and `git push:*` are Claude Code's two spellings of one prefix: both see
/// through the program's own options and wrappers, and both allow what the prefix starts.
#[tokio::test]
async fn a_prefix_spelled_with_a_trailing_star_is_seen_through_as_the_colon_form_is() {
    let dir = TempDir::new("perm-star-prefix");
    for rule in ["Bash(git push *)", "Bash(git push:*)"] {
        let policy = Policy::new(base(dir.path()).deny(rule).build().unwrap());
        for line in
            ["git push", "git -C . push origin main", "git --no-pager push", "env git push", "ls; git push"]
        {
            let reason = denial(decide(&policy, &command("bash", line)).await);
            assert!(reason.contains(&format!("`deny {rule}`")), "{rule}, {line}: {reason}");
        }
        assert_eq!(decide(&policy, &command("bash", "git pushx")).await, PermissionDecision::Allow, "{rule}");
        assert_eq!(
            decide(&policy, &command("bash", "git status")).await,
            PermissionDecision::Allow,
            "{rule}"
        );
    }
    let policy = Policy::new(
        base(dir.path()).allow("Bash(git status *)").tool_default("bash", Action::Deny).build().unwrap(),
    );
    for line in ["git status", "git status -sb"] {
        assert_eq!(decide(&policy, &command("bash", line)).await, PermissionDecision::Allow, "{line}");
    }
    assert!(denial(decide(&policy, &command("bash", "git status; rm -rf x")).await).contains("default"));
}

/// Answers every ask with `answer`, remembering the requests.
struct Recorder {
    answer: PermissionDecision,
    seen: Mutex<Vec<PermissionRequest>>,
}

impl PermissionHook for Recorder {
    fn decide<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionDecision> {
        self.seen.lock().unwrap().push(request.clone());
        Box::pin(std::future::ready(self.answer.clone()))
    }
}

#[tokio::test]
async fn ask_reaches_the_asker_with_the_rule_and_deny_never_does() {
    let dir = TempDir::new("perm-asker");
    let asker = Arc::new(Recorder { answer: PermissionDecision::Allow, seen: Mutex::default() });
    let rules = base(dir.path()).ask("Bash(git push:*)").deny("Bash(rm:*)").build().unwrap();
    let policy = Policy::new(rules).asker(asker.clone());
    assert_eq!(decide(&policy, &command("bash", "git push")).await, PermissionDecision::Allow);
    assert!(matches!(decide(&policy, &command("bash", "rm x")).await, PermissionDecision::Deny { .. }));
    assert_eq!(decide(&policy, &command("bash", "ls")).await, PermissionDecision::Allow);
    let seen = asker.seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "only the ask went to the asker: {seen:?}");
    assert_eq!(seen[0].details["rule"], "the rule `ask Bash(git push:*)` in the rules given in code");
}

#[tokio::test]
async fn a_read_only_rule_allows_commands_that_only_read() {
    let dir = TempDir::new("perm-readonly");
    let rules = base(dir.path()).allow("Bash(read-only)").tool_default("bash", Action::Deny).build().unwrap();
    let policy = Policy::new(rules);
    for line in ["ls -la | wc -l", "git status", "git diff HEAD~1 && git log --oneline", "rg -n foo src"] {
        assert_eq!(decide(&policy, &command("bash", line)).await, PermissionDecision::Allow, "{line}");
    }
    for line in ["ls > listing", "git push", "rg --pre cat foo", "cargo build"] {
        assert!(
            matches!(decide(&policy, &command("bash", line)).await, PermissionDecision::Deny { .. }),
            "{line}"
        );
    }
}

/// Every classification case the parser must get right, with the tricky ones.
#[test]
fn shell_classification_table() {
    let read_only = [
        "ls",
        "ls -la src",
        "cat README.md",
        "git status",
        "git diff",
        "git --no-pager log --oneline -5",
        "git show HEAD:Cargo.toml",
        "git branch -a",
        "git stash list",
        "grep -rn 'fn main' src",
        "rg foo | head -20",
        "cat a.txt | grep x | wc -l",
        "git status && git diff",
        "ls || pwd",
        "echo \"hello world\"",
        "echo 'a > b'",
        "find . -name '*.rs'",
        "sort -r names.txt",
        "date +%Y",
        "cd src && ls",
        "wc -l a b\nwc -c a",
        "git log --format=%H",
    ];
    for line in read_only {
        assert_eq!(classify(line), CommandClass::ReadOnly, "{line:?} only reads");
    }
    let mutating = [
        ("git status; rm -rf x", "`rm` is not a known read-only program"),
        ("ls $(rm -rf x)", "`$`"),
        ("echo `rm -rf x`", "backticks"),
        ("echo \"$(rm x)\"", "`$`"),
        ("ls > out.txt", "`>` (output redirection)"),
        ("ls >> out.txt", "`>` (output redirection)"),
        ("ls 2>/dev/null", "`>` (output redirection)"),
        ("cat <<EOF\nx\nEOF", "here-document"),
        ("cat < file", "`<`"),
        ("git status && git push", "`git push` is not a known read-only git command"),
        ("FOO=bar ls", "an environment assignment"),
        ("PAGER=rm git log", "an environment assignment"),
        ("sudo ls", "`sudo` is not a known read-only program"),
        ("ls &", "background"),
        ("(ls)", "subshell"),
        ("{ ls; }", "braces"),
        ("ls *.rs", "glob"),
        ("ls # comment", "comment"),
        ("find . -delete", "`find -delete`"),
        ("find . -exec rm {} ;", "braces"),
        ("find . -name x -exec rm x ;", "`find -exec`"),
        ("sort -o out in", "`sort -o`"),
        ("sort -ro out in", "`sort -ro`"),
        ("rg --pre=sh foo", "`rg --pre=sh`"),
        ("git -c core.pager=rm log", "global option"),
        ("git branch new-branch", "`git branch new-branch`"),
        ("git diff --output=x", "`git diff --output=x`"),
        ("git config user.name x", "`git config user.name x`"),
        ("date -s 2020-01-01", "`date -s`"),
        ("./ls", "`./ls` is not a known read-only program"),
        ("xargs rm", "`xargs`"),
        ("sed -i s/a/b/ f", "`sed`"),
        ("ls |", "after it"),
        ("'unterminated", "unterminated"),
        ("ls | tee out", "`tee`"),
        ("", "no command"),
    ];
    for (line, why) in mutating {
        match classify(line) {
            CommandClass::Mutating { reason } => assert!(reason.contains(why), "{line:?}: {reason}"),
            CommandClass::ReadOnly => panic!("{line:?} must count as mutating"),
        }
    }
}

// ---- paths, through the real file tools -------------------------------------------------------

fn dispatcher(root: &Path, policy: Policy) -> Dispatcher {
    let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
    Dispatcher::builder(registry).dependency(Workspace::new(root).unwrap()).policy(policy).build()
}

async fn call(dispatcher: &Dispatcher, tool: &str, arguments: Value) -> ToolResult {
    dispatcher.run(ToolCall::new("call-1", tool, arguments.to_string()), CancellationToken::new()).await
}

fn write(path: PathBuf, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[tokio::test]
async fn path_globs_match_the_resolved_path_through_links_and_dot_dot() {
    let dir = TempDir::new("perm-paths");
    let outside = TempDir::new("perm-paths-outside");
    let root = dir.path();
    write(root.join("secrets/key"), "hunter2");
    write(root.join("src/main.rs"), "fn main() {}");
    write(outside.path().join("notes.txt"), "outside notes");
    std::os::unix::fs::symlink(root.join("secrets"), root.join("innocent")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("notes.txt"), root.join("notes-link")).unwrap();
    let policy = Policy::new(
        base(root)
            .deny("Read(./secrets/**)")
            .deny("Edit(*.rs)")
            .allow(format!("Read(/{}/**)", outside.path().display()))
            .build()
            .unwrap(),
    );
    let d = dispatcher(root, policy);

    let ok = call(&d, "read", json!({"path": "src/main.rs"})).await;
    assert!(!ok.output.is_error, "{}", ok.output.text_content());
    for path in ["secrets/key", "innocent/key", "src/../secrets/key", "./src/../innocent/key"] {
        let result = call(&d, "read", json!({"path": path})).await;
        let text = result.output.text_content();
        assert!(result.output.is_error, "{path}: {text}");
        assert!(text.contains("refused by the rule `deny Read(./secrets/**)`"), "{path}: {text}");
        assert!(!text.contains("hunter2"), "{path}: {text}");
    }
    // `Read` rules apply to every reading tool: `ls` and `grep` cannot look inside either.
    let listed = call(&d, "ls", json!({"path": "innocent"})).await;
    assert!(
        listed.output.text_content().contains("`deny Read(./secrets/**)`"),
        "{}",
        listed.output.text_content()
    );
    let grepped = call(&d, "grep", json!({"pattern": "hunter", "path": "secrets"})).await;
    assert!(grepped.output.is_error, "{}", grepped.output.text_content());
    // A pattern without a slash matches at any depth; `Edit` covers `write` too.
    let written = call(&d, "write", json!({"path": "src/new.rs", "content": "x"})).await;
    assert!(written.output.text_content().contains("`deny Edit(*.rs)`"), "{}", written.output.text_content());
    assert!(!root.join("src/new.rs").exists());
    // Outside the root: allowed by a path rule through a link, and refused without one.
    let linked = call(&d, "read", json!({"path": "notes-link"})).await;
    assert!(linked.output.text_content().contains("outside notes"), "{}", linked.output.text_content());
    let etc = call(&d, "read", json!({"path": "/etc/passwd"})).await;
    assert!(
        etc.output
            .text_content()
            .contains("is outside the workspace root; only paths inside the workspace may be used"),
        "{}",
        etc.output.text_content()
    );
}

#[tokio::test]
async fn edit_rules_cover_multi_edit_and_every_file_of_a_patch() {
    let dir = TempDir::new("perm-edits");
    let root = dir.path();
    write(root.join("src/lib.rs"), "pub fn a() {}\n");
    write(root.join("Cargo.lock"), "version = 3\n");
    let d = dispatcher(root, Policy::new(base(root).deny("Edit(./Cargo.lock)").build().unwrap()));

    let edits = json!({"path": "Cargo.lock", "edits": [{"old_string": "3", "new_string": "4"}]});
    let edited = call(&d, "multi_edit", edits).await;
    assert!(
        edited.output.text_content().contains("`deny Edit(./Cargo.lock)`"),
        "{}",
        edited.output.text_content()
    );
    // The refused file is the second of the patch: the first is left as it was too.
    let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-pub fn a() {}\n+pub fn b() {}\n\
                 *** Update File: Cargo.lock\n@@\n-version = 3\n+version = 4\n*** End Patch\n";
    let patched = call(&d, "apply_patch", json!({ "patch": patch })).await;
    assert!(patched.output.is_error, "{}", patched.output.text_content());
    assert!(
        patched.output.text_content().contains("`deny Edit(./Cargo.lock)`"),
        "{}",
        patched.output.text_content()
    );
    assert_eq!(std::fs::read_to_string(root.join("Cargo.lock")).unwrap(), "version = 3\n");
    assert_eq!(std::fs::read_to_string(root.join("src/lib.rs")).unwrap(), "pub fn a() {}\n");

    let ok = call(&d, "apply_patch", json!({ "patch": "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-pub fn a() {}\n+pub fn b() {}\n*** End Patch\n" })).await;
    assert!(!ok.output.is_error, "{}", ok.output.text_content());
    assert_eq!(std::fs::read_to_string(root.join("src/lib.rs")).unwrap(), "pub fn b() {}\n");
}

/// A deny or ask rule on paths written for one tool that edits (`Write(...)`, `MultiEdit(...)`)
/// holds for every tool that edits, as it does for commands, whose sandbox keeps those paths
/// read-only; an allow rule stays with the tool it names.
#[tokio::test]
async fn a_refusal_written_for_one_editing_tool_holds_for_every_one() {
    let dir = TempDir::new("perm-write-rules");
    let root = dir.path();
    write(root.join("secret/a.txt"), "hi\n");
    write(root.join("keep/b.txt"), "hi\n");
    let rules = base(root)
        .deny("Write(./secret/**)")
        .ask("MultiEdit(./keep/**)")
        .allow("Write(./open/**)")
        .tool_default("apply_patch", Action::Ask);
    let d = dispatcher(root, Policy::new(rules.build().unwrap()));
    let patch =
        |path: &str| format!("*** Begin Patch\n*** Update File: {path}\n@@\n-hi\n+changed\n*** End Patch\n");
    for (dir, rule) in [("secret", "`deny Write(./secret/**)`"), ("keep", "`ask MultiEdit(./keep/**)`")] {
        let file = if dir == "secret" { "secret/a.txt" } else { "keep/b.txt" };
        for (tool, arguments) in [
            ("write", json!({"path": file, "content": "changed\n"})),
            ("edit", json!({"path": file, "old_string": "hi", "new_string": "changed"})),
            ("multi_edit", json!({"path": file, "edits": [{"old_string": "hi", "new_string": "changed"}]})),
            ("apply_patch", json!({"patch": patch(file)})),
            ("write", json!({"path": format!("{dir}/new.txt"), "content": "new\n"})),
        ] {
            let result = call(&d, tool, arguments).await;
            let text = result.output.text_content();
            assert!(result.output.is_error && text.contains(rule), "{tool} on {file}: {text}");
        }
        assert_eq!(std::fs::read_to_string(root.join(file)).unwrap(), "hi\n");
        assert!(!root.join(dir).join("new.txt").exists());
    }
    // The allow rule allows `write` there, and not `apply_patch`, which is asked about (no one
    // is here to answer).
    let written = call(&d, "write", json!({"path": "open/c.txt", "content": "c\n"})).await;
    assert!(!written.output.is_error, "{}", written.output.text_content());
    let patched = call(
        &d,
        "apply_patch",
        json!({"patch": "*** Begin Patch\n*** Add File: open/d.txt\n+d\n*** End Patch\n"}),
    )
    .await;
    assert!(patched.output.is_error, "{}", patched.output.text_content());
    assert!(!root.join("open/d.txt").exists());
}

#[tokio::test]
async fn external_directory_rules_and_their_default() {
    let dir = TempDir::new("perm-external");
    let outside = TempDir::new("perm-external-out");
    write(outside.path().join("a.txt"), "alpha");
    let target = outside.path().join("a.txt").display().to_string();
    let open = Policy::new(base(dir.path()).external_directory(Action::Allow).build().unwrap());
    let result = call(&dispatcher(dir.path(), open), "read", json!({"path": target})).await;
    assert!(result.output.text_content().contains("alpha"), "{}", result.output.text_content());
    // An explicit deny rule beats an allowing default.
    let rules = base(dir.path())
        .external_directory(Action::Allow)
        .deny(format!("external_directory(/{}/**)", outside.path().display()))
        .build()
        .unwrap();
    let result = call(&dispatcher(dir.path(), Policy::new(rules)), "read", json!({"path": target})).await;
    assert!(
        result.output.text_content().contains("refused by the rule `deny external_directory("),
        "{}",
        result.output.text_content()
    );
}

#[tokio::test]
async fn a_tool_without_subjects_is_decided_per_call_and_bash_per_command() {
    let dir = TempDir::new("perm-call");
    let rules = base(dir.path())
        .deny("TodoWrite")
        .allow("Bash(echo:*)")
        .tool_default("bash", Action::Deny)
        .build()
        .unwrap();
    let d = dispatcher(dir.path(), Policy::new(rules));
    let todo = call(&d, "todo_write", json!({"todos": []})).await;
    assert_eq!(
        todo.output.text_content(),
        "The call to `todo_write` was denied: refused by the rule `deny TodoWrite` in the rules given in code. \
         Do not try to get around it: do something else, or ask the user"
    );
    let echo = call(&d, "bash", json!({"command": "echo allowed"})).await;
    assert_eq!(echo.output.text_content().trim(), "allowed");
    let other = call(&d, "bash", json!({"command": "touch made"})).await;
    assert!(
        other.output.text_content().contains("refused by the default for `bash`"),
        "{}",
        other.output.text_content()
    );
    assert!(!dir.path().join("made").exists());
}

// ---- settings files ----------------------------------------------------------------------------

fn manual_settings() -> String {
    let manual = include_str!("../../../tool-runtime/docs/permissions.md");
    let open = "```json\n";
    let from = manual.find(open).expect("a json block") + open.len();
    let to = from + manual[from..].find("```").expect("closing fence");
    manual[from..to].to_owned()
}

#[tokio::test]
async fn the_manual_settings_file_loads_as_is_and_means_what_it_says() {
    let dir = TempDir::new("perm-manual");
    let settings = Settings::parse(&manual_settings(), "the manual's settings", base(dir.path())).unwrap();
    assert_eq!(settings.hook_counts(), (1, 1));
    let policy = Policy::from_settings(settings);
    assert_eq!(decide(&policy, &command("bash", "git status")).await, PermissionDecision::Allow);
    assert_eq!(decide(&policy, &command("bash", "ls -la | head")).await, PermissionDecision::Allow);
    let push = denial(decide(&policy, &command("bash", "git push origin main")).await);
    assert!(push.contains("`ask Bash(git push:*)`") && push.contains("says to ask first"), "{push}");
    let rm = denial(decide(&policy, &command("bash", "rm -rf build")).await);
    assert!(rm.contains("`deny Bash(rm -rf:*)`"), "{rm}");
    let other = denial(decide(&policy, &command("bash", "cargo build")).await);
    assert!(other.contains("the default for `bash` says to ask first"), "{other}");
}

#[test]
fn malformed_settings_are_errors_naming_the_rule_when_loaded() {
    let dir = TempDir::new("perm-malformed");
    let cases = [
        (
            r#"{"permissions": {"allow": ["Bash(git status"]}}"#,
            "rule `Bash(git status` in s.json (permissions.allow): a pattern must end with `)`",
        ),
        (
            r#"{"permissions": {"deny": ["Bash()"]}}"#,
            "rule `Bash()` in s.json (permissions.deny): the pattern is empty",
        ),
        (
            r#"{"permissions": {"ask": ["TodoWrite(x)"]}}"#,
            "rule `TodoWrite(x)` in s.json (permissions.ask): `todo_write` asks about no command or path",
        ),
        (
            r#"{"permissions": {"allow": ["Read(src/[)"]}}"#,
            "rule `Read(src/[)` in s.json (permissions.allow): not a valid glob",
        ),
        (r#"{"permissions": {"allow": ["Read(../x)"]}}"#, "`..` is not allowed"),
        (r#"{"permissions": {"allow": ["Ba sh"]}}"#, "`Ba sh` is not a tool name"),
        (
            r#"{"permissions": {"allow": "Bash"}}"#,
            "`permissions.allow`: invalid type: string \"Bash\", expected a sequence",
        ),
        (
            r#"{"permissions": {"allow": [3]}}"#,
            "`permissions.allow[0]`: invalid type: integer `3`, expected a string",
        ),
        (
            r#"{"permissions": {"alow": []}}"#,
            "`permissions.alow`: unknown field `alow`, expected one of `allow`",
        ),
        (
            r#"{"permissions": {"defaults": {"bash": "maybe"}}}"#,
            "`permissions.defaults.bash`: unknown variant `maybe`, expected one of `allow`, `ask`, `deny`",
        ),
        (
            r#"{"hooks": {"PreToolUs": []}}"#,
            "`hooks.PreToolUs`: unknown field `PreToolUs`, expected one of `PreToolUse`",
        ),
        (
            r#"{"hooks": {"PreToolUse": [{"matcher": "Bash(", "hooks": []}]}}"#,
            "`hooks.PreToolUse[0].matcher` is not a valid regular expression",
        ),
        (
            r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "command": "x"}]}]}}"#,
            "`hooks.PreToolUse[0].hooks[0].type`: unknown variant `prompt`, expected `command`",
        ),
        (
            r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}}"#,
            "`hooks.PreToolUse[0].hooks[0].timeout`: must be a number of seconds above 0",
        ),
        ("{not json", "not valid JSON"),
    ];
    for (text, expected) in cases {
        let error = Settings::parse(text, "s.json", base(dir.path())).unwrap_err();
        let message = error.to_string();
        assert!(message.starts_with("s.json: "), "{message}");
        assert!(message.contains(expected), "{text}\n  gave: {message}\n  expected: {expected}");
    }
    // Claude Code's other keys and events are accepted.
    let other = r#"{"model": "x", "env": {}, "permissions": {"defaultMode": "acceptEdits", "allow": ["WebFetch"]},
                    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#;
    assert!(Settings::parse(other, "s.json", base(dir.path())).is_ok());
}

// ---- read-only commands under the shared guard -----------------------------------------------

fn fifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

/// Writes to a FIFO once its reader has opened it.
async fn feed(path: PathBuf, text: &'static str) {
    tokio::task::spawn_blocking(move || std::fs::write(path, text).unwrap()).await.unwrap();
}

fn bash_call(id: &str, command: &str) -> ToolCall {
    ToolCall::new(id, "bash", json!({"command": command}).to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_commands_run_alongside_each_other_and_mutating_ones_alone() {
    use tool_runtime::events::ToolEvent;
    let dir = TempDir::new("perm-parallel");
    for name in ["one", "two", "three", "four"] {
        fifo(&dir.path().join(name));
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ToolEvent>();
    let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
    let d = Dispatcher::builder(registry)
        .dependency(Workspace::new(dir.path()).unwrap())
        .events(tx)
        .policy(Policy::new(base(dir.path()).build().unwrap()))
        .build();

    // Both read-only: each blocks until fed, so both must have started before either can end.
    let batch = {
        let d = d.clone();
        tokio::spawn(async move {
            d.run_batch(vec![bash_call("a", "cat one"), bash_call("b", "cat two")], CancellationToken::new())
                .await
        })
    };
    let mut started = Vec::new();
    while started.len() < 2 {
        let event = tokio::time::timeout(std::time::Duration::from_secs(60), rx.recv()).await;
        match event {
            Ok(Some(ToolEvent::Started { call_id, .. })) => started.push(call_id),
            Ok(Some(_)) => {}
            _ => panic!("both read-only calls must start before either is fed: {started:?}"),
        }
    }
    feed(dir.path().join("two"), "2").await;
    feed(dir.path().join("one"), "1").await;
    let results = batch.await.unwrap().unwrap();
    let outputs: Vec<String> = results.iter().map(|r| r.output.text_content()).collect();
    assert_eq!(outputs, ["1", "2"]);

    // A mutating command is exclusive: the read-only one after it starts once it finished.
    let batch = {
        let d = d.clone();
        tokio::spawn(async move {
            d.run_batch(
                vec![bash_call("c", "cat three > copied"), bash_call("d", "cat four")],
                CancellationToken::new(),
            )
            .await
        })
    };
    feed(dir.path().join("three"), "3").await;
    feed(dir.path().join("four"), "4").await;
    batch.await.unwrap().unwrap();
    let mut order = Vec::new();
    while let Ok(event) = rx.try_recv() {
        match event {
            ToolEvent::Started { call_id, .. } => order.push(format!("started {call_id}")),
            ToolEvent::Finished { call_id, .. } => order.push(format!("finished {call_id}")),
            _ => {}
        }
    }
    let position =
        |entry: &str| order.iter().position(|e| e == entry).unwrap_or_else(|| panic!("{entry}: {order:?}"));
    assert!(position("finished c") < position("started d"), "{order:?}");
}

#[tokio::test]
async fn a_hook_cannot_turn_a_read_only_call_into_a_mutating_one() {
    let dir = TempDir::new("perm-parallel-rewrite");
    let script = dir.path().join("rewrite.sh");
    std::fs::write(
        &script,
        "#!/bin/bash\necho '{\"hookSpecificOutput\": {\"updatedInput\": {\"command\": \"touch made\"}}}'\n",
    )
    .unwrap();
    let text = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": format!("bash {}", script.display())}
    ]}]}})
    .to_string();
    let settings = Settings::parse(&text, "settings.json", base(dir.path())).unwrap();
    let d = dispatcher(dir.path(), Policy::from_settings(settings));
    let result = call(&d, "bash", json!({"command": "ls"})).await;
    assert_eq!(
        result.output.text_content(),
        "The call to `bash` was not run: it ran alongside other calls because its command only reads, and a hook \
         rewrote it into a command that may change things. Make that call again on its own turn."
    );
    assert!(!dir.path().join("made").exists());
    // A mutating call may be rewritten: it holds the exclusive guard anyway.
    let result = call(&d, "bash", json!({"command": "echo x > y"})).await;
    assert!(!result.output.is_error, "{}", result.output.text_content());
    assert!(dir.path().join("made").exists());
}

// ---- the read-only allowlist: abbreviations, bundles and attached values ----------------------

/// Common read-only uses that must stay read-only under the allowlist.
#[test]
fn common_read_only_commands_stay_read_only() {
    let read_only = [
        "sort -rn -k2 names.txt",
        "sort -t: -k3,3n passwd",
        "git log --oneline -5",
        "git log -p -- src",
        "git log --format=%H --author=me --since=2024-01-01",
        "git diff --stat HEAD~1",
        "git diff --name-only --cached",
        "git diff --no-index a b",
        "git show --stat HEAD",
        "git status --porcelain=v1 -b",
        "git --no-pager status -sb",
        "git -P log -1",
        "git grep -n foo -- '*.rs'",
        "git grep -in -e foo -e bar",
        "git branch -vv",
        "git branch --list 'feat*'",
        "git branch --merged main",
        "git tag -l",
        "git config --get user.name",
        "git config user.name",
        "git config --list --show-origin",
        "git remote -v",
        "git stash list",
        "git stash show -p",
        "git rev-parse --show-toplevel",
        "git blame -L 1,5 README.md",
        "git shortlog -sn HEAD",
        "git cat-file -p HEAD",
        "git ls-files -z --others --exclude-standard",
        "find . -type f -name '*.rs' -maxdepth 2",
        "find src -newer Cargo.toml -print0",
        "rg -n --hidden -g '!target' foo",
        "rg -uuu -C2 foo",
        "rg --files --sort=path",
        "grep -rn -C3 foo src",
        "grep -5 foo a.txt",
        "head -n 20 a.txt",
        "head -20 a.txt",
        "tail -n +5 a.txt",
        "ls -la",
        "ls -lhS --color=never",
        "du -sh .",
        "df -h",
        "jq -r '.a' x.json",
        "jq --arg a b --rawfile c notes.txt '.x' f.json",
        "cut -d: -f1 passwd",
        "date +%Y-%m-%d",
        "date -u +%s",
        "date -d yesterday +%F",
        "stat -c %s a.txt",
        "tree -L 2 -a",
        "diff -u a b",
        "diff --to-file=b a",
        "cat -n a.txt",
        "printf '%s\\n' a",
        "seq -w 1 10",
        "echo -e a",
        "md5sum a",
        "uname -a",
        "which -a git",
        "readlink -f a",
        "realpath --relative-to=. a",
        "basename -s .rs a.rs",
        "od -c a",
        "nl -ba a",
        "column -t a",
        "cmp a b",
        "file -b a",
        "cd src && ls",
    ];
    for line in read_only {
        assert_eq!(classify(line), CommandClass::ReadOnly, "{line:?} only reads");
    }
}

/// Each option that writes or runs a program, spelled every way the program accepts it, and
/// options nobody listed: all mutating. The first ones are the issue's own cases.
#[test]
fn options_not_known_to_only_read_are_mutating_however_spelled() {
    let mutating = [
        "git grep --no-index --open='touch pwned' x",
        "git grep --no-index --op='touch pwned' x",
        "git grep --no-index --open-files-in='touch pwned' x",
        "git grep --no-index --open-files-in-pager='touch pwned' x",
        "git grep --no-index -iO'touch pwned' x",
        "git grep -O 'touch pwned' x",
        "git grep -nOless x",
        "printf 'x' | sort --o=.git/config",
        "sort --ou=f x",
        "sort --output=f x",
        "sort -o f x",
        "sort -ro f x",
        "sort -rof x",
        "sort --compress-program=sh x",
        "sort --compress=sh x",
        "sort -T /tmp x",
        "sort --temporary-directory=/tmp x",
        "date --s=2020-01-01",
        "date --se=2020-01-01",
        "date --set=2020-01-01",
        "date -s 2020-01-01",
        "date -us 2020-01-01",
        "date 010100002020",
        "git -c core.pager=sh log",
        "git -ccore.pager=sh log",
        "git --config-env=core.pager=X log",
        "git --exec-path=/tmp log",
        "git --exec-path log",
        "git -C /tmp log",
        "git --git-dir=/tmp/x log",
        "git --work-tree=/tmp status",
        "git --namespace=x log",
        "git -p log",
        "git --paginate log",
        "git --pag log",
        "git --no-pager -c x=y log",
        "git -Pc x=y log",
        "git diff --ext-diff",
        "git diff --ext",
        "git diff --output=x",
        "git diff --out=x",
        "git diff --output x",
        "git log --output=x",
        "git log --outp=x",
        "git log --show-signature",
        "git show --output=x",
        "git stash show --output=x",
        "git status --porcelain --output=x",
        "git blame --output=x a",
        "git help log",
        "git log --help",
        "git my-alias",
        "find . -exec rm x ;",
        "find . -execdir rm x ;",
        "find . -ok rm x ;",
        "find . -okdir rm x ;",
        "find . -delete",
        "find . -fprint f",
        "find . -fprint0 f",
        "find . -fprintf f x",
        "find . -fls f",
        "find . -name x -fls f",
        "find . -exe rm x ;",
        "rg --pre=sh x",
        "rg --pre sh x",
        "rg --pr=sh x",
        "rg --pre-glob=x x",
        "rg -z x",
        "rg --search-zip x",
        "rg -uz x",
        "rg --hostname-bin=sh x",
        "tree -o f",
        "tree -ao f",
        "tree -R -H . -L 1",
        "tree --output=f",
        "file -C -m magic",
        "printf -v PATH /tmp",
        "ls --zzz",
        "cat -Az a",
        "cat --sh a",
        "head --l=5 a",
        "grep --fil=x a",
        "jq --arg",
        "du --files0 x",
        "diff --to=b a",
        "git branch -D x",
        "git branch -vD x",
        "git branch --delete x",
        "git branch --del x",
        "git branch -m a b",
        "git branch new-branch",
        "git tag -d v1",
        "git tag -a v1",
        "git tag v1",
        "git config --unset x",
        "git config --add a b",
        "git config a b",
        "git config --edit",
        "git config --e",
        "git config set a b",
        "git config --file x --list",
        "git stash",
        "git stash pop",
        "git stash drop",
        "git stash -p",
        "git remote add x y",
        "git remote set-url x y",
        "git remote rm x",
        "cd vendor/x && git status",
        "cd /tmp; git log",
    ];
    for line in mutating {
        assert!(!classify(line).is_read_only(), "{line:?} must count as mutating");
    }
    // The reason names what was refused, as written.
    match classify("printf 'x' | sort --o=FILE") {
        CommandClass::Mutating { reason } => assert_eq!(
            reason,
            "`sort --o=FILE` is not an option known to only read, so it counts as changing things"
        ),
        CommandClass::ReadOnly => unreachable!(),
    }
}

/// Every program on the list refuses an option nobody listed, long, abbreviated, bundled or
/// with an attached value.
#[test]
fn every_read_only_program_refuses_unknown_options() {
    use tool_runtime::permissions::shell::{READ_ONLY_GIT, READ_ONLY_PROGRAMS};
    for program in READ_ONLY_PROGRAMS {
        if matches!(*program, "echo" | "true" | "false" | "printf" | "git") {
            continue;
        }
        for option in ["--zzz", "--zzz=x", "-@", "-@x"] {
            let line = format!("{program} {option} a");
            assert!(!classify(&line).is_read_only(), "{line:?} must count as mutating");
        }
    }
    for subcommand in READ_ONLY_GIT {
        for option in ["--zzz", "--zzz=x", "-@"] {
            let line = format!("git {subcommand} {option}");
            assert!(!classify(&line).is_read_only(), "{line:?} must count as mutating");
        }
    }
}

// ---- deny and ask rules see what the command will run -----------------------------------------

#[tokio::test]
async fn a_deny_rule_sees_through_keywords_wrappers_spellings_and_expansions() {
    let dir = TempDir::new("perm-see-through");
    let policy = Policy::new(base(dir.path()).deny("Bash(rm -rf:*)").build().unwrap());
    let lines = [
        // Keywords and groups.
        "if true; then rm -rf x; fi",
        "if false; then :; elif true; then rm -rf x; else rm -rf y; fi",
        "while true; do rm -rf x; done",
        "until false; do rm -rf x; done",
        "for f in a b; do rm -rf $f; done",
        "case a in a) rm -rf x;; esac",
        "time rm -rf x",
        "time -p rm -rf x",
        "coproc rm -rf x",
        "! rm -rf x",
        "{ rm -rf x; }",
        "(rm -rf x)",
        "X+=1 rm -rf x",
        "A[0]=1 B=2 rm -rf x",
        "f() { rm -rf x; }; f",
        "function f { rm -rf x; }",
        "true && rm -rf x &",
        "ls\nrm -rf x",
        // Wrappers.
        "command rm -rf x",
        "command -p rm -rf x",
        "builtin command rm -rf x",
        "env rm -rf x",
        "env -i PATH=/bin rm -rf x",
        "env -u HOME -C / rm -rf x",
        "env -S 'rm -rf' x",
        "exec rm -rf x",
        "exec -a name rm -rf x",
        "nice rm -rf x",
        "nice -n 10 rm -rf x",
        "nice -10 rm -rf x",
        "nohup rm -rf x",
        "timeout 5 rm -rf x",
        "timeout -s KILL 5 rm -rf x",
        "stdbuf -oL rm -rf x",
        "sudo rm -rf x",
        "sudo -u root -E rm -rf x",
        "sudo -s rm -rf x",
        "setsid rm -rf x",
        "echo x | xargs rm -rf",
        "echo x | xargs -0 -n1 rm -rf",
        "echo -rf | xargs rm",
        "bash -c 'rm -rf x'",
        "sh -c \"rm -rf x\"",
        "zsh -c 'rm -rf x'",
        "bash -ec 'cd /; rm -rf x'",
        "bash -c 'bash -c \"rm -rf x\"'",
        "eval rm -rf x",
        "eval 'rm -rf x'",
        "find . -exec rm -rf {} \\;",
        "strace -f rm -rf x",
        "setarch x86_64 rm -rf x",
        "setarch $(uname -m) rm -rf x",
        "linux32 rm -rf x",
        "sg root -c 'rm -rf x'",
        "sg root rm -rf x",
        "perf stat -x, rm -rf x",
        "gdb -batch -ex run --args /usr/bin/rm -rf x",
        "ssh-agent -- rm -rf x",
        "capsh -- -c 'rm -rf x'",
        "gdb -batch -ex 'shell rm -rf x'",
        "gdb -q -batch --eval-command='!rm -rf x'",
        "tmux new-session -d 'rm -rf x'",
        "find /usr/bin -name rm -exec {} -rf x \\;",
        "/lib64/ld-linux-x86-64.so.2 /usr/bin/rm -rf x",
        "busybox rm -rf x",
        "watch -n1 'rm -rf x'",
        "trap 'rm -rf x' EXIT",
        // Other spellings of the same flags, and of the program.
        "rm -fr x",
        "rm -r -f x",
        "rm -rfv x",
        "rm -Rf x",
        "rm --recursive --force x",
        "rm --recur --forc x",
        "rm -r x -f",
        "/bin/rm -rf x",
        "./rm -rf x",
        "\\rm -rf x",
        "'rm' -rf x",
        "r\"m\" -rf x",
        "$'\\x72\\x6d' -rf x",
        // What the parser cannot resolve may be anything.
        "rm${IFS}-rf x",
        "rm $FLAGS x",
        "rm -{r,f} x",
        "$CMD -rf x",
        "`echo rm` -rf x",
        "$(echo rm) -rf x",
        "echo $(rm -rf x)",
        "echo \"$(rm -rf x)\"",
        "echo ${X:-$(rm -rf x)}",
        "cat <(rm -rf x)",
        "eval \"$X\"",
        "bash -c \"$X\"",
        "source ./script.sh",
        ". ./script.sh",
        "bash script.sh",
        "echo 'rm -rf x' | sh",
        "sh < script.sh",
        "cd x; bash",
        "bash -s < script.sh",
        "bash --rcfile ./evil.sh",
        "bash --init-file=./evil.sh -i",
        "fish -C 'rm -rf x'",
        "fish --init-command='rm -rf x'",
        "zsh -i -Z",
        "bash <<EOF\nrm -rf x\nEOF",
        "cat <<EOF\n$(rm -rf x)\nEOF",
        "hash -p /bin/rm ls; ls -rf x",
        // Found by trying to get past these rules.
        "env -iS'rm -rf' x",
        "env --split-string='rm -rf' x",
        "git -c alias.x='!rm -rf y' x",
        "sudo --us=root rm -rf x",
        "timeout --sig=KILL 5 rm -rf x",
        "xargs -a list rm -rf",
        "ssh host 'rm -rf x'",
        "cat <<< \"$(rm -rf x)\"",
        "if true;then rm -rf x;fi",
        "[[ -n x ]] && rm -rf x",
        "PAGER='rm -rf x' git log",
        "env GIT_SSH_COMMAND='rm -rf x' git fetch",
        "PATH=.:$PATH ls -rf x",
        "LD_PRELOAD=./x.so ls",
        "alias ls=rm; ls -rf x",
    ];
    for line in lines {
        let decision = decide(&policy, &command("bash", line)).await;
        match decision {
            PermissionDecision::Deny { reason } => {
                assert!(reason.contains("`deny Bash(rm -rf:*)`"), "{line:?}: {reason}");
            }
            PermissionDecision::Allow => panic!("{line:?} must be refused by `deny Bash(rm -rf:*)`"),
        }
    }
    // When a rule applies only because part of the line cannot be followed, the reason says so.
    let reason = denial(decide(&policy, &command("bash", "source ./env.sh && ls")).await);
    assert_eq!(
        reason,
        "refused by the rule `deny Bash(rm -rf:*)` in the rules given in code (the command uses `source` (a \
         script file), which the rules cannot follow, so it may run what the rule matches). Do not try to get \
         around it: do something else, or ask the user"
    );
    let reason = denial(decide(&policy, &command("bash", "rm $FLAGS x")).await);
    assert!(reason.contains("uses a program or argument whose value is not known until it runs"), "{reason}");
    let reason = denial(decide(&policy, &command("bash", "rm -fr x")).await);
    assert!(
        reason.starts_with("refused by the rule `deny Bash(rm -rf:*)` in the rules given in code. Do"),
        "{reason}"
    );
    // What it does not match: other flags, another program, the words as data.
    for line in
        ["rm -r x", "rm x", "rm -- -rf", "echo rm -rf", "git commit -m 'rm -rf x'", "rmdir -p x", "ls -rf"]
    {
        assert_eq!(decide(&policy, &command("bash", line)).await, PermissionDecision::Allow, "{line:?}");
    }
}

#[tokio::test]
async fn an_ask_rule_sees_through_too_and_allow_rules_stay_strict() {
    let dir = TempDir::new("perm-ask-through");
    let asker = Arc::new(Recorder {
        answer: PermissionDecision::Deny { reason: "no".into() },
        seen: Mutex::default(),
    });
    let rules = base(dir.path())
        .ask("Bash(git push:*)")
        .allow("Bash(npm run test:*)")
        .allow("Bash(echo:*)")
        .allow("Bash(git:*)")
        .tool_default("bash", Action::Deny)
        .build()
        .unwrap();
    let policy = Policy::new(rules).asker(asker.clone());
    for line in ["git -C x push", "env GIT_DIR=x git push", "if true; then git push; fi", "git $SUB origin"] {
        let reason = denial(decide(&policy, &command("bash", line)).await);
        assert_eq!(reason, "no", "{line:?} went to the asker");
    }
    assert_eq!(asker.seen.lock().unwrap().len(), 4);
    // Allow rules match only lines the strict parser understands, each simple command covered.
    assert_eq!(decide(&policy, &command("bash", "npm run test -- --watch")).await, PermissionDecision::Allow);
    assert_eq!(decide(&policy, &command("bash", "echo a && npm run test")).await, PermissionDecision::Allow);
    for line in [
        "if true; then npm run test; fi",
        "time npm run test",
        "X+=1 npm run test",
        "echo $(rm -rf x)",
        "echo `rm -rf x`",
        "echo a; rm -rf x",
        "npm run test && bash -c 'rm -rf x'",
        "echo x > /etc/passwd",
    ] {
        let reason = denial(decide(&policy, &command("bash", line)).await);
        assert!(reason.starts_with("refused by the default for `bash`"), "{line:?}: {reason}");
    }
}

// ---- Read rules apply to the paths a command names --------------------------------------------

#[tokio::test]
async fn read_rules_cover_the_paths_a_command_names() {
    let dir = TempDir::new("perm-command-reads");
    let root = dir.path();
    write(root.join(".env"), "TOKEN=x\n");
    write(root.join("secrets/key"), "hunter2");
    write(root.join("src/main.rs"), "fn main() {}");
    std::os::unix::fs::symlink(root.join(".env"), root.join("src/innocent")).unwrap();
    let policy = Policy::new(
        base(root)
            .allow("Bash(read-only)")
            .allow("Bash(base64:*)")
            .allow("Bash(cat:*)")
            .deny("Read(./.env)")
            .ask("Read(./secrets/**)")
            .tool_default("bash", Action::Ask)
            .build()
            .unwrap(),
    );
    for line in [
        "cat .env",
        "cat ./.env",
        "cat src/../.env",
        "cd src && cat ../.env",
        "cat src/innocent",
        "head -n1 .env",
        "grep TOKEN .env",
        "grep -f .env src/main.rs",
        "git diff --no-index .env src/main.rs",
        "diff --to-file=.env src/main.rs",
        "git show HEAD:.env",
        "base64 .env",
        "cat .e*",
        "cat {.,}env",
        "cat .{env,x}",
        "cat {src/..,x}/{.e{nv,x},y}",
        "if true; then cat .env; fi",
        "cat < .env",
        "echo \"$(< .env)\"",
        "bash -c 'cat .env'",
    ] {
        let reason = denial(decide(&policy, &command("bash", line)).await);
        assert!(reason.starts_with("refused by the rule `deny Read(./.env)`"), "{line:?}: {reason}");
        assert!(reason.contains("(the command reads `"), "{line:?}: {reason}");
    }
    for line in
        ["cat secrets/key", "ls secrets", "cd secrets && cat key", "cat s*/key", "cat secrets/*", "rg TOKEN"]
    {
        let reason = denial(decide(&policy, &command("bash", line)).await);
        assert!(reason.contains("`ask Read(./secrets/**)`"), "{line:?}: {reason}");
        assert!(reason.contains("says to ask first"), "{line:?}: {reason}");
    }
    assert_eq!(
        denial(decide(&policy, &command("bash", "cat .env")).await),
        "refused by the rule `deny Read(./.env)` in the rules given in code (the command reads `.env`, which the \
         rule covers). Do not try to get around it: do something else, or ask the user"
    );
    // A recursive search of a directory that holds a denied file reads it.
    for line in [
        "grep -r TOKEN .",
        "grep -rn TOKEN",
        "rg --hidden TOKEN",
        "rg -uu TOKEN",
        "git grep --no-index TOKEN",
        "tar cf - . | cat",
        "cp -r . /tmp/copy",
    ] {
        let reason = denial(decide(&policy, &command("bash", line)).await);
        assert!(reason.starts_with("refused by the rule `deny Read(./.env)`"), "{line:?}: {reason}");
        assert!(
            reason.contains("(the command reads `.`, which holds `.env`, which the rule covers)"),
            "{line:?}: {reason}"
        );
    }
    // A line that names more paths than can be checked is refused, and checking stays fast.
    let many = format!("cat {}", "a ".repeat(5000));
    let started = std::time::Instant::now();
    let reason = denial(decide(&policy, &command("bash", &many)).await);
    assert!(reason.contains("(the command reads more than 4096 paths, too many to check"), "{reason}");
    let runner = format!("strace {}", "a ".repeat(20_000));
    let _ = decide(&policy, &command("bash", &runner)).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    // A search elsewhere does not reach it.
    for line in ["cat src/main.rs", "ls -la", "git status", "grep -rn main src", "rg -n TOKEN src"] {
        assert_eq!(decide(&policy, &command("bash", line)).await, PermissionDecision::Allow, "{line:?}");
    }
}

/// The ways past the rules a review of the command reader found, each refused or asked about
/// now: `bash`'s `workdir` (paths taken from there; `git` there is not read-only), `"$'"`,
/// globs in a program or option, assignments by builtins, callbacks, prompt strings, git's
/// subcommand aliases, `trap --`, `~+`, `pushd` and a `cd` to a computed directory.
/// With every command allowed, a Read deny rule still refuses the lines whose brace expansion
/// names the path (the lexer marks braces unknown for command rules; paths are expanded).
#[tokio::test]
async fn read_rules_see_through_brace_expansion_when_every_command_is_allowed() {
    let dir = TempDir::new("perm-braces");
    let root = dir.path();
    write(root.join(".env"), "TOKEN=x\n");
    write(root.join("sub/notes.txt"), "x");
    let policy = Policy::new(base(root).allow("Bash").deny("Read(./.env)").build().unwrap());
    for line in [
        "cat {.,}env",
        "cat .{e,}{n,}{v,}",
        "cat {x,{.,}}env",
        "cat sub/../{.,}env",
        "cat .en{u..w}",
        "cat < {.,}env",
        "cat {x\\},.}env",
        "cat {'x}',.}env",
        "cat {\\{,.}env",
        "cat .e{a..z}{a..z}",
    ] {
        let reason = denial(decide(&policy, &command("bash", line)).await);
        assert!(reason.starts_with("refused by the rule `deny Read(./.env)`"), "{line:?}: {reason}");
    }
    let padded = Policy::new(base(root).allow("Bash").deny("Read(./f01)").build().unwrap());
    for line in ["cat f{01..01}", "cat f{1..01}", "cat f{00..01}"] {
        let reason = denial(decide(&padded, &command("bash", line)).await);
        assert!(reason.starts_with("refused by the rule `deny Read(./f01)`"), "{line:?}: {reason}");
    }
    let decision = decide(&policy, &command("bash", "cat sub/{notes,other}.txt")).await;
    assert_eq!(decision, PermissionDecision::Allow);
}

#[tokio::test]
async fn spellings_of_bash_that_slipped_past_the_rules_are_caught() {
    let dir = TempDir::new("perm-spellings");
    let root = dir.path();
    write(root.join(".env"), "TOKEN=x\n");
    write(root.join("sub/notes.txt"), "x");
    let policy = Policy::new(
        base(root)
            .allow("Bash(read-only)")
            .allow("Bash(cat:*)")
            .deny("Bash(rm:*)")
            .deny("Bash(git push:*)")
            .deny("Read(./.env)")
            .tool_default("bash", Action::Ask)
            .build()
            .unwrap(),
    );
    let in_sub = |line: &str| {
        let mut request = PermissionRequest::new(
            PermissionKind::Command { command: line.to_owned(), workdir: Some(root.join("sub")) },
            format!("run `{line}` in sub"),
        );
        request.tool = "bash".to_owned();
        request
    };
    let reason = denial(decide(&policy, &in_sub("cat ../.env")).await);
    assert!(reason.starts_with("refused by the rule `deny Read(./.env)`"), "{reason}");
    // Read-only in the root, not in another directory, whose repository may be another's.
    assert_eq!(decide(&policy, &command("bash", "git status")).await, PermissionDecision::Allow);
    let reason = denial(decide(&policy, &in_sub("git status")).await);
    assert!(reason.contains("says to ask first"), "{reason}");
    let reason = denial(decide(&policy, &command("bash", "cd sub && git status")).await);
    assert!(reason.contains("says to ask first"), "{reason}");
    assert_eq!(decide(&policy, &in_sub("cat notes.txt")).await, PermissionDecision::Allow);
    for line in [
        "echo \"$'\" ; rm x ; echo '\" \\'",
        "/bin/r[m] x",
        "rm -[q-s]f d",
        "export BASH_ENV=s.sh; bash -c true",
        "trap -- 'rm x' EXIT",
        "mapfile -C 'rm x;:' -c 1 a <<< 1",
        "PS4='$(rm x)'; set -x; :",
        "X='a[$(rm x)]'; echo $((X))",
        "git -c alias.p=push p origin",
    ] {
        let reason = denial(decide(&policy, &command("bash", line)).await);
        assert!(reason.contains("`deny Bash("), "{line:?}: {reason}");
    }
    for line in ["cat ~+/.env", "pushd sub >/dev/null; cat ../.env", "cd \"$(echo sub)\" && cat ../.env"] {
        let reason = denial(decide(&policy, &command("bash", line)).await);
        assert!(reason.starts_with("refused by the rule `deny Read(./.env)`"), "{line:?}: {reason}");
    }
}
