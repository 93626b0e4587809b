//! The tool names of rules, through the built binary: Claude Code's `mcp__SERVER__TOOL`,
//! `mcp__SERVER` and `mcp__SERVER__*` name the tools of a mounted server (`tools serve` itself,
//! mounted as `inner`), and a name that is no tool's is refused at load with the closest one.

use crate::common;

use common::{Fixture, TOOLS};
use serde_json::json;

fn files(fx: &Fixture, permissions: serde_json::Value) -> (String, String) {
    let settings = fx.dir.path().join("settings.json");
    std::fs::write(&settings, json!({ "permissions": permissions }).to_string()).unwrap();
    let mcp = fx.dir.path().join("mcp.json");
    let ws = fx.ws();
    let text = json!({"mcpServers": {
        "inner": {"command": TOOLS, "args": ["serve", "--sandbox", "off", "--root", ws.to_str().unwrap()]},
    }});
    std::fs::write(&mcp, text.to_string()).unwrap();
    (settings.display().to_string(), mcp.display().to_string())
}

fn call(fx: &Fixture, settings: &str, mcp: &str, tool: &str, args: serde_json::Value) -> common::Run {
    let args = args.to_string();
    fx.run(&["call", tool, &args, "--settings", settings, "--mcp-config", mcp], None)
}

#[test]
fn mcp_rule_names_match_the_mounted_tools() {
    let fx = Fixture::new();
    let (settings, mcp) =
        files(&fx, json!({"defaultMode": "dontAsk", "allow": ["mcp__inner"], "deny": ["mcp__inner__read"]}));
    let read = call(&fx, &settings, &mcp, "inner__read", json!({"path": "hello.txt"}));
    assert_eq!(read.code, 1, "{}", read.stdout);
    assert_eq!(
        read.json()["output"],
        format!(
            "The call to `inner__read` was denied: refused by the rule `deny mcp__inner__read` in {settings} \
             (permissions.deny). Do not try to get around it: do something else, or ask the user"
        )
    );
    let ls = call(&fx, &settings, &mcp, "inner__ls", json!({}));
    assert_eq!(ls.code, 0, "{}", ls.stdout);
    assert!(ls.json()["output"].as_str().unwrap().contains("hello.txt"), "{}", ls.stdout);

    // `mcp__SERVER__*` is every tool of the server; without it, dontAsk refuses them.
    let (settings, mcp) = files(&fx, json!({"defaultMode": "dontAsk", "allow": ["mcp__inner__*"]}));
    let read = call(&fx, &settings, &mcp, "inner__read", json!({"path": "hello.txt"}));
    assert_eq!(read.code, 0, "{}", read.stdout);
    let (settings, mcp) = files(&fx, json!({"defaultMode": "dontAsk", "allow": ["mcp__inner__ls"]}));
    let read = call(&fx, &settings, &mcp, "inner__read", json!({"path": "hello.txt"}));
    assert!(
        read.json()["output"].as_str().unwrap().contains("refused by the permission mode `dontAsk`"),
        "{}",
        read.stdout
    );
}

#[test]
fn a_name_that_is_no_tools_is_refused_with_the_closest_one() {
    let fx = Fixture::new();
    for (rule, problem) in [
        ("Bsh(rm:*)", "no tool is named `Bsh`; did you mean `Bash`?"),
        ("Frobnicate", "no tool is named `Frobnicate`"),
        ("mcp__inner__reed", "the MCP server `inner` has no tool `reed`; did you mean `mcp__inner__read`?"),
    ] {
        let (settings, mcp) = files(&fx, json!({"deny": [rule]}));
        let run = call(&fx, &settings, &mcp, "read", json!({"path": "hello.txt"}));
        assert_eq!(
            run.usage_error(),
            format!("--settings {settings}: rule `{rule}` in {settings} (permissions.deny): {problem}")
        );
    }
}

#[test]
fn rules_with_no_effect_are_named_at_start() {
    let fx = Fixture::new();
    let (settings, mcp) = files(&fx, json!({"allow": ["WebSearch", "Task", "mcp__py__add", "Read"]}));
    let run = call(&fx, &settings, &mcp, "read", json!({"path": "hello.txt"}));
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let origin = format!("in {settings} (permissions.allow)");
    assert_eq!(
        run.stderr,
        format!(
            "tools: rule `WebSearch` {origin}: `WebSearch` is a tool of Claude Code's that this program does not \
             have, so the rule has no effect\n\
             tools: rule `Task` {origin}: `Task` is a tool of Claude Code's that this program does not have, so \
             the rule has no effect\n\
             tools: rule `mcp__py__add` {origin}: `mcp__py__add` names the MCP server `py`, which is not mounted \
             (the mounted MCP servers are inner), so the rule has no effect\n"
        )
    );
}

#[test]
fn the_tool_names_of_defaults_are_checked_as_rules_are() {
    let fx = Fixture::new();
    for (name, problem) in [
        ("Bsh", "no tool is named `Bsh`; did you mean `Bash`?"),
        ("mcp__inner__reed", "the MCP server `inner` has no tool `reed`; did you mean `mcp__inner__read`?"),
        ("mcp__inner", "a default is set per tool; name one (`mcp__inner__TOOL`), or write a rule"),
    ] {
        let (settings, mcp) = files(&fx, json!({"defaults": {name: "deny"}}));
        let run = call(&fx, &settings, &mcp, "read", json!({"path": "hello.txt"}));
        let error = run.usage_error();
        assert!(
            error.starts_with(&format!("--settings {settings}: `permissions.defaults.{name}`: {problem}")),
            "{error}"
        );
    }
    // Claude Code's name of one of ours sets its default; one of Claude Code's own tools is named
    // at start as having no effect.
    let (settings, mcp) = files(&fx, json!({"defaults": {"Read": "deny", "WebSearch": "deny"}}));
    let run = call(&fx, &settings, &mcp, "read", json!({"path": "hello.txt"}));
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.json()["output"].as_str().unwrap().contains("denied"), "{}", run.stdout);
    assert!(
        run.stderr.contains(&format!(
            "{settings}: `permissions.defaults.WebSearch` is not applied: `WebSearch` is a tool of Claude Code's"
        )),
        "{}",
        run.stderr
    );
}

/// A name from a project's settings file goes to the user's terminal in an error: its control
/// characters are shown as escapes, never sent (a file can clear the screen or set the
/// clipboard through them).
#[test]
fn a_name_with_a_terminals_control_characters_is_shown_escaped() {
    let fx = Fixture::new();
    let settings = fx.dir.path().join("settings.json");
    std::fs::write(
        &settings,
        "{\"permissions\": {\"defaults\": {\"B\\u001b[2J\\u001b]52;c;eA==\\u0007sh\": \"ask\"}}}",
    )
    .unwrap();
    let run =
        fx.run(&["call", "read", r#"{"path": "hello.txt"}"#, "--settings", settings.to_str().unwrap()], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(!run.stderr.contains(['\u{1b}', '\u{7}']), "{:?}", run.stderr);
    assert!(run.stderr.contains(r"`B\u{1b}[2J\u{1b}]52;c;eA==\u{7}sh`"), "{:?}", run.stderr);
}
