//! What the permission rules know about tools: which ones ask about commands or paths, and the
//! names other agents (Claude Code) use for them.

use std::collections::{BTreeSet, HashMap};

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
    /// Every tool there is, when said ([`ToolCatalog::known_tools`]): a rule naming another is
    /// an error.
    known: Option<BTreeSet<String>>,
    /// The mounted MCP servers, whose tools are named `SERVER__TOOL`.
    servers: BTreeSet<String>,
}

/// Tools of Claude Code's with no counterpart here: a rule naming one has no effect.
const CLAUDE_CODE_ONLY: &[&str] = &[
    "Task",
    "Agent",
    "WebSearch",
    "WebFetch",
    "NotebookRead",
    "SlashCommand",
    "Skill",
    "ExitPlanMode",
    "ListMcpResourcesTool",
    "ReadMcpResourceTool",
];

/// What a rule's tool name stands for.
#[derive(Debug)]
pub(crate) enum Resolved {
    /// These tools.
    Tools(Vec<String>),
    /// Every tool of this mounted server (`mcp__SERVER`, `mcp__SERVER__*`).
    Server(String),
    /// A tool of Claude Code's with no counterpart here, or of a server that is not mounted
    /// (why, in words).
    Absent(String),
    /// No tool, with the closest names (why, in words).
    Unknown(String),
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

    /// Every tool there is (with [`ToolCatalog::server`], the mounted ones too): a rule that
    /// names another is an error when the rules are built, with the closest names. Without it
    /// any name is taken as a tool's.
    pub fn known_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.known.get_or_insert_with(BTreeSet::new).extend(names.into_iter().map(Into::into));
        self
    }

    /// `server` is a mounted MCP server whose tools are named `SERVER__TOOL` (tool-mcp's default
    /// naming): rules `mcp__SERVER__TOOL` name its tool `TOOL`, `mcp__SERVER` and
    /// `mcp__SERVER__*` every tool it has, now or later, and hooks see its tools as
    /// `mcp__SERVER__TOOL`.
    pub fn server(mut self, server: impl Into<String>) -> Self {
        self.servers.insert(server.into());
        self
    }

    /// Whether this catalog was given no tools (every name is taken as it is written).
    pub(crate) fn knows_no_tools(&self) -> bool {
        self.known.is_none()
    }

    /// The mounted server `tool` belongs to, if any.
    pub(crate) fn server_of(&self, tool: &str) -> Option<&str> {
        // The longest mounted name followed by `__`: with servers `a` and `a__b` mounted (a name
        // a settings file cannot give), `a__b__x` is `a__b`'s.
        self.servers
            .iter()
            .filter(|server| tool.strip_prefix(server.as_str()).is_some_and(|rest| rest.starts_with("__")))
            .max_by_key(|server| server.len())
            .map(String::as_str)
    }

    /// What a rule naming `name` is about.
    pub(crate) fn resolve(&self, name: &str) -> Resolved {
        if let Some(tools) = self.rule_names.get(name) {
            return Resolved::Tools(tools.clone());
        }
        if let Some(rest) = name.strip_prefix("mcp__") {
            return self.resolve_mcp(name, rest);
        }
        match &self.known {
            Some(known) if !known.contains(name) && name != crate::rules::EXTERNAL_DIRECTORY => {
                if CLAUDE_CODE_ONLY.contains(&name) {
                    Resolved::Absent(format!(
                        "`{name}` is a tool of Claude Code's that this program does not have, so the rule has \
                         no effect"
                    ))
                } else {
                    Resolved::Unknown(format!("no tool is named `{name}`{}", self.closest(name)))
                }
            }
            _ => Resolved::Tools(vec![name.to_owned()]),
        }
    }

    fn resolve_mcp(&self, name: &str, rest: &str) -> Resolved {
        let (server, tool) = match rest.split_once("__") {
            Some((server, tool)) => (server, Some(tool)),
            None => (rest, None),
        };
        let Some(known) = &self.known else {
            return match tool {
                None | Some("*") => Resolved::Server(server.to_owned()),
                Some(_) => Resolved::Tools(vec![rest.to_owned()]),
            };
        };
        let mounted = if self.servers.is_empty() {
            "no MCP server is mounted".to_owned()
        } else {
            let names: Vec<&str> = self.servers.iter().map(String::as_str).collect();
            format!("the mounted MCP servers are {}", names.join(", "))
        };
        match tool {
            // Which servers are mounted changes from run to run (`--mcp-config`).
            _ if !self.servers.contains(server) => Resolved::Absent(format!(
                "`{name}` names the MCP server `{server}`, which is not mounted ({mounted}), so the rule has \
                 no effect{}",
                self.closest(name)
            )),
            None | Some("*") => Resolved::Server(server.to_owned()),
            Some(_) if known.contains(rest) => Resolved::Tools(vec![rest.to_owned()]),
            Some(tool) => Resolved::Unknown(format!(
                "the MCP server `{server}` has no tool `{tool}`{}",
                self.closest(name)
            )),
        }
    }

    /// `; did you mean `X`?` with the known name closest to `name`, or nothing.
    fn closest(&self, name: &str) -> String {
        let known = self.known.iter().flatten();
        let mounted =
            known.clone().filter(|tool| self.server_of(tool).is_some()).map(|tool| format!("mcp__{tool}"));
        let servers = self.servers.iter().map(|server| format!("mcp__{server}"));
        let candidates = known.cloned().chain(self.rule_names.keys().cloned()).chain(mounted).chain(servers);
        let lower = name.to_ascii_lowercase();
        let best = candidates
            .map(|candidate| (edit_distance(&lower, &candidate.to_ascii_lowercase()), candidate))
            .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        match best {
            Some((distance, candidate)) if distance <= (name.len() / 3).max(2) => {
                format!("; did you mean `{candidate}`?")
            }
            _ => String::new(),
        }
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
        // A hook name is a rule name only where rules by that name reach the tool (`Bash`
        // matches `bash_input`'s hooks, but `allow Bash` does not allow typing into a session).
        let names_it = |name: &&String| {
            self.rule_names.get(name.as_str()).is_some_and(|tools| tools.iter().any(|t| t == tool))
        };
        self.hook_names.get(tool).filter(names_it).map_or(tool, String::as_str)
    }

    /// The other name of `tool` for hook matchers and hook input: Claude Code's (`Bash`), or
    /// `mcp__SERVER__TOOL` for a mounted server's tool.
    #[cfg_attr(not(feature = "command-hooks"), allow(dead_code))]
    pub(crate) fn hook_name_of(&self, tool: &str) -> Option<std::borrow::Cow<'_, str>> {
        match self.hook_names.get(tool) {
            Some(name) => Some(name.as_str().into()),
            None => self.server_of(tool).map(|_| format!("mcp__{tool}").into()),
        }
    }
}

