#![doc = include_str!("../docs/tools.md")]

mod args;
mod codex;
mod codex_rules;
mod http;
mod login;
mod mounted;
mod settings;
mod signals;
mod terminal;
mod watcher;

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use terminal::say;
use tool_egress::settings::NetworkSettings;
use tool_runtime::catalog::{Catalog, LoadedTools, SearchMode};
use tool_runtime::environment::EnvFilter;
use tool_runtime::mcp_client::{McpConfig, McpMount};
use tool_runtime::permissions::{Policy, PolicyExt, SandboxSettings};
use tool_runtime::providers::DefinitionOptions;
use tool_runtime::{
    BoxFuture, CallOptions, CancellationToken, Dispatcher, DispatcherBuilder, PermissionKind,
    PermissionRequest, Registry, ToolCall,
    events::{EventFn, ToolEvent},
    hooks::{DefaultPermissions, PermissionDecision, PermissionHook},
    output_store::OutputStore,
    providers::Provider,
};
use tools_std::{Workspace, tool_egress};

use args::{
    CallArgs, CodeMode, CodeModeArgs, Command, DeferArgs, ListArgs, McpArgs, Parsed, ServeArgs, TurnArgs,
    WorkspaceArgs,
};
use settings::{Known, Loaded, project_servers, settings_policy};
use signals::Termination;

/// The tool ran and succeeded (or the command did its job).
pub(crate) const EXIT_OK: i32 = 0;
/// The tool returned an error result, or the command failed while running.
const EXIT_TOOL_ERROR: i32 = 1;
/// Bad flags, an unknown tool, unreadable input.
const EXIT_USAGE: i32 = 2;

/// The call id of `tools call`.
const CALL_ID: &str = "call-1";

/// A failure that ends the command: its one-line message and exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    code: i32,
    message: String,
}

impl Failure {
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Failure { code: EXIT_USAGE, message: message.into() }
    }

    pub(crate) fn runtime(message: impl Into<String>) -> Self {
        Failure { code: EXIT_TOOL_ERROR, message: message.into() }
    }
}

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(owner) = watcher::invoked(&args) {
        std::process::exit(watcher::watch(owner));
    }
    if matches!(&args[..], [_, flag] if flag == CODE_WORKER) {
        std::process::exit(code_worker());
    }
    let code = match args::parse(args) {
        Parsed::Print(text) => write_stdout(&text).map_or_else(|f| report(&f), |()| EXIT_OK),
        Parsed::Usage(message) => report(&Failure::usage(message)),
        Parsed::Run(cli) => match run(cli.command) {
            Ok(code) => code,
            Err(failure) => report(&failure),
        },
    };
    let _ = io::stdout().flush();
    // Exit without waiting for the runtime's blocking threads (a read of standard input may
    // still be parked in one).
    std::process::exit(code);
}

/// The argument that has this program run one script's interpreter (`tools __code-worker`),
/// for the script tool of `--code-mode`.
const CODE_WORKER: &str = "__code-worker";

/// Runs the script the host sends on standard input, shut in first ([`tool_sandbox::shut_in`]:
/// no descriptor but its standard ones, no capability, no file, no socket, no process); a
/// worker that cannot be shut in runs nothing.
fn code_worker() -> i32 {
    #[cfg(target_os = "linux")]
    if tool_sandbox::shut_in().is_err() {
        return EXIT_TOOL_ERROR;
    }
    match tool_runtime::code::serve_worker() {
        code if code == std::process::ExitCode::SUCCESS => EXIT_OK,
        _ => EXIT_TOOL_ERROR,
    }
}

fn report(failure: &Failure) -> i32 {
    // One line, always: scripts read the first line of standard error.
    let message = failure.message.replace('\n', " ");
    say(&format!("tools: {message}"));
    failure.code
}

fn run(command: Command) -> Result<i32, Failure> {
    // What runs commands leaves a watcher that ends their jobs should it be killed.
    if matches!(command, Command::Call(_) | Command::Turn(_) | Command::Serve(_)) {
        watcher::start();
    }
    match command {
        Command::List(args) => block_on(list(args)),
        // The call (or turn) is the session: what its commands left running ends with it.
        Command::Call(args) => block_on(ended_with_its_commands(call(args))),
        Command::Turn(args) => block_on(ended_with_its_commands(turn(args))),
        Command::Serve(args) => block_on(serve(args)),
        Command::Mcp(command) => block_on(login::run(command)),
    }
}

/// `work`, then every process its commands left running killed (a job put in the background,
/// `setsid`, `nohup`), as `serve` does at the end of a session.
async fn ended_with_its_commands(work: impl Future<Output = Result<i32, Failure>>) -> Result<i32, Failure> {
    let result = work.await;
    tools_std::process::kill_running_commands();
    result
}

