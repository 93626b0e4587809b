//! `tools mcp login` and `tools mcp logout`: OAuth tokens for the HTTP servers of an
//! `mcpServers` file.

use std::io::Write;
use std::time::Duration;

use tool_runtime::mcp_client::{McpConfig, ServerConfig, oauth};

use crate::args::McpCommand;
use crate::{EXIT_OK, Failure};

/// What a person runs to log in to a server, followed by its name.
pub(crate) const LOGIN_COMMAND: &str = "tools mcp login";

pub(crate) async fn run(command: McpCommand) -> Result<i32, Failure> {
    match command {
        McpCommand::Login(args) => {
            let server = server(&args.mcp_config, &args.name)?;
            let headless = args.no_browser || !has_display();
            let shown = |url: &str| {
                crate::terminal::say(&format!(
                    "tools: to log in to `{}`, open this URL in a browser:",
                    server.name
                ));
                crate::terminal::say(url);
                if !headless {
                    open_browser(url);
                }
            };
            let file = oauth::login(&server, Duration::from_secs(args.timeout_secs), shown)
                .await
                .map_err(|e| Failure::runtime(e.to_string()))?;
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(
                stdout,
                "Logged in to `{}`; its tokens are in {}.",
                server.name,
                file.path().display()
            );
            Ok(EXIT_OK)
        }
        McpCommand::Logout(args) => {
            let server = server(&args.mcp_config, &args.name)?;
            let removed = oauth::logout(&server).map_err(|e| Failure::runtime(e.to_string()))?;
            let mut stdout = std::io::stdout().lock();
            let _ = if removed {
                writeln!(stdout, "Logged out of `{}`: its tokens are removed.", server.name)
            } else {
                writeln!(stdout, "No tokens were stored for `{}`.", server.name)
            };
            Ok(EXIT_OK)
        }
    }
}

/// The server `name` of the file at `path`.
fn server(path: &std::path::Path, name: &str) -> Result<ServerConfig, Failure> {
    let config = McpConfig::load(path).map_err(|e| Failure::usage(format!("--mcp-config: {e}")))?;
    let names: Vec<String> = config.servers.iter().map(|server| format!("`{}`", server.name)).collect();
    config.servers.into_iter().find(|server| server.name == name).ok_or_else(|| {
        Failure::usage(format!(
            "--mcp-config {}: no server `{name}` (enabled) in it; the servers are: {}",
            path.display(),
            if names.is_empty() { "none".to_owned() } else { names.join(", ") }
        ))
    })
}

/// Whether a browser could be shown: a graphical session (or macOS, which always has one).
fn has_display() -> bool {
    cfg!(target_os = "macos")
        || ["DISPLAY", "WAYLAND_DISPLAY"]
            .iter()
            .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
}

/// Opens `url` in the default browser, not waiting for it; the printed URL is the fallback.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let _ = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}
