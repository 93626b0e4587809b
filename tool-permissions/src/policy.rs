//! The one place that decides: rules, hook commands and the asker, plugged into a dispatcher as
//! its permission hook (commands and paths a tool asks about), a before-hook (the call as a
//! whole, `PreToolUse`) and an after-hook (`PostToolUse`).

use std::sync::Arc;

use serde_json::{Value, json};

use tool_core::{
    AfterHook, BeforeDecision, BeforeHook, BoxFuture, DefaultPermissions, DispatcherBuilder, HookCall,
    PermissionDecision, PermissionHook, PermissionKind, PermissionRequest, ReadOnlyCalls, ToolError,
    ToolOutput,
};

use crate::catalog::Subject;
use crate::mode::{self, ModeSwitch, PermissionMode, Unmatched};
use crate::rules::{Action, Because, Rules, Verdict};
use crate::settings::{HookCommands, Settings};

/// Permission rules, hook commands and an asker, installed on a dispatcher with
/// [`PolicyExt::policy`].
///
/// A call goes through, in order: the `PreToolUse` hook commands (which may deny it, rewrite its
/// arguments, or say allow / ask), the rules about the tool as a whole, then, inside the tool,
/// the rules about each command or path it asks about (`ToolContext::ask`). What no rule
/// decides, the [`PermissionMode`] does. An `ask` goes to the asker; without one it is refused
/// with a message naming the rule or the mode. After the tool, the `PostToolUse` hook commands
/// see its result.
///
/// A clone shares the asker and the [`ModeSwitch`]: switching the mode of one switches both.
#[derive(Clone)]
pub struct Policy {
    rules: Rules,
    hooks: HookCommands,
    asker: Option<Arc<dyn PermissionHook>>,
    mode: ModeSwitch,
    sandboxed: Option<SandboxedFn>,
}

/// Whether a command line runs in a sandbox.
type SandboxedFn = Arc<dyn Fn(&str) -> bool + Send + Sync>;

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("rules", &self.rules)
            .field("pre_tool_use", &self.hooks.pre_tool_use.len())
            .field("post_tool_use", &self.hooks.post_tool_use.len())
            .field("asker", &self.asker.is_some())
            .field("mode", &self.mode.get())
            .field("sandboxed", &self.sandboxed.is_some())
            .finish()
    }
}

impl Policy {
    /// A policy of `rules` alone, with nobody to ask: what no rule decides is allowed (the mode
    /// [`PermissionMode::BypassPermissions`], in which rules still refuse and ask).
    pub fn new(rules: Rules) -> Self {
        let mode = ModeSwitch::new(PermissionMode::BypassPermissions, "a policy of rules alone".into());
        Policy { rules, hooks: HookCommands::default(), asker: None, mode, sandboxed: None }
    }

    /// The rules, hook commands and permission mode of a settings file, with nobody to ask. A
    /// file that names no `permissions.defaultMode` (and was given none with
    /// [`Settings::or_mode`]) keeps the rules alone, as [`Policy::new`].
    pub fn from_settings(settings: Settings) -> Self {
        let mut policy = Policy::new(settings.rules);
        policy.hooks = settings.hooks;
        if let Some((mode, origin)) = settings.mode {
            policy.mode.set_from(mode, origin);
        }
        policy
    }

    /// Decides what no rule decides as `mode` says.
    pub fn with_mode(self, mode: PermissionMode) -> Self {
        self.mode.set(mode);
        self
    }

    /// The permission mode now.
    pub fn mode(&self) -> PermissionMode {
        self.mode.get()
    }

    /// A handle on the mode that stays valid once the policy is installed: switching it changes
    /// how every later call is decided.
    pub fn mode_switch(&self) -> ModeSwitch {
        self.mode.clone()
    }

