//! Permission requests a tool raises with `ToolContext::ask`, and the hooks that answer them.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::future::BoxFuture;

/// What a tool wants permission for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PermissionKind {
    /// Touching a path outside the workspace root.
    ExternalDirectory {
        /// The resolved path that lies outside the root.
        path: PathBuf,
        /// The path as the call named it, when that is not `path`: see [`PermissionKind::Path`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        named: Option<PathBuf>,
    },
    /// Using a path inside the workspace root (asked for every path a file tool resolves, so
    /// that rules can match it).
    Path {
        /// The resolved absolute path.
        path: PathBuf,
        /// The absolute path as the call named it (`.` and `..` taken lexically, symbolic
        /// links not followed), when that is not `path`: a link, or a name beneath one. A rule
        /// that refuses either path refuses the request, so a link does not lead past a rule
        /// about its own name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        named: Option<PathBuf>,
    },
    /// A call as a whole, before its tool runs (asked by a permission policy when a rule about
    /// the tool says `ask`).
    Call {
        /// The call's validated arguments.
        arguments: Value,
    },
    /// Running a shell command.
    Command {
        /// The command line.
        command: String,
        /// The directory it starts in, when not the workspace root (`bash`'s `workdir`): the
        /// paths the line names are taken from there, and `git` there may be another
        /// repository's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workdir: Option<std::path::PathBuf>,
    },
    /// Typing into a command that is running (a background session's input or terminal): a
    /// shell or an interpreter runs what it reads, so this is decided like running a command.
    Input {
        /// The running command's id (its session).
        session_id: u64,
        /// The command line the session runs (`python3`, `bash -i`, ...).
        command: String,
        /// What is typed: the text, then keys as the bytes they send; a line end where the
        /// input is closed.
        text: String,
        /// What was typed before on the line `text` continues (nothing since its last line
        /// end): the command reads it together with `text`.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        line_so_far: String,
        /// The programs of the command's other processes that may read what is typed (a job in
        /// the terminal's foreground, `python3` started in a shell), by their executables' base
        /// names, `""` for one that could not be told; empty when none runs.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        readers: Vec<String>,
        /// The terminal's line-editing keys or input flags are not the ones a terminal starts
        /// with (`stty kill Q`, `iuclc`): what a typed line becomes cannot be told from its keys.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        keys_changed: bool,
        /// The command reads a terminal, whose line editor applies the keys typed (a carriage
        /// return ends a line); otherwise a pipe, which passes every character on as it is.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        terminal: bool,
        /// The command is not waiting for input (it waits for a job, runs a builtin, sleeps):
        /// what reads the text, and when, cannot be told from what runs now.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        busy: bool,
    },
    /// Repeating the same call several times in a row.
    RepeatedCall {
        /// How many identical calls in a row, including this one.
        count: u32,
    },
    /// Running a shell command with more rights than the sandbox gives it (`escalated`: no
    /// sandbox; `network`: the network on). Only a person (or a rule) can grant it: the default
    /// policy refuses it, since nobody is there to answer.
    SandboxEscalation {
        /// The command line.
        command: String,
        /// The rights asked for, in words.
        rights: String,
        /// Why the model says it needs them.
        justification: String,
    },
    /// Letting a sandboxed command reach a network host that no rule allows (asked by the
    /// egress proxy when the command connects). Decided like [`SandboxEscalation`]: only a
    /// person can grant it (the policy's asker, or the MCP client's elicitation); nobody there
    /// means refused.
    ///
    /// [`SandboxEscalation`]: PermissionKind::SandboxEscalation
    NetworkHost {
        /// The command line whose process connects.
        command: String,
        /// The host it connects to, as the client named it (lower case).
        host: String,
        /// The port.
        port: u16,
    },
    /// Anything else, named by the tool.
    Other {
        /// A short machine-readable name for the permission.
        name: String,
    },
}

/// A request for permission, raised from inside a tool.
#[derive(Clone, Serialize, Deserialize)]
pub struct PermissionRequest {
    /// What is asked for.
    pub kind: PermissionKind,
    /// A one-line description for a person deciding.
    pub description: String,
    /// The tool asking.
    pub tool: String,
    /// The call asking.
    pub call_id: String,
    /// Extra details for a UI.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
    /// Who answers for the person behind the call, when its caller has someone to ask (see
    /// [`CallOptions::asker`](crate::CallOptions)): a hook that would refuse for want of a person
    /// asks it instead. Set by [`ToolContext::ask`](crate::ToolContext::ask); not serialized,
    /// not compared.
    #[serde(skip)]
    pub asker: Option<Arc<dyn PermissionHook>>,
}

impl fmt::Debug for PermissionRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PermissionRequest")
            .field("kind", &self.kind)
            .field("description", &self.description)
            .field("tool", &self.tool)
            .field("call_id", &self.call_id)
            .field("details", &self.details)
            .field("asker", &self.asker.is_some())
            .finish()
    }
}

impl PartialEq for PermissionRequest {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.description == other.description
            && self.tool == other.tool
            && self.call_id == other.call_id
            && self.details == other.details
    }
}

