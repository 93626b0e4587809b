//! Starting one session with a server: spawn (or reach) it and run `initialize`.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::RoleClient;
use rmcp::ServiceExt;
use rmcp::service::{Peer, RunningService};
use rmcp::transport::TokioChildProcess;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::config::{ServerConfig, Transport};
use super::handler::MountHandler;

/// The last lines of a server's standard error kept for error messages.
const STDERR_LINES: usize = 8;

/// A running session: the rmcp client and what the server last wrote to its standard error.
pub(crate) struct Session {
    service: RunningService<RoleClient, MountHandler>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Session {
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// Whether the connection is gone (the process exited, the stream closed).
    pub(crate) fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// The server's last lines on standard error, for the operator.
    pub(crate) fn stderr_tail(&self) -> String {
        tail(&self.stderr)
    }

    /// Ends the session: closes the server's input, and stops its process group if it does not
    /// exit by itself.
    pub(crate) fn close(&self) {
        self.service.cancellation_token().cancel();
    }
}

fn tail(lines: &Mutex<VecDeque<String>>) -> String {
    let lines = lines.lock().unwrap_or_else(|p| p.into_inner());
    lines.iter().cloned().collect::<Vec<_>>().join("\n")
}

/// Starts a session with `config`'s server. The error is a sentence for the model and the
/// operator alike, without the server's name (the caller adds it).
pub(crate) async fn start(config: &ServerConfig, handler: MountHandler) -> Result<Session, String> {
    match &config.transport {
        Transport::Stdio { command, args, env, cwd } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).envs(env);
            if let Some(cwd) = cwd {
                cmd.current_dir(cwd);
            }
            let mut wrapped = CommandWrap::from(cmd);
            // A group of its own: stopping the server stops whatever it started (npx starts node).
            wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
            let (process, stderr) =
                TokioChildProcess::builder(wrapped).stderr(Stdio::piped()).spawn().map_err(|e| {
                    format!("cannot start `{command}`: {e}; check `command` in the configuration")
                })?;
            let lines: Arc<Mutex<VecDeque<String>>> = Arc::default();
            if let Some(stderr) = stderr {
                let lines = lines.clone();
                tokio::spawn(async move {
                    let mut reader = BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = reader.next_line().await {
                        let mut lines = lines.lock().unwrap_or_else(|p| p.into_inner());
                        if lines.len() == STDERR_LINES {
                            lines.pop_front();
                        }
                        lines.push_back(line);
                    }
                });
            }
            let started = tokio::time::timeout(config.startup_timeout, handler.serve(process)).await;
            let with_stderr = |message: String| {
                let tail = tail(&lines);
                if tail.is_empty() {
                    message
                } else {
                    format!("{message}; its standard error ended with: {tail}")
                }
            };
            match started {
                Ok(Ok(service)) => Ok(Session { service, stderr: lines }),
                Ok(Err(e)) => Err(with_stderr(format!(
                    "`{command}` started but did not complete the MCP handshake ({e})"
                ))),
                Err(_) => Err(with_stderr(format!(
                    "`{command}` did not complete the MCP handshake within {} s",
                    config.startup_timeout.as_secs()
                ))),
            }
        }
        Transport::Http { url, .. } => Err(format!(
            "it is an HTTP server ({url}), and this build mounts stdio servers only; use a stdio command for it"
        )),
    }
}
