//! What the permission rules know about tools: which ones ask about commands or paths, and the
//! names other agents (Claude Code) use for them.

use std::collections::HashMap;

use tool_core::ToolSpec;

/// What a tool asks permission for, and so what a rule's pattern on it is matched against: the
/// [`ToolSpec::permission`] a tool declares (`#[tool(permission = "path")]`).
pub use tool_core::PermissionSubject as Subject;

/// What a tool does to the workspace, as the permission modes see it ([`PermissionMode`]):
/// a tool the catalog does not mark asks in `default` mode.
///
/// [`PermissionMode`]: crate::PermissionMode
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Access {
    /// It changes nothing the user would be asked about (`read`, `grep`, `todo_write`): it runs
    /// in every mode.
    ReadOnly,
    /// It edits files of the workspace (`edit`, `write`): `acceptEdits` runs it without asking.
    Edits,
}

/// The tools a rule set knows: their subjects and their names in other agents' settings files.
///
/// A tool with a subject asks about each command or path it uses (with `ToolContext::ask`), so
/// its rules with a pattern and its default apply there; a tool without one is decided once per
/// call. Each tool declares its subject on its own spec ([`ToolSpec::permission`]), and
/// [`ToolCatalog::tools`] takes them from there (`ToolCatalog::new().tools(registry.specs())`);
/// [`ToolCatalog::subject`] adds one by hand. `tools_std::permission_catalog()` is the built-in
/// tools' catalog, with Claude Code's names for them.
#[derive(Debug, Clone, Default)]
pub struct ToolCatalog {
    subjects: HashMap<String, Subject>,
    /// A foreign name (`Read`) and the tools its rules apply to (`read`, `glob`, `grep`, `ls`).
    rule_names: HashMap<String, Vec<String>>,
    /// A tool and the foreign name a hook matcher may use for it (`bash` and `Bash`).
    hook_names: HashMap<String, String>,
    /// A tool and the argument that holds its command line (`bash` and `command`).
    command_arguments: HashMap<String, String>,
    /// What a tool does to the workspace, for the permission modes.
    access: HashMap<String, Access>,
}

impl ToolCatalog {
    /// No tools.
    pub fn new() -> Self {
        Self::default()
    }

    /// What each of `specs` asks about ([`ToolSpec::permission`]) and where its command line is
    /// ([`ToolSpec::command_argument`]), for the tools that declare them; nothing for the others.
    /// A read-only tool ([`ToolAnnotations::read_only`](tool_core::ToolAnnotations)) is
    /// [`Access::ReadOnly`], another that asks about paths [`Access::Edits`].
    pub fn tools<'a>(mut self, specs: impl IntoIterator<Item = &'a ToolSpec>) -> Self {
        for spec in specs {
            if spec.annotations.read_only {
                self.access.insert(spec.name.clone(), Access::ReadOnly);
            } else if spec.permission == Some(Subject::Path) {
                self.access.insert(spec.name.clone(), Access::Edits);
            }
            if let Some(subject) = spec.permission {
                self.subjects.insert(spec.name.clone(), subject);
            }
            if let Some(argument) = &spec.command_argument {
                self.command_arguments.insert(spec.name.clone(), argument.clone());
            }
        }
        self
    }

    /// `tool` asks about `subject`.
    pub fn subject(mut self, tool: impl Into<String>, subject: Subject) -> Self {
        self.subjects.insert(tool.into(), subject);
        self
    }

    /// What `tool` does to the workspace, for the permission modes (instead of what its spec
    /// says).
    pub fn access(mut self, tool: impl Into<String>, access: Access) -> Self {
        self.access.insert(tool.into(), access);
        self
    }

    /// What `tool` does to the workspace, if the catalog knows.
    pub fn access_of(&self, tool: &str) -> Option<Access> {
        self.access.get(tool).copied()
    }

    /// Rules written for `name` (as in a Claude Code settings file) apply to `tools`.
    pub fn rule_name<I, S>(mut self, name: impl Into<String>, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rule_names.entry(name.into()).or_default().extend(tools.into_iter().map(Into::into));
        self
    }

    /// Hook matchers that name `name` match `tool` (as Claude Code's `Bash` matches `bash`).
    pub fn hook_name(mut self, tool: impl Into<String>, name: impl Into<String>) -> Self {
        self.hook_names.insert(tool.into(), name.into());
        self
    }

    /// `tool`'s command line is its argument `argument`: a call whose command only reads
    /// ([`shell::classify`](super::shell::classify)) runs under the shared guard, alongside other
    /// parallel calls, once a policy with this catalog is installed.
    pub fn command_argument(mut self, tool: impl Into<String>, argument: impl Into<String>) -> Self {
        self.command_arguments.insert(tool.into(), argument.into());
        self
    }

    /// The read-only command line of a call of `tool`, if the catalog knows where it is and it
    /// only reads.
    pub(crate) fn runs_read_only(&self, tool: &str, arguments: &serde_json::Value) -> bool {
        self.command_arguments
            .get(tool)
            .and_then(|argument| arguments.get(argument))
            .and_then(serde_json::Value::as_str)
            .is_some_and(|command| super::shell::classify(command).is_read_only())
    }

    pub(crate) fn has_command_arguments(&self) -> bool {
        !self.command_arguments.is_empty()
    }

    /// The tools that ask about `subject`, sorted.
    pub(crate) fn tools_with(&self, subject: Subject) -> Vec<&str> {
        let mut tools: Vec<&str> =
            self.subjects.iter().filter(|(_, s)| **s == subject).map(|(tool, _)| tool.as_str()).collect();
        tools.sort_unstable();
        tools
    }

    /// What `tool` asks about, if anything.
    pub fn subject_of(&self, tool: &str) -> Option<Subject> {
        self.subjects.get(tool).copied()
    }

    /// The tools a rule naming `name` applies to: the mapped ones, or `name` itself.
    pub(crate) fn tools_named(&self, name: &str) -> Vec<String> {
        match self.rule_names.get(name) {
            Some(tools) => tools.clone(),
            None => vec![name.to_owned()],
        }
    }

    /// The name a rule about `tool` is best written with: Claude Code's, or ours.
    pub(crate) fn rule_name_of<'a>(&'a self, tool: &'a str) -> &'a str {
        self.hook_names.get(tool).map_or(tool, String::as_str)
    }

    /// The other name of `tool` for hook matchers.
    #[cfg_attr(not(feature = "command-hooks"), allow(dead_code))]
    pub(crate) fn hook_name_of(&self, tool: &str) -> Option<&str> {
        self.hook_names.get(tool).map(String::as_str)
    }
}
