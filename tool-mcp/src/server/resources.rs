//! Resources, resource templates and prompts served beside the tools, the completions of their
//! arguments, and resource subscriptions.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ErrorCode, ErrorData, GetPromptRequestParams,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PromptMessage,
    PromptsCapability, ReadResourceRequestParams, ReadResourceResult, Reference, Resource, ResourceContents,
    ResourceTemplate, ResourcesCapability, ServerCapabilities,
};
use rmcp::service::Peer;
use serde_json::Value;

use super::{McpServer, McpServerBuilder};
use tool_core::BoxFuture;
use tool_core::words::json_kind;

pub use rmcp::model::Prompt;

/// The variables of a resource template, read from the URI that matched it (`{id}` in
/// `test://items/{id}` is `"42"` for `test://items/42`), percent-decoded.
pub type UriVariables = HashMap<String, String>;

/// The arguments of a `prompts/get` request, by name.
pub type PromptArguments = HashMap<String, String>;

/// The longest URI the server matches against its templates.
const MAX_URI_BYTES: usize = 8 * 1024;

/// The most values one completion answer carries (the MCP specification's limit).
const MAX_COMPLETIONS: usize = CompletionInfo::MAX_VALUES;

pub(crate) type ReadFn = Arc<
    dyn Fn(String, UriVariables) -> BoxFuture<'static, Result<ReadResourceResult, ErrorData>> + Send + Sync,
>;
pub(crate) type GetFn =
    Arc<dyn Fn(PromptArguments) -> BoxFuture<'static, Result<GetPromptResult, ErrorData>> + Send + Sync>;
type CompleteFn =
    Arc<dyn Fn(String, PromptArguments) -> BoxFuture<'static, Result<Vec<String>, ErrorData>> + Send + Sync>;
/// Answers every completion request about one prompt or template (a mounted server's).
pub(crate) type ForwardCompleteFn =
    Arc<dyn Fn(CompleteRequestParams) -> BoxFuture<'static, Result<CompletionInfo, ErrorData>> + Send + Sync>;
/// `(uri, subscribe)`: passes a subscription on (to a mounted server).
pub(crate) type SubscribeFn =
    Arc<dyn Fn(String, bool) -> BoxFuture<'static, Result<(), ErrorData>> + Send + Sync>;

/// The resources, resource templates and prompts a server serves beside its tools, each with
/// the function that reads or renders it, and the functions that complete prompt arguments and
/// template variables. Cheap to clone.
///
/// Give them to a server one by one with the methods of [`McpServerBuilder`] of the same names
/// ([`McpServerBuilder::resource`], ...), or as a whole with
/// [`McpServerBuilder::resources_and_prompts`]; [`McpServer::replace_resources_and_prompts`]
/// changes them while the server runs.
///
/// ```
/// use tool_runtime::mcp_server::rmcp::model::{
///     Prompt, PromptArgument, PromptMessage, Resource, ResourceContents, ResourceTemplate, Role,
/// };
/// use tool_runtime::mcp_server::ResourcesAndPrompts;
///
/// let served = ResourcesAndPrompts::new()
///     .resource(Resource::new("docs://readme", "readme").with_mime_type("text/markdown"), |uri| async move {
///         Ok(vec![ResourceContents::text("# Read me", uri).with_mime_type("text/markdown")])
///     })
///     .resource_template(ResourceTemplate::new("docs://pages/{page}", "page"), |uri, vars| async move {
///         Ok(vec![ResourceContents::text(format!("page {}", vars["page"]), uri)])
///     })
///     .prompt(
///         Prompt::new("review", Some("Review a file"), Some(vec![PromptArgument::new("path").with_required(true)])),
///         |args| async move {
///             Ok(vec![PromptMessage::new_text(Role::User, format!("Review {}", args["path"]))])
///         },
///     )
///     .prompt_argument_values("review", "path", ["src/lib.rs", "src/main.rs"]);
/// assert_eq!(served.resources().len(), 1);
/// assert_eq!(served.prompts()[0].name, "review");
/// ```
///
/// What the server answers:
///
/// - `resources/list`, `resources/templates/list` and `prompts/list` list everything registered,
///   in the order registered, on one page.
/// - `resources/read` reads the resource registered with that URI, else the first template the
///   URI matches (its variables are passed to the template's function), else answers `-32002`
///   (resource not found) naming the URI.
/// - `prompts/get` checks that every required argument is there and that every argument is a
///   string (`-32602` otherwise, naming the argument), then renders the prompt; an unknown name
///   is `-32602` listing the prompts there are.
/// - `completion/complete` answers for a prompt argument or a template variable with the values
///   its completion function gives, at most 100 (`hasMore` tells there were more); an argument
///   that has no completion function gets no values. An unknown prompt, template or argument is
///   `-32602`.
/// - `resources/subscribe` and `resources/unsubscribe` accept a URI that a resource or template
///   serves (`-32002` otherwise); [`McpServer::announce_resource_updated`] then tells each session
///   that subscribed to it.
///
/// Templates are RFC 6570 URI templates: `{name}` matches a non-empty run of characters without
/// `/`, `?` or `#` (percent-decoded for the function), `{+name}` (and the other operators)
/// any non-empty run.
#[derive(Clone, Default)]
#[must_use]
pub struct ResourcesAndPrompts {
    resources: Vec<ResourceEntry>,
    templates: Vec<TemplateEntry>,
    prompts: Vec<PromptEntry>,
    completions: HashMap<(Target, String), CompleteFn>,
}

