//! The command line: subcommands, flags, and usage errors as one line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use tool_runtime::providers::Provider;

/// Lists, calls and serves the built-in coding tools (read, write, edit, bash, glob, grep, ls,
/// ...) and any other tool linked into this binary.
///
/// Exit codes: 0 success, 1 a tool returned an error result (or the session failed), 2 a usage
/// error (bad flags, unknown tool, unreadable input).
#[derive(Debug, Parser)]
#[command(name = "tools", version, disable_help_subcommand = true, subcommand_required = true)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Print the tool definitions as a JSON array in a provider's shape.
    List(ListArgs),
    /// Run one tool call and print its result as one JSON object.
    Call(CallArgs),
    /// Run the tool calls of one assistant message read from standard input and print the
    /// provider's tool-result message(s) as a JSON array.
    Turn(TurnArgs),
    /// Serve the tools over MCP on standard input and output until standard input closes or a
    /// stop signal (SIGINT, SIGTERM, SIGHUP) arrives, which first kills every running command;
    /// or over Streamable HTTP with --http.
    Serve(ServeArgs),
    /// Log in to (or out of) an MCP server that asks for OAuth.
    #[command(subcommand)]
    Mcp(McpCommand),
}

/// `tools mcp`.
#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Log in to the HTTP server NAME of --mcp-config with OAuth: prints the URL to open (and
    /// opens it in a browser when there is a display), waits for the browser to come back to a
    /// listener on 127.0.0.1, and stores the tokens in
    /// $XDG_CONFIG_HOME/tools/mcp-oauth/credentials.json (mode 0600), where mounting the server
    /// finds them.
    Login(McpLoginArgs),
    /// Remove the stored OAuth tokens of the server NAME of --mcp-config.
    Logout(McpLogoutArgs),
}

/// `tools mcp login`.
#[derive(Debug, Args)]
pub(crate) struct McpLoginArgs {
    /// The server's name in the `mcpServers` file.
    pub name: String,
    /// The `mcpServers` file that lists the server.
    #[arg(long, value_name = "FILE", required = true)]
    pub mcp_config: PathBuf,
    /// Print the URL only; never open a browser.
    #[arg(long)]
    pub no_browser: bool,
    /// Seconds to wait for the browser to come back.
    #[arg(long, value_name = "SECS", default_value_t = tool_runtime::mcp_client::oauth::LOGIN_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_secs: u64,
}

/// `tools mcp logout`.
#[derive(Debug, Args)]
pub(crate) struct McpLogoutArgs {
    /// The server's name in the `mcpServers` file.
    pub name: String,
    /// The `mcpServers` file that lists the server.
    #[arg(long, value_name = "FILE", required = true)]
    pub mcp_config: PathBuf,
}

/// `tools list`.
#[derive(Debug, Args)]
#[command(
    after_help = "A server of --mcp-config whose entry names a \"sandbox\" mode starts in it, kept from \
what Claude Code's settings files for the current directory keep sandboxed commands from (`denyRead`, `denyWrite`, \
the rules' paths, the settings files and hook scripts), as under `serve`; the settings are read for nothing else."
)]
pub(crate) struct ListArgs {
    /// The provider whose definition shape to print.
    #[arg(long, value_enum, default_value_t = Format::Mcp)]
    pub format: Format,
    /// Strict mode: OpenAI structured outputs (every property required, optional ones
    /// nullable, objects closed) and Anthropic strict tool use (objects closed).
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub defer: DeferArgs,
    /// Deferred tools a search already found (comma-separated, in the order found): OpenAI Chat
    /// and Gemini get their definitions after the others.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub loaded: Vec<String>,
    /// Let the provider run the tool search (OpenAI Responses' hosted `tool_search`, Anthropic's
    /// `tool_search_tool_bm25_20251119`) instead of answering `tool_search` calls with `tools
    /// turn`.
    #[arg(long)]
    pub hosted_search: bool,
    #[command(flatten)]
    pub extras: ExtrasArgs,
    #[command(flatten)]
    pub mcp: McpArgs,
    #[command(flatten)]
    pub code: CodeModeArgs,
}