fn block_on<F>(future: F) -> Result<i32, Failure>
where
    F: Future<Output = Result<i32, Failure>> + Send + 'static,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("cannot start the async runtime: {e}")))?;
    // The command runs as a task of the runtime's workers, not on this thread: a worker that
    // learns a pipe or socket is ready then runs the task itself, where a future on this thread
    // would be woken across threads at each read (a command's output is read thousands of
    // times a second).
    let result = runtime
        .block_on(runtime.spawn(future))
        .unwrap_or_else(|e| Err(Failure::runtime(format!("the command stopped unexpectedly: {e}"))));
    // Shutting down drops the tasks still running (a cancelled tool that had not yet noticed,
    // say), and their destructors stop what they started. Blocking threads (a read of standard
    // input) are not waited for past the timeout.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

/// Every tools-std tool (in its documented order), then every other `#[tool]` linked into the
/// binary, then the tools of the mounted MCP servers. Inventory entries for the tools-std tools
/// are the same definitions and are dropped.
fn registry(mounts: &[McpMount]) -> Result<Registry, Failure> {
    Registry::builder()
        // The examples of the linked tools are checked by the workspace's tests
        // (`tests/tests/registry.rs`), not by every process; a mounted tool's still are.
        .examples_checked_by_tests()
        .tools(tools_std::all())
        .tools(tool_runtime::spec::registered_tools())
        .tools(mounts.iter().flat_map(McpMount::tools))
        .tools(tool_runtime::mcp_client::resource_tools(mounts))
        .build()
        .map_err(|e| Failure::usage(e.to_string()))
}

/// `registry` as `--code-mode` offers it: unchanged without the flag, else with the script tool
/// `code` over its tools, next to them or alone. Where the process serves (`serve`, and `list`,
/// which shows what `serve` offers), a script still running at its yield time runs on, read
/// with `code_output`; `call` and `turn` exit once their calls are answered, so there a call
/// waits for its script's end. Each script's interpreter runs in a process of this program's
/// ([`CODE_WORKER`]), which is killed when the script is stopped.
fn code_mode(
    registry: Registry,
    args: &CodeModeArgs,
    defer: &DeferArgs,
    serves: bool,
) -> Result<Registry, Failure> {
    let Some(mode) = args.code_mode else { return Ok(registry) };
    let mut tool = tool_runtime::code::CodeTool::new(registry);
    // This very program, as the watcher is started: not whatever lies at its path now. Without
    // `/proc` there is no way to it: the interpreters run on threads, and the user is told.
    const THIS_PROGRAM: &str = "/proc/self/exe";
    if std::path::Path::new(THIS_PROGRAM).exists() {
        tool = tool.in_worker(tool_runtime::code::WorkerCommand::new(THIS_PROGRAM).arg(CODE_WORKER));
    } else {
        say(&format!(
            "tools: {THIS_PROGRAM} is missing (no /proc): scripts' interpreters run on threads of this process, \
             which a script stuck inside a built-in function keeps busy past its time limit"
        ));
    }
    // What `--defer` leaves out of the definitions, the script tool's description leaves out too.
    if defer.defer_all {
        tool = tool.defer_all();
    }
    tool = tool.defer(&defer.defer).map_err(|e| Failure::usage(format!("--defer: {e}")))?;
    let yield_time = match args.code_yield_ms {
        _ if !serves => None,
        Some(0) => None,
        Some(ms) => Some(Duration::from_millis(ms)),
        None => tool.limits().yield_time,
    };
    let limits = tool.limits().with_yield_time(yield_time);
    tool = tool.with_limits(limits);
    let offered = match mode {
        CodeMode::Beside => tool.beside_its_tools(),
        CodeMode::Only => tool.alone(),
    };
    offered.map_err(|e| Failure::usage(format!("--code-mode: {e}")))
}

/// Starts the MCP servers of `--mcp-config` (none without it), each stdio server inheriting
/// what `environment` lets through (besides its entry's own `env`); a server whose entry names a
/// `"sandbox"` mode runs in it, for the workspace `root` (`--root`, or the current directory),
/// kept from what the settings `file` keeps every sandboxed process from ([`confined`]).
/// They stop when the mounts are dropped. A file that cannot be used is a usage error; a server
/// that does not start, a runtime failure naming it. With `sampling` (`tools serve`, whose MCP
/// client may sample), they may ask for completions, which go to that client.
async fn mount(
    args: &McpArgs,
    environment: &EnvFilter,
    root: Option<&std::path::Path>,
    file: Option<&Loaded>,
    sampling: bool,
) -> Result<Vec<McpMount>, Failure> {
    let Some(config) = mcp_config(args)? else { return Ok(Vec::new()) };
    mount_servers(config, environment, root, file, sampling).await
}

/// The servers `--mcp-config` lists, if it is given; a file that cannot be used is a usage error.
fn mcp_config(args: &McpArgs) -> Result<Option<McpConfig>, Failure> {
    let load = |path| McpConfig::load(path).map_err(|e| Failure::usage(format!("--mcp-config: {e}")));
    args.mcp_config.as_deref().map(load).transpose()
}