    /// Commands for which `sandboxed` says they run in a sandbox run without asking when no
    /// rule decides them, in the modes `default`, `acceptEdits` and `dontAsk` (Claude Code's
    /// `sandbox.autoAllowBashIfSandboxed`; `plan` still refuses them).
    pub fn sandboxed_commands(mut self, sandboxed: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.sandboxed = Some(Arc::new(sandboxed));
        self
    }

    /// Runs the hook commands in `sandbox` (see [`tool_sandbox`]) instead of unconfined.
    #[cfg(feature = "command-hooks")]
    pub fn hook_sandbox(mut self, sandbox: Arc<tool_sandbox::Sandbox>) -> Self {
        self.hooks.sandbox = Some(sandbox);
        self
    }

    /// Who answers the requests a rule or a hook says to `ask` about (a person, through a UI).
    /// The request's `details.rule` names the rule. Without an asker they are refused.
    /// A shared asker is an `Arc` of one.
    pub fn asker(mut self, asker: impl PermissionHook) -> Self {
        self.asker = Some(Arc::new(asker));
        self
    }

    /// The rules.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// `verdict`, or, when no rule decided, the mode's answer. A default that allows (`default`,
    /// `defaults`, `external_directory`) is no rule naming a protected path: a change to one
    /// is asked about as every mode asks.
    fn settle(&self, tool: &str, asked: Unmatched<'_>, verdict: Verdict) -> Verdict {
        let allowed_by_default = verdict.action == Action::Allow
            && matches!(
                verdict.because,
                Because::Default | Because::ToolDefault(_) | Because::ExternalDefault
            );
        if verdict.because != Because::Unmatched && !allowed_by_default {
            return verdict;
        }
        let (mode, origin) = self.mode.read();
        let catalog = self.rules.catalog();
        let mut class = mode::class(catalog, tool, asked, self.sandboxed.as_deref());
        if let (mode::Class::Edits, Unmatched::Command(command)) = (class, asked) {
            match self.command_edits(command) {
                Ok(checked) => class = checked,
                Err(verdict) => return verdict,
            }
        }
        if allowed_by_default && class != mode::Class::Protected {
            return verdict;
        }
        let would = mode::would_allow(catalog, self.rules.root(), tool, asked, class);
        Verdict { action: mode::action(mode, class), because: Because::Mode { mode, origin, would } }
    }