/// Which tools are deferred: left out of the definitions until a tool search finds them.
#[derive(Debug, Default, Args)]
pub(crate) struct DeferArgs {
    /// Defer every tool.
    #[arg(long)]
    pub defer_all: bool,
    /// Defer these tools (comma-separated; repeatable), besides those deferred by their
    /// definition or by `"defer": true` on their MCP server. With `--code-mode`, the script
    /// tool's description leaves them (or, with `--defer-all`, every tool) to
    /// `tools.tool_search` too; with `--code-mode=only`, that is all they do.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub defer: Vec<String>,
}

/// Provider-specific extras of `tools list`; each is ignored by the other formats.
#[derive(Debug, Args)]
pub(crate) struct ExtrasArgs {
    /// Anthropic: mark the last definition `"cache_control": {"type": "ephemeral"}`, so the
    /// tool definitions are cached as a prompt prefix.
    #[arg(long)]
    pub anthropic_cache_control: bool,
    /// Gemini: the full JSON Schema as `parametersJsonSchema` instead of `parameters` in
    /// Gemini's OpenAPI subset.
    #[arg(long)]
    pub gemini_json_schema: bool,
}

/// Other MCP servers whose tools are mounted next to the built-in ones.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// Mount the tools of the MCP servers listed in FILE (an `mcpServers` file as Claude Desktop,
    /// Cursor and Claude Code write it), named `<server>__<tool>`.
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
}

/// Code mode: the script tool.
#[derive(Debug, Args)]
pub(crate) struct CodeModeArgs {
    /// Offer the script tool `code`, which runs a JavaScript program calling the other tools
    /// (`await tools.grep({pattern: "..."})`) and returns only what it prints and its last value.
    /// `beside` (the flag alone) offers it next to the other tools, `--code-mode=only` alone (the
    /// others are reached from scripts). The value takes an `=`, so that the flag alone never
    /// swallows the word after it (`tools call code --code-mode '{"script": ...}'`). The
    /// settings' permission mode does not ask about a script: each call it makes is decided as
    /// the model's own would be; rules may name `code` (`deny code` refuses scripts).
    #[arg(
        long,
        value_name = "beside|only",
        value_enum,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "beside"
    )]
    pub code_mode: Option<CodeMode>,
    /// `serve`: a script still running this many milliseconds after its call started goes on in
    /// the background, its call returning what it printed so far and its id, for `code_output`
    /// and `code_stop` (default 20000; 0: a call waits for its script's end, as in `call` and
    /// `turn`).
    #[arg(long, value_name = "MS", requires = "code_mode")]
    pub code_yield_ms: Option<u64>,
}

/// Which tools `--code-mode` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CodeMode {
    /// The script tool next to the other tools.
    Beside,
    /// The script tool alone.
    Only,
}