/// Starts and mounts the servers of `config` (see [`mount`]).
async fn mount_servers(
    config: McpConfig,
    environment: &EnvFilter,
    root: Option<&std::path::Path>,
    file: Option<&Loaded>,
    sampling: bool,
) -> Result<Vec<McpMount>, Failure> {
    let mut config = config.environment(environment).login_command(login::LOGIN_COMMAND).sampling(sampling);
    if config.servers.iter().any(|server| server.sandbox_mode.is_some()) {
        let root = workspace_root(root)?;
        let (keep_from, protected) = match file {
            Some(file) => settings::confinement(file, &root)?,
            None => (SandboxSettings::default(), Vec::new()),
        };
        config = config
            .sandboxed_with(&root, |policy| confined(policy, &keep_from, &protected))
            .map_err(|e| Failure::runtime(format!("--mcp-config: {e}")))?;
        for server in &config.servers {
            if let Some(sandbox) = &server.sandbox {
                say(&format!("tools: MCP server `{}`: {}", server.name, sandbox.report()));
            }
        }
    }
    let mounts =
        tool_runtime::mcp_client::connect_all(&config).await.map_err(|e| Failure::runtime(e.to_string()))?;
    for mount in &mounts {
        for skipped in mount.skipped() {
            say(&format!("tools: MCP server `{}`: {skipped}", mount.name()));
        }
    }
    Ok(mounts)
}

/// What the workspace flags and the settings file set up, before the tools are mounted.
struct Setup {
    workspace: Workspace,
    policy: Option<Policy>,
    /// What the network lets through, and which secrets are unset, in a line each (what confines
    /// every command is [`sandbox_line`], asked when announced: the kernel is probed then).
    announce: Vec<String>,
    /// Whether calls that change files record checkpoints (`--checkpoints`, or the settings file's
    /// `checkpoints.enabled`).
    checkpoints: bool,
}

/// The settings file, the mounted servers of `mcp`, the registry of our tools and theirs as
/// `--code-mode` offers them, and the workspace with the settings' policy, whose rules may name
/// the mounted tools and the script tool. `serves`: the process serves (`serve`), so mounted
/// servers may sample and scripts may run on past their yield time.
async fn prepare(
    args: &WorkspaceArgs,
    mcp: &McpArgs,
    code: &CodeModeArgs,
    defer: &DeferArgs,
    serves: bool,
) -> Result<(Setup, Vec<McpMount>, Registry), Failure> {
    let file = Loaded::read(args)?;
    let environment = file
        .as_ref()
        .map_or_else(EnvFilter::base, |loaded| tool_runtime::permissions::environment(&loaded.file));
    // `--mcp-config`, or else a codex configuration's servers, or else the project's approved ones.
    let codex_servers =
        file.as_ref().and_then(|file| file.servers.clone()).filter(|_| mcp.mcp_config.is_none());
    let servers = match codex_servers {
        Some(servers) => Some(servers),
        None => project_servers(args, mcp, file.as_ref())?,
    };
    let mounts = match servers {
        Some(config) => {
            mount_servers(config, &environment, args.root.as_deref(), file.as_ref(), serves).await?
        }
        None => mount(mcp, &environment, args.root.as_deref(), file.as_ref(), serves).await?,
    };
    let tools = registry(&mounts)?;
    let names: Vec<String> = tools.names().map(str::to_owned).collect();
    let offered = code_mode(tools, code, defer, serves)?;
    let scripts: Vec<String> =
        offered.names().filter(|name| !names.iter().any(|tool| tool == name)).map(str::to_owned).collect();
    let known = Known { tools: &names, mounts: &mounts, scripts: &scripts };
    let setup = setup(args, file.as_ref(), &known)?;
    Ok((setup, mounts, offered))
}

