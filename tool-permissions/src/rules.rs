//! Declarative permission rules: `allow`, `ask` or `deny` per tool, with an optional pattern on
//! the command or path the tool asks about; deny beats ask beats allow; defaults per tool.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::{GlobBuilder, GlobMatcher};
use regex::Regex;

use crate::catalog::{Resolved, Subject, ToolCatalog};
use crate::command_paths::{MAX_PATHS, named_paths, walk};
use crate::shell;
use crate::shell::see_through::{self, Run, Seen, Shape};

/// The rule name (Claude Code's) whose path rules also apply to the paths a command names.
const READ_RULES: &str = "Read";
/// The rule name of Claude Code's tools that edit files.
const EDIT_RULES: &str = "Edit";

/// The rule name that governs paths outside the workspace root, whatever the tool.
pub const EXTERNAL_DIRECTORY: &str = "external_directory";

/// What a rule says about what it matches. Ordered by strictness: deny beats ask beats allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    /// Go ahead without asking.
    Allow,
    /// Ask the application's asker (without one: refused, naming the rule).
    Ask,
    /// Refuse, naming the rule.
    Deny,
}

impl From<tool_settings::Action> for Action {
    fn from(action: tool_settings::Action) -> Action {
        match action {
            tool_settings::Action::Allow => Action::Allow,
            tool_settings::Action::Ask => Action::Ask,
            tool_settings::Action::Deny => Action::Deny,
        }
    }
}

