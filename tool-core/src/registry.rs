//! `Registry`: every tool the model can see and call, from `inventory` plus explicit additions.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::call::Arguments;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::output::ToolOutput;
use crate::spec::{SourceLocation, ToolSpec, is_valid_tool_name};
use crate::tool::{DecodedCall, Tool};
use crate::validate::{ArgumentValidator, Coercion, ValidatedArgs, ValidationOptions};

/// A link-time registration made by `#[tool]`. Collected with `inventory`.
#[doc(hidden)]
#[allow(missing_debug_implementations)]
pub struct ToolRegistration {
    pub(crate) name: &'static str,
    pub(crate) module_path: &'static str,
    pub(crate) file: &'static str,
    pub(crate) line: u32,
    pub(crate) make: fn() -> Arc<dyn Tool>,
}

impl ToolRegistration {
    #[doc(hidden)]
    pub const fn __new(
        name: &'static str,
        module_path: &'static str,
        file: &'static str,
        line: u32,
        make: fn() -> Arc<dyn Tool>,
    ) -> Self {
        ToolRegistration { name, module_path, file, line, make }
    }

    fn location(&self) -> SourceLocation {
        SourceLocation {
            module_path: self.module_path.to_owned(),
            file: self.file.to_owned(),
            line: self.line,
        }
    }
}

inventory::collect!(ToolRegistration);

/// Every tool registered with `#[tool]` in the crates linked into this binary.
pub fn registered_tools() -> impl Iterator<Item = Arc<dyn Tool>> {
    inventory::iter::<ToolRegistration>.into_iter().map(|r| (r.make)())
}

/// Why a registry could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two different definitions use the same tool name.
    DuplicateName {
        /// The shared name.
        name: String,
        /// Where the first definition is, when known.
        first: Option<Box<SourceLocation>>,
        /// Where the second definition is, when known.
        second: Option<Box<SourceLocation>>,
    },
    /// A tool's name is not 1 to 64 characters of `[A-Za-z0-9_-]`.
    InvalidName {
        /// The offending name.
        name: String,
    },
    /// One of a tool's examples does not match its input schema.
    InvalidExample {
        /// The tool's name.
        tool: String,
        /// The example's position among the tool's examples, from 0.
        index: usize,
        /// What is wrong, one problem per entry.
        problems: Vec<String>,
    },
    /// One of a tool's parameter aliases ([`ToolSpec::aliases`]) cannot be told apart from
    /// another name: it is a parameter's own name, another alias, or stands for no parameter.
    InvalidAlias {
        /// The tool's name.
        tool: String,
        /// The alias.
        alias: String,
        /// What is wrong with it, as a sentence.
        problem: String,
    },
    /// A tool's input schema is not a JSON Schema the validator compiles (found by
    /// [`Registry::check_schemas`]).
    InvalidSchema {
        /// The tool's name.
        tool: String,
        /// What is wrong, as a sentence naming the tool and the validator's complaint.
        problem: String,
    },
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let place = |loc: &Option<Box<SourceLocation>>| match loc {
            Some(loc) => loc.to_string(),
            None => "a tool added at run time".to_owned(),
        };
        match self {
            RegistryError::DuplicateName { name, first, second } => write!(
                f,
                "two tools are named `{name}`: one defined at {} and one at {}; rename one with #[tool(name = \"...\")] or filter one out",
                place(first),
                place(second)
            ),
            RegistryError::InvalidName { name } => write!(
                f,
                "invalid tool name `{name}`: use 1 to 64 characters of letters, digits, `_` and `-`"
            ),
            RegistryError::InvalidExample { tool, index, problems } => write!(
                f,
                "example {} of the tool `{tool}` (counting from 1) does not match its argument schema: {}; fix or remove the example",
                index + 1,
                problems.join("; ")
            ),
            RegistryError::InvalidAlias { tool, alias, problem } => {
                write!(f, "the alias `{alias}` of the tool `{tool}` {problem}; rename or remove the alias")
            }
            RegistryError::InvalidSchema { problem, .. } => write!(f, "{problem}; fix the schema"),
        }
    }
}

impl std::error::Error for RegistryError {}

