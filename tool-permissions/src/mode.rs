//! Permission modes (Claude Code's `permissions.defaultMode`): what happens to a call no rule
//! decides, and a handle that switches the mode of an installed policy at run time.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, RwLock};

use crate::catalog::{Access, ToolCatalog};
use crate::rules::Action;
use crate::shell;

/// What happens to a call that no rule (and no `default` of the rules) decides, as Claude Code's
/// modes define it. Rules come first in every mode: an allow rule allows, a deny rule refuses
/// and an ask rule asks, whatever the mode.
///
/// | unmatched call | `default` | `acceptEdits` | `plan` | `dontAsk` | `bypassPermissions` |
/// |---|---|---|---|---|---|
/// | read-only tool, read-only command | allow | allow | allow | allow | allow |
/// | file edit in the workspace | ask | allow | deny | deny | allow |
/// | `mkdir`, `touch`, `mv`, `cp` of workspace paths | ask | allow | deny | deny | allow |
/// | sandboxed command, `autoAllowBashIfSandboxed` | allow | allow | deny | allow | allow |
/// | other command, other tool (mounted ones too) | ask | ask | deny | deny | allow |
/// | file edit of a protected path (`.git`, `.claude`, `.vscode`, `.bashrc`, ...) | ask | ask | deny | deny | ask |
///
/// Protected paths are Claude Code's: what runs code or decides the policy (git's metadata and
/// hooks, the agents' settings and instructions, editors' and shells' configuration). No mode
/// lets a file tool change them unasked, not even `bypassPermissions`; a rule naming them can.
/// Reading them is a read. Beneath `.claude`, Claude Code's commands, agents and skills
/// (`.claude/skills/x/SKILL.md`) are ordinary edits, as in Claude Code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum PermissionMode {
    /// Reads run; anything else no rule allows is asked about.
    #[default]
    Default,
    /// As `Default`, and file edits in the workspace run without asking.
    AcceptEdits,
    /// Reads run; anything that may change something and that no rule allows is refused.
    Plan,
    /// As `Default`, but what would be asked about is refused.
    DontAsk,
    /// Everything no rule refuses or asks about runs.
    BypassPermissions,
}

impl PermissionMode {
    /// Every mode, in Claude Code's order.
    pub const ALL: [PermissionMode; 5] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::DontAsk,
        PermissionMode::BypassPermissions,
    ];

    /// The mode's name in a settings file (`acceptEdits`).
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::BypassPermissions => "bypassPermissions",
        }
    }

    /// Parses a mode's name (`manual` is Claude Code's other name for `default`).
    pub fn parse(text: &str) -> Option<PermissionMode> {
        match text {
            "manual" => Some(PermissionMode::Default),
            _ => PermissionMode::ALL.into_iter().find(|mode| mode.as_str() == text),
        }
    }
}

