//! Permission requests a tool raises with `ToolContext::ask`, and the hooks that answer them.

use std::path::PathBuf;

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
    },
    /// Using a path inside the workspace root (asked for every path a file tool resolves, so
    /// that rules can match it).
    Path {
        /// The resolved absolute path.
        path: PathBuf,
    },
    /// A call as a whole, before its tool runs (asked by a [`Policy`](crate::permissions::Policy)
    /// when a rule about the tool says `ask`).
    Call {
        /// The call's validated arguments.
        arguments: Value,
    },
    /// Running a shell command.
    Command {
        /// The command line.
        command: String,
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
    /// Anything else, named by the tool.
    Other {
        /// A short machine-readable name for the permission.
        name: String,
    },
}

/// A request for permission, raised from inside a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// The default policy: allows ordinary requests, denies paths outside the workspace root
/// (nobody is there to answer) and repeated identical calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultPermissions;

impl PermissionHook for DefaultPermissions {
    fn decide<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionDecision> {
        // A person may be there after all: the MCP client of the call (elicitation).
        if let (PermissionKind::SandboxEscalation { .. }, Some(asker)) =
            (&request.kind, crate::permissions::call_asker())
        {
            return Box::pin(async move { asker.decide(request).await });
        }
        let decision = match &request.kind {
            PermissionKind::ExternalDirectory { path } => PermissionDecision::Deny {
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

impl<F, Fut> PermissionHook for PermissionFn<F>
where
    F: Fn(PermissionRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = PermissionDecision> + Send + 'static,
{
    fn decide<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionDecision> {
        Box::pin((self.0)(request.clone()))
    }
}