    /// How a mode sees `command`, whose file commands (`mkdir`, `cp`, ...) name workspace paths
    /// only: as the file tools' edits of those paths are seen. Each path, its links followed,
    /// must be beneath the root (else it is asked about), not protected (else every mode asks),
    /// and no Edit or Read rule may deny or ask about it (that rule's verdict, then).
    fn command_edits(&self, command: &str) -> Result<mode::Class, Verdict> {
        let root = self.rules.root();
        let Some(commands) = mode::file_commands(command) else { return Ok(mode::Class::Other) };
        // A directory copied or moved carries names of its own (`cp -r vendor/. .` can bring a
        // `.claude` or a denied file along): asked about, as the file tools cannot copy one.
        // A word as named from the root, and where its links lead.
        let resolve = |word: &str| {
            let named = tool_sandbox::lexically_normal(&root.join(word));
            let path = crate::command_paths::follow(&named).unwrap_or_else(|| named.clone());
            (named, path)
        };
        let copies_a_directory =
            commands.iter().flat_map(|command| &command.sources).any(|source| resolve(source).1.is_dir());
        let paths: Vec<String> = commands.into_iter().flat_map(|command| command.paths).collect();
        let editor = self.rules.catalog().tools_named(EDIT_RULES).into_iter().next();
        let editor = editor.unwrap_or_else(|| EDIT_RULES.to_owned());
        let names: Vec<&std::ffi::OsStr> =
            paths.iter().filter_map(|word| std::path::Path::new(word).file_name()).collect();
        for word in &paths {
            let (named, path) = resolve(word);
            let Ok(inside) = path.strip_prefix(root) else { return Ok(mode::Class::Other) };
            if mode::protected(inside) {
                return Ok(mode::Class::Protected);
            }
            // A directory's content changes with it (`mv dir`), and what is copied or moved
            // into it lands beneath it under its own name (`cp a.txt dir`).
            let mut changed = vec![(path.clone(), named.clone())];
            if std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_dir()) {
                for name in names.iter().copied().chain([std::ffi::OsStr::new("*")]) {
                    changed.push((path.join(name), named.join(name)));
                }
            }
            for (path, named) in changed {
                let verdict = self.rules.decide_path(&editor, &path, Some(&named), false);
                if verdict.action != Action::Allow && matches!(verdict.because, Because::Rule { .. }) {
                    return Err(verdict);
                }
            }
        }
        Ok(if copies_a_directory { mode::Class::Other } else { mode::Class::Edits })
    }

    fn classifies_commands(&self) -> bool {
        self.rules.catalog().has_command_arguments()
    }

    fn has_post_hooks(&self) -> bool {
        !self.hooks.post_tool_use.is_empty()
    }

    /// Answers `request` as `verdict` says: at once, or through the asker.
    async fn answer(
        &self,
        request: &PermissionRequest,
        action: Action,
        because: String,
    ) -> PermissionDecision {
        match action {
            Action::Allow => PermissionDecision::Allow,
            Action::Deny => PermissionDecision::Deny { reason: refused(&because) },
            Action::Ask => match self.asker.clone().or_else(|| request.asker.clone()) {
                Some(asker) => {
                    self.notify_asking(request).await;
                    let mut request = request.clone();
                    let mut details = match request.details {
                        Value::Object(map) => map,
                        _ => serde_json::Map::new(),
                    };
                    details.insert("rule".to_owned(), Value::String(because));
                    request.details = Value::Object(details);
                    asker.decide(&request).await
                }
                None => PermissionDecision::Deny { reason: unanswered(&because, "nobody is here to answer") },
            },
        }
    }
}

/// The rule name of the tools that change files.
const EDIT_RULES: &str = "Edit";

/// Why an ask was refused when nobody answered it (`why`: who could not), in the words every
/// refusal of an unanswered ask uses.
pub fn unanswered(because: &str, why: &str) -> String {
    format!(
        "{because} says to ask first, and {why}, so it was not done. Do something else, or ask the user to \
         allow it"
    )
}

fn refused(because: &str) -> String {
    format!("refused by {because}. Do not try to get around it: do something else, or ask the user")
}

fn verdict_reason(verdict: &Verdict, request: &PermissionRequest) -> String {
    match (&verdict.because, &request.kind, verdict.action) {
        // The same words as the default policy's, since the same thing happened.
        (Because::ExternalDefault, PermissionKind::ExternalDirectory { path, .. }, Action::Deny) => format!(
            "{} is outside the workspace root; only paths inside the workspace may be used",
            path.display()
        ),
        (because, _, _) => because.to_string(),
    }
}

