//! `tools serve` driven by the official MCP Python SDK (`mcp` on PyPI), in its default mode
//! (`server/discover`, protocol 2026-07-28) and in legacy mode (`initialize`), on stdio and over
//! Streamable HTTP (`--http`, with a token), and every result checked against each revision's
//! schema with the SDK's validators.
//!
//! The SDK lives in a virtual environment that `scripts/python-sdk-env.sh` creates at
//! `target/py-mcp` (or `$MCP_PYTHON` names its interpreter). Without it these tests pass with a
//! message saying they were skipped, so a machine without Python or PyPI can still run the suite.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::{Fixture, TOOLS};

/// The interpreter of the SDK's virtual environment, or why there is none.
fn sdk_python() -> Result<PathBuf, String> {
    if let Some(python) = std::env::var_os("MCP_PYTHON") {
        return Ok(PathBuf::from(python));
    }
    // TOOLS is TARGET/debug/tools (or TARGET/release/tools).
    let target = PathBuf::from(TOOLS).parent().and_then(|dir| dir.parent()).map(PathBuf::from);
    let python = target.map(|target| target.join("py-mcp/bin/python"));
    let Some(python) = python.filter(|python| python.exists()) else {
        return Err("no Python MCP SDK environment; create it with scripts/python-sdk-env.sh".to_owned());
    };
    let imports = Command::new(&python).args(["-c", "import mcp"]).output();
    match imports {
        Ok(output) if output.status.success() => Ok(python),
        _ => {
            Err(format!("{} cannot import mcp; recreate it with scripts/python-sdk-env.sh", python.display()))
        }
    }
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_python").join(name)
}

/// Runs a script of `tests/mcp_python` with `args` after the binary and a fresh workspace; fails
/// the test with the script's output unless it passes.
fn run_script(name: &str, args: &[&str]) {
    let python = match sdk_python() {
        Ok(python) => python,
        Err(reason) => {
            tool_tests::skip(&format!("{name}: {reason}"));
            return;
        }
    };
    let fx = Fixture::new();
    let ws = fx.ws();
    let output = Command::new(&python)
        .arg(script(name))
        .arg(TOOLS)
        .arg(&ws)
        .args(args)
        .env("XDG_DATA_HOME", fx.dir.path().join("data"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{name} {args:?} failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}");
    assert!(stdout.lines().any(|line| line.starts_with("passed: ")), "{name} did not finish\n{stdout}");
}

#[test]
fn python_sdk_default_mode() {
    run_script("sdk_client.py", &["auto"]);
}

#[test]
fn python_sdk_legacy_mode() {
    run_script("sdk_client.py", &["legacy"]);
}

#[test]
fn every_result_matches_the_schema_of_each_negotiated_revision() {
    run_script("revisions.py", &[]);
}

#[test]
fn python_sdk_over_http_default_mode() {
    run_script("sdk_http.py", &["auto"]);
}

#[test]
fn python_sdk_over_http_legacy_mode() {
    run_script("sdk_http.py", &["legacy"]);
}

#[test]
fn a_settings_ask_reaches_the_python_clients_user_by_elicitation() {
    run_script("elicit.py", &[]);
}

#[test]
fn a_permission_modes_ask_reaches_the_python_clients_user_by_elicitation() {
    run_script("modes.py", &[]);
}

#[test]
fn the_python_client_reads_served_and_mounted_resources_and_prompts() {
    let fixture = common::resources_fixture();
    run_script("resources.py", &[fixture.to_str().unwrap()]);
}

#[test]
fn a_mounted_servers_sampling_reaches_the_python_clients_model() {
    let fixture = common::resources_fixture();
    run_script("sampling.py", &[fixture.to_str().unwrap()]);
}

/// Revision 2026-07-28 (the SDK's default mode) has no sessions: questions and sampling come to
/// the client in rounds, on stdio and over HTTP.
#[test]
fn without_a_session_the_python_client_is_asked_in_rounds() {
    let fixture = common::resources_fixture();
    run_script("rounds.py", &[fixture.to_str().unwrap(), "stdio"]);
    run_script("rounds.py", &[fixture.to_str().unwrap(), "http"]);
}

/// Revision 2026-07-28's `subscriptions/listen`: a mounted server's changes reach the streams
/// that asked for them, on stdio and over HTTP.
#[test]
fn the_python_client_listens_to_a_mounted_servers_changes() {
    let (resources, tools) = (common::resources_fixture(), common::tools_fixture());
    for transport in ["stdio", "http"] {
        run_script("listen.py", &[resources.to_str().unwrap(), tools.to_str().unwrap(), transport]);
    }
}

#[test]
fn ask_user_reaches_the_python_clients_user_directly_and_through_a_mount() {
    run_script("ask_user.py", &[]);
}

#[test]
fn python_sdk_drives_the_script_tool_of_code_mode() {
    run_script("code_mode.py", &["beside"]);
    run_script("code_mode.py", &["only"]);
}
