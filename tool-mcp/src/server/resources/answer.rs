//! What the server answers about its resources, templates and prompts: the capabilities they
//! call for, reads, prompts rendered, completions and subscriptions, and the errors of each.

use rmcp::model::{
    CompleteRequestParams, CompletionInfo, ErrorCode, ErrorData, GetPromptRequestParams, GetPromptResult,
    PromptsCapability, ReadResourceResult, Reference, ResourcesCapability, ServerCapabilities,
};
use serde_json::Value;
use tool_core::words::json_kind;

use super::{
    MAX_COMPLETIONS, MAX_URI_BYTES, Prompt, PromptArguments, PromptEntry, ReadFn, ResourcesAndPrompts,
    SubscribeFn, Target, UriVariables,
};

impl ResourcesAndPrompts {
    /// The capabilities this content calls for, added to `capabilities`.
    pub(crate) fn declare(&self, capabilities: &mut ServerCapabilities, declare: Declared) {
        if declare.resources || !self.resources.is_empty() || !self.templates.is_empty() {
            let mut resources = ResourcesCapability::default();
            resources.subscribe = Some(true);
            resources.list_changed = declare.list_changes.then_some(true);
            capabilities.resources = Some(resources);
        }
        if declare.prompts || !self.prompts.is_empty() {
            let mut prompts = PromptsCapability::default();
            prompts.list_changed = declare.list_changes.then_some(true);
            capabilities.prompts = Some(prompts);
        }
        if capabilities.resources.is_some() || capabilities.prompts.is_some() {
            capabilities.completions = Some(serde_json::Map::new());
        }
    }

    /// The resource or template that serves `uri`, with the template's variables.
    fn find(&self, uri: &str) -> Option<(ReadFn, Option<SubscribeFn>, UriVariables)> {
        if let Some(entry) = self.resources.iter().find(|entry| entry.resource.uri == uri) {
            return Some((entry.read.clone(), entry.subscribe.clone(), UriVariables::new()));
        }
        if uri.len() > MAX_URI_BYTES {
            return None;
        }
        self.templates.iter().find_map(|entry| {
            let variables = entry.pattern.matches(uri)?;
            Some((entry.read.clone(), entry.subscribe.clone(), variables))
        })
    }

    pub(crate) async fn read(&self, uri: String) -> Result<ReadResourceResult, ErrorData> {
        let Some((read, _, variables)) = self.find(&uri) else { return Err(not_found(&uri)) };
        read(uri, variables).await
    }

    pub(crate) async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
    ) -> Result<GetPromptResult, ErrorData> {
        let Some(entry) = self.prompts.iter().find(|entry| entry.prompt.name == request.name) else {
            return Err(unknown_prompt(&request.name, &self.prompts));
        };
        let mut arguments = PromptArguments::new();
        for (name, value) in request.arguments.unwrap_or_default() {
            match value {
                Value::String(value) => {
                    arguments.insert(name, value);
                }
                // An absent optional argument, as some clients send it.
                Value::Null => {}
                other => {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "The argument `{name}` of the prompt `{}` must be a string, not {}.",
                            request.name,
                            json_kind(&other)
                        ),
                        None,
                    ));
                }
            }
        }
        let missing: Vec<&str> = entry
            .prompt
            .arguments
            .iter()
            .flatten()
            .filter(|argument| argument.required == Some(true) && !arguments.contains_key(&argument.name))
            .map(|argument| argument.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(ErrorData::invalid_params(
                format!(
                    "The prompt `{}` needs the argument{} {}: give {} in `arguments`.",
                    request.name,
                    if missing.len() == 1 { "" } else { "s" },
                    quoted(&missing),
                    if missing.len() == 1 { "it" } else { "them" }
                ),
                None,
            ));
        }
        (entry.get)(arguments).await
    }

    pub(crate) async fn complete(&self, request: CompleteRequestParams) -> Result<CompletionInfo, ErrorData> {
        let argument = request.argument.name.clone();
        let context: PromptArguments = request
            .context
            .as_ref()
            .and_then(|context| context.arguments.clone())
            .unwrap_or_default()
            .into_iter()
            .collect();
        let target = match &request.r#ref {
            Reference::Prompt(reference) => {
                let Some(entry) = self.prompts.iter().find(|entry| entry.prompt.name == reference.name)
                else {
                    return Err(unknown_prompt(&reference.name, &self.prompts));
                };
                if let Some(forward) = &entry.complete {
                    return forward(request).await;
                }
                if !prompt_arguments(&entry.prompt).any(|name| name == argument) {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "The prompt `{}` has no argument `{argument}`; its arguments are {}.",
                            reference.name,
                            quoted(&prompt_arguments(&entry.prompt).collect::<Vec<_>>())
                        ),
                        None,
                    ));
                }
                Target::Prompt(reference.name.clone())
            }
            Reference::Resource(reference) => {
                let Some(entry) =
                    self.templates.iter().find(|entry| entry.template.uri_template == reference.uri)
                else {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "No resource template `{}`: completion is for the variables of a template that \
                             resources/templates/list lists.",
                            reference.uri
                        ),
                        None,
                    ));
                };
                if let Some(forward) = &entry.complete {
                    return forward(request).await;
                }
                if !entry.pattern.variables().any(|name| name == argument) {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "The resource template `{}` has no variable `{argument}`; its variables are {}.",
                            reference.uri,
                            quoted(&entry.pattern.variables().collect::<Vec<_>>())
                        ),
                        None,
                    ));
                }
                Target::Template(reference.uri.clone())
            }
            _ => {
                return Err(ErrorData::invalid_params(
                    "Completion is for `ref/prompt` or `ref/resource`.",
                    None,
                ));
            }
        };
        let Some(complete) = self.completions.get(&(target, argument)) else {
            return Ok(CompletionInfo::with_all_values(Vec::new()).unwrap_or_default());
        };
        let mut values = complete(request.argument.value, context).await?;
        let total = values.len();
        values.truncate(MAX_COMPLETIONS);
        let shown = values.len();
        let mut info = CompletionInfo::new(values).unwrap_or_default();
        info.total = u32::try_from(total).ok();
        info.has_more = Some(total > shown);
        Ok(info)
    }

    /// Passes a subscription on to what serves `uri`; `-32002` when nothing does.
    pub(crate) async fn subscribe(&self, uri: &str, subscribe: bool) -> Result<(), ErrorData> {
        let Some((_, forward, _)) = self.find(uri) else { return Err(not_found(uri)) };
        match forward {
            Some(forward) => forward(uri.to_owned(), subscribe).await,
            None => Ok(()),
        }
    }
}

