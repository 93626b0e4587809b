//! Resources, resource templates and prompts served beside the tools, the completions of their
//! arguments, and resource subscriptions.

mod answer;
mod server;
mod subscribers;
mod uri_template;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use rmcp::model::{
    CompleteRequestParams, CompletionInfo, ErrorData, GetPromptResult, PromptMessage, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate,
};

use tool_core::BoxFuture;

pub(crate) use answer::{Declared, not_declared};
use answer::{prompt_arguments, starting_with};
pub(crate) use subscribers::Subscribers;
use uri_template::UriTemplate;

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
///
/// [`McpServerBuilder`]: super::McpServerBuilder
/// [`McpServerBuilder::resource`]: super::McpServerBuilder::resource
/// [`McpServerBuilder::resources_and_prompts`]: super::McpServerBuilder::resources_and_prompts
/// [`McpServer::replace_resources_and_prompts`]: super::McpServer::replace_resources_and_prompts
/// [`McpServer::announce_resource_updated`]: super::McpServer::announce_resource_updated
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "the resource `a://b` is registered twice")]
    fn a_resource_registered_twice_is_a_mistake() {
        let read = |uri: String| async move { Ok(vec![ResourceContents::text("", uri)]) };
        let _ = ResourcesAndPrompts::new()
            .resource(Resource::new("a://b", "b"), read)
            .resource(Resource::new("a://b", "again"), read);
    }
}