impl PermissionHook for Policy {
    fn decide<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionDecision> {
        let tool = request.tool.as_str();
        let verdict = match &request.kind {
            PermissionKind::Command { command, workdir } => {
                // A mode judges the line as run from the root: `cd WORKDIR && command`.
                let moved = workdir
                    .as_deref()
                    .filter(|dir| *dir != self.rules.root())
                    .map(|dir| crate::shell::in_directory(dir, command));
                let asked = Unmatched::Command(moved.as_deref().unwrap_or(command));
                self.settle(tool, asked, self.rules.decide_command_in(tool, command, workdir.as_deref()))
            }
            PermissionKind::Path { path, named } => {
                let asked = Unmatched::Path { path, named: named.as_deref() };
                self.settle(tool, asked, self.rules.decide_path(tool, path, named.as_deref(), false))
            }
            PermissionKind::ExternalDirectory { path, named } => {
                // Settled by the mode only beneath an additional directory: elsewhere outside
                // the root, the external default decides what no rule did.
                let asked = Unmatched::Path { path, named: named.as_deref() };
                self.settle(tool, asked, self.rules.decide_path(tool, path, named.as_deref(), true))
            }
            PermissionKind::Input { .. } => return Box::pin(self.decide_input(request)),
            // Only a person can grant it: the policy's asker, or the call's (MCP elicitation).
            PermissionKind::SandboxEscalation { .. } | PermissionKind::NetworkHost { .. } => {
                return match self.asker.clone().or_else(|| request.asker.clone()) {
                    Some(asker) => Box::pin(async move {
                        self.notify_asking(request).await;
                        asker.decide(request).await
                    }),
                    None => DefaultPermissions.decide(request),
                };
            }
            PermissionKind::RepeatedCall { .. } => {
                return match &self.asker {
                    Some(asker) => asker.decide(request),
                    None => DefaultPermissions.decide(request),
                };
            }
            _ => return Box::pin(std::future::ready(PermissionDecision::Allow)),
        };
        if verdict.action == Action::Deny && verdict.because == Because::ExternalDefault {
            let reason = verdict_reason(&verdict, request);
            return Box::pin(std::future::ready(PermissionDecision::Deny { reason }));
        }
        Box::pin(async move { self.answer(request, verdict.action, verdict_reason(&verdict, request)).await })
    }

    fn path_screen(&self, tool: &str) -> tool_core::PathScreen {
        self.rules.path_screen(tool)
    }
}

/// The policy's before-hook: `PreToolUse` hook commands, then the rules about the whole call.
struct Gate(Arc<Policy>);

impl BeforeHook for Gate {
    fn before<'a>(&'a self, call: &'a HookCall) -> BoxFuture<'a, Result<BeforeDecision, ToolError>> {
        Box::pin(self.0.check_call(call))
    }
}

/// What the `PreToolUse` hooks said, together.
#[derive(Default)]
struct HookSays {
    rewritten: Option<Value>,
    allow: bool,
    ask: Option<String>,
    /// How many hooks ran.
    ran: usize,
}

impl Policy {
    async fn check_call(&self, call: &HookCall) -> Result<BeforeDecision, ToolError> {
        let says = match self.pre_tool_use(call).await? {
            Ok(says) => says,
            Err(denied) => return Ok(denied),
        };
        let Verdict { action, because } =
            self.settle(&call.tool, Unmatched::Call, self.rules.decide_call(&call.tool));
        // A hook's `allow` lifts the ask of the mode or of a tool's default, not one a rule makes
        // (as in Claude Code, a matching ask rule still asks).
        let (action, because) = match (action, &says.ask) {
            (Action::Ask, _) if says.allow && !because.is_a_rule() => (Action::Allow, because.to_string()),
            (Action::Allow, Some(hook)) => (Action::Ask, hook.clone()),
            _ => (action, because.to_string()),
        };
        let mut request = PermissionRequest::new(
            PermissionKind::Call {
                arguments: says.rewritten.clone().unwrap_or_else(|| call.arguments.clone()),
            },
            format!("call `{}`", call.tool),
        );
        request.tool = call.tool.clone();
        request.call_id = call.call_id.clone();
        request.asker.clone_from(&call.asker);
        if let PermissionDecision::Deny { reason } = self.answer(&request, action, because).await {
            return Ok(BeforeDecision::Deny { reason });
        }
        Ok(match says.rewritten {
            Some(arguments) => BeforeDecision::Rewrite(arguments),
            None => BeforeDecision::Allow,
        })
    }