type Predicate = Box<dyn Fn(&ToolSpec) -> bool + Send + Sync>;

impl fmt::Debug for RegistryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryBuilder")
            .field("inventory", &self.inventory)
            .field("tools", &self.explicit.iter().map(|tool| &tool.spec().name).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Collects tools and filters, then builds a [`Registry`].
#[must_use]
pub struct RegistryBuilder {
    inventory: bool,
    explicit: Vec<Arc<dyn Tool>>,
    allow: Option<HashSet<String>>,
    deny: HashSet<String>,
    tags: Option<HashSet<String>>,
    predicates: Vec<Predicate>,
    validation: ValidationOptions,
    /// Whether the examples of tools defined in code are checked while building.
    check_code_examples: bool,
}

impl Default for RegistryBuilder {
    fn default() -> Self {
        RegistryBuilder {
            inventory: false,
            explicit: Vec::new(),
            allow: None,
            deny: HashSet::new(),
            tags: None,
            predicates: Vec::new(),
            validation: ValidationOptions::default(),
            check_code_examples: true,
        }
    }
}

impl RegistryBuilder {
    /// Includes every `#[tool]` linked into the binary.
    pub fn with_inventory(mut self) -> Self {
        self.inventory = true;
        self
    }

    /// Adds one tool.
    pub fn tool(mut self, tool: impl Tool) -> Self {
        self.explicit.push(Arc::new(tool));
        self
    }

    /// Adds shared tools (for example `tools_std::all()`).
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.explicit.extend(tools);
        self
    }

    /// Keeps only tools with these names.
    pub fn allow<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allow = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Drops tools with these names.
    pub fn deny<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.deny.extend(names.into_iter().map(Into::into));
        self
    }

    /// Keeps only tools carrying at least one of these tags.
    pub fn with_tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tags = Some(tags.into_iter().map(Into::into).collect());
        self
    }

    /// Keeps only tools for which `predicate` returns true.
    pub fn filter(mut self, predicate: impl Fn(&ToolSpec) -> bool + Send + Sync + 'static) -> Self {
        self.predicates.push(Box::new(predicate));
        self
    }

    /// Sets validation leniency (string-to-number coercion is on by default).
    pub fn validation(mut self, options: ValidationOptions) -> Self {
        self.validation = options;
        self
    }

    /// Leaves unchecked, while building, the examples of tools defined in code (those with a
    /// [`ToolSpec::source`], as `#[tool]` gives them): checking an example that its tool does
    /// not decode itself takes compiling the tool's validator, work a short-lived process (a
    /// one-shot command) would repeat on every start for examples that cannot change. Check
    /// them once in a test instead, with [`Registry::check_schemas`] on the same tools. The
    /// examples of tools added at run time (without a source, such as mounted MCP tools) are
    /// still checked.
    pub fn examples_checked_by_tests(mut self) -> Self {
        self.check_code_examples = false;
        self
    }

    /// Builds the registry, failing on duplicate or invalid names.
    pub fn build(mut self) -> Result<Registry, RegistryError> {
        let mut candidates: Vec<(String, Option<SourceLocation>, Arc<dyn Tool>)> = Vec::new();
        if self.inventory {
            for registration in inventory::iter::<ToolRegistration> {
                if self.name_filtered_out(registration.name) {
                    continue;
                }
                let tool = (registration.make)();
                candidates.push((registration.name.to_owned(), Some(registration.location()), tool));
            }
        }
        for tool in std::mem::take(&mut self.explicit) {
            let spec = tool.spec();
            if self.name_filtered_out(&spec.name) {
                continue;
            }
            candidates.push((spec.name.clone(), spec.source.clone(), tool));
        }

        let mut entries: Vec<Entry> = Vec::with_capacity(candidates.len());
        let mut index = NameIndex::with_capacity_and_hasher(candidates.len(), Default::default());
        for (name, source, tool) in candidates {
            if !self.spec_accepted(tool.spec()) {
                continue;
            }
            if !is_valid_tool_name(&name) {
                return Err(RegistryError::InvalidName { name });
            }
            if let Some(&existing) = index.get(&name) {
                let first = &entries[existing];
                // The same definition reached us twice (inventory and an explicit list): keep one.
                if source.is_some() && first.source == source {
                    continue;
                }
                return Err(RegistryError::DuplicateName {
                    name,
                    first: first.source.clone().map(Box::new),
                    second: source.map(Box::new),
                });
            }
            checked_aliases(&name, tool.spec())?;
            let validator = if self.check_code_examples || source.is_none() {
                checked_examples(&name, tool.as_ref())?
            } else {
                OnceLock::new()
            };
            index.insert(name.clone(), entries.len());
            entries.push(Entry { name, source, tool, validator });
        }
        Ok(Registry { entries, index, validation: self.validation, derived: Mutex::new(Vec::new()) })
    }

    fn name_filtered_out(&self, name: &str) -> bool {
        self.deny.contains(name) || self.allow.as_ref().is_some_and(|allow| !allow.contains(name))
    }

    fn spec_accepted(&self, spec: &ToolSpec) -> bool {
        if let Some(tags) = &self.tags
            && !spec.tags.iter().any(|t| tags.contains(t))
        {
            return false;
        }
        self.predicates.iter().all(|p| p(spec))
    }
}

