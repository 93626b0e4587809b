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
    // A read-only sandbox holds for the file tools too: codex asks before every edit, and under
    // `never` nobody is asked.
    let write = call("write", json!({"path": "new.txt", "content": "x"}));
    assert!(write.json()["output"].as_str().unwrap().contains("`ask Edit`"), "{}", write.stdout);
    assert!(!ws.join("new.txt").exists());
    // In workspace-write, edits run under `never`; git's metadata is still not the workspace's.
    std::fs::write(&path, config("never").replace("read-only", "workspace-write")).unwrap();
    assert_eq!(call("write", json!({"path": "new.txt", "content": "x"})).code, 0);
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    let hook = call("write", json!({"path": ".git/hooks/post-checkout", "content": "x"}));
    assert!(hook.json()["output"].as_str().unwrap().contains("says to ask first"), "{}", hook.stdout);
    assert!(!ws.join(".git/hooks/post-checkout").exists());
    // A profile selected at the top is laid over the top-level keys.
    std::fs::write(
        &path,
        "profile = \"safe\"\nsandbox_mode = \"workspace-write\"\napproval_policy = \"never\"\n\n\
         [profiles.safe]\nsandbox_mode = \"read-only\"\n",
    )
    .unwrap();
    let write = call("write", json!({"path": "other.txt", "content": "x"}));
    assert!(write.json()["output"].as_str().unwrap().contains("`ask Edit`"), "{}", write.stdout);
    std::fs::write(&path, config("never")).unwrap();

    // `untrusted` asks before what is not read-only, and `tools call` cannot ask.
    std::fs::write(&path, config("untrusted").replace("read-only", "workspace-write")).unwrap();
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