    /// Runs the matching `PreToolUse` hooks of a call in order; each sees the arguments the one
    /// before left. `Ok(Err(deny))` when one denied the call. A tool that asks about what is
    /// typed into a session has its hooks run when it asks (see [`Policy::decide_input`]).
    async fn pre_tool_use(&self, call: &HookCall) -> Result<Result<HookSays, BeforeDecision>, ToolError> {
        if self.rules.catalog().subject_of(&call.tool) == Some(Subject::Input) {
            return Ok(Ok(HookSays::default()));
        }
        let hooks = self.run_pre_hooks(&call.tool, &call.call_id, &call.session_id, &call.arguments, true);
        match hooks.await {
            Ok(says) => Ok(Ok(says)),
            Err(HookStop::Denied(reason)) => Ok(Err(BeforeDecision::Deny { reason })),
            Err(HookStop::Failed { hook, problem }) => Err(ToolError::execution(format!(
                "The call to `{}` was not run: its PreToolUse hook `{hook}` {problem}. This is a problem with \
                 the hook, not with the arguments; tell the user.",
                call.tool
            ))),
        }
    }

    /// Runs the `Notification` hooks (those whose matcher matches `permission_prompt`) before a
    /// person is asked `request`, with Claude Code's input (`hook_event_name`, `cwd`, `message`,
    /// `notification_type`) and the asking tool's names. What they print decides nothing, and
    /// one that fails does not stop the question.
    async fn notify_asking(&self, request: &PermissionRequest) {
        #[cfg(feature = "command-hooks")]
        {
            const KIND: &str = "permission_prompt";
            let other_name = self.rules.catalog().hook_name_of(&request.tool);
            let name = other_name.as_deref().unwrap_or(&request.tool);
            for hook in self.hooks.notification.iter().filter(|hook| hook.matcher.matches(KIND, None)) {
                let event = json!({
                    "session_id": null,
                    "hook_event_name": "Notification",
                    "cwd": self.rules.root(),
                    "message": format!("tools needs your permission to use {name}: {}", request.description),
                    "notification_type": KIND,
                    "tool_name": name,
                    "tool_name_native": request.tool,
                    "tool_use_id": request.call_id,
                });
                let _ = hook.session_event(&event, self.rules.root(), self.hooks.sandbox.as_deref()).await;
            }
        }
        #[cfg(not(feature = "command-hooks"))]
        let _ = request;
    }

    /// Runs the `SessionStart` hooks whose matcher matches `source` (Claude Code's sources:
    /// `startup` for a new session), in order, with Claude Code's input (`session_id`,
    /// `hook_event_name`, `cwd`, `source`). Their output decides nothing; what each failed one
    /// said is returned, for the operator.
    #[cfg(feature = "command-hooks")]
    pub async fn session_start(&self, session_id: &str, source: &str) -> Vec<String> {
        self.session_hooks(&self.hooks.session_start, "SessionStart", ("source", source), session_id).await
    }

    /// Runs the `SessionEnd` hooks whose matcher matches `reason` (Claude Code's reasons:
    /// `prompt_input_exit` when the client went away, `other`), as
    /// [`Policy::session_start`] does.
    #[cfg(feature = "command-hooks")]
    pub async fn session_end(&self, session_id: &str, reason: &str) -> Vec<String> {
        self.session_hooks(&self.hooks.session_end, "SessionEnd", ("reason", reason), session_id).await
    }

    #[cfg(feature = "command-hooks")]
    async fn session_hooks(
        &self,
        hooks: &[crate::settings::HookCommand],
        event_name: &str,
        (key, value): (&str, &str),
        session_id: &str,
    ) -> Vec<String> {
        let mut failed = Vec::new();
        for hook in hooks.iter().filter(|hook| hook.matcher.matches(value, None)) {
            let event = json!({
                "session_id": session_id,
                "hook_event_name": event_name,
                "cwd": self.rules.root(),
                key: value,
            });
            if let Err(problem) =
                hook.session_event(&event, self.rules.root(), self.hooks.sandbox.as_deref()).await
            {
                failed.push(format!("the {event_name} hook `{}` {problem}", hook.command));
            }
        }
        failed
    }