impl Action {
    /// `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Ask => "ask",
            Action::Deny => "deny",
        }
    }

    /// Parses `allow`, `ask` or `deny`.
    pub fn parse(text: &str) -> Option<Action> {
        match text {
            "allow" => Some(Action::Allow),
            "ask" => Some(Action::Ask),
            "deny" => Some(Action::Deny),
            _ => None,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rule that cannot be used, found when the rules are built (never at call time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// Where it came from (`permissions.allow` of a file, or the builder).
    pub origin: String,
    /// What is wrong with it.
    pub problem: String,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rule `{}` in {}: {}", self.rule, self.origin, self.problem)
    }
}

impl std::error::Error for RuleError {}

/// What a rule's parenthesised part matches.
#[derive(Debug, Clone)]
enum Pattern {
    /// No pattern: every use of the tool.
    Any,
    /// `read-only`: a command [`shell::classify`] finds read-only.
    ReadOnly,
    Command(CommandPattern),
    Path(Box<PathPattern>),
}

/// Claude Code's command patterns: `prefix:*` (the prefix as whole words), globs with `*`
/// (a final ` *` also matches nothing), or the exact command. Allow rules match them against the
/// text of each simple command; deny and ask rules also against what the line runs
/// ([`see_through`]), by [`Shape`].
#[derive(Debug, Clone)]
enum CommandPattern {
    Prefix(String, Option<Shape>),
    /// The regex, and the pattern's first word when it has no `*`.
    Glob(Regex, Option<String>),
    Exact(String, Option<Shape>),
}

impl CommandPattern {
    fn parse(pattern: &str) -> Result<CommandPattern, String> {
        if let Some(prefix) = pattern.strip_suffix(":*") {
            if prefix.contains('*') {
                return Err("a `prefix:*` pattern cannot contain another `*`".to_owned());
            }
            let prefix = prefix.trim();
            return Ok(CommandPattern::Prefix(prefix.to_owned(), Shape::new(prefix, false)));
        }
        if !pattern.contains('*') {
            let exact = pattern.trim();
            return Ok(CommandPattern::Exact(exact.to_owned(), Shape::new(exact, true)));
        }
        // `git push *` says what `git push:*` says (Claude Code's two spellings of a prefix): read
        // as the prefix, it is seen through wrappers and the program's own options
        // (`git -C . push`, `git --no-pager push`) as the other spelling is.
        if let Some(prefix) = pattern.strip_suffix(" *").map(str::trim)
            && !prefix.is_empty()
            && !prefix.contains('*')
        {
            return Ok(CommandPattern::Prefix(prefix.to_owned(), Shape::new(prefix, false)));
        }
        let (body, optional_tail) = match pattern.strip_suffix(" *") {
            Some(body) if !body.contains('*') => (body, true),
            _ => (pattern, false),
        };
        let mut regex = String::from("(?s)^");
        let parts: Vec<String> = body.split('*').map(regex::escape).collect();
        regex.push_str(&parts.join(".*"));
        if optional_tail {
            regex.push_str("(?: .*)?");
        }
        regex.push('$');
        let first = pattern.split_whitespace().next().filter(|word| !word.contains('*'));
        let program = first.map(|word| see_through::base_name(word).to_owned());
        Regex::new(&regex)
            .map(|regex| CommandPattern::Glob(regex, program))
            .map_err(|e| format!("not a valid pattern: {e}"))
    }

    fn matches(&self, command: &str) -> bool {
        let command = command.trim();
        match self {
            CommandPattern::Prefix(prefix, _) => {
                command == prefix
                    || command.strip_prefix(prefix.as_str()).is_some_and(|rest| rest.starts_with([' ', '\t']))
            }
            CommandPattern::Glob(regex, _) => regex.is_match(command),
            CommandPattern::Exact(exact, _) => command == exact,
        }
    }

    /// Whether `run` may be what the pattern describes (for deny and ask rules: a run that is
    /// not fully known may be).
    fn sees(&self, run: &Run) -> bool {
        match self {
            CommandPattern::Prefix(_, shape) | CommandPattern::Exact(_, shape) => {
                shape.as_ref().is_some_and(|shape| shape.matches(run))
            }
            CommandPattern::Glob(regex, program) => {
                let Some(name) = &run.program else { return true };
                if program.as_ref().is_some_and(|program| program != name) {
                    return false;
                }
                let mut text = name.clone();
                for arg in &run.args {
                    text.push(' ');
                    text.push_str(&arg.text);
                }
                regex.is_match(&text) || run.has_unknown_args()
            }
        }
    }

    fn is_exact(&self) -> bool {
        matches!(self, CommandPattern::Exact(..))
    }
}

/// A gitignore-style glob on absolute paths: `//abs`, `~/home`, `/from-root`, and `name` or
/// `./name` (the same: at any depth below the root without a `/` but at its end, from the root
/// with one). It also matches everything beneath what it matches.
#[derive(Debug, Clone)]
struct PathPattern {
    glob: GlobMatcher,
    beneath: GlobMatcher,
    /// For `dir/**`: `dir` itself, since listing or searching it reads what is beneath.
    itself: Option<GlobMatcher>,
    /// What the pattern names for a sandbox, when it is anchored and has no wildcard but in its
    /// last component (`./.env`, `./.env.*`, `~/.ssh/**`, `//etc/app/*`): a path, with all
    /// beneath it, whose last component may be a pattern of names (see
    /// [`Rules::denied_paths`]).
    sandbox_path: Option<PathBuf>,
}

impl PathPattern {
    fn parse(pattern: &str, root: &Path) -> Result<PathPattern, String> {
        let home = || {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .ok_or_else(|| "`~` is used but HOME is not set".to_owned())
        };
        // `None`: relative, anchored or not by what it names.
        let (base, rest, anchored) = if let Some(rest) = pattern.strip_prefix("//") {
            (PathBuf::from("/"), rest, Some(true))
        } else if pattern == "~" {
            (home()?, "", Some(true))
        } else if let Some(rest) = pattern.strip_prefix("~/") {
            (home()?, rest, Some(true))
        } else if let Some(rest) = pattern.strip_prefix('/') {
            (root.to_path_buf(), rest, Some(true))
        } else {
            (root.to_path_buf(), pattern, None)
        };
        if rest.split('/').any(|part| part == "..") {
            return Err("`..` is not allowed in a path pattern; write the path it leads to".to_owned());
        }
        // `a//b` and `a/./b` name `a/b`, as a path would (`./name` is `name`).
        let parts: Vec<&str> = rest.split('/').filter(|part| !part.is_empty() && *part != ".").collect();
        let rest = parts.join("/");
        let rest = rest.as_str();
        // As in Claude Code, `./name` is `name`, and gitignore's rule decides: with a `/` (but at
        // its end) it is taken from the root, without one it matches at any depth (`./.env` is
        // every `.env`, `./src/*.rs` only the root's `src`).
        let anchored = anchored.unwrap_or(parts.len() > 1);
        // `dir/**` and `dir/*` name what `dir` holds.
        let named = match rest {
            "**" | "*" => "",
            _ => rest.strip_suffix("/**").or_else(|| rest.strip_suffix("/*")).unwrap_or(rest),
        };
        let (dir, name) = named.rsplit_once('/').unwrap_or(("", named));
        // What a sandbox can hold of it: the path from its base (`.env` and `./.env` the root's
        // `.env`, `./*.pem` the root's; the file tools' rules match the others, and `*.pem`, which
        // could name more files at the root than a command's mounts may hide).
        let from_root = anchored || pattern.starts_with("./") || !name.contains(['*', '?', '[', ']']);
        let sandboxed = from_root
            && !dir.contains(['*', '?', '[', ']', '{', '}', '\\'])
            && !name.contains(['{', '}', '\\'])
            && !name.contains("**");
        let sandbox_path = sandboxed.then(|| if named.is_empty() { base.clone() } else { base.join(named) });
        let base = base.to_string_lossy();
        let base = globset::escape(base.trim_end_matches('/'));
        let text = match (rest.is_empty(), anchored) {
            (true, _) if base.is_empty() => "/".to_owned(),
            (true, _) => base,
            (false, true) => format!("{base}/{rest}"),
            (false, false) => format!("{base}/**/{rest}"),
        };
        let build = |text: &str| {
            GlobBuilder::new(text)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map(|glob| glob.compile_matcher())
                .map_err(|e| format!("not a valid glob: {}", e.kind()))
        };
        let beneath = if text.ends_with('/') { format!("{text}**") } else { format!("{text}/**") };
        let itself = match text.strip_suffix("/**") {
            Some(dir) if !dir.is_empty() => Some(build(dir)?),
            _ => None,
        };
        Ok(PathPattern { glob: build(&text)?, beneath: build(&beneath)?, itself, sandbox_path })
    }

    fn matches(&self, path: &Path) -> bool {
        self.glob.is_match(path)
            || self.beneath.is_match(path)
            || self.itself.as_ref().is_some_and(|itself| itself.is_match(path))
    }
}

#[derive(Debug, Clone)]
struct Rule {
    action: Action,
    pattern: Pattern,
    /// As written, for messages.
    text: String,
    origin: Arc<str>,
}

/// Why a request got its answer: a rule, or a default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Because {
    Rule {
        action: Action,
        text: String,
        origin: Arc<str>,
    },
    /// A deny or ask command rule that applies because part of the line cannot be followed.
    Unresolved {
        action: Action,
        text: String,
        origin: Arc<str>,
        why: &'static str,
    },
    /// A Read path rule that covers a path a command names.
    Reads {
        action: Action,
        text: String,
        origin: Arc<str>,
        word: String,
    },
    ToolDefault(String),
    Default,
    /// No rule and no default of the rules: the policy's permission mode decides.
    Unmatched,
    /// The permission mode decided (`would`: the rule or mode that would allow it, in words).
    Mode {
        mode: crate::PermissionMode,
        origin: Arc<str>,
        would: String,
    },
    ExternalDefault,
    /// A tool that asks about its commands or paths, decided there.
    Deferred,
    /// Typing into a shell or interpreter (this command line) while rules about commands are
    /// in force.
    InputDefault(String),
    /// Typing keys whose effect on the line cannot be known into this command line, which the
    /// `PreToolUse` hooks could not be shown.
    UnseenInput(String),
}