/// `--codex` reads codex's own `config.toml`: `$CODEX_HOME/config.toml`, else
/// `~/.codex/config.toml`.
#[test]
fn codex_reads_codex_own_config_where_codex_keeps_it() {
    let fx = Fixture::new();
    let home = fx.dir.path().join("home");
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    std::fs::write(home.join(".codex/config.toml"), "sandbox_mode = \"read-only\"\n").unwrap();
    let mut call = fx.command(&["call", "bash", r#"{"command": "true"}"#, "--codex"]);
    call.env("HOME", &home).env_remove("CODEX_HOME");
    let run = common::run(call, None);
    assert_eq!(run.json()["metadata"]["sandbox"]["mode"], "read-only", "{}{}", run.stdout, run.stderr);

    let elsewhere = fx.dir.path().join("codex-home");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("config.toml"), "sandbox_mode = \"danger-full-access\"\n").unwrap();
    let mut call = fx.command(&["call", "bash", r#"{"command": "true"}"#, "--codex"]);
    call.env("HOME", &home).env("CODEX_HOME", &elsewhere);
    let run = common::run(call, None);
    assert_eq!(run.json()["metadata"]["sandbox"]["mode"], "off", "{}{}", run.stdout, run.stderr);

    // Missing, it is an error naming the file.
    let mut call = fx.command(&["call", "ls", "{}", "--codex"]);
    call.env("HOME", fx.dir.path()).env_remove("CODEX_HOME");
    let run = common::run(call, None);
    assert!(run.usage_error().contains(".codex/config.toml"), "{}", run.stderr);
}

/// Without `sandbox_mode`, as in codex, a project the user trusted (`[projects."PATH"]
/// trust_level = "trusted"`, the workspace or the repository it lies in) gets the workspace-write
/// sandbox, and any other directory the read-only one.
#[test]
fn without_sandbox_mode_only_a_trusted_project_is_writable() {
    let fx = Fixture::new();
    let path = fx.dir.path().join("config.toml");
    let mode = |text: &str| {
        std::fs::write(&path, text).unwrap();
        let run = fx
            .run(&["call", "bash", r#"{"command": "true"}"#, "--codex-config", path.to_str().unwrap()], None);
        run.json()["metadata"]["sandbox"]["mode"]
            .as_str()
            .unwrap_or_else(|| panic!("{}{}", run.stdout, run.stderr))
            .to_owned()
    };
    assert_eq!(mode("model = \"o3\"\n"), "read-only");
    let ws = std::fs::canonicalize(fx.ws()).unwrap();
    let trust = |dir: &std::path::Path, level: &str| {
        format!("[projects.{:?}]\ntrust_level = \"{level}\"\n", dir.display().to_string())
    };
    assert_eq!(mode(&trust(&ws, "trusted")), "workspace-write");
    assert_eq!(mode(&trust(&ws, "untrusted")), "read-only");
    assert_eq!(mode(&trust(&ws.join("elsewhere"), "trusted")), "read-only");
    // The repository the workspace lies in, trusted, trusts it.
    std::fs::create_dir_all(fx.ws().join(".git")).unwrap();
    std::fs::create_dir_all(fx.ws().join("sub")).unwrap();
    std::fs::write(&path, trust(&ws, "trusted")).unwrap();
    let args = ["call", "bash", r#"{"command": "true"}"#, "--codex-config", path.to_str().unwrap()];
    let run = fx.run(&[&args[..], &["--root", ws.join("sub").to_str().unwrap()]].concat(), None);
    assert_eq!(run.json()["metadata"]["sandbox"]["mode"], "workspace-write", "{}{}", run.stdout, run.stderr);
    // `sandbox_mode` decides over trust.
    assert_eq!(mode(&format!("sandbox_mode = \"read-only\"\n{}", trust(&ws, "trusted"))), "read-only");
}

/// codex's `[shell_environment_policy]`: `inherit = "all"` passes the environment to commands
/// except codex's default excludes (`*KEY*`, `*SECRET*`, `*TOKEN*`) and the file's `exclude`;
/// `set` sets variables; `include_only` keeps only what it names. The agent's API keys stay out
/// of commands.
#[test]
fn a_codex_shell_environment_policy_keeps_keys_out_and_sets_what_it_sets() {
    let fx = Fixture::new();
    let path = fx.dir.path().join("config.toml");
    let policy = |extra: &str| {
        format!(
            "sandbox_mode = \"workspace-write\"\n[shell_environment_policy]\ninherit = \"all\"\n\
             exclude = [\"PROJECT_*\"]\nset = {{ GREETING = \"hi\" }}\n{extra}"
        )
    };
    let seen = |config: String| {
        std::fs::write(&path, config).unwrap();
        let mut command = fx.command(&[
            "call",
            "bash",
            r#"{"command": "env | grep -E '^(OPENAI_API_KEY|GH_TOKEN|PROJECT_NAME|OTHER_SETTING|GREETING)=' | sort"}"#,
            "--codex-config",
            path.to_str().unwrap(),
        ]);
        command
            .env("OPENAI_API_KEY", "sk-real")
            .env("GH_TOKEN", "ghp-real")
            .env("PROJECT_NAME", "p")
            .env("OTHER_SETTING", "kept");
        let run = common::run(command, None);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        run.json()["output"].as_str().unwrap().to_owned()
    };
    assert_eq!(seen(policy("")), "GREETING=hi\nOTHER_SETTING=kept\n");
    assert_eq!(
        seen(policy("ignore_default_excludes = true\n")),
        "GH_TOKEN=ghp-real\nGREETING=hi\nOPENAI_API_KEY=sk-real\nOTHER_SETTING=kept\n"
    );
    // `include_only` keeps only what it names of what `inherit = "all"` passed.
    assert_eq!(seen(policy("include_only = [\"PROJECT_*\", \"GH_*\"]\n")), "GREETING=hi\n");
    assert_eq!(seen(policy("include_only = [\"OTHER_SETTING\"]\n")), "GREETING=hi\nOTHER_SETTING=kept\n");
}

/// codex's `enabled_tools` and `disabled_tools` of a server decide which of its tools are
/// mounted.
#[test]
fn a_codex_servers_enabled_and_disabled_tools_are_mounted_or_left_out() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let path = fx.dir.path().join("config.toml");
    let config = |filter: &str| {
        format!(
            "sandbox_mode = \"workspace-write\"\napproval_policy = \"never\"\n[mcp_servers.inner]\ncommand = {TOOLS:?}\n\
             args = [\"serve\", \"--no-settings\", \"--sandbox\", \"off\", \"--root\", {:?}]\n{filter}",
            ws.display().to_string()
        )
    };
    // Which of `inner__ls` and `inner__read` can be called (an unknown tool is a usage error).
    let mounted = |filter: &str| -> Vec<&str> {
        std::fs::write(&path, config(filter)).unwrap();
        let callable = |tool: &str, args: &str| {
            let run = fx.run(&["call", tool, args, "--codex-config", path.to_str().unwrap()], None);
            assert!(
                run.code == 0 || run.stderr.contains("Unknown tool"),
                "{tool}: {}{}",
                run.stdout,
                run.stderr
            );
            run.code == 0
        };
        let mut names = Vec::new();
        if callable("inner__ls", "{}") {
            names.push("inner__ls");
        }
        if callable("inner__read", r#"{"path": "hello.txt"}"#) {
            names.push("inner__read");
        }
        names
    };
    assert_eq!(mounted(""), ["inner__ls", "inner__read"]);
    assert_eq!(mounted("disabled_tools = [\"read\"]\n"), ["inner__ls"]);
    assert_eq!(mounted("enabled_tools = [\"read\"]\n"), ["inner__read"]);
    assert_eq!(mounted("enabled_tools = [\"ls\", \"read\"]\ndisabled_tools = [\"read\"]\n"), ["inner__ls"]);
}

/// codex's rules files (`rules/*.rules` beside its configuration) are read as codex reads them:
/// `forbidden` refuses what a `prefix_rule` names, `prompt` asks; a file with anything else in it
/// is an error naming its line. A project's `.codex/config.toml` is not read, and is named.
#[test]
fn codex_rules_files_are_applied_and_a_project_config_is_named() {
    let fx = Fixture::new();
    let home = fx.dir.path().join("codex");
    std::fs::create_dir_all(home.join("rules")).unwrap();
    std::fs::write(home.join("config.toml"), "sandbox_mode = \"workspace-write\"\n").unwrap();
    std::fs::write(
        home.join("rules/default.rules"),
        "# codex's own example\nprefix_rule(\n    pattern = [\"rm\"],\n    decision = \"forbidden\",\n)\n\
         prefix_rule(pattern=[\"git\", [\"push\", \"fetch\"]], decision=\"prompt\")\n",
    )
    .unwrap();
    std::fs::create_dir_all(fx.ws().join(".codex")).unwrap();
    std::fs::write(fx.ws().join(".codex/config.toml"), "approval_policy = \"untrusted\"\n").unwrap();
    let config = home.join("config.toml");
    let call = |command: &str| {
        let args = json!({"command": command}).to_string();
        fx.run(&["call", "bash", &args, "--codex-config", config.to_str().unwrap()], None)
    };
    let run = call("rm -f hello.txt");
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let output = run.json()["output"].as_str().unwrap().to_owned();
    assert!(output.contains("refused by the rule `deny Bash(rm:*)`"), "{output}");
    assert!(fx.ws().join("hello.txt").exists());
    let output = call("git fetch origin").json()["output"].as_str().unwrap().to_owned();
    assert!(
        output.contains("the rule `ask Bash(git fetch:*)`") && output.contains("nobody is here to answer"),
        "{output}"
    );
    let run = call("echo ran");
    assert_eq!(run.json()["output"], "ran\n", "{}", run.stderr);
    assert!(
        run.stderr.contains(".codex/config.toml: a project's codex configuration is not applied"),
        "{}",
        run.stderr
    );
    // What cannot be read as rules stops the start.
    std::fs::write(home.join("rules/more.rules"), "prefix_rule(pattern = [\"rm\"], decision = \"never\")\n")
        .unwrap();
    let refused = call("echo ran");
    let error = refused.usage_error();
    assert!(error.contains("more.rules: line 1: `decision` must be"), "{error}");
}

/// codex's `config.toml` is read as a settings file is: a FIFO or a device at its name is an
/// error naming it, not a wait or an endless read.
#[test]
fn a_codex_config_that_is_no_regular_file_is_an_error() {
    let fx = Fixture::new();
    let path = fx.dir.path().join("config.toml");
    assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
    let file = path.display().to_string();
    let fifo = fx.run(&["call", "ls", "{}", "--codex-config", &file], None);
    assert!(fifo.usage_error().ends_with("config.toml: not a regular file"), "{}", fifo.stderr);
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let device = fx.run(&["call", "ls", "{}", "--codex-config", &file], None);
    assert!(device.usage_error().ends_with("config.toml: not a regular file"), "{}", device.stderr);
}