/// The workspace `args` names, in its sandbox, with its egress and filtered environment, and
/// the settings file's permission policy.
fn setup(args: &WorkspaceArgs, file: Option<&Loaded>, known: &Known<'_>) -> Result<Setup, Failure> {
    let root = workspace_root(args.root.as_deref())?;
    let workspace = Workspace::new(&root).map_err(|e| Failure::usage(root_error(&root, &e)))?;
    let mut checkpoints = args.checkpoints;
    let (policy, sandbox_settings, environment, network, verify, hook_files) = match file {
        Some(file) => {
            let loaded = settings_policy(file, workspace.root(), args.allow_outside_root, known)?;
            // `--checkpoints` wins over the settings file.
            checkpoints = checkpoints.or(loaded.checkpoints);
            let hook_files = loaded.hook_files;
            (
                Some(loaded.policy),
                loaded.sandbox,
                loaded.environment,
                loaded.network,
                loaded.verify,
                hook_files,
            )
        }
        // With no file, the file tools still do not change git's metadata and hooks, the
        // agents' settings and the editors' tasks unasked, which the sandbox keeps commands
        // from changing.
        None => (
            Some(settings_policy(&Loaded::none(), workspace.root(), args.allow_outside_root, known)?.policy),
            SandboxSettings::default(),
            EnvFilter::base(),
            NetworkSettings::default(),
            Vec::new(),
            Vec::new(),
        ),
    };
    let checkpoints = checkpoints.unwrap_or(true);
    let verifiers = verifiers(&args.verify, verify)?;
    let workspace = if environment == EnvFilter::base() {
        workspace
    } else {
        workspace.with_environment(environment.clone()).map_err(|e| Failure::usage(root_error(&root, &e)))?
    };
    // The settings files, and the files their hook commands name, are protected from commands.
    let protected = match file {
        Some(file) => settings::protected_files(file, hook_files),
        None => Vec::new(),
    };
    let codex_mode = file.and_then(|file| file.sandbox_mode);
    let managed = file.map(|file| &file.managed);
    let workspace = sandboxed(workspace, args, codex_mode, managed, &sandbox_settings, &network, &protected)?;
    // Hook commands run in the sandbox the commands run in. Without one (`--sandbox off`) the
    // kernel is not probed for it.
    let policy =
        policy.map(|policy| match workspace.sandbox_policy().is_enforced().then(|| workspace.sandbox()) {
            Some(Ok(sandbox)) if sandbox.policy().is_enforced() => policy.hook_sandbox(sandbox),
            _ => policy,
        });
    // `sandbox.autoAllowBashIfSandboxed`: a command that runs in the sandbox is not asked about
    // when no rule decides it. As in Claude Code, that is the default where the file turns the
    // sandbox on (`sandbox.enabled: true`), not for a file that says nothing of it: its
    // allow list and mode decide then, as they do in Claude Code.
    let auto_allow =
        sandbox_settings.auto_allow_bash_if_sandboxed.unwrap_or(sandbox_settings.enabled == Some(true));
    let policy = match policy {
        Some(policy) if workspace.sandbox_policy().is_enforced() && auto_allow => {
            let commands = workspace.clone();
            Some(policy.sandboxed_commands(move |command| !commands.runs_unsandboxed(command)))
        }
        policy => policy,
    };
    let mut announce = Vec::new();
    // Secrets named in the settings: commands see placeholders, the proxy swaps them back.
    let (network, unset) =
        network.with_secrets_from(|name| std::env::var(name).ok()).map_err(Failure::usage)?;
    for name in unset {
        announce.push(format!(
            "secret {name}: not set in this environment, so there is nothing to keep from commands"
        ));
    }
    let egress_policy =
        tool_egress::settings::allow_cli_hosts(network.policy, &args.allow_hosts).map_err(Failure::usage)?;
    let workspace = if workspace.sandbox_policy().is_enforced() {
        // Commands whose network is off reach what the rules allow through a proxy of their own;
        // a host no rule names is asked about, and refused when nobody can answer.
        announce.push(format!(
            "network: off, except through a proxy per command, which {}",
            egress_policy.describe()
        ));
        let egress = tool_egress::Egress::new(egress_policy, None);
        // The CA bundle handed to commands: readable, not writable by them.
        let egress = match workspace.session_dir() {
            Some(session) => egress.with_bundle_dir(session.shared()),
            None => egress,
        };
        workspace.with_egress(egress)
    } else {
        if !args.allow_hosts.is_empty() {
            return Err(Failure::usage(
                "--allow-host applies to sandboxed commands, and the sandbox is off (commands have the whole network)",
            ));
        }
        workspace
    };
    let workspace = workspace.with_verifiers(verifiers);
    Ok(Setup { workspace, policy, announce, checkpoints })
}

/// The checks after edits: `--verify`'s, then the settings file's for the other extensions.
fn verifiers(
    flags: &[tools_std::verify::Verify],
    settings: Vec<tools_std::verify::Verify>,
) -> Result<Vec<tools_std::verify::Verify>, Failure> {
    let mut named: Vec<&str> = Vec::new();
    for check in flags {
        for ext in check.extensions() {
            if named.contains(&ext) {
                return Err(Failure::usage(format!(
                    "--verify names the extension {ext:?} twice; give one command per extension"
                )));
            }
            named.push(ext);
        }
    }
    let mut all = flags.to_vec();
    // A flag wins over the settings file's entry for its extensions; the entry still checks
    // its other extensions.
    all.extend(settings.into_iter().filter_map(|check| check.without_extensions(&named)));
    Ok(all)
}

/// What confines every command of `workspace`, in a line: its sandbox's report, or why the
/// sandbox cannot start. The first call probes the kernel (a one-shot `call` never asks).
fn sandbox_line(workspace: &Workspace) -> String {
    match workspace.sandbox() {
        Ok(sandbox) => sandbox.report().to_string(),
        Err(e) => e.to_string(),
    }
}

/// A dispatcher over `registry` for the workspace of `setup`.
fn dispatcher(registry: impl Into<Arc<Registry>>, setup: Setup, args: &WorkspaceArgs) -> DispatcherBuilder {
    let Setup { workspace, policy, checkpoints, .. } = setup;
    let mut builder = Dispatcher::builder(registry).dependency(workspace);
    if !checkpoints {
        builder = builder.dependency(tools_std::checkpoint::SessionCheckpoints::Off);
    }
    // Without a data directory, truncated outputs are only cut, not saved for reading back.
    if let Ok(store) = OutputStore::builder().read_hint(tools_std::read_hint()).open() {
        let store = Arc::new(store);
        builder = builder.dependency_arc(store.clone()).output_store(store);
    }
    match policy {
        Some(policy) => builder = builder.policy(policy),
        None if args.allow_outside_root => builder = builder.permissions(AllowOutsideRoot),
        None => {}
    }
    builder
}

