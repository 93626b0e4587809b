//! `--codex-config FILE`: codex's `config.toml` through the built binary. `sandbox_mode =
//! "read-only"` gives the read-only sandbox, `[mcp_servers]` the mounts, `approval_policy` the
//! permission mode, and the keys that are not applied are named at start.

use crate::common;

use common::{Fixture, TOOLS};
use serde_json::json;

#[test]
fn a_codex_config_gives_its_sandbox_its_servers_and_its_mode() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let path = fx.dir.path().join("config.toml");
    let config = |approval: &str| {
        format!(
            "model = \"o3\"\nsandbox_mode = \"read-only\"\napproval_policy = \"{approval}\"\n\n\
             [mcp_servers.inner]\ncommand = {TOOLS:?}\nargs = [\"serve\", \"--no-settings\", \"--sandbox\", \"off\", \
             \"--root\", {:?}]\n",
            ws.display().to_string()
        )
    };
    std::fs::write(&path, config("never")).unwrap();
    let file = path.display().to_string();
    let call = |tool: &str, args: serde_json::Value| {
        fx.run(&["call", tool, &args.to_string(), "--codex-config", &file], None)
    };

    let sandboxed = call("bash", json!({"command": "true"}));
    assert_eq!(sandboxed.code, 0, "{}{}", sandboxed.stdout, sandboxed.stderr);
    assert_eq!(sandboxed.json()["metadata"]["sandbox"]["mode"], "read-only", "{}", sandboxed.stdout);
    assert_eq!(
        sandboxed.stderr,
        format!("tools: --codex-config {file}: `model` is not applied: no counterpart in this program\n")
    );
    let mounted = call("inner__read", json!({"path": "hello.txt"}));
    assert_eq!(mounted.code, 0, "{}{}", mounted.stdout, mounted.stderr);
    assert_eq!(mounted.json()["output"], "     1\thello\n     2\tworld\n");

    // `untrusted` asks before what is not read-only, and `tools call` cannot ask.
    std::fs::write(&path, config("untrusted")).unwrap();
    let edit = call("write", json!({"path": "new.txt", "content": "x"}));
    assert!(
        edit.json()["output"].as_str().unwrap().contains("the permission mode `default`"),
        "{}",
        edit.stdout
    );
    let bad = fx.dir.path().join("bad.toml");
    std::fs::write(&bad, "sandbox_mode = \"sometimes\"\n").unwrap();
    let run = fx.run(&["call", "ls", "{}", "--codex-config", bad.to_str().unwrap()], None);
    assert!(
        run.usage_error().starts_with(&format!(
            "--codex-config {}: not valid: unknown variant `sometimes`",
            bad.display()
        ))
    );
}