/// Where the tools work and what they may touch.
#[derive(Debug, Default, Args)]
pub(crate) struct WorkspaceArgs {
    /// The workspace the file tools are confined to [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Let the tools use paths outside the workspace root (refused by default).
    #[arg(long)]
    pub allow_outside_root: bool,
    /// More settings, in Claude Code's settings shape (`permissions` with allow / ask / deny,
    /// `hooks` with PreToolUse / PostToolUse, ...), merged with Claude Code's files as its own
    /// `--settings` is: above the user's, the project's and the local file, below the managed
    /// settings. An `ask` is refused, naming the rule, except that `serve` asks the MCP
    /// client's user when the client supports elicitation. [Claude Code's files are read in
    /// any case: ~/.claude/settings.json, .claude/settings.json and .claude/settings.local.json
    /// of the root, /etc/claude-code/managed-settings.json; none when none exists]
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// Load no settings file of the user or the project (nor Claude Code's); an
    /// administrator's managed settings still apply, as in Claude Code. With --settings, that
    /// file alone (and the managed settings).
    #[arg(long)]
    pub no_settings: bool,
    /// codex's `config.toml` instead of a settings file: `sandbox_mode`, `approval_policy` (as a
    /// permission mode), `[sandbox_workspace_write]` `writable_roots`, `[mcp_servers]` (mounted
    /// unless `--mcp-config` is given) and `shell_environment_policy`; the other keys are named
    /// on stderr as not applied.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["settings", "no_settings"])]
    pub codex_config: Option<PathBuf>,
    /// codex's own `config.toml`, where codex keeps it (`$CODEX_HOME/config.toml`, else
    /// `~/.codex/config.toml`), read as `--codex-config` reads one.
    #[arg(long, conflicts_with_all = ["settings", "no_settings", "codex_config"])]
    pub codex: bool,
    /// How `bash` commands are confined by the kernel: `read-only`, `workspace-write` (write only
    /// beneath the root and the temporary directory, network off) or `off` (unconfined).
    /// Refused where the kernel cannot enforce it, rather than run unconfined.
    /// [default: workspace-write, or off when the settings file says `"sandbox": {"enabled": false}`]
    #[arg(long, value_name = "MODE", value_parser = parse_sandbox)]
    pub sandbox: Option<tool_sandbox::SandboxMode>,
    /// Another directory sandboxed commands may write beneath (repeatable).
    #[arg(long = "writable-root", value_name = "DIR")]
    pub writable_roots: Vec<PathBuf>,
    /// Let sandboxed commands write the repository's metadata (`.git`: commits, branches), except
    /// what git runs (its config, hooks, `commondir`, `info`, submodules' and worktrees'
    /// metadata, the `core.hooksPath` directory); `.git` is read-only to them by default
    /// (the settings' `sandbox.allowGitWrites`).
    #[arg(long)]
    pub allow_git_writes: bool,
    /// Let sandboxed commands reach HOST through their network proxy (repeatable): `crates.io`,
    /// `*.github.com` (its subdomains), `example.com:443` (that port only), an address or a
    /// network (`10.0.0.0/8`). Hosts no rule names are asked about (MCP elicitation under
    /// `serve`) or refused.
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
    /// Check each file that `edit`, `multi_edit`, `write` or `apply_patch` changed whose
    /// extension is EXT (`rs`, or several: `py,pyi`) with COMMAND, split into words as a shell
    /// would (`rs=rustfmt --check {file}`; `{file}` is the file's path), run in the sandbox `bash`
    /// runs in, within 10 s; its outcome comes with the edit's result (repeatable; wins over the
    /// settings file's `verify` for the same extension).
    #[arg(long = "verify", value_name = "EXT=COMMAND", value_parser = parse_verify)]
    pub verify: Vec<tools_std::verify::Verify>,
    /// `off`: calls that change files record no checkpoint, and `undo` has nothing to undo (no
    /// scan of the workspace before and after each call). `call` and `turn` record none anyway.
    /// [default: on, or off when the settings file says `"checkpoints": {"enabled": false}`]
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    pub checkpoints: Option<bool>,
}

fn parse_on_off(value: &str) -> Result<bool, String> {
    match value {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("expected `on` or `off`, not {value:?}")),
    }
}

fn parse_verify(value: &str) -> Result<tools_std::verify::Verify, String> {
    tools_std::verify::Verify::from_flag(value).map_err(|e| e.to_string())
}

fn parse_sandbox(value: &str) -> Result<tool_sandbox::SandboxMode, String> {
    value.parse().map_err(|e: tool_sandbox::ParseSandboxModeError| e.to_string())
}