/// The workspace root `--root` names, or the current directory.
fn workspace_root(root: Option<&std::path::Path>) -> Result<std::path::PathBuf, Failure> {
    match root {
        Some(root) => Ok(root.to_path_buf()),
        None => std::env::current_dir()
            .map_err(|e| Failure::usage(format!("cannot use the current directory as the workspace: {e}"))),
    }
}

/// What the settings keep every sandboxed process from, commands and MCP servers alike: the
/// paths they may not write (`denyWrite`, and the `protected` files: the settings files and the
/// files their hook commands name) or read (`denyRead`, less `allowRead`), and the output store
/// (hidden, and read-only where it lies inside a writable root, when the root is the home
/// directory).
fn confined(
    mut policy: tool_sandbox::SandboxPolicy,
    settings: &SandboxSettings,
    protected: &[std::path::PathBuf],
) -> tool_sandbox::SandboxPolicy {
    for path in &settings.deny_write {
        policy = policy.with_protected(std::fs::canonicalize(path).unwrap_or_else(|_| path.clone()));
    }
    // Resolved for each command, as the file system is then.
    for path in &settings.deny_read {
        policy = policy.with_unreadable(path);
    }
    for path in &settings.allow_read {
        policy = policy.with_readable(path);
    }
    for file in protected {
        policy = policy.with_protected(file);
    }
    if let Some(store) = OutputStore::default_dir() {
        policy = policy.with_hidden(store);
    }
    policy
}

/// The workspace with the sandbox of `--sandbox`, `--writable-root` and `--allow-git-writes`;
/// the `protected` files (the settings files and the files their hook commands name) are
/// protected from commands too, and the output store is hidden from them. `managed`: what the
/// managed settings hold, which neither `--sandbox off`, `--allow-host` nor codex's
/// `danger-full-access` sets aside.
fn sandboxed(
    workspace: Workspace,
    args: &WorkspaceArgs,
    configured: Option<tool_sandbox::SandboxMode>,
    managed: Option<&settings::Managed>,
    settings: &SandboxSettings,
    network: &NetworkSettings,
    protected: &[std::path::PathBuf],
) -> Result<Workspace, Failure> {
    use tool_sandbox::SandboxMode;
    // `--sandbox` wins over the settings file's `enabled` (or codex's `sandbox_mode`).
    let mode = match (args.sandbox.or(configured), settings.enabled) {
        (Some(mode), _) => mode,
        (None, Some(false)) => SandboxMode::Off,
        (None, _) => SandboxMode::WorkspaceWrite,
    };
    // Managed settings are above the command line and codex's file.
    if let Some(managed) = managed {
        managed.refuse_overrides(args, mode)?;
    }
    let mut policy = tool_sandbox::SandboxPolicy::for_mode(mode, workspace.root());
    if mode != SandboxMode::WorkspaceWrite && !args.writable_roots.is_empty() {
        return Err(Failure::usage(format!(
            "--writable-root only applies to --sandbox workspace-write, and the sandbox is {mode}"
        )));
    }
    if mode == SandboxMode::WorkspaceWrite {
        for root in args.writable_roots.iter().chain(&settings.allow_write) {
            let root = std::fs::canonicalize(root)
                .map_err(|e| Failure::usage(format!("writable root {}: {e}", root.display())))?;
            policy = policy.with_writable_root(root);
        }
    }
    policy = confined(policy, settings, protected);
    policy = policy.with_git_writes(args.allow_git_writes || settings.allow_git_writes == Some(true));
    if let Some(limits) = settings.limits {
        policy = policy.with_limits(limits);
    }
    // `sandbox.network`'s switches for the sandbox itself (the rest is the proxy's).
    policy = policy
        .with_local_binding(network.allow_local_binding)
        .with_all_unix_sockets(network.allow_all_unix_sockets);
    for socket in &network.allow_unix_sockets {
        policy = policy.with_unix_socket(socket);
    }
    Ok(workspace
        .with_sandbox(policy)
        .with_unsandboxed_commands(
            settings.excluded_commands.clone(),
            settings.allow_unsandboxed_commands != Some(false),
        )
        .with_networked_commands(settings.network_commands.clone()))
}

/// `call` and `turn` exit once their calls are answered, which would kill a command left
/// running in the background: `bash` runs every command to its end there. Nothing could undo
/// their calls later either, so they record no checkpoints (a copy of the workspace per process).
fn one_shot(dispatcher: Dispatcher) -> Dispatcher {
    dispatcher.session().get_or_insert_with(tools_std::session::Sessions::foreground_only);
    dispatcher.session().get_or_insert_with(tools_std::checkpoint::Checkpoints::off);
    dispatcher
}

fn root_error(root: &std::path::Path, error: &io::Error) -> String {
    let shown = root.display();
    match error.kind() {
        io::ErrorKind::NotFound => format!("--root {shown}: no such directory"),
        io::ErrorKind::NotADirectory => format!("--root {shown}: not a directory"),
        _ => format!("--root {shown}: {error}"),
    }
}