impl Because {
    /// Whether a rule of the settings decided (not a default or the mode).
    pub(crate) fn is_a_rule(&self) -> bool {
        matches!(self, Because::Rule { .. } | Because::Unresolved { .. } | Because::Reads { .. })
    }
}

impl fmt::Display for Because {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Because::Rule { action, text, origin } => write!(f, "the rule `{action} {text}` in {origin}"),
            Because::Unresolved { action, text, origin, why } => write!(
                f,
                "the rule `{action} {text}` in {origin} (the command uses {why}, which the rules cannot follow, \
                 so it may run what the rule matches)"
            ),
            Because::Reads { action, text, origin, word } => {
                write!(f, "the rule `{action} {text}` in {origin} (the command reads {word})")
            }
            Because::ToolDefault(tool) => write!(f, "the default for `{tool}`"),
            Because::Default => f.write_str("the default for every tool"),
            Because::Unmatched => f.write_str("no rule"),
            Because::Mode { mode, origin, would } => {
                write!(f, "the permission mode `{mode}` ({origin}; no rule allows this, {would})")
            }
            Because::ExternalDefault => f.write_str("the default for paths outside the workspace root"),
            Because::Deferred => f.write_str("no rule"),
            Because::InputDefault(command) => write!(
                f,
                "the default for typing into `{command}`, which may run what it reads as commands or code, \
                 while rules about commands are in force"
            ),
            Because::UnseenInput(command) => write!(
                f,
                "typing keys into `{command}` whose effect on the line cannot be known (cursor, history, \
                 completion), so the PreToolUse hooks could not be shown what will run"
            ),
        }
    }
}

/// An answer and its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) action: Action,
    pub(crate) because: Because,
}

/// A checked rule set. Build one with [`Rules::builder`] or load it from a settings file with
/// [`Settings`](super::Settings).
#[derive(Debug, Clone)]
pub struct Rules {
    by_tool: HashMap<String, Vec<Rule>>,
    /// Rules about every tool of a mounted server (`mcp__SERVER`, `mcp__SERVER__*`), by the
    /// server's name.
    by_server: Vec<(String, Rule)>,
    /// Rules that name a tool of Claude Code's with no counterpart here, or a server that is not
    /// mounted: kept out, and said.
    ignored: Vec<RuleError>,
    external: Vec<Rule>,
    defaults: HashMap<String, Action>,
    default: Option<Action>,
    external_default: Action,
    /// Directories outside the root that count as the workspace's (Claude Code's
    /// `additionalDirectories`), canonical.
    additional: Vec<PathBuf>,
    catalog: ToolCatalog,
    root: PathBuf,
}

impl Rules {
    /// Starts a rule set for the workspace at `root` (relative path patterns start there).
    pub fn builder(root: impl Into<PathBuf>) -> RulesBuilder {
        RulesBuilder {
            root: root.into(),
            catalog: ToolCatalog::new(),
            rules: Vec::new(),
            defaults: HashMap::new(),
            default: None,
            external_default: Action::Deny,
            additional: Vec::new(),
        }
    }

    /// The workspace root (canonical when it exists).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The catalog the rules were built with.
    pub fn catalog(&self) -> &ToolCatalog {
        &self.catalog
    }

    fn tool_rules(&self, tool: &str) -> &[Rule] {
        self.by_tool.get(tool).map_or(&[], Vec::as_slice)
    }

    /// The rules about every tool of the mounted server whose tool `tool` is.
    fn server_rules<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = &'a Rule> + 'a {
        // The server the tool is of: its whole name before the first `__` (a server's name has
        // none), one the catalog says is mounted when it knows the tools.
        let server = self.catalog.server_of(tool).or_else(|| {
            let (server, _) = tool.split_once("__")?;
            self.catalog.knows_no_tools().then_some(server)
        });
        self.by_server.iter().filter(move |(name, _)| Some(name.as_str()) == server).map(|(_, rule)| rule)
    }

    /// The rules that have no effect, each with the reason: they name a tool of Claude Code's
    /// with no counterpart here (`WebSearch`, `Task`), or an MCP server that is not mounted.
    pub fn ignored(&self) -> &[RuleError] {
        &self.ignored
    }

    /// The strictest rule of `tool` without a pattern, if any.
    pub(crate) fn bare_verdict(&self, tool: &str) -> Option<Verdict> {
        let bare = self.tool_rules(tool).iter().filter(|rule| matches!(rule.pattern, Pattern::Any));
        strictest(bare.chain(self.server_rules(tool)))
    }

    /// The strictest `ask` or `deny` rule of `tool`, whatever its pattern: what applies to a
    /// command that cannot be resolved at all.
    pub(crate) fn strictest_refusal(&self, tool: &str) -> Option<Verdict> {
        strictest(self.tool_rules(tool).iter().filter(|rule| rule.action != Action::Allow))
    }

