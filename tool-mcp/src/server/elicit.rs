//! Asking the person at the MCP client what a permission rule says to ask about, with an
//! `elicitation/create` request, when the client declared the `elicitation` capability.

use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use serde_json::Value;

use tool_core::BoxFuture;
use tool_core::{PermissionDecision, PermissionHook, PermissionKind, PermissionRequest};
use tool_permissions::unanswered;

use super::client_line::{AskFailure, ClientLine};

/// How long the server waits for the client's user to answer a question unless configured.
pub const DEFAULT_ELICITATION_TIMEOUT: Duration = Duration::from_secs(300);

/// The longest stretch of a call's arguments quoted in a question.
const ARGUMENTS_SHOWN: usize = 600;

/// The property of the requested schema that carries the answer.
const ALLOW: &str = "allow";

/// Answers the asks of one call by asking its client's user.
pub(crate) struct ClientAsker {
    pub(crate) line: ClientLine,
    pub(crate) timeout: Duration,
}

impl PermissionHook for ClientAsker {
    fn decide<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionDecision> {
        Box::pin(self.ask(request))
    }
}

impl ClientAsker {
    async fn ask(&self, request: &PermissionRequest) -> PermissionDecision {
        let asked_by = asked_by(request);
        let rule = asked_by.as_str();
        if let Some(why) = self.line.elicitation_refusal() {
            return PermissionDecision::Deny { reason: unanswered(rule, why) };
        }
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question(request, rule),
            requested_schema: answer_schema(),
        };
        let reason = match self.line.elicit(params, self.timeout).await {
            Ok(answer) => match answer.action {
                ElicitationAction::Accept if approves(answer.content.as_ref()) => {
                    return PermissionDecision::Allow;
                }
                ElicitationAction::Accept => format!("the user answered not to allow it ({rule} asked them)"),
                ElicitationAction::Decline => format!("the user declined it ({rule} asked them)"),
                _ => format!("the user dismissed the question without allowing it ({rule} asked them)"),
            },
            Err(AskFailure::Unavailable(why)) => {
                return PermissionDecision::Deny { reason: unanswered(rule, &why) };
            }
            Err(AskFailure::Timeout(timeout)) => {
                let why = format!(
                    "the MCP client's user did not answer within {}",
                    tool_core::words::duration(timeout)
                );
                return PermissionDecision::Deny { reason: unanswered(rule, &why) };
            }
            Err(AskFailure::Refused(error) | AskFailure::Failed(error)) => {
                let why = format!("asking the MCP client's user failed ({error})");
                return PermissionDecision::Deny { reason: unanswered(rule, &why) };
            }
        };
        PermissionDecision::Deny {
            reason: format!("{reason}. Do not try to get around it: do something else, or ask the user why"),
        }
    }
}

/// Accepted, and not with `allow: false`: a client that shows only accept and decline sends no
/// content, and its accept is the approval.
fn approves(content: Option<&Value>) -> bool {
    match content.and_then(|content| content.get(ALLOW)) {
        None => true,
        Some(allow) => *allow == Value::Bool(true),
    }
}

fn answer_schema() -> ElicitationSchema {
    ElicitationSchema::builder()
        .optional_bool_with(ALLOW, |schema| {
            schema.title("Allow").description("Let the tool do this once").with_default(true)
        })
        .build_unchecked()
}

/// What the user reads: the tool, what it wants to do, and the rule that asked.
/// What asks about `request`, for the sentences about it: the rule that said to ask, else what
/// asks without a rule (the sandbox for more rights, the proxy for a host), so that a refusal
/// never blames a rule that does not exist.
fn asked_by(request: &PermissionRequest) -> String {
    if let Some(rule) = request.details.get("rule").and_then(Value::as_str) {
        return rule.to_owned();
    }
    match &request.kind {
        PermissionKind::SandboxEscalation { .. } => {
            "the sandbox (the command asks for more rights than it gives)".to_owned()
        }
        PermissionKind::NetworkHost { .. } => "the network proxy (no rule names the host)".to_owned(),
        _ => "the permission policy".to_owned(),
    }
}

fn question(request: &PermissionRequest, rule: &str) -> String {
    let what = match &request.kind {
        PermissionKind::Call { arguments } => {
            let mut shown = arguments.to_string();
            if shown.len() > ARGUMENTS_SHOWN {
                let mut end = ARGUMENTS_SHOWN;
                while !shown.is_char_boundary(end) {
                    end -= 1;
                }
                shown.truncate(end);
                shown.push_str("...");
            }
            format!("Allow a call of the tool `{}` with the arguments {shown}?", request.tool)
        }
        // The sandbox's network proxy met a host no rule names: no rule asked.
        PermissionKind::NetworkHost { host, .. } => {
            return format!(
                "Allow the tool `{}` to {}?\n\nAsked because no network rule allows `{host}`; \
                 declining refuses only this host.",
                request.tool, request.description
            );
        }
        _ => format!("Allow the tool `{}` to {}?", request.tool, request.description),
    };
    format!("{what}\n\nAsked because {rule} says to ask first.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_accept_approves_unless_it_says_allow_false() {
        assert!(approves(None));
        assert!(approves(Some(&json!({}))));
        assert!(approves(Some(&json!({"allow": true}))));
        assert!(!approves(Some(&json!({"allow": false}))));
        assert!(!approves(Some(&json!({"allow": "no"}))));
    }

    #[test]
    fn the_question_names_the_tool_what_it_wants_and_the_rule() {
        let mut request = PermissionRequest::new(
            PermissionKind::Command { command: "rm -r build".to_owned(), workdir: None },
            "run `rm -r build`",
        );
        request.tool = "bash".to_owned();
        assert_eq!(
            question(&request, "the rule `ask Bash(rm:*)` in settings.json"),
            "Allow the tool `bash` to run `rm -r build`?\n\nAsked because the rule `ask Bash(rm:*)` in \
             settings.json says to ask first."
        );
        let mut call = PermissionRequest::new(
            PermissionKind::Call { arguments: json!({"text": "é".repeat(400)}) },
            "call `echo`",
        );
        call.tool = "echo".to_owned();
        let asked = question(&call, "the default for `echo`");
        assert!(asked.starts_with("Allow a call of the tool `echo` with the arguments {\"text\":\"éé"));
        assert!(asked.contains("...?"), "{asked}");
    }

    #[test]
    fn the_schema_asks_for_one_boolean() {
        let schema = serde_json::to_value(answer_schema()).unwrap();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["allow"]["type"], "boolean");
        assert_eq!(schema["properties"]["allow"]["default"], true);
    }
}