/// Which capabilities to declare although nothing of that kind is registered yet (content that
/// comes later, from a mounted server), and whether list changes are announced.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Declared {
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
    pub(crate) list_changes: bool,
}

pub(super) fn prompt_arguments(prompt: &Prompt) -> impl Iterator<Item = &str> {
    prompt.arguments.iter().flatten().map(|argument| argument.name.as_str())
}

pub(super) fn starting_with(values: &[String], typed: &str) -> Vec<String> {
    let typed = typed.to_lowercase();
    values.iter().filter(|value| value.to_lowercase().starts_with(&typed)).cloned().collect()
}

fn quoted(names: &[&str]) -> String {
    if names.is_empty() {
        return "none".to_owned();
    }
    names.iter().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", ")
}

fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(
        format!(
            "Resource not found: `{uri}`. Read a URI that resources/list lists, or one that a template of \
             resources/templates/list describes."
        ),
        Some(serde_json::json!({"uri": uri})),
    )
}

fn unknown_prompt(name: &str, prompts: &[PromptEntry]) -> ErrorData {
    let names: Vec<&str> = prompts.iter().map(|entry| entry.prompt.name.as_str()).collect();
    ErrorData::invalid_params(
        format!("Unknown prompt `{name}`. Available prompts: {}.", quoted(&names)),
        None,
    )
}

/// `-32601` for a method of a capability the server does not declare.
pub(crate) fn not_declared(method: &str, capabilities: &ServerCapabilities) -> ErrorData {
    let mut declared = Vec::new();
    if capabilities.tools.is_some() {
        declared.push("tools");
    }
    if capabilities.resources.is_some() {
        declared.push("resources");
    }
    if capabilities.prompts.is_some() {
        declared.push("prompts");
    }
    if capabilities.completions.is_some() {
        declared.push("completions");
    }
    let message = if declared == ["tools"] {
        format!(
            "Method not found: `{method}`. This server declares only the tools capability: use tools/list and \
             tools/call."
        )
    } else {
        format!(
            "Method not found: `{method}`. This server declares the capabilities {} only (see the result of \
             initialize).",
            quoted(&declared)
        )
    };
    ErrorData::new(ErrorCode::METHOD_NOT_FOUND, message, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn prompts_check_their_arguments() {
        use rmcp::model::{PromptArgument, PromptMessage, Role};
        let content =
            ResourcesAndPrompts::new().prompt(
                Prompt::new(
                    "greet",
                    Some("Greets"),
                    Some(vec![PromptArgument::new("name").with_required(true)]),
                ),
                |args| async move {
                    Ok(vec![PromptMessage::new_text(Role::User, format!("Hi {}", args["name"]))])
                },
            );
        let mut request = GetPromptRequestParams::new("greet");
        let error = content.get_prompt(request.clone()).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(error.message, "The prompt `greet` needs the argument `name`: give it in `arguments`.");
        request.arguments = Some(serde_json::json!({"name": 7}).as_object().unwrap().clone());
        let error = content.get_prompt(request.clone()).await.unwrap_err();
        assert_eq!(
            error.message,
            "The argument `name` of the prompt `greet` must be a string, not a number."
        );
        request.arguments = Some(serde_json::json!({"name": "Ada"}).as_object().unwrap().clone());
        let result = content.get_prompt(request).await.unwrap();
        assert_eq!(result.description.as_deref(), Some("Greets"));
        let error = content.get_prompt(GetPromptRequestParams::new("nope")).await.unwrap_err();
        assert_eq!(error.message, "Unknown prompt `nope`. Available prompts: `greet`.");
    }

    #[tokio::test]
    async fn completions_are_capped_and_say_there_are_more() {
        use rmcp::model::{ArgumentInfo, PromptArgument};
        let content = ResourcesAndPrompts::new()
            .prompt(
                Prompt::new("p", Some("P"), Some(vec![PromptArgument::new("a"), PromptArgument::new("b")])),
                |_| async { Ok(Vec::new()) },
            )
            .complete_prompt_argument("p", "a", |typed, _| async move {
                Ok((0..150).map(|i| format!("{typed}{i}")).collect())
            });
        let request = |argument: &str| {
            CompleteRequestParams::new(Reference::for_prompt("p"), ArgumentInfo::new(argument, "x"))
        };
        let info = content.complete(request("a")).await.unwrap();
        assert_eq!((info.values.len(), info.total, info.has_more), (100, Some(150), Some(true)));
        assert_eq!(info.values[0], "x0");
        assert!(content.complete(request("b")).await.unwrap().values.is_empty(), "no completer, no values");
        let error = content.complete(request("c")).await.unwrap_err();
        assert_eq!(error.message, "The prompt `p` has no argument `c`; its arguments are `a`, `b`.");
    }
}