    /// Whether a rule or a default of its own is about `tool`.
    pub(crate) fn has_rules_for(&self, tool: &str) -> bool {
        !self.tool_rules(tool).is_empty()
            || self.defaults.contains_key(tool)
            || self.server_rules(tool).next().is_some()
    }

    /// What happens to `tool` when no rule matches.
    pub(crate) fn default_verdict(&self, tool: &str) -> Verdict {
        self.default_for(tool)
    }

    fn default_for(&self, tool: &str) -> Verdict {
        match (self.defaults.get(tool), self.default) {
            (Some(&action), _) => Verdict { action, because: Because::ToolDefault(tool.to_owned()) },
            (None, Some(action)) => Verdict { action, because: Because::Default },
            // Allowed unless the policy's mode says otherwise.
            (None, None) => Verdict { action: Action::Allow, because: Because::Unmatched },
        }
    }

    /// The answer for a call as a whole: a rule without a pattern, or else (for a tool that asks
    /// about nothing narrower) the tool's default.
    pub(crate) fn decide_call(&self, tool: &str) -> Verdict {
        if let Some(verdict) = self.bare_verdict(tool) {
            return verdict;
        }
        match self.catalog.subject_of(tool) {
            Some(_) => Verdict { action: Action::Allow, because: Because::Deferred },
            None => self.default_for(tool),
        }
    }

    /// The answer for running `command`. A deny or ask pattern matches the whole line, any
    /// simple command in it, or anything the line may run as far as [`see_through`] can tell
    /// (through keywords, wrappers and `-c` strings; a part it cannot resolve may be anything).
    /// Allow patterns must cover every simple command (so `git status:*` does not allow
    /// `git status; rm -rf x`), and only match a line the strict parser understands (or the
    /// exact line, for a pattern without wildcards). Read path rules that deny or ask apply to
    /// the paths the line names.
    pub(crate) fn decide_command(&self, tool: &str, command: &str) -> Verdict {
        self.decide_command_in(tool, command, None)
    }

    /// As [`Rules::decide_command`], for a line that starts in `workdir` (a directory beneath
    /// the root) when given: the paths it names are taken from there, and it is read-only only
    /// as `cd WORKDIR && command` would be (`git` there may be another repository's).
    pub(crate) fn decide_command_in(&self, tool: &str, command: &str, workdir: Option<&Path>) -> Verdict {
        let rules = self.tool_rules(tool);
        let parts = shell::simple_commands(command);
        let seen = see_through::see(command);
        let class = std::cell::OnceCell::new();
        let read_only = |text: &str| shell::classify(text).is_read_only();
        let moved = workdir.filter(|dir| *dir != self.root).map(|dir| shell::in_directory(dir, command));
        let as_run = moved.as_deref().unwrap_or(command);
        let whole_read_only = || *class.get_or_init(|| read_only(as_run));
        let matches_any = |rule: &Rule| match &rule.pattern {
            Pattern::Any => true,
            Pattern::ReadOnly => whole_read_only(),
            Pattern::Command(pattern) => {
                pattern.matches(command)
                    || parts.iter().flatten().any(|part| pattern.matches(part))
                    || seen.opaque.is_some()
                    || seen.runs.iter().any(|run| pattern.sees(run))
            }
            Pattern::Path(_) => false,
        };
        let mut matched: Vec<&Rule> =
            rules.iter().filter(|rule| rule.action != Action::Allow && matches_any(rule)).collect();
        let allows: Vec<&Rule> = rules.iter().filter(|rule| rule.action == Action::Allow).collect();
        // Read-only one simple command at a time, and not `git` after a `cd` in the line.
        let git_after_cd = std::cell::OnceCell::new();
        let allowed_by = |text: &str| {
            allows.iter().copied().find(|rule| match &rule.pattern {
                Pattern::Any => true,
                Pattern::ReadOnly => {
                    read_only(text) && !*git_after_cd.get_or_init(|| shell::runs_git_after_cd(as_run))
                }
                Pattern::Command(pattern) => pattern.matches(text),
                Pattern::Path(_) => false,
            })
        };
        let whole = allows.iter().copied().find(|rule| match &rule.pattern {
            Pattern::Any => true,
            Pattern::ReadOnly => whole_read_only(),
            Pattern::Command(pattern) => pattern.is_exact() && pattern.matches(command),
            Pattern::Path(_) => false,
        });
        if let Some(rule) = whole {
            matched.push(rule);
        } else if let Some(parts) = &parts {
            let covering: Option<Vec<&Rule>> = parts.iter().map(|part| allowed_by(part)).collect();
            if let Some(first) = covering.and_then(|rules| rules.into_iter().next()) {
                matched.push(first);
            }
        }
        let mut verdict = strictest(matched.into_iter()).unwrap_or_else(|| self.default_for(tool));
        // Say so when a rule applies only because part of the line cannot be followed.
        if let Because::Rule { action, text, origin } = &verdict.because
            && let Some(Pattern::Command(pattern)) = rules
                .iter()
                .find(|rule| rule.text == *text && rule.action == *action)
                .map(|rule| &rule.pattern)
        {
            let known = pattern.matches(command)
                || parts.iter().flatten().any(|part| pattern.matches(part))
                || seen
                    .runs
                    .iter()
                    .any(|run| run.program.is_some() && !run.has_unknown_args() && pattern.sees(run));
            if !known {
                let why = match seen.opaque {
                    Some(why) if !seen.runs.iter().any(|run| pattern.sees(run)) => why,
                    _ => "a program or argument whose value is not known until it runs",
                };
                verdict.because =
                    Because::Unresolved { action: *action, text: text.clone(), origin: origin.clone(), why };
            }
        }
        match self.command_reads(&seen, workdir.unwrap_or(&self.root)) {
            // A default says less than the rule about the path.
            Some(reads)
                if reads.action > verdict.action
                    || reads.action == verdict.action && !matches!(verdict.because, Because::Rule { .. }) =>
            {
                reads
            }
            _ => verdict,
        }
    }