/// Checks that every alias of a tool names one parameter and is no other name: an argument sent
/// under it must be movable to one place only.
fn checked_aliases(name: &str, spec: &ToolSpec) -> Result<(), RegistryError> {
    let parameters = spec.input_schema.get("properties").and_then(|p| p.as_object());
    let is_parameter = |key: &str| parameters.is_some_and(|p| p.contains_key(key));
    for (i, alias) in spec.aliases.iter().enumerate() {
        let camel_of =
            crate::validate::snake_case(&alias.alias).filter(|p| is_parameter(p) && *p != alias.parameter);
        let problem = if is_parameter(&alias.alias) {
            "is also the name of a parameter, so an argument sent under it would be ambiguous".to_owned()
        } else if let Some(other) = camel_of {
            format!(
                "is the camelCase spelling of the parameter `{other}` (accepted for it already), so an argument sent \
                 under it would be ambiguous"
            )
        } else if let Some(earlier) = spec.aliases[..i].iter().find(|a| a.alias == alias.alias) {
            if earlier.parameter == alias.parameter {
                format!("is declared twice for the parameter `{}`", alias.parameter)
            } else {
                format!(
                    "is declared for two parameters, `{}` and `{}`, so an argument sent under it would be ambiguous",
                    earlier.parameter, alias.parameter
                )
            }
        } else if !is_parameter(&alias.parameter) {
            format!("stands for `{}`, which is not a top-level parameter of the tool", alias.parameter)
        } else {
            continue;
        };
        return Err(RegistryError::InvalidAlias {
            tool: name.to_owned(),
            alias: alias.alias.clone(),
            problem,
        });
    }
    Ok(())
}

/// Checks every example of a tool against its input schema. An example the tool decodes itself
/// ([`Tool::decode`], which accepts exactly what the schema accepts) is valid without a
/// validator; any other is checked by the tool's validator, compiled here and kept for its
/// calls. A tool whose examples all decode (or that has none) compiles its validator on the
/// first call that needs one.
fn checked_examples(
    name: &str,
    tool: &dyn Tool,
) -> Result<OnceLock<Result<ArgumentValidator, String>>, RegistryError> {
    let cell = OnceLock::new();
    let spec = tool.spec();
    for (index, example) in spec.examples.iter().enumerate() {
        if tool.decode(&Arguments::Json(example.clone())).is_some() {
            continue;
        }
        let problems = match cell.get_or_init(|| compile_validator(name, spec)) {
            Ok(validator) => validator.example_problems(example),
            Err(message) => {
                return Err(RegistryError::InvalidExample {
                    tool: name.to_owned(),
                    index: 0,
                    problems: vec![message.clone()],
                });
            }
        };
        if !problems.is_empty() {
            return Err(RegistryError::InvalidExample { tool: name.to_owned(), index, problems });
        }
    }
    Ok(cell)
}

fn compile_validator(name: &str, spec: &ToolSpec) -> Result<ArgumentValidator, String> {
    ArgumentValidator::new(name, &spec.input_schema).map(|v| {
        v.with_freeform(spec.freeform.as_ref().map(|f| f.parameter.as_str())).with_aliases(&spec.aliases)
    })
}

