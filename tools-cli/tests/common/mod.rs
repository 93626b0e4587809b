//! Shared by the end-to-end tests: temporary workspaces and running the built `tools` binary.

#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tool_runtime::Registry;
pub use tool_tests::TempDir;

/// The built binary.
pub const TOOLS: &str = env!("CARGO_BIN_EXE_tools");

/// A workspace `dir/ws` (so `dir` itself is outside it) with `hello.txt`, and a private data
/// directory for the output store.
pub struct Fixture {
    pub dir: TempDir,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = TempDir::new("cli");
        std::fs::create_dir_all(dir.path().join("ws")).expect("workspace");
        std::fs::write(dir.path().join("ws/hello.txt"), "hello\nworld\n").expect("hello.txt");
        std::fs::write(dir.path().join("outside.txt"), "secret\n").expect("outside.txt");
        Fixture { dir }
    }

    pub fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// A `tools` command run in the workspace, with the output store under the fixture.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(TOOLS);
        command.args(args).current_dir(self.ws()).env("XDG_DATA_HOME", self.dir.path().join("data"));
        command
    }

    /// Runs `tools ARGS` with `stdin` (empty when `None`) and waits for it.
    pub fn run(&self, args: &[&str], stdin: Option<&[u8]>) -> Run {
        run(self.command(args), stdin)
    }
}

pub fn run(mut command: Command, stdin: Option<&[u8]>) -> Run {
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
pub struct Run {
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
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}\nstderr: {}", self.stdout, self.stderr))
    }

    /// Asserts a usage error: exit 2, nothing on stdout, and exactly `tools: MESSAGE` as one line
    /// on stderr. Returns the message.
    pub fn usage_error(&self) -> &str {
        assert_eq!(self.code, 2, "stdout: {}\nstderr: {}", self.stdout, self.stderr);
        assert_eq!(self.stdout, "", "stderr: {}", self.stderr);
        let line = self.stderr.strip_suffix('\n').unwrap_or_else(|| panic!("no newline: {:?}", self.stderr));
        assert!(!line.contains('\n'), "more than one line: {:?}", self.stderr);
        line.strip_prefix("tools: ").unwrap_or_else(|| panic!("no `tools: ` prefix: {line:?}"))
    }
}

/// The registry the binary serves, built the same way.
pub fn registry() -> Registry {
    Registry::builder()
        .tools(tools_std::all())
        .tools(tool_runtime::registered_tools())
        .build()
        .expect("no duplicate tools")
}

/// The model-facing message for a call to a tool that does not exist.
pub fn unknown_tool_message(name: &str) -> String {
    registry().unknown_tool(name).message().to_owned()
}