    /// The strictest Read path rule (deny or ask) that covers a path the line names, the line
    /// starting in `start`.
    fn command_reads(&self, seen: &Seen, start: &Path) -> Option<Verdict> {
        let rules: Vec<(&Rule, &PathPattern)> = self
            .catalog
            .tools_named(READ_RULES)
            .iter()
            .flat_map(|tool| self.tool_rules(tool))
            .filter_map(|rule| match &rule.pattern {
                Pattern::Path(pattern) if rule.action != Action::Allow => Some((rule, &**pattern)),
                _ => None,
            })
            .collect();
        if rules.is_empty() {
            return None;
        }
        let mut best: Option<(&Rule, String)> = None;
        let mut consider = |path: &Path, word: &dyn Fn() -> String| {
            for (rule, pattern) in &rules {
                if best.as_ref().is_none_or(|(b, _)| rule.action > b.action) && pattern.matches(path) {
                    best = Some((rule, word()));
                }
            }
        };
        let unknown = |word: String| {
            let (rule, _) = rules.iter().max_by_key(|(rule, _)| rule.action)?;
            Some(Verdict {
                action: rule.action,
                because: Because::Reads {
                    action: rule.action,
                    text: rule.text.clone(),
                    origin: rule.origin.clone(),
                    word,
                },
            })
        };
        let named_paths = match named_paths(seen, start) {
            Ok(named) => named,
            Err(why) => return unknown(why),
        };
        if named_paths.len() > MAX_PATHS {
            return unknown(format!(
                "more than {MAX_PATHS} paths, too many to check, so it may read what the rule covers"
            ));
        }
        for named in named_paths {
            consider(&named.path, &|| format!("`{}`, which the rule covers", named.word));
            if let Some(how) = named.beneath {
                for path in walk(&named.path, how) {
                    let inside = path.strip_prefix(&named.path).unwrap_or(&path).display().to_string();
                    let word = || format!("`{}`, which holds `{inside}`, which the rule covers", named.word);
                    consider(&path, &word);
                }
            }
        }
        best.map(|(rule, word)| Verdict {
            action: rule.action,
            because: Because::Reads {
                action: rule.action,
                text: rule.text.clone(),
                origin: rule.origin.clone(),
                word,
            },
        })
    }

    /// The paths that deny rules of the tools `rule_name` covers (Claude Code's `Read`, `Edit`)
    /// name, each with what lies beneath it: `Read(./.env)` and `Read(.env)` (the root's; the
    /// file tools' rules match it at any depth), `Edit(~/.ssh/**)`, and a pattern of names in
    /// one directory, `Read(./.env.*)`, kept as a path whose last component is the pattern; not
    /// `Read(*.pem)` nor `Read(./**/*.pem)`. Claude Code gives these to its sandbox as well
    /// (`denyRead`, `denyWrite`).
    pub fn denied_paths(&self, rule_name: &str) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = self
            .catalog
            .tools_named(rule_name)
            .iter()
            .flat_map(|tool| self.tool_rules(tool))
            .filter(|rule| rule.action == Action::Deny)
            .filter_map(|rule| match &rule.pattern {
                Pattern::Path(pattern) => pattern.sandbox_path.clone(),
                _ => None,
            })
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }

    /// The additional directories ([`RulesBuilder::additional_directory`]), resolved where
    /// they exist.
    pub fn additional_directories(&self) -> &[PathBuf] {
        &self.additional
    }

    /// Whether `path` (absolute, resolved) lies beneath one of the additional directories.
    pub(crate) fn is_additional(&self, path: &Path) -> bool {
        self.additional.iter().any(|dir| path.starts_with(dir))
    }

    /// The answer for `tool` using `path` (absolute, resolved), inside or outside the root;
    /// `named` is the path as the call named it when a link made them differ, and a deny or ask
    /// rule about either decides (an allow rule only about the resolved path). Outside, the
    /// tool's rules without a pattern cannot allow it: only a path rule or an
    /// `external_directory` rule can; with no matching rule the external default applies. An
    /// additional directory is not outside: there the tool's rules and then the mode decide, as
    /// beneath the root. A tool that changes paths is also held by the deny and ask path rules
    /// of the tools `Read` names.
    pub(crate) fn decide_path(
        &self,
        tool: &str,
        path: &Path,
        named: Option<&Path>,
        outside: bool,
    ) -> Verdict {
        let workspace = !outside || self.is_additional(path);
        let matches = |rule: &Rule, pattern: &PathPattern| {
            pattern.matches(path)
                || (rule.action != Action::Allow && named.is_some_and(|n| pattern.matches(n)))
        };
        let tool_rules = self.tool_rules(tool).iter().filter(|rule| match &rule.pattern {
            Pattern::Any => workspace || rule.action != Action::Allow,
            Pattern::Path(pattern) => matches(rule, pattern),
            Pattern::ReadOnly | Pattern::Command(_) => false,
        });
        let external = self.external.iter().filter(|rule| {
            outside
                && match &rule.pattern {
                    Pattern::Any => true,
                    Pattern::Path(pattern) => matches(rule, pattern),
                    Pattern::ReadOnly | Pattern::Command(_) => false,
                }
        });
        // The path rules of the tools a rule name covers (`Read`, `Edit`) that match, when `when`.
        let named_rules = |when: bool, rule_name: &str| -> Vec<&Rule> {
            if !when {
                return Vec::new();
            }
            let tools = self.catalog.tools_named(rule_name);
            tools
                .iter()
                .flat_map(|other| self.tool_rules(other))
                .filter(|rule| matches!(&rule.pattern, Pattern::Path(pattern) if matches(rule, pattern)))
                .collect()
        };
        let on_paths = |access| {
            self.catalog.access_of(tool) == Some(access)
                && self.catalog.subject_of(tool) == Some(Subject::Path)
        };
        // Changing a file reads it (an edit matches its text and shows the closest line when it
        // does not match): as in Claude Code, a deny or ask rule on reading a path holds for
        // changing it too.
        let mut read_rules = named_rules(on_paths(crate::Access::Edits), READ_RULES);
        read_rules.retain(|rule| rule.action != Action::Allow);
        // A tool that changes files and asks about each (`undo`) meets the deny and ask rules on
        // editing them, as the tools that edit do.
        let mut edit_refusals =
            named_rules(self.catalog.access_of(tool) == Some(crate::Access::Edits), EDIT_RULES);
        edit_refusals.retain(|rule| rule.action != Action::Allow);
        // As in Claude Code, permission to edit a path is permission to read it: the allow rules
        // of the tools `Edit` names count for the tools that read paths (never their deny or ask
        // rules).
        let edit_rules = named_rules(on_paths(crate::Access::ReadOnly), EDIT_RULES);
        // Only where editing it is allowed: a deny or ask rule on editing it (one without a
        // pattern too) leaves reading to the rules on reading.
        let edit_allows = if edit_rules.iter().any(|rule| rule.action == Action::Allow) {
            let editors = self.catalog.tools_named(EDIT_RULES);
            let bare_refusals = editors
                .iter()
                .flat_map(|editor| self.tool_rules(editor))
                .filter(|rule| matches!(rule.pattern, Pattern::Any) && rule.action != Action::Allow);
            match strictest(edit_rules.iter().copied().chain(bare_refusals)) {
                Some(verdict) if verdict.action == Action::Allow => edit_rules,
                _ => Vec::new(),
            }
        } else {
            Vec::new()
        };
        match strictest(tool_rules.chain(external).chain(read_rules).chain(edit_refusals).chain(edit_allows))
        {
            Some(verdict) => verdict,
            None if workspace => self.default_for(tool),
            None => Verdict { action: self.external_default, because: Because::ExternalDefault },
        }
    }
}