#[derive(Clone)]
struct ResourceEntry {
    resource: Resource,
    read: ReadFn,
    subscribe: Option<SubscribeFn>,
}

#[derive(Clone)]
struct TemplateEntry {
    template: ResourceTemplate,
    pattern: UriTemplate,
    read: ReadFn,
    complete: Option<ForwardCompleteFn>,
    subscribe: Option<SubscribeFn>,
}

#[derive(Clone)]
struct PromptEntry {
    prompt: Prompt,
    get: GetFn,
    complete: Option<ForwardCompleteFn>,
}

/// What a completion is for: a prompt by name, or a template by its URI template.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Target {
    Prompt(String),
    Template(String),
}

impl fmt::Debug for ResourcesAndPrompts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourcesAndPrompts")
            .field("resources", &self.resources.iter().map(|e| &e.resource.uri).collect::<Vec<_>>())
            .field("templates", &self.templates.iter().map(|e| &e.template.uri_template).collect::<Vec<_>>())
            .field("prompts", &self.prompts.iter().map(|e| &e.prompt.name).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

fn boxed_read<F, Fut>(read: F) -> ReadFn
where
    F: Fn(String, UriVariables) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ResourceContents>, ErrorData>> + Send + 'static,
{
    Arc::new(move |uri, variables| {
        let contents = read(uri, variables);
        Box::pin(async move { contents.await.map(ReadResourceResult::new) })
    })
}

impl ResourcesAndPrompts {
    /// Nothing to serve.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.resources.is_empty() && self.templates.is_empty() && self.prompts.is_empty()
    }

    /// The resources, as `resources/list` lists them.
    pub fn resources(&self) -> Vec<Resource> {
        self.resources.iter().map(|entry| entry.resource.clone()).collect()
    }

    /// The resource templates, as `resources/templates/list` lists them.
    pub fn resource_templates(&self) -> Vec<ResourceTemplate> {
        self.templates.iter().map(|entry| entry.template.clone()).collect()
    }

    /// The prompts, as `prompts/list` lists them.
    pub fn prompts(&self) -> Vec<Prompt> {
        self.prompts.iter().map(|entry| entry.prompt.clone()).collect()
    }

    /// Whether a resource with the URI `uri` is registered.
    pub fn has_resource(&self, uri: &str) -> bool {
        self.resources.iter().any(|entry| entry.resource.uri == uri)
    }

    /// Whether a template with the URI template `uri_template` is registered.
    pub fn has_resource_template(&self, uri_template: &str) -> bool {
        self.templates.iter().any(|entry| entry.template.uri_template == uri_template)
    }

    /// Whether a prompt named `name` is registered.
    pub fn has_prompt(&self, name: &str) -> bool {
        self.prompts.iter().any(|entry| entry.prompt.name == name)
    }

    /// Serves `resource`; `read(uri)` gives its contents when a client reads it.
    ///
    /// # Panics
    ///
    /// When a resource with the same URI is already registered: two would be a mistake, and one
    /// silently replacing the other hides it.
    pub fn resource<F, Fut>(self, resource: Resource, read: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ErrorData>> + Send + 'static,
    {
        self.raw_resource(resource, boxed_read(move |uri, _| read(uri)), None)
    }

    pub(crate) fn raw_resource(
        mut self,
        resource: Resource,
        read: ReadFn,
        subscribe: Option<SubscribeFn>,
    ) -> Self {
        assert!(!self.has_resource(&resource.uri), "the resource `{}` is registered twice", resource.uri);
        self.resources.push(ResourceEntry { resource, read, subscribe });
        self
    }

    /// Serves every resource whose URI matches `template` (its `uriTemplate`);
    /// `read(uri, variables)` gives the contents of one.
    ///
    /// # Panics
    ///
    /// When a template with the same URI template is already registered, or the URI template is
    /// not one (an unclosed `{`, an expression without a name).
    pub fn resource_template<F, Fut>(self, template: ResourceTemplate, read: F) -> Self
    where
        F: Fn(String, UriVariables) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ErrorData>> + Send + 'static,
    {
        let pattern = UriTemplate::parse(&template.uri_template)
            .unwrap_or_else(|error| panic!("the resource template `{}`: {error}", template.uri_template));
        self.push_template(template, pattern, boxed_read(read), None, None)
    }

    /// A mounted server's template: one that does not parse matches the URIs that start with
    /// its text before the first `{`.
    pub(crate) fn raw_resource_template(
        self,
        template: ResourceTemplate,
        read: ReadFn,
        complete: ForwardCompleteFn,
        subscribe: SubscribeFn,
    ) -> Self {
        let pattern = UriTemplate::parse(&template.uri_template).unwrap_or_else(|_| {
            let prefix = template.uri_template.split('{').next().unwrap_or_default();
            UriTemplate::prefix(prefix)
        });
        self.push_template(template, pattern, read, Some(complete), Some(subscribe))
    }

    fn push_template(
        mut self,
        template: ResourceTemplate,
        pattern: UriTemplate,
        read: ReadFn,
        complete: Option<ForwardCompleteFn>,
        subscribe: Option<SubscribeFn>,
    ) -> Self {
        assert!(
            !self.has_resource_template(&template.uri_template),
            "the resource template `{}` is registered twice",
            template.uri_template
        );
        self.templates.push(TemplateEntry { template, pattern, read, complete, subscribe });
        self
    }

    /// Serves `prompt`; `get(arguments)` renders its messages once every required argument is
    /// there. The result's description is the prompt's.
    ///
    /// # Panics
    ///
    /// When a prompt with the same name is already registered.
    pub fn prompt<F, Fut>(self, prompt: Prompt, get: F) -> Self
    where
        F: Fn(PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<PromptMessage>, ErrorData>> + Send + 'static,
    {
        let description = prompt.description.clone();
        let get: GetFn = Arc::new(move |arguments| {
            let messages = get(arguments);
            let description = description.clone();
            Box::pin(async move {
                let mut result = GetPromptResult::new(messages.await?);
                result.description = description;
                Ok(result)
            })
        });
        self.raw_prompt(prompt, get, None)
    }

    pub(crate) fn raw_prompt(
        mut self,
        prompt: Prompt,
        get: GetFn,
        complete: Option<ForwardCompleteFn>,
    ) -> Self {
        assert!(!self.has_prompt(&prompt.name), "the prompt `{}` is registered twice", prompt.name);
        self.prompts.push(PromptEntry { prompt, get, complete });
        self
    }

    /// Completes the argument `argument` of the prompt `prompt`: `complete(value, context)` gives
    /// the candidates for what the user typed so far (`value`), knowing the arguments already
    /// chosen (`context`). The first 100 are sent.
    ///
    /// # Panics
    ///
    /// When the prompt is not registered (register it first) or has no such argument.
    pub fn complete_prompt_argument<F, Fut>(self, prompt: &str, argument: &str, complete: F) -> Self
    where
        F: Fn(String, PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, ErrorData>> + Send + 'static,
    {
        let entry = self.prompts.iter().find(|entry| entry.prompt.name == prompt);
        let Some(entry) = entry else {
            panic!("complete_prompt_argument: no prompt `{prompt}` is registered")
        };
        assert!(
            prompt_arguments(&entry.prompt).any(|name| name == argument),
            "complete_prompt_argument: the prompt `{prompt}` has no argument `{argument}`"
        );
        self.completer(Target::Prompt(prompt.to_owned()), argument, complete)
    }

    /// Completes the argument `argument` of the prompt `prompt` from a fixed list: the values
    /// that start with what the user typed, ignoring case.
    ///
    /// # Panics
    ///
    /// As [`ResourcesAndPrompts::complete_prompt_argument`].
    pub fn prompt_argument_values<I, S>(self, prompt: &str, argument: &str, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let values: Arc<[String]> = values.into_iter().map(Into::into).collect();
        self.complete_prompt_argument(prompt, argument, move |typed, _| {
            std::future::ready(Ok(starting_with(&values, &typed)))
        })
    }

    /// Completes the variable `variable` of the template `uri_template`, as
    /// [`ResourcesAndPrompts::complete_prompt_argument`] does for a prompt's argument (`context`
    /// holds the variables already chosen).
    ///
    /// # Panics
    ///
    /// When the template is not registered (register it first) or has no such variable.
    pub fn complete_template_variable<F, Fut>(self, uri_template: &str, variable: &str, complete: F) -> Self
    where
        F: Fn(String, PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, ErrorData>> + Send + 'static,
    {
        let entry = self.templates.iter().find(|entry| entry.template.uri_template == uri_template);
        let Some(entry) = entry else {
            panic!("complete_template_variable: no template `{uri_template}` is registered")
        };
        assert!(
            entry.pattern.variables().any(|name| name == variable),
            "complete_template_variable: the template `{uri_template}` has no variable `{variable}`"
        );
        self.completer(Target::Template(uri_template.to_owned()), variable, complete)
    }

    /// Completes the variable `variable` of the template `uri_template` from a fixed list, as
    /// [`ResourcesAndPrompts::prompt_argument_values`].
    ///
    /// # Panics
    ///
    /// As [`ResourcesAndPrompts::complete_template_variable`].
    pub fn template_variable_values<I, S>(self, uri_template: &str, variable: &str, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let values: Arc<[String]> = values.into_iter().map(Into::into).collect();
        self.complete_template_variable(uri_template, variable, move |typed, _| {
            std::future::ready(Ok(starting_with(&values, &typed)))
        })
    }

    fn completer<F, Fut>(mut self, target: Target, argument: &str, complete: F) -> Self
    where
        F: Fn(String, PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, ErrorData>> + Send + 'static,
    {
        let complete: CompleteFn = Arc::new(move |value, context| Box::pin(complete(value, context)));
        self.completions.insert((target, argument.to_owned()), complete);
        self
    }

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

fn prompt_arguments(prompt: &Prompt) -> impl Iterator<Item = &str> {
    prompt.arguments.iter().flatten().map(|argument| argument.name.as_str())
}

fn starting_with(values: &[String], typed: &str) -> Vec<String> {
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

/// An RFC 6570 URI template, for matching URIs against it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// `{name}`: no `/`, `?` or `#`; percent-decoded.
    Simple(String),
    /// `{+name}` and the other operators: any characters, as they are.
    Any(String),
}

impl UriTemplate {
    pub(crate) fn parse(template: &str) -> Result<UriTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let Some(close) = rest[open..].find('}') else {
                return Err(format!(
                    "the `{{` at byte {} is never closed",
                    template.len() - rest.len() + open
                ));
            };
            let expression = &rest[open + 1..open + close];
            let (operator, names) = match expression.chars().next() {
                Some(c @ ('+' | '#' | '.' | '/' | ';' | '?' | '&')) => (Some(c), &expression[1..]),
                _ => (None, expression),
            };
            let name = names.split(',').next().unwrap_or_default().trim_end_matches('*');
            let name = name.split(':').next().unwrap_or_default();
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
                return Err(format!("`{{{expression}}}` does not name a variable"));
            }
            if let Some(Part::Simple(_) | Part::Any(_)) = parts.last() {
                return Err(format!(
                    "`{{{expression}}}` follows another expression with nothing between them"
                ));
            }
            parts.push(if operator.is_none() {
                Part::Simple(name.to_owned())
            } else {
                Part::Any(name.to_owned())
            });
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(UriTemplate { parts })
    }

    /// Matches every URI that starts with `prefix`.
    fn prefix(prefix: &str) -> UriTemplate {
        UriTemplate { parts: vec![Part::Literal(prefix.to_owned()), Part::Any(String::new())] }
    }

    pub(crate) fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Simple(name) | Part::Any(name) if !name.is_empty() => Some(name.as_str()),
            _ => None,
        })
    }

    /// The variables of `uri` when it matches. Each expression is followed by a literal or ends
    /// the template (parsing refuses two expressions in a row), so the match is found by trying
    /// each place the next literal occurs: at most as many tries as the URI has bytes per
    /// expression.
    pub(crate) fn matches(&self, uri: &str) -> Option<UriVariables> {
        let mut variables = UriVariables::new();
        let mut budget = MATCH_BUDGET;
        match_parts(&self.parts, uri, &mut variables, &mut budget).then_some(variables)
    }
}

/// The most places a URI is tried at against one template: `{+a}/{+b}/{+c}` against a URI of
/// many `/` would otherwise try every combination. A URI that needs more does not match.
const MATCH_BUDGET: usize = 10_000;

fn match_parts(parts: &[Part], uri: &str, variables: &mut UriVariables, budget: &mut usize) -> bool {
    let Some((first, rest)) = parts.split_first() else { return uri.is_empty() };
    match first {
        Part::Literal(literal) => {
            uri.strip_prefix(literal.as_str()).is_some_and(|uri| match_parts(rest, uri, variables, budget))
        }
        Part::Simple(name) | Part::Any(name) => {
            let simple = matches!(first, Part::Simple(_));
            let allowed = |value: &str| !value.is_empty() && (!simple || !value.contains(['/', '?', '#']));
            let ends: Vec<usize> = match rest.first() {
                None => vec![uri.len()],
                Some(Part::Literal(literal)) => {
                    uri.match_indices(literal.as_str()).map(|(at, _)| at).collect()
                }
                Some(_) => return false,
            };
            for end in ends {
                let value = &uri[..end];
                if simple && value.contains(['/', '?', '#']) {
                    // Every later end holds the same character.
                    return false;
                }
                if *budget == 0 {
                    return false;
                }
                *budget -= 1;
                if allowed(value) && match_parts(rest, &uri[end..], variables, budget) {
                    if !name.is_empty() {
                        let value = if simple { percent_decoded(value) } else { value.to_owned() };
                        variables.insert(name.clone(), value);
                    }
                    return true;
                }
            }
            false
        }
    }
}

/// `%XX` escapes decoded; text whose escapes are not UTF-8 stays as it was.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(high), Some(low)) =
                (bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex))
        {
            decoded.push((high * 16 + low) as u8);
            i += 3;
            continue;
        }
        decoded.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(decoded).unwrap_or_else(|_| text.to_owned())
}