/// The default permissions, except that paths outside the workspace root are allowed.
struct AllowOutsideRoot;

impl PermissionHook for AllowOutsideRoot {
    fn decide<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionDecision> {
        static DEFAULT: DefaultPermissions = DefaultPermissions;
        match request.kind {
            PermissionKind::ExternalDirectory { .. } => {
                Box::pin(std::future::ready(PermissionDecision::Allow))
            }
            _ => DEFAULT.decide(request),
        }
    }
}

async fn list(args: ListArgs) -> Result<i32, Failure> {
    let config = mcp_config(&args.mcp)?;
    // A sandboxed server is kept from what Claude Code's settings of this directory keep
    // commands from, as under `serve`; the settings are read for nothing else.
    let sandboxed =
        config.iter().flat_map(|config| &config.servers).any(|server| server.sandbox_mode.is_some());
    let file = if sandboxed { Loaded::read(&WorkspaceArgs::default())? } else { None };
    let mounts = match config {
        Some(config) => mount_servers(config, &EnvFilter::base(), None, file.as_ref(), false).await?,
        None => Vec::new(),
    };
    let mode = if args.hosted_search { SearchMode::Hosted } else { SearchMode::Client };
    let registry = code_mode(registry(&mounts)?, &args.code, &args.defer, true)?;
    let registry = describable(registry, args.format.provider(), &definition_options(&args))?;
    let catalog = catalog(registry, offered_deferred(&args.code, &args.defer))?.with_search_mode(mode);
    let loaded: LoadedTools = args.loaded.iter().collect();
    for name in loaded.names() {
        if !catalog.is_deferred(name) {
            return Err(Failure::usage(format!(
                "--loaded {name}: not a deferred tool (defer it with --defer or --defer-all)"
            )));
        }
    }
    print_json(&definitions(&catalog, args.format.provider(), &loaded, &definition_options(&args))?)?;
    Ok(EXIT_OK)
}

/// `registry` without the mounted tools that `provider` cannot be told about with `options`,
/// each named on standard error with the reason: a mounted server's schema that one provider
/// cannot take costs that tool in that provider's definitions alone. Our own tools are not
/// dropped: one that cannot be described stays an error.
fn describable(
    registry: Registry,
    provider: Provider,
    options: &DefinitionOptions,
) -> Result<Registry, Failure> {
    let mut left_out: Vec<String> = Vec::new();
    for spec in registry.specs().filter(|spec| spec.tags.iter().any(|tag| tag == "mcp")) {
        if let Err(error) = provider.definition(spec, options) {
            say(&format!("tools: the mounted tool `{}` is left out of the definitions: {error}", spec.name));
            left_out.push(spec.name.clone());
        }
    }
    if left_out.is_empty() {
        return Ok(registry);
    }
    Registry::builder()
        .examples_checked_by_tests()
        .tools(registry.tools().filter(|tool| !left_out.contains(&tool.spec().name)).cloned())
        .build()
        .map_err(|e| Failure::usage(e.to_string()))
}

fn definition_options(args: &ListArgs) -> DefinitionOptions {
    DefinitionOptions::default()
        .with_strict(args.strict)
        .with_anthropic_cache_control(args.extras.anthropic_cache_control)
        .with_gemini_json_schema(args.extras.gemini_json_schema)
}

/// What `--defer` defers among the tools offered: nothing under `--code-mode=only`, which offers
/// the script tool alone (the script tool's description left them out, [`code_mode`]).
fn offered_deferred<'a>(code: &CodeModeArgs, defer: &'a DeferArgs) -> &'a DeferArgs {
    static NONE: DeferArgs = DeferArgs { defer_all: false, defer: Vec::new() };
    match code.code_mode {
        Some(CodeMode::Only) => &NONE,
        _ => defer,
    }
}

/// The registry as a catalog whose deferred tools are those `args` names, besides those
/// deferred by their definition; an unknown name is a usage error.
fn catalog(registry: Registry, args: &DeferArgs) -> Result<Catalog, Failure> {
    let mut catalog = Catalog::new(registry);
    if args.defer_all {
        catalog = catalog.defer_all();
    }
    catalog.defer(&args.defer).map_err(|e| Failure::usage(format!("--defer: {e}")))
}

/// The definitions of a request in `provider`'s shape (its deferred form when tools are
/// deferred); a tool that the provider cannot be told about is a usage error naming it.
fn definitions(
    catalog: &Catalog,
    provider: Provider,
    loaded: &LoadedTools,
    options: &DefinitionOptions,
) -> Result<Value, Failure> {
    let definitions =
        catalog.definitions(provider, loaded, options).map_err(|e| Failure::usage(e.to_string()))?;
    Ok(Value::Array(definitions))
}