impl Rules {
    /// The screen for the paths `tool` finds by itself: its deny and ask rules on paths (and,
    /// for a path outside the root, the `external_directory` ones), compiled once; the strictest
    /// matching rule stops a path. Allow rules and defaults play no part: they cannot lift a
    /// deny or an ask, and the tool's own path was already decided.
    pub(crate) fn path_screen(&self, tool: &str) -> tool_core::PathScreen {
        let screening = |rule: &Rule| match &rule.pattern {
            Pattern::Path(pattern) if rule.action != Action::Allow => Some((
                rule.action,
                pattern.clone(),
                Arc::<str>::from(
                    Because::Rule {
                        action: rule.action,
                        text: rule.text.clone(),
                        origin: rule.origin.clone(),
                    }
                    .to_string(),
                ),
            )),
            _ => None,
        };
        let inside: Vec<_> = self.tool_rules(tool).iter().filter_map(screening).collect();
        let outside: Vec<_> = self.external.iter().filter_map(screening).collect();
        if inside.is_empty() && outside.is_empty() {
            return tool_core::PathScreen::default();
        }
        let root = self.root.clone();
        tool_core::PathScreen::new(move |path| {
            let external = if path.starts_with(&root) { &[][..] } else { outside.as_slice() };
            let mut best: Option<&(Action, Box<PathPattern>, Arc<str>)> = None;
            for rule in inside.iter().chain(external) {
                if best.is_none_or(|b| rule.0 > b.0) && rule.1.matches(path) {
                    best = Some(rule);
                }
            }
            best.map(|(action, _, because)| tool_core::Screened {
                ask: *action == Action::Ask,
                because: because.clone(),
            })
        })
    }
}

/// The strictest of the matching rules; among equals, the first.
fn strictest<'a>(rules: impl Iterator<Item = &'a Rule>) -> Option<Verdict> {
    let mut best: Option<&Rule> = None;
    for rule in rules {
        if best.is_none_or(|b| rule.action > b.action) {
            best = Some(rule);
        }
    }
    best.map(|rule| Verdict {
        action: rule.action,
        because: Because::Rule { action: rule.action, text: rule.text.clone(), origin: rule.origin.clone() },
    })
}

/// Builds [`Rules`]; every rule is checked in [`RulesBuilder::build`].
#[derive(Debug)]
#[must_use]
pub struct RulesBuilder {
    root: PathBuf,
    catalog: ToolCatalog,
    rules: Vec<(Action, String, Arc<str>)>,
    defaults: HashMap<String, Action>,
    default: Option<Action>,
    external_default: Action,
    additional: Vec<PathBuf>,
}

impl RulesBuilder {
    pub(crate) fn root_dir(&self) -> &Path {
        &self.root
    }

    pub(crate) fn catalog_ref(&self) -> &ToolCatalog {
        &self.catalog
    }