    /// Runs the `PreToolUse` hooks matching `tool` with `tool_input`, in order.
    #[cfg(feature = "command-hooks")]
    async fn run_pre_hooks(
        &self,
        tool: &str,
        call_id: &str,
        session_id: &str,
        tool_input: &Value,
        may_rewrite: bool,
    ) -> Result<HookSays, HookStop> {
        use super::command_hooks::{HookViews, MAX_PATCH_FILES, PreVerdict, from_hook_input, hook_views};
        let mut says = HookSays::default();
        let other_name = self.rules.catalog().hook_name_of(tool);
        let other_name = other_name.as_deref();
        // One event, or one per file of a patch, each matched by the name it is shown with, and
        // its `if` by the file it is about; made again only once a hook rewrote the input.
        let mut shown_views: Option<HookViews> = None;
        for hook in self.hooks.pre_tool_use.iter() {
            let input = says.rewritten.clone();
            let input = input.as_ref().unwrap_or(tool_input);
            let HookViews { views, by_file, too_many } =
                shown_views.get_or_insert_with(|| hook_views(other_name, input, self.rules.root()));
            let file_hook = || ["Edit", "Write"].iter().any(|name| hook.matcher.matches(tool, Some(name)));
            if let Some(files) = too_many.filter(|_| file_hook()) {
                return Err(HookStop::Denied(format!(
                    "the patch changes {files} files, and PreToolUse hooks are shown a patch file by file, at \
                     most {MAX_PATCH_FILES} of them: split it into patches of fewer files"
                )));
            }
            let by_file = *by_file;
            // A file of a patch: its `if` matched as for this tool's call on the file, and as for
            // a call of the tools its name (`Write`, `Edit`) covers.
            let fires = |name: Option<&str>, shown: &Value| match (by_file, shown.get("file_path")) {
                (true, Some(path)) => {
                    let file = json!({ "path": path });
                    hook.fires_for(tool, &file)
                        || name.is_some_and(|name| {
                            self.rules
                                .catalog()
                                .tools_named(name)
                                .iter()
                                .any(|other| hook.fires_for(other, &file))
                        })
                }
                _ => hook.fires_for(tool, input),
            };
            let matching: Vec<(Option<String>, Value)> = views
                .iter()
                .filter(|(name, shown)| {
                    hook.matcher.matches(tool, name.as_deref()) && fires(name.as_deref(), shown)
                })
                .cloned()
                .collect();
            for (name, shown) in matching {
                let event = json!({
                    "session_id": session_id,
                    "hook_event_name": "PreToolUse",
                    "cwd": self.rules.root(),
                    "tool_name": name.as_deref().unwrap_or(tool),
                    "tool_name_native": tool,
                    "tool_input": shown,
                    "tool_use_id": call_id,
                });
                let failed = |problem: String| HookStop::Failed { hook: hook.command.clone(), problem };
                let decision = hook
                    .pre_tool_use(&event, self.rules.root(), self.hooks.sandbox.as_deref())
                    .await
                    .map_err(failed)?;
                if let Some(input) = decision.updated_input {
                    if !may_rewrite {
                        return Err(failed(
                            "answered with `updatedInput`, which cannot change what is typed into a session \
                         (allow, ask or deny it instead)"
                                .to_owned(),
                        ));
                    }
                    if !by_file {
                        says.rewritten = Some(from_hook_input(&event["tool_input"], input));
                        shown_views = None;
                    } else if input != event["tool_input"] {
                        // One file of a patch (given back as shown, it changes nothing).
                        return Err(failed(
                            "answered with `updatedInput` for one file of a patch, which cannot be rewritten \
                             file by file (allow, ask or deny it instead)"
                                .to_owned(),
                        ));
                    }
                }
                says.ran += 1;
                match decision.decision {
                    None => {}
                    Some(PreVerdict::Allow) => says.allow = true,
                    Some(PreVerdict::Ask(reason)) => {
                        says.ask = Some(format!("the PreToolUse hook `{}` ({reason})", hook.command));
                    }
                    Some(PreVerdict::Deny(reason)) => {
                        return Err(HookStop::Denied(format!(
                            "the PreToolUse hook `{}` refused it: {reason}",
                            hook.command
                        )));
                    }
                }
            }
        }
        Ok(says)
    }

