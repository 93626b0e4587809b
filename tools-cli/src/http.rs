//! `tools serve --http`: the address and its checks, the token file, and the stop signals.

use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use tool_runtime::CancellationToken;
use tool_runtime::mcp_server::{HttpOptions, MCP_PATH, McpServer};

use crate::args::HttpArgs;
use crate::signals::Termination;
use crate::{EXIT_OK, Failure, signal_failure};

/// `confinement` names what confines commands (the sandbox, the network): printed on standard error
/// once the flags are checked, a line each.
pub(crate) async fn serve(
    server: McpServer,
    address: &str,
    args: &HttpArgs,
    confinement: &[String],
) -> Result<i32, Failure> {
    let address = socket_address(address, args.allow_remote)?;
    let mut options = HttpOptions::new()
        .shutdown_grace(Duration::from_secs(args.shutdown_grace_secs))
        .max_connections(args.max_connections)
        .max_connections_per_client(args.max_connections_per_client)
        .header_read_timeout(Duration::from_secs(args.header_timeout_secs))
        .body_read_timeout(Duration::from_secs(args.body_timeout_secs))
        .max_sessions(args.max_sessions)
        .session_idle_timeout(Duration::from_secs(args.session_idle_secs));
    for origin in &args.allow_origin {
        options = options.allow_origin(origin);
    }
    for host in &args.allow_host {
        options = options.allow_host(host);
    }
    if args.allow_remote && args.allow_host.is_empty() {
        options = options.allow_any_host();
    }
    match &args.auth_token_file {
        Some(file) => options = options.bearer_token(read_token(file)?),
        None if !address.ip().is_loopback() => warn(&format!(
            "serving on {address} without --auth-token-file: anyone who can reach it can run the tools"
        )),
        None => {}
    }
    for line in confinement {
        crate::terminal::say(&format!("tools: {line}"));
    }
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| Failure::runtime(format!("cannot listen on {address}: {e}")))?;
    let bound =
        listener.local_addr().map_err(|e| Failure::runtime(format!("cannot listen on {address}: {e}")))?;

    let stop = CancellationToken::new();
    let mut termination = Termination::register().map_err(signal_failure)?;
    let serving = tokio::spawn(server.serve_http(listener, options.shutdown_on(stop.clone())));
    // Printed once the server accepts connections: scripts and tests wait for this line.
    announce(&format!("tools serve: listening on http://{bound}{MCP_PATH}"))?;
    let mut serving = std::pin::pin!(serving);
    tokio::select! {
        served = &mut serving => return finished(served),
        () = termination.received() => stop.cancel(),
    }
    tokio::select! {
        served = &mut serving => {
            // Calls cancelled after the grace had their commands killed when they were
            // dropped; this catches any command whose call did not stop.
            tools_std::process::kill_running_commands();
            finished(served)
        }
        () = termination.received() => {
            tools_std::process::kill_running_commands();
            Ok(EXIT_OK)
        }
    }
}

fn finished(
    served: Result<Result<(), tool_runtime::mcp_server::ServeError>, tokio::task::JoinError>,
) -> Result<i32, Failure> {
    match served {
        Ok(Ok(())) => Ok(EXIT_OK),
        Ok(Err(error)) => Err(Failure::runtime(error.to_string())),
        Err(error) => Err(Failure::runtime(format!("the HTTP server stopped unexpectedly: {error}"))),
    }
}

/// `PORT` (on 127.0.0.1), `:PORT`, or `HOST:PORT`; a host that is not a loopback address only
/// with `allow_remote`.
fn socket_address(text: &str, allow_remote: bool) -> Result<SocketAddr, Failure> {
    let port_only = text.strip_prefix(':').unwrap_or(text);
    let address = if let Ok(port) = port_only.parse::<u16>() {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
    } else {
        let mut resolved = text.to_socket_addrs().map_err(|e| {
            Failure::usage(format!(
                "--http {text}: not an address to listen on ({e}); expected HOST:PORT such as 127.0.0.1:8080, or a PORT"
            ))
        })?;
        resolved
            .next()
            .ok_or_else(|| Failure::usage(format!("--http {text}: the host has no address to listen on")))?
    };
    if !address.ip().is_loopback() && !allow_remote {
        return Err(Failure::usage(format!(
            "--http {text}: {} is not a loopback address, so other hosts could reach the tools; pass \
             --allow-remote to serve there (with --auth-token-file), or listen on 127.0.0.1",
            address.ip()
        )));
    }
    Ok(address)
}

fn read_token(file: &Path) -> Result<String, Failure> {
    // A regular file, bounded: a FIFO or a device at the name is refused, not waited on.
    let text = tool_runtime::settings::read_text(file)
        .map_err(|e| Failure::usage(format!("--auth-token-file {}: {e}", file.display())))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(Failure::usage(format!(
            "--auth-token-file {}: the file is empty; write the token in it",
            file.display()
        )));
    }
    if token.len() < MIN_TOKEN_LENGTH {
        warn(&format!(
            "--auth-token-file {}: a token of {} characters can be guessed; use {MIN_TOKEN_LENGTH} or more random \
             ones (`head -c 32 /dev/urandom | base64`)",
            file.display(),
            token.len()
        ));
    }
    if std::fs::metadata(file)
        .is_ok_and(|meta| std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o077 != 0)
    {
        warn(&format!(
            "--auth-token-file {}: other users may read it (`chmod 600` it), and with it run the tools",
            file.display()
        ));
    }
    Ok(token.to_owned())
}

/// Tokens shorter than this are warned about.
const MIN_TOKEN_LENGTH: usize = 16;

fn announce(line: &str) -> Result<(), Failure> {
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .map_err(|e| Failure::runtime(format!("cannot write to standard output: {e}")))
}

fn warn(message: &str) {
    crate::terminal::say(&format!("tools: warning: {message}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_default_to_loopback_and_remote_ones_must_be_asked_for() {
        assert_eq!(socket_address("8080", false).ok(), Some("127.0.0.1:8080".parse().unwrap()));
        assert_eq!(socket_address(":0", false).ok(), Some("127.0.0.1:0".parse().unwrap()));
        assert_eq!(socket_address("[::1]:9", false).ok(), Some("[::1]:9".parse().unwrap()));
        let Err(refused) = socket_address("0.0.0.0:8080", false) else { panic!("0.0.0.0 is not loopback") };
        assert!(refused.message.contains("pass --allow-remote"), "{}", refused.message);
        assert_eq!(socket_address("0.0.0.0:8080", true).ok(), Some("0.0.0.0:8080".parse().unwrap()));
        let Err(bad) = socket_address("nonsense", false) else { panic!("not an address") };
        assert!(bad.message.starts_with("--http nonsense: not an address to listen on"), "{}", bad.message);
    }
}