    /// The tools the rules know (which ones ask about commands or paths, their other names).
    pub fn catalog(mut self, catalog: ToolCatalog) -> Self {
        self.catalog = catalog;
        self
    }

    /// Adds a rule: `tool`, `tool(pattern)` or `external_directory(pattern)`, with our tool
    /// names or the catalog's other names (`Bash(git status)`).
    pub fn rule(self, action: Action, rule: impl Into<String>) -> Self {
        self.rule_from(action, rule, "the rules given in code")
    }

    /// Adds a rule, saying where it came from for error messages.
    pub fn rule_from(mut self, action: Action, rule: impl Into<String>, origin: impl Into<Arc<str>>) -> Self {
        self.rules.push((action, rule.into(), origin.into()));
        self
    }

    /// Adds an `allow` rule.
    pub fn allow(self, rule: impl Into<String>) -> Self {
        self.rule(Action::Allow, rule)
    }

    /// Adds an `ask` rule.
    pub fn ask(self, rule: impl Into<String>) -> Self {
        self.rule(Action::Ask, rule)
    }

    /// Adds a `deny` rule.
    pub fn deny(self, rule: impl Into<String>) -> Self {
        self.rule(Action::Deny, rule)
    }

    /// What happens to `tool` when no rule matches (default: the default for every tool).
    pub fn tool_default(mut self, tool: impl Into<String>, action: Action) -> Self {
        self.defaults.insert(tool.into(), action);
        self
    }

    /// What happens when no rule matches and the tool has no default of its own, whatever the
    /// policy's [`PermissionMode`](crate::PermissionMode) (without it, the mode decides; a
    /// policy without a mode allows).
    pub fn default(mut self, action: Action) -> Self {
        self.default = Some(action);
        self
    }

    /// What happens to a path outside the root that no rule matches (default: deny, since
    /// nobody may be there to answer).
    pub fn external_directory(mut self, action: Action) -> Self {
        self.external_default = action;
        self
    }

    /// Makes `dir`, outside the root, count as the workspace's (Claude Code's
    /// `additionalDirectories`): a path beneath it is decided by the tools' rules and then the
    /// permission mode, as a path beneath the root is, not as an outside path.
    pub fn additional_directory(mut self, dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        self.additional.push(std::fs::canonicalize(&dir).unwrap_or(dir));
        self
    }

    /// Checks every rule and builds the set; the first unusable rule is the error.
    pub fn build(self) -> Result<Rules, RuleError> {
        let root = std::fs::canonicalize(&self.root).unwrap_or(self.root);
        let mut by_tool: HashMap<String, Vec<Rule>> = HashMap::new();
        let mut by_server = Vec::new();
        let mut ignored = Vec::new();
        let mut external = Vec::new();
        let editors = self.catalog.tools_named(EDIT_RULES);
        for (action, text, origin) in self.rules {
            let error =
                |problem: String| RuleError { rule: text.clone(), origin: origin.to_string(), problem };
            let (name, pattern) = split_rule(&text).map_err(error)?;
            let tools = match self.catalog.resolve(name) {
                // A deny or ask rule on the paths one tool that edits may change holds for every
                // tool that edits, as it does for commands (whose sandbox keeps those paths
                // read-only): `deny Write(./secret/**)` refuses `edit` and `apply_patch` there
                // too. (Claude Code matches only `Edit(...)` rules against file changes, and
                // warns that a `Write(path)` rule is not applied.)
                Resolved::Tools(mut tools)
                    if pattern.is_some()
                        && action != Action::Allow
                        && tools.iter().any(|tool| editors.contains(tool)) =>
                {
                    tools.extend(
                        editors.iter().filter(|editor| !tools.contains(editor)).cloned().collect::<Vec<_>>(),
                    );
                    tools
                }
                Resolved::Tools(tools) => tools,
                Resolved::Server(server) => {
                    if pattern.is_some() {
                        return Err(error(format!(
                            "`{name}` names the tools of the MCP server `{server}`, which take no pattern"
                        )));
                    }
                    let rule =
                        Rule { action, pattern: Pattern::Any, text: text.clone(), origin: origin.clone() };
                    by_server.push((server, rule));
                    continue;
                }
                Resolved::Absent(problem) => {
                    ignored.push(error(problem));
                    continue;
                }
                Resolved::Unknown(problem) => return Err(error(problem)),
            };
            if name == EXTERNAL_DIRECTORY {
                let pattern = match pattern {
                    None => Pattern::Any,
                    Some(pattern) => {
                        Pattern::Path(Box::new(PathPattern::parse(pattern, &root).map_err(error)?))
                    }
                };
                external.push(Rule { action, pattern, text: text.clone(), origin: origin.clone() });
                continue;
            }
            for tool in tools {
                let pattern = match pattern {
                    None => Pattern::Any,
                    Some(pattern) => match self.catalog.subject_of(&tool) {
                        Some(Subject::Command) if pattern == "read-only" => Pattern::ReadOnly,
                        Some(Subject::Command) => {
                            Pattern::Command(CommandPattern::parse(pattern).map_err(error)?)
                        }
                        Some(Subject::Path) => {
                            Pattern::Path(Box::new(PathPattern::parse(pattern, &root).map_err(error)?))
                        }
                        Some(Subject::Input) => {
                            return Err(error(format!(
                                "`{tool}` rules take no pattern: what is typed is checked against the rules \
                                 about commands (`Bash(...)`); write `{name}` alone"
                            )));
                        }
                        None => {
                            return Err(error(format!(
                                "`{tool}` asks about no command or path, so its rules take no pattern; \
                                 write `{name}` alone"
                            )));
                        }
                    },
                };
                by_tool.entry(tool).or_default().push(Rule {
                    action,
                    pattern,
                    text: text.clone(),
                    origin: origin.clone(),
                });
            }
        }
        Ok(Rules {
            by_tool,
            by_server,
            ignored,
            external,
            defaults: self.defaults,
            default: self.default,
            external_default: self.external_default,
            additional: self.additional,
            catalog: self.catalog,
            root,
        })
    }
}