impl PermissionRequest {
    /// A request of `kind` with a description; the context fills in tool and call id.
    pub fn new(kind: PermissionKind, description: impl Into<String>) -> Self {
        PermissionRequest {
            kind,
            description: description.into(),
            tool: String::new(),
            call_id: String::new(),
            details: Value::Null,
            asker: None,
        }
    }

    /// Attaches UI details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }
}

/// The answer to a permission request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum PermissionDecision {
    /// Go ahead.
    Allow,
    /// Refused; the reason reaches the model.
    Deny {
        /// Why, in words the model can act on.
        reason: String,
    },
}

/// Decides permission requests. May await a person (a UI prompt) before answering.
pub trait PermissionHook: Send + Sync + 'static {
    /// Answers one request.
    fn decide<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionDecision>;

    /// What this hook says, without asking anyone, about the paths `tool` finds by itself (the
    /// files a search opens, the entries a walk lists) rather than being given: the screen they
    /// must pass. A hook that denies or asks about some paths returns a screen that stops them,
    /// since nobody can be asked about each file of a walk. The default lets every path pass.
    fn path_screen(&self, tool: &str) -> PathScreen {
        let _ = tool;
        PathScreen::default()
    }
}

/// A shared hook.
impl<H: PermissionHook + ?Sized> PermissionHook for Arc<H> {
    fn decide<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionDecision> {
        (**self).decide(request)
    }

    fn path_screen(&self, tool: &str) -> PathScreen {
        (**self).path_screen(tool)
    }
}

/// Why a [`PathScreen`] stopped a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Screened {
    /// `true` when the rule says to ask (nobody can be asked about each file a walk finds),
    /// `false` when it denies.
    pub ask: bool,
    /// What stopped it, for the reader of a result: "the rule `deny Read(./.env)` in FILE".
    pub because: Arc<str>,
}

type ScreenFn = dyn Fn(&Path) -> Option<Screened> + Send + Sync;

/// The check a tool applies to every path it finds by itself (a walk's entries, the files a
/// search opens): built once per call by [`PermissionHook::path_screen`], cheap per path.
///
/// The default screen lets everything pass.
#[derive(Clone, Default)]
pub struct PathScreen {
    check: Option<Arc<ScreenFn>>,
}

impl fmt::Debug for PathScreen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PathScreen").field("empty", &self.is_empty()).finish()
    }
}

impl PathScreen {
    /// A screen that stops the absolute paths for which `check` says why.
    pub fn new(check: impl Fn(&Path) -> Option<Screened> + Send + Sync + 'static) -> Self {
        PathScreen { check: Some(Arc::new(check)) }
    }

    /// Whether it lets every path pass (so a tool need not even build the absolute paths).
    pub fn is_empty(&self) -> bool {
        self.check.is_none()
    }

    /// Why the absolute path `path` is stopped, or `None` when it passes.
    pub fn check(&self, path: &Path) -> Option<Screened> {
        self.check.as_ref().and_then(|check| check(path))
    }
}

/// The default policy: allows ordinary requests, denies paths outside the workspace root
/// (nobody is there to answer) and repeated identical calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultPermissions;

impl PermissionHook for DefaultPermissions {
    fn decide<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionDecision> {
        // A person may be there after all: the MCP client of the call (elicitation).
        if let (PermissionKind::SandboxEscalation { .. } | PermissionKind::NetworkHost { .. }, Some(asker)) =
            (&request.kind, request.asker.clone())
        {
            return Box::pin(async move { asker.decide(request).await });
        }
        let decision = match &request.kind {
            PermissionKind::ExternalDirectory { path, .. } => PermissionDecision::Deny {
                reason: format!(
                    "{} is outside the workspace root; only paths inside the workspace may be used",
                    path.display()
                ),
            },
            PermissionKind::RepeatedCall { count } => PermissionDecision::Deny {
                reason: format!(
                    "this exact call (same tool, same arguments) was made {count} times in a row, which looks like a loop, so it was not run; change the arguments or try a different approach"
                ),
            },
            PermissionKind::SandboxEscalation { command, rights, .. } => PermissionDecision::Deny {
                reason: format!(
                    "running `{command}` with {rights} needs a person's approval, and nobody is here to answer; \
                     run it inside the sandbox, or ask the user to run it"
                ),
            },
            PermissionKind::NetworkHost { host, port, .. } => PermissionDecision::Deny {
                reason: format!(
                    "connecting to {host}:{port} needs a person's approval, and nobody is here to answer"
                ),
            },
            _ => PermissionDecision::Allow,
        };
        Box::pin(std::future::ready(decision))
    }
}

/// Allows every request.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl PermissionHook for AllowAll {
    fn decide<'a>(&'a self, _request: &'a PermissionRequest) -> BoxFuture<'a, PermissionDecision> {
        Box::pin(std::future::ready(PermissionDecision::Allow))
    }
}

/// A permission hook from an async closure.
pub struct PermissionFn<F>(pub F);

impl<F> fmt::Debug for PermissionFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PermissionFn")
    }
}

impl<F, Fut> PermissionHook for PermissionFn<F>
where
    F: Fn(PermissionRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = PermissionDecision> + Send + 'static,
{
    fn decide<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionDecision> {
        Box::pin((self.0)(request.clone()))
    }
}