/// The URIs each session subscribed to, for `notifications/resources/updated`.
#[derive(Default)]
pub(crate) struct Subscribers {
    sessions: Mutex<Vec<(Peer<RoleServer>, SessionUris)>>,
}

/// The URIs one session subscribed to.
type SessionUris = Arc<Mutex<HashSet<String>>>;

impl Subscribers {
    /// Adds or removes `uri` in the subscriptions of `session`; whether any live session is
    /// still subscribed to it afterwards.
    fn change(
        &self,
        peer: &Peer<RoleServer>,
        session: &Arc<Mutex<HashSet<String>>>,
        uri: &str,
        add: bool,
    ) -> bool {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.retain(|(peer, _)| !peer.is_transport_closed());
        if !sessions.iter().any(|(_, known)| Arc::ptr_eq(known, session)) {
            sessions.push((peer.clone(), session.clone()));
        }
        {
            let mut uris = session.lock().unwrap_or_else(|p| p.into_inner());
            if add {
                uris.insert(uri.to_owned());
            } else {
                uris.remove(uri);
            }
        }
        sessions.iter().any(|(_, uris)| uris.lock().unwrap_or_else(|p| p.into_inner()).contains(uri))
    }

    async fn updated(&self, uri: &str) -> usize {
        let peers: Vec<Peer<RoleServer>> = {
            let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
            sessions.retain(|(peer, _)| !peer.is_transport_closed());
            sessions
                .iter()
                .filter(|(_, uris)| uris.lock().unwrap_or_else(|p| p.into_inner()).contains(uri))
                .map(|(peer, _)| peer.clone())
                .collect()
        };
        let mut reached = 0;
        for peer in peers {
            let notice = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
            if peer.notify_resource_updated(notice).await.is_ok() {
                reached += 1;
            }
        }
        reached
    }
}