/// `tools call`.
#[derive(Debug, Args)]
#[command(
    after_help = "Prints {\"call_id\", \"tool\", \"is_error\", \"output\", \"content\", \"metadata\"}, where \
`output` is the text the model would see.\nExit codes: 0 the tool succeeded, 1 it returned an error result, 2 usage error."
)]
pub(crate) struct CallArgs {
    /// The tool to call.
    pub name: String,
    /// The arguments as a JSON object; `-` reads them from standard input.
    #[arg(value_name = "ARGS_JSON", default_value = "{}")]
    pub arguments: String,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
    /// Time limit of the call in milliseconds (wins over the tool's own).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: Option<u64>,
    #[command(flatten)]
    pub mcp: McpArgs,
    #[command(flatten)]
    pub code: CodeModeArgs,
}

/// `tools turn`.
#[derive(Debug, Args)]
#[command(after_help = "Reads one assistant message (JSON) on standard input. The calls run through the \
dispatcher, parallel tools at once and the others one at a time, in the message's order.\n\
Exit codes: 0 the turn ran (tool errors are in the results), 1 a fatal error stopped it, 2 usage error.")]
pub(crate) struct TurnArgs {
    /// The provider format of the message on standard input and of the results.
    #[arg(long, value_enum)]
    pub format: TurnFormat,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
    /// Print the calls' lifecycle events (queued, started, progress, finished) as JSON lines on
    /// standard error.
    #[arg(long)]
    pub events: bool,
    /// With deferred tools, `tool_search` calls (and OpenAI Responses' client `tool_search_call`
    /// items) are answered here, in the provider's own form.
    #[command(flatten)]
    pub defer: DeferArgs,
    /// OpenAI strict mode for the definitions a search answer carries (OpenAI Responses).
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub mcp: McpArgs,
    #[command(flatten)]
    pub code: CodeModeArgs,
}

/// `tools serve`.
#[derive(Debug, Args)]
#[command(
    after_help = "With --http, prints `tools serve: listening on http://ADDR/mcp` on standard output once \
it listens (port 0 picks a free port), and stops on SIGINT, SIGTERM or SIGHUP: no new requests, calls in flight \
get the grace to finish, then the rest are cancelled and their commands killed. A second signal stops at once."
)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
    #[command(flatten)]
    pub http: HttpArgs,
    #[command(flatten)]
    pub mcp: McpArgs,
    #[command(flatten)]
    pub code: CodeModeArgs,
}

/// `tools serve --http` and its options.
#[derive(Debug, Args)]
pub(crate) struct HttpArgs {
    /// Serve MCP's Streamable HTTP transport at http://ADDR/mcp instead of standard input and
    /// output. ADDR is HOST:PORT, or a PORT on 127.0.0.1; only loopback hosts unless
    /// --allow-remote.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Let --http listen on an address other hosts can reach (use it with --auth-token-file).
    #[arg(long, requires = "http")]
    pub allow_remote: bool,
    /// Require `Authorization: Bearer TOKEN` on every request, TOKEN being this file's content
    /// (surrounding whitespace removed).
    #[arg(long, value_name = "FILE", requires = "http")]
    pub auth_token_file: Option<PathBuf>,
    /// Accept requests from this browser origin, such as `https://app.example` (repeatable;
    /// pages of this machine, on localhost, 127.0.0.1 or ::1, are accepted anyway; requests
    /// with any other Origin get 403).
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    pub allow_origin: Vec<String>,
    /// Accept requests for this Host name besides the loopback names (repeatable; with
    /// --allow-remote and none given, any Host).
    #[arg(long = "allow-http-host", value_name = "HOST", requires = "http")]
    pub allow_host: Vec<String>,
    /// Seconds a shutdown lets calls in flight finish before it cancels them.
    #[arg(long, value_name = "SECS", default_value_t = 10, requires = "http")]
    pub shutdown_grace_secs: u64,
    /// The most connections open at once; past it, a new connection takes the place of the
    /// oldest one that has not yet sent a request through the checks (Host, token), or, when
    /// every one has, is answered 503 and closed.
    #[arg(long, value_name = "N", default_value_t = tool_runtime::mcp_server::DEFAULT_MAX_CONNECTIONS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..), requires = "http")]
    pub max_connections: usize,
    /// The most connections one client (IP address, or IPv6 /64) may have open at once; one past
    /// it is answered 429 and closed.
    #[arg(long, value_name = "N", default_value_t = tool_runtime::mcp_server::DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..), requires = "http")]
    pub max_connections_per_client: usize,
    /// Seconds a client may take to send a request's headers (or stay idle between requests)
    /// before its connection is closed.
    #[arg(long, value_name = "SECS", default_value_t = tool_runtime::mcp_server::DEFAULT_HEADER_READ_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..), requires = "http")]
    pub header_timeout_secs: u64,
    /// Seconds a client may take to send a request's body; a slower one is answered 408.
    #[arg(long, value_name = "SECS", default_value_t = tool_runtime::mcp_server::DEFAULT_BODY_READ_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..), requires = "http")]
    pub body_timeout_secs: u64,
    /// The most sessions open at once; an `initialize` past it is answered 503 with a JSON-RPC
    /// error naming the limit.
    #[arg(long, value_name = "N", default_value_t = tool_runtime::mcp_server::DEFAULT_MAX_SESSIONS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..), requires = "http")]
    pub max_sessions: usize,
    /// Seconds a session may go without a request before it ends.
    #[arg(long, value_name = "SECS", default_value_t = tool_runtime::mcp_server::DEFAULT_SESSION_IDLE_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..), requires = "http")]
    pub session_idle_secs: u64,
}