/// `name` or `name(pattern)`.
fn split_rule(text: &str) -> Result<(&str, Option<&str>), String> {
    let text = text.trim();
    let (name, pattern) = match text.find('(') {
        None => (text, None),
        Some(open) => {
            let Some(inner) = text[open + 1..].strip_suffix(')') else {
                return Err("a pattern must end with `)` and nothing may follow it".to_owned());
            };
            (&text[..open], Some(inner))
        }
    };
    if name.is_empty() {
        return Err("the tool name is missing (expected `Tool` or `Tool(pattern)`)".to_owned());
    }
    // `mcp__SERVER__*`: every tool of a mounted server.
    let plain = match name.strip_suffix("__*") {
        Some(server) if server.starts_with("mcp__") => server,
        _ => name,
    };
    if !plain.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        return Err(format!(
            "`{name}` is not a tool name (letters, digits, `_` and `-`; expected `Tool` or `Tool(pattern)`)"
        ));
    }
    match pattern {
        Some(pattern) if pattern.trim().is_empty() => {
            Err(format!("the pattern is empty; write `{name}` alone to match every use"))
        }
        // Nothing a rule is matched against starts or ends with a space or holds a control
        // character: such a rule would match nothing, and a deny rule that denies nothing must
        // not load silently.
        Some(pattern) if pattern.trim() != pattern => Err(format!(
            "the pattern starts or ends with a space, so it would match nothing; write `{name}({})`",
            pattern.trim()
        )),
        Some(pattern) if pattern.chars().any(tool_core::words::invisible) => Err(
            "the pattern holds a control or invisible character (a line break, a tab, NUL, a zero-width space, \
             a soft hyphen, a space other than the ASCII one), so it would match nothing"
                .to_owned(),
        ),
        Some("*") => Ok((name, None)),
        _ => Ok((name, pattern)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_patterns_follow_claude_code() {
        let p = |text: &str| CommandPattern::parse(text).unwrap();
        assert!(p("git status").matches("git status"));
        assert!(!p("git status").matches("git status --short"));
        assert!(p("npm run test:*").matches("npm run test"));
        assert!(p("npm run test:*").matches("npm run test -- --watch"));
        assert!(!p("npm run test:*").matches("npm run tests"));
        assert!(p("ls *").matches("ls"));
        assert!(p("ls *").matches("ls -la"));
        assert!(!p("ls *").matches("lsof"));
        assert!(p("git * main").matches("git push origin main"));
        assert!(!p("git * main").matches("git push origin dev"));
    }

    #[test]
    fn a_server_rule_is_about_that_server_only() {
        let catalog = ToolCatalog::new()
            .known_tools(["a__x", "ab__x", "a__b__x"])
            .server("a")
            .server("a__b")
            .server("ab");
        let rules = Rules::builder("/w").catalog(catalog).deny("mcp__a").build().unwrap();
        assert_eq!(rules.decide_call("a__x").action, Action::Deny);
        assert_eq!(rules.decide_call("ab__x").action, Action::Allow);
        assert_eq!(rules.decide_call("a__b__x").action, Action::Allow, "the tool of server `a__b`");
        // Without a catalog, the server is the name before the first `__`.
        let rules = Rules::builder("/w").deny("mcp__a").build().unwrap();
        assert_eq!(rules.decide_call("a__x").action, Action::Deny);
        assert_eq!(rules.decide_call("ab__x").action, Action::Allow);
    }

    #[test]
    fn rule_text_errors_say_what_is_wrong() {
        assert!(split_rule("Bash(git status").unwrap_err().contains("must end with `)`"));
        assert!(split_rule("Bash()").unwrap_err().contains("pattern is empty"));
        assert!(split_rule("(x)").unwrap_err().contains("tool name is missing"));
        assert!(split_rule("Ba sh").unwrap_err().contains("not a tool name"));
        assert_eq!(split_rule("Bash(*)").unwrap(), ("Bash", None));
        assert!(split_rule("Read( ./.env)").unwrap_err().contains("write `Read(./.env)`"));
        assert!(split_rule("Bash(cat:* )").unwrap_err().contains("starts or ends with a space"));
        assert!(split_rule("Read(./.env\u{0})").unwrap_err().contains("control or invisible character"));
        assert!(split_rule("Read(./a\tb)").unwrap_err().contains("control or invisible character"));
        assert!(split_rule("Read(./.env\u{200b})").unwrap_err().contains("invisible"));
        assert!(split_rule("Read(./.e\u{ad}nv)").unwrap_err().contains("invisible"));
        for hidden in ['\u{61c}', '\u{fe0f}', '\u{3000}', '\u{a0}', '\u{e0041}', '\u{3164}', '\u{34f}'] {
            let rule = format!("Bash(rm{hidden}:*)");
            assert!(split_rule(&rule).unwrap_err().contains("invisible"), "{hidden:?}");
        }
        assert_eq!(split_rule(" Read(./a b) ").unwrap(), ("Read", Some("./a b")));
    }
}