    #[cfg(not(feature = "command-hooks"))]
    async fn run_pre_hooks(
        &self,
        _tool: &str,
        _call_id: &str,
        _session_id: &str,
        _tool_input: &Value,
        _may_rewrite: bool,
    ) -> Result<HookSays, HookStop> {
        let _ = json!(null);
        Ok(HookSays::default())
    }

    /// Typing into a running command: the `PreToolUse` hooks of the tool (their `tool_input`
    /// holds `session_id`, `session_command` and `text`), then the rules
    /// ([`decide_input`](super::input::decide_input)). A hook's `allow` lets the default ask
    /// about a shell or interpreter through, not a rule's.
    async fn decide_input(&self, request: &PermissionRequest) -> PermissionDecision {
        let PermissionKind::Input {
            session_id,
            command,
            text,
            line_so_far,
            readers,
            keys_changed,
            terminal,
            busy,
        } = &request.kind
        else {
            return PermissionDecision::Allow;
        };
        let typed = format!("{line_so_far}{text}");
        let typing = super::input::Typing {
            command,
            typed: &typed,
            readers,
            keys_changed: *keys_changed,
            terminal: *terminal,
            busy: *busy,
        };
        // `command`: the lines as the session will run them (as a terminal's line editor leaves
        // them), where a `Bash` hook looks for it: typing into a shell runs commands, which
        // Claude Code's hooks see as `Bash` calls.
        let (edited, unresolved) = super::input::edited_lines(&typing);
        let mut tool_input =
            json!({"session_id": session_id, "session_command": command, "text": text, "command": edited});
        if !line_so_far.is_empty() {
            tool_input["line_so_far"] = json!(line_so_far);
        }
        if !readers.is_empty() {
            tool_input["session_readers"] = json!(readers);
        }
        for (name, set) in
            [("session_keys_changed", keys_changed), ("session_terminal", terminal), ("session_busy", busy)]
        {
            if *set {
                tool_input[name] = json!(true);
            }
        }
        let session = request.details.get("session").and_then(Value::as_str).unwrap_or_default();
        let says = match self
            .run_pre_hooks(&request.tool, &request.call_id, session, &tool_input, false)
            .await
        {
            Ok(says) => says,
            Err(HookStop::Denied(reason)) => return PermissionDecision::Deny { reason },
            Err(HookStop::Failed { hook, problem }) => {
                return PermissionDecision::Deny {
                    reason: format!(
                        "the PreToolUse hook `{hook}` {problem}, so nothing was typed. This is a problem with \
                         the hook, not with the text; tell the user"
                    ),
                };
            }
        };
        let verdict = super::input::decide_input(&self.rules, &request.tool, &typing);
        let mut verdict = self.settle(&request.tool, Unmatched::Input(command), verdict);
        // Keys whose effect on the line cannot be known (cursor, history, completion): the
        // hooks did not see what will run, so it is asked about unless one of them allowed it.
        if unresolved && says.ran > 0 && !says.allow && verdict.action == Action::Allow {
            verdict = Verdict {
                action: Action::Ask,
                because: Because::UnseenInput(command.chars().take(80).collect()),
            };
        }
        let (action, because) = match (verdict.action, &verdict.because, &says.ask) {
            (Action::Ask, Because::InputDefault(_), _) if says.allow => {
                (Action::Allow, verdict.because.to_string())
            }
            (Action::Allow, _, Some(hook)) => (Action::Ask, hook.clone()),
            (action, because, _) => (action, because.to_string()),
        };
        self.answer(request, action, because).await
    }
}