impl From<tool_settings::Mode> for PermissionMode {
    fn from(mode: tool_settings::Mode) -> PermissionMode {
        match mode {
            tool_settings::Mode::Default | tool_settings::Mode::Manual => PermissionMode::Default,
            tool_settings::Mode::AcceptEdits => PermissionMode::AcceptEdits,
            tool_settings::Mode::Plan => PermissionMode::Plan,
            tool_settings::Mode::DontAsk => PermissionMode::DontAsk,
            tool_settings::Mode::BypassPermissions => PermissionMode::BypassPermissions,
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The mode of a policy, shared with the application: [`Policy::mode_switch`] hands one out
/// before the policy is installed, and [`ModeSwitch::set`] changes the mode of every call
/// decided after it (as Claude Code's Shift+Tab does).
///
/// [`Policy::mode_switch`]: crate::Policy::mode_switch
#[derive(Debug, Clone)]
pub struct ModeSwitch(Arc<RwLock<(PermissionMode, Arc<str>)>>);

impl ModeSwitch {
    pub(crate) fn new(mode: PermissionMode, origin: Arc<str>) -> Self {
        ModeSwitch(Arc::new(RwLock::new((mode, origin))))
    }

    /// The current mode.
    pub fn get(&self) -> PermissionMode {
        self.read().0
    }

    /// Switches the mode; decisions name it as set by the application.
    pub fn set(&self, mode: PermissionMode) {
        self.set_from(mode, "set by the application");
    }

    pub(crate) fn set_from(&self, mode: PermissionMode, origin: impl Into<Arc<str>>) {
        let mut guard = self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        *guard = (mode, origin.into());
    }

    pub(crate) fn read(&self) -> (PermissionMode, Arc<str>) {
        self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

/// What a call no rule decided asks for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Unmatched<'a> {
    /// The call as a whole (a tool that asks about no command or path).
    Call,
    /// Running a command line.
    Command(&'a str),
    /// Using a path of the workspace (resolved), and the name the call gave it when a link
    /// made them differ.
    Path { path: &'a Path, named: Option<&'a Path> },
    /// Typing into a running command (`bash_input`) that runs this command line.
    Input(&'a str),
}

/// How a mode sees what was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Reads,
    Edits,
    Sandboxed,
    Other,
    /// A change to a protected path ([`PROTECTED`]).
    Protected,
}

/// Claude Code's `acceptEdits` also runs these filesystem commands without asking.
const FILE_COMMANDS: &[&str] = &["mkdir", "touch", "mv", "cp"];

/// Whether each simple command of `command` only reads, or is one of [`FILE_COMMANDS`] naming
/// workspace paths only (no absolute path, `~`, `..` or expansion), with at least one of the
/// latter.
fn edits_files(command: &str) -> bool {
    edited_paths(command).is_some_and(|paths| !paths.is_empty())
}

/// The paths the [`FILE_COMMANDS`] of `command` name, relative to the directory it runs in,
/// when each simple command of it only reads or is one of those naming workspace paths only
/// (see [`edits_files`]); `None` otherwise. Relative paths of plain names, not yet followed:
/// the policy follows their links and checks the rules on them (see `Policy::settle`).
pub(crate) fn edited_paths(command: &str) -> Option<Vec<String>> {
    Some(file_commands(command)?.into_iter().flat_map(|command| command.paths).collect())
}

/// One of the [`FILE_COMMANDS`] of a line.
pub(crate) struct FileCommand {
    /// The paths it names.
    pub(crate) paths: Vec<String>,
    /// What it copies or moves ([`sources`]).
    pub(crate) sources: Vec<String>,
}

/// The [`FILE_COMMANDS`] of `command`, when it is one [`edited_paths`] judges.
pub(crate) fn file_commands(command: &str) -> Option<Vec<FileCommand>> {
    let parts = shell::simple_commands(command)?;
    let mut commands = Vec::new();
    let mut edits = false;
    for part in &parts {
        let all: Vec<&str> = part.split_whitespace().collect();
        let Some((&program, rest)) = all.split_first() else { continue };
        // After a change of directory the relative paths are no longer the workspace's.
        if CHANGES_DIRECTORY.contains(&program) {
            return None;
        }
        if FILE_COMMANDS.contains(&program) {
            let copies = matches!(program, "cp" | "mv");
            let (mut paths, mut target, mut options_end, mut next_is_target) =
                (Vec::new(), None, false, false);
            for &word in rest {
                if !options_end && word == "--" {
                    options_end = true;
                } else if !options_end && word.starts_with('-') {
                    if !names_a_workspace_path(word) {
                        return None;
                    }
                    // The target directory, as `-t DIR` or `--target-directory DIR`; in a bundle
                    // (`-rt`) or abbreviated (`--target`) it is not followed: asked about.
                    let long = word.starts_with("--");
                    next_is_target = copies && (word == "-t" || word == "--target-directory");
                    let hidden_target = if long { word.starts_with("--t") } else { word.contains('t') };
                    if copies && hidden_target && !next_is_target {
                        return None;
                    }
                } else {
                    // A path (after `--`, one that starts with `-` too).
                    if !plain_relative_path(word) || protected(Path::new(word)) {
                        return None;
                    }
                    if std::mem::take(&mut next_is_target) {
                        target = Some(paths.len());
                    }
                    paths.push(word.to_owned());
                }
            }
            // What `cp` or `mv` copies or moves: all but the destination (the last path, or
            // the one `-t` names).
            let sources = match (copies, target) {
                (false, _) => Vec::new(),
                (true, Some(at)) => {
                    paths.iter().enumerate().filter(|(i, _)| *i != at).map(|(_, p)| p.clone()).collect()
                }
                (true, None) => paths[..paths.len().saturating_sub(1)].to_vec(),
            };
            commands.push(FileCommand { paths, sources });
            edits = true;
        } else if !shell::classify(part).is_read_only() {
            return None;
        }
    }
    edits.then_some(commands)
}

/// Commands after which relative paths name something else.
const CHANGES_DIRECTORY: &[&str] = &["cd", "pushd", "popd"];

/// Names whose content runs code or decides the policy, that no permission mode lets a file
/// tool change without asking (Claude Code's protected paths): those the sandbox keeps commands
/// from writing (`tool_sandbox::DEFAULT_PROTECTED`: git's metadata, the agents' settings,
/// instructions and MCP servers, shell start-up files, git's own configuration), and editors'
/// workspace settings and git hook managers' directories (tasks, extensions and hooks run code).
const PROTECTED: &[&[&str]] = &[tool_sandbox::DEFAULT_PROTECTED, &[".husky", ".vscode", ".idea"]];

/// Where Claude Code keeps what a model writes for the agent on purpose (its slash commands,
/// subagents and skills): beneath `.claude`, but not protected from the file tools, so that
/// `acceptEdits` and `bypassPermissions` write them unasked, as in Claude Code. Commands still
/// cannot (the sandbox keeps the whole of `.claude` read-only).
const AGENT_AUTHORED: &[&str] = &["commands", "agents", "skills"];

/// Whether a component of `path` is one of [`PROTECTED`], other than a `.claude` followed by one
/// of [`AGENT_AUTHORED`].
pub(crate) fn protected(path: &Path) -> bool {
    let mut parts = path.components().map(|part| part.as_os_str()).peekable();
    while let Some(part) = parts.next() {
        if !PROTECTED.iter().copied().flatten().any(|name| part == *name) {
            continue;
        }
        let authored =
            part == ".claude" && parts.peek().is_some_and(|next| AGENT_AUTHORED.iter().any(|n| next == n));
        if !authored {
            return true;
        }
    }
    false
}

/// Whether `word`, an argument of one of [`FILE_COMMANDS`], can only name a path beneath the
/// working directory: a flag without an attached value (`-p`, `--parents`, `--`), or a relative
/// path of plain characters without a `..` component. Anything the shell would expand or unquote
/// (`$`, `~`, quotes, backslashes, globs, braces) and any option carrying its own value
/// (`-t/tmp`, `--target-directory=/tmp`) is not judged: the command is then asked about.
fn names_a_workspace_path(word: &str) -> bool {
    if let Some(flag) = word.strip_prefix('-') {
        let flag = flag.strip_prefix('-').unwrap_or(flag);
        return flag.chars().all(|c| c.is_ascii_alphabetic() || c == '-');
    }
    plain_relative_path(word)
}

/// Whether `word` is a relative path of plain characters without a `..` component.
fn plain_relative_path(word: &str) -> bool {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._/+@%,:-".contains(c);
    !word.is_empty()
        && word.chars().all(plain)
        && !word.starts_with('/')
        && !word.split('/').any(|part| part == "..")
}

/// How `mode` sees `asked` of `tool`.
pub(crate) fn class(
    catalog: &ToolCatalog,
    tool: &str,
    asked: Unmatched<'_>,
    sandboxed: Option<&(dyn Fn(&str) -> bool + Send + Sync)>,
) -> Class {
    let by_access = || match catalog.access_of(tool) {
        Some(Access::ReadOnly) => Class::Reads,
        Some(Access::Edits) => Class::Edits,
        None => Class::Other,
    };
    match asked {
        // What runs code or holds the policy (git's metadata and hooks, the agents' settings) is
        // never an ordinary edit: every mode asks about changing it. Reading it is a read.
        Unmatched::Path { path, named } => match by_access() {
            Class::Reads => Class::Reads,
            _ if protected(path) || named.is_some_and(protected) => Class::Protected,
            class => class,
        },
        Unmatched::Call => by_access(),
        Unmatched::Command(command) => {
            if shell::classify(command).is_read_only() {
                Class::Reads
            } else if sandboxed.is_some_and(|sandboxed| sandboxed(command)) {
                Class::Sandboxed
            } else if edits_files(command) {
                Class::Edits
            } else {
                Class::Other
            }
        }
        Unmatched::Input(command) if sandboxed.is_some_and(|sandboxed| sandboxed(command)) => {
            Class::Sandboxed
        }
        Unmatched::Input(_) => Class::Other,
    }
}

/// What `mode` does with what it sees as `class`.
pub(crate) fn action(mode: PermissionMode, class: Class) -> Action {
    use PermissionMode as M;
    match (mode, class) {
        (_, Class::Reads) => Action::Allow,
        (M::Plan | M::DontAsk, Class::Protected) => Action::Deny,
        (_, Class::Protected) => Action::Ask,
        (M::BypassPermissions, _) => Action::Allow,
        (M::Plan, _) => Action::Deny,
        (M::AcceptEdits, Class::Edits) => Action::Allow,
        (M::Default | M::AcceptEdits | M::DontAsk, Class::Sandboxed) => Action::Allow,
        (M::DontAsk, _) => Action::Deny,
        (M::Default | M::AcceptEdits, _) => Action::Ask,
    }
}

/// The rule that would allow what was asked for, and the mode too when one would, in words:
/// `` `allow Bash(python3:*)` would `` for a command, `` `allow Edit(./src/main.rs)` or the mode
/// `acceptEdits` would `` for an edit; for a command line the rules cannot read whole (a
/// comment, an expansion), what it would take to write it so that one would.
pub(crate) fn would_allow(
    catalog: &ToolCatalog,
    root: &Path,
    tool: &str,
    asked: Unmatched<'_>,
    class: Class,
) -> String {
    let name = catalog.rule_name_of(tool);
    let rule = match asked {
        Unmatched::Call | Unmatched::Input(_) => format!("`allow {name}`"),
        Unmatched::Command(command) => {
            // A rule for each program of the line (`ls; touch x` needs both), by its first word.
            let parts = shell::simple_commands(command).unwrap_or_else(|| {
                command.split([';', '&', '|', '\n', '(', ')', '`']).map(str::to_owned).collect()
            });
            let mut programs: Vec<&str> = Vec::new();
            for part in &parts {
                // Past the assignments before it (`FOO=1 node`) and the shell's keywords.
                let keyword = |word: &&str| {
                    matches!(
                        *word,
                        "if" | "then" | "else" | "elif" | "fi" | "do" | "done" | "while" | "until" | "!"
                    )
                };
                let Some(program) =
                    part.split_whitespace().find(|word| !word.contains('=') && !keyword(word))
                else {
                    continue;
                };
                if !programs.contains(&program) {
                    programs.push(program);
                }
            }
            if programs.is_empty() {
                programs.push(command.split_whitespace().next().unwrap_or(command));
            }
            let rules: Vec<String> =
                programs.iter().map(|program| format!("`allow {name}({program}:*)`")).collect();
            let rules = rules.join(" with ");
            // Allow rules reach only lines they read whole: the rule is no help as the line is.
            if let Some(what) = shell::not_read_whole(command) {
                return format!(
                    "{rules} would for the line written without {what}, which allow rules do not look through"
                );
            }
            rules
        }
        Unmatched::Path { path, .. } => match path.strip_prefix(root) {
            Ok(inside) => format!("`allow {name}(./{})`", inside.display()),
            Err(_) => format!("`allow {name}(/{})`", path.display()),
        },
    };
    if class == Class::Edits {
        format!("{rule} or the mode `acceptEdits` would")
    } else {
        format!("{rule} would")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Policy, Rules, Subject};
    use tool_core::{PermissionDecision, PermissionHook, PermissionKind, PermissionRequest};

    fn request(tool: &str, kind: PermissionKind) -> PermissionRequest {
        let mut request = PermissionRequest::new(kind, "do it");
        request.tool = tool.to_owned();
        request
    }

    /// The rule a refusal suggests is one that would allow the line; for a line allow rules do
    /// not look through, it says what stands in the way (the rule may be there already).
    #[tokio::test]
    async fn a_refusal_suggests_a_rule_that_would_allow_the_line() {
        let catalog = ToolCatalog::new()
            .subject("bash", Subject::Command)
            .rule_name("Bash", ["bash"])
            .hook_name("bash", "Bash");
        let rules = Rules::builder("/w").catalog(catalog).allow("Bash(sleep:*)").build().unwrap();
        let policy = Policy::new(rules).with_mode(PermissionMode::DontAsk);
        let reason = |command: &str| {
            let asked = request("bash", PermissionKind::Command { command: command.into(), workdir: None });
            let policy = &policy;
            async move {
                match policy.decide(&asked).await {
                    PermissionDecision::Deny { reason } => reason,
                    other => panic!("{other:?}"),
                }
            }
        };
        assert_eq!(
            policy
                .decide(&request(
                    "bash",
                    PermissionKind::Command { command: "sleep 1".into(), workdir: None }
                ))
                .await,
            PermissionDecision::Allow
        );
        let python = reason("python3 -V").await;
        assert!(python.contains("no rule allows this, `allow Bash(python3:*)` would)"), "{python}");
        assert!(
            reason("sleep 1 # why").await.contains(
                "no rule allows this, `allow Bash(sleep:*)` would for the line written without a comment, which \
                 allow rules do not look through)"
            ),
            "{}",
            reason("sleep 1 # why").await
        );
    }

    #[tokio::test]
    async fn an_application_switches_the_mode_of_an_installed_policy() {
        let catalog = ToolCatalog::new()
            .subject("bash", Subject::Command)
            .subject("edit", Subject::Path)
            .access("edit", Access::Edits)
            .rule_name("Edit", ["edit"])
            .hook_name("edit", "Edit");
        let rules = Rules::builder("/w").catalog(catalog).build().unwrap();
        let policy = Policy::new(rules).with_mode(PermissionMode::Default);
        let switch = policy.mode_switch();
        let edit = request("edit", PermissionKind::Path { path: "/w/src/a.rs".into(), named: None });
        let PermissionDecision::Deny { reason } = policy.decide(&edit).await else { panic!("asked") };
        assert_eq!(
            reason,
            "the permission mode `default` (set by the application; no rule allows this, `allow \
             Edit(./src/a.rs)` or the mode `acceptEdits` would) says to ask first, and nobody is here to \
             answer, so it was not done. Do something else, or ask the user to allow it"
        );
        switch.set(PermissionMode::AcceptEdits);
        assert_eq!(policy.mode(), PermissionMode::AcceptEdits);
        assert_eq!(policy.decide(&edit).await, PermissionDecision::Allow);
        switch.set(PermissionMode::Plan);
        let ls = request("bash", PermissionKind::Command { command: "ls -la".into(), workdir: None });
        assert_eq!(policy.decide(&ls).await, PermissionDecision::Allow);
        let touch = request("bash", PermissionKind::Command { command: "touch x".into(), workdir: None });
        let PermissionDecision::Deny { reason } = policy.decide(&touch).await else { panic!("ran") };
        assert!(reason.starts_with("refused by the permission mode `plan`"), "{reason}");
        assert!(reason.contains("`allow bash(touch:*)`"), "{reason}");
    }

    /// `acceptEdits` runs a file command unasked only where it lets a file tool change the same
    /// paths: with the links on them followed, Edit rules and protected paths apply.
    #[tokio::test]
    async fn file_commands_meet_edit_rules_and_protected_paths_where_their_links_lead() {
        let root = std::env::temp_dir().join(format!("mode-file-commands-{}", std::process::id()));
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("keep")).unwrap();
        std::os::unix::fs::symlink(".git/hooks", root.join("hk")).unwrap();
        std::os::unix::fs::symlink("..", root.join("up")).unwrap();
        let catalog = ToolCatalog::new()
            .subject("bash", Subject::Command)
            .subject("edit", Subject::Path)
            .access("edit", Access::Edits)
            .rule_name("Edit", ["edit"]);
        let rules = Rules::builder(&root)
            .catalog(catalog)
            .deny("Edit(./Cargo.lock)")
            .ask("Edit(./keep/**)")
            .build()
            .unwrap();
        let policy = Policy::new(rules).with_mode(PermissionMode::AcceptEdits);
        let decide = |command: &str| {
            let request =
                request("bash", PermissionKind::Command { command: command.to_owned(), workdir: None });
            let policy = &policy;
            async move { policy.decide(&request).await }
        };
        let refused = |decision: PermissionDecision| match decision {
            PermissionDecision::Deny { reason } => reason,
            other => panic!("allowed: {other:?}"),
        };
        assert_eq!(decide("mkdir -p src/a && cp a.txt b.txt").await, PermissionDecision::Allow);
        assert_eq!(
            decide("mkdir -p payload && cp a.txt payload && mv b.txt payload/").await,
            PermissionDecision::Allow
        );
        let reason = refused(decide("cp a.txt Cargo.lock").await);
        assert!(reason.starts_with("refused by the rule `deny Edit(./Cargo.lock)`"), "{reason}");
        for command in
            ["cp a.txt keep/a", "cp -t keep a.txt", "cp a.txt keep", "mkdir keep/x", "mv keep kept"]
        {
            let reason = refused(decide(command).await);
            assert!(reason.starts_with("the rule `ask Edit(./keep/**)`"), "{command}: {reason}");
        }
        // Through links: into git's hooks (protected), out of the workspace; and directories
        // copied or moved, which carry names of their own (`payload/.claude`, a denied file).
        std::fs::create_dir_all(root.join("payload/.claude")).unwrap();
        std::fs::create_dir_all(root.join("-payload/.claude")).unwrap();
        for command in [
            "cp a.txt hk/pre-commit",
            "mkdir -p hk/x/y",
            "cp a.txt up/escaped.txt",
            "cp -r payload/. .",
            "cp -r payload keep2",
            "mv payload z",
            "cp -t . -r payload/.",
            "cp -rT -- -payload .",
            "cp -rt sub payload",
            "cp -r --target sub payload",
        ] {
            let reason = refused(decide(command).await);
            assert!(reason.starts_with("the permission mode `acceptEdits`"), "{command}: {reason}");
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn file_commands_of_workspace_paths_count_as_edits() {
        assert!(edits_files("mkdir -p src/a && touch src/a/b.rs"));
        assert!(edits_files("cp a b; ls"));
        assert!(!edits_files("ls"));
        assert!(!edits_files("cp a /etc/b"));
        assert!(!edits_files("mv ../a b"));
        assert!(!edits_files("touch ~/x"));
        // Options carrying a path, quotes, escapes and globs are not judged.
        assert!(!edits_files("mv -t/tmp a"));
        assert!(!edits_files("cp --target-directory=/tmp .env"));
        assert!(!edits_files("cp --target=/tmp .env"));
        assert!(!edits_files("touch \"/tmp/x\""));
        assert!(!edits_files("touch '../x'"));
        assert!(!edits_files("touch \\/tmp/x"));
        assert!(!edits_files("cp .env /tm?/x"));
        assert!(!edits_files("mkdir {/tmp/x,y}"));
        assert!(edits_files("mkdir -p --verbose -- src/a"));
        assert!(edits_files("mv -t dir a"));
        // Not after a change of directory, nor on what runs code.
        assert!(!edits_files("cd .. && touch x"));
        assert!(!edits_files("cd /etc; mv a b"));
        assert!(!edits_files("cp x .git/config"));
        assert!(!edits_files("mkdir -p .claude/hooks"));
        assert!(!edits_files("cp x sub/.git/hooks/pre-commit"));
        assert!(protected(Path::new("/w/.claude/settings.json")) && !protected(Path::new("/w/src/git.rs")));
        // What Claude Code lets its file tools write unasked beneath `.claude`, and no more.
        assert!(!protected(Path::new("/w/.claude/skills/review/SKILL.md")));
        assert!(
            !protected(Path::new("/w/.claude/commands/x.md")) && !protected(Path::new("/w/.claude/agents"))
        );
        assert!(protected(Path::new("/w/.claude/skills/.git/config")));
        assert!(protected(Path::new("/w/.git/.claude/skills/x")));
        assert!(protected(Path::new("/w/.claude/hooks/x.sh")) && protected(Path::new("/w/.claude/skillsx")));
        assert!(protected(Path::new("/w/.claude")) && protected(Path::new("/w/.claude/settings.local.json")));
        assert!(!edits_files("mkdir -p .claude/hooks"));
        assert!(!edits_files("mkdir $HOME/x"));
        assert!(!edits_files("mkdir a && rm -rf b"));
        assert_eq!(PermissionMode::parse("manual"), Some(PermissionMode::Default));
        assert_eq!(PermissionMode::parse("auto"), None);
    }
}