impl McpServerBuilder {
    /// Serves `resource` beside the tools ([`ResourcesAndPrompts::resource`]). Registering
    /// a resource, template or prompt declares the `resources` (with `subscribe`), `prompts` and
    /// `completions` capabilities; a server without any declares none of them.
    ///
    /// ```
    /// use tool_runtime::mcp_server::McpServer;
    /// use tool_runtime::mcp_server::rmcp::model::{Resource, ResourceContents};
    /// use tool_runtime::{Dispatcher, Registry};
    ///
    /// let registry = Registry::builder().build().unwrap();
    /// let server = McpServer::builder(Dispatcher::builder(registry))
    ///     .resource(Resource::new("notes://today", "today"), |uri| async move {
    ///         Ok(vec![ResourceContents::text("Ship it.", uri)])
    ///     })
    ///     .build()
    ///     .unwrap();
    /// assert!(server.info().capabilities.resources.is_some());
    /// assert!(server.info().capabilities.prompts.is_none());
    /// ```
    ///
    /// # Panics
    ///
    /// As [`ResourcesAndPrompts::resource`].
    pub fn resource<F, Fut>(mut self, resource: Resource, read: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ErrorData>> + Send + 'static,
    {
        self.content = std::mem::take(&mut self.content).resource(resource, read);
        self
    }

    /// Serves the resources `template` describes ([`ResourcesAndPrompts::resource_template`]).
    ///
    /// # Panics
    ///
    /// As [`ResourcesAndPrompts::resource_template`].
    pub fn resource_template<F, Fut>(mut self, template: ResourceTemplate, read: F) -> Self
    where
        F: Fn(String, UriVariables) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ErrorData>> + Send + 'static,
    {
        self.content = std::mem::take(&mut self.content).resource_template(template, read);
        self
    }

    /// Serves `prompt` ([`ResourcesAndPrompts::prompt`]).
    ///
    /// # Panics
    ///
    /// As [`ResourcesAndPrompts::prompt`].
    pub fn prompt<F, Fut>(mut self, prompt: Prompt, get: F) -> Self
    where
        F: Fn(PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<PromptMessage>, ErrorData>> + Send + 'static,
    {
        self.content = std::mem::take(&mut self.content).prompt(prompt, get);
        self
    }

    /// Completes a prompt's argument ([`ResourcesAndPrompts::complete_prompt_argument`]).
    ///
    /// # Panics
    ///
    /// As [`ResourcesAndPrompts::complete_prompt_argument`].
    pub fn complete_prompt_argument<F, Fut>(mut self, prompt: &str, argument: &str, complete: F) -> Self
    where
        F: Fn(String, PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, ErrorData>> + Send + 'static,
    {
        self.content = std::mem::take(&mut self.content).complete_prompt_argument(prompt, argument, complete);
        self
    }

    /// Completes a template's variable ([`ResourcesAndPrompts::complete_template_variable`]).
    ///
    /// # Panics
    ///
    /// As [`ResourcesAndPrompts::complete_template_variable`].
    pub fn complete_template_variable<F, Fut>(
        mut self,
        uri_template: &str,
        variable: &str,
        complete: F,
    ) -> Self
    where
        F: Fn(String, PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, ErrorData>> + Send + 'static,
    {
        self.content =
            std::mem::take(&mut self.content).complete_template_variable(uri_template, variable, complete);
        self
    }

    /// Serves `content` (replacing what the methods above registered).
    pub fn resources_and_prompts(mut self, content: ResourcesAndPrompts) -> Self {
        self.content = content;
        self
    }

    /// Declares the `resources` and `prompts` capabilities (with `listChanged` when `announced`)
    /// even while none are registered, for content that comes later through
    /// [`McpServer::replace_resources_and_prompts`]: clients read a server's capabilities once.
    pub fn resources_and_prompts_later(mut self, resources: bool, prompts: bool, announced: bool) -> Self {
        self.declared = Declared { resources, prompts, list_changes: announced };
        self
    }
}

impl McpServer {
    /// What the server sends in its `initialize` result: its name, capabilities, instructions.
    pub fn info(&self) -> &rmcp::model::ServerConfig {
        &self.inner.config
    }

    /// The resources, templates and prompts served now.
    pub fn resources_and_prompts(&self) -> Arc<ResourcesAndPrompts> {
        self.inner.content.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Serves `content` from now on in every session, and announces it with
    /// `notifications/resources/list_changed` and `notifications/prompts/list_changed` when the
    /// server declared list changes ([`McpServerBuilder::resources_and_prompts_later`]). A
    /// capability the server did not declare at the start stays undeclared: its methods keep
    /// answering `-32601`.
    pub async fn replace_resources_and_prompts(&self, content: ResourcesAndPrompts) {
        *self.inner.content.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(content);
        let capabilities = &self.inner.config.capabilities;
        let announced = |listed: Option<bool>| listed == Some(true);
        if announced(capabilities.resources.as_ref().and_then(|r| r.list_changed)) {
            for peer in self.inner.listeners.live() {
                let _ = peer.notify_resource_list_changed().await;
            }
        }
        if announced(capabilities.prompts.as_ref().and_then(|p| p.list_changed)) {
            for peer in self.inner.listeners.live() {
                let _ = peer.notify_prompt_list_changed().await;
            }
        }
    }

    /// Sends `notifications/resources/updated` for `uri` to every session that subscribed to it
    /// (`resources/subscribe`) and is still connected; returns how many it reached.
    pub async fn announce_resource_updated(&self, uri: &str) -> usize {
        self.inner.subscribers.updated(uri).await
    }

    pub(crate) async fn list_resources_now(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.declared("resources/list", |c| c.resources.is_some())?;
        let (items, next) =
            self.page_at(&self.resources_and_prompts().resources(), cursor, "resources/list")?;
        let mut result = ListResourcesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    pub(crate) async fn list_templates_now(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.declared("resources/templates/list", |c| c.resources.is_some())?;
        let templates = self.resources_and_prompts().resource_templates();
        let (items, next) = self.page_at(&templates, cursor, "resources/templates/list")?;
        let mut result = ListResourceTemplatesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    pub(crate) async fn read_now(
        &self,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, ErrorData> {
        self.declared("resources/read", |c| c.resources.is_some())?;
        let mut result = self.resources_and_prompts().read(request.uri).await?;
        result.result_type = Some(rmcp::model::ResultType::COMPLETE);
        Ok(result)
    }

    pub(crate) async fn list_prompts_now(
        &self,
        cursor: Option<String>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.declared("prompts/list", |c| c.prompts.is_some())?;
        let (items, next) = self.page_at(&self.resources_and_prompts().prompts(), cursor, "prompts/list")?;
        let mut result = ListPromptsResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    pub(crate) async fn get_prompt_now(
        &self,
        request: GetPromptRequestParams,
    ) -> Result<GetPromptResult, ErrorData> {
        self.declared("prompts/get", |c| c.prompts.is_some())?;
        let mut result = self.resources_and_prompts().get_prompt(request).await?;
        result.result_type = Some(rmcp::model::ResultType::COMPLETE);
        Ok(result)
    }

    pub(crate) async fn complete_now(
        &self,
        request: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        self.declared("completion/complete", |c| c.completions.is_some())?;
        let info = self.resources_and_prompts().complete(request).await?;
        Ok(CompleteResult::new(info))
    }

    pub(crate) async fn subscribe_now(
        &self,
        uri: &str,
        subscribe: bool,
        peer: &Peer<RoleServer>,
    ) -> Result<(), ErrorData> {
        let method = if subscribe { "resources/subscribe" } else { "resources/unsubscribe" };
        self.declared(method, |c| c.resources.as_ref().and_then(|r| r.subscribe) == Some(true))?;
        if subscribe {
            self.resources_and_prompts().subscribe(uri, true).await?;
            self.inner.subscribers.change(peer, &self.subscriptions, uri, true);
        } else if !self.inner.subscribers.change(peer, &self.subscriptions, uri, false) {
            // The last session let go of it (a mounted server's subscription serves every
            // session). Unsubscribing from what is no longer there is no error; telling its
            // server may fail.
            let _ = self.resources_and_prompts().subscribe(uri, false).await;
        }
        Ok(())
    }

    fn declared(
        &self,
        method: &str,
        declared: impl Fn(&ServerCapabilities) -> bool,
    ) -> Result<(), ErrorData> {
        let capabilities = &self.inner.config.capabilities;
        if declared(capabilities) { Ok(()) } else { Err(not_declared(method, capabilities)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> UriVariables {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn templates_match_their_uris_and_only_those() {
        let template = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(template.matches("test://template/123/data"), Some(vars(&[("id", "123")])));
        assert_eq!(template.matches("test://template/a%20b/data"), Some(vars(&[("id", "a b")])));
        assert_eq!(template.matches("test://template//data"), None, "a variable is never empty");
        assert_eq!(template.matches("test://template/1/2/data"), None, "`{{id}}` holds no `/`");
        assert_eq!(template.matches("test://template/1/data/x"), None);
        assert_eq!(template.matches("test://other/1/data"), None);

        let reserved = UriTemplate::parse("file:///{+path}").unwrap();
        assert_eq!(reserved.matches("file:///src/a%20b.rs"), Some(vars(&[("path", "src/a%20b.rs")])));

        let two = UriTemplate::parse("repo://{owner}/{name}/issues").unwrap();
        assert_eq!(two.matches("repo://a/b/issues"), Some(vars(&[("owner", "a"), ("name", "b")])));
        assert_eq!(two.variables().collect::<Vec<_>>(), ["owner", "name"]);

        // The last literal occurs twice: the match that ends the URI is found.
        let tail = UriTemplate::parse("x://{a}.json").unwrap();
        assert_eq!(tail.matches("x://v.json.json"), Some(vars(&[("a", "v.json")])));
    }

    #[test]
    fn templates_that_cannot_be_matched_are_refused() {
        assert!(UriTemplate::parse("x://{a").unwrap_err().contains("never closed"));
        assert!(UriTemplate::parse("x://{}").unwrap_err().contains("does not name"));
        assert!(UriTemplate::parse("x://{a}{b}").unwrap_err().contains("nothing between"));
    }

    #[test]
    fn a_long_uri_costs_at_most_one_try_per_occurrence() {
        let template = UriTemplate::parse("x://{+a}/{+b}/{+c}/end").unwrap();
        let uri = format!("x://{}", "a/".repeat(3000));
        let started = std::time::Instant::now();
        assert_eq!(template.matches(&uri), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn percent_escapes_are_decoded_when_they_are_utf8() {
        assert_eq!(percent_decoded("a%2Fb%C3%A9"), "a/bé");
        assert_eq!(percent_decoded("%FF%zz"), "%FF%zz");
        assert_eq!(percent_decoded("100%"), "100%");
    }

    #[tokio::test]
    async fn prompts_check_their_arguments() {
        use rmcp::model::{PromptArgument, Role};
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

    #[test]
    #[should_panic(expected = "the resource `a://b` is registered twice")]
    fn a_resource_registered_twice_is_a_mistake() {
        let read = |uri: String| async move { Ok(vec![ResourceContents::text("", uri)]) };
        let _ = ResourcesAndPrompts::new()
            .resource(Resource::new("a://b", "b"), read)
            .resource(Resource::new("a://b", "again"), read);
    }
}