/// Every provider format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// OpenAI Chat Completions.
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini.
    Gemini,
    /// Model Context Protocol.
    Mcp,
}

impl Format {
    pub(crate) fn provider(self) -> Provider {
        match self {
            Format::OpenaiChat => Provider::OpenAiChat,
            Format::OpenaiResponses => Provider::OpenAiResponses,
            Format::Anthropic => Provider::Anthropic,
            Format::Gemini => Provider::Gemini,
            Format::Mcp => Provider::Mcp,
        }
    }
}

/// The formats of an assistant message (MCP has none: use `tools serve`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TurnFormat {
    /// OpenAI Chat Completions.
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini.
    Gemini,
}

impl TurnFormat {
    pub(crate) fn provider(self) -> Provider {
        match self {
            TurnFormat::OpenaiChat => Provider::OpenAiChat,
            TurnFormat::OpenaiResponses => Provider::OpenAiResponses,
            TurnFormat::Anthropic => Provider::Anthropic,
            TurnFormat::Gemini => Provider::Gemini,
        }
    }
}

/// What parsing the command line ended in.
pub(crate) enum Parsed {
    /// Boxed: the flags are many times the size of the other answers.
    Run(Box<Cli>),
    /// `--help` or `--version`: print this on standard output and exit 0.
    Print(String),
    /// A usage error, already on one line.
    Usage(String),
}

/// Parses `args` (including the program name).
pub(crate) fn parse<I, T>(args: I) -> Parsed
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    match Cli::try_parse_from(&args) {
        Ok(cli) => Parsed::Run(Box::new(cli)),
        Err(error) => match error.kind() {
            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                Parsed::Print(error.render().to_string())
            }
            clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                Parsed::Usage(match subcommand(&args) {
                    Some(name) => format!("`tools {name}` is missing arguments (see `tools {name} --help`)"),
                    None => {
                        "missing command: expected one of list, call, turn, serve, mcp (see `tools --help`)"
                            .to_owned()
                    }
                })
            }
            _ => {
                let mut message = one_line(&error.render().to_string(), subcommand(&args));
                // `--code-mode only`: the value takes an `=` (see `CodeModeArgs::code_mode`).
                if let Some(value) = args.windows(2).find_map(|pair| {
                    (pair[0] == "--code-mode" && (pair[1] == "only" || pair[1] == "beside")).then(|| &pair[1])
                }) {
                    message = format!("{message}; write `--code-mode={}`", value.to_string_lossy());
                }
                Parsed::Usage(message)
            }
        },
    }
}