/// Levenshtein distance between `a` and `b`, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != *cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> ToolCatalog {
        ToolCatalog::new()
            .rule_name("Bash", ["bash"])
            .known_tools(["bash", "read", "py__add", "py__sub"])
            .server("py")
    }

    fn problem(resolved: Resolved) -> String {
        match resolved {
            Resolved::Absent(problem) | Resolved::Unknown(problem) => problem,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rule_names_resolve_to_tools_servers_or_the_closest_name() {
        let catalog = catalog();
        assert!(matches!(catalog.resolve("Bash"), Resolved::Tools(tools) if tools == ["bash"]));
        assert!(matches!(catalog.resolve("mcp__py__add"), Resolved::Tools(tools) if tools == ["py__add"]));
        assert!(matches!(catalog.resolve("mcp__py"), Resolved::Server(server) if server == "py"));
        assert!(matches!(catalog.resolve("mcp__py__*"), Resolved::Server(server) if server == "py"));
        assert_eq!(problem(catalog.resolve("Bsh")), "no tool is named `Bsh`; did you mean `Bash`?");
        assert_eq!(problem(catalog.resolve("rread")), "no tool is named `rread`; did you mean `read`?");
        assert_eq!(problem(catalog.resolve("Frobnicate")), "no tool is named `Frobnicate`");
        assert_eq!(
            problem(catalog.resolve("mcp__py__ad")),
            "the MCP server `py` has no tool `ad`; did you mean `mcp__py__add`?"
        );
        assert!(matches!(catalog.resolve("WebSearch"), Resolved::Absent(_)));
        assert!(matches!(catalog.resolve("mcp__pi__add"), Resolved::Absent(_)));
        // Without the list of tools, any name is a tool's.
        let open = ToolCatalog::new();
        assert!(matches!(open.resolve("Frobnicate"), Resolved::Tools(tools) if tools == ["Frobnicate"]));
        assert!(matches!(open.resolve("mcp__py__add"), Resolved::Tools(tools) if tools == ["py__add"]));
    }
}