struct Entry {
    name: String,
    source: Option<SourceLocation>,
    tool: Arc<dyn Tool>,
    validator: OnceLock<Result<ArgumentValidator, String>>,
}

impl Entry {
    /// The tool's compiled validator (compiled on first use), or the error every call to a tool
    /// with a broken schema gets, whatever its arguments.
    fn validator(&self) -> Result<&ArgumentValidator, ToolError> {
        let validator = self.validator.get_or_init(|| compile_validator(&self.name, self.tool.spec()));
        validator.as_ref().map_err(|message| {
            ToolError::execution(format!(
                "the tool `{}` cannot be called because its argument schema is broken; this is not caused by the arguments",
                self.name
            ))
            .with_source(std::io::Error::other(message.clone()))
        })
    }
}

/// Tool names to their entries. Every call looks a name up and nothing from a call is ever
/// inserted, so a fast hash (seeded per process) replaces the standard one, which resists
/// collisions built from inserted keys at several times the cost.
type NameIndex = HashMap<String, usize, foldhash::fast::RandomState>;

/// A tool found by name, with what checks its arguments.
pub(crate) struct Found<'a> {
    pub(crate) tool: &'a Arc<dyn Tool>,
    entry: &'a Entry,
    options: ValidationOptions,
}

/// How a call's arguments reach its tool.
pub(crate) enum ToolInput {
    /// Decoded by the tool itself: valid as they are, with nothing to coerce or report. The
    /// arguments are kept for whoever still reads them (the repeat guard).
    Decoded { call: DecodedCall, arguments: Arguments },
    /// Validated against the tool's schema, with the coercions made.
    Validated(ValidatedArgs),
}

impl Found<'_> {
    /// How the arguments reach the tool, decided here for the registry and the dispatcher
    /// alike: decoded by the tool itself when `may_decode` (nothing reads them as a value
    /// first) and the tool takes them as they are, validated against its schema otherwise.
    /// Only the validating path compiles the tool's validator: a process whose calls all
    /// decode never builds one.
    pub(crate) fn input(&self, arguments: Arguments, may_decode: bool) -> Result<ToolInput, ToolError> {
        if may_decode && let Some(call) = self.tool.decode(&arguments) {
            return Ok(ToolInput::Decoded { call, arguments });
        }
        self.validate(arguments).map(ToolInput::Validated)
    }

    /// Validates the arguments against the tool's schema (compiled on first use).
    fn validate(&self, arguments: Arguments) -> Result<ValidatedArgs, ToolError> {
        let tool = self.tool;
        let adapt = |map: &mut serde_json::Map<String, serde_json::Value>, coercions: &mut Vec<Coercion>| {
            tool.adapt_arguments(map, coercions)
        };
        self.entry.validator()?.validate(arguments, self.options, Some(&adapt))
    }
}

/// The set of tools the model can see and call. Listing and dispatch read the same registry.
pub struct Registry {
    entries: Vec<Entry>,
    index: NameIndex,
    validation: ValidationOptions,
    /// What other crates derive from the registry (a catalog's search index), built on first
    /// use and kept.
    derived: Mutex<Vec<Arc<dyn Any + Send + Sync>>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry").field("tools", &self.names().collect::<Vec<_>>()).finish()
    }
}

impl Registry {
    /// Starts an empty builder.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// Every `#[tool]` linked into the binary.
    pub fn from_inventory() -> Result<Registry, RegistryError> {
        Registry::builder().with_inventory().build()
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.index.get(name).map(|&i| &self.entries[i].tool)
    }