/// The subcommand named on the command line, if any.
fn subcommand(args: &[std::ffi::OsString]) -> Option<&'static str> {
    let first = args.iter().skip(1).find(|arg| !arg.to_string_lossy().starts_with('-'))?;
    ["list", "call", "turn", "serve", "mcp"].into_iter().find(|name| first == name)
}

/// Folds clap's multi-line error into one line: the error, its details and tips, and where to
/// find help.
fn one_line(rendered: &str, subcommand: Option<&str>) -> String {
    let mut parts: Vec<String> = Vec::new();
    for line in rendered.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("Usage:") || line.starts_with("For more information") {
            continue;
        }
        let line = line.strip_prefix("error: ").unwrap_or(line);
        // Usage lines of a missing-argument error are indented command lines: keep the error only.
        if line.starts_with("tools ") {
            continue;
        }
        match parts.last_mut() {
            // "the following required arguments were not provided:" and its list.
            Some(last) if last.ends_with(':') => {
                last.push(' ');
                last.push_str(line);
            }
            _ => parts.push(line.to_owned()),
        }
    }
    let help = match subcommand {
        Some(name) => format!("tools {name} --help"),
        None => "tools --help".to_owned(),
    };
    let message = if parts.is_empty() { "invalid command line".to_owned() } else { parts.join("; ") };
    format!("{message} (see `{help}`)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(args: &[&str]) -> String {
        match parse(std::iter::once("tools").chain(args.iter().copied())) {
            Parsed::Usage(message) => message,
            Parsed::Run(cli) => panic!("parsed: {cli:?}"),
            Parsed::Print(text) => panic!("printed: {text}"),
        }
    }

    #[test]
    fn usage_errors_are_one_line_naming_the_problem_and_the_help() {
        let message = usage(&["list", "--format", "claude"]);
        assert!(!message.contains('\n'), "{message}");
        assert!(message.starts_with("invalid value 'claude' for '--format <FORMAT>'"), "{message}");
        assert!(message.contains("openai-chat, openai-responses, anthropic, gemini, mcp"), "{message}");
        assert!(message.ends_with("(see `tools list --help`)"), "{message}");

        assert_eq!(
            usage(&[]),
            "missing command: expected one of list, call, turn, serve, mcp (see `tools --help`)"
        );

        assert_eq!(
            usage(&["turn"]),
            "the following required arguments were not provided: --format <FORMAT> (see `tools turn --help`)"
        );
        assert_eq!(
            usage(&["call", "read", "--bogus"]),
            "unexpected argument '--bogus' found; tip: to pass '--bogus' as a value, use '-- --bogus' (see `tools call --help`)"
        );
    }

    #[test]
    fn the_code_mode_takes_its_value_after_an_equals_sign() {
        assert_eq!(
            usage(&["serve", "--code-mode", "only"]),
            "unexpected argument 'only' found (see `tools serve --help`); write `--code-mode=only`"
        );
        match parse(["tools", "call", "code", "--code-mode", "{}"]) {
            Parsed::Run(cli) => match cli.command {
                Command::Call(call) => {
                    assert_eq!(call.arguments, "{}");
                    assert_eq!(call.code.code_mode, Some(CodeMode::Beside));
                }
                other => panic!("{other:?}"),
            },
            _ => panic!("not parsed"),
        }
        match parse(["tools", "serve", "--code-mode=only"]) {
            Parsed::Run(cli) => match cli.command {
                Command::Serve(serve) => assert_eq!(serve.code.code_mode, Some(CodeMode::Only)),
                other => panic!("{other:?}"),
            },
            _ => panic!("not parsed"),
        }
    }

    #[test]
    fn a_dash_is_the_arguments_not_a_flag() {
        match parse(["tools", "call", "read", "-"]) {
            Parsed::Run(cli) => match cli.command {
                Command::Call(call) => assert_eq!(call.arguments, "-"),
                other => panic!("parsed: {other:?}"),
            },
            _ => panic!("not parsed"),
        }
    }
}