async fn call(args: CallArgs) -> Result<i32, Failure> {
    let (setup, _mounts, registry) =
        prepare(&args.workspace, &args.mcp, &args.code, &DeferArgs::default(), false).await?;
    if !registry.contains(&args.name) {
        return Err(Failure::usage(registry.unknown_tool(&args.name).message().to_owned()));
    }
    let arguments = if args.arguments == "-" { read_stdin("the arguments")? } else { args.arguments.clone() };
    match serde_json::from_str::<Value>(&arguments) {
        Ok(Value::Object(_)) => {}
        Ok(other) => {
            return Err(Failure::usage(format!(
                "ARGS_JSON must be a JSON object, found {}",
                tool_runtime::words::json_kind(&other)
            )));
        }
        Err(e) => return Err(Failure::usage(format!("ARGS_JSON is not valid JSON: {e}"))),
    }
    let dispatcher = one_shot(dispatcher(registry, setup, &args.workspace).build());
    let options =
        CallOptions { timeout: args.timeout_ms.map(Duration::from_millis), ..CallOptions::default() };
    let call = ToolCall::new(CALL_ID, args.name, arguments);
    let cancel = cancel_on_termination()?;
    let result = dispatcher.run_with(call, options, cancel).await;
    let output = &result.output;
    print_json(&json!({
        "call_id": result.call_id,
        "tool": result.tool,
        "is_error": output.is_error,
        "output": output.text_content(),
        "content": output.content,
        "metadata": output.metadata,
    }))?;
    Ok(if output.is_error { EXIT_TOOL_ERROR } else { EXIT_OK })
}

async fn turn(args: TurnArgs) -> Result<i32, Failure> {
    let provider = args.format.provider();
    let (setup, _mounts, registry) =
        prepare(&args.workspace, &args.mcp, &args.code, &args.defer, false).await?;
    let text = read_stdin("the assistant message")?;
    if text.trim().is_empty() {
        return Err(Failure::usage(format!(
            "standard input is empty; expected one assistant message in {provider} format"
        )));
    }
    let message: Value = serde_json::from_str(&text)
        .map_err(|e| Failure::usage(format!("standard input is not valid JSON: {e}")))?;
    let catalog = catalog(registry, offered_deferred(&args.code, &args.defer))?;
    let mut builder = dispatcher(catalog.registry().clone(), setup, &args.workspace);
    if args.events {
        builder = builder.events(EventFn(print_event));
    }
    let dispatcher = one_shot(builder.build());
    // The calls of the message are one turn.
    let options = CallOptions::default().turn(turn_id());
    if catalog.has_deferred() {
        // Searches are answered here, the other calls by the dispatcher, in the message's order.
        let calls = catalog.parse_turn(provider, &message).map_err(|e| Failure::usage(e.to_string()))?;
        let mut loaded = LoadedTools::new();
        let results = catalog
            .run_turn_with(&dispatcher, calls, &mut loaded, options, cancel_on_termination()?)
            .await
            .map_err(|e| {
                Failure::runtime(format!("the turn was stopped by a fatal error: {}", e.message()))
            })?;
        let options = DefinitionOptions::default().with_strict(args.strict);
        let rendered =
            catalog.render_turn(provider, &results, &options).map_err(|e| Failure::usage(e.to_string()))?;
        print_json(&Value::Array(rendered))?;
        return Ok(EXIT_OK);
    }
    let calls = provider.parse_tool_calls(&message).map_err(|e| Failure::usage(e.to_string()))?;
    let results = dispatcher
        .run_batch_with(calls.into_iter().map(|call| (call, options.clone())), cancel_on_termination()?)
        .await
        .map_err(|e| Failure::runtime(format!("the turn was stopped by a fatal error: {}", e.message())))?;
    print_json(&Value::Array(provider.render_results(&results)))?;
    Ok(EXIT_OK)
}

/// A turn id unlike any other of this machine's: `turn-` with the time and the process id.
fn turn_id() -> String {
    let millis =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    format!("turn-{millis}-{}", std::process::id())
}

async fn serve(args: ServeArgs) -> Result<i32, Failure> {
    // The mounted servers' tools are served with ours, for as long as we serve.
    let (setup, mounts, registry) =
        prepare(&args.workspace, &args.mcp, &args.code, &DeferArgs::default(), true).await?;
    // What confines every command of this session, said once when serving starts.
    let announce: Vec<String> =
        std::iter::once(sandbox_line(&setup.workspace)).chain(setup.announce.iter().cloned()).collect();
    // The settings' SessionStart and SessionEnd hooks: one session, this server's.
    let session_hooks = setup.policy.clone();
    let session_id = format!("serve-{}", std::process::id());
    let builder = dispatcher(registry, setup, &args.workspace);
    let server = tool_runtime::mcp_server::McpServer::builder(builder)
        .name("tools")
        .version(env!("CARGO_PKG_VERSION"))
        // Only a mounted server's tools can change while we serve.
        .tool_list_changes(!mounts.is_empty())
        .tasks(true);
    let server =
        mounted::serve_their_content(server, &mounts).build().map_err(|e| Failure::usage(e.to_string()))?;
    // Runs as long as the runtime: the mounts live in the task, and stop with it.
    if !mounts.is_empty() {
        tokio::spawn(mounted::pass_on_their_changes(mounts.clone(), server.clone()));
        tokio::spawn(pass_on_tool_changes(mounts, server.clone(), args.code));
    }
    if let Some(policy) = &session_hooks {
        say_failed(policy.session_start(&session_id, "startup").await);
    }
    if let Some(address) = &args.http.http {
        let served = http::serve(server, address, &args.http, &announce).await;
        if let Some(policy) = &session_hooks {
            say_failed(policy.session_end(&session_id, "other").await);
        }
        return served;
    }
    for line in &announce {
        say(&format!("tools: {line}"));
    }
    let mut termination = Termination::register().map_err(signal_failure)?;
    let (served, reason) = tokio::select! {
        served = server.serve_stdio() => {
            // The client went away: what its commands left running ends with the session.
            tools_std::process::kill_running_commands();
            (served.map_err(|e| Failure::runtime(e.to_string())), "prompt_input_exit")
        }
        _ = termination.received() => {
            // Killed here, before the runtime drops the calls still running: every process the
            // commands started dies with the server, whichever session it belonged to.
            tools_std::process::kill_running_commands();
            (Ok(()), "other")
        }
    };
    if let Some(policy) = &session_hooks {
        say_failed(policy.session_end(&session_id, reason).await);
    }
    served?;
    Ok(EXIT_OK)
}