/// Why the `PreToolUse` hooks stopped a call.
#[cfg_attr(not(feature = "command-hooks"), allow(dead_code))]
enum HookStop {
    /// A hook denied it (the reason names the hook).
    Denied(String),
    /// A hook failed: which one, and how.
    Failed { hook: String, problem: String },
}

/// The policy's after-hook: the `PostToolUse` hook commands.
struct After(Arc<Policy>);

impl AfterHook for After {
    fn after<'a>(
        &'a self,
        call: &'a HookCall,
        output: ToolOutput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(self.0.post_tool_use(call, output))
    }
}

impl Policy {
    #[cfg(feature = "command-hooks")]
    async fn post_tool_use(&self, call: &HookCall, mut output: ToolOutput) -> Result<ToolOutput, ToolError> {
        let other_name = self.rules.catalog().hook_name_of(&call.tool);
        let other_name = other_name.as_deref();
        for hook in self.hooks.post_tool_use.iter().filter(|hook| {
            hook.matcher.matches(&call.tool, other_name) && hook.fires_for(&call.tool, &call.arguments)
        }) {
            let mut response = json!({"content": output.text_content(), "is_error": output.is_error});
            if let Some(structured) = &output.structured {
                response["structured_content"] = structured.clone();
            }
            let event = json!({
                "session_id": call.session_id,
                "hook_event_name": "PostToolUse",
                "cwd": self.rules.root(),
                "tool_name": other_name.unwrap_or(&call.tool),
                "tool_name_native": call.tool,
                "tool_input": super::command_hooks::hook_input(other_name, &call.arguments, self.rules.root()),
                "tool_response": response,
                "tool_use_id": call.call_id,
            });
            let feedback = hook.post_tool_use(&event, self.rules.root(), self.hooks.sandbox.as_deref()).await.map_err(|problem| {
                ToolError::execution(format!(
                    "The call to `{}` ran, but its PostToolUse hook `{}` {problem}, so its result is withheld. \
                     Check whether the call had its effect before repeating it, and tell the user the hook failed.",
                    call.tool, hook.command
                ))
            })?;
            if let Some(reason) = feedback.blocked {
                output.add_notice(format!("PostToolUse hook `{}`: {reason}", hook.command));
                output.is_error = true;
            }
            if let Some(context) = feedback.context {
                output.add_notice(context);
            }
        }
        Ok(output)
    }

    #[cfg(not(feature = "command-hooks"))]
    async fn post_tool_use(&self, _call: &HookCall, output: ToolOutput) -> Result<ToolOutput, ToolError> {
        Ok(output)
    }
}

impl ReadOnlyCalls for Policy {
    /// Whether this call of `tool` may run under the shared guard although the tool is
    /// exclusive: its command line only reads.
    fn runs_read_only(&self, tool: &str, arguments: &Value) -> bool {
        self.rules.catalog().runs_read_only(tool, arguments)
    }
}

/// Installs a [`Policy`] on a dispatcher.
pub trait PolicyExt {
    /// Installs a permission policy (rules, hook commands, asker): it becomes the permission
    /// hook, its call check (with the `PreToolUse` hooks) and `PostToolUse` hooks are added
    /// after the hooks already added, and, when its rules classify commands, calls of exclusive
    /// tools whose command only reads run beside parallel calls.
    #[must_use]
    fn policy(self, policy: Policy) -> Self;
}

impl PolicyExt for DispatcherBuilder {
    fn policy(self, policy: Policy) -> Self {
        let policy = Arc::new(policy);
        let mut builder = self.permissions(policy.clone()).before_hook(Gate(policy.clone()));
        if policy.has_post_hooks() {
            builder = builder.after_hook(After(policy.clone()));
        }
        if policy.classifies_commands() {
            builder = builder.read_only_calls(policy);
        }
        builder
    }
}
