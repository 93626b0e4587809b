//! Shared by the end-to-end tests: temporary workspaces and running the built `tools` binary.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;
use tool_runtime::Registry;
pub(crate) use tool_tests::TempDir;

/// The built binary.
pub(crate) const TOOLS: &str = env!("CARGO_BIN_EXE_tools");

/// A workspace `dir/ws` (so `dir` itself is outside it) with `hello.txt`, and a private data
/// directory for the output store.
pub(crate) struct Fixture {
    pub dir: TempDir,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        let dir = TempDir::new("cli");
        std::fs::create_dir_all(dir.path().join("ws")).expect("workspace");
        std::fs::write(dir.path().join("ws/hello.txt"), "hello\nworld\n").expect("hello.txt");
        std::fs::write(dir.path().join("outside.txt"), "secret\n").expect("outside.txt");
        Fixture { dir }
    }

    pub(crate) fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// A `tools` command run in the workspace, with the output store under the fixture.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(TOOLS);
        command.args(args).current_dir(self.ws()).env("XDG_DATA_HOME", self.dir.path().join("data"));
        // The user's Claude Code settings are looked for in the fixture, not in this machine's home.
        command.env("CLAUDE_CONFIG_DIR", self.dir.path().join("claude"));
        command
    }

    /// Runs `tools ARGS` with `stdin` (empty when `None`) and waits for it.
    pub(crate) fn run(&self, args: &[&str], stdin: Option<&[u8]>) -> Run {
        run(self.command(args), stdin)
    }
}

/// A running `tools serve --http 127.0.0.1:0 EXTRA...` in a fixture's workspace, killed when
/// dropped.
pub(crate) struct HttpServer {
    pub child: Child,
    /// The endpoint it printed, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl HttpServer {
    pub(crate) fn start(fx: &Fixture, extra: &[&str]) -> HttpServer {
        let mut command = fx.command(&["serve", "--http", "127.0.0.1:0"]);
        command.args(extra).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = command.spawn().expect("spawn tools serve --http");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).expect("read the address");
        let url = line
            .trim()
            .strip_prefix("tools serve: listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_owned();
        HttpServer { child, url }
    }

    /// Sends `signal` and waits for the exit; the exit code.
    pub(crate) fn stop(mut self, signal: &str) -> Option<i32> {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.child.wait().unwrap().code()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `tools` mounts `https://` servers, so reqwest is built with TLS but no crypto provider of its
/// own: a client with its defaults (rmcp's, and plain requests) needs a process-wide one.
/// The JSON-RPC messages of an HTTP answer's body: the body itself when it is JSON, else the
/// `data:` lines of its event stream.
pub(crate) fn json_rpc_messages(body: &str) -> Vec<serde_json::Value> {
    if body.trim_start().starts_with('{') {
        return vec![serde_json::from_str(body).unwrap()];
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

pub(crate) fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

pub(crate) fn run(mut command: Command, stdin: Option<&[u8]>) -> Run {
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn tools");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(bytes) = stdin {
        // A usage error exits before reading its input; that is not the test's failure.
        match input.write_all(bytes) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            written => written.expect("write stdin"),
        }
    }
    drop(input);
    let output = child.wait_with_output().expect("wait for tools");
    Run::from(output)
}

/// A finished run.
pub(crate) struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Run {
            code: output.status.code().expect("exited, not killed"),
            stdout: String::from_utf8(output.stdout).expect("UTF-8 stdout"),
            stderr: String::from_utf8(output.stderr).expect("UTF-8 stderr"),
        }
    }
}

impl Run {
    /// Standard output as JSON.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}\nstderr: {}", self.stdout, self.stderr))
    }

    /// Asserts a usage error: exit 2, nothing on stdout, and exactly `tools: MESSAGE` as one line
    /// on stderr. Returns the message.
    pub(crate) fn usage_error(&self) -> &str {
        assert_eq!(self.code, 2, "stdout: {}\nstderr: {}", self.stdout, self.stderr);
        assert_eq!(self.stdout, "", "stderr: {}", self.stderr);
        let line = self.stderr.strip_suffix('\n').unwrap_or_else(|| panic!("no newline: {:?}", self.stderr));
        assert!(!line.contains('\n'), "more than one line: {:?}", self.stderr);
        line.strip_prefix("tools: ").unwrap_or_else(|| panic!("no `tools: ` prefix: {line:?}"))
    }
}

/// The registry the binary serves, built the same way.
pub(crate) fn registry() -> Registry {
    Registry::builder()
        .tools(tools_std::all())
        .tools(tool_runtime::spec::registered_tools())
        .build()
        .expect("no duplicate tools")
}

/// The model-facing message for a call to a tool that does not exist.
pub(crate) fn unknown_tool_message(name: &str) -> String {
    registry().unknown_tool(name).message().to_owned()
}

/// The resources fixture server (tool-mcp's `mcp-resources-server`).
pub(crate) fn resources_fixture() -> std::path::PathBuf {
    tool_mcp_fixture("mcp-resources-server")
}

/// The tools fixture server (tool-mcp's `mcp-fixture-server`: echo, progress, `add_tool`, ...).
pub(crate) fn tools_fixture() -> std::path::PathBuf {
    tool_mcp_fixture("mcp-fixture-server")
}

/// A fixture server of tool-mcp, built next to `tools` (a binary of another package is not
/// built for this one's tests, so it is built here when missing).
fn tool_mcp_fixture(name: &str) -> std::path::PathBuf {
    let path = std::path::Path::new(TOOLS).with_file_name(name);
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let status = std::process::Command::new(cargo)
            .args(["build", "-p", "tool-mcp", "--bin", name])
            .status()
            .expect("run cargo to build a fixture server");
        assert!(status.success(), "cannot build tool-mcp's {name}");
    }
    assert!(path.exists(), "no fixture server at {}", path.display());
    path
}