    /// Whether a tool called `name` exists.
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// Tool names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.name.as_str())
    }

    /// Tools, in registration order.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.entries.iter().map(|e| &e.tool)
    }

    /// Specs, in registration order.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.entries.iter().map(|e| e.tool.spec())
    }

    /// Data of type `T` derived from this registry (a tool catalog's search index): made by
    /// `init` on the first call for `T` and kept with the registry, which does not change once
    /// built, so everything sharing the registry shares it. `init` must not ask for derived
    /// data itself.
    pub fn derived<T: Any + Send + Sync>(&self, init: impl FnOnce(&Registry) -> T) -> Arc<T> {
        let mut derived = self.derived.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = derived.iter().find_map(|value| value.clone().downcast::<T>().ok()) {
            return found;
        }
        let value = Arc::new(init(self));
        derived.push(value.clone());
        value
    }

    /// The position of the tool `name` in registration order.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The spec of the tool at `position` in registration order (panics past the end).
    pub fn spec_at(&self, position: usize) -> &ToolSpec {
        self.entries[position].tool.spec()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the registry is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The validation options in force.
    pub fn validation_options(&self) -> ValidationOptions {
        self.validation
    }

    /// Checks every tool's input schema as validating a call of it would (compiled, each
    /// keyword's value checked, the validators kept for the calls), and every example
    /// against its schema. A registry compiles a tool's validator only for the first call that
    /// needs one (a call its tool decodes itself needs none), so a broken schema otherwise shows
    /// only then; and [`RegistryBuilder::examples_checked_by_tests`] leaves examples unchecked.
    /// This is for a test over the tools a binary links:
    /// `Registry::from_inventory()?.check_schemas()`.
    pub fn check_schemas(&self) -> Result<(), RegistryError> {
        for entry in &self.entries {
            let validator =
                match entry.validator.get_or_init(|| compile_validator(&entry.name, entry.tool.spec())) {
                    Ok(validator) => validator,
                    Err(message) => {
                        return Err(RegistryError::InvalidSchema {
                            tool: entry.name.clone(),
                            problem: message.clone(),
                        });
                    }
                };
            for (index, example) in entry.tool.spec().examples.iter().enumerate() {
                let problems = validator.example_problems(example);
                if !problems.is_empty() {
                    return Err(RegistryError::InvalidExample { tool: entry.name.clone(), index, problems });
                }
            }
        }
        Ok(())
    }

    /// Validates the arguments of a call to `name` (compiling and caching the validator on first
    /// use). Unknown tools and invalid arguments come back as model-facing errors.
    pub fn validate(&self, name: &str, arguments: impl Into<Arguments>) -> Result<ValidatedArgs, ToolError> {
        self.lookup(name)?.validate(arguments.into())
    }

    /// Looks `name` up once: the tool, and what validates its arguments when they need it. A
    /// tool whose schema does not compile fails every call that is validated, whatever the
    /// arguments; a call its tool decodes itself ([`Tool::decode`]) needs no validator, as the
    /// decoding accepts exactly what the schema accepts.
    pub(crate) fn lookup(&self, name: &str) -> Result<Found<'_>, ToolError> {
        let entry = match self.index.get(name) {
            Some(&i) => &self.entries[i],
            None => return Err(self.unknown_tool(name)),
        };
        Ok(Found { tool: &entry.tool, entry, options: self.validation })
    }

    /// Validates and runs one call without a dispatcher: no hooks, timeouts, truncation or events
    /// (the context's truncation limits take the tool's own settings, for a tool that cuts its
    /// own output).
    /// Agent loops should use the dispatcher instead; this is for tests and simple scripts.
    pub async fn call(
        &self,
        name: &str,
        arguments: impl Into<Arguments>,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let arguments = arguments.into();
        let found = self.lookup(name)?;
        let tool = found.tool;
        // The tool's own limits reach it as they would through a dispatcher.
        let limits = ctx.truncation().with_policy(&tool.spec().truncation);
        let ctx = if limits == ctx.truncation() { ctx } else { ctx.with_truncation(limits) };
        match found.input(arguments, true)? {
            ToolInput::Decoded { call, .. } => call(ctx).await,
            ToolInput::Validated(args) => tool.call(ctx, args.value).await,
        }
    }

    /// The model-facing error for a call to a tool that does not exist, listing the real ones.
    pub fn unknown_tool(&self, name: &str) -> ToolError {
        let available = self.names().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
        let mut message = format!("Unknown tool `{}`.", crate::words::excerpt(name));
        if available.is_empty() {
            message.push_str(" No tools are available.");
        } else {
            message.push_str(&format!(" Available tools: {available}."));
        }
        ToolError::not_found(message)
    }
}