/// Says on standard error what each failed session hook said.
fn say_failed(failures: Vec<String>) {
    for failure in failures {
        say(&format!("tools: {failure}"));
    }
}

/// Serves the tools of the registry rebuilt from ours and every mount's current tools each time
/// a mounted server's tool list changes, and announces it to our clients. A rebuilt registry
/// that cannot be used (two servers now offer the same name, say) is reported on standard error
/// and the tools served stay as they were.
async fn pass_on_tool_changes(
    mounts: Vec<McpMount>,
    server: tool_runtime::mcp_server::McpServer,
    code: CodeModeArgs,
) {
    let mut changes = mounted::any_changed(mounts.iter().map(McpMount::changes));
    while changes.recv().await.is_some() {
        let rebuilt = match registry(&mounts)
            .and_then(|registry| code_mode(registry, &code, &DeferArgs::default(), true))
        {
            Ok(registry) => server.replace_registry(registry).await.map_err(|e| e.to_string()),
            Err(failure) => Err(failure.message),
        };
        if let Err(message) = rebuilt {
            say(&format!(
                "tools: a mounted server changed its tools, but the new set cannot be served ({message}); \
                 the tools served stay as they were until the next change"
            ));
        }
    }
}

/// One lifecycle event as a JSON line on standard error.
fn print_event(event: ToolEvent) {
    if let Ok(line) = serde_json::to_string(&event) {
        say(&line);
    }
}

/// A token cancelled by SIGINT (Ctrl-C), SIGTERM or SIGHUP, so that running tools stop (and
/// kill every process they started) and the results still come out.
fn cancel_on_termination() -> Result<CancellationToken, Failure> {
    let mut termination = Termination::register().map_err(signal_failure)?;
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        termination.received().await;
        cancel.cancel();
    });
    Ok(token)
}

pub(crate) fn signal_failure(error: io::Error) -> Failure {
    Failure::runtime(format!("cannot catch the stop signals (SIGINT, SIGTERM, SIGHUP): {error}"))
}

fn read_stdin(what: &str) -> Result<String, Failure> {
    let mut text = String::new();
    io::stdin()
        .lock()
        .read_to_string(&mut text)
        .map_err(|e| Failure::usage(format!("cannot read {what} from standard input: {e}")))?;
    Ok(text)
}

fn print_json(value: &Value) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Failure::runtime(format!("cannot print the result: {e}")))?;
    write_stdout(&format!("{text}\n"))
}

fn write_stdout(text: &str) -> Result<(), Failure> {
    let mut stdout = io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        // The reader went away (`tools list | head`): nothing left to tell anyone.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::runtime(format!("cannot write to standard output: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tool_runtime::{ToolOutput, ToolSpec, spec::FnTool};

    #[test]
    fn a_tool_a_provider_cannot_describe_is_a_one_line_usage_error() {
        let schema = json!({
            "type": "object",
            "properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}}},
            "required": ["env"],
        });
        let tool = FnTool::new(ToolSpec::new("run", "Run with an environment.", schema), |_, _| async {
            Ok(ToolOutput::text("ok"))
        });
        let catalog = Catalog::new(Registry::builder().tool(tool).build().unwrap());
        let loaded = LoadedTools::new();
        assert!(definitions(&catalog, Provider::OpenAiChat, &loaded, &DefinitionOptions::default()).is_ok());
        let Err(failure) = definitions(&catalog, Provider::OpenAiChat, &loaded, &DefinitionOptions::strict())
        else {
            panic!("strict mode has no maps");
        };
        assert_eq!(failure.code, EXIT_USAGE);
        assert!(!failure.message.contains('\n'), "{}", failure.message);
        assert!(
            failure
                .message
                .starts_with("the tool `run` cannot be described to OpenAI Chat Completions strict mode: "),
            "{}",
            failure.message
        );
    }
}
